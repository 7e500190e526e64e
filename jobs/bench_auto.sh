#!/usr/bin/env bash
# Issue 49's speed bar: `ssdr fit --method auto` against one default SODA fit of the same file,
# per panel data set, measured in the same run (see jobs/bench_auto.py). Uses build/ssdr.
#
#   jobs/bench_auto.sh                           # every panel set, 5 labeled per class, 2 ranks
#   RANKS=1 jobs/bench_auto.sh --sets iris,coil20 --regime 30pct
# Timings belong here, not in the tests. Run on an otherwise idle machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/jobs/env.sh"
SSDR_BUILD="${SSDR_BUILD:-$ROOT/build}"
[ -x "$SSDR_BUILD/ssdr" ] || { echo "bench_auto.sh: $SSDR_BUILD/ssdr not found; run jobs/build.sh first" >&2; exit 1; }
cd "$ROOT"
exec /usr/bin/python3 "$ROOT/jobs/bench_auto.py" --build "$SSDR_BUILD" "$@"
