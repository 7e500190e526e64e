#!/usr/bin/env bash
# Memory per sample on the tall, thin data set of issue 30 (jobs/make_tall.py: N x 4 float32 in
# 10 Gaussian blobs): SODA with NN-descent, 20 labeled per class, the transductive set always
# 10^6 samples (F = 10^6 / N). Runs N = 2e7 on 1, 2, 4 ranks and N = 1e8 on 2, 4 ranks (4 ranks
# oversubscribe a 2-core machine: counts and bytes hold, times do not), prints each run's peak
# resident memory per rank and stage times, and fits peak = b + r*N + x*N/P + y*n_t/P by least
# squares: r is what every rank holds per sample of the whole data set (0 by design), x the
# bytes per local sample (16 of them are the data), y per transductive sample (graph, lists,
# scores), b the fixed part.
# Usage: jobs/bench_tall.sh [DATA_DIR] (default $SSDR_DATA/tall or ~/ssdr-data/tall; the sets
# are written there when missing: 0.4 + 2.0 GB). Reports in $SSDR_OUT (default results/).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
data="${1:-${SSDR_DATA:-$HOME/ssdr-data}/tall}"
out="${SSDR_OUT:-$SSDR_ROOT/results}/bench_tall"
mkdir -p "$out"
py=/usr/bin/python3
runs=()
for spec in "20000000 0.05 1" "20000000 0.05 2" "20000000 0.05 4" "100000000 0.01 2" "100000000 0.01 4"; do
  read -r n f p <<<"$spec"
  dir="$data/n$n"
  [ -e "$dir/tall_X.npy" ] || "$py" "$SSDR_ROOT/jobs/make_tall.py" "$dir" --n "$n"
  report="$out/tall_n${n}_np${p}.json"
  mpiexec -n "$p" "$SSDR_BUILD/ssdr" fit --method soda --data "$dir/tall_X.npy" --labels "$dir/tall_y.npy" \
    --labeled-per-class 20 --transductive-fraction "$f" --seed 1 --knn-method nndescent -q --report "$report"
  runs+=("$report")
done
"$py" - "${runs[@]}" <<'PY'
import json, sys
import numpy as np
rows = []
print("| n | F | ranks | peak MiB/rank | total s | read | knn_graph | propagation | evaluate |")
print("|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    r = json.load(open(path))
    t = r["timings_s"]
    n, p = r["n"], r["ranks"]
    peak = r["peak_memory_mib"]["max"]
    f = r["split"]["unlabeled"] + r["split"]["labeled"]
    print("| %.0e | %.2f | %d | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f |" % (
        n, f / n, p, peak, t["total"], t["read"], t["knn_graph"], t["propagation"], t["evaluate"]))
    rows.append((n, p, f, peak * 1048576.0))
A = np.array([[1.0, n, n / p, nt / p] for n, p, nt, _ in rows])
y = np.array([m for *_, m in rows])
(b, r, x, yt), *_ = np.linalg.lstsq(A, y, rcond=None)
print("fit: peak = b + r*n + x*n/P + y*n_t/P with b = %.0f MiB, r = %.2f bytes per sample on every "
      "rank, x = %.1f bytes per local sample, y = %.0f bytes per transductive sample" % (b / 1048576.0, r, x, yt))
PY
