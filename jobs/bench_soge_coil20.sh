#!/usr/bin/env bash
# Issue 48's SOGE bar: SOGE's eigensolve stage on COIL-20 (soge-liu2017's setting: 2 labeled
# per class, half of each class transductive, K = 3 recursions) at every alpha of the paper's
# grid {1e-3, 1e3, 1e6, 1e9}, in units of a 784 x 784 symmetric eigendecomposition (LAPACK's
# dsyevd through numpy, one thread, the median of 7) measured in the same run.
#   jobs/bench_soge_coil20.sh [RANKS]      (2 by default; run on an otherwise idle machine)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
ranks="${1:-2}"
py="${SSDR_PYTHON:-/usr/bin/python3}"
data="$SSDR_ROOT/../shared/datasets"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
unit="$("$py" -c "
import time, numpy as np
a = np.random.default_rng(0).standard_normal((784, 784)); a = a + a.T
ts = []
for _ in range(7):
    t = time.perf_counter(); np.linalg.eigh(a); ts.append(time.perf_counter() - t)
print(sorted(ts)[3])")"
echo "unit: a 784 x 784 eigendecomposition takes $unit s"
for alpha in 1e-3 1e3 1e6 1e9; do
  mpiexec -n "$ranks" "$SSDR_BUILD/ssdr" fit --data "$data/coil20_X.npy" --labels "$data/coil20_y.npy" \
    --method soge --alpha "$alpha" --recursions 3 --labeled-per-class 2 --transductive-fraction 0.5 \
    --report "$out/soge.json" --quiet > /dev/null
  "$py" - "$out/soge.json" "$unit" "$alpha" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); unit = float(sys.argv[2])
e = r["timings_s"]["eigensolve"]
print("alpha %s: eigensolve %.3f s = %.2f units; unlabeled accuracy %.4f" % (sys.argv[3], e, e / unit, r["accuracy"]["unlabeled"]))
PY
done
