# Environment for running ssdr with Open MPI on these machines (sourced by the job scripts).
# - Open MPI refuses to run as root without the two ALLOW variables.
# - More ranks than cores need oversubscription; idle ranks must yield or they starve the cores.
# - One rank per core: BLAS, OpenMP and PT-Scotch (the graph partitioner) single-threaded; one
#   PT-Scotch thread also makes its partition, and so the fit, reproducible.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
# mpiexec must not add its own multi-line banner when a rank exits non-zero (ssdr prints one line).
export OMPI_MCA_orte_execute_quiet=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 SCOTCH_PTHREAD_NUMBER=1 GTEST_COLOR=no
SSDR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export SSDR_ROOT
export SSDR_BUILD="${SSDR_BUILD:-$SSDR_ROOT/build}"
