#!/usr/bin/env bash
# Runs the whole test suite (GoogleTest under MPI with 1-4 ranks, CLI tests) with ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SSDR_BUILD"
ctest --output-on-failure "$@"
