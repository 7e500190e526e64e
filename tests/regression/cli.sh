#!/usr/bin/env bash
# Command-line contract: outputs of fit/transform/evaluate and the bad-input cases (one line on
# stderr naming the file/line/option, non-zero exit on every rank, no hang, no partial file).
# Usage: cli.sh SSDR_BINARY DATA_DIR   (MPIEXEC from the environment)
set -u
SSDR="$1"
DATA="$2"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
run() { timeout 120 "$MPIEXEC" -n "${NP:-2}" "$SSDR" "$@"; }

# expect_error NAME PATTERN ARGS...: exit non-zero, exactly one stderr line matching PATTERN,
# no report file left behind.
expect_error() {
  local name="$1" pattern="$2"
  shift 2
  rm -f "$tmp"/out.json*
  local extra=()
  case "$1" in fit | evaluate) extra=(--report "$tmp/out.json") ;; esac
  run "$@" "${extra[@]}" -q >"$tmp/stdout" 2>"$tmp/stderr"
  local rc=$?
  local lines
  lines=$(grep -c . "$tmp/stderr")
  if [ "$rc" -eq 0 ]; then bad "$name: exit code 0"; return; fi
  if [ "$rc" -eq 124 ]; then bad "$name: hung (timeout)"; return; fi
  if [ "$lines" -ne 1 ]; then bad "$name: $lines stderr lines"; cat "$tmp/stderr"; return; fi
  if ! grep -q -- "$pattern" "$tmp/stderr"; then bad "$name: stderr '$(cat "$tmp/stderr")' lacks '$pattern'"; return; fi
  if ls "$tmp"/out.json* >/dev/null 2>&1; then bad "$name: left an output file"; return; fi
  ok "$name ($(cat "$tmp/stderr"))"
}

iris="$DATA/iris.csv"
fit=(fit --method soda --labeled-per-class 3 --seed 1)

printf '0,1,2,3,4\n1,1,2,3\n' >"$tmp/ragged.csv"
printf '0,1,2,3,4\n1,1,nan,3,4\n' >"$tmp/nan.csv"
printf '0,1,2,3,4\nN/A,1,2,3,4\n1,1,2,3,4\n' >"$tmp/label.csv"
awk -F, '{ print ($1 == 2 ? "unlabeled" : (NR % 10 == 1 ? "labeled" : "unlabeled")) }' "$iris" >"$tmp/nolabel.split"

expect_error "missing data file" "$tmp/none.csv" "${fit[@]}" --data "$tmp/none.csv"
expect_error "ragged CSV row" "ragged.csv:2" "${fit[@]}" --data "$tmp/ragged.csv"
expect_error "NaN value" "nan.csv:2" "${fit[@]}" --data "$tmp/nan.csv"
expect_error "a name among integer labels" "label.csv:2: label 'N/A' is a name among 2 integer labels" "${fit[@]}" --data "$tmp/label.csv"
expect_error "class without a labeled sample" "class 2 has no labeled sample" fit --method soda --data "$iris" --split "$tmp/nolabel.split"
expect_error "k not smaller than n" "--knn" "${fit[@]}" --data "$iris" --knn 150 --transductive-fraction 1
expect_error "unknown method" "unknown method 'sod'" fit --method sod --labeled-per-class 3 --data "$iris"
expect_error "unknown option" "unrecognised option '--bogus'" "${fit[@]}" --data "$iris" --bogus 1
expect_error "unwritable output" "--embedding" "${fit[@]}" --data "$iris" --embedding /nonexistent/dir/e.csv
expect_error "split file too short" "nolabel.split" fit --method soda --data "$DATA/wine.csv" --split "$tmp/nolabel.split"
expect_error "unknown normalization" "--normalize: expected one of unit, metric, got 'bogus'" "${fit[@]}" --data "$iris" --normalize bogus
expect_error "eigenvalue scaling with unit columns" "--eigenvalue-scaling: expected --normalize metric" \
  fit --method sl-lda --labeled-per-class 3 --data "$iris" --eigenvalue-scaling --normalize unit

# --normalize: the default (unit) and metric reach the report (parameters and info); the
# metric model's transform reproduces its embedding (W is what transform uses).
for norm in default metric; do
  args=()
  [ "$norm" = metric ] && args=(--normalize metric)
  if run fit --method lda --data "$iris" --labeled-per-class 3 --transductive-fraction 0.8 --seed 2 -q "${args[@]}" \
      --report "$tmp/n_$norm.json" --model "$tmp/n_$norm.model" --embedding "$tmp/n_$norm.csv" >/dev/null 2>"$tmp/stderr" &&
     run transform --model "$tmp/n_$norm.model" --data "$iris" --embedding "$tmp/n_t_$norm.csv" -q 2>>"$tmp/stderr" &&
     cmp -s "$tmp/n_$norm.csv" "$tmp/n_t_$norm.csv" &&
     "$PY" - "$tmp/n_$norm.json" "$norm" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["parameters"]["normalize"] == sys.argv[2], r["parameters"]["normalize"]
