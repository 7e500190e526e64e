#!/usr/bin/env bash
# SODA end to end on the augmented Fashion-MNIST of 1 050 000 samples (jobs/make_fashion_1m.sh,
# written first when missing) with the approximate kNN graph (NN-descent), 20 labeled samples
# per class, transductive fraction F (rest unseen).
# Usage: jobs/fashion_1m_soda.sh [RANKS] [TRANSDUCTIVE_FRACTION] [extra ssdr/PETSc options]
# SSDR_METHOD=NAME fits another method with the same protocol (jobs/fashion_1m_auto.sh: auto);
# the report is results/fashion_1m_NAME_npRANKS_fF.json.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
ranks="${1:-2}"
fraction="${2:-0.2}"
shift $(( $# > 2 ? 2 : $# ))
data="${SSDR_DATA:-$HOME/ssdr-data}/fashion-1m"
[ -e "$data/train-images-idx3-ubyte" ] || bash "$SSDR_ROOT/jobs/make_fashion_1m.sh" "$data"
out="${SSDR_OUT:-$SSDR_ROOT/results}"
mkdir -p "$out"
method="${SSDR_METHOD:-soda}"
mpiexec -n "$ranks" "$SSDR_BUILD/ssdr" fit --method "$method" --data "$data" --format idx \
  --labeled-per-class 20 --transductive-fraction "$fraction" --seed 1 --knn-method nndescent \
  --report "$out/fashion_1m_${method}_np${ranks}_f${fraction}.json" "$@"
