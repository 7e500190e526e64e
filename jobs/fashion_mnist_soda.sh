#!/usr/bin/env bash
# The main job: SODA on all 70 000 Fashion-MNIST samples across 2 MPI ranks, the paper's
# USPS protocol (20 labeled per class, 20 % of the data transductive, the rest unseen).
# Usage: jobs/fashion_mnist_soda.sh [RANKS] [TRANSDUCTIVE_FRACTION] [extra ssdr/PETSc options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
ranks="${1:-2}"
fraction="${2:-0.2}"
shift $(( $# > 2 ? 2 : $# ))
out="${SSDR_OUT:-$SSDR_ROOT/results}"
mkdir -p "$out"
mpiexec -n "$ranks" "$SSDR_BUILD/ssdr" fit --method soda \
  --data /usr/share/datasets/fashion-mnist --format idx \
  --labeled-per-class 20 --transductive-fraction "$fraction" --seed 1 \
  --report "$out/fashion_mnist_soda_np${ranks}_f${fraction}.json" "$@"
