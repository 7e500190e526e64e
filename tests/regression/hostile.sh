#!/usr/bin/env bash
# Hostile input: names and paths from job files and the command line must never reach a
# shell, never write outside the output folder, and never clobber an input or a device.
# Usage: hostile.sh SSDR_BINARY DATA_DIR   (MPIEXEC from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# 1. Shell injection through a data set name and through the output folder: the plots are
#    made by gnuplot run with an argument vector, and file names are slugs.
mkdir -p "$tmp/work"
cat >"$tmp/work/job.yaml" <<YAML
name: hostile
protocol: transductive-fraction
transductive_fraction: 0.8
labeled_per_class: 3
splits: 1
seed: 0
datasets:
  - {name: "x'; touch $tmp/INJECTED_NAME; echo '", path: $DATA/iris.csv}
  - {name: "../../ESCAPED", path: $DATA/iris.csv}
methods:
  - name: lda
    dim: "1:2"
YAML
out="$tmp/work/out'; touch $tmp/INJECTED_DIR; echo '"
if timeout 300 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/work/job.yaml" --output "$out" -q >"$tmp/inj.out" 2>&1; then
  if [ -e "$tmp/INJECTED_NAME" ] || [ -e "$tmp/INJECTED_DIR" ]; then
    bad "a data set name or output folder ran a shell command"
  else
    ok "names and folders with quotes run nothing"
  fi
  if find "$tmp" -name '*ESCAPED*' | grep -v "^$out/plots/" | grep -q .; then
    bad "a data set named ../../ESCAPED wrote outside the plots folder: $(find "$tmp" -name '*ESCAPED*' | head -3)"
  else
    ok "a data set named ../../ESCAPED stays inside the plots folder"
  fi
  if command -v gnuplot >/dev/null && ! ls "$out/plots/"*.png >/dev/null 2>&1; then
    bad "no plot made for hostile names"
  else
    ok "plots made for hostile names"
  fi
else
  bad "experiment with hostile names failed"; cat "$tmp/inj.out"
fi

# 2. Outputs never replace an input, another output or a device. Each case: one line on
#    stderr naming the option, non-zero exit, the input untouched, no file left behind.
cp "$DATA/iris.csv" "$tmp/iris.csv"
sum_before=$(md5sum <"$tmp/iris.csv")
FIT=(fit --method lda --data "$tmp/iris.csv" --labeled-per-class 3 -q)
refuse() {  # refuse NAME EXPECTED_TEXT ARGS...
  local name="$1" want="$2"; shift 2
  if timeout 120 "$MPIEXEC" -n 2 "$SSDR" "$@" >"$tmp/out" 2>"$tmp/err"; then
    bad "$name: exit 0"
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err"; then
    bad "$name: expected one line with '$want', got: $(head -c 400 "$tmp/err")"
  else
    ok "$name"
  fi
}
refuse "--embedding equal to --data" "is the same file as --data" "${FIT[@]}" --embedding "$tmp/iris.csv"
refuse "--embedding equal to --data by another path" "is the same file as --data" "${FIT[@]}" --embedding "$tmp/./iris.csv"
refuse "--report equal to --model" "is the same file as --report" "${FIT[@]}" --report "$tmp/x" --model "$tmp/x"
refuse "--embedding ending in /" "expected a file name" "${FIT[@]}" --embedding "$tmp/"
refuse "--model naming a directory" "is a directory" "${FIT[@]}" --model "$tmp"
[ "$(md5sum <"$tmp/iris.csv")" = "$sum_before" ] && ok "the input data is untouched" || bad "the input data changed"
[ ! -e "$tmp/x" ] && ok "no output left by refused runs" || bad "a refused run left $tmp/x"
if timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${FIT[@]}" --model "$tmp/m.model" >/dev/null 2>&1; then
  cp "$tmp/m.model" "$tmp/m.copy"
  refuse "transform --embedding equal to --model" "is the same file as --model" \
    transform --model "$tmp/m.model" --data "$tmp/iris.csv" --embedding "$tmp/m.model" -q
  cmp -s "$tmp/m.model" "$tmp/m.copy" && ok "the model is untouched" || bad "the model changed"
else
  bad "fit --model"
fi
# A device target is written in place, never renamed over (as root, a rename would turn
# /dev/null into a regular file). Use a FIFO of our own with a reader, and /dev/null.
mkfifo "$tmp/fifo"
(cat "$tmp/fifo" >"$tmp/fifo.out") &
reader=$!
if timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${FIT[@]}" --embedding "$tmp/fifo" >/dev/null 2>"$tmp/err" && wait "$reader" &&
   [ -p "$tmp/fifo" ] && [ "$(wc -l <"$tmp/fifo.out")" -eq 151 ]; then
  ok "a FIFO output is written through and stays a FIFO"
else
  bad "FIFO output: $(head -c 300 "$tmp/err")"; kill "$reader" 2>/dev/null
