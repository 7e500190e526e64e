# `cmake --install build --prefix P` puts there:
#   bin/ssdr                                the command line (RPATH: see CMakeLists.txt)
#   lib/libssdr.a                           the library
#   include/ssdr/<module>/*.hpp             the public headers, with the generated version.hpp
#   lib/cmake/ssdr/ssdrConfig.cmake         find_package(ssdr): the target ssdr::ssdr with
#     ssdrConfigVersion.cmake, ssdrTargets*.cmake, SsdrPetsc.cmake   its dependencies
#   lib/pkgconfig/ssdr.pc                   pkg-config --cflags --libs ssdr
# Both the CMake package and the .pc file are relocatable (paths relative to where they lie).
include(CMakePackageConfigHelpers)

set(SSDR_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ssdr CACHE STRING
    "where ssdrConfig.cmake is installed, relative to the prefix")
mark_as_advanced(SSDR_INSTALL_CMAKEDIR)

install(TARGETS ssdr RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ssdr_lib ssdr_deps EXPORT ssdrTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Public headers only: the modules' private *_internal.hpp live in src/ and are not installed
# (the install test checks that no installed header names one).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ssdr DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/generated/ssdr/core/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ssdr/core)

install(EXPORT ssdrTargets NAMESPACE ssdr:: DESTINATION ${SSDR_INSTALL_CMAKEDIR})
# For the config file: what this build found, so a consumer finds the same.
string(REGEX MATCH "^[0-9]+\\.[0-9]+" SSDR_PETSC_BUILT_MAJOR_MINOR "${SSDR_PETSC_VERSION}")
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ssdrConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ssdrConfig.cmake
                              INSTALL_DESTINATION ${SSDR_INSTALL_CMAKEDIR})
# 0.y: a minor release may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ssdrConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ssdrConfig.cmake ${PROJECT_BINARY_DIR}/ssdrConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/SsdrPetsc.cmake
        DESTINATION ${SSDR_INSTALL_CMAKEDIR})

# ssdr.pc. Requires: the dependencies that ship a .pc file; Libs: libssdr.a and, since it is
# a static library, the rest of what it links (Boost, BLAS/LAPACK, MPI) as -L/-l flags.
# prefix is computed from the .pc file's own folder, so the installed tree can move.
# The link flags of libraries given as imported targets (their files, INTERFACE_LINK_LIBRARIES
# followed) or as full paths: /dir/libname.so → -L/dir -lname (no -L for the compiler's own
# folders). Appends to the list `out`.
function(_ssdr_pc_libs out)
  set(flags ${${out}})
  foreach(item IN LISTS ARGN)
    if(TARGET ${item})
      get_target_property(type ${item} TYPE)
      set(files "")
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(configs ${item} IMPORTED_CONFIGURATIONS)
        foreach(c RELEASE NOCONFIG ${configs})
          get_target_property(files ${item} IMPORTED_LOCATION_${c})
          if(files)
            break()
          endif()
        endforeach()
        if(NOT files)
          get_target_property(files ${item} IMPORTED_LOCATION)
        endif()
      endif()
      get_target_property(deps ${item} INTERFACE_LINK_LIBRARIES)
      if(files)
        _ssdr_pc_libs(flags ${files})
      endif()
      if(deps)
        _ssdr_pc_libs(flags ${deps})
      endif()
    elseif(item MATCHES "^(.*)/lib([^/]+)\\.(so|a)(\\.[0-9.]+)?$")
      set(dir "${CMAKE_MATCH_1}")
      if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
        list(APPEND flags "-L${dir}")
      endif()
      list(APPEND flags "-l${CMAKE_MATCH_2}")
    elseif(item)
      list(APPEND flags "${item}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES flags)
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

set(SSDR_PC_LIBS "")
_ssdr_pc_libs(SSDR_PC_LIBS Boost::serialization Boost::program_options LAPACK::LAPACK BLAS::BLAS
              ${MPI_C_LIBRARIES})
list(JOIN SSDR_PC_LIBS " " SSDR_PC_LIBS)
set(SSDR_PC_CFLAGS "")
foreach(dir IN LISTS MPI_C_INCLUDE_DIRS)
  if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    string(APPEND SSDR_PC_CFLAGS " -I${dir}")
  endif()
endforeach()
string(APPEND SSDR_PC_CFLAGS " -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1")
string(STRIP "${SSDR_PC_CFLAGS}" SSDR_PC_CFLAGS)
file(RELATIVE_PATH SSDR_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" SSDR_PC_TO_PREFIX "${SSDR_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/ssdr.pc.in ${PROJECT_BINARY_DIR}/ssdr.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ssdr.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
