#!/usr/bin/env bash
# Every shell and Python block of README.md and docs/*.md runs as written, from a scratch folder
# laid out like the repository (tests/tools/run_doc_examples.py); a block that cannot run here
# (installs, cluster submission, 10^6 samples) carries a visible skip marker with its reason and
# is listed. ~1-2 min.
# Usage: doc_examples.sh SSDR_BINARY DATA_DIR   (SSDR_PYTHON and MPIEXEC from the environment)
set -u
SSDR="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "$(dirname "$SSDR")" && pwd)"
if "$PY" "$root/tests/tools/run_doc_examples.py" "$root" "$build" "$PY" "$MPIEXEC" >"$tmp/out" 2>&1; then
  cat "$tmp/out"
  ok "every runnable block of README.md and docs/ ran ($(tail -1 "$tmp/out"))"
else
  cat "$tmp/out"
  bad "a documentation block failed"
fi
finish