fi
if timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${FIT[@]}" --embedding /dev/null --report /dev/null >/dev/null 2>"$tmp/err" &&
   [ -c /dev/null ]; then
  ok "/dev/null as an output stays a character device"
else
  bad "/dev/null output: $(head -c 300 "$tmp/err"); is char device: $([ -c /dev/null ] && echo yes || echo NO)"
fi
rm -f "$tmp/fifo2"; mkfifo "$tmp/fifo2"
refuse "a FIFO output without a reader" "fifo2" "${FIT[@]}" --embedding "$tmp/fifo2"

# 3. Sizes from a few bytes of input are checked against the file and the host's memory
#    before anything is allocated; non-regular inputs are refused instead of read forever.
printf '0,1,2\n2147483646,3,4\n1,5,6\n' >"$tmp/big_label.csv"
# A label is a name: 2147483646 is one of 3 classes, and nothing is sized by its value.
if timeout 60 "$MPIEXEC" -n 2 "$SSDR" fit --method lda --data "$tmp/big_label.csv" --labeled-per-class 1 \
     --report "$tmp/big_label.json" -q >/dev/null 2>"$tmp/err" &&
   "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["class_names"]==["0","1","2147483646"], r["class_names"]' \
     "$tmp/big_label.json"; then
  ok "a label of 2147483646 in a 3-row CSV is one of 3 classes (nothing sized by its value)"
else
  bad "a label of 2147483646: $(head -c 300 "$tmp/err")"
fi
printf '0 1:1 99999999999:2\n1 1:3\n' >"$tmp/big_index.libsvm"
refuse "a LIBSVM feature index of 99999999999" "big_index.libsvm:1: feature index 99999999999" \
  fit --method lda --data "$tmp/big_index.libsvm" --labeled-per-class 1 -q
"$PY" -c "
import struct
open('$tmp/huge-images-idx3-ubyte','wb').write(struct.pack('>IIII',0x803,65536,256,256)+bytes(100))
open('$tmp/huge-labels-idx1-ubyte','wb').write(struct.pack('>II',0x801,65536)+bytes(10))"
refuse "an IDX header claiming 65536 images of 65536 pixels" "truncated (expected 65536 images" \
  fit --method lda --data "$tmp/huge-images-idx3-ubyte" --labeled-per-class 1 -q
# d > n: 30 samples × 20 000 features take the n×n Gram route of PCA (was a 20 000² covariance,
# minutes at 5 GB per rank); a generous 60 s bound (it takes well under a second).
"$PY" -c "
import random
random.seed(1)
with open('$tmp/wide.csv', 'w') as f:
    for i in range(30):
        f.write(str(i % 3) + ',' + ','.join('%.3f' % (random.random() + 0.5 * (j % 3 == i % 3)) for j in range(20000)) + '\n')"
if timeout 60 "$MPIEXEC" -n 2 "$SSDR" fit --method lda --data "$tmp/wide.csv" --labeled-per-class 3 -q --report "$tmp/wide.json" \
     >/dev/null 2>"$tmp/err" && grep -q '"d_reduced": 29' "$tmp/wide.json"; then
  ok "30 x 20000 dense data: PCA by the Gram route, d' = 29"
else
  bad "30 x 20000 dense data: $(head -c 300 "$tmp/err")"
fi
refuse "--data /dev/zero" "not a regular file" fit --method lda --data /dev/zero --labeled-per-class 1 -q
mkfifo "$tmp/in.fifo"
refuse "--data a FIFO without a writer" "not a regular file" fit --method lda --data "$tmp/in.fifo" --labeled-per-class 1 -q

# 4. Silent acceptance: invalid values, a stray word and a one-class data set are refused.
IRIS=(fit --method lda --data "$DATA/iris.csv" --labeled-per-class 3 -q)
refuse "--transductive-fraction nan" "--transductive-fraction must be in (0, 1], got nan" "${IRIS[@]}" --transductive-fraction nan
refuse "--transductive-fraction -0.1" "--transductive-fraction must be in (0, 1]" "${IRIS[@]}" --transductive-fraction -0.1
refuse "--pca-energy 0" "--pca-energy: expected a number in (0, 1], got 0" "${IRIS[@]}" --pca-energy 0
refuse "--unlabeled-per-class -5" "--unlabeled-per-class must be at least 0" "${IRIS[@]}" --unlabeled-per-class -5
refuse "--recursions 0" "--recursions: expected an integer in [1, 10000], got 0" fit --method soge --data "$DATA/iris.csv" --labeled-per-class 3 -q --recursions 0
refuse "--beta with soda (a parameter the method does not use)" "--beta is not a parameter of soda" \
  fit --method soda --data "$DATA/iris.csv" --labeled-per-class 3 -q --beta 2
refuse "--grid of a parameter the method does not use" "--grid alpha is not a parameter of oda" \
  fit --method oda --data "$DATA/iris.csv" --labeled-per-class 3 -q --select-by cv --grid alpha=1,2
