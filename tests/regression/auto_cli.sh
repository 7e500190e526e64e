#!/usr/bin/env bash
# `ssdr fit --method auto` on the command line (issue 49): a user's CSV with empty labels is
# fitted by the chosen method, the table and the report name it, --cv-table lists every
# candidate with its folds and marks the chosen one (and the ones the race stopped), racing off
# chooses the same with the same scores, predict uses the model as any method's, and every mistake of the doors is one line and a non-zero exit on every rank, with no output
# left behind.
# Usage: auto_cli.sh SSDR_BINARY DATA_DIR   (MPIEXEC and SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

RUN=("$MPIEXEC" -n 2 "$SSDR")
own="$(cd "$DATA/../.." && pwd)/examples/my_iris.csv"  # header, species names, 45 empty labels

# refuse NAME EXPECTED_TEXT -- COMMAND...: non-zero exit, one line on stderr holding the text,
# and none of the outputs written.
refuse() {
  local name="$1" want="$2"
  shift 2
  [ "$1" = -- ] && shift
  if timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"; then
    bad "$name: exit 0"
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err"; then
    bad "$name: expected one line with '$want', got: $(head -c 400 "$tmp/err")"
  elif [ -e "$tmp/r.json" ] || [ -e "$tmp/m.model" ] || [ -e "$tmp/cv.csv" ]; then
    bad "$name: left an output behind"
  else
    ok "$name"
  fi
}

# 1. The fit: the table's method column is auto:NAME, the report has the chosen method and the
#    selection, the CV table has one line per candidate and m with 5 folds, one chosen.
if "${RUN[@]}" fit --method auto --data "$own" --label-column species --report "$tmp/a.json" \
    --model "$tmp/a.model" --cv-table "$tmp/a_cv.csv" -q >"$tmp/fit.out" 2>"$tmp/fit.err"; then
  ok "fit --method auto runs"
else
  bad "fit --method auto: $(tail -3 "$tmp/fit.err")"
fi
"$PY" - "$tmp" <<'EOF' && ok "report, table and CV table agree on the choice" || bad "report, table and CV table"
import csv, json, sys
tmp = sys.argv[1]
r = json.load(open(tmp + "/a.json"))
sel = r["info"]["selection"]
chosen = sel["chosen"]
assert r["method"] == "auto" and r["chosen_method"] == chosen["method"], (r["method"], r.get("chosen_method"))
assert r["parameters"]["method"] == chosen["method"] and r["dim"] == chosen["dim"], r["parameters"]
assert r["parameters"]["selected_by"] == "auto"
table = open(tmp + "/fit.out").read().split("\n")
assert table[1].split()[0] == "auto:" + chosen["method"], table
rows = list(csv.DictReader(open(tmp + "/a_cv.csv")))
assert len(rows) == len(sel["candidates"]), (len(rows), len(sel["candidates"]))
assert [k for k in rows[0] if k.startswith("fold_")] == ["fold_%d" % f for f in range(1, 6)]
marked = [x for x in rows if x["chosen"] == "1"]
assert len(marked) == 1 and marked[0]["method"] == chosen["method"] and int(marked[0]["dim"]) == chosen["dim"]
assert marked[0]["rule"].startswith("the preferred candidate (the default family)"), marked[0]["rule"]
# The rule, from the table alone: the first best preferred line, unless the first best of all
# beats it by more than one standard error sqrt(max(p(1-p), 1/n)/n).
scored = [x for x in rows if x["pruned"] == "0"]
assert all(x["cv_accuracy"] for x in scored) and not any(x["cv_accuracy"] for x in rows if x["pruned"] == "1")
first_best = lambda xs: next(x for x in xs if float(x["cv_accuracy"]) == max(float(y["cv_accuracy"]) for y in xs))
pref = first_best([x for x in scored if x["preferred"] == "1"])
top = first_best(scored)
p, n = float(pref["cv_accuracy"]), int(pref["scored"])
se = (max(p * (1 - p), 1 / n) / n) ** 0.5
assert marked[0] is (top if float(top["cv_accuracy"]) > p + se else pref), (marked[0], pref, top, se)
assert all(x["preferred"] == ("1" if x["method"] == "sl-lda" and abs(float(x["alpha_u"]) - 1 / 1.001) < 1e-12 else "0")
           for x in rows), [(x["method"], x["alpha_u"], x["preferred"]) for x in rows]
