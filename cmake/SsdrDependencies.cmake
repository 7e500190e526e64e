# All third-party dependencies come from Debian 12 packages (see README.md).
# The MPI C API only: the C++ bindings (libmpi_cxx) are deprecated and gone in Open MPI 5.
find_package(MPI REQUIRED COMPONENTS C)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PETSC REQUIRED IMPORTED_TARGET PETSc>=3.18)
pkg_check_modules(SLEPC REQUIRED IMPORTED_TARGET SLEPc>=3.18)
# Parallel HDF5 (the MPI-IO driver), Debian's libhdf5-openmpi-dev: the HDF5 reader and writer.
pkg_check_modules(HDF5 REQUIRED IMPORTED_TARGET hdf5-openmpi)
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

add_library(ssdr_deps INTERFACE)
target_link_libraries(ssdr_deps INTERFACE
  PkgConfig::SLEPC PkgConfig::PETSC PkgConfig::HDF5 MPI::MPI_C
  Boost::serialization Boost::program_options ZLIB::ZLIB nlohmann_json::nlohmann_json yaml-cpp
  ${LAPACK_LIBRARIES} ${BLAS_LIBRARIES})
# mpi.h must not pull in the C++ bindings' declarations (they would need libmpi_cxx).
target_compile_definitions(ssdr_deps INTERFACE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
add_library(ssdr::deps ALIAS ssdr_deps)
