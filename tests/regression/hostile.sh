#!/usr/bin/env bash
# Hostile input: names and paths from job files and the command line must never reach a
# shell, never write outside the output folder, and never clobber an input or a device.
# Usage: hostile.sh SSDR_BINARY DATA_DIR   (MPIEXEC from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
MPIEXEC="${MPIEXEC:-mpiexec}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAILED: $1"; }

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

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
