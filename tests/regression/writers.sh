#!/usr/bin/env bash
# Writers never lose data: every output (the model through MPI-IO, the embedding as NPY, HDF5
# and CSV, convert's HDF5 and NPY, Python's Estimator.save) on a full file system or past a
# per-process file-size limit (what a quota does) ends with one error line on every rank and
# a non-zero exit (never a crash), leaves the previous file byte for byte, and leaves no
# temporary file (*.tmp.*, *.reserve) behind.
# The full file system is a 64 KiB tmpfs: root only (mount); skipped with a line otherwise.
# Usage: writers.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$(cd "$2" && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

if [ "$(id -u)" -ne 0 ] || ! command -v mount >/dev/null; then
  echo "skipped: mounting a small tmpfs needs root"
  exit 0
fi
full="$tmp/full"
mkdir -p "$full"
if ! mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
  echo "skipped: cannot mount a tmpfs here (a container without CAP_SYS_ADMIN?)"
  exit 0
fi
trap 'umount "$full" 2>/dev/null; rm -rf "$tmp"' EXIT

fit_small=(fit --method soda --data "$DATA/iris.csv" --labeled-per-class 3 --quiet)
fit_big=(fit --method soda --data "$DATA/digits.csv" --labeled-per-class 5 --quiet)

# leftovers DIR: the temporary files a writer left in DIR (none expected).
leftovers() { find "$1" -name '*.tmp.*' -o -name '*.reserve' | tr '\n' ' '; }

# judge NAME RC OUT TARGET [SHA1_BEFORE]: the run failed cleanly (rc 1, not a signal), said
# so in one "ssdr: error: cannot write" line naming TARGET (Open MPI's own OMPIO lines aside),
# and TARGET holds its old bytes (or does not exist), with no temporary file beside it.
judge() {
  local name="$1" rc="$2" out="$3" target="$4" before="${5:-}"
  local lines
  lines=$(grep -c '^ssdr: error:' "$out")
  if [ "$rc" -ne 1 ]; then
    bad "$name: exit $rc (expected 1): $(tail -2 "$out" | tr '\n' ' ')"
  elif [ "$lines" -ne 1 ] || ! grep -q "^ssdr: error: cannot write '$target'" "$out"; then
    bad "$name: expected one 'cannot write '$target'' line, got: $(grep -v '^mca_fbtl' "$out" | tr '\n' ' ')"
  elif [ -n "$before" ] && [ "$(sha1sum <"$target")" != "$before" ]; then
    bad "$name: the previous $target changed"
  elif [ -z "$before" ] && [ -e "$target" ]; then
    bad "$name: a partial $target was left"
  elif [ -n "$(leftovers "$(dirname "$target")")" ]; then
    bad "$name: left $(leftovers "$(dirname "$target")")"
  else
    ok "$name ($(grep '^ssdr: error:' "$out"))"
  fi
}

run() { "$MPIEXEC" -n 2 "$SSDR" "$@" >"$tmp/out" 2>&1; }
# run_limited KIB ARGS...: every rank may write files of at most KIB KiB (ulimit -f; SIGXFSZ
# ignored, so a write past it fails with EFBIG as at a quota). Only the ranks are limited:
# mpiexec's own files (PMIx shared memory) are not.
run_limited() {
  local kib="$1"; shift
  "$MPIEXEC" -n 2 bash -c 'trap "" XFSZ; ulimit -f "$0"; exec "$@"' "$kib" "$SSDR" "$@" >"$tmp/out" 2>&1
}

# 1. A full file system: a good model and embedding are there, the new ones do not fit.
"$SSDR" "${fit_small[@]}" --model "$full/m.model" --embedding "$full/e.npy" >/dev/null 2>&1 \
  || bad "setup: a small model and embedding on the tmpfs"
