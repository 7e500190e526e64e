#!/usr/bin/env bash
# CSV as users have it (issue 47): the same partly labeled data written by R's write.csv
# (every string quoted, NA for unlabeled, row names first), by pandas' to_csv (names with a
# comma, a doubled quote and a line break inside quotes) and as an Excel-style export (CRLF,
# a UTF-8 byte order mark) fit with the same class names and the same embedding on 1, 2 and 3
# ranks, and a model fitted on one predicts the same names on the others.
# Usage: csv_dialects.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

if ! "$PY" -c "import pandas" 2>/dev/null; then
  echo "skipped: $PY has no pandas (jobs/install_deps.sh installs python3-pandas)"
  exit 0
fi

# Iris with three awkward class names, 70 % of the rows unlabeled (fixed seed), four ways.
"$PY" - "$DATA/iris.csv" "$tmp" <<'EOF'
import sys
import numpy as np, pandas as pd
data = np.loadtxt(sys.argv[1], delimiter=",")
out = sys.argv[2]
names = np.array(['setosa, the "small"\none', "versi,color", "virginica"], dtype=object)
y = names[data[:, 0].astype(int)]
unlabeled = np.random.default_rng(0).random(len(y)) < 0.7
y[unlabeled] = None
df = pd.DataFrame(data[:, 1:], columns=["sepal length", "sepal,width", 'petal "len"', "petal width"])
df["label"] = y
df.to_csv(f"{out}/pandas.csv", index=False)
df.to_csv(f"{out}/excel.csv", index=False, lineterminator="\r\n", encoding="utf-8-sig")
with open(f"{out}/r.csv", "w", newline="") as f:  # R's write.csv(df): row names, NA, quotes
    cols = ["", "sepal length", "sepal,width", 'petal ""len""', "petal width", "label"]
    f.write(",".join('"%s"' % c for c in cols) + "\n")
    for i, row in df.iterrows():
        lab = "NA" if row["label"] is None else '"%s"' % row["label"].replace('"', '""')
        f.write('"%d",' % (i + 1) + ",".join("%.17g" % v for v in row.iloc[:4]) + "," + lab + "\n")
df["label"] = df["label"].fillna("")
df.to_csv(f"{out}/plain.csv", index=False)  # the same, quoting only where needed
EOF

fit() {  # fit NAME FILE NP: report, model and embedding as $tmp/NAME.np$NP.*
  "$MPIEXEC" -n "$3" "$SSDR" fit --method soda --data "$2" --label-column label --quiet \
    --report "$tmp/$1.np$3.json" --model "$tmp/$1.np$3.model" --embedding "$tmp/$1.np$3.csv" >/dev/null 2>"$tmp/err"
}
for name in pandas excel r; do
  failed_here=0
  for np in 1 2 3; do
    if ! fit "$name" "$tmp/$name.csv" "$np"; then
      bad "$name.csv on $np ranks: $(head -c 300 "$tmp/err")"
      failed_here=1
    fi
  done
  [ "$failed_here" -eq 0 ] || continue
  # The names, the labeled count and the embedding (to the solvers' 1e-12 relative tolerance:
  # docs/design.md; the coordinates are O(1..100), so 1e-9 absolute) agree on 1-3 ranks.
  if verdict=$("$PY" - "$tmp" "$name" <<'EOF'
import json, sys
import pandas as pd
tmp, name = sys.argv[1], sys.argv[2]
want = ['setosa, the "small"\none', "versi,color", "virginica"]
ref = None
for np_ in (1, 2, 3):
    r = json.load(open(f"{tmp}/{name}.np{np_}.json"))
    got = r["parameters"]["class_names"]
    assert got == want, f"{np_} ranks: class names {got!r}"
    assert r["split"]["labeled"] == 54 and r["split"]["unlabeled"] == 96, f"{np_} ranks: split {r['split']}"
    e = pd.read_csv(f"{tmp}/{name}.np{np_}.csv", keep_default_na=False)
    assert list(e.columns) == ["id", "label", "y1", "y2"], list(e.columns)
    assert len(e) == 150
    if ref is None:
        ref = e
    else:
        assert (e["label"] == ref["label"]).all(), f"{np_} ranks: labels differ"
        assert (e["id"].astype(str) == ref["id"].astype(str)).all(), f"{np_} ranks: ids differ"
        d = (e[["y1", "y2"]] - ref[["y1", "y2"]]).abs().to_numpy().max()
        assert d < 1e-9, f"{np_} ranks: embedding differs by {d}"
ids = ref["id"].astype(str).tolist()
want_ids = [str(i + 1) for i in range(150)] if name == "r" else [str(i) for i in range(150)]
assert ids == want_ids, f"ids {ids[:3]}"
print("names, split and embedding agree on 1-3 ranks")
EOF
  ); then
    ok "$name.csv: $verdict"
  else
    bad "$name.csv: $verdict"
  fi
done

# The three files hold the same data: the same embedding whichever way they were written.
if "$PY" - "$tmp" <<'EOF'
import sys
import pandas as pd
tmp = sys.argv[1]
a, b, c = (pd.read_csv(f"{tmp}/{n}.np2.csv", keep_default_na=False) for n in ("pandas", "excel", "r"))
for x in (b, c):
    assert (x["label"] == a["label"]).all()
    assert (x[["y1", "y2"]] - a[["y1", "y2"]]).abs().to_numpy().max() < 1e-9
EOF
then
  ok "R, pandas and Excel-style files give one embedding"
else
  bad "R, pandas and Excel-style files give different embeddings"
fi

# A model fitted on R's quoted file predicts the same names on 1, 2 and 3 ranks, for the
# plain file (quoted only where needed) as for the quoted one.
for np in 1 2 3; do
  for data in r plain; do
    "$MPIEXEC" -n "$np" "$SSDR" predict --model "$tmp/r.np1.model" --data "$tmp/$data.csv" --label-column label \
      --output "$tmp/pred_${data}_$np.csv" --quiet >/dev/null 2>"$tmp/err" || bad "predict $data.csv on $np ranks: $(head -c 300 "$tmp/err")"
  done
done
if "$PY" - "$tmp" <<'EOF'
import sys
import pandas as pd
tmp = sys.argv[1]
ref = pd.read_csv(f"{tmp}/pred_plain_1.csv", keep_default_na=False)["prediction"].tolist()
assert set(ref) <= {'setosa, the "small"\none', "versi,color", "virginica"} and len(ref) == 150, set(ref)
for data in ("r", "plain"):
    for np_ in (1, 2, 3):
        got = pd.read_csv(f"{tmp}/pred_{data}_{np_}.csv", keep_default_na=False)["prediction"].tolist()
        assert got == ref, f"{data} on {np_} ranks"
EOF
then
  ok "predict gives the same names for quoted and plain files on 1-3 ranks"
else
  bad "predict's names differ between files or rank counts"
fi

finish
