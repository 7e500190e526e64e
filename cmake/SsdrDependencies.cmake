# All third-party dependencies come from Debian 12 packages (see README.md).
find_package(MPI REQUIRED COMPONENTS C CXX)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PETSC REQUIRED IMPORTED_TARGET PETSc>=3.18)
pkg_check_modules(SLEPC REQUIRED IMPORTED_TARGET SLEPc>=3.18)
# Parallel HDF5 (the MPI-IO driver), Debian's libhdf5-openmpi-dev: the HDF5 reader and writer.
pkg_check_modules(HDF5 REQUIRED IMPORTED_TARGET hdf5-openmpi)
find_package(BLAS REQUIRED)
find_package(LAPACK REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS serialization program_options)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)

add_library(ssdr_deps INTERFACE)
target_link_libraries(ssdr_deps INTERFACE
  PkgConfig::SLEPC PkgConfig::PETSC PkgConfig::HDF5 MPI::MPI_CXX MPI::MPI_C
  Boost::serialization Boost::program_options ZLIB::ZLIB nlohmann_json::nlohmann_json yaml-cpp
  ${LAPACK_LIBRARIES} ${BLAS_LIBRARIES})
add_library(ssdr::deps ALIAS ssdr_deps)
