#!/usr/bin/env bash
# Label propagation against its memory bound (benchmarks/bench_propagation.cpp), in one run:
# a STREAM-like triad, one graph × vector and one graph × block product on the same graph, the
# propagation (block CG) as a multiple of (iterations + 1) × the block product, and, with
# GMRES=1, the same propagation by GMRES + Jacobi one column at a time (RUNS times each,
# alternating which solver goes first).
#
#   jobs/bench_propagation.sh                              # 200 000 blob points, NN-descent
#   N=1000000 jobs/bench_propagation.sh                    # the tall set's size
#   GRAPH=G.h5 N=70000 GMRES=1 jobs/bench_propagation.sh   # the lists of `ssdr fit --graph-out G.h5`
#   RANKS="1 2" EXTRA="-log_view" jobs/bench_propagation.sh
# Prints one JSON object per line and measurement. Timings belong here, not in the tests. Run
# on an otherwise idle machine: the triad and the products share the cores' caches and memory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build-bench}"
RANKS="${RANKS:-2}"
N="${N:-200000}"
GRAPH="${GRAPH:-}"
GMRES="${GMRES:-0}"
RUNS="${RUNS:-3}"
REPS="${REPS:-20}"
EXTRA="${EXTRA:-}"

source "$ROOT/jobs/lib/bench_build.sh"
bench_build bench_propagation
source "$ROOT/jobs/env.sh"

args=(--n="$N" --reps="$REPS" --runs="$RUNS")
[ -n "$GRAPH" ] && args+=(--graph="$GRAPH")
[ "$GMRES" = 1 ] && args+=(--gmres)
for np in $RANKS; do
  echo "bench_propagation on $np rank(s) ..." >&2
  # shellcheck disable=SC2086  # EXTRA: PETSc options, word-split on purpose
  mpiexec -n "$np" "$BUILD/benchmarks/bench_propagation" "${args[@]}" $EXTRA
done
