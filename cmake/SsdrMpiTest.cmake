# ssdr_add_mpi_test(NAME <name> COMMAND <exe> [ARGS ...] RANKS <n> [ENV <VAR=value> ...])
# Registers a ctest entry that runs <exe> (a target, or a program's path) under mpiexec with <n> ranks. Open MPI on
# these machines runs as root and oversubscribes 2 cores, so the test environment
# sets the variables the README documents (Open MPI reads them; no Open MPI-only flag is on
# the command line, so another MPI's mpiexec runs the tests too; MPIEXEC_PREFLAGS adds any).
function(ssdr_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;COMMAND;RANKS" "ARGS;ENV" ${ARGN})
  list(JOIN T_ENV ";" extra_env)
  set(program ${T_COMMAND})  # a target of this build, or a program by its path (python3)
  if(TARGET ${T_COMMAND})
    set(program $<TARGET_FILE:${T_COMMAND}>)
  endif()
  add_test(NAME ${T_NAME}
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS}
                   ${MPIEXEC_PREFLAGS} ${program} ${MPIEXEC_POSTFLAGS} ${T_ARGS})
  set_tests_properties(${T_NAME} PROPERTIES
    PROCESSORS ${T_RANKS}
    TIMEOUT 600
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_orte_execute_quiet=1;OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1;GTEST_COLOR=no;SSDR_TEST_DATA=${CMAKE_SOURCE_DIR}/tests/data;${extra_env}")
endfunction()
