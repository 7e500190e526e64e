#!/usr/bin/python3
"""A tall, thin data set: N samples x d float32 features in c Gaussian blobs, as NPY (data and
labels), the benchmark of issue 30 (10^8 x 4 float32 is 1.6 GB).

Class k's centre is a fixed random point of [-10, 10]^d (seeded); its samples are the centre
plus standard normal noise. Labels cycle 0, 1, ..., c-1 down the rows, so every contiguous
block of rows holds every class and the file order is a worst case for locality (the kNN
neighbours of a row are spread over the whole file). Written in chunks of --chunk rows:
never N x d in memory. Both files are written under temporary names and renamed at the end.

Usage: make_tall.py OUT_DIR --n N [--d 4] [--classes 10] [--seed 0] [--chunk 1000000]
Writes OUT_DIR/tall_X.npy (<f4, N x d) and OUT_DIR/tall_y.npy (<i4, N).
"""
import argparse
import os
import sys

import numpy as np


def npy_header(shape, descr):
    """The NPY v1.0 header for a C-order array, padded to a multiple of 64 bytes."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else ""))
    total = 10 + len(d) + 1
    d += " " * ((total + 63) // 64 * 64 - total) + "\n"
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode("latin1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--d", type=int, default=4)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    a = ap.parse_args()
    if a.n < a.classes or a.d < 1 or a.classes < 2 or a.chunk < 1:
        sys.exit("make_tall.py: expected --n >= --classes >= 2, --d >= 1, --chunk >= 1")
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    centres = rng.uniform(-10, 10, size=(a.classes, a.d)).astype(np.float32)
    xp, yp = os.path.join(a.out, "tall_X.npy"), os.path.join(a.out, "tall_y.npy")
    xt, yt = xp + ".tmp", yp + ".tmp"
    try:
        with open(xt, "wb") as fx, open(yt, "wb") as fy:
            fx.write(npy_header((a.n, a.d), "<f4"))
            fy.write(npy_header((a.n,), "<i4"))
            for start in range(0, a.n, a.chunk):
                rows = min(a.chunk, a.n - start)
                y = ((np.arange(start, start + rows, dtype=np.int64)) % a.classes).astype("<i4")
                x = centres[y] + rng.standard_normal((rows, a.d), dtype=np.float32)
                fx.write(x.astype("<f4", copy=False).tobytes())
                fy.write(y.tobytes())
        os.replace(xt, xp)
        os.replace(yt, yp)
    except BaseException:
        for p in (xt, yt):
            if os.path.exists(p):
                os.unlink(p)
        raise
    print("wrote %s (%d x %d float32) and %s" % (xp, a.n, a.d, yp))


if __name__ == "__main__":
    main()
