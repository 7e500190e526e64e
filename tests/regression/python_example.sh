#!/usr/bin/env bash
# examples/ssdr_distributed.py, the distributed Python example: each rank maps its block of an
# NPY file (np.load mmap) or reads its hyperslab of an HDF5 file (h5py), fits SODA across the
# ranks; the accuracy is the same from NPY and HDF5 and on 1 and 2 ranks; --search
# (GridSearchCV on rank 0) and --plot (matplotlib) run where scikit-learn and matplotlib are.
# Usage: python_example.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$2"
EXAMPLE="$(cd "$DATA/../../examples" && pwd)/ssdr_distributed.py"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
PYDIR="$(dirname "$SSDR")/python"
if [ ! -d "$PYDIR/ssdr" ]; then
  echo "skipped: the Python package is not built (python/ssdr)"
  exit 0
fi
"$SSDR" convert --data "$DATA/digits.csv" --output "$tmp/d.npy" --labels-output "$tmp/d_y.npy" -q &&
  "$SSDR" convert --data "$DATA/digits.csv" --output "$tmp/d.h5" -q || { bad "convert digits"; finish; exit 1; }
run() {  # ranks, output file, example arguments...
  local np="$1" out="$2"
  shift 2
  PYTHONPATH="$PYDIR" "$MPIEXEC" -n "$np" "$PY" "$EXAMPLE" "$@" >"$out" 2>&1
}
acc() { sed -n 's/.*accuracy on the unlabeled samples \([0-9.]*\).*/\1/p' "$1"; }
if run 1 "$tmp/npy1" "$tmp/d.npy" --labels "$tmp/d_y.npy" --labeled-per-class 5 &&
   run 2 "$tmp/npy2" "$tmp/d.npy" --labels "$tmp/d_y.npy" --labeled-per-class 5 &&
   [ -n "$(acc "$tmp/npy1")" ] && [ "$(acc "$tmp/npy1")" = "$(acc "$tmp/npy2")" ]; then
  ok "NPY blocks by mmap: the same accuracy on 1 and 2 ranks ($(acc "$tmp/npy2"))"
else
  bad "NPY blocks by mmap on 1 and 2 ranks"; cat "$tmp/npy1" "$tmp/npy2"
fi
if ! "$PY" -c "import h5py" 2>/dev/null; then
  echo "skipped: HDF5 input (h5py is not installed: python3-h5py-mpi)"
elif run 2 "$tmp/h5" "$tmp/d.h5" --labeled-per-class 5 && [ "$(acc "$tmp/h5")" = "$(acc "$tmp/npy2")" ]; then
  ok "HDF5 hyperslabs by h5py: the accuracy of the NPY run"
else
  bad "HDF5 hyperslabs by h5py"; cat "$tmp/h5"
fi
if ! "$PY" -c "import sklearn, matplotlib" 2>/dev/null; then
  echo "skipped: --search and --plot (scikit-learn or matplotlib is not installed)"
elif run 2 "$tmp/search" "$tmp/d.npy" --labels "$tmp/d_y.npy" --labeled-per-class 5 --search --plot "$tmp/e.png" &&
     grep -q "GridSearchCV on rank 0: {" "$tmp/search" && [ -s "$tmp/e.png" ]; then
  ok "GridSearchCV on rank 0, then the fit on every rank, and the plot"
else
  bad "--search and --plot"; cat "$tmp/search"
fi
finish
