#!/usr/bin/env bash
# kNN graph benchmark: one table with ssdr's exact search and NN-descent on 1 and 2 ranks, the
# exact search's bound n²d / (P · sgemm rate) (sgemm measured right before and after each search), and FAISS
# IndexFlatL2, hnswlib and PyNNDescent with 2 threads on the same rows (jobs/bench_knn.py).
#
#   jobs/bench_knn.sh                                   # n = 20000,70000
#   SIZES=20000 RANKS="1 2" jobs/bench_knn.sh
#   APPROX_SIZES=280000 APPROX_DATA=~/ssdr-data/fashion-280k jobs/bench_knn.sh
#       (approximate methods only; make the data with jobs/make_fashion_1m.sh DIR --variants 4)
#   Scale mode (issue 50): the first n rows of the augmented set, ssdr's NN-descent on 2 ranks
#   against PyNNDescent with 2 threads, with NN-descent's memory budget (--nndescent-memory):
#   SIZES= RANKS=2 APPROX_SIZES=100000,300000 APPROX_DATA=~/ssdr-data/fashion-1m \
#     LARGE_PEERS=pynndescent NNDESCENT_MEMORY=1024 jobs/bench_knn.sh
#   (LARGE_PEERS=hnswlib at 10^6 rows: PyNNDescent needs about 8 GB at 3*10^5 already).
# Timings belong here, not in the tests. Run on an otherwise idle machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build-bench}"
SIZES="${SIZES:-20000,70000}"
RANKS="${RANKS:-1 2}"
DATA="${DATA:-/usr/share/datasets/fashion-mnist}"
APPROX_SIZES="${APPROX_SIZES:-}"
APPROX_DATA="${APPROX_DATA:-}"
K="${K:-8}"
THREADS="${THREADS:-2}"
LARGE_PEERS="${LARGE_PEERS:-hnswlib,pynndescent}"
NNDESCENT_MEMORY="${NNDESCENT_MEMORY:-160}"
PY="${SSDR_PYTHON:-/usr/bin/python3}"

source "$ROOT/jobs/lib/bench_build.sh"
bench_build bench_knn
# OpenBLAS's kernels for this CPU (env.sh): bench_knn is not ssdr, which would restart itself
# with them; without this the exact search's sgemm ran Debian's generic kernels here (21
# instead of 110-140 GFLOP/s per core, 2026-11-28), and so did FAISS.
source "$ROOT/jobs/env.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
approx=()
[ -n "$APPROX_SIZES" ] && [ -n "$APPROX_DATA" ] && approx=(--approx-sizes="$APPROX_SIZES" --approx-data="$APPROX_DATA")
for np in $RANKS; do
  echo "ssdr on $np rank(s) ..." >&2
  mpiexec -n "$np" "$BUILD/benchmarks/bench_knn" --sizes="$SIZES" --k="$K" --data="$DATA" "${approx[@]}" \
    --fetch-budget-mib="$NNDESCENT_MEMORY" \
    --benchmark_format=json --benchmark_out="$out/ssdr_np$np.json" >/dev/null
done
echo "FAISS, hnswlib, PyNNDescent with $THREADS threads ..." >&2
large=()
[ -n "$APPROX_SIZES" ] && [ -n "$APPROX_DATA" ] && large=(--large-sizes "$APPROX_SIZES" --data-large "$APPROX_DATA" --large-peers "$LARGE_PEERS")
# FAISS's GEMMs go through libblas.so.3, which the set-up points at the serial OpenBLAS (right
# for MPI ranks): give the Python process the threaded OpenBLAS so the references really use
# THREADS threads.
arch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
threaded="/usr/lib/$arch/openblas-pthread"
[ -d "$threaded" ] && export_ld=("LD_LIBRARY_PATH=$threaded${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") || export_ld=()
env "${export_ld[@]}" OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" "$PY" "$ROOT/jobs/bench_knn.py" --sizes "$SIZES" \
  --data "$DATA" --k "$K" --threads "$THREADS" "${large[@]}" > "$out/python.jsonl"

"$PY" - "$out" "$K" "$NNDESCENT_MEMORY" <<'PY'
import glob, json, os, sys
out, k, memory = sys.argv[1], sys.argv[2], sys.argv[3]
rows, rate = [], {}
for f in sorted(glob.glob(os.path.join(out, "ssdr_np*.json"))):
    for b in json.load(open(f))["benchmarks"]:
        name, P = b["name"], int(b["ranks"])
        if name.startswith("Sgemm"):
            rate[P] = b["GFLOPs_per_rank"]
            continue
        n = int(name.split("/")[1])
        t = b["real_time"]
        if name.startswith("KnnSearch"):
            rows.append((n, "ssdr exact", f"{P} rank(s)", t, 1.0,
                         f"{b['GFLOPs']:.0f} GFLOP/s ({b['GFLOPs_per_rank']:.0f}/rank; sgemm "
                         f"{b.get('sgemm_before_GF', rate.get(P, 0)):.0f} before, {b.get('sgemm_after_GF', 0):.0f} after, /core)"))
            rows.append((n, "bound n²d/(P·sgemm)", f"{P} rank(s)", b["bound_s"], 1.0, f"measured/bound = {b['over_bound']:.2f}"))
        else:
            rows.append((n, "ssdr NN-descent", f"{P} rank(s)", t, b["recall"], f"{b['us_per_sample']:.0f} µs/sample, --nndescent-memory {memory}"))
for line in open(os.path.join(out, "python.jsonl")):
    r = json.loads(line)
    rows.append((r["n"], r["method"], f"{r['threads']} threads", r["seconds"], r["recall"], ""))
rows.sort(key=lambda r: (r[0], r[1], r[2]))
print(f"| n | method | ranks/threads | seconds | recall@{k} | note |")
print("|---|---|---|---|---|---|")
for n, m, p, t, rec, note in rows:
    print(f"| {n} | {m} | {p} | {t:.1f} | {rec:.4f} | {note} |")
PY