cp "$full/e.npy" "$full/e.h5" 2>/dev/null  # any old bytes: the writer must not touch them
cp "$full/e.npy" "$full/e.csv" 2>/dev/null
head -c "$(( $(df -B1 --output=avail "$full" | tail -1) - 2048 ))" /dev/zero >"$full/filler" 2>/dev/null
for f in m.model e.npy e.h5 e.csv; do eval "sum_$(echo "$f" | tr . _)=\"\$(sha1sum <\"\$full/\$f\")\""; done
run "${fit_big[@]}" --model "$full/m.model"; judge "full disk: --model" $? "$tmp/out" "$full/m.model" "$sum_m_model"
run "${fit_big[@]}" --embedding "$full/e.npy"; judge "full disk: --embedding .npy" $? "$tmp/out" "$full/e.npy" "$sum_e_npy"
run "${fit_big[@]}" --embedding "$full/e.h5"; judge "full disk: --embedding .h5" $? "$tmp/out" "$full/e.h5" "$sum_e_h5"
run "${fit_big[@]}" --embedding "$full/e.csv"; judge "full disk: --embedding .csv" $? "$tmp/out" "$full/e.csv" "$sum_e_csv"
run convert --data "$DATA/digits.csv" --quiet --output "$full/x.h5"; judge "full disk: convert --output .h5" $? "$tmp/out" "$full/x.h5"
run convert --data "$DATA/digits.csv" --quiet --output "$full/x.npy" --labels-output "$full/y.npy"; judge "full disk: convert --output .npy" $? "$tmp/out" "$full/x.npy"

# Python: Estimator.save raises ssdr.Error (a ValueError) on both ranks; the interpreter lives.
cat >"$tmp/save.py" <<'PY'
import sys
import numpy as np
from mpi4py import MPI
import ssdr
comm = MPI.COMM_WORLD
data = np.loadtxt(sys.argv[1], delimiter=",")
X, y = data[:, 1:], data[:, 0].astype(int)
y[np.arange(len(y)) % 10 != 0] = -1  # a few labeled per class
lo, hi = comm.rank * len(y) // comm.size, (comm.rank + 1) * len(y) // comm.size
est = ssdr.KSODA(landmarks=300).fit(X[lo:hi], y[lo:hi], comm=comm)  # Nystrom: a big model in a second
try:
    est.save(sys.argv[2], comm=comm)
    print(f"rank {comm.rank}: saved")
except ssdr.Error as e:
    print(f"rank {comm.rank}: raised {type(e).__name__}: {e}")
PY
PYDIR="$(dirname "$SSDR")/python"
if [ ! -d "$PYDIR/ssdr" ]; then
  echo "skipped: Python Estimator.save (the Python package is not built)"
else
PYTHONPATH="$PYDIR" "$MPIEXEC" -n 2 "$PY" "$tmp/save.py" "$DATA/digits.csv" "$full/m.model" >"$tmp/out" 2>&1
rc=$?
# (the two ranks' lines may interleave within a line: count the matches, not the lines)
if [ "$rc" -eq 0 ] && [ "$(grep -o "raised Error: cannot write '$full/m.model'" "$tmp/out" | wc -l)" -eq 2 ] \
   && [ "$(sha1sum <"$full/m.model")" = "$sum_m_model" ] && [ -z "$(leftovers "$full")" ]; then
  ok "full disk: Python Estimator.save raises ssdr.Error on both ranks"
else
  bad "full disk: Python Estimator.save (exit $rc): $(tr '\n' ' ' <"$tmp/out")"
fi
fi
rm -f "$full/filler"

# 2. A quota (a per-process file-size limit): the space check passes, a write stops short.
q="$tmp/quota"
mkdir -p "$q"
"$SSDR" "${fit_small[@]}" --model "$q/m.model" --embedding "$q/e.npy" >/dev/null 2>&1 || bad "setup: quota files"
cp "$q/e.npy" "$q/e.h5"
cp "$q/e.npy" "$q/e.csv"
for f in m.model e.npy e.h5 e.csv; do
  before="$(sha1sum <"$q/$f")"
  opt=--embedding
  [ "$f" = m.model ] && opt=--model
  run_limited 24 fit --method ksoda --landmarks 300 --data "$DATA/digits.csv" --labeled-per-class 5 --quiet "$opt" "$q/$f"
  judge "quota: ${opt} ${f#*.}" $? "$tmp/out" "$q/$f" "$before"
