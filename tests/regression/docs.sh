#!/usr/bin/env bash
# The documentation cannot drift from the code: docs/methods.md is exactly what
# `ssdr methods --markdown` prints from the method and parameter tables; every public
# declaration of include/ssdr/ has a doc comment (tests/tools/check_doc_comments.py); every
# docs/ page and the README link only to files that exist; the docs' defaults are --help's; `ssdr --version` names the version,
# the commit, the build and the libraries.
# Usage: docs.sh SSDR_BINARY DATA_DIR   (SSDR_PYTHON from the environment)
set -u
SSDR="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

"$SSDR" methods --markdown >"$tmp/methods.md" 2>"$tmp/err"
if [ $? -eq 0 ] && diff -u "$root/docs/methods.md" "$tmp/methods.md" >"$tmp/diff"; then
  ok "docs/methods.md is what 'ssdr methods --markdown' prints ($(grep -c '^| `' "$tmp/methods.md") table rows)"
else
  bad "docs/methods.md differs from 'ssdr methods --markdown' (regenerate: build/ssdr methods --markdown > docs/methods.md):"
  head -20 "$tmp/diff" "$tmp/err"
fi
# Every method and every parameter of the tables has its row.
methods=$("$SSDR" methods | grep -cE '^  [a-z0-9]')
rows=$(sed -n '/^## Methods/,/^## Parameters/p' "$tmp/methods.md" | grep -c '^| `')
[ "$methods" -gt 10 ] && [ "$methods" -eq "$rows" ] && ok "one row per method ($rows)" \
  || bad "methods: $methods in 'ssdr methods', $rows rows in the page"

# The docs and the help texts agree on every default both state (a doc once said --scaling
# defaults to none; it is the method's).
if "$PY" "$root/tests/tools/check_doc_defaults.py" "$SSDR" "$root" >"$tmp/defaults" 2>&1; then
  ok "$(tail -1 "$tmp/defaults")"
else
  bad "a default in the docs differs from --help:"; grep -v '^ok:' "$tmp/defaults"
fi
if "$PY" "$root/tests/tools/check_doc_comments.py" "$root/include/ssdr" >"$tmp/doc" 2>&1; then
  ok "$(tail -1 "$tmp/doc")"
else
  bad "public declarations without a doc comment:"; cat "$tmp/doc"
fi

# Relative links of the README and docs/ resolve to files of the repository.
broken=""
for page in "$root/README.md" "$root"/docs/*.md "$root/CHANGELOG.md"; do
  [ -f "$page" ] || { broken+=" missing:$page"; continue; }
  while IFS= read -r link; do
    target="${link%%#*}"
    [ -z "$target" ] && continue
    case "$target" in http:*|https:*|mailto:*) continue ;; esac
    [ -e "$(dirname "$page")/$target" ] || broken+=" ${page#$root/}->$target"
  done < <(grep -oE '\]\([^) ]+\)' "$page" | sed -E 's/^\]\(//; s/\)$//')
done
[ -z "$broken" ] && ok "every relative link of README.md, CHANGELOG.md and docs/ resolves" || bad "broken links:$broken"

"$SSDR" --version >"$tmp/version" 2>&1
if [ $? -eq 0 ] && grep -qE '^ssdr [0-9]+\.[0-9]+\.[0-9]+ \(commit [^)]+\)$' "$tmp/version" \
   && grep -q '^build: ' "$tmp/version" && grep -q '^model format: ' "$tmp/version" \
   && grep -q '^petsc: ' "$tmp/version" && grep -q '^slepc: ' "$tmp/version" && grep -q '^hdf5: ' "$tmp/version" \
   && grep -q '^mpi: ' "$tmp/version" && grep -q '^blas: ' "$tmp/version"; then
  ok "ssdr --version: $(head -1 "$tmp/version"), build, model format, PETSc, SLEPc, HDF5, MPI, BLAS"
else
  bad "ssdr --version:"; cat "$tmp/version"
fi
finish
