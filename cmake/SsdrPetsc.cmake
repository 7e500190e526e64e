# PETSc and SLEPc through their pkg-config files, as the imported targets PkgConfig::SSDR_PETSC
# and PkgConfig::SSDR_SLEPC. Used by ssdr's own build (SsdrDependencies.cmake) and installed
# beside ssdrConfig.cmake, which calls it again in the consumer's project.
#
# Which PETSc: with PETSC_DIR set (a CMake variable, else the environment variable), PETSc's
# own .pc files are looked at first: $PETSC_DIR/$PETSC_ARCH/lib/pkgconfig (a PETSc build
# tree) or $PETSC_DIR/lib/pkgconfig (an installed prefix), and likewise SLEPC_DIR (with the
# same PETSC_ARCH); they are put in front of PKG_CONFIG_PATH for these two look-ups only.
# Without PETSC_DIR: the directories given as DEFAULT_PKG_CONFIG_DIRS (the installed config
# passes those of the PETSc and SLEPc ssdr was built with), then pkg-config's own path, which
# on Debian holds the PETSc and SLEPc chosen by the alternatives
# (/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real).
#
# ssdr_find_petsc_slepc(<minimum version> [DEFAULT_PKG_CONFIG_DIRS dir...] [QUIET])
# sets, in the caller's scope:
#   SSDR_PETSC_FOUND            both found
#   SSDR_PETSC_ERROR            why not (one line) when not found
#   SSDR_PETSC_VERSION, SSDR_PETSC_PREFIX, SSDR_SLEPC_VERSION, SSDR_SLEPC_PREFIX
#   SSDR_PETSC_PKG_CONFIG_DIRS  the directories holding the .pc files that were used
# and prints one line naming the PETSc and SLEPc found (version, prefix, and how) unless QUIET.
find_package(PkgConfig QUIET)

