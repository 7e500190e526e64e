#!/usr/bin/env bash
# Ids and names right in every output (issue 47):
# - `fit --soft-labels` ids are the rows' global indices in the data file (or their
#   --id-column texts) on 1-4 ranks, equal to the 1-rank output, each paired with its
#   own row's label; HDF5 soft labels carry them as /ids;
# - the soft labels' columns are p_<class> and p_outlier, apart from id/label whatever the
#   classes are called (id, label, outlier);
# - CSV outputs quote (RFC 4180) class names and ids with a comma, a quote or a line break;
# - `convert` keeps class names (HDF5 /y, NPY <U labels; integer classes as their integers):
#   a fit of the output reports the input's class_names;
# - `predict` says which rows its accuracy counts, and warns and scores nothing when none of
#   the file's class names is a class of the model;
# - `plot` refuses a directory and NaN coordinates with one line; fit --plot's title is the
#   data file's name, not its path.
# Usage: outputs_names.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

run() { "$MPIEXEC" -n "${NP:-2}" "$SSDR" "$@"; }
have_h5py=0
"$PY" -c "import h5py" 2>/dev/null && have_h5py=1

# 1. Soft-label ids on 1-4 ranks: global row indices, the same as on 1 rank, each row's label
#    that of the same id in the embedding (rows paired right), and the count the report's
#    labeled + unlabeled; the embedding's ids and labels the same on every rank count too.
digits="$DATA/digits.csv"
fail=""
for np in 1 2 3 4; do
  NP=$np run fit --method soda --data "$digits" --labeled-per-class 5 --transductive-fraction 0.5 --seed 1 -q \
    --soft-labels "$tmp/s$np.csv" --embedding "$tmp/e$np.csv" --report "$tmp/r$np.json" >/dev/null 2>"$tmp/err" \
    || fail="$fail fit on $np ranks: $(head -1 "$tmp/err");"
done
if [ -z "$fail" ] && "$PY" - "$tmp" <<'PY'
import csv, json, sys
tmp = sys.argv[1]
read = lambda p: list(csv.reader(open(p, newline="")))
s1, e1, r = read(tmp + "/s1.csv"), read(tmp + "/e1.csv"), json.load(open(tmp + "/r1.json"))
assert s1[0] == ["id", "label"] + ["p_%d" % k for k in range(10)] + ["p_outlier"], s1[0]
ids = [int(row[0]) for row in s1[1:]]
assert len(ids) == r["split"]["labeled"] + r["split"]["unlabeled"] == 901, len(ids)
assert ids == sorted(set(ids)) and ids[0] >= 0 and ids[-1] < 1797 and ids[-1] > 1700, (ids[:3], ids[-3:])
label_of = {row[0]: row[1] for row in e1[1:]}
for np in (2, 3, 4):
    s = read(tmp + "/s%d.csv" % np)
    assert [row[:2] for row in s] == [row[:2] for row in s1], "ids or labels on %d ranks differ from 1 rank" % np
    e = read(tmp + "/e%d.csv" % np)
    assert [row[:2] for row in e] == [row[:2] for row in e1], "embedding ids on %d ranks differ from 1 rank" % np
    for row in s[1:]:
        assert label_of[row[0]] == row[1], (np, row[:2], label_of[row[0]])
print("soft labels: %d rows, ids %d..%d" % (len(ids), ids[0], ids[-1]))
PY
then ok "soft-label and embedding ids are global row indices on 1-4 ranks, paired with their rows' labels"
else bad "soft-label ids on 1-4 ranks:$fail"; fi

if [ "$have_h5py" -eq 1 ]; then
  if NP=3 run fit --method soda --data "$digits" --labeled-per-class 5 --transductive-fraction 0.5 --seed 1 -q \
       --soft-labels "$tmp/s3.h5" >/dev/null 2>"$tmp/err" &&
     "$PY" - "$tmp" <<'PY'
