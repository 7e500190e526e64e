#!/usr/bin/env bash
# Strong and weak scaling of one ssdr fit, stage by stage, with a table and gnuplot plots.
#
#   strong: the whole data set (Fashion-MNIST's 70 000 samples) on P ranks, P in RANKS;
#   weak:   the first N0·P samples on P ranks (the same rows per rank);
#   hosts:  the strong-scaling fit again on HOSTS "hosts" (Linux network namespaces joined by a
#           bridge, one rank each, TCP between them; jobs/lib/netns_hosts.sh) when HOSTS ≥ 2
#           and this machine can make namespaces (root), else skipped with one line.
# Every fit writes its report (per-stage timings_s, peak memory); the study prints a Markdown
# table of time per stage with speedup S_P = T_1/T_P and efficiency S_P/P (strong) or T_1/T_P
# (weak), and writes scaling.dat + scaling.gp (speedup and efficiency per stage against P;
# scaling.png when gnuplot is installed) into the output folder.
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
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3  # Debian's, with python3-numpy (jobs/install_deps.sh)
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

"$PY" - "$runs" "$OUT" <<'PY'
import json, os, sys
runs, out = sys.argv[1], sys.argv[2]
stages = ["read", "preprocess", "knn_graph", "propagation", "scatter", "eigensolve", "evaluate", "total"]
rows = []
for line in open(runs):
    kind, P, hosts, path = line.rstrip("\n").split("\t")
    r = json.load(open(path))
    rows.append((kind, int(P), int(hosts), r))
lines = []
for kind in ("strong", "weak"):
    group = [x for x in rows if x[0] == kind]
    if not group:
        continue
    base = next((x for x in group if x[1] == 1 and x[2] == 1), group[0])
    T1 = base[3]["timings_s"]
    r0 = base[3]
    lines.append(f"### {kind} scaling: {r0['method']}, n = {r0['n']} on 1 rank"
                 + (" (the same n on every rank count)" if kind == "strong" else f" (n/P = {r0['n']} on every rank count)")
                 + f", d = {r0['d']}, knn_method {r0['parameters'].get('knn_method')}")
    lines.append("")
    lines.append("| ranks | hosts | n | " + " | ".join(stages) + " | peak MiB/rank | accuracy |")
    lines.append("|---|---|---|" + "---|" * len(stages) + "---|---|")
    for _, P, hosts, r in sorted(group, key=lambda x: (x[2] > 1, x[1])):
        t = r["timings_s"]
        cells = []
        for s in stages:
            v = t.get(s, 0.0)
            if P == 1 and hosts == 1 or v <= 0 or T1.get(s, 0.0) <= 0:
                cells.append(f"{v:.1f}")
            else:
                sp = T1[s] / v
                eff = sp / P if kind == "strong" else sp
                cells.append(f"{v:.1f} ({sp:.2f}×, {100 * eff:.0f} %)")
        acc = r["accuracy"]["unlabeled"]
        lines.append(f"| {P} | {hosts} | {r['n']} | " + " | ".join(cells) +
                     f" | {r['peak_memory_mib']['max']:.0f} | {acc:.4f} |")
    lines.append("")
lines.append("Cells: seconds (speedup T₁/T_P, efficiency: T₁/(P·T_P) for strong, T₁/T_P for weak scaling).")
table = "\n".join(lines)
open(os.path.join(out, "scaling.md"), "w").write(table + "\n")
print(table)
# Data and plot: one block per kind; columns P, then speedup and efficiency per stage.
with open(os.path.join(out, "scaling.dat"), "w") as f:
    for kind in ("strong", "weak"):
        group = sorted([x for x in rows if x[0] == kind and x[2] == 1], key=lambda x: x[1])
        if not group:
            continue
        T1 = group[0][3]["timings_s"]
        f.write(f"# {kind}: P " + " ".join(f"S_{s} E_{s}" for s in stages) + "\n")
        for _, P, _, r in group:
            vals = []
            for s in stages:
                v, b = r["timings_s"].get(s, 0.0), T1.get(s, 0.0)
                sp = b / v if v > 0 and b > 0 else float("nan")
                vals += [sp, sp / P if kind == "strong" else sp]
            f.write(f"{P} " + " ".join(f"{x:.4f}" for x in vals) + "\n")
        f.write("\n\n")
with open(os.path.join(out, "scaling.gp"), "w") as g:
    g.write('set terminal pngcairo size 1100,450\nset output "scaling.png"\nset multiplot layout 1,2\n')
    g.write('set xlabel "ranks P"\nset xtics 1\nset key left top\nset grid\n')
    plots = ", ".join(f'"scaling.dat" index 0 using 1:{2 + 2 * i} with linespoints title "{s}" noenhanced' for i, s in enumerate(stages))
    g.write('set title "strong scaling: speedup T_1/T_P per stage (ideal: P)"\nset ylabel "speedup"\n')
    g.write(f"plot x with lines dashtype 2 lc rgb 'gray' title 'ideal', {plots}\n")
    plots = ", ".join(f'"scaling.dat" index 1 using 1:{3 + 2 * i} with linespoints title "{s}" noenhanced' for i, s in enumerate(stages))
    g.write('set title "weak scaling: efficiency T_1/T_P per stage (ideal: 1)"\nset ylabel "efficiency"\nset yrange [0:*]\n')
    g.write(f"plot 1 with lines dashtype 2 lc rgb 'gray' title 'ideal', {plots}\n")
    g.write("unset multiplot\n")
PY
if command -v gnuplot >/dev/null; then (cd "$OUT" && gnuplot scaling.gp) && echo "scaling_study: plot $OUT/scaling.png" >&2; fi
echo "scaling_study: table $OUT/scaling.md, data $OUT/scaling.dat, gnuplot $OUT/scaling.gp" >&2