done
run_limited 24 convert --data "$DATA/digits.csv" --quiet --output "$q/x.h5"; judge "quota: convert --output .h5" $? "$tmp/out" "$q/x.h5"
# An HDF5 file larger than its 1 MiB metadata reserve: the limit cuts the rows' write itself.
"$PY" -c 'import numpy as np; r = np.random.default_rng(0); np.savetxt("'"$q"'/big.csv", np.column_stack([np.arange(4000) % 3, r.random((4000, 60))]), delimiter=",", fmt="%.6g")'
run_limited 1400 convert --data "$q/big.csv" --quiet --output "$q/x.h5"; judge "quota: convert --output .h5 cut in its rows" $? "$tmp/out" "$q/x.h5"
run_limited 1400 convert --data "$q/big.csv" --quiet --output "$q/x.npy" --labels-output "$q/y.npy"; judge "quota: convert --output .npy cut in its rows" $? "$tmp/out" "$q/x.npy"

# 3. The same writers with room: they still succeed (the checks refuse nothing that fits).
"$MPIEXEC" -n 2 "$SSDR" "${fit_small[@]}" --model "$q/m2.model" --embedding "$q/e2.h5" >/dev/null 2>&1 \
  && [ -s "$q/m2.model" ] && [ -s "$q/e2.h5" ] && [ -z "$(leftovers "$q")" ] \
  && ok "with room: the model and an HDF5 embedding are written, nothing left beside them" \
  || bad "with room: the model and HDF5 embedding"

# 4. A rank killed while the embedding is written: mpiexec stops the writer with SIGTERM, and
# the writer removes its temporary file. The writing rank's pid is in the temporary name; the
# other rank is killed once that file exists (Fashion-MNIST's 70 000 x 784 embedding of 1nn
# takes seconds to write as CSV). Skipped without the data set.
FM=/usr/share/datasets/fashion-mnist
if [ -d "$FM" ]; then
  k="$tmp/killed"
  mkdir -p "$k"
  # Open MPI's default: SIGKILL 1 s after the SIGTERM (ctest sets 0, which would leave the
  # writer no time to run its handler).
  OMPI_MCA_odls_base_sigkill_timeout=1 "$MPIEXEC" -n 2 "$SSDR" fit --method 1nn --data "$FM" --labeled-per-class 20 --transductive-fraction 0.2 -q \
    --embedding "$k/e.csv" >"$k/out" 2>&1 &
  launcher=$!
  for _ in $(seq 1 1200); do
    compgen -G "$k/e.csv.tmp.*" >/dev/null && break
    sleep 0.05
  done
  writer=$(compgen -G "$k/e.csv.tmp.*" | head -1 | sed 's/.*\.tmp\.//')
  other=""
  [ -n "$writer" ] && other=$(pgrep -f -- "--embedding $k/e.csv" | grep -vx "$writer" | grep -vx "$launcher" | head -1)
  [ -n "$other" ] && kill -KILL "$other"
  wait "$launcher"
  rc=$?
  if [ -n "$other" ] && [ "$rc" -ne 0 ] && [ -z "$(ls -A "$k" | grep -v '^out$')" ] \
     && grep -q "terminated by SIGTERM" "$k/out"; then
    ok "a rank killed mid-write: the writer stopped by SIGTERM removed e.csv.tmp.$writer (exit $rc)"
  else
    bad "a rank killed mid-write (writer ${writer:-?}, killed ${other:-none}, exit $rc): left $(ls -A "$k" | tr '\n' ' ')"
  fi
else
  echo "skipped: a rank killed mid-write (no $FM)"
fi

finish
