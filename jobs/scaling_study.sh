#!/usr/bin/env bash
# Strong and weak scaling of one ssdr fit, stage by stage, with a table and gnuplot plots.
#
#   strong: the whole data set (Fashion-MNIST's 70 000 samples) on P ranks, P in RANKS;
#   weak:   the first N0·P samples on P ranks (the same rows per rank);
#   hosts:  the strong-scaling fit again on HOSTS "hosts" (Linux network namespaces joined by a
#           bridge, one rank each, TCP between them; jobs/lib/netns_hosts.sh) when HOSTS ≥ 2
#           and this machine can make namespaces (root), else skipped with one line.
# Every fit writes its report (per-stage timings_s, peak memory); jobs/scaling_summary.py
# prints the time per stage with speedup and efficiency (strong: S = T_1/T_P, E = S/P; weak:
# E = T_1/T_P) and writes strong_scaling.* and weak_scaling.* (.dat, .gp, and .png when gnuplot
# is installed) into the output folder; the run across hosts is printed beside the same rank
# count on one host. Everything printed is also in scaling.txt.
#
# Usage: jobs/scaling_study.sh [OUT_DIR]
# Environment (all optional): SSDR_BIN (default build/ssdr), SSDR_DATA (a Fashion-MNIST IDX
# folder, default /usr/share/datasets/fashion-mnist), RANKS ("1 2"), HOSTS (2; 0 to skip),
# N0 (weak-scaling samples per rank, 35000), METHOD (soda), KNN_METHOD (nndescent),
# LABELED (20 per class), FRACTION (transductive fraction, 1.0), and extra ssdr or PETSc
# options in SSDR_ARGS. On a cluster, run it inside an allocation with RANKS up to the
# allocation's size (MPIEXEC=srun works: it is called as "$MPIEXEC -n P ...").
# Timings mean something only on an otherwise idle machine.
set -euo pipefail
ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
# shellcheck source=jobs/env.sh
source "$ROOT/jobs/env.sh"
SSDR_BIN="$(readlink -f "${SSDR_BIN:-${SSDR:-$ROOT/build/ssdr}}")"
DATA="${SSDR_DATA:-/usr/share/datasets/fashion-mnist}"
OUT="$(readlink -f "${1:-${SSDR_OUT:-$ROOT/results}/scaling}")"
RANKS="${RANKS:-1 2}"
HOSTS="${HOSTS:-2}"
N0="${N0:-35000}"
METHOD="${METHOD:-soda}"
KNN_METHOD="${KNN_METHOD:-nndescent}"
LABELED="${LABELED:-20}"
FRACTION="${FRACTION:-1.0}"
MPIEXEC="${MPIEXEC:-mpiexec}"
PY="${SSDR_PYTHON:-/usr/bin/python3}"  # Debian's, with python3-numpy (jobs/install_deps.sh)
read -r -a EXTRA <<<"${SSDR_ARGS:-}"
[ -x "$SSDR_BIN" ] || { echo "scaling_study: no executable ssdr at $SSDR_BIN (set SSDR_BIN)" >&2; exit 2; }
mkdir -p "$OUT"
fit=(fit --method "$METHOD" --labeled-per-class "$LABELED" --transductive-fraction "$FRACTION" --seed 1
     --knn-method "$KNN_METHOD" -q "${EXTRA[@]}")

