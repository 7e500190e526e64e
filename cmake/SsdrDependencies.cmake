# All third-party dependencies come from Debian 12 packages (see README.md); PETSc and SLEPc
# may also come from PETSC_DIR/PETSC_ARCH and SLEPC_DIR (SsdrPetsc.cmake).
# The installed ssdrConfig.cmake (cmake/ssdrConfig.cmake.in) finds the same packages for the
# projects that link ssdr::ssdr: keep the two lists in step.
# The MPI C API only: the C++ bindings (libmpi_cxx) are deprecated and gone in Open MPI 5.
find_package(MPI REQUIRED COMPONENTS C)
find_package(PkgConfig REQUIRED)
set(SSDR_PETSC_MIN_VERSION 3.18)
include(SsdrPetsc)
ssdr_find_petsc_slepc(${SSDR_PETSC_MIN_VERSION})
if(NOT SSDR_PETSC_FOUND)
  message(FATAL_ERROR "${SSDR_PETSC_ERROR}")
endif()
# Parallel HDF5 (the MPI-IO driver), Debian's libhdf5-openmpi-dev: the HDF5 reader and writer.
set(SSDR_HDF5_PKG hdf5-openmpi)
pkg_check_modules(SSDR_HDF5 REQUIRED IMPORTED_TARGET ${SSDR_HDF5_PKG})
# The reference names libblas.so.3/liblapack.so.3, which PETSc, SLEPc and ScaLAPACK link
# too: one BLAS in the process, chosen by Debian's alternatives (jobs/install_deps.sh points
# them at the serial OpenBLAS), not -lopenblas (the threaded build: extra threads per rank).
if(NOT DEFINED BLA_VENDOR)
  set(BLA_VENDOR Generic)
endif()
find_package(BLAS REQUIRED)
find_package(LAPACK REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS serialization program_options)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)

# Everything ssdr's code needs, exported with the library as ssdr::deps (its static library
# needs every one of them at the consumer's link step).
add_library(ssdr_deps INTERFACE)
set_target_properties(ssdr_deps PROPERTIES EXPORT_NAME deps)
target_link_libraries(ssdr_deps INTERFACE
  PkgConfig::SSDR_SLEPC PkgConfig::SSDR_PETSC PkgConfig::SSDR_HDF5 MPI::MPI_C
  Boost::serialization Boost::program_options ZLIB::ZLIB nlohmann_json::nlohmann_json yaml-cpp
  LAPACK::LAPACK BLAS::BLAS)
# mpi.h must not pull in the C++ bindings' declarations (they would need libmpi_cxx).
target_compile_definitions(ssdr_deps INTERFACE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
add_library(ssdr::deps ALIAS ssdr_deps)
