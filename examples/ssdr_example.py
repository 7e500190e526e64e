"""ssdr from Python, on every rank of MPI_COMM_WORLD:

    mpiexec -n 2 python3 ssdr_example.py DATA.csv [--split-out S] [--embedding E.npy] [--predictions P.txt]

Every rank takes its block of rows of a labeled CSV (label first), keeps the label of the first
5 samples of each class (the others get -1: unlabeled), fits SODA (m = 2, seed 1) on the rows of
all ranks, embeds and labels its own rows, and rank 0 prints the 1-NN accuracy on the unlabeled
rows. The options write, on rank 0, the split (labeled/unlabeled per line, for `ssdr fit
--split`), the whole embedding (.npy) and the predicted labels (one per line), which equal the
command line's `ssdr fit --split S --embedding E.npy` and `ssdr predict` on any rank count.
With the installed ssdr: PYTHONPATH=<prefix>/lib/python3/dist-packages (Debian's Python) or
<prefix>/lib/python3.X/site-packages.
"""
import argparse

import numpy as np
from mpi4py import MPI

import ssdr

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("data")
parser.add_argument("--split-out")
parser.add_argument("--embedding")
parser.add_argument("--predictions")
args = parser.parse_args()

comm = MPI.COMM_WORLD
table = np.loadtxt(args.data, delimiter=",", ndmin=2)  # small data: every rank parses the file
labels, X = table[:, 0].astype(np.int64), table[:, 1:]
y = np.full_like(labels, -1)
for c in np.unique(labels):
    y[np.flatnonzero(labels == c)[:5]] = c  # the first 5 of each class stay labeled
n = len(labels)
lo, hi = n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size  # this rank's block of rows

est = ssdr.SODA(dim=2, seed=1).fit(X[lo:hi], y[lo:hi], comm=comm)
Y = est.transform(X[lo:hi])
predicted = est.predict(X[lo:hi])
hidden = np.where(y == -1, labels, -1)  # score counts the rows with a label: the unlabeled ones' true labels
accuracy = est.score(X[lo:hi], hidden[lo:hi])

Y_all, predicted_all = comm.gather(Y, root=0), comm.gather(predicted, root=0)
if comm.rank == 0:
    if args.split_out:
        with open(args.split_out, "w") as f:
            f.writelines("labeled\n" if v >= 0 else "unlabeled\n" for v in y)
    if args.embedding:
        np.save(args.embedding, np.vstack(Y_all))
    if args.predictions:
        np.savetxt(args.predictions, np.concatenate(predicted_all), fmt="%d")
    print("soda on %s: %d x %d, dim %d, accuracy unlabeled %.4f" % (args.data, n, X.shape[1], Y.shape[1], accuracy))
