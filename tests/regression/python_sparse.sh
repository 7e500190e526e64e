#!/usr/bin/env bash
# The Python package's sparse door against the command line's: scipy.sparse CSR rows fitted by
# ssdr.SODA(pca_dim=...) (each rank its block) give the embedding of `ssdr fit --sparse yes
# --pca-dim ... --split ... --embedding`, bit for bit, on 1 and 2 ranks; and the soft labels
# of `ssdr fit --soft-labels` equal the Python label distributions' source.
# Usage: python_sparse.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$2"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
PYDIR="$(dirname "$SSDR")/python"
if [ ! -d "$PYDIR/ssdr" ] || ! "$PY" -c "import scipy.sparse, mpi4py" 2>/dev/null; then
  echo "skipped: the Python package or scipy is not built/installed (python/ssdr, python3-scipy)"
  exit 0
fi
# Every 6th sample labeled, the rest unlabeled (transductive).
awk '{ print (NR % 6 == 1) ? "labeled" : "unlabeled" }' "$DATA/wine.libsvm" >"$tmp/split.txt"
cat >"$tmp/compare.py" <<'PY'
import sys
import numpy as np
import scipy.sparse as sp
from mpi4py import MPI
import ssdr

comm = MPI.COMM_WORLD
path, split, cli, soft = sys.argv[1:5]
rows, cols, vals, labels = [], [], [], []
for i, line in enumerate(open(path)):
    parts = line.split()
    labels.append(int(float(parts[0])))
    for item in parts[1:]:
        j, v = item.split(":")
        rows.append(i), cols.append(int(j) - 1), vals.append(float(v))
n = len(labels)
X = sp.csr_matrix((vals, (rows, cols)), shape=(n, max(cols) + 1))
roles = [r.strip() for r in open(split)]
y = np.array([l if r == "labeled" else -1 for l, r in zip(labels, roles)])
lo, hi = n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size
est = ssdr.SODA(pca_dim=5, seed=1).fit(X[lo:hi], y[lo:hi])
E = np.vstack(comm.allgather(est.transform(X[lo:hi])))
D = np.vstack(comm.allgather(est.label_distributions_))
if comm.rank == 0:
    ref, F = np.load(cli), np.load(soft)
    c = F.shape[1] - 1
    same = E.shape == ref.shape and np.array_equal(E, ref)
    mass = F[:, :c].sum(axis=1, keepdims=True)
    same_soft = np.array_equal(D, F[:, :c] / mass)
    print("embedding", "same bits" if same else "DIFFERS", "soft labels", "same bits" if same_soft else "DIFFER")
    sys.exit(0 if same and same_soft else 1)
PY
for np in 1 2; do
  if "$MPIEXEC" -n "$np" "$SSDR" fit --method soda --data "$DATA/wine.libsvm" --sparse yes --pca-dim 5 --seed 1 \
       --split "$tmp/split.txt" --embedding "$tmp/cli$np.npy" --soft-labels "$tmp/soft$np.npy" -q >"$tmp/out" 2>&1 &&
     PYTHONPATH="$PYDIR" "$MPIEXEC" -n "$np" "$PY" "$tmp/compare.py" "$DATA/wine.libsvm" "$tmp/split.txt" \
       "$tmp/cli$np.npy" "$tmp/soft$np.npy" >"$tmp/cmp" 2>&1; then
    ok "Python sparse CSR fit on $np rank(s) = ssdr fit --sparse yes: $(cat "$tmp/cmp")"
  else
    bad "Python sparse CSR fit on $np rank(s)"; cat "$tmp/out" "$tmp/cmp"
  fi
done
finish
