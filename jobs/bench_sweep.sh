#!/usr/bin/env bash
# Sweep benchmark: the time per fit inside a sweep, per method (soda, oda, ksoda, sl-lda, tca,
# otca, soge), beside its bound (its LAPACK eigen-solves and BLAS GEMMs priced at this machine's
# rates measured in the same run). See benchmarks/bench_sweep.cpp for what is measured.
#
#   jobs/bench_sweep.sh                       # 2 ranks, Fashion-MNIST, F = 0.2, 20 labeled/class
#   RANKS=1 METHODS=soda,oda jobs/bench_sweep.sh
# Timings belong here, not in the tests. Run on an otherwise idle machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build-bench}"
RANKS="${RANKS:-2}"
DATA="${DATA:-/usr/share/datasets/fashion-mnist}"
METHODS="${METHODS:-soda,oda,ksoda,sl-lda,tca,otca,soge}"
FRACTION="${FRACTION:-0.2}"
LABELED="${LABELED:-20}"

source "$ROOT/jobs/lib/bench_build.sh"
bench_build bench_sweep
source "$ROOT/jobs/env.sh"
exec mpiexec -n "$RANKS" "$BUILD/benchmarks/bench_sweep" --data="$DATA" --fraction="$FRACTION" \
  --labeled="$LABELED" --methods="$METHODS"
