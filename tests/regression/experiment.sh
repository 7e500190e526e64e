#!/usr/bin/env bash
# `ssdr experiment`: the smoke job end to end with 2 groups, and checkpoint/restart: a run
# killed midway and resumed ends with exactly the results of an uninterrupted run, and the
# resumed run skips what the killed one finished.
# Usage: experiment.sh SSDR_BINARY DATA_DIR   (MPIEXEC from the environment)
set -u
SSDR="$1"
JOBS="$(cd "$2/../../jobs/experiments" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# 1. Smoke job, 2 groups: tables and plots.
if timeout 300 "$MPIEXEC" -n 2 "$SSDR" experiment "$JOBS/smoke.yaml" --groups 2 --output "$tmp/smoke" -q >"$tmp/smoke.out" 2>&1 &&
   [ -s "$tmp/smoke/summary.csv" ] && [ -s "$tmp/smoke/summary.md" ] && [ -s "$tmp/smoke/results.json" ] &&
   [ "$(tail -n +2 "$tmp/smoke/summary.csv" | wc -l)" -eq 12 ] &&
   "$PY" - "$tmp/smoke/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
keys = [x["key"] for x in r["results"]]
# 2 data sets x 2 labeled counts x 3 splits x (soda 2 dims x 2 sigmas + lda 2 dims + oda 1)
assert len(keys) == len(set(keys)) == 2 * 2 * 3 * (4 + 2 + 1), len(keys)
assert {x["group"] for x in r["results"]} == {0, 1}
assert all(0 <= x["accuracy"]["unlabeled"] <= 1 for x in r["results"])
PY
then
  if ls "$tmp/smoke/plots/"*.png >/dev/null 2>&1 || ! command -v gnuplot >/dev/null; then ok "smoke job with 2 groups"; else bad "smoke job: no plots"; fi
else
  bad "smoke job with 2 groups"; cat "$tmp/smoke.out"
fi

# 1b. The plots' data and scripts say what the results say: every accuracy curve has its std
#     over the splits as error bars (.dat columns = results.json's mean and sample std), oda
#     (one m) is a horizontal reference line with its value in the key instead of missing, and
#     every title names the parameters held fixed.
if "$PY" - "$tmp/smoke" <<'PY'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
res = [r for r in json.load(open(f"{out}/results.json"))["results"] if "error" not in r]
cols = "unlabeled_mean unlabeled_std unseen_mean unseen_std splits"

def stats(rows):
    u = [r["accuracy"]["unlabeled"] for r in rows]
    t = [r["accuracy"]["unseen"] for r in rows]
    return statistics.mean(u), statistics.stdev(u), statistics.mean(t), statistics.stdev(t), len(u)

def check_row(fields, rows, where):
    assert len(fields) == 6, (where, fields)
    want = stats(rows)
    got = [float(x) for x in fields[1:5]] + [int(fields[5])]
    assert want[4] == got[4] == 3, (where, want, got)
    for w, g in zip(want[:4], got[:4]):
        assert abs(w - g) < 2e-6, (where, want, got)

def blocks(path):
    """.dat blocks: (comment, rows) in index order."""
    text = open(path).read()
    header, _, body = text.partition("\n\n")
    return header, [(b.split("\n")[0], [l.split() for l in b.split("\n")[1:] if l.strip()])
                    for b in re.split(r"\n\n\n", body.strip("\n"))]