import csv, sys, h5py
tmp = sys.argv[1]
ids = [int(row[0]) for row in list(csv.reader(open(tmp + "/s1.csv", newline="")))[1:]]
with h5py.File(tmp + "/s3.h5", "r") as f:
    assert f["ids"][()].tolist() == ids, "HDF5 /ids differ from the CSV's ids"
    assert f["soft_labels"].shape == (len(ids), 11), f["soft_labels"].shape
PY
  then ok "HDF5 soft labels on 3 ranks carry the same global ids as /ids"
  else bad "HDF5 soft labels' /ids: $(head -1 "$tmp/err")"; fi
else
  echo "skipped: HDF5 soft labels' /ids (no h5py for $PY)"
fi

# 2. Class names id, label, outlier: the columns stay apart (p_ prefix; the outlier class's
#    column moves to p_outlier_), and the --id-column texts are the ids on 2 ranks.
awk -F, 'BEGIN { split("id,label,outlier", n, ","); print "rid,species,a,b,c,d" }
  { c = n[$1 + 1]; if (NR % 3 == 0) c = ""; printf "r%d,%s,%s,%s,%s,%s\n", NR, c, $2, $3, $4, $5 }' \
  "$DATA/iris.csv" >"$tmp/names.csv"
if run fit --method soda --data "$tmp/names.csv" --label-column species --id-column rid -q \
     --soft-labels "$tmp/ns.csv" --model "$tmp/n.model" --report "$tmp/nr.json" >/dev/null 2>"$tmp/err" &&
   [ "$(head -1 "$tmp/ns.csv")" = "id,label,p_id,p_label,p_outlier,p_outlier_" ] &&
   [ "$(sed -n '2p;4p' "$tmp/ns.csv" | cut -d, -f1,2 | tr '\n' ' ')" = "r1,id r3, " ] &&
   [ "$(cut -d, -f1 "$tmp/ns.csv" | sort -u | wc -l)" -eq 151 ]
then ok "classes named id, label, outlier: header $(head -1 "$tmp/ns.csv"), ids from --id-column"
else bad "classes named id, label, outlier: $(head -1 "$tmp/ns.csv" 2>/dev/null) $(head -1 "$tmp/err")"; fi

# 3. RFC 4180 quoting: class names with a comma, a double quote and a line break (from NPY
#    '<U' labels) in the embedding, the soft labels, predict's CSV and its one name per line.
"$PY" - "$DATA/iris.csv" "$tmp" <<'PY'
import sys
import numpy as np
d = np.loadtxt(sys.argv[1], delimiter=",")
names = np.array(['set,osa', 'ver"si', 'virg\nx'])
y = names[d[:, 0].astype(int)]
y[2::3] = ""
np.save(sys.argv[2] + "/qx.npy", d[:, 1:])
np.save(sys.argv[2] + "/qy.npy", y)
PY
if run fit --method soda --data "$tmp/qx.npy" --labels "$tmp/qy.npy" -q --embedding "$tmp/qe.csv" \
     --soft-labels "$tmp/qs.csv" --model "$tmp/q.model" >/dev/null 2>"$tmp/err" &&
   run predict --model "$tmp/q.model" --data "$tmp/qx.npy" --labels "$tmp/qy.npy" --output "$tmp/qp.csv" -q \
     >/dev/null 2>>"$tmp/err" &&
   run predict --model "$tmp/q.model" --data "$tmp/qx.npy" --output "$tmp/qp.txt" -q >/dev/null 2>>"$tmp/err" &&
   "$PY" - "$tmp" <<'PY'
import csv, sys
tmp = sys.argv[1]
names = {'set,osa', 'ver"si', 'virg\nx'}
read = lambda p: list(csv.reader(open(p, newline="")))
e, s, p = read(tmp + "/qe.csv"), read(tmp + "/qs.csv"), read(tmp + "/qp.csv")
assert len(e) == 151 and all(len(r) == 4 for r in e), (len(e), e[:2])
assert {r[1] for r in e[1:]} == names | {""}, {r[1] for r in e[1:]}
assert s[0] == ["id", "label", 'p_set,osa', 'p_ver"si', 'p_virg\nx', "p_outlier"], s[0]
assert len(s) == 151 and [r[0] for r in s[1:]] == [str(i) for i in range(150)]
assert len(p) == 151 and {r[1] for r in p[1:]} <= names, p[:3]
t = read(tmp + "/qp.txt")
assert len(t) == 150 and [r[0] for r in t] == [r[1] for r in p[1:]], t[:3]
PY
then ok "CSV outputs quote class names with a comma, a quote and a line break (RFC 4180)"
else bad "CSV quoting of class names: $(head -2 "$tmp/err" | tr '\n' ' ')"; fi

