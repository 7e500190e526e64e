# Shared by the CLI regression scripts (sourced, not a test: ctest globs *.sh only).
# Sets MPIEXEC (from the environment, default mpiexec), a temporary folder $tmp removed on
# exit, the counters and ok/bad, and finish (prints the tally; fails when a case failed).
MPIEXEC="${MPIEXEC:-mpiexec}"
# The Python the build found (ctest passes SSDR_PYTHON), else Debian's: a python3 first on PATH
# (pyenv) may have no numpy.
PY="${SSDR_PYTHON:-/usr/bin/python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAILED: $1"; }
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
