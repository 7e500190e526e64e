#!/usr/bin/env bash
# kNN graph stage benchmark: builds benchmarks/bench_knn (Google Benchmark) and runs it on
# Fashion-MNIST (d = 784) for the given sizes and rank counts.
#
#   jobs/bench_knn.sh                       # n = 10000,20000 on 1 and 2 ranks
#   SIZES=10000,20000,70000 RANKS="1 2" jobs/bench_knn.sh
#   DATA=/path/to/fashion-mnist BUILD=/tmp/b jobs/bench_knn.sh
#
# Rows (rank 0 prints; time = max wall time over ranks, one iteration each):
#   Dgemm/2000x2000x784  plain dgemm per rank: the machine's BLAS reference rate
#   TiledGemmOnly/n      the distance GEMMs alone (same tiles), no selection
#   KnnSearch/n          ssdr::graph::knn_search (ring + GEMM + selection + exact re-check)
#   KnnGraph/n           ssdr::graph::build_knn_graph (search + symmetrize + sigma + MPIAIJ)
# GFLOPs counts 2*n^2*d flops; GFLOPs_per_cpu_s divides by the CPU seconds of all ranks
# (the per-core rate, robust against other load on a shared machine).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build-bench}"
SIZES="${SIZES:-10000,20000}"
RANKS="${RANKS:-1 2}"
DATA="${DATA:-/usr/share/datasets/fashion-mnist}"
K="${K:-8}"

mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSSDR_BUILD_BENCHMARKS=ON \
  -DSSDR_BUILD_TESTS=OFF > "$BUILD/bench_knn.cmake.log" 2>&1 || { cat "$BUILD/bench_knn.cmake.log"; exit 1; }
make -C "$BUILD" -j"$(nproc)" bench_knn > "$BUILD/bench_knn.make.log" 2>&1 || { tail -40 "$BUILD/bench_knn.make.log"; exit 1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
for np in $RANKS; do
  echo "=== $np rank(s), n = $SIZES, k = $K, data = $DATA"
  mpiexec -n "$np" "$BUILD/benchmarks/bench_knn" --sizes="$SIZES" --k="$K" --data="$DATA" \
    --benchmark_color=false "$@"
done
