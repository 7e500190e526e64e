"""The propagation's halo at rank counts beyond this machine: a kNN graph written by
`ssdr fit --graph-out`, symmetrized as ssdr symmetrizes it, cut into P contiguous ranges of
rows in file order and in Cuthill-McKee order (the "levels" partitioning; SciPy's
reverse_cuthill_mckee, whose tie-breaks differ from ssdr's, reversed), and for each P the
mean number of other ranges a range has an edge to (messages per product per rank) and of
rows it fetches from them (halo rows per product per rank), with the file-order bound
min(P - 1, 2k n/P).

    /usr/bin/python3 jobs/partners.py GRAPH.h5 [P ...]     (default P: 8 16 ... 256)
"""
import sys

import h5py
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with h5py.File(sys.argv[1], "r") as f:
        index = f["knn/index"][:]
    ps = [int(p) for p in sys.argv[2:]] or [8, 16, 32, 64, 128, 256]
    n, k = index.shape
    rows = np.repeat(np.arange(n), k)
    A = sp.csr_matrix((np.ones(n * k), (rows, index.ravel())), shape=(n, n))
    A = ((A + A.T) > 0).tocoo()
    keep = A.row != A.col
    r, c = A.row[keep], A.col[keep]
    order = reverse_cuthill_mckee(A.tocsr(), symmetric_mode=True)[::-1]
    level_pos = np.empty(n, dtype=np.int64)
    level_pos[order] = np.arange(n)
    print("| P | order | messages per product per rank | halo rows per product per rank | bound min(P-1, 2kn/P) |")
    print("|---|---|---|---|---|")
    for P in ps:
        for name, pos in (("file", np.arange(n, dtype=np.int64)), ("levels", level_pos)):
            part = pos * P // n
            a, b = part[r], part[c]
            cross = a != b
            pairs = np.unique(a[cross] * P + b[cross]).size
            halo = np.unique(a[cross].astype(np.int64) * n + c[cross]).size
            print(f"| {P} | {name} | {pairs / P:.1f} | {halo / P:.0f} | {min(P - 1, 2 * k * n / P):.0f} |")


if __name__ == "__main__":
    main()