dim_plots = sorted(glob.glob(f"{out}/plots/*_accuracy_vs_dim.gp"))
assert len(dim_plots) == 4, dim_plots  # iris, wine x p = 2, 3
for gp_path in dim_plots:
    stem = os.path.basename(gp_path)[:-3]
    ds, p = re.match(r"(\w+)_p(\d)_accuracy_vs_dim", stem).groups()
    sel = [r for r in res if r["dataset"] == ds and r["labeled_per_class"] == int(p)]
    header, blk = blocks(f"{out}/plots/{stem}.dat")
    assert f"# columns: m {cols}" in header, header
    names = [c for c, _ in blk]
    assert names[0] == "# curve lda" and names[1] == "# reference oda (m=2)", names
    assert re.fullmatch(r"# curve soda: sigma_s=\S+ \(best of 2\)", names[2]), names
    sigma = float(re.search(r"sigma_s=(\S+)", names[2]).group(1))
    for d, row in zip((1, 2), blk[0][1]):
        check_row(row, [r for r in sel if r["method"] == "lda" and r["dim_used"] == d], f"{stem} lda m={d}")
    oda = [r for r in sel if r["method"] == "oda"]
    check_row(blk[1][1][0], oda, f"{stem} oda")
    soda = [r for r in sel if r["method"] == "soda"]
    for d, row in zip((1, 2), blk[2][1]):
        check_row(row, [r for r in soda if r["dim_used"] == d and r["params"]["sigma_s"] == sigma], f"{stem} soda m={d}")
    # The summary's choice: no (sigma_s, m) of soda has a higher mean unlabeled accuracy.
    best = max(stats([r for r in soda if r["params"]["sigma_s"] == s and r["dim_used"] == d])[0]
               for s in {r["params"]["sigma_s"] for r in soda} for d in (1, 2))
    assert abs(max(float(row[1]) for row in blk[2][1]) - best) < 2e-6, (stem, best)
    gp = open(gp_path).read()
    png_part, svg_part = gp.split("set terminal svg")
    for part in (png_part, svg_part):
        assert f"'{stem}.dat' index 0 using 1:2:3 with yerrorlines" in part and \
               f"'{stem}.dat' index 0 using 1:4:5 with yerrorlines" in part and \
               f"'{stem}.dat' index 2 using 1:2:3 with yerrorlines" in part, part
        m, s = stats(oda)[0:2]
        line = f"{m:.6f} with lines lc 2 dt 4 lw 2 title 'oda (m=2) unlabeled {m:.3f} ± {s:.3f}'"
        assert line in part, (line, part)
        m, s = stats(oda)[2:4]
        assert f"{m:.6f} with lines lc 2 dt 3 lw 2 title 'oda (m=2) unseen {m:.3f} ± {s:.3f}'" in part, part
        assert f"'{stem}.dat' index 1 using 1:2:3 with yerrorbars" in part, part
        title = re.search(r"^set title (.*)$", part, re.M).group(1)
        assert f"{ds}, {p} labeled/class, transductive fraction 0.8, scaling=standardize" in title, title
        assert "mean ± std over 3 splits" in title and "held fixed: soda: sigma_s=" in title and \
               "lda, oda at their defaults" in title and "best values by mean unlabeled accuracy" in title, title
    assert "with linespoints" not in gp, gp

par_plots = sorted(glob.glob(f"{out}/plots/*_soda_accuracy_vs_sigma_s.gp"))
assert len(par_plots) == 4, par_plots
for gp_path in par_plots:
    stem = os.path.basename(gp_path)[:-3]
    ds, p = re.match(r"(\w+)_p(\d)_soda", stem).groups()
    lines = open(f"{out}/plots/{stem}.dat").read().splitlines()
    assert lines[1] == f"# columns: sigma_s {cols}", lines
    m = int(re.search(r"held fixed: m=(\d+) \(best of 2\)", lines[0]).group(1))
    rows = [l.split() for l in lines[2:]]
    assert len(rows) == 2, rows
    for row in rows:
        check_row(row, [r for r in res if r["dataset"] == ds and r["labeled_per_class"] == int(p) and
                        r["method"] == "soda" and r["dim_used"] == m and
                        abs(r["params"]["sigma_s"] - float(row[0])) < 1e-12], stem)
    gp = open(gp_path).read()
    assert gp.count(f"'{stem}.dat' using 1:2:3 with yerrorlines") == 2, gp
    assert gp.count(f"'{stem}.dat' using 1:4:5 with yerrorlines") == 2, gp
    assert gp.count("set logscale x") == 2 and f"held fixed: m={m} (best of 2)" in gp, gp
PY
then
  if ! command -v gnuplot >/dev/null ||
     [ "$(ls "$tmp"/smoke/plots/*.png | wc -l)" -eq "$(ls "$tmp"/smoke/plots/*.gp | wc -l)" ]; then
    ok "plots: error bars from the std over splits, oda as a reference line, fixed parameters in the titles"
  else
    bad "plots: a .gp without its PNG (gnuplot failed?)"
  fi
else
  bad "plots: error bars, reference lines and titles"
fi

# 2. Uninterrupted reference run of the kill-test job.
timeout 600 "$MPIEXEC" -n 2 "$SSDR" experiment "$JOBS/kill_test.yaml" --output "$tmp/ref" -q >/dev/null 2>&1 || bad "reference run"
total=$("$PY" -c "import json; print(len(json.load(open('$tmp/ref/results.json'))['results']))" 2>/dev/null || echo 0)

# 3. Killed run: SIGKILL the whole job once some configurations are done (a kill -9 of mpiexec
#    and its ranks, as a batch system's time limit would).
setsid "$MPIEXEC" -n 2 "$SSDR" experiment "$JOBS/kill_test.yaml" --output "$tmp/killed" -q >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  lines=$(cat "$tmp"/killed/results*.jsonl 2>/dev/null | wc -l)
  [ "$lines" -ge 10 ] && break
  sleep 0.1
