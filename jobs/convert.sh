#!/usr/bin/env bash
# Converts a data set once into a format every rank reads in parallel (HDF5 or NPY):
#   bash jobs/convert.sh IN OUT.h5 [RANKS=2] [extra ssdr convert options...]
#   bash jobs/convert.sh fashion.csv.gz fashion.h5
#   bash jobs/convert.sh data.libsvm data.npy 4 --labels-output data_labels.npy
# IN is any format ssdr reads (CSV, LIBSVM, gzip'd text, IDX, NPY, HDF5). Arguments are passed
# to mpiexec as an argument vector, never through a shell.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bash jobs/convert.sh IN OUT.h5|OUT.npy [RANKS] [ssdr convert options]" >&2
  exit 2
fi
in="$1"
out="$2"
ranks="${3:-2}"
shift $(( $# >= 3 ? 3 : 2 ))
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/jobs/env.sh"
ssdr="${SSDR:-$here/build/ssdr}"
exec "${MPIEXEC:-mpiexec}" -n "$ranks" "$ssdr" convert --data "$in" --output "$out" "$@"
