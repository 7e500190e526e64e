#!/usr/bin/python3
"""Augmented Fashion-MNIST of 1 050 000 (or up to 10 500 000) samples as uncompressed IDX (read
by every rank at its own offset: ssdr fit --data DIR --format idx).

The 70 000 images (train then t10k of /usr/share/datasets/fashion-mnist, Debian package
dataset-fashion-mnist) in 15 variants, same labels; vacated pixels are 0:
   0 original
   1-4  shifted along x by +1, -1, +2, -2 pixels
   5-8  shifted along y by +1, -1, +2, -2 pixels
   9    mirrored left-right
  10-13 mirrored, then shifted along x by +1, -1 and along y by +1, -1
  14    mirrored, then shifted along x by +2
  15-97 the other shifts of up to 3 pixels along x and y (dx, dy in -3..3), unmirrored then
        mirrored, in a fixed order (every (mirror, dx, dy) once over variants 0-97)
  98-149 variants 0-51 at 85 % contrast (pixel values scaled by 0.85, rounded)
Rows are variant-major (all 70 000 of variant 0, then variant 1, ...), so any contiguous
block of 70 000 rows holds every class. --variants V writes the first V variants
(V = 4: 280 000 rows, the benchmark's third size; V = 15: 1 050 000 rows, 823 MB, the
default; V = 150: 10 500 000 rows, 8.2 GB, jobs/fashion_10m_soda.sh). The file is written
variant by variant: the generator holds 70 000 images at a time.

Usage: make_fashion_1m.py OUT_DIR [--variants V] [--force] [--source DIR]
Writes OUT_DIR/train-images-idx3-ubyte and OUT_DIR/train-labels-idx1-ubyte through temporary
names in OUT_DIR, renamed at the end (nothing partial is left behind on error).
"""
import argparse
import gzip
import os
import struct
import sys

import numpy as np

_FIRST = [(False, 0, 0), (False, 1, 0), (False, -1, 0), (False, 2, 0), (False, -2, 0),
          (False, 0, 1), (False, 0, -1), (False, 0, 2), (False, 0, -2),
          (True, 0, 0), (True, 1, 0), (True, -1, 0), (True, 0, 1), (True, 0, -1), (True, 2, 0)]
_REST = [(m, dx, dy) for m in (False, True) for dy in range(-3, 4) for dx in range(-3, 4)
         if (m, dx, dy) not in _FIRST]
_GEOMETRIC = [v + (1.0,) for v in _FIRST + _REST]  # 98: every (mirror, dx, dy) once
VARIANTS = _GEOMETRIC + [v[:3] + (0.85,) for v in _GEOMETRIC[:52]]  # 150 (mirror, dx, dy, contrast)


def read_idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if struct.unpack(">I", data[:4])[0] != magic:
        sys.exit(f"make_fashion_1m: '{path}': not an IDX file with magic {magic:#010x}")
    if magic == 0x803:
        n, r, c = struct.unpack(">III", data[4:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, r, c)
    (n,) = struct.unpack(">I", data[4:8])
    return np.frombuffer(data, np.uint8, offset=8)


def shift(img, dx, dy):
    """Shift images (n, 28, 28) by dx columns and dy rows, filling with 0."""
    out = np.zeros_like(img)
    h, w = img.shape[1:]
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    out[:, yd, xd] = img[:, ys, xs]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--variants", type=int, default=15)
    p.add_argument("--force", action="store_true")
    p.add_argument("--source", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    if not 1 <= a.variants <= len(VARIANTS):
        sys.exit(f"make_fashion_1m: --variants {a.variants}: expected 1..{len(VARIANTS)}")
    images, labels = [], []
    for part in ("train", "t10k"):
        images.append(read_idx(os.path.join(a.source, f"{part}-images-idx3-ubyte.gz"), 0x803))
        labels.append(read_idx(os.path.join(a.source, f"{part}-labels-idx1-ubyte.gz"), 0x801))
    X = np.concatenate(images)
    y = np.concatenate(labels)
    n0 = X.shape[0]
    n = n0 * a.variants
    os.makedirs(a.out, exist_ok=True)
    final_i = os.path.join(a.out, "train-images-idx3-ubyte")
    final_l = os.path.join(a.out, "train-labels-idx1-ubyte")
    for f in (final_i, final_l):
        if os.path.exists(f) and not a.force:
            sys.exit(f"make_fashion_1m: '{f}' exists (use --force to replace it)")
    tmp_i, tmp_l = final_i + ".part", final_l + ".part"
    try:
        with open(tmp_i, "wb") as fi, open(tmp_l, "wb") as fl:
            fi.write(struct.pack(">IIII", 0x803, n, 28, 28))
            fl.write(struct.pack(">II", 0x801, n))
            for v in range(a.variants):
                mirror, dx, dy, contrast = VARIANTS[v]
                img = X[:, :, ::-1] if mirror else X
                img = shift(img, dx, dy) if (dx or dy) else img
                if contrast != 1.0:
                    img = np.rint(img.astype(np.float32) * contrast).astype(np.uint8)
                fi.write(np.ascontiguousarray(img, dtype=np.uint8).tobytes())
                fl.write(y.tobytes())
                print(f"make_fashion_1m: variant {v + 1}/{a.variants} (mirror={mirror}, dx={dx}, dy={dy}, contrast={contrast})", flush=True)
        if os.path.getsize(tmp_i) != 16 + n * 784 or os.path.getsize(tmp_l) != 8 + n:
            raise RuntimeError("output size does not match the header")
        os.replace(tmp_i, final_i)
        os.replace(tmp_l, final_l)
    except BaseException:
        for f in (tmp_i, tmp_l):
            if os.path.exists(f):
                os.remove(f)
        raise
    print(f"make_fashion_1m: wrote {n} samples to {a.out}")


if __name__ == "__main__":
    main()