assert r["info"]["normalization"] == ("unit" if sys.argv[2] == "default" else "metric"), r["info"]["normalization"]
PY
  then ok "--normalize $norm recorded and transform reproduces the embedding"
  else bad "--normalize $norm recorded and transform reproduces the embedding"; cat "$tmp/stderr"; fi
done
if ! cmp -s "$tmp/n_default.csv" "$tmp/n_metric.csv"; then ok "--normalize metric changes the lda embedding"
else bad "--normalize metric changes the lda embedding"; fi

# fit writes report, model and embedding; transform of the same samples reproduces the embedding.
if run fit --method soda --data "$iris" --labeled-per-class 3 --transductive-fraction 0.8 --seed 2 -q \
    --report "$tmp/r.json" --model "$tmp/m.model" --embedding "$tmp/e.csv" >"$tmp/stdout" 2>"$tmp/stderr" &&
   run transform --model "$tmp/m.model" --data "$iris" --embedding "$tmp/t.csv" -q 2>>"$tmp/stderr" &&
   cmp -s "$tmp/e.csv" "$tmp/t.csv" && [ "$(wc -l <"$tmp/e.csv")" -eq 151 ] &&
   [ "$(head -1 "$tmp/e.csv")" = "id,label,y1,y2" ] && [ "$(sed -n 2p "$tmp/e.csv" | cut -d, -f1,2)" = "0,0" ]; then
  ok "transform reproduces the fit embedding"
else
  bad "transform reproduces the fit embedding"; cat "$tmp/stderr"
fi
# The exact kernel map's model is distributed: fitted and saved by 3 ranks (each writes its
# rows), it transforms on 1 and 2 ranks to the fit's embedding byte for byte, and predicts.
bc="$DATA/breast_cancer.csv"
if NP=3 run fit --method ksoda --landmarks 0 --data "$bc" --labeled-per-class 5 --transductive-fraction 0.8 --seed 3 -q \
     --model "$tmp/k3.model" --embedding "$tmp/k3.csv" >/dev/null 2>"$tmp/stderr" &&
   NP=1 run transform --model "$tmp/k3.model" --data "$bc" --embedding "$tmp/k1t.csv" -q 2>>"$tmp/stderr" &&
   NP=2 run transform --model "$tmp/k3.model" --data "$bc" --embedding "$tmp/k2t.csv" -q 2>>"$tmp/stderr" &&
   NP=2 run predict --model "$tmp/k3.model" --data "$bc" --output "$tmp/k2p.txt" -q >/dev/null 2>>"$tmp/stderr" &&
   cmp -s "$tmp/k3.csv" "$tmp/k1t.csv" && cmp -s "$tmp/k3.csv" "$tmp/k2t.csv" &&
   [ "$(wc -l <"$tmp/k3.csv")" -eq 570 ] && [ "$(wc -l <"$tmp/k2p.txt")" -eq 569 ]; then
  ok "an exact-kernel model saved on 3 ranks transforms on 1 and 2 ranks to the fit's embedding"
else
  bad "an exact-kernel model saved on 3 ranks transforms on 1 and 2 ranks to the fit's embedding"; cat "$tmp/stderr"
fi
# The same for sparse data: fit reduces the LIBSVM rows by the truncated SVD; transform and
# predict read them sparse too (no dense n x d matrix) and map each row as the fit did.
if run fit --method soda --data "$DATA/iris.libsvm" --sparse yes --pca-dim 3 --labeled-per-class 3 \
    --transductive-fraction 0.8 --seed 2 -q --report "$tmp/rs.json" --model "$tmp/s.model" --embedding "$tmp/es.csv" \
    >"$tmp/stdout" 2>"$tmp/stderr" &&
   run transform --model "$tmp/s.model" --data "$DATA/iris.libsvm" --sparse yes --embedding "$tmp/ts.csv" -q 2>>"$tmp/stderr" &&
   cmp -s "$tmp/es.csv" "$tmp/ts.csv" && [ "$(wc -l <"$tmp/ts.csv")" -eq 151 ] &&
   grep -q '"route": *"sparse-svd"' "$tmp/rs.json" &&
   run predict --model "$tmp/s.model" --data "$DATA/iris.libsvm" --sparse yes --output "$tmp/ps.txt" -q >/dev/null 2>>"$tmp/stderr" &&
   [ "$(wc -l <"$tmp/ps.txt")" -eq 150 ]; then
  ok "transform of sparse LIBSVM data reproduces the sparse fit's embedding; predict reads it sparse"
else
  bad "transform of sparse LIBSVM data reproduces the sparse fit's embedding; predict reads it sparse"; cat "$tmp/stderr"
fi
if "$PY" - "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k in ["method", "ranks", "n", "d", "classes", "dim", "accuracy", "trace_ratio", "timings_s", "ssdr_version", "parameters"]:
    assert k in r, k
assert r["n"] == 150 and r["d"] == 4 and r["classes"] == 3 and r["dim"] == 2 and r["ranks"] == 2
assert 0.8 < r["accuracy"]["unlabeled"] <= 1 and 0.8 < r["accuracy"]["unseen"] <= 1
for k in ["read", "preprocess", "knn_graph", "propagation", "scatter", "eigensolve", "evaluate", "total"]:
    assert r["timings_s"][k] >= 0, k
