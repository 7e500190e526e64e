#!/usr/bin/env bash
# A reusable graph: `fit --graph-out G.h5` writes the kNN lists of the transductive samples
# (/knn/index n x k int64, /knn/dist2 n x k float64) and `fit --graph-in G.h5` uses them
# instead of the search. The lists are the same on any rank count; a fit from saved lists
# gives bit for bit the embedding of the fit that searched, on any rank count; lists that do
# not fit the data (rows, k, self-loops, negative or unsorted distances, a float index) and
# methods without a kNN graph are refused with one line on every rank.
# Usage: graph.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
if ! "$PY" -c 'import h5py, numpy' 2>/dev/null; then
  echo "skipped: $PY has no h5py (python3-h5py)"
  exit 0
fi
D="$DATA/digits.csv"
common=(--method soda --data "$D" --labeled-per-class 5 --transductive-fraction 0.5 --seed 3 -q)
cd "$tmp"

for np in 1 3; do
  "$MPIEXEC" -n "$np" "$SSDR" fit "${common[@]}" --graph-out "g$np.h5" --embedding "searched$np.npy" >/dev/null 2>&1 \
    || bad "fit --graph-out on $np rank(s)"
done
"$PY" - <<'PY' && ok "the lists are the same on 1 and 3 ranks (901 x 8)" || bad "the lists differ between rank counts"
import h5py, numpy as np
a, b = h5py.File("g1.h5"), h5py.File("g3.h5")
assert a["knn/index"].shape == (901, 8) and a["knn/index"].dtype == np.int64, a["knn/index"]
assert (a["knn/index"][:] == b["knn/index"][:]).all() and (a["knn/dist2"][:] == b["knn/dist2"][:]).all()
PY
for np in 1 2 3; do
  ref=searched1.npy
  [ "$np" = 3 ] && ref=searched3.npy
  if [ "$np" = 2 ]; then
    "$MPIEXEC" -n 2 "$SSDR" fit "${common[@]}" --embedding searched2.npy >/dev/null 2>&1
    ref=searched2.npy
  fi
  "$MPIEXEC" -n "$np" "$SSDR" fit "${common[@]}" --graph-in g1.h5 --embedding "given$np.npy" --report "r$np.json" >/dev/null 2>&1
  if cmp -s "$ref" "given$np.npy" && grep -q '"lists_file": "g1.h5"' "r$np.json" && grep -q '"knn_method": "file"' "r$np.json"; then
    ok "fit --graph-in on $np rank(s): the searched fit's embedding bit for bit; the report names the file"
  else
    bad "fit --graph-in on $np rank(s) differs from the searched fit"
  fi
done
# SOGE's adaptive graph (k = 5) reads k + 1 = 6 neighbours, in its own preprocessing's space
# (global scaling and PCA to 95 % energy): its lists give its own bits back.
soge=(fit --method soge --data "$D" --labeled-per-class 5 --transductive-fraction 0.5 --seed 3 -q)
"$MPIEXEC" -n 2 "$SSDR" "${soge[@]}" --graph-out soge.h5 --embedding soge_searched.npy >/dev/null 2>&1
"$MPIEXEC" -n 3 "$SSDR" "${soge[@]}" --graph-in soge.h5 --embedding soge_given.npy >/dev/null 2>&1
"$MPIEXEC" -n 3 "$SSDR" "${soge[@]}" --embedding soge_searched3.npy >/dev/null 2>&1
cmp -s soge_searched3.npy soge_given.npy && "$PY" -c 'import h5py; assert h5py.File("soge.h5")["knn/index"].shape == (901, 6)' \
  && ok "soge (k + 1 = 6 neighbours) from its saved lists on 3 ranks: the searched fit's bits" \
  || bad "soge from its saved lists differs"

"$PY" - <<'PY'
import h5py, numpy as np
f = h5py.File("g1.h5"); idx = f["knn/index"][:]; d = f["knn/dist2"][:]
def w(name, i, dd):
    with h5py.File(name, "w") as g:
        g["knn/index"] = i; g["knn/dist2"] = dd
