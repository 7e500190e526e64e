#!/usr/bin/env bash
# Builds the test programs (everything of the build, `all`; jobs/build.sh built only ssdr and
# the Python module) and runs the whole test suite (GoogleTest under MPI with 1-4 ranks, CLI,
# Python and doc-example tests) with ctest. Arguments go to ctest (-R NAME, -j N, ...).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if [ ! -f "$SSDR_BUILD/CMakeCache.txt" ]; then
  echo "jobs/test.sh: $SSDR_BUILD is not configured: run jobs/build.sh first" >&2
  exit 2
fi
cmake --build "$SSDR_BUILD" -j "$(env -u OMP_NUM_THREADS nproc)"
cd "$SSDR_BUILD"
ctest --output-on-failure "$@"