job() {  # job FILE METHOD_LINES...: a small iris job
  local f="$1"; shift
  printf 'name: j\nprotocol: transductive-fraction\ntransductive_fraction: 0.5\nlabeled_per_class: 3\nsplits: 1\ndatasets:\n  - {path: %s}\nmethods:\n' "$DATA/iris.csv" >"$f"
  printf '%s\n' "$@" >>"$f"
}
job "$tmp/dup.yaml" "  - {name: lda}" "splits: 3"
refuse "a duplicate key in a job file" "dup.yaml:10: duplicate key 'splits' (first on line 5)" experiment "$tmp/dup.yaml" --output "$tmp/dup" -q
job "$tmp/dims.yaml" '  - {name: lda, dim: "1:1000000000"}'
refuse "a job dim range of a billion values" "dim: range '1:1000000000' has more than 10000 values" experiment "$tmp/dims.yaml" --output "$tmp/dims" -q
job "$tmp/negmu.yaml" "  - {name: soda, mu_scale: [0.1, -1]}"
refuse "a job mu_scale of -1 (was an MPI_Abort after the first fits)" "negmu.yaml: line 9: parameter mu_scale: expected a number >= 0, got -1" \
  experiment "$tmp/negmu.yaml" --output "$tmp/negmu" -q
job "$tmp/rec0.yaml" "  - {name: soge, recursions: 0}"
refuse "a job recursions of 0" "rec0.yaml: line 9: parameter recursions: expected an integer in [1, 10000], got 0" \
  experiment "$tmp/rec0.yaml" --output "$tmp/rec0" -q
refuse "--alpha-u 1.5" "--alpha-u: expected a number in [0, 1), got 1.5" \
  fit --method soda --data "$DATA/iris.csv" --labeled-per-class 3 -q --alpha-u 1.5
job "$tmp/unused.yaml" "  - {name: soda, beta: 2}"
refuse "a job parameter the method does not use" "unused.yaml: line 9: beta is not a parameter of soda" experiment "$tmp/unused.yaml" --output "$tmp/unused" -q
refuse "a stray positional word" "unexpected argument 'stray'" "${IRIS[@]}" stray
head -50 "$DATA/iris.csv" >"$tmp/one_class.csv"
refuse "a data set with one class" "1 class(es)" fit --method lda --data "$tmp/one_class.csv" --labeled-per-class 3 -q

# 5. Honest checkpoints: a changed seed re-run into the same folder is refused (old results
#    must not come back), and a line cut by a full disk does not swallow the next record.
cat >"$tmp/ck.yaml" <<YAML
name: checkpoint
protocol: transductive-fraction
transductive_fraction: 0.8
labeled_per_class: 3
splits: 2
seed: 0
datasets:
  - {name: iris, path: $DATA/iris.csv}
methods:
  - name: lda
    dim: "1:2"
YAML
count() { "$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['results']))" "$1" 2>/dev/null || echo 0; }
if timeout 300 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/ck.yaml" --output "$tmp/ck" -q >/dev/null 2>&1; then
  full=$(count "$tmp/ck/results.json")
  sed 's/seed: 0/seed: 5/' "$tmp/ck.yaml" >"$tmp/ck5.yaml"
  refuse "a changed seed re-run into the same folder" "holds results of another configuration" \
    experiment "$tmp/ck5.yaml" --output "$tmp/ck" -q
  # Cut the last record in the middle (as a full disk would), then resume: the cut
  # configuration is redone and its new line must be read, not glued to the cut one.
  f=$(ls "$tmp/ck"/results*.jsonl | head -1)
  "$PY" - "$f" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
