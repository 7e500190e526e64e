"""ssdr from Python on a data set no rank reads whole: every rank maps only its own block of
rows, the fit runs across all ranks, a parameter search runs on one rank, and rank 0 draws the
2-D embedding.

    ssdr convert --data /usr/share/datasets/fashion-mnist --output fm.npy --labels-output fm_y.npy
    mpiexec -n 2 python3 ssdr_distributed.py fm.npy --labels fm_y.npy --plot fm.png
    mpiexec -n 2 python3 ssdr_distributed.py fm.h5 --plot fm.png     # HDF5: /X and /y

Rows: an .npy file is memory-mapped (np.load(mmap_mode="r")) and each rank copies its block
out of the map; an .h5 file is opened with h5py's MPI driver (Debian: python3-h5py-mpi; the
serial h5py reads its block too, just not collectively). The labels (n integers) are read by
every rank: --labeled-per-class P keeps the labels of the first P samples of each class (by
global index, so the split does not depend on the rank count), the rest are unlabeled (-1).
--search runs GridSearchCV over SODA's alpha_u and mu_scale on rank 0 alone (comm=COMM_SELF)
on the labeled samples of its block, while the other ranks wait, then every rank fits with the
chosen values. --plot (rank 0, matplotlib) colours the embedding by class and marks the
labeled samples.
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI

import ssdr

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("data", help="rows: .npy (n x d, any numeric type) or .h5 (data set /X)")
parser.add_argument("--labels", help=".npy of n integer labels (with .npy data); HDF5: data set /y")
parser.add_argument("--labeled-per-class", type=int, default=20)
parser.add_argument("--rows", type=int, default=0, help="use the first ROWS samples only (0: all)")
parser.add_argument("--search", action="store_true", help="GridSearchCV on rank 0 before the fit")
parser.add_argument("--plot", help="PNG of the 2-D embedding (rank 0)")
args = parser.parse_args()

comm = MPI.COMM_WORLD


def block(n):
    """This rank's rows [lo, hi) of n: contiguous blocks in rank order."""
    return n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size


if args.data.endswith((".h5", ".hdf5")):
    import h5py
    try:
        f = h5py.File(args.data, "r", driver="mpio", comm=comm)
    except (ValueError, OSError):  # a serial h5py: each rank still reads only its block
        f = h5py.File(args.data, "r")
    n = f["/X"].shape[0] if args.rows == 0 else min(args.rows, f["/X"].shape[0])
    lo, hi = block(n)
    X = np.asarray(f["/X"][lo:hi], dtype=np.float64)
    labels = np.asarray(f["/y"][:n], dtype=np.int64)
    f.close()
else:
    rows = np.load(args.data, mmap_mode="r")  # nothing is read until a block is copied out
    n = rows.shape[0] if args.rows == 0 else min(args.rows, rows.shape[0])
    lo, hi = block(n)
    X = np.array(rows[lo:hi], dtype=np.float64)
    labels = np.load(args.labels)[:n].astype(np.int64)

y_all = np.full(n, -1)
for c in np.unique(labels):
    y_all[np.flatnonzero(labels == c)[:args.labeled_per_class]] = c
y = y_all[lo:hi]

params = {"dim": 2, "seed": 1}
if args.search:
    chosen = None
    if comm.rank == 0:
        from sklearn.model_selection import GridSearchCV, StratifiedKFold
        mine = y >= 0  # the labeled samples of rank 0's block, scored by 3-fold cross-validation
        grid = {"alpha_u": [0.9, 0.99], "mu_scale": [0.01, 0.1]}
        search = GridSearchCV(ssdr.SODA(**params), grid, cv=StratifiedKFold(3))
        search.fit(X[mine], y[mine], comm=MPI.COMM_SELF)  # rank 0 alone: its own communicator
        chosen = search.best_params_
        print("GridSearchCV on rank 0: %s (cross-validated accuracy %.3f)" % (chosen, search.best_score_))
    params.update(comm.bcast(chosen, root=0))

est = ssdr.SODA(**params).fit(X, y, comm=comm)
Y = est.transform(X)
truth = np.where(y < 0, labels[lo:hi], -1)  # score counts rows given a label: the unlabeled ones' truth
accuracy = est.score(X, truth)
Y_all = comm.gather(Y, root=0)
if comm.rank == 0:
    print("soda on %s: %d x %d on %d ranks, accuracy on the unlabeled samples %.4f"
          % (args.data, n, X.shape[1], comm.size, accuracy))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        E = np.vstack(Y_all)
        fig, ax = plt.subplots(figsize=(7, 6), dpi=100)
        cmap = plt.get_cmap("tab10")
        for k, c in enumerate(np.unique(labels)):
            pts = (labels == c) & (y_all < 0)
            ax.scatter(E[pts, 0], E[pts, 1], s=2, color=cmap(k % 10), alpha=0.35, label=str(c))
        marked = y_all >= 0
        ax.scatter(E[marked, 0], E[marked, 1], s=36, c=[cmap(int(np.searchsorted(np.unique(labels), c)) % 10)
                                                         for c in labels[marked]], marker="*", edgecolors="black",
                   linewidths=0.5)
        ax.scatter([], [], s=36, c="white", marker="*", edgecolors="black", linewidths=0.5,
                   label="labeled (%d per class)" % args.labeled_per_class)
        ax.set_title("SODA, %d samples, %d labeled per class, %d ranks: unlabeled accuracy %.3f"
                     % (n, args.labeled_per_class, comm.size, accuracy), fontsize=9)
        ax.legend(markerscale=3, fontsize=7, loc="best", ncol=2)
        fig.tight_layout()
        fig.savefig(args.plot)
        print("wrote %s" % args.plot)
sys.exit(0)
