#!/usr/bin/env bash
# SODA end to end on the augmented Fashion-MNIST of 10 500 000 samples (jobs/make_fashion_1m.py
# --variants 150, written first when missing: 8.2 GB of uint8 images) with NN-descent, PCA to
# 95 % of the variance, 20 labeled samples per class and transductive fraction F (rest unseen).
# The rows stay bytes (1/8 of doubles); the unseen ones are embedded block by block, never
# stored preprocessed.
# Usage: jobs/fashion_10m_soda.sh [RANKS] [TRANSDUCTIVE_FRACTION] [extra ssdr/PETSc options]
#   SSDR_DATA=DIR (default ~/ssdr-data; the data go to DIR/fashion-10m), SSDR_OUT=DIR (reports)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
ranks="${1:-2}"
fraction="${2:-0.2}"
shift $(( $# > 2 ? 2 : $# ))
data="${SSDR_DATA:-$HOME/ssdr-data}/fashion-10m"
[ -e "$data/train-images-idx3-ubyte" ] ||
  "${SSDR_PYTHON:-/usr/bin/python3}" "$SSDR_ROOT/jobs/make_fashion_1m.py" "$data" --variants 150
out="${SSDR_OUT:-$SSDR_ROOT/results}"
mkdir -p "$out"
mpiexec -n "$ranks" "$SSDR_BUILD/ssdr" fit --method soda --data "$data" --format idx \
  --labeled-per-class 20 --transductive-fraction "$fraction" --seed 1 --knn-method nndescent \
  --pca-energy 0.95 --report "$out/fashion_10m_soda_np${ranks}_f${fraction}.json" "$@"