lines = [l for l in lines if l]
open(p, "w").write("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
PY
  if timeout 300 "$MPIEXEC" -n 2 "$SSDR" experiment "$tmp/ck.yaml" --output "$tmp/ck" -q >/dev/null 2>"$tmp/err" &&
     [ "$(count "$tmp/ck/results.json")" -eq "$full" ] && [ "$full" -gt 0 ]; then
    ok "a cut line is redone and the next record survives"
  else
    bad "after a cut line: $(count "$tmp/ck/results.json") results, expected $full; $(head -c 300 "$tmp/err")"
  fi
else
  bad "checkpoint job"
fi

# 6. Messages: one line, once, naming the option or the problem, no source path.
printf '0,0,0\n1,0,0\n2,0,0\n0,0,0\n1,0,0\n2,0,0\n0,0,0\n1,0,0\n2,0,0\n0,0,0\n1,0,0\n2,0,0\n' >"$tmp/zeros.csv"
refuse "--format xml" "--format: unknown data format 'xml'" "${IRIS[@]}" --format xml
refuse "--mu-scale inf" "--mu-scale: expected a number >= 0, got inf" fit --method soda --data "$DATA/iris.csv" --labeled-per-class 3 -q --mu-scale inf
refuse "-lp_ksp_type bogus" "requested KSP type bogus" fit --method soda --data "$DATA/iris.csv" --labeled-per-class 3 -q -lp_ksp_type bogus
refuse "an all-zero feature matrix" "zero variance" fit --method soda --data "$tmp/zeros.csv" --labeled-per-class 2 -q
if grep -q "\.cpp" "$tmp/err"; then bad "an error message shows a source path: $(cat "$tmp/err")"; else ok "no source path in messages"; fi

# 7. Corrupted models do not load; FIFOs as --model, --split or job file are refused.
if timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${IRIS[@]}" --model "$tmp/good.model" >/dev/null 2>&1; then
  "$PY" - "$tmp/good.model" "$tmp/flipped.model" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x10
open(sys.argv[2], "wb").write(bytes(b))
PY
  refuse "a model with one flipped byte" "checksum mismatch" transform --model "$tmp/flipped.model" --data "$DATA/iris.csv" --embedding "$tmp/e.csv" -q
else
  bad "fit --model for the corruption case"
fi
mkfifo "$tmp/model.fifo" "$tmp/split.fifo" "$tmp/job.fifo"
refuse "--model a FIFO" "not a regular file" transform --model "$tmp/model.fifo" --data "$DATA/iris.csv" --embedding "$tmp/e.csv" -q
refuse "--split a FIFO" "not a regular file" fit --method lda --data "$DATA/iris.csv" --split "$tmp/split.fifo" -q
refuse "a job file that is a FIFO" "not a regular file" experiment "$tmp/job.fifo" -q

# 8. All outputs or none; job-file values of the wrong kind name the file, line and key; a
#    control character in a message cannot cut or split it.
refuse "lp --model (nothing to save)" "--model: method lp learns no projection" \
  fit --method lp --data "$DATA/iris.csv" --labeled-per-class 3 -q --model "$tmp/lp.model" --embedding "$tmp/lp.csv"
[ ! -e "$tmp/lp.csv" ] && [ ! -e "$tmp/lp.model" ] && ok "lp --model leaves no file" || bad "lp --model left a file"
job "$tmp/badsplits.yaml" "  - lda" 'seed: "abc"'
refuse "a job value of the wrong kind" "badsplits.yaml: line 10: seed: expected a non-negative integer, got 'abc'" \
  experiment "$tmp/badsplits.yaml" --output "$tmp/badsplits" -q
job "$tmp/badfrac.yaml" "  - lda"
sed -i 's/transductive_fraction: 0.5/transductive_fraction: .nan/' "$tmp/badfrac.yaml"
refuse "a job transductive_fraction of NaN" "transductive_fraction must be in (0, 1], got nan" \
  experiment "$tmp/badfrac.yaml" --output "$tmp/badfrac" -q
printf '0,1,2\n1,3,4\n' >"$tmp/ctl.csv"
printf '0,1,2\n1,3,4\n2,5,\001x\n' >"$tmp/ctl.csv"
if timeout 60 "$MPIEXEC" -n 2 "$SSDR" fit --method lda --data "$tmp/ctl.csv" --labeled-per-class 1 -q >/dev/null 2>"$tmp/err"; then
  bad "a control character in the data was accepted"
elif [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'ctl.csv:3' "$tmp/err" && ! grep -q "$(printf '\001')" "$tmp/err"; then
  ok "a control character in the data: one line naming file:line, the byte escaped"
else
  bad "control character message: $(od -c "$tmp/err" | head -5)"
fi

# A data set that fails to parse in one group of `experiment --groups 2` ends the whole job
# with its message (it used to leave the other group waiting at the final barrier forever).
head -40 "$DATA/iris.csv" >"$tmp/bad_iris.csv"; echo "1,2,x,4,5" >>"$tmp/bad_iris.csv"
printf 'name: g\nprotocol: transductive-fraction\ntransductive_fraction: 0.5\nlabeled_per_class: 3\nsplits: 1\ndatasets:\n  - {name: good, path: %s}\n  - {name: bad, path: %s}\nmethods: [lda]\n' \
  "$DATA/iris.csv" "$tmp/bad_iris.csv" >"$tmp/groups.yaml"
refuse "a data set failing in one group of two" "bad_iris.csv:41: value 'x' is not a number" \
  experiment "$tmp/groups.yaml" --groups 2 --output "$tmp/groups" -q
sed 's/bad_iris.csv/missing.csv/' "$tmp/groups.yaml" >"$tmp/groups2.yaml"
refuse "a missing data set, before any group starts" "data set 'bad': cannot read" \
  experiment "$tmp/groups2.yaml" --groups 2 --output "$tmp/groups2" -q

# 9. A misspelled PETSc option is reported, not silently ignored.
if timeout 120 "$MPIEXEC" -n 2 "$SSDR" fit --method soda --data "$DATA/iris.csv" --labeled-per-class 3 -q -lp_ksp_typo gmres \
     >/dev/null 2>"$tmp/err" && grep -q "warning: PETSc option -lp_ksp_typo gmres was not used" "$tmp/err"; then
  ok "a misspelled PETSc option warns"
else
  bad "misspelled PETSc option: $(head -c 300 "$tmp/err")"
fi

# 10. The second hostile pass (after the fixes above): PETSc's own file options, sweeps that
#     a few bytes blow up, YAML aliases, links among the outputs, duplicates, wide data without
#     PCA, and odd values on the command line. Each: one line, non-zero exit, in seconds.
refuse "-options_file /dev/zero (PETSc read it until memory ran out)" "-options_file /dev/zero: not a regular file" \
  "${IRIS[@]}" -options_file /dev/zero
mkfifo "$tmp/opt.fifo"
refuse "-options_file a FIFO without a writer" "-options_file $tmp/opt.fifo: not a regular file" "${IRIS[@]}" -options_file "$tmp/opt.fifo"
refuse "-options_file missing (was PETSc's traceback)" "-options_file $tmp/none.opts: No such file" "${IRIS[@]}" -options_file "$tmp/none.opts"
refuse "-log_view into a missing folder (was a silent exit 1)" "folder '$tmp/no/dir' does not exist" "${IRIS[@]}" -log_view ":$tmp/no/dir/log.txt"
job "$tmp/splits.yaml" "  - {name: lda}" "splits: 1000000000"
sed -i '/^splits: 1$/d' "$tmp/splits.yaml"
refuse "a job with a billion splits" "splits must be between 1 and 10000, got 1000000000" experiment "$tmp/splits.yaml" --output "$tmp/splits" -q
job "$tmp/dims2.yaml" '  - {name: lda, dim: ["1:9000", "1:9000"]}'
refuse "a job dim list repeating a range" "dim of method lda: 18000 values, more than 10000" experiment "$tmp/dims2.yaml" --output "$tmp/dims2" -q
job "$tmp/sweep.yaml" "  - {name: soda, knn: [$(seq -s, 1 30)], alpha_u: [$(seq -s, 0.01 0.01 0.3)], mu_scale: [$(seq -s, 1 20)]}"
refuse "a job grid of 18000 points" "a parameter grid of more than 10000 points" experiment "$tmp/sweep.yaml" --output "$tmp/sweep" -q
job "$tmp/alias.yaml" "  - {name: lda}" "x: &m [lda, *m]"
refuse "a recursive YAML alias (was a segfault)" "recursive or repeated YAML alias" experiment "$tmp/alias.yaml" --output "$tmp/alias" -q
{ job /dev/stdout "  - {name: lda}"; echo "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"
  for i in $(seq 1 12); do echo "a$i: &a$i [*a$((i-1)), *a$((i-1)), *a$((i-1)), *a$((i-1)), *a$((i-1)), *a$((i-1)), *a$((i-1)), *a$((i-1))]"; done; } >"$tmp/bomb.yaml"
refuse "a YAML alias bomb (was minutes of CPU)" "recursive or repeated YAML alias" experiment "$tmp/bomb.yaml" --output "$tmp/bomb" -q
printf 'name: j\nprotocol: transductive-fraction\ntransductive_fraction: 0.5\nlabeled_per_class: 3\nsplits: 1\ndatasets:\n  - {path: "%s\\0.evil"}\nmethods: [lda]\n' "$DATA/iris.csv" >"$tmp/nul.yaml"
refuse "a NUL inside a job-file path (was silently cut)" "nul.yaml: line 7: path: contains a NUL character" experiment "$tmp/nul.yaml" --output "$tmp/nul" -q
printf 'name: j\nprotocol: transductive-fraction\ntransductive_fraction: 0.5\nlabeled_per_class: 3\nsplits: 1\ndatasets:\n  - {name: a, path: %s}\n  - {name: a, path: %s}\nmethods: [lda]\n' "$DATA/iris.csv" "$DATA/wine.csv" >"$tmp/dupname.yaml"
refuse "two data sets of one name (were merged into one row)" "data set name 'a' is used twice" experiment "$tmp/dupname.yaml" --output "$tmp/dupname" -q
job "$tmp/dupmeth.yaml" "  - {name: lda}" "  - {name: lda}"
refuse "one method listed twice (counted as two splits)" "method lda is listed twice with the same settings" experiment "$tmp/dupmeth.yaml" --output "$tmp/dupmeth" -q
job "$tmp/link.yaml" "  - {name: lda}"
mkdir -p "$tmp/link" && cp "$DATA/iris.csv" "$tmp/iris_copy.csv" && ln -s "$tmp/iris_copy.csv" "$tmp/link/results.g0of1.jsonl"
before=$(md5sum <"$tmp/iris_copy.csv")
refuse "a results file that is a link to an input (was appended to)" "it is a symbolic link" experiment "$tmp/link.yaml" --output "$tmp/link" -q
[ "$(md5sum <"$tmp/iris_copy.csv")" = "$before" ] && ok "the linked input is untouched" || bad "the linked input was changed"
refuse "--no-pca on 30 x 20000 (was minutes at 14 GB)" "d' = 20000 features after preprocessing" \
  fit --method lda --data "$tmp/wide.csv" --labeled-per-class 3 -q --no-pca
refuse "--report with an empty name (was a silent success)" "--report: expected a file name, got an empty string" "${IRIS[@]}" --report ""
refuse "--seed -1 (was 2^64 - 1)" "--seed: expected an integer >= 0, got -1" "${IRIS[@]}" --seed -1
refuse "a stray word after methods" "ssdr methods takes only --markdown" methods extra
refuse "--pca-energy 1.0000001 (was printed as 1.000000)" "got 1.0000001" "${IRIS[@]}" --pca-energy 1.0000001
refuse "--degree 1e6 (was a ScaLAPACK error on every rank)" "--degree: expected a number in (0, 20], got 1e+06" \
  fit --method ksoda --data "$DATA/iris.csv" --labeled-per-class 3 -q --degree 1e6

printf 'name: j\nprotocol: transductive-fraction\ntransductive_fraction: 0.5\nlabeled_per_class: 3\nsplits: 1\ndatasets:\n  - {path: %s, format: xml}\nmethods: [lda]\n' "$DATA/iris.csv" >"$tmp/fmt.yaml"
refuse "a job format xml names the job file and line (was --format)" "fmt.yaml: line 7: format: unknown data format 'xml'" experiment "$tmp/fmt.yaml" --output "$tmp/fmt" -q
job "$tmp/meth.yaml" "  - {name: sod}"
refuse "a job's unknown method names the job file and line (was --method)" "meth.yaml: line 9: name: unknown method 'sod'" experiment "$tmp/meth.yaml" --output "$tmp/meth" -q

mkfifo "$tmp/data.fifo"
printf 'name: j\nprotocol: transductive-fraction\ntransductive_fraction: 0.5\nlabeled_per_class: 3\nsplits: 1\ndatasets:\n  - {name: f, path: %s}\nmethods: [lda]\n' "$tmp/data.fifo" >"$tmp/fifo_ds.yaml"
refuse "a job data set that is a FIFO" "data set 'f': cannot read" experiment "$tmp/fifo_ds.yaml" --output "$tmp/fifo_ds_out" -q
[ ! -e "$tmp/fifo_ds_out" ] && ok "a refused job leaves no output folder" || bad "a refused job left $tmp/fifo_ds_out"

printf 'name: j\nprotocol: transductive-fraction\ntransductive_fraction: 0.5\nlabeled_per_class: 3\nsplits: 1\ndatasets:\n  - {name: "a b", path: %s}\n  - {name: a_b, path: %s}\nmethods: [lda]\n' "$DATA/iris.csv" "$DATA/wine.csv" >"$tmp/slug.yaml"
refuse "two data set names with one plot file name (one plot overwrote the other)" "make the same plot file name 'a_b'" experiment "$tmp/slug.yaml" --output "$tmp/slug" -q

job "$tmp/alldim.yaml" "  - {name: lda, dim: 10}"
refuse "a job every configuration of which is rejected (was exit 0, empty table)" "every configuration was rejected by its method; the first: --dim 10 must be between 1 and the 4" \
  experiment "$tmp/alldim.yaml" --output "$tmp/alldim" -q
[ -s "$tmp/alldim/summary.md" ] && ok "... and its summary still records the rejects" || bad "no summary for the rejected job"

# 9. The parallel formats (third hostile pass): HDF5 never replaces a device or FIFO, a
#    failed convert leaves neither file, an option of another format is refused, the extension
#    is matched without case, a group is not taken for a data set.
mkfifo "$tmp/pipe.h5"
refuse "--embedding .h5 that is a FIFO" "is a device or FIFO (HDF5 needs a regular file" "${FIT[@]}" --embedding "$tmp/pipe.h5"
[ -p "$tmp/pipe.h5" ] && ok "... and the FIFO is still a FIFO" || bad "the FIFO was replaced"
if [ -w /dev/full ]; then
  refuse "convert whose labels cannot be written" "No space left on device" \
    convert --data "$tmp/iris.csv" --output "$tmp/cx.npy" --labels-output /dev/full -q
  [ ! -e "$tmp/cx.npy" ] && ok "... and leaves no X without its labels" || bad "convert left $tmp/cx.npy"
fi
refuse "--labels with CSV data" "--labels $tmp/y.npy: only NPY data take a labels file" "${FIT[@]}" --labels "$tmp/y.npy"
refuse "--hdf5-data with CSV data" "--hdf5-data/--hdf5-labels: only for HDF5 data" "${FIT[@]}" --hdf5-data /Z
timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${FIT[@]}" --embedding "$tmp/UP.H5" >/dev/null 2>&1
[ "$(head -c 4 "$tmp/UP.H5" | od -An -c | tr -d ' ')" = "211HDF" ] && ok "--embedding X.H5 is HDF5 (extension without case)" || bad "--embedding X.H5 was not written as HDF5"
timeout 120 "$MPIEXEC" -n 2 "$SSDR" convert --data "$tmp/iris.csv" --output "$tmp/g.h5" -q >/dev/null 2>&1
refuse "an HDF5 group named as the data set" "'/' is not a data set (a group?)" "${FIT[@]/$tmp\/iris.csv/$tmp/g.h5}" --hdf5-data /
ln -s loop_b "$tmp/loop_a"; ln -s loop_a "$tmp/loop_b"
refuse "a symlink loop as --data" "Too many levels of symbolic links" "${FIT[@]/$tmp\/iris.csv/$tmp/loop_a}"

# 11. predict: a missing or garbage model, an output that is an input, an output folder that
#     does not exist. Each: one line, non-zero exit on every rank, no file (nor temporary)
#     left behind, the inputs untouched.
mkdir -p "$tmp/pred"
timeout 120 "$MPIEXEC" -n 2 "$SSDR" fit --method soda --data "$tmp/iris.csv" --labeled-per-class 3 -q --model "$tmp/pred/m.model" >/dev/null 2>&1
printf 'ssdr-model\001\000\000\000garbage' >"$tmp/pred/garbage.model"
head -c 4096 /dev/urandom >"$tmp/pred/random.model"
PRED=(predict --data "$tmp/iris.csv" -q)
refuse "predict with a missing model" "cannot open '$tmp/pred/none.model': No such file" "${PRED[@]}" --model "$tmp/pred/none.model" --output "$tmp/pred/p.txt"
refuse "predict with a garbage model" "truncated or corrupt model file" "${PRED[@]}" --model "$tmp/pred/garbage.model" --output "$tmp/pred/p.txt"
refuse "predict with random bytes as the model" "is not an ssdr model file" "${PRED[@]}" --model "$tmp/pred/random.model" --output "$tmp/pred/p.txt"
refuse "predict with the data as the model" "is not an ssdr model file" "${PRED[@]}" --model "$tmp/iris.csv" --output "$tmp/pred/p.txt"
refuse "predict --output equal to --data" "is the same file as --data" "${PRED[@]}" --model "$tmp/pred/m.model" --output "$tmp/iris.csv"
refuse "predict --output equal to --data by another path" "is the same file as --data" "${PRED[@]}" --model "$tmp/pred/m.model" --output "$tmp/pred/../iris.csv"
refuse "predict --output equal to --model" "is the same file as --model" "${PRED[@]}" --model "$tmp/pred/m.model" --output "$tmp/pred/m.model"
refuse "predict --output into a missing folder" "--output $tmp/pred/no/dir/p.txt: directory '$tmp/pred/no/dir' does not exist" \
  "${PRED[@]}" --model "$tmp/pred/m.model" --output "$tmp/pred/no/dir/p.txt"
refuse "predict --output a directory" "is a directory" "${PRED[@]}" --model "$tmp/pred/m.model" --output "$tmp/pred"
refuse "predict with data of another width" "has 13 features but the model" "${PRED[@]/$tmp\/iris.csv/$DATA/wine.csv}" --model "$tmp/pred/m.model" --output "$tmp/pred/p.txt"
[ "$(md5sum <"$tmp/iris.csv")" = "$sum_before" ] && ok "... the data is untouched" || bad "predict changed the data"
left=$(find "$tmp/pred" -mindepth 1 ! -name m.model ! -name garbage.model ! -name random.model)
[ -z "$left" ] && ok "... and no refused predict left a file" || bad "a refused predict left: $left"

# 12. A graph file belongs to its data (issue 32): --graph-out records the provenance (data,
#     split, preprocessing, distance); --graph-in refuses a mismatch with one line naming what
#     differs, and a sample of edges whose distances differ beyond rounding.
mkdir -p "$tmp/graph"
G=(fit --method soda --labeled-per-class 3 -q)
tac "$tmp/iris.csv" >"$tmp/graph/rev.csv"
timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${G[@]}" --data "$tmp/graph/rev.csv" --graph-out "$tmp/graph/rev.h5" >/dev/null 2>&1
timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${G[@]}" --data "$tmp/iris.csv" --seed 1 --graph-out "$tmp/graph/s1.h5" >/dev/null 2>&1
timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${G[@]}" --data "$tmp/iris.csv" --scaling none --graph-out "$tmp/graph/plain.h5" >/dev/null 2>&1
refuse "--graph-in of the rows in reverse order" "the lists were made for another data.values" "${G[@]}" --data "$tmp/iris.csv" --graph-in "$tmp/graph/rev.h5"
refuse "--graph-in written for --seed 1, read with --seed 2" "the lists were made for another split" "${G[@]}" --data "$tmp/iris.csv" --seed 2 --graph-in "$tmp/graph/s1.h5"
refuse "--graph-in written unscaled, read with --scaling standardize" "another preprocessing.scaling" "${G[@]}" --data "$tmp/iris.csv" --scaling standardize --graph-in "$tmp/graph/plain.h5"
if "$PY" -c "import h5py" 2>/dev/null; then
  "$PY" - "$tmp/graph" <<'PY'
import shutil, sys, h5py
d = sys.argv[1]
for name, scale, keep in (("far.h5", 1.5, True), ("bare.h5", 1.0, False), ("bare_far.h5", 1.5, False)):
    shutil.copy(d + "/s1.h5", d + "/" + name)
    with h5py.File(d + "/" + name, "r+") as f:
        f["/knn/dist2"][...] = f["/knn/dist2"][...] * scale
        if not keep:
            del f.attrs["provenance"]
PY
  refuse "--graph-in with the right indices but other distances" "recomputed" "${G[@]}" --data "$tmp/iris.csv" --seed 1 --graph-in "$tmp/graph/far.h5"
  refuse "--graph-in without provenance and other distances" "recomputed" "${G[@]}" --data "$tmp/iris.csv" --seed 1 --graph-in "$tmp/graph/bare_far.h5"
  if timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${G[@]}" --data "$tmp/iris.csv" --seed 1 --graph-in "$tmp/graph/bare.h5" >"$tmp/out" 2>"$tmp/err" &&
     [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "has no provenance" "$tmp/err"; then
    ok "--graph-in without provenance: accepted with one warning line"
  else
    bad "--graph-in without provenance: expected exit 0 and one warning line, got: $(head -c 300 "$tmp/err")"
  fi
fi
if timeout 120 "$MPIEXEC" -n 2 "$SSDR" "${G[@]}" --data "$tmp/iris.csv" --seed 1 --graph-in "$tmp/graph/s1.h5" >"$tmp/out" 2>"$tmp/err" &&
   [ ! -s "$tmp/err" ]; then
  ok "--graph-in of its own fit: accepted, silently"
else
  bad "--graph-in of its own fit: $(head -c 300 "$tmp/err")"
fi

# 13. Degenerate problems: all-zero sparse data, SDA past the rank of S_b.
for i in $(seq 1 30); do echo "$((i % 3)) 1:0 2:0"; done >"$tmp/graph/zero.libsvm"
refuse "an all-zero LIBSVM file" "every value is 0 (nnz 0)" fit --method lda --data "$tmp/graph/zero.libsvm" --sparse yes --pca-dim 1 --labeled-per-class 3 -q
for i in $(seq 1 30); do echo "$((i % 3)) 1:2 2:3"; done >"$tmp/graph/same.libsvm"
refuse "a LIBSVM file whose rows are all the same" "every row is the same" fit --method lda --data "$tmp/graph/same.libsvm" --sparse yes --pca-dim 1 --labeled-per-class 3 -q
refuse "sda past the rank of S_b" "the largest meaningful --dim is 2" fit --method sda --data "$DATA/wine.csv" --dim 4 --labeled-per-class 3 -q

# 14. Ties where eigenvalues and means are equal: jobs/experiments/wine_dims.yaml gives the same
#     results (every configuration's accuracies) and the same summary (its timing column
#     aside) on 1 and 2 ranks and with --groups 1 and 2.
JOB="$(dirname "${BASH_SOURCE[0]}")/../../jobs/experiments/wine_dims.yaml"
for cfg in "1 1" "2 1" "2 2"; do
  set -- $cfg
  timeout 300 "$MPIEXEC" -n "$1" "$SSDR" experiment "$JOB" --groups "$2" --output "$tmp/wd_$1_$2" -q >/dev/null 2>&1 ||
    bad "wine_dims on $1 rank(s), --groups $2 failed"
done
if "$PY" - "$tmp" <<'PY'
import json, sys
def load(d):
    results = json.load(open(d + "/results.json"))["results"]
    acc = {json.dumps({k: r.get(k) for k in ("dataset", "method", "params", "dim", "split", "seed")}, sort_keys=True):
           (r.get("accuracy"), r.get("error")) for r in results}
    rows = [",".join(line.split(",")[:-1]) for line in open(d + "/summary.csv")]
    return acc, rows
runs = [load(sys.argv[1] + "/wd_" + c) for c in ("1_1", "2_1", "2_2")]
sys.exit(0 if len(runs[0][0]) > 100 and runs[0] == runs[1] == runs[2] else 1)
PY
then ok "wine_dims: the same results and summary on 1 and 2 ranks, --groups 1 and 2"
else bad "wine_dims differs between 1 and 2 ranks or --groups 1 and 2"
fi

finish