# The parameters soda uses (from the parameter table), none it does not use.
p = r["parameters"]
assert p["alpha_u"] == 0.99 and p["mu_scale"] == 0.1 and p["knn"] == "default" and p["seed"] == 2, p
assert "beta" not in p and "lambda" not in p and "recursions" not in p, p
PY
then ok "report has the contract's fields"; else bad "report has the contract's fields"; fi
# Every parameter of the table is an option of fit --help (the table generates them).
run fit --help >"$tmp/help" 2>"$tmp/help.err"
missing=""
[ -s "$tmp/help.err" ] && missing=" (help went to stderr)"
for o in --knn --weight --sigma-s --knn-method --knn-recall-sample --alpha-u --mu-scale --alpha --lambda --beta \
         --gamma --mu --recursions --eigenvalue-scaling --normalize --scaling --pca-energy --no-pca --kernel \
         --degree --sigma2 --sigma-scale --landmarks --landmark-seeding; do
  grep -q -- "^  $o " "$tmp/help" || missing="$missing $o"
done
if [ -z "$missing" ]; then ok "fit --help lists every parameter"; else bad "fit --help lacks:$missing"; fi

# predict: 1-NN in the embedding against the labeled samples the model keeps. With a split
# file, the labels it writes for the unlabeled and unseen samples give the fit's reported
# accuracies exactly (the same 1-NN on the same embedding), and its printed accuracy counts
# the file; the same bytes on 1 and 2 ranks; CSV without labels (--no-labels) and NPY output.
awk '{ r = NR % 10; print (r == 1 ? "labeled" : (r >= 2 && r <= 5 ? "unlabeled" : "unseen")) }' "$iris" >"$tmp/pred.split"
if run fit --method soda --data "$iris" --split "$tmp/pred.split" -q --report "$tmp/pr.json" --model "$tmp/p.model" \
     >/dev/null 2>"$tmp/stderr" &&
   run predict --model "$tmp/p.model" --data "$iris" --output "$tmp/p2.txt" -q >"$tmp/p2.out" 2>>"$tmp/stderr" &&
   NP=1 run predict --model "$tmp/p.model" --data "$iris" --output "$tmp/p1.txt" -q >"$tmp/p1.out" 2>>"$tmp/stderr" &&
   cmp -s "$tmp/p1.txt" "$tmp/p2.txt" && cmp -s "$tmp/p1.out" "$tmp/p2.out" && [ "$(wc -l <"$tmp/p2.txt")" -eq 150 ] &&
   counts=$(paste -d, "$tmp/pred.split" "$iris" "$tmp/p2.txt" | awk -F, '
       { n[$1]++; if ($2 == $NF) c[$1]++; all += ($2 == $NF) }
       END { printf "%d %d %d %d %d", c["unlabeled"], n["unlabeled"], c["unseen"], n["unseen"], all }') &&
   "$PY" - "$tmp/pr.json" "$counts" "$(cat "$tmp/p2.out")" "$iris" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cu, nu, cs, ns, total = map(int, sys.argv[2].split())
assert (nu, ns) == (60, 75), (nu, ns)
assert cu / nu == r["accuracy"]["unlabeled"], (cu, nu, r["accuracy"])
assert cs / ns == r["accuracy"]["unseen"], (cs, ns, r["accuracy"])
expected = ("predict: 150 samples; accuracy %.4f on the 150 rows labeled in %s (%d correct; rows the model may "
            "have been trained on)" % (total / 150, sys.argv[4], total))
assert sys.argv[3] == expected, sys.argv[3]
PY
then ok "predict gives the fit's 1-NN accuracies on the unlabeled and unseen samples, the same bytes on 1 and 2 ranks"
else bad "predict gives the fit's 1-NN accuracies, the same on 1 and 2 ranks"; cat "$tmp/stderr" "$tmp/p2.out"; fi
cut -d, -f2- "$iris" >"$tmp/values.csv"
if run predict --model "$tmp/p.model" --data "$tmp/values.csv" --no-labels --output "$tmp/pv.txt" -q >"$tmp/pv.out" 2>"$tmp/stderr" &&
   cmp -s "$tmp/pv.txt" "$tmp/p2.txt" && [ ! -s "$tmp/pv.out" ] &&
   run transform --model "$tmp/p.model" --data "$tmp/values.csv" --no-labels --embedding "$tmp/tv.csv" -q 2>>"$tmp/stderr" &&
   run transform --model "$tmp/p.model" --data "$iris" --embedding "$tmp/ti.csv" -q 2>>"$tmp/stderr" &&
   cut -d, -f1,3- "$tmp/ti.csv" | cmp -s "$tmp/tv.csv" - &&
   run predict --model "$tmp/p.model" --data "$tmp/values.csv" --no-labels --output "$tmp/pv.npy" -q >/dev/null 2>>"$tmp/stderr" &&
   "$PY" - "$tmp/pv.npy" "$tmp/p2.txt" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
hl = struct.unpack("<H", b[8:10])[0]
assert b[:6] == b"\x93NUMPY" and "'<i8'" in b[10:10 + hl].decode() and "(150,)" in b[10:10 + hl].decode()
assert list(struct.unpack("<150q", b[10 + hl:])) == [int(l) for l in open(sys.argv[2])]
PY
then ok "predict and transform take CSV without labels (--no-labels); predict writes NPY labels"
else bad "predict and transform take CSV without labels (--no-labels); predict writes NPY labels"; cat "$tmp/stderr"; fi
expect_error "CSV of values without --no-labels" "--no-labels reads data without one" \
  predict --model "$tmp/p.model" --data "$tmp/values.csv" --output "$tmp/px.txt"
expect_error "--no-labels with LIBSVM data" "--no-labels: only for CSV data" \
  predict --model "$tmp/p.model" --data "$DATA/iris.libsvm" --no-labels --output "$tmp/px.txt"
# A version-4 model (tests/data/iris_lda_v4.model, written before models kept their labeled
# samples) still transforms, and predict refuses it in one line saying to refit.
expect_error "predict with a version-4 model" "model format version 4 predates ssdr predict (it keeps no labeled samples); refit it" \
  predict --model "$DATA/iris_lda_v4.model" --data "$iris" --output "$tmp/px.txt"
[ ! -e "$tmp/px.txt" ] && ok "... and writes no labels file" || bad "a refused predict left $tmp/px.txt"
if run transform --model "$DATA/iris_lda_v4.model" --data "$iris" --embedding "$tmp/v4.csv" -q 2>"$tmp/stderr" &&
   [ "$(wc -l <"$tmp/v4.csv")" -eq 151 ]; then ok "a version-4 model still transforms"
else bad "a version-4 model still transforms"; cat "$tmp/stderr"; fi

# PETSc options stand anywhere, each with its value (a negative number too); ssdr's own
# options have two dashes. An option nothing read is named in one warning line on rank 0.
if run -eig_eps_type lapack fit --method lda -eig_eps_tol 1e-10 --data "$iris" --labeled-per-class 3 -lp_ksp_typo -5 \
     -q --report "$tmp/po.json" >/dev/null 2>"$tmp/stderr" &&
   [ "$(wc -l <"$tmp/stderr")" -eq 1 ] &&
   grep -qx "ssdr: warning: PETSc option -lp_ksp_typo -5 was not used by this run (misspelled?)" "$tmp/stderr" &&
   "$PY" - "$tmp/po.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["provenance"]["petsc_options"]
assert "-eig_eps_type lapack" in p and "-eig_eps_tol 1e-10" in p and "-lp_ksp_typo -5" in p, p
PY
then ok "PETSc options before the command and among ssdr's, with values; one warning for the unused one"
else bad "PETSc options anywhere"; cat "$tmp/stderr"; fi
if run fit --method lda --data "$iris" --labeled-per-class 3 -q -log_view ":$tmp/log.txt" -options_left 0 -malloc_dump \
     -memory_view >/dev/null 2>"$tmp/stderr" && [ ! -s "$tmp/stderr" ] && [ -s "$tmp/log.txt" ]; then
  ok "no warning for the options PETSc reads at exit (-log_view, -options_left, -malloc_dump, -memory_view)"
else bad "a warning for an option PETSc reads at exit: $(head -c 300 "$tmp/stderr")"; fi

# --help: stdout and exit 0 for ssdr and every command; errors on stderr with a non-zero exit.
help_ok=""
for args in "--help" "-h" "help" "fit --help" "evaluate --help" "transform --help" "predict --help" "help predict" \
            "convert --help" "experiment --help" "methods --help"; do
  # shellcheck disable=SC2086
  if ! NP=1 run $args >"$tmp/h.out" 2>"$tmp/h.err" || [ ! -s "$tmp/h.out" ] || [ -s "$tmp/h.err" ]; then
    help_ok="$help_ok [$args]"
  fi
done
if [ -z "$help_ok" ]; then ok "--help of ssdr and every command on stdout, exit 0"; else bad "--help not on stdout with exit 0:$help_ok"; fi
if NP=1 run predict --help >"$tmp/h1" && NP=1 run help predict >"$tmp/h2" && NP=1 run transform --help >"$tmp/h3" &&
   grep -q -- "--no-labels" "$tmp/h1" && grep -q -- "--no-labels" "$tmp/h3" && cmp -s "$tmp/h1" "$tmp/h2"; then
  ok "predict/transform --help list --no-labels; 'ssdr help predict' is 'ssdr predict --help'"
else bad "predict/transform --help"; fi
if NP=1 run >"$tmp/h.out" 2>"$tmp/h.err"; then bad "no command: exit 0"
elif [ -s "$tmp/h.out" ] || ! grep -q "^usage: ssdr" "$tmp/h.err"; then bad "no command: the usage belongs on stderr"
else ok "no command: the usage on stderr, non-zero exit"; fi
expect_error "unknown command" "unknown command 'predic'" predic --model x

# Progress: one line per trace-ratio iteration with the ratio and its change (rate-limited;
# SSDR_PROGRESS_EVERY=0 shows every one), silenced by --quiet.
if SSDR_PROGRESS_EVERY=0 run fit --method soda --data "$iris" --labeled-per-class 3 --seed 1 >/dev/null 2>"$tmp/stderr" &&
   grep -q "trace ratio (d = 4, m = 2) iteration 1: ratio [0-9.e+-]*, change" "$tmp/stderr" &&
   SSDR_PROGRESS_EVERY=0 run fit --method soda --data "$iris" --labeled-per-class 3 --seed 1 -q >/dev/null 2>"$tmp/stderr" &&
   [ ! -s "$tmp/stderr" ]; then
  ok "trace-ratio iterations report their ratio and change; --quiet silences them"
else bad "trace-ratio progress"; cat "$tmp/stderr"; fi
SSDR_PROGRESS_EVERY=soon expect_error "SSDR_PROGRESS_EVERY not a number" "SSDR_PROGRESS_EVERY: expected a number of seconds >= 0, got 'soon'" \
  fit --method lda --data "$iris" --labeled-per-class 3

# A wrong or truncated model file is a clear error.
head -c 40 "$tmp/m.model" >"$tmp/trunc.model"
expect_error "truncated model" "trunc.model" transform --model "$tmp/trunc.model" --data "$iris" --embedding "$tmp/x.csv"
expect_error "not a model" "iris.csv" transform --model "$iris" --data "$iris" --embedding "$tmp/x.csv"

# evaluate: mean and std over splits, per-split values.
if run evaluate --method lda --data "$iris" --labeled-per-class 3 --transductive-fraction 0.8 --splits 3 -q \
    --report "$tmp/ev.json" >/dev/null 2>"$tmp/stderr" && "$PY" - "$tmp/ev.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
a = r["accuracy"]["unseen"]
assert len(a["values"]) == 3 and abs(a["mean"] - sum(a["values"]) / 3) < 1e-12 and a["std"] >= 0
PY
then ok "evaluate reports mean, std and per-split values"; else bad "evaluate reports mean, std and per-split values"; cat "$tmp/stderr"; fi

# The embedding as NPY: header and size.
if run fit --method oda --data "$iris" --labeled-per-class 3 -q --embedding "$tmp/e.npy" 2>"$tmp/stderr" >/dev/null &&
   "$PY" - "$tmp/e.npy" <<'PY'
import sys, struct
b = open(sys.argv[1], "rb").read()
assert b[:6] == b"\x93NUMPY"
hl = struct.unpack("<H", b[8:10])[0]
h = b[10:10 + hl].decode()
assert "'<f8'" in h and "(150, 2)" in h and (10 + hl) % 64 == 0
assert len(b) == 10 + hl + 150 * 2 * 8
PY
then ok "NPY embedding"; else bad "NPY embedding"; cat "$tmp/stderr"; fi

# Parameter selection by cross-validation on the labeled samples (--select-by cv).
iris_ssgda=(--data "$iris" --labeled-per-class 3 --unlabeled-per-class 20 --seed 4)
expect_error "bad --select-by" "--select-by: expected none or cv, got 'best'" fit --method m-ssgda "${iris_ssgda[@]}" --select-by best
expect_error "--grid without --select-by" "--grid needs --select-by cv" fit --method m-ssgda "${iris_ssgda[@]}" --grid lambda=1
expect_error "--grid unknown parameter" "--grid 'theta=1': unknown parameter 'theta'" fit --method m-ssgda "${iris_ssgda[@]}" --select-by cv --grid theta=1
expect_error "--grid without values" "--grid 'lambda': expected NAME=v1,v2" fit --method m-ssgda "${iris_ssgda[@]}" --select-by cv --grid lambda
expect_error "--grid bad value" "--grid: parameter lambda: expected a number" fit --method m-ssgda "${iris_ssgda[@]}" --select-by cv --grid lambda=big
expect_error "--cv-folds 1" "--cv-folds must be at least 2, got 1" fit --method m-ssgda "${iris_ssgda[@]}" --select-by cv --cv-folds 1
expect_error "nothing to select" "--select-by cv: nothing to select for method 'lda'" fit --method lda "${iris_ssgda[@]}" --select-by cv
expect_error "cv of a transductive method" "method 'lp' learns no projection" fit --method lp "${iris_ssgda[@]}" --select-by cv
expect_error "cv with one labeled per class" "at least 2 labeled samples per class (one is held out); class 0 has 1" fit --method m-ssgda --data "$iris" --labeled-per-class 1 --select-by cv
expect_error "negative --sigma-scale" "--sigma-scale: expected a number >= 0, got -1" fit --method gda "${iris_ssgda[@]}" --sigma-scale -1

if run fit --method m-ssgda "${iris_ssgda[@]}" --select-by cv --grid lambda=0.01,1 -q --report "$tmp/cv.json" \
    >/dev/null 2>"$tmp/stderr" && NP=1 run fit --method m-ssgda "${iris_ssgda[@]}" --select-by cv --grid lambda=0.01,1 -q \
    --report "$tmp/cv1.json" >/dev/null 2>>"$tmp/stderr" && "$PY" - "$tmp/cv.json" "$tmp/cv1.json" <<'PY'
import json, sys
r, one = (json.load(open(f)) for f in sys.argv[1:3])
s = r["info"]["selection"]
assert s["by"] == "cv" and s["folds"] == 5 and s["seed"] == 4 and s["held_out_as"] == "unlabeled", s
assert [c["params"]["lambda"] for c in s["candidates"]] == [0.01, 1], s["candidates"]
assert all(c["scored"] == 9 and 0 <= c["correct"] <= 9 for c in s["candidates"])
best = max(c["cv_accuracy"] for c in s["candidates"])
assert s["chosen"] == next(c["params"] for c in s["candidates"] if c["cv_accuracy"] == best)
assert r["parameters"]["lambda"] == s["chosen"]["lambda"] == r["info"]["lambda"], (r["parameters"]["lambda"], r["info"]["lambda"])
assert r["parameters"]["select_by"] == "cv" and r["timings_s"]["selection"] > 0
# the same folds, scores and choice on 1 rank as on 2
assert [c["correct"] for c in s["candidates"]] == [c["correct"] for c in one["info"]["selection"]["candidates"]]
assert one["info"]["selection"]["chosen"] == s["chosen"]
PY
then ok "fit --select-by cv records the candidates and the choice (same on 1 and 2 ranks)"
else bad "fit --select-by cv records the candidates and the choice"; cat "$tmp/stderr"; fi

if run evaluate --method sl-lda --data "$DATA/wine.csv" --labeled-per-class 4 --unlabeled-per-class 20 --splits 2 \
    --select-by cv --cv-folds 3 --grid alpha_u=0.5,0.99 -q --report "$tmp/ecv.json" >/dev/null 2>"$tmp/stderr" &&
   "$PY" - "$tmp/ecv.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["selection"]["chosen_per_split"]) == 2 and r["selection"]["cv_folds"] == 3
for p in r["per_split"]:
    s = p["info"]["selection"]
    assert s["folds"] == 3 and s["chosen"]["alpha_u"] in (0.5, 0.99) and p["info"]["alpha_u"] == s["chosen"]["alpha_u"]
PY
then ok "evaluate --select-by cv selects inside every split"
else bad "evaluate --select-by cv selects inside every split"; cat "$tmp/stderr"; fi

# A job's cv_grid is checked when the job is read, naming the file and line.
printf 'name: x\nprotocol: labeled-unlabeled-per-class\nunlabeled_per_class: 5\nlabeled_per_class: 3\ndatasets:\n  - {path: %s}\nmethods:\n  - {name: m-ssgda, cv_grid: {lambda: [big]}}\n' "$iris" >"$tmp/badcv.yaml"
expect_error "job cv_grid bad value" "badcv.yaml: line 8: cv_grid of method m-ssgda: parameter lambda: expected a number" experiment "$tmp/badcv.yaml" --output "$tmp/badcv"
sed 's/lambda: \[big\]/theta: [1]/' "$tmp/badcv.yaml" >"$tmp/badcv2.yaml"
expect_error "job cv_grid unknown parameter" "line 8: cv_grid of method m-ssgda: unknown parameter 'theta'" experiment "$tmp/badcv2.yaml" --output "$tmp/badcv"

# The approximate kNN backend: recorded, its sampled recall at the top of the report; refused
# for a method without a kNN graph and for an unknown name.
digits="$DATA/digits.csv"
if run fit --method soda --data "$digits" --labeled-per-class 5 --transductive-fraction 0.5 --seed 1 -q \
    --knn-method nndescent --knn-recall-sample 500 --report "$tmp/nd.json" >/dev/null 2>"$tmp/stderr" &&
   "$PY" - "$tmp/nd.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["parameters"]["knn_method"] == "nndescent", r["parameters"]
assert r["info"]["graph"]["knn_method"] == "nndescent", r["info"]["graph"]
assert 0.95 <= r["knn_recall"] <= 1.0, r["knn_recall"]
PY
then ok "--knn-method nndescent reports knn_recall >= 0.95 on digits"
else bad "--knn-method nndescent reports knn_recall >= 0.95 on digits"; cat "$tmp/stderr"; fi
expect_error "knn-method for a method without a kNN graph" "--knn-method is not a parameter of lda" fit --method lda --data "$iris" --labeled-per-class 3 --knn-method nndescent
expect_error "unknown knn-method" "--knn-method: expected one of auto, exact, nndescent, got 'annoy'" fit --method soda --data "$iris" --labeled-per-class 3 --knn-method annoy

# Parallel formats: convert iris to HDF5 and NPY on 2 ranks; a fit reads each on 3 ranks
# and gives the CSV fit's embedding byte for byte; transform takes NPY/HDF5 without labels
# and writes its embedding as HDF5.
wine="$DATA/wine.csv"
if run convert --data "$wine" --output "$tmp/w.h5" -q 2>"$tmp/stderr" &&
   run convert --data "$wine" --output "$tmp/w.npy" --labels-output "$tmp/wy.npy" -q 2>>"$tmp/stderr" &&
   NP=3 run fit --method soda --data "$wine" --labeled-per-class 3 --seed 2 -q --embedding "$tmp/wc.csv" --model "$tmp/w.model" 2>>"$tmp/stderr" >/dev/null &&
   NP=3 run fit --method soda --data "$tmp/w.h5" --labeled-per-class 3 --seed 2 -q --embedding "$tmp/wh.csv" 2>>"$tmp/stderr" >/dev/null &&
   NP=3 run fit --method soda --data "$tmp/w.npy" --labels "$tmp/wy.npy" --labeled-per-class 3 --seed 2 -q --embedding "$tmp/wn.csv" 2>>"$tmp/stderr" >/dev/null &&
   cmp -s "$tmp/wc.csv" "$tmp/wh.csv" && cmp -s "$tmp/wc.csv" "$tmp/wn.csv" &&
   run transform --model "$tmp/w.model" --data "$tmp/w.npy" --embedding "$tmp/wt.csv" -q 2>>"$tmp/stderr" &&
   cut -d, -f1,3- "$tmp/wc.csv" | cmp -s - "$tmp/wt.csv" &&
   run transform --model "$tmp/w.model" --data "$tmp/w.h5" --embedding "$tmp/wt.h5" -q 2>>"$tmp/stderr" &&
   [ -s "$tmp/wt.h5" ]
then ok "convert to HDF5/NPY; fits from CSV, HDF5 and NPY agree byte for byte; transform reads NPY without labels"
else bad "convert to HDF5/NPY; fits from CSV, HDF5 and NPY agree byte for byte; transform reads NPY without labels"; cat "$tmp/stderr"; fi
if run convert --data "$tmp/wt.h5" --hdf5-data /embedding --output "$tmp/wt.npy" --labels-output "$tmp/wty.npy" -q 2>"$tmp/stderr"; then
  bad "convert of an HDF5 file without labels: exit 0"
elif grep -q "no labels data set '/y'" "$tmp/stderr"; then ok "convert names the missing labels data set"
else bad "convert names the missing labels data set"; cat "$tmp/stderr"; fi
expect_error "npy data without labels" "an NPY file holds no labels; give --labels" "${fit[@]}" --data "$tmp/w.npy"
expect_error "hdf5 data set missing" "no data set '/nope'" "${fit[@]}" --data "$tmp/w.h5" --hdf5-data /nope
printf 'not an array' >"$tmp/fake.npy"
expect_error "not an NPY file" "fake.npy: not an NPY file" "${fit[@]}" --data "$tmp/fake.npy" --labels "$tmp/wy.npy"
expect_error "convert to an unknown format" "--output $tmp/x.txt: expected a name ending in .h5, .hdf5 or .npy" convert --data "$wine" --output "$tmp/x.txt"

# Provenance: the report names the commit, the date, the command line (PETSc options too),
# the hosts and the libraries.
if run fit --method lda --data "$iris" --labeled-per-class 3 -q --report "$tmp/prov.json" -eig_eps_tol 1e-12 >/dev/null 2>"$tmp/stderr" &&
   "$PY" - "$tmp/prov.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["provenance"]
assert p["git_commit"] and p["date"].endswith("Z"), p
assert "--report" in p["command_line"] and "-eig_eps_tol" in p["command_line"], p["command_line"]
assert sum(p["hosts"].values()) == p["ranks"] == 2, p
assert "-eig_eps_tol 1e-12" in p["petsc_options"], p["petsc_options"]
assert all(p["libraries"][k] for k in ("petsc", "slepc", "hdf5", "mpi", "blas")), p["libraries"]
PY
then ok "the report's provenance: commit, date, command line, hosts, PETSc options, libraries"
else bad "the report's provenance"; cat "$tmp/stderr"; fi

run fit --help >"$tmp/help" 2>&1
if grep -q -- "--select-by" "$tmp/help" && grep -q -- "--grid" "$tmp/help" && grep -q -- "--sigma-scale" "$tmp/help"; then
  ok "fit --help documents --select-by, --grid, --sigma-scale"
else bad "fit --help documents --select-by, --grid, --sigma-scale"; fi

# Your own data (issue 31): examples/my_iris.csv has a header, class names in its last column
# and 45 empty labels. fit needs no split; on 1 and 2 ranks the same names, counts and bytes;
# predict writes names; plot draws a PNG; a model saved by Python predicts names here.
own="$(cd "$DATA/../.." && pwd)/examples/my_iris.csv"
if NP=1 run fit --method soda --data "$own" --label-column species -q --report "$tmp/own1.json" --embedding "$tmp/own1.csv" \
     --model "$tmp/own.model" --plot "$tmp/own.png" >"$tmp/own1.out" 2>"$tmp/stderr" &&
   NP=2 run fit --method soda --data "$own" --label-column species -q --report "$tmp/own2.json" --embedding "$tmp/own2.csv" \
     >"$tmp/own2.out" 2>>"$tmp/stderr" &&
   run predict --model "$tmp/own.model" --data "$own" --label-column species --output "$tmp/ownp.csv" -q \
     >"$tmp/ownp.out" 2>>"$tmp/stderr" &&
   ! grep -q acc_unlab "$tmp/own1.out" && [ "$(head -c 8 "$tmp/own.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
   "$PY" - "$tmp" <<'PY'
import csv, json, sys
t = sys.argv[1]
r1, r2 = (json.load(open(f"{t}/own{k}.json")) for k in (1, 2))
for r in (r1, r2):
    assert r["class_names"] == ["setosa", "versicolor", "virginica"], r["class_names"]
    assert r["split"]["labeled"] == 105 and r["split"]["unlabeled"] == 45 and r["split"]["unseen"] == 0, r["split"]
    assert r["accuracy"]["unlabeled"] is None and "accuracy_note" in r, r["accuracy"]
    assert r["parameters"]["class_names"] == r["class_names"]
rows1, rows2 = list(csv.DictReader(open(f"{t}/own1.csv"))), list(csv.DictReader(open(f"{t}/own2.csv")))
assert [x["label"] for x in rows1] == [x["label"] for x in rows2] and len(rows1) == 150
assert sum(x["label"] == "" for x in rows1) == 45 and rows1[1]["label"] == "setosa" and rows1[0]["id"] == "0"
for a, b in zip(rows1, rows2):  # rank invariance to the propagation's tolerance (1e-12 relative)
    for k in ("y1", "y2"):
        assert abs(float(a[k]) - float(b[k])) <= 1e-9 * (1 + abs(float(a[k]))), (a, b)
pred = list(csv.DictReader(open(f"{t}/ownp.csv")))
assert len(pred) == 150 and set(x["prediction"] for x in pred) == {"setosa", "versicolor", "virginica"}
truth = [x["label"] for x in rows1]
assert sum(p["prediction"] == y for p, y in zip(pred, truth) if y) == 105  # its own labeled rows
PY
then ok "own data: header, names, empty labels; fit without a split on 1 and 2 ranks, names in the report, CSV and predict, a PNG"
else bad "own data: fit, predict and plot with names"; cat "$tmp/stderr" "$tmp/own1.out"; fi
# An id column: not a feature, and the outputs' id column (embedding and predictions).
awk -F, 'NR == 1 { print "flower," $0; next } { print "f" NR - 1 "," $0 }' "$own" >"$tmp/ids.csv"
if run fit --method soda --data "$tmp/ids.csv" --label-column species --id-column flower -q --embedding "$tmp/ide.csv" \
     --model "$tmp/id.model" >/dev/null 2>"$tmp/stderr" &&
   run predict --model "$tmp/id.model" --data "$tmp/ids.csv" --label-column species --id-column flower \
     --output "$tmp/idp.csv" -q >/dev/null 2>>"$tmp/stderr" &&
   [ "$(sed -n 2p "$tmp/ide.csv" | cut -d, -f1,2)" = "f1," ] && [ "$(sed -n 3p "$tmp/idp.csv")" = "f2,setosa" ] &&
   cut -d, -f2- "$tmp/ide.csv" | tail -n +2 | cmp -s - <(cut -d, -f2- "$tmp/own2.csv" | tail -n +2); then
  ok "--id-column: the ids in the embedding and the predictions, the same embedding as without the column"
else
  bad "--id-column"; cat "$tmp/stderr"; head -3 "$tmp/ide.csv" "$tmp/idp.csv"
fi
expect_error "a label column that does not exist" "--label-column kind: no such column in the header of $own:1" \
  fit --method soda --data "$own" --label-column kind
expect_error "a fit without a split on fully labeled data" "every row of the data is labeled" fit --method soda --data "$iris"
pybuild="$(cd "$(dirname "$SSDR")" && pwd)/python"
if [ -d "$pybuild/ssdr" ] &&
   PYTHONPATH="$pybuild" "$PY" - "$iris" "$tmp/py.model" 2>"$tmp/stderr" <<'PY' &&
import sys
import numpy as np
import ssdr
t = np.loadtxt(sys.argv[1], delimiter=",")
names = np.array(["setosa", "versicolor", "virginica"], dtype=object)
y = np.where(np.arange(len(t)) % 3 == 0, names[t[:, 0].astype(int)], None)
ssdr.SODA(dim=2, seed=1).fit(t[:, 1:], y).save(sys.argv[2])
PY
   run predict --model "$tmp/py.model" --data "$own" --label-column species --output "$tmp/pyp.txt" -q \
     >"$tmp/pyp.out" 2>>"$tmp/stderr" &&
   [ "$(sort -u "$tmp/pyp.txt" | tr '\n' ' ')" = "setosa versicolor virginica " ] &&
   grep -q "accuracy 0\.[89]" "$tmp/pyp.out"; then
  ok "a model saved from Python predicts class names from the command line ($(cat "$tmp/pyp.out"))"
else
  bad "a Python-saved model predicts names"; cat "$tmp/stderr" "$tmp/pyp.out"
fi

finish
