#!/usr/bin/env bash
# Configures and builds ssdr (Release) into $SSDR_BUILD (default: ./build): the `ssdr` program
# and the Python module (target ssdr_programs), what the main job and the docs' examples run.
# The test suite is built by jobs/test.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cmake -S "$SSDR_ROOT" -B "$SSDR_BUILD" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# GNU nproc honours OMP_NUM_THREADS, which env.sh sets to 1 for the ranks: ask for the cores.
cmake --build "$SSDR_BUILD" -j "$(env -u OMP_NUM_THREADS nproc)" --target ssdr_programs