done
# mpiexec and its ranks share the session that setsid created (the ranks get their own
# process groups), so kill the whole session.
pkill -9 -s "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
for _ in $(seq 1 100); do pgrep -s "$pid" >/dev/null || break; sleep 0.1; done
done_before=$(cat "$tmp"/killed/results*.jsonl 2>/dev/null | wc -l)
if [ "$done_before" -ge 10 ] && [ "$done_before" -lt "$total" ] && [ ! -e "$tmp/killed/results.json" ]; then
  ok "killed midway after $done_before of $total configurations"
else
  bad "kill midway (done $done_before of $total)"
fi

# 4. Resume: finishes, skips what was done, and matches the reference exactly.
if timeout 600 "$MPIEXEC" -n 2 "$SSDR" experiment "$JOBS/kill_test.yaml" --output "$tmp/killed" >"$tmp/resume.out" 2>&1 &&
   grep -q "already done" "$tmp/resume.out" &&
   "$PY" - "$tmp/ref/results.json" "$tmp/killed/results.json" "$done_before" <<'PY'
import json, sys
ref = {x["key"]: x for x in json.load(open(sys.argv[1]))["results"]}
res = json.load(open(sys.argv[2]))["results"]
keys = [x["key"] for x in res]
assert len(keys) == len(set(keys)) == len(ref), (len(keys), len(set(keys)), len(ref))
for x in res:
    assert x["accuracy"] == ref[x["key"]]["accuracy"], x["key"]
PY
then
  ok "resumed run completes with the uninterrupted run's results ($(grep -o '[0-9]* already done' "$tmp/resume.out"))"
else
  bad "resume after kill"; tail -5 "$tmp/resume.out"
fi