# PETSC_DIR, PETSC_ARCH or SLEPC_DIR: the CMake variable if set, else the environment's.
function(_ssdr_petsc_setting name out)
  if(NOT "${${name}}" STREQUAL "")
    set(${out} "${${name}}" PARENT_SCOPE)
  elseif(NOT "$ENV{${name}}" STREQUAL "")
    set(${out} "$ENV{${name}}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

function(ssdr_find_petsc_slepc min_version)
  cmake_parse_arguments(A "QUIET" "" "DEFAULT_PKG_CONFIG_DIRS" ${ARGN})
  set(SSDR_PETSC_FOUND FALSE PARENT_SCOPE)
  if(NOT PKG_CONFIG_FOUND)
    set(SSDR_PETSC_ERROR "pkg-config was not found (Debian: apt-get install pkgconf)" PARENT_SCOPE)
    return()
  endif()
  _ssdr_petsc_setting(PETSC_DIR petsc_dir)
  _ssdr_petsc_setting(PETSC_ARCH petsc_arch)
  _ssdr_petsc_setting(SLEPC_DIR slepc_dir)
  set(dirs "")
  set(how "")
  foreach(pkg PETSC SLEPC)
    string(TOLOWER ${pkg} lower)
    set(root "${${lower}_dir}")
    if(root STREQUAL "")
      continue()
    endif()
    if(NOT petsc_arch STREQUAL "" AND IS_DIRECTORY "${root}/${petsc_arch}/lib/pkgconfig")
      list(APPEND dirs "${root}/${petsc_arch}/lib/pkgconfig")
    elseif(IS_DIRECTORY "${root}/lib/pkgconfig")
      list(APPEND dirs "${root}/lib/pkgconfig")
    else()
      if(petsc_arch STREQUAL "")
        set(msg "${pkg}_DIR=${root} has no lib/pkgconfig folder (set PETSC_ARCH for a build tree)")
      else()
        set(msg "${pkg}_DIR=${root} has neither ${petsc_arch}/lib/pkgconfig (PETSC_ARCH) nor lib/pkgconfig")
      endif()
      set(SSDR_PETSC_ERROR "${msg}" PARENT_SCOPE)
      return()
    endif()
    string(APPEND how " ${pkg}_DIR=${root}")
  endforeach()
  if(NOT how STREQUAL "" AND NOT petsc_arch STREQUAL "")
    string(APPEND how " PETSC_ARCH=${petsc_arch}")
  endif()
  if(petsc_dir STREQUAL "" AND A_DEFAULT_PKG_CONFIG_DIRS)
    list(APPEND dirs ${A_DEFAULT_PKG_CONFIG_DIRS})
    string(APPEND how " the PETSc ssdr was built with; PETSC_DIR chooses another")
  elseif(petsc_dir STREQUAL "")
    string(APPEND how " pkg-config's default path; PETSC_DIR/PETSC_ARCH choose another")
  endif()
  string(STRIP "${how}" how)

  # pkg_check_modules keeps its results in the cache: when the directories change (another
  # PETSC_DIR), forget the earlier look-up and the library paths it found.
  if(NOT "${dirs}" STREQUAL "${_SSDR_PETSC_SEARCH_DIRS}")
    get_cmake_property(cached CACHE_VARIABLES)
    foreach(v IN LISTS cached)
      if(v MATCHES "^(__pkg_config_checked_|__pkg_config_arguments_|pkgcfg_lib_)SSDR_(PETSC|SLEPC)")
        unset(${v} CACHE)
      endif()
    endforeach()
    set(_SSDR_PETSC_SEARCH_DIRS "${dirs}" CACHE INTERNAL "PETSc/SLEPc pkg-config directories of the last look-up")
  endif()

  set(saved_path "$ENV{PKG_CONFIG_PATH}")
  set(path "${dirs}")
  if(NOT saved_path STREQUAL "")
    list(APPEND path "${saved_path}")
  endif()
  string(REPLACE ";" ":" path "${path}")
  set(ENV{PKG_CONFIG_PATH} "${path}")
  pkg_check_modules(SSDR_PETSC QUIET IMPORTED_TARGET PETSc>=${min_version})
  pkg_check_modules(SSDR_SLEPC QUIET IMPORTED_TARGET SLEPc>=${min_version})
  # Where the .pc files were, so that a consumer of the installed ssdr gets the same ones.
  set(pcdirs "")
  foreach(m PETSc SLEPc)
    set(d "")
    pkg_get_variable(d ${m} pcfiledir)
    if(NOT d STREQUAL "")
      list(APPEND pcdirs "${d}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES pcdirs)
  set(ENV{PKG_CONFIG_PATH} "${saved_path}")
  foreach(pkg PETSC SLEPC)
    if(NOT SSDR_${pkg}_FOUND)
      if(pkg STREQUAL "PETSC")
        set(name PETSc)
      else()
        set(name SLEPc)
      endif()
      set(SSDR_PETSC_ERROR "${name} >= ${min_version} not found by pkg-config (${how}; looked in ${path}:<pkg-config's default path>): set PETSC_DIR and PETSC_ARCH (and SLEPC_DIR), or install Debian's petsc-dev and slepc-dev" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  foreach(pkg PETSC SLEPC)
    set(prefix "${SSDR_${pkg}_PREFIX}")
    if(prefix STREQUAL "")
      set(prefix "${SSDR_${pkg}_LIBDIR}")
    endif()
    set(SSDR_${pkg}_PREFIX "${prefix}" PARENT_SCOPE)
    set(SSDR_${pkg}_VERSION "${SSDR_${pkg}_VERSION}" PARENT_SCOPE)
  endforeach()
  set(SSDR_PETSC_PKG_CONFIG_DIRS "${pcdirs}" PARENT_SCOPE)
  set(SSDR_PETSC_FOUND TRUE PARENT_SCOPE)
  set(SSDR_PETSC_ERROR "" PARENT_SCOPE)
  if(NOT A_QUIET)
    message(STATUS "PETSc ${SSDR_PETSC_VERSION} at ${SSDR_PETSC_PREFIX}, SLEPc ${SSDR_SLEPC_VERSION} at ${SSDR_SLEPC_PREFIX} (${how})")
  endif()
endfunction()