# Ids with a comma and a quote (a quoted --id-column; needs the RFC 4180 reader).
awk -F, 'NR == 1 { print "\"rid\",species,a,b,c,d"; next } { $1 = "\"r," (NR - 1) "\"\"\""; print }' OFS=, \
  "$tmp/names.csv" >"$tmp/qid.csv"
if run fit --method soda --data "$tmp/qid.csv" --label-column species --id-column rid -q \
     --soft-labels "$tmp/qids.csv" >/dev/null 2>"$tmp/err"; then
  if "$PY" - "$tmp/qids.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert [r[0] for r in rows[1:4]] == ['r,1"', 'r,2"', 'r,3"'], rows[1:4]
PY
  then ok "ids with a comma and a quote are quoted in the soft labels"
  else bad "quoted ids: $(sed -n 2p "$tmp/qids.csv")"; fi
elif grep -q "fields, found" "$tmp/err"; then
  echo "skipped: quoted ids (this CSV reader does not read quoted fields)"
else
  bad "quoted ids: $(head -1 "$tmp/err")"
fi

# 4. convert keeps class names: CSV names (id, label, outlier), NPY '<U' names with a comma,
#    a quote and a line break, and integer classes 10/20/30, each to HDF5 and NPY on 2 ranks;
#    a fit of each output on 3 ranks reports the input's class_names.
awk -F, '{ $1 = NR % 3 == 0 ? "" : 10 * ($1 + 1); print }' OFS=, "$DATA/iris.csv" >"$tmp/tens.csv"
fail=""
roundtrip() {  # NAME INPUT_ARGS...: convert to .h5 and .npy, fit each, compare class_names
  local name="$1"; shift
  run fit --method soda "$@" -q --report "$tmp/$name.in.json" >/dev/null 2>"$tmp/err" || { fail="$fail $name: $(head -1 "$tmp/err")"; return; }
  run convert "$@" --output "$tmp/$name.h5" -q 2>"$tmp/err" &&
    run convert "$@" --output "$tmp/$name.x.npy" --labels-output "$tmp/$name.y.npy" -q 2>>"$tmp/err" &&
    NP=3 run fit --method soda --data "$tmp/$name.h5" -q --report "$tmp/$name.h5.json" >/dev/null 2>>"$tmp/err" &&
    NP=3 run fit --method soda --data "$tmp/$name.x.npy" --labels "$tmp/$name.y.npy" -q \
      --report "$tmp/$name.npy.json" >/dev/null 2>>"$tmp/err" ||
    { fail="$fail $name: $(head -1 "$tmp/err")"; return; }
  "$PY" - "$tmp/$name" <<'PY' || fail="$fail $name: class_names differ"
import json, sys
p = sys.argv[1]
names = [json.load(open(p + s))["class_names"] for s in (".in.json", ".h5.json", ".npy.json")]
assert names[0] == names[1] == names[2], names
counts = [json.load(open(p + s))["split"] for s in (".in.json", ".h5.json", ".npy.json")]
assert counts[0] == counts[1] == counts[2], counts
PY
}
roundtrip csvnames --data "$tmp/names.csv" --label-column species --id-column rid
roundtrip npynames --data "$tmp/qx.npy" --labels "$tmp/qy.npy"
roundtrip tens --data "$tmp/tens.csv"
if [ -z "$fail" ] && "$PY" -c 'import json, sys; assert json.load(open(sys.argv[1]))["class_names"] == ["10", "20", "30"]' "$tmp/tens.h5.json"
then ok "convert keeps class names (CSV names, NPY names, integers 10/20/30) through HDF5 and NPY"
else bad "convert keeps class names:$fail"; fi
if [ "$have_h5py" -eq 1 ] && "$PY" - "$tmp" <<'PY'
import sys, h5py, numpy as np
t = sys.argv[1]
with h5py.File(t + "/csvnames.h5", "r") as f:
    y = [v.decode() for v in f["y"][()]]
    assert y[:3] == ["id", "id", ""], y[:3]