# Every candidate was scored on the 105 labeled rows, but those the race stopped: not
# preferred, fewer rows, and a bound that cannot beat the best preferred count by one SE.
assert all(int(x["scored"]) == 105 for x in scored), [x["scored"] for x in scored]
a = max(int(x["correct"]) for x in scored if x["preferred"] == "1")
for x in rows:
    if x["pruned"] == "1":
        b = int(x["bound"])
        assert x["preferred"] == "0" and int(x["scored"]) < 105 and x["chosen"] == "0", x
        assert b <= a or (b - a) ** 2 * 105 <= max(a * (105 - a), 105), (x, a)
assert sel["pruned"] == sum(x["pruned"] == "1" for x in rows) and sel["race"] is True, sel
EOF
# 1b. --auto-race off: every candidate on every fold, the same choice and the same scores.
if "${RUN[@]}" fit --method auto --data "$own" --label-column species --report "$tmp/b.json" \
    --cv-table "$tmp/b_cv.csv" --auto-race off -q >/dev/null 2>"$tmp/fitb.err"; then
  ok "fit --method auto --auto-race off runs"
else
  bad "fit --method auto --auto-race off: $(tail -3 "$tmp/fitb.err")"
fi
"$PY" - "$tmp" <<'EOF' && ok "racing on and off: the same choice and scores" || bad "racing on and off differ"
import csv, json, sys
tmp = sys.argv[1]
on, off = (json.load(open(tmp + f))["info"]["selection"] for f in ("/a.json", "/b.json"))
assert off["race"] is False and off["pruned"] == 0 and on["chosen"] == off["chosen"], (on["chosen"], off["chosen"])
rows = list(csv.DictReader(open(tmp + "/b_cv.csv")))
assert all(int(x["scored"]) == 105 and x["pruned"] == "0" for x in rows)
full = {json.dumps(c["params"], sort_keys=True): c for c in off["candidates"]}
for c in on["candidates"]:
    if not c.get("pruned"):
        d = full[json.dumps(c["params"], sort_keys=True)]
        assert (c["correct"], c["fold_accuracy"]) == (d["correct"], d["fold_accuracy"]), (c, d)
EOF
# 1c. --groups 2 (each of the 2 ranks scores one scaling): the same choice and the same scores.
if "${RUN[@]}" fit --method auto --data "$own" --label-column species --report "$tmp/g.json" \
    --auto-race off --groups 2 -q >/dev/null 2>"$tmp/fitg.err"; then
  ok "fit --method auto --groups 2 runs"
else
  bad "fit --method auto --groups 2: $(tail -3 "$tmp/fitg.err")"
fi
"$PY" - "$tmp" <<'EOF' && ok "--groups 2 and 1: the same choice and scores" || bad "--groups 2 and 1 differ"
import json, sys
tmp = sys.argv[1]
one, two = (json.load(open(tmp + f))["info"]["selection"] for f in ("/b.json", "/g.json"))
assert two["groups"] == 2 and one["groups"] == 1 and one["chosen"] == two["chosen"], (one["chosen"], two["chosen"])
strip = lambda s: [{k: v for k, v in c.items() if k != "candidate_seconds"} for c in s["candidates"]]
assert strip(one) == strip(two)
EOF
# 1d. --groups with rows kept in the file's type (uint8 NPY) and unseen rows (auto selects on
# a copy of the transductive rows): the same entries as one group.
"$PY" - "$DATA/digits.csv" "$tmp" <<'EOF'
import sys
import numpy as np
t = np.loadtxt(sys.argv[1], delimiter=",")
np.save(sys.argv[2] + "/u8.npy", np.clip(t[:, 1:] * 255 / t[:, 1:].max(), 0, 255).astype(np.uint8))
np.save(sys.argv[2] + "/u8_y.npy", t[:, 0].astype(np.int64))
EOF
for g in 1 2; do
  "${RUN[@]}" fit --method auto --data "$tmp/u8.npy" --labels "$tmp/u8_y.npy" --labeled-per-class 3 \
    --transductive-fraction 0.3 --seed 3 --auto-race off --groups $g --report "$tmp/u8_g$g.json" -q >/dev/null 2>"$tmp/u8.err" ||
    bad "uint8 rows with --groups $g: $(tail -2 "$tmp/u8.err")"
