#!/usr/bin/env bash
# Configures and builds ssdr (Release) into $SSDR_BUILD (default: ./build).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cmake -S "$SSDR_ROOT" -B "$SSDR_BUILD" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$SSDR_BUILD" -j "$(nproc)"
