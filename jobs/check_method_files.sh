#!/usr/bin/env bash
# Issue 51's check that a method is one file, on a scratch copy of this tree's committed HEAD
# (docs/design.md, "Adding a method"):
#   1. src/methods/impls/tca.cpp (TCA and OTCA) deleted, and tests/methods/first_coordinates.cpp
#      (a trivial method written as a family) copied into src/methods/impls/: nothing else is
#      edited;
#   2. the `ssdr` target and the Python module build;
#   3. `ssdr methods` lists first-coordinates and neither tca nor otca, and the regenerated
#      docs/methods.md differs from this tree's by exactly those rows;
#   4. first-coordinates fits and predicts through the CLI, and through Python (ssdr.FIRST_COORDINATES).
# A full build of the library: minutes, so it is a job, not a CI test (CI runs the generator's
# own test, cmake.method_families, and tests/unit/added_method_test.cpp).
#   jobs/check_method_files.sh [WORK_DIR]     # default: a fresh temporary folder, removed at the end
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
py="${SSDR_PYTHON:-/usr/bin/python3}"
work="${1:-}"
if [ -z "$work" ]; then work="$(mktemp -d -t ssdr-method-files.XXXXXX)"; trap 'rm -rf -- "$work"' EXIT; fi
mkdir -p -- "$work"
tree="$work/tree"
rm -rf -- "$tree"
git -C "$SSDR_ROOT" worktree list >/dev/null  # a git checkout
git clone -q -- "$SSDR_ROOT" "$tree"
echo "check_method_files: HEAD $(git -C "$tree" rev-parse --short HEAD) in $tree"
rm -- "$tree/src/methods/impls/tca.cpp"
cp -- "$tree/tests/methods/first_coordinates.cpp" "$tree/src/methods/impls/first_coordinates.cpp"
git -C "$tree" status --short
t0=$(date +%s)
cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tree/build" -j "$(env -u OMP_NUM_THREADS nproc)" --target ssdr ssdr_python >/dev/null
echo "check_method_files: built ssdr and the Python module in $(( $(date +%s) - t0 )) s"
ssdr="$tree/build/ssdr"
listed="$("$ssdr" methods | awk '/^  [a-z0-9-]+ /{print $1}')"
fail() { echo "check_method_files: FAILED: $*" >&2; exit 1; }
grep -qx "first-coordinates" <<<"$listed" || fail "ssdr methods does not list first-coordinates"
! grep -qx "tca" <<<"$listed" || fail "ssdr methods still lists tca"
! grep -qx "otca" <<<"$listed" || fail "ssdr methods still lists otca"
"$ssdr" methods --markdown > "$work/methods.md"
# The page's method rows: this tree's minus tca and otca plus first-coordinates.
rows() { grep -E '^\| `[a-z0-9-]+` \|' "$1" | sed -n '/^| `[a-z0-9-]*` | [^|]* | [^|]* | \(yes\|no\) |/p' | awk -F'`' '{print $2}' | sort; }
want="$( (rows "$SSDR_ROOT/docs/methods.md" | grep -vx 'tca\|otca'; echo first-coordinates) | sort)"
got="$(rows "$work/methods.md")"
[ "$want" = "$got" ] || fail "the regenerated docs/methods.md has other method rows: $(diff <(echo "$want") <(echo "$got") | tr '\n' ' ')"
data="$SSDR_ROOT/tests/data/wine.csv"
[ -e "$data" ] || fail "$data not found"
csv="$work/wine_semi.csv"
# tests/data/wine.csv: the class, then 13 features, no header. A user's file: a header, the class
# names in a column of their own, and every third row's label left empty.
"$py" - "$data" "$csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
d = len(rows[0]) - 1
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["x%d" % j for j in range(d)] + ["label"])
    for i, r in enumerate(rows):
        w.writerow(r[1:] + ["" if i % 3 == 2 else "class" + r[0]])
PY
mpiexec -n 2 "$ssdr" fit --quiet --method first-coordinates --dim 2 --data "$csv" --label-column label \
  --model "$work/fc.model" --report "$work/fc.json"
mpiexec -n 2 "$ssdr" predict --quiet --model "$work/fc.model" --data "$csv" --label-column label --output "$work/fc_pred.csv"
[ "$(wc -l < "$work/fc_pred.csv")" -gt 100 ] || fail "ssdr predict wrote too few rows"
"$py" - "$work/fc.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["method"] == "first-coordinates", r["method"]
print("check_method_files: CLI fit of first-coordinates on %d samples, W %s" % (r["n"], r.get("dim")))
PY
# A file, not a here-document: mpiexec forwards standard input to rank 0 only.
cat > "$work/python_fit.py" <<'PY'
import sys
import numpy as np
from mpi4py import MPI
import ssdr
assert not hasattr(ssdr, "TCA") and not hasattr(ssdr, "OTCA"), "Python still has TCA/OTCA"
comm = MPI.COMM_WORLD
table = np.loadtxt(sys.argv[1], delimiter=",")
labels, X = table[:, 0].astype(int), table[:, 1:]
y = np.array([c if i % 3 != 2 else -1 for i, c in enumerate(labels)])
lo, hi = len(X) * comm.rank // comm.size, len(X) * (comm.rank + 1) // comm.size
est = ssdr.FIRST_COORDINATES(dim=2).fit(X[lo:hi], y[lo:hi], comm=comm)
Y = est.transform(X[lo:hi])
assert Y.shape == (hi - lo, 2), Y.shape
assert len(est.predict(X[lo:hi])) == hi - lo
if comm.rank == 0:
    print("check_method_files: Python fit of ssdr.FIRST_COORDINATES: this rank's embedding", Y.shape)
PY
PYTHONPATH="$tree/build/python" mpiexec -n 2 "$py" "$work/python_fit.py" "$data"
echo "check_method_files: passed"