# Weak-scaling inputs: the first N0·P samples as NPY (X uint8, labels int64), read by every rank
# at its own offset. Written once per P.
subset() {
  local m=$1 dir="$OUT/data"
  mkdir -p "$dir"
  [ -s "$dir/X_$m.npy" ] && [ -s "$dir/y_$m.npy" ] && return 0
  "$PY" - "$DATA" "$m" "$dir/X_$m.npy" "$dir/y_$m.npy" <<'PY'
import gzip, os, struct, sys
import numpy as np
folder, m, xo, yo = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def opener(path):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
def find(stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return None
xs, ys = [], []
for part in ("train", "t10k"):
    fi, fl = find(f"{part}-images-idx3-ubyte"), find(f"{part}-labels-idx1-ubyte")
    if fi is None or fl is None:
        continue
    with opener(fi) as f:
        _, n, r, c = struct.unpack(">IIII", f.read(16))
        take = min(n, m - sum(len(x) for x in xs))
        xs.append(np.frombuffer(f.read(take * r * c), dtype=np.uint8).reshape(take, r * c))
    with opener(fl) as f:
        f.read(8)
        ys.append(np.frombuffer(f.read(take), dtype=np.uint8).astype(np.int64))
    if sum(len(x) for x in xs) >= m:
        break
X, y = np.vstack(xs), np.concatenate(ys)
if len(X) < m:
    sys.exit(f"scaling_study: {folder} has {len(X)} samples, the weak-scaling run needs {m}")
np.save(xo + ".tmp.npy", X); os.replace(xo + ".tmp.npy", xo)
np.save(yo + ".tmp.npy", y); os.replace(yo + ".tmp.npy", yo)
PY
}

runs="$OUT/runs.tsv"  # kind, ranks, hosts, report
: >"$runs"
for P in $RANKS; do
  echo "scaling_study: strong, $P rank(s) ..." >&2
  "$MPIEXEC" -n "$P" "$SSDR_BIN" "${fit[@]}" --data "$DATA" --format idx --report "$OUT/strong_np$P.json" >/dev/null
  printf 'strong\t%s\t1\t%s\n' "$P" "$OUT/strong_np$P.json" >>"$runs"
  m=$((N0 * P))
  subset "$m"
  echo "scaling_study: weak, $P rank(s), $m samples ..." >&2
  "$MPIEXEC" -n "$P" "$SSDR_BIN" "${fit[@]}" --data "$OUT/data/X_$m.npy" --labels "$OUT/data/y_$m.npy" \
    --report "$OUT/weak_np$P.json" >/dev/null
  printf 'weak\t%s\t1\t%s\n' "$P" "$OUT/weak_np$P.json" >>"$runs"
done

if [ "$HOSTS" -ge 2 ]; then
  echo "scaling_study: strong, $HOSTS namespaced hosts ..." >&2
  report="$OUT/strong_hosts$HOSTS.json"
  # In a subshell: the namespaces and their EXIT trap end with it.
  if ( RPH=1 NP="$HOSTS" TAG="${HOSTS}x1" NETNS_TAG=scaling_study IP="$(command -v ip || echo /usr/sbin/ip)"
       # shellcheck source=jobs/lib/netns_hosts.sh
       source "$ROOT/jobs/lib/netns_hosts.sh"
       "${mh_mpiexec[@]}" "$SSDR_BIN" "${fit[@]}" --data "$DATA" --format idx --report "$report" >/dev/null ); then
    printf 'strong\t%s\t%s\t%s\n' "$HOSTS" "$HOSTS" "$report" >>"$runs"
  else
    rc=$?
    [ "$rc" -eq 77 ] || { echo "scaling_study: the run across $HOSTS hosts failed (rc $rc)" >&2; exit 1; }
  fi
fi

# Tables and plots: jobs/scaling_summary.py (the one the SLURM strong-scaling script uses).
{
  "$PY" "$ROOT/jobs/scaling_summary.py" "$OUT/strong" $(awk -F'\t' '$1 == "strong" && $3 == 1 { print $4 }' "$runs")
  echo
  "$PY" "$ROOT/jobs/scaling_summary.py" --weak "$OUT/weak" $(awk -F'\t' '$1 == "weak" { print $4 }' "$runs")
  hosts_report=$(awk -F'\t' '$1 == "strong" && $3 > 1 { print $4 }' "$runs")
  if [ -n "$hosts_report" ]; then
    echo
    "$PY" - "$hosts_report" "$OUT" <<'PY'
import json, os, sys
h = json.load(open(sys.argv[1]))
local = os.path.join(sys.argv[2], f"strong_np{h['ranks']}.json")
stages = ["read", "preprocess", "knn_graph", "propagation", "scatter", "eigensolve", "evaluate", "total"]
rows = [("one host, shared memory", json.load(open(local)))] if os.path.exists(local) else []
rows.append((f"{h['ranks']} namespaced hosts, TCP", h))
print(f"{h['ranks']} ranks on one host and across {h['ranks']} hosts (seconds per stage):")
print(f"{'':28s}" + "".join(f"{s:>12s}" for s in stages) + "   accuracy")
for name, r in rows:
    print(f"{name:28s}" + "".join(f"{r['timings_s'].get(s, 0):12.2f}" for s in stages) + f"   {r['accuracy']['unlabeled']:.4f}")
PY
  fi
} | tee "$OUT/scaling.txt"
echo "scaling_study: $OUT/scaling.txt, strong_scaling.{dat,gp,png}, weak_scaling.{dat,gp,png}" >&2