# 5. The smoke version of every paper-table job (jobs/experiments/*_smoke.yaml).
for job in "$JOBS"/*_smoke.yaml; do
  name=$(basename "$job" .yaml)
  if timeout 600 "$MPIEXEC" -n 2 "$SSDR" experiment "$job" --output "$tmp/$name" -q >"$tmp/$name.out" 2>&1 &&
     [ "$(tail -n +2 "$tmp/$name/summary.csv" | wc -l)" -ge 1 ]; then
    ok "$name ($(tail -n +2 "$tmp/$name/summary.csv" | wc -l) table rows)"
  else
    bad "$name"; tail -5 "$tmp/$name.out"
  fi
done

# 6. The job key normalize: both swept values reach the results and change LDA's accuracy on
#    the SSGDA Table III protocol; a bad value is one line naming the key.
cat >"$tmp/norm.yaml" <<EOF
name: norm
protocol: labeled-unlabeled-per-class
unlabeled_per_class: 20
labeled_per_class: 3
splits: 3
datasets:
  - {name: iris, path: $2/iris.csv}
methods:
  - name: lda
    normalize: [unit, metric]
EOF
if timeout 300 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/norm.yaml" --output "$tmp/norm" -q >"$tmp/norm.out" 2>&1 &&
   "$PY" - "$tmp/norm/results.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
acc = {}
for x in res:
    acc.setdefault(x["params"]["normalize"], []).append(x["accuracy"]["unlabeled"])
assert sorted(acc) == ["metric", "unit"] and all(len(v) == 3 for v in acc.values()), acc
assert acc["unit"] != acc["metric"], acc
PY
then ok "job key normalize"; else bad "job key normalize"; tail -5 "$tmp/norm.out"; fi
sed 's/normalize: \[unit, metric\]/normalize: bogus/' "$tmp/norm.yaml" >"$tmp/norm_bad.yaml"
timeout 300 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/norm_bad.yaml" --output "$tmp/norm_bad" -q >/dev/null 2>"$tmp/norm_bad.err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$(grep -c . "$tmp/norm_bad.err")" -eq 1 ] && grep -q "line 10: parameter normalize: expected one of unit, metric, got 'bogus'" "$tmp/norm_bad.err"; then
  ok "job key normalize: bad value ($(cat "$tmp/norm_bad.err"))"
else
  bad "job key normalize: bad value (exit $rc)"; cat "$tmp/norm_bad.err"
fi

# 7. The protocols inside the smoke jobs: CV per split recorded (ssgda), m beyond c − 1 and
#    μ ∈ {0.1, 1}·μ₀ swept (soda).
if "$PY" - "$tmp/ssgda_smoke/results.json" "$tmp/soda_smoke/results.json" <<'PY'
import json, sys
ss = json.load(open(sys.argv[1]))["results"]
sel = [x for x in ss if x["params"].get("cv_grid")]
assert len(sel) == 4, len(sel)  # 2 methods with cv_grid x 2 splits
for x in sel:
    s = x["selection"]
    assert s["folds"] == 5 and len(s["candidates"]) == 2 and s["chosen"] in [c["params"] for c in s["candidates"]], s
assert all("fallback_to_gda" in x for x in ss if x["method"] == "ssgda")
so = json.load(open(sys.argv[2]))["results"]
soda = [x for x in so if x["method"] == "soda"]
assert {x["dim_used"] for x in soda} == {9, 30} and {x["params"]["mu_scale"] for x in soda} == {0.1, 1}
assert {x["dim_used"] for x in so if x["method"] == "ksoda"} == {9, 30}
PY
then ok "smoke jobs run the papers' protocols (CV per split, m and mu sweeps)"
else bad "smoke jobs run the papers' protocols (CV per split, m and mu sweeps)"; fi

# SIGUSR1 (what the batch scripts pass on before the time limit): the configuration in flight
# finishes, the summary covers what is done, exit 138 within seconds; a rerun completes the job
# with the uninterrupted run's results.
setsid "$MPIEXEC" -n 2 "$SSDR" experiment "$JOBS/kill_test.yaml" --output "$tmp/usr1" -q >/dev/null 2>"$tmp/usr1.err" &
pid=$!
for _ in $(seq 1 600); do
  lines=$(cat "$tmp"/usr1/results*.jsonl 2>/dev/null | wc -l)
  [ "$lines" -ge 10 ] && break
  sleep 0.1
done
kill -USR1 "$pid"
rc=0
timeout 60 tail --pid="$pid" -f /dev/null || rc=124
wait "$pid"
rc_job=$?
stopped=$(cat "$tmp"/usr1/results*.jsonl 2>/dev/null | wc -l)
if [ "$rc" -eq 0 ] && [ "$rc_job" -eq 138 ] && grep -q "stopped by SIGUSR1" "$tmp/usr1.err" && [ -s "$tmp/usr1/summary.csv" ] &&
   [ "$stopped" -lt "$total" ] &&
   timeout 600 "$MPIEXEC" -n 2 "$SSDR" experiment "$JOBS/kill_test.yaml" --output "$tmp/usr1" -q >/dev/null 2>&1 &&
   "$PY" - "$tmp/ref/results.json" "$tmp/usr1/results.json" <<'PY'
import json, sys
ref, got = (json.load(open(p))["results"] for p in sys.argv[1:3])
a = {r["key"]: r["accuracy"] for r in ref}
b = {r["key"]: r["accuracy"] for r in got}
assert a == b, (len(a), len(b))
PY
then ok "SIGUSR1 stops after the configuration in flight with a summary (exit 138, $stopped of $total done); a rerun completes it"
else bad "SIGUSR1 stop: rc=$rc job=$rc_job stopped=$stopped total=$total"; cat "$tmp/usr1.err"; fi

# Binary data sets in a job: the same iris as CSV, HDF5 and NPY (+ labels) give the same
# accuracies split for split.
"$MPIEXEC" -n 2 "$SSDR" convert --data "$2/iris.csv" --output "$tmp/iris.h5" -q &&
  "$MPIEXEC" -n 2 "$SSDR" convert --data "$2/iris.csv" --output "$tmp/iris.npy" --labels-output "$tmp/iris_y.npy" -q ||
  bad "convert iris"
cat >"$tmp/formats.yaml" <<EOF
name: formats
transductive_fraction: 0.5
labeled_per_class: 3
splits: 2
datasets:
  - {name: csv, path: $2/iris.csv}
  - {name: h5, path: $tmp/iris.h5, format: hdf5, hdf5_data: /X, hdf5_labels: /y}
  - {name: npy, path: $tmp/iris.npy, labels: $tmp/iris_y.npy}
methods: [lda]
EOF
if timeout 300 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/formats.yaml" --output "$tmp/formats" -q >"$tmp/formats.out" 2>&1 &&
   "$PY" - "$tmp/formats/results.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
acc = {}
for x in res:
    acc.setdefault(x["dataset"], []).append((x["split"], x["accuracy"]["unlabeled"], x["accuracy"]["unseen"]))
assert sorted(acc) == ["csv", "h5", "npy"], acc
assert sorted(acc["csv"]) == sorted(acc["h5"]) == sorted(acc["npy"]), acc
PY
then ok "job data sets in HDF5 and NPY give the CSV results"; else bad "job data sets in HDF5 and NPY give the CSV results"; tail -5 "$tmp/formats.out"; fi

finish