with h5py.File(t + "/tens.h5", "r") as f:
    assert f["y"][()][:2].tolist() == [10, 10], f["y"][()][:2]
assert np.load(t + "/npynames.y.npy").dtype.kind == "U"
PY
then ok "convert's HDF5 /y holds the names (strings) or the integers, its NPY '<U' names"
elif [ "$have_h5py" -eq 1 ]; then bad "convert's /y"; fi

# 5. predict's accuracy line says what it counts; with none of the model's class names in the
#    file it warns (one line, rank 0) and prints no accuracy, rc 0, predictions written.
if run predict --model "$tmp/n.model" --data "$tmp/names.csv" --label-column species --id-column rid \
     --output "$tmp/np.csv" -q >"$tmp/out" 2>"$tmp/err" &&
   grep -qx "predict: 150 samples; accuracy [01]\.[0-9]* on the 100 rows labeled in $tmp/names.csv ([0-9]* correct; rows the model may have been trained on)" "$tmp/out" &&
   [ ! -s "$tmp/err" ]
then ok "predict: $(cat "$tmp/out")"
else bad "predict's accuracy line: $(cat "$tmp/out" "$tmp/err")"; fi
sed 's/,id,/,A,/; s/,label,/,B,/; s/,outlier,/,C,/' "$tmp/names.csv" >"$tmp/other.csv"
run predict --model "$tmp/n.model" --data "$tmp/other.csv" --label-column species --id-column rid \
  --output "$tmp/op.csv" -q >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
   grep -q "^ssdr: warning: --data $tmp/other.csv: none of its 3 class names ('A', 'B', 'C') is a class of the model" "$tmp/err" &&
   ! grep -q accuracy "$tmp/out" && [ "$(wc -l <"$tmp/op.csv")" -eq 151 ]
then ok "predict with no known class name: $(cat "$tmp/err")"
else bad "predict with no known class name: rc $rc, $(cat "$tmp/out" "$tmp/err" | tr '\n' ' ')"; fi

# 6. plot: a directory and NaN coordinates are refused with one line and no figure; fit
#    --plot's title is the data file's name.
mkdir -p "$tmp/adir"
run plot "$tmp/adir" --output "$tmp/d.png" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && [ "$(grep -c . "$tmp/out")" -eq 1 ] && grep -q "adir: is a directory" "$tmp/out" && [ ! -e "$tmp/d.png" ]
then ok "plot of a directory: $(cat "$tmp/out")"
else bad "plot of a directory: rc $rc, $(cat "$tmp/out")"; fi
awk -F, 'NR == 5 { $NF = "nan" } { print }' OFS=, "$tmp/e1.csv" >"$tmp/nan.csv"
run plot "$tmp/nan.csv" --output "$tmp/nan.png" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && [ "$(grep -c . "$tmp/out")" -eq 1 ] && grep -q "nan.csv:5: coordinate [0-9]* is nan" "$tmp/out" &&
   [ -z "$(ls "$tmp" | grep '^nan\.png')" ]
then ok "plot of a NaN coordinate: $(cat "$tmp/out")"
else bad "plot of a NaN coordinate: rc $rc, $(cat "$tmp/out")"; fi
if "$SSDR" fit --method soda --data "$DATA/iris.csv" --labeled-per-class 3 -q --plot "$tmp/t.svg" >/dev/null 2>"$tmp/err" &&
   grep -q "soda on iris.csv" "$tmp/t.svg" && ! grep -q "soda on $DATA" "$tmp/t.svg"
then ok "fit --plot's title names the data file, not its path"
else bad "fit --plot's title: $(head -1 "$tmp/err") $(grep -o 'soda on [^<]*' "$tmp/t.svg" | head -1)"; fi

finish