done
"$PY" - "$tmp" <<'EOF' && ok "uint8 rows, unseen rows, --groups 2 and 1: the same entries" || bad "uint8 rows: --groups 2 and 1 differ"
import json, sys
one, two = (json.load(open(sys.argv[1] + "/u8_g%d.json" % g))["info"]["selection"] for g in (1, 2))
strip = lambda s: [{k: v for k, v in c.items() if k != "candidate_seconds"} for c in s["candidates"]]
assert two["groups"] == 2 and strip(one) == strip(two) and one["chosen"] == two["chosen"]
EOF
# 1e. With unseen rows the data set is released during the selection and read again for the
# fit: the chosen configuration fitted by hand on the same split gives the same accuracies.
"$PY" - "$tmp" >"$tmp/u8_args" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1] + "/u8_g1.json"))["info"]["selection"]["chosen"]
print(" ".join("--%s %s" % (k.replace("_", "-"), v) for k, v in c.items()))
EOF
# shellcheck disable=SC2046
"${RUN[@]}" fit --data "$tmp/u8.npy" --labels "$tmp/u8_y.npy" --labeled-per-class 3 --transductive-fraction 0.3 \
  --seed 3 $(cat "$tmp/u8_args") --report "$tmp/u8_hand.json" -q >/dev/null 2>"$tmp/u8.err" ||
  bad "the chosen configuration by hand: $(tail -2 "$tmp/u8.err")"
"$PY" - "$tmp" <<'EOF' && ok "auto with unseen rows fits its choice as the method by hand" || bad "auto's fit differs from its choice by hand"
import json, sys
a, h = (json.load(open(sys.argv[1] + f)) for f in ("/u8_g1.json", "/u8_hand.json"))
assert a["accuracy"] == h["accuracy"] and a["split"] == h["split"] and a["dim"] == h["dim"], (a["accuracy"], h["accuracy"])
assert a["trace_ratio"] == h["trace_ratio"], (a["trace_ratio"], h["trace_ratio"])
EOF
# 2. predict with the auto model labels every row by class name.
if "${RUN[@]}" predict --model "$tmp/a.model" --data "$own" --label-column species --output "$tmp/p.csv" -q \
    >/dev/null 2>"$tmp/p.err" && [ "$(wc -l <"$tmp/p.csv")" -eq 151 ] && grep -q ",setosa$" "$tmp/p.csv"; then
  ok "predict with an auto model"
else
  bad "predict with an auto model: $(tail -2 "$tmp/p.err")"
fi

# 3. The doors.
common=(fit --method auto --data "$own" --label-column species --report "$tmp/r.json" --model "$tmp/m.model")
refuse "a parameter auto chooses" "--alpha-u is not a parameter of auto" -- "${RUN[@]}" "${common[@]}" --alpha-u 0.9
refuse "auto with --select-by cv" "--select-by cv: --method auto cross-validates already" -- \
  "${RUN[@]}" "${common[@]}" --select-by cv
refuse "auto with --grid" "--grid: --method auto chooses among its own candidates" -- \
  "${RUN[@]}" "${common[@]}" --grid alpha_u=0.5
refuse "auto with --soft-labels" "--soft-labels: not with --method auto" -- \
  "${RUN[@]}" "${common[@]}" --soft-labels "$tmp/f.csv"
refuse "auto with --cv-folds 1" "cv_folds (--cv-folds): expected an integer >= 2, got 1" -- \
  "${RUN[@]}" "${common[@]}" --cv-folds 1
refuse "a bad scaling for auto" "--scaling" -- "${RUN[@]}" "${common[@]}" --scaling loud
refuse "a bad --auto-race" "--auto-race: expected on or off, got 'maybe'" -- "${RUN[@]}" "${common[@]}" --auto-race maybe
refuse "--auto-race without auto" "--auto-race: expected --method auto" -- \
  "${RUN[@]}" fit --method lda --data "$own" --label-column species --report "$tmp/r.json" --auto-race off
refuse "more groups than ranks" "--groups 3 must be between 1 and the number of ranks (2)" -- \
  "${RUN[@]}" "${common[@]}" --groups 3 -q
refuse "--groups without auto" "--groups: expected --method auto" -- \
  "${RUN[@]}" fit --method lda --data "$own" --label-column species --report "$tmp/r.json" --groups 2
refuse "--cv-table without a selection" "--cv-table: expected --method auto or --select-by cv" -- \
  "${RUN[@]}" fit --method lda --data "$own" --label-column species --cv-table "$tmp/cv.csv"
refuse "--cv-table onto the data" "--cv-table" -- "${RUN[@]}" "${common[@]}" --cv-table "$own"
# 4. A class with one labeled row: CV cannot hold it out; one line naming the class.
"$PY" - "$own" "$tmp/one.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
seen = False
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(rows[0])
    for r in rows[1:]:
        if r[-1] == "setosa":
            r[-1] = r[-1] if not seen else ""
            seen = True
        w.writerow(r)
EOF
refuse "a class with one labeled row" "at least 2 labeled samples per class (one is held out); class 'setosa' has 1" -- \
  "${RUN[@]}" fit --method auto --data "$tmp/one.csv" --label-column species --report "$tmp/r.json" -q
finish
