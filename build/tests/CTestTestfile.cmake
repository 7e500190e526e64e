# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test([=[tests.np1]=] "/usr/bin/mpiexec" "-n" "1" "--oversubscribe" "/work/main/build/tests/ssdr_tests")
set_tests_properties([=[tests.np1]=] PROPERTIES  ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1;GTEST_COLOR=no;SSDR_TEST_DATA=/work/main/tests/data" PROCESSORS "1" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/cmake/SsdrMpiTest.cmake;7;add_test;/work/main/tests/CMakeLists.txt;14;ssdr_add_mpi_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[tests.np2]=] "/usr/bin/mpiexec" "-n" "2" "--oversubscribe" "/work/main/build/tests/ssdr_tests")
set_tests_properties([=[tests.np2]=] PROPERTIES  ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1;GTEST_COLOR=no;SSDR_TEST_DATA=/work/main/tests/data" PROCESSORS "2" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/cmake/SsdrMpiTest.cmake;7;add_test;/work/main/tests/CMakeLists.txt;14;ssdr_add_mpi_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[tests.np3]=] "/usr/bin/mpiexec" "-n" "3" "--oversubscribe" "/work/main/build/tests/ssdr_tests")
set_tests_properties([=[tests.np3]=] PROPERTIES  ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1;GTEST_COLOR=no;SSDR_TEST_DATA=/work/main/tests/data" PROCESSORS "3" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/cmake/SsdrMpiTest.cmake;7;add_test;/work/main/tests/CMakeLists.txt;14;ssdr_add_mpi_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[tests.np4]=] "/usr/bin/mpiexec" "-n" "4" "--oversubscribe" "/work/main/build/tests/ssdr_tests")
set_tests_properties([=[tests.np4]=] PROPERTIES  ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1;GTEST_COLOR=no;SSDR_TEST_DATA=/work/main/tests/data" PROCESSORS "4" TIMEOUT "600" _BACKTRACE_TRIPLES "/work/main/cmake/SsdrMpiTest.cmake;7;add_test;/work/main/tests/CMakeLists.txt;14;ssdr_add_mpi_test;/work/main/tests/CMakeLists.txt;0;")
