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
# - OpenBLAS's kernels named from the CPU's features (a user's OPENBLAS_CORETYPE is kept):
#   Debian 12's OpenBLAS falls back to its generic Prescott kernels on a CPU model it does not
#   know (dgemm 10.6 against 74 GFLOP/s per core with SkylakeX on this machine kind's Xeon,
#   2026-11-28). `ssdr` restarts itself with the same choice (src/core/blas_kernels.cpp);
#   this covers the tests, the benchmarks and other programs.
if [ -z "${OPENBLAS_CORETYPE+set}" ] && [ -r /proc/cpuinfo ]; then
  # (|| true: a CPU without a "flags" line, not x86, must not stop a `set -eo pipefail` caller)
  _ssdr_flags=" $({ grep -m1 '^flags' /proc/cpuinfo || true; } | cut -d: -f2) "
  _ssdr_has() { for f in "$@"; do [[ $_ssdr_flags == *" $f "* ]] || return 1; done; }
  if _ssdr_has avx512f avx512cd avx512bw avx512dq avx512vl; then export OPENBLAS_CORETYPE=SkylakeX
  elif _ssdr_has avx2 fma; then export OPENBLAS_CORETYPE=Haswell
  fi
  unset -f _ssdr_has
  unset _ssdr_flags
fi
SSDR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export SSDR_ROOT
export SSDR_BUILD="${SSDR_BUILD:-$SSDR_ROOT/build}"