w("self.h5", np.where(np.arange(8) == 0, np.arange(901)[:, None], idx), d)
w("short.h5", idx[:100], d[:100])
w("k4.h5", idx[:, :4], d[:, :4])
neg = d.copy(); neg[5, 3] = -1; w("neg.h5", idx, neg)
uns = d.copy(); uns[7, [2, 3]] = uns[7, [3, 2]] + [1, 0]; w("unsorted.h5", idx, uns)
w("float.h5", idx.astype(np.float64), d)
PY
refuse() {  # NAME EXPECTED ARGS...: 2 ranks, exit 1, one error line holding EXPECTED
  local name="$1" expected="$2"; shift 2
  "$MPIEXEC" -n 2 "$SSDR" "$@" >out.txt 2>&1
  local rc=$?
  if [ "$rc" -eq 1 ] && [ "$(grep -c '^ssdr: error:' out.txt)" -eq 1 ] && grep -qF -- "$expected" out.txt; then
    ok "$name: $(grep '^ssdr: error:' out.txt)"
  else
    bad "$name: rc=$rc $(tr '\n' ' ' <out.txt)"
  fi
}
refuse "a sample listed as its own neighbour" "self.h5: row 0, entry 0: the sample itself" fit "${common[@]}" --graph-in self.h5
refuse "lists of another data set" "lists of 100 samples, but the fit's graph has 901" fit "${common[@]}" --graph-in short.h5
refuse "fewer neighbours than the graph reads" "the lists hold 4 neighbours per sample; this graph reads 8" fit "${common[@]}" --graph-in k4.h5
refuse "a negative squared distance" "neg.h5: row 5, entry 3: squared distance" fit "${common[@]}" --graph-in neg.h5
refuse "lists not nearest first" "unsorted.h5: row 7, entry 3: not sorted" fit "${common[@]}" --graph-in unsorted.h5
refuse "a floating-point index" "float.h5:/knn/index: expected an integer data set" fit "${common[@]}" --graph-in float.h5
refuse "a method without a kNN graph" "--graph-out: method lda builds no kNN graph" fit --method lda --data "$D" --labeled-per-class 5 -q --graph-out x.h5
refuse "the lists as their own output" "is the same file as --graph-in" fit "${common[@]}" --graph-in g1.h5 --graph-out g1.h5

# --precision single: its lists, saved on 2 ranks, give on 3 ranks the bits of the single fit
# that searched on 3 (the lists of the rounded rows; the propagation's rounding differs
# between rank counts, within its tolerance); a double fit refuses them, naming the
# precision; an unknown precision is refused by the parameter table.
"$MPIEXEC" -n 2 "$SSDR" fit "${common[@]}" --precision single --graph-out gs.h5 --report single2.json \
  >/dev/null 2>&1 || bad "fit --precision single --graph-out on 2 ranks"
"$MPIEXEC" -n 3 "$SSDR" fit "${common[@]}" --precision single --embedding searched_single3.npy >/dev/null 2>&1
"$MPIEXEC" -n 3 "$SSDR" fit "${common[@]}" --precision single --graph-in gs.h5 --embedding single3.npy >/dev/null 2>&1
cmp -s searched_single3.npy single3.npy && "$PY" -c '
import json; r = json.load(open("single2.json")); assert r["parameters"]["precision"] == "single", r["parameters"]' \
  && ok "--precision single from its saved lists on 3 ranks: the searched fit's bits; the report says single" \
  || bad "--precision single from its saved lists differs, or the report does not name the precision"
refuse "single-precision lists in a double fit" 'another preprocessing.precision ("single" in the file, "double" in this fit)' \
  fit "${common[@]}" --graph-in gs.h5
refuse "an unknown precision" "--precision: expected one of double, single, got 'half'" fit "${common[@]}" --precision half
finish
