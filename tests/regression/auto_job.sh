#!/usr/bin/env bash
# `method: auto` in `ssdr experiment` jobs (issue 49): per split, the method, m and parameters
# chosen by k-fold CV on the split's labeled samples, then fitted; the results lines record the
# choice (chosen_method, selection.chosen) and the summary has one "auto" row over the splits.
# The same choices on 1, 2 and 3 ranks (2 groups). A parameter auto chooses itself (alpha_u), a
# cv_grid and a job-wide preprocess key auto does not take are refused naming the job's line.
# Usage: auto_job.sh SSDR_BINARY DATA_DIR   (MPIEXEC from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

cat >"$tmp/auto.yaml" <<EOF
name: auto_iris
splits: 2
seed: 3
protocol: transductive-fraction
transductive_fraction: 0.5
labeled_per_class: 5
select_by: cv
cv_folds: 3
datasets:
  - {name: iris, path: $DATA/iris.csv}
methods:
  - name: auto
  - name: lda
EOF

# 1. The job on 1 rank, and on 2 and 3 ranks in 2 groups: the choices recorded, an auto row.
for run in "1 1" "2 2" "3 2"; do
  set -- $run
  out="$tmp/out$1"
  if timeout 120 "$MPIEXEC" -n "$1" "$SSDR" experiment "$tmp/auto.yaml" --groups "$2" --output "$out" -q \
       >"$tmp/run$1.out" 2>&1 &&
     "$PY" - "$out" <<'PY' >"$tmp/check$1" 2>&1
import csv, json, sys
out = sys.argv[1]
res = json.load(open(f"{out}/results.json"))["results"]
assert len(res) == 4 and not any("error" in r for r in res), res
auto = sorted((r for r in res if r["method"] == "auto"), key=lambda r: r["split"])
assert [r["split"] for r in auto] == [0, 1], auto
projecting = {"lda", "sda", "sl-lda", "soda"}
for r in auto:
    sel = r["selection"]
    assert r["chosen_method"] in projecting, r["chosen_method"]
    assert sel["chosen"]["method"] == r["chosen_method"], (sel["chosen"], r["chosen_method"])
    assert sel["method"] == "auto" and sel["folds"] == 3 and len(sel["candidates"]) > 10, sel
    assert r["dim"] == 0 and r["dim_used"] == sel["chosen"]["dim"], r
    assert r["cv_accuracy"] == sel["cv_accuracy"], r  # select_by: cv scores auto by its selection
    assert 0 <= r["accuracy"]["unlabeled"] <= 1 and r["params"] == {}, r
assert all("chosen_method" not in r for r in res if r["method"] == "lda")
rows = {row["method"]: row for row in csv.DictReader(open(f"{out}/summary.csv"))}
assert set(rows) == {"auto", "lda"}, rows
assert rows["auto"]["splits"] == "2" and rows["auto"]["cv_mean"] != "-", rows["auto"]
md = [l for l in open(f"{out}/summary.md") if l.startswith("| iris | auto |")]
assert len(md) == 1 and "by CV per split: " in md[0], md
for r in auto:  # every split's choice listed: "lda m=1 scaling=standardize shrinkage=auto ×1"
    assert r["chosen_method"] + " m=" + str(r["dim_used"]) in md[0], md[0]
print(" ".join(f"split {r['split']}: {r['chosen_method']} m={r['dim_used']}" for r in auto))
PY
  then
    ok "auto job on $1 rank(s), $2 group(s): $(cat "$tmp/check$1")"
  else
    bad "auto job on $1 rank(s), $2 group(s)"; cat "$tmp/run$1.out" "$tmp/check$1"
  fi
done
if "$PY" - "$tmp/out1" "$tmp/out2" "$tmp/out3" <<'PY'; then ok "auto job: the same choices on 1, 2 and 3 ranks"; else bad "auto job: choices differ between 1, 2 and 3 ranks"; fi
import json, sys
def choices(out):
    res = json.load(open(f"{out}/results.json"))["results"]
    return sorted((r["split"], r["selection"]["chosen"], r["selection"]["cv_accuracy"], r["accuracy"]["unlabeled"])
                  for r in res if r["method"] == "auto")
a = choices(sys.argv[1])
for out in sys.argv[2:]:
    assert choices(out) == a, (out, choices(out), a)
PY

# 2. Resumed into its folder: nothing runs again.
if timeout 60 "$MPIEXEC" -n 1 "$SSDR" experiment "$tmp/auto.yaml" --output "$tmp/out1" >"$tmp/resume.out" 2>&1 &&
   grep -q "4 configurations (4 fits), 4 already done" "$tmp/resume.out"; then
  ok "auto job resumed: every configuration already done"
else
  bad "auto job resumed"; cat "$tmp/resume.out"
fi

# 3. Refused before anything runs, naming the job's line.
refused() {  # NAME, the expected message, then the methods entry's extra lines / the job's tail
  local name="$1" want="$2" extra="$3" tail="${4:-}"
  { sed '/^  - name: lda$/d' "$tmp/auto.yaml"; printf '%s' "$extra"; printf '%s' "$tail"; } >"$tmp/bad.yaml"
  if timeout 60 "$SSDR" experiment "$tmp/bad.yaml" --output "$tmp/bad" -q >"$tmp/bad.out" 2>&1; then
    bad "$name: accepted"
  elif grep -qF "$want" "$tmp/bad.out" && [ "$(wc -l <"$tmp/bad.out")" -eq 1 ] && [ ! -e "$tmp/bad" ]; then
    ok "$name refused: $(cat "$tmp/bad.out")"
  else
    bad "$name: wrong message (wanted '$want')"; cat "$tmp/bad.out"
  fi
}
refused "auto with alpha_u" "bad.yaml: line 13: alpha_u is not a parameter of auto" "    alpha_u: 0.9
"
refused "auto with cv_grid" "bad.yaml: line 13: cv_grid of method auto" "    cv_grid: default
"
refused "auto with a bad scaling" "bad.yaml: line 13: parameter scaling: expected one of" "    scaling: bogus
"
refused "job-wide preprocess knn with auto" "bad.yaml: line 14: preprocess: knn does not hold for method auto" "" \
  "preprocess:
  knn: 4
"
finish
