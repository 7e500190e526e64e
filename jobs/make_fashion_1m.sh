#!/usr/bin/env bash
# Writes the augmented Fashion-MNIST of 1 050 000 samples (15 variants of every image, see
# jobs/make_fashion_1m.py) as uncompressed IDX that every rank reads at its own offset.
#   jobs/make_fashion_1m.sh [OUT_DIR] [--variants V] [--force]
# OUT_DIR defaults to ${SSDR_DATA:-$HOME/ssdr-data}/fashion-1m (823 MB).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${SSDR_DATA:-$HOME/ssdr-data}/fashion-1m"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then out="$1"; shift; fi
# Debian's interpreter, where python3-numpy lives (a pyenv python3 may shadow it on PATH).
py="${SSDR_PYTHON:-/usr/bin/python3}"
exec "$py" "$here/make_fashion_1m.py" "$out" "$@"
