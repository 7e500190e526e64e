#!/usr/bin/env bash
# The propagation's halo exchange with the rows in file order, with the kNN graph in its
# Cuthill-McKee level order cut into one range per rank (the default, "levels") and partitioned
# by PT-Scotch (graph/locality.hpp), from -log_view's block products (LPBlockProduct: the graph
# times the n x c block of the class columns): messages per product per rank and halo rows per product per rank
# (bytes / 8 / c), at each rank count of RANKS (default "2 4 8 16"; counts above the
# cores oversubscribe them: counts and bytes hold, times do not).
# Usage: jobs/bench_locality.sh [DATA] (default: Debian's Fashion-MNIST, F = 0.2)
# Environment: RANKS, FRACTION (0.2), SSDR_ARGS (extra ssdr or PETSc options).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
data="${1:-/usr/share/datasets/fashion-mnist}"
work="$(mktemp -d /tmp/ssdr-locality.XXXXXX)"
trap 'rm -rf "$work"' EXIT
echo "| P | order | products | messages per product per rank | halo rows per product per rank | propagation s |"
echo "|---|---|---|---|---|---|"
for p in ${RANKS:-2 4 8 16}; do
  for order in file levels ptscotch; do
    opt=(-lp_mat_partitioning_type "$order")
    [ "$order" = file ] && opt=(-lp_mat_partitioning_type current)
    # shellcheck disable=SC2086  # SSDR_ARGS: words
    mpiexec -n "$p" "$SSDR_BUILD/ssdr" fit --method soda --data "$data" --labeled-per-class 20 \
      --transductive-fraction "${FRACTION:-0.2}" --seed 1 -q -log_view ":$work/lv.txt" --report "$work/r.json" \
      "${opt[@]}" ${SSDR_ARGS:-} >/dev/null
    # The propagation stage's MatMult line: count, ..., messages (summed over ranks), average
    # message length (bytes); and the stage's time from the stage summary.
    /usr/bin/python3 - "$work/lv.txt" "$p" "$order" "$work/r.json" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
p, order = int(sys.argv[2]), sys.argv[3]
columns = json.load(open(sys.argv[4]))["classes"]  # the block CG's width: the c class columns
stage = text.split("--- Event Stage")
prop = next(s for s in stage if re.match(r"\s*\d+: propagation", s))
lines = prop.splitlines()
# The block CG's products (one per iteration, the c class columns); GMRES's MatMult otherwise.
mm = next((l for l in lines if l.startswith("LPBlockProduct ")), None)
if mm is None:
    mm, columns = next(l for l in lines if l.startswith("MatMult ")), 1
f = mm.split()
count, messages, length = int(f[1]), float(f[7]), float(f[8])
t = re.search(r"^\s*\d+:\s+propagation:\s+(\S+)", text, re.M)
print("| %d | %s | %d | %.1f | %.0f | %s |" % (p, order, count, messages / count / p,
      messages * length / 8 / columns / count / p, t.group(1) if t else "?"))
PY
  done
done
