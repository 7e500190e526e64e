#!/usr/bin/env bash
# `ssdr experiment --output DIR`: the output folder destroys nothing and reports exactly the
# current job. A second run into a folder in use is refused (the lock), inputs under the names
# the run writes are refused before anything runs and stay byte for byte, an edited job's
# summary covers exactly its configurations, ranges and sweeps are bounded before they are
# expanded, and folders that are files, devices, links or someone else's are refused.
# Usage: experiment_folders.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
PY="${SSDR_PYTHON:-/usr/bin/python3}"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# A small iris job: job FILE [EXTRA_TOP_LEVEL_LINES] -- METHOD_LINES...
job() {
  local f="$1"; shift
  {
    printf 'name: folders\nprotocol: transductive-fraction\ntransductive_fraction: 0.5\nsplits: 2\nseed: 0\n'
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do printf '%s\n' "$1"; shift; done
    [ $# -gt 0 ] && shift
    printf 'methods:\n'
    printf '%s\n' "$@"
  } >"$f"
}
# refuse NAME EXPECTED_TEXT ARGS...: `ssdr ARGS` on 2 ranks must exit non-zero with one line
# on stderr holding EXPECTED_TEXT. Started in the background (a refusal is mostly MPI's start
# and teardown, idle time); `collect` waits for them all and judges them in order.
cases=0
refuse() {
  cases=$((cases + 1))
  local d="$tmp/case$cases"
  mkdir -p "$d" && printf '%s' "$1" >"$d/name" && printf '%s' "$2" >"$d/want"
  shift 2
  { timeout 60 "$MPIEXEC" -n 2 "$SSDR" "$@" >"$d/out" 2>"$d/err"; echo $? >"$d/rc"; } &
}
collect() {
  wait
  local i d name want
  for i in $(seq 1 "$cases"); do
    d="$tmp/case$i"; name=$(cat "$d/name"); want=$(cat "$d/want")
    if [ "$(cat "$d/rc")" -eq 0 ]; then
      bad "$name: exit 0"
    elif [ "$(wc -l <"$d/err")" -ne 1 ] || ! grep -qF -- "$want" "$d/err"; then
      bad "$name: expected one line with '$want', got: $(head -c 400 "$d/err")"
    else
      ok "$name"
    fi
    rm -rf "$d"
  done
  cases=0
}
# count FOLDER: "results.json entries, distinct keys, checkpoint lines"
count() {
  "$PY" - "$1" <<'PY'
import glob, json, sys
r = json.load(open(sys.argv[1] + "/results.json"))["results"]
lines = sum(1 for f in glob.glob(sys.argv[1] + "/results*.jsonl") for l in open(f) if l.strip())
print(len(r), len({x["key"] for x in r}), lines)
PY
}
# The pid that holds FOLDER's lock (written into experiment.lock), once it is held.
holder() {
  local pid=""
  for _ in $(seq 1 400); do
    pid=$(sed -n 's/^pid \([0-9]*\) on host .*/\1/p' "$1/experiment.lock" 2>/dev/null)
    [ -n "$pid" ] && break
    sleep 0.05
  done
  echo "$pid"
}

# 1. Two runs into one folder at once: the second is refused at once, naming the folder; the
#    first (held stopped meanwhile, so it cannot end first) completes with each configuration
#    once. kill_test.yaml: 72 configurations.
KILL_JOB="$(cd "$DATA/../../jobs/experiments" && pwd)/kill_test.yaml"
"$MPIEXEC" -n 2 "$SSDR" experiment "$KILL_JOB" --output "$tmp/conc" -q >"$tmp/a.out" 2>&1 &
apid=$!
pid=$(holder "$tmp/conc")
if [ -n "$pid" ] && kill -STOP "$pid" 2>/dev/null; then
  timeout 60 "$MPIEXEC" -n 2 "$SSDR" experiment "$KILL_JOB" --output "$tmp/conc" -q >/dev/null 2>"$tmp/err"; rc=$?
  want="output folder '$tmp/conc' is in use by another ssdr experiment (pid $pid"
  if [ "$rc" -ne 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$want" "$tmp/err"; then
    ok "a second run into a folder in use is refused: $(cat "$tmp/err")"
  else
    bad "a second run into a folder in use: exit $rc, expected one line with '$want', got: $(head -c 400 "$tmp/err")"
  fi
  kill -CONT "$pid"
  wait "$apid"; rc=$?
  if [ "$rc" -eq 0 ] && [ "$(count "$tmp/conc")" = "72 72 72" ]; then
    ok "the first run completes with each of its 72 configurations once"
  else
    bad "first run: exit $rc, results/keys/checkpoint lines $(count "$tmp/conc" 2>&1)"; tail -3 "$tmp/a.out"
  fi
else
  bad "the first run was not caught holding its lock (pid '$pid': none written, or it had ended)"; wait "$apid"
fi

# 1b. The lock dies with its process: a run killed while it holds the lock is resumed by the
#     next one, which finishes the job with each configuration once (the lock file, left in
#     the folder, is neither a result nor an obstacle).
"$MPIEXEC" -n 2 "$SSDR" experiment "$KILL_JOB" --output "$tmp/dead" -q >/dev/null 2>&1 &
apid=$!
pid=$(holder "$tmp/dead")
[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
wait "$apid"
if [ -e "$tmp/dead/experiment.lock" ] &&
   timeout 120 "$MPIEXEC" -n 2 "$SSDR" experiment "$KILL_JOB" --output "$tmp/dead" -q >/dev/null 2>"$tmp/err" &&
   [ "$(count "$tmp/dead" | cut -d' ' -f1-2)" = "72 72" ]; then
  ok "a killed holder's lock is released; the rerun resumes and completes"
else
  bad "resume after a killed holder: $(head -c 300 "$tmp/err")"
fi

# 2. Inputs under names the run writes are refused before anything runs, naming both, and
#    stay byte for byte; nothing is created beside them.
mkdir -p "$tmp/in"
cp "$DATA/iris.csv" "$tmp/in/summary.csv"
sum=$(md5sum <"$DATA/iris.csv")
job "$tmp/in_data.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $tmp/in/summary.csv}" -- "  - lda"
refuse "a data set saved as summary.csv in the output folder" \
  "experiment output $tmp/in/summary.csv is the same file as data set 'iris' of $tmp/in_data.yaml $tmp/in/summary.csv" \
  experiment "$tmp/in_data.yaml" --output "$tmp/in" -q
ln -s "$tmp/in/summary.csv" "$tmp/other_name.csv"
job "$tmp/in_link.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $tmp/other_name.csv}" -- "  - lda"
refuse "... and under another name (a link to it)" "is the same file as data set 'iris' of $tmp/in_link.yaml $tmp/other_name.csv" \
  experiment "$tmp/in_link.yaml" --output "$tmp/in" -q
job "$tmp/in/summary.md" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- "  - lda"
cp "$tmp/in/summary.md" "$tmp/job_copy.yaml"
refuse "the job file saved as summary.md in the output folder" "is the same file as job file $tmp/in/summary.md" \
  experiment "$tmp/in/summary.md" --output "$tmp/in" -q
mkdir -p "$tmp/in_ck" && cp "$DATA/iris.csv" "$tmp/in_ck/results.old.jsonl"
job "$tmp/in_ck.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $tmp/in_ck/results.old.jsonl, format: csv}" -- "  - lda"
refuse "a data set named like a checkpoint file" "is the same file as data set 'iris'" experiment "$tmp/in_ck.yaml" --output "$tmp/in_ck" -q
mkdir -p "$tmp/in/plots" && cp "$DATA/iris.csv" "$tmp/in/plots/iris.csv"
job "$tmp/in_plots.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $tmp/in/plots/iris.csv}" -- "  - lda"
refuse "a data set inside plots/" "is inside $tmp/in/plots, the folder whose plots every summary rewrites" \
  experiment "$tmp/in_plots.yaml" --output "$tmp/in" -q
collect
if [ "$(md5sum <"$tmp/in/summary.csv")" = "$sum" ] && [ "$(md5sum <"$tmp/in/plots/iris.csv")" = "$sum" ] &&
   cmp -s "$tmp/in/summary.md" "$tmp/job_copy.yaml" &&
   [ "$(cd "$tmp/in" && ls -A | sort | tr '\n' ' ')" = "plots summary.csv summary.md " ] &&
   [ "$(md5sum <"$tmp/in_ck/results.old.jsonl")" = "$sum" ] && [ "$(ls -A "$tmp/in_ck")" = "results.old.jsonl" ]; then
  ok "the inputs are byte for byte intact and nothing was written beside them"
else
  bad "inputs changed or files written: $(ls -A "$tmp/in" "$tmp/in_ck")"
fi

# 3. An edited job rerun into its folder (methods, dims and labeled counts change; the
#    fingerprint does not): the summary covers exactly the current configurations, the old
#    results stay in the checkpoint, and the old plots are gone.
job "$tmp/edit1.yaml" "labeled_per_class: [2, 3]" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- \
  '  - {name: lda, dim: "1:2"}' "  - oda" "  - {name: soda, sigma_s: [0.001, 0.1]}"
job "$tmp/edit2.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- \
  '  - {name: lda, dim: "1:2"}' "  - {name: pca, dim: 1}"
if timeout 120 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/edit1.yaml" --output "$tmp/edit" -q >/dev/null 2>"$tmp/err" &&
   ls "$tmp/edit/plots/iris_p2_accuracy_vs_dim.dat" "$tmp/edit/plots/iris_p3_soda_accuracy_vs_sigma_s.dat" >/dev/null &&
   timeout 120 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/edit2.yaml" --output "$tmp/edit" >"$tmp/edit.out" 2>&1 &&
   grep -q "4 already done" "$tmp/edit.out" && grep -q "16 result(s) of configurations this job no longer has" "$tmp/edit.out" &&
   "$PY" - "$tmp/edit" <<'PY'
import csv, glob, json, os, sys
out = sys.argv[1]
res = json.load(open(f"{out}/results.json"))["results"]
got = sorted((r["method"], r["labeled_per_class"], r["dim"], r["split"]) for r in res)
want = sorted([("lda", 3, d, s) for d in (1, 2) for s in (0, 1)] + [("pca", 3, 1, s) for s in (0, 1)])
assert got == want, got
rows = sorted((r["method"], r["labeled_per_class"]) for r in csv.DictReader(open(f"{out}/summary.csv")))
assert rows == [("lda", "3"), ("pca", "3")], rows
md = [l for l in open(f"{out}/summary.md") if l.startswith("| iris")]
assert len(md) == 2 and "| lda |" in md[0] and "| pca |" in md[1], md
ck = [json.loads(l) for f in glob.glob(f"{out}/results*.jsonl") for l in open(f) if l.strip()]
assert len(ck) == 22 and {x["method"] for x in ck} == {"lda", "oda", "soda", "pca"}, len(ck)
plots = sorted(os.listdir(f"{out}/plots"))
assert all(p.startswith("iris_p3_accuracy_vs_dim.") for p in plots), plots
dat = open(f"{out}/plots/iris_p3_accuracy_vs_dim.dat").read()
assert "# curve lda" in dat and "# reference pca (m=1)" in dat and "oda" not in dat and "soda" not in dat, dat
PY
then
  ok "an edited job's summary, results.json and plots cover exactly its configurations"
else
  bad "edited job: $(head -c 300 "$tmp/err"; tail -3 "$tmp/edit.out" 2>/dev/null)"
fi

# 4. Ranges and sweeps bounded before they are expanded: one line naming the key, in seconds,
#    no output folder.
range() {  # range NAME EXPECTED DIM_VALUE
  job "$tmp/range$cases.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- "  - {name: lda, dim: $3}"
  refuse "$1" "$2" experiment "$tmp/range$cases.yaml" --output "$tmp/range_out" -q
}
range "dim 9223372036854775807:9223372036854775807 (the range loop overflowed)" \
  "range0.yaml: line 10: method lda: dim: '9223372036854775807' in '9223372036854775807:9223372036854775807' is larger than 2147483647" \
  '"9223372036854775807:9223372036854775807"'
range "dim 1:2147483647:1" "line 10: method lda: dim: range '1:2147483647:1' has more than 10000 values" '"1:2147483647:1"'
range "dim beyond int64" "'99999999999999999999' in '99999999999999999999' is larger than 2147483647" '"99999999999999999999"'
range "dim 1:5:0" "line 10: method lda: dim: expected a range 'a:b[:step]' with 1 <= a <= b and step >= 1, got '1:5:0'" '"1:5:0"'
range "dim 1: (an empty end)" "dim: expected an integer, a list or a range 'a:b[:step]', got '1:'" '"1:"'
range "dim 1:2:3:4" "dim: expected a range 'a:b[:step]', got '1:2:3:4'" '"1:2:3:4"'
range "a dim list past 10^4 values in total" "line 10: dim of method lda: 12000 values, more than 10000" '["1:6000", "6001:12000"]'
job "$tmp/sweep.yaml" "labeled_per_class: 3" "splits: 10000" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- \
  '  - {name: soda, dim: "1:200"}'
sed -i '/^splits: 2$/d' "$tmp/sweep.yaml"
refuse "10^4 splits × 200 dims of a method fitted per dim" "the job has 2000000 configurations" \
  experiment "$tmp/sweep.yaml" --output "$tmp/sweep_out" -q
job "$tmp/grid.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- \
  "  - {name: soda, sigma_s: [0.001, 0.1, 0.001]}"
refuse "a grid value listed twice (was fitted twice, counted as two splits)" "line 10: method soda: sigma_s lists 0.001 twice" \
  experiment "$tmp/grid.yaml" --output "$tmp/grid_out" -q
job "$tmp/overlap.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- \
  '  - {name: lda, dim: "1:2"}' "  - {name: lda, dim: 2}"
refuse "two entries of a method that overlap" 'line 11: method lda repeats the configuration {} dim 2 of the entry on line 10' \
  experiment "$tmp/overlap.yaml" --output "$tmp/overlap_out" -q
collect
[ ! -e "$tmp/range_out" ] && ok "refused ranges leave no output folder" || bad "a refused range left $tmp/range_out"

# 5. Output folders that are not what they should be. Each: one line, nothing written.
job "$tmp/ok.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- '  - {name: lda, dim: "1:2"}'
cp "$DATA/iris.csv" "$tmp/data.csv"
refuse "--output naming the data file" "output folder '$tmp/data.csv' is not a folder" experiment "$tmp/ok.yaml" --output "$tmp/data.csv" -q
refuse "--output inside the data file's name" "output folder '$tmp/data.csv/out' cannot be created: Not a directory" \
  experiment "$tmp/ok.yaml" --output "$tmp/data.csv/out" -q
refuse "--output /dev/null" "output folder '/dev/null' is not a folder" experiment "$tmp/ok.yaml" --output /dev/null -q
mkdir -p "$tmp/elsewhere" "$tmp/plotlink"
cp "$DATA/iris.csv" "$tmp/elsewhere/iris_p3_accuracy_vs_dim.dat"
ln -s "$tmp/elsewhere" "$tmp/plotlink/plots"
refuse "plots/ a link to another folder" "'$tmp/plotlink/plots' is a link or not a folder" experiment "$tmp/ok.yaml" --output "$tmp/plotlink" -q
mkdir -p "$tmp/pngl/plots" && : >"$tmp/pngl/experiment.lock"
ln -s "$tmp/elsewhere/iris_p3_accuracy_vs_dim.dat" "$tmp/pngl/plots/iris_p3_accuracy_vs_dim.png"
refuse "a plot file that links to a file elsewhere (gnuplot wrote through it)" \
  "'$tmp/pngl/plots/iris_p3_accuracy_vs_dim.png' is a link, device or FIFO in the plots folder" \
  experiment "$tmp/ok.yaml" --output "$tmp/pngl" -q
mkdir -p "$tmp/fifo" && mkfifo "$tmp/fifo/results.g0of1.jsonl"
refuse "a checkpoint that is a FIFO (was read forever)" "checkpoint file '$tmp/fifo/results.g0of1.jsonl' is refused: it is not a regular file" \
  experiment "$tmp/ok.yaml" --output "$tmp/fifo" -q
mkdir -p "$tmp/foreign" && printf 'quarter,revenue\n1,100\n' >"$tmp/foreign/summary.csv"
refuse "a folder holding someone's summary.csv and no checkpoint" \
  "output folder '$tmp/foreign' holds summary.csv but no checkpoint (results*.jsonl) nor experiment.lock" \
  experiment "$tmp/ok.yaml" --output "$tmp/foreign" -q
mkdir -p "$tmp/ro"
chmod 555 "$tmp/ro"
if [ -w "$tmp/ro" ]; then
  echo "skip: an unwritable output folder (running as root: every folder is writable)"
else
  refuse "an unwritable output folder" "output folder '$tmp/ro' cannot be written: Permission denied" \
    experiment "$tmp/ok.yaml" --output "$tmp/ro" -q
fi
collect
chmod 755 "$tmp/ro"
[ "$(md5sum <"$tmp/data.csv")" = "$sum" ] && ok "the data file given as --output is intact" || bad "the data file given as --output changed"
[ "$(md5sum <"$tmp/elsewhere/iris_p3_accuracy_vs_dim.dat")" = "$sum" ] && ok "the linked files are intact" || bad "a linked file changed"
grep -q revenue "$tmp/foreign/summary.csv" && ok "someone's summary.csv is intact" || bad "someone's summary.csv was replaced"

# 6. The data set's own folder as the output folder: the run writes beside the data, replaces
#    nothing, and a rerun resumes there.
mkdir -p "$tmp/datadir" && cp "$DATA/iris.csv" "$tmp/datadir/iris.csv"
job "$tmp/datadir.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $tmp/datadir/iris.csv}" -- '  - {name: lda, dim: "1:2"}'
if timeout 120 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/datadir.yaml" --output "$tmp/datadir" -q >/dev/null 2>"$tmp/err" &&
   timeout 120 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/datadir.yaml" --output "$tmp/datadir" -q >/dev/null 2>>"$tmp/err" &&
   [ "$(md5sum <"$tmp/datadir/iris.csv")" = "$sum" ] && [ "$(count "$tmp/datadir")" = "4 4 4" ]; then
  ok "the data set's folder as --output: the data intact, the rerun resumes"
else
  bad "the data set's folder as --output: $(head -c 300 "$tmp/err")"
fi

# 7. gnuplot missing: the run completes, says so once, and leaves the plots' data and scripts.
mkdir -p "$tmp/bin"
for tool in "$MPIEXEC" ssh rsh; do
  p=$(command -v "$tool" 2>/dev/null) && ln -sf "$p" "$tmp/bin/$(basename "$tool")"
done
job "$tmp/plots.yaml" "labeled_per_class: 3" "datasets:" "  - {name: iris, path: $DATA/iris.csv}" -- \
  '  - {name: lda, dim: "1:2"}' "  - {name: soda, sigma_s: [0.001, 0.1]}"
if timeout 120 env PATH="$tmp/bin" "$tmp/bin/$(basename "$MPIEXEC")" -n 2 "$SSDR" experiment "$tmp/plots.yaml" --output "$tmp/nognuplot" \
     >"$tmp/nognuplot.out" 2>&1 &&
   [ "$(grep -c "gnuplot not found" "$tmp/nognuplot.out")" -eq 1 ] && [ "$(ls "$tmp/nognuplot/plots/"*.gp | wc -l)" -eq 2 ] &&
   [ -s "$tmp/nognuplot/summary.csv" ]; then
  ok "without gnuplot: the summary, plot data and scripts, one line saying so"
else
  bad "without gnuplot: $(tail -3 "$tmp/nognuplot.out")"
fi

finish
