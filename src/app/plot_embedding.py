"""ssdr plot: a 2-D scatter of an embedding, coloured by class name, unlabeled rows grey.

Run by `ssdr plot` and `ssdr fit --plot` (with the Python CMake found, /usr/bin/python3 by
default) with an argument vector, never through a shell. Reads:
  - CSV written by ssdr (header `id[,label|prediction],y1..ym`): the label column colours;
  - NPY (n x m float) with optional --labels LABELS.npy (integers, -1 unlabeled, or strings);
  - HDF5 (/embedding, or --dataset NAME) with optional --labels (an NPY file).
The first two coordinates are drawn (m = 1: y1 against zero); --pca draws the first two
principal components of all m. Writes PNG or SVG by the output's extension (matplotlib, Agg).
Exit status 2 with one line on stderr for bad input.
"""
import argparse
import csv
import os
import sys


def fail(message):
    sys.stderr.write("ssdr plot: " + message + "\n")
    sys.exit(2)


def read_csv(path):
    """The CSV's coordinates, labels and each row's first line number (quoted fields may span lines)."""
    rows, lines = [], []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        start = 1
        for r in reader:
            rows.append(r)
            lines.append(start)
            start = reader.line_num + 1
    if not rows:
        fail("%s: empty file; expected a header `id,label,y1,...` and rows" % path)
    header = rows[0]
    if not header or header[0] != "id":
        fail("%s:1: expected a header line starting with 'id' (an ssdr embedding CSV), found %r" % (path, ",".join(header)[:60]))
    value_cols = [j for j, h in enumerate(header) if j > 0 and h not in ("label", "prediction")]
    label_col = next((j for j, h in enumerate(header) if h in ("label", "prediction")), None)
    Y, labels = [], []
    for no, r in zip(lines[1:], rows[1:]):
        if len(r) != len(header):
            fail("%s:%d: expected %d fields, found %d" % (path, no, len(header), len(r)))
        try:
            Y.append([float(r[j]) for j in value_cols])
        except ValueError:
            fail("%s:%d: a value is not a number" % (path, no))
        labels.append(r[label_col] if label_col is not None else "")
    return Y, labels, lines[1:]


def main():
    p = argparse.ArgumentParser(prog="ssdr plot", description=__doc__.splitlines()[0])
    p.add_argument("embedding")
    p.add_argument("--output", required=True)
    p.add_argument("--labels", default=None)
    p.add_argument("--dataset", default="/embedding")
    p.add_argument("--title", default=None)
    p.add_argument("--pca", action="store_true")
    a = p.parse_args()
    ext = os.path.splitext(a.output)[1].lower()
    if ext not in (".png", ".svg"):
        fail("--output %s: expected a name ending in .png or .svg" % a.output)
    for option, path, what in (("", a.embedding, "an embedding .csv, .npy or .h5"), ("--labels ", a.labels, "labels .npy")):
        if path is not None and os.path.isdir(path):
            fail("%s%s: is a directory; expected a file (%s)" % (option, path, what))
        if path is not None and not os.path.isfile(path):
            fail("%scannot open '%s': No such file" % (option, path))
    import numpy as np
    low = a.embedding.lower()
    where = None  # the CSV's line of each row (NPY, HDF5: the row's index)
    if low.endswith(".npy"):
        Y = np.load(a.embedding, allow_pickle=False)
        labels = [""] * len(Y)
    elif low.endswith(".h5") or low.endswith(".hdf5"):
        import h5py
        with h5py.File(a.embedding, "r") as f:
            if a.dataset not in f:
                fail("%s: no data set '%s' (--dataset names it)" % (a.embedding, a.dataset))
            Y = f[a.dataset][()]
            labels = [""] * len(Y)
            if "labels" in f and "class_names" in f.attrs:  # written by ssdr with the rows' classes
                import json
                raw = f.attrs["class_names"]
                names = json.loads(raw.decode() if isinstance(raw, bytes) else str(raw))
                labels = [names[c] if 0 <= c < len(names) else "" for c in f["labels"][()].tolist()]
    else:
        Y, labels, where = read_csv(a.embedding)
        Y = np.asarray(Y, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if Y.ndim != 2 or Y.shape[0] == 0 or Y.shape[1] == 0:
        fail("%s: expected an n x m embedding with n, m >= 1, found shape %s" % (a.embedding, Y.shape))
    finite = np.isfinite(Y)
    if not finite.all():  # a fit that diverged: no picture of it
        i, j = (int(v) for v in np.argwhere(~finite)[0])
        place = ("%s:%d" % (a.embedding, where[i])) if where is not None else ("%s: row %d (0-based)" % (a.embedding, i))
        fail("%s: coordinate %d is %s; expected finite coordinates (rows with a non-finite one: %d of %d)"
             % (place, j + 1, Y[i, j], int((~finite).any(axis=1).sum()), len(Y)))
    if a.labels is not None:
        lab = np.load(a.labels, allow_pickle=False).reshape(-1)
        if len(lab) != len(Y):
            fail("--labels %s: %d labels for %d rows" % (a.labels, len(lab), len(Y)))
        labels = ["" if (lab.dtype.kind in "iu" and v == -1) else str(v) for v in lab]
    if a.pca and Y.shape[1] > 2:
        Z = Y - Y.mean(axis=0)
        _, _, vt = np.linalg.svd(Z, full_matrices=False)
        Y = Z @ vt[:2].T
    xy = Y[:, :2] if Y.shape[1] >= 2 else np.column_stack([Y[:, 0], np.zeros(len(Y))])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    unlabeled = np.array([s == "" for s in labels])
    if unlabeled.any():
        ax.scatter(xy[unlabeled, 0], xy[unlabeled, 1], s=8, c="0.75", label="unlabeled (%d)" % unlabeled.sum())
    names = sorted(set(s for s in labels if s != ""), key=lambda s: (0, int(s), "") if s.lstrip("-").isdigit() else (1, 0, s))
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    for k, name in enumerate(names):
        sel = np.array([s == name for s in labels])
        ax.scatter(xy[sel, 0], xy[sel, 1], s=10, color=cmap(k % cmap.N), label=name)
    ax.set_xlabel("PC 1" if a.pca and Y.shape[1] > 2 else "y1")
    ax.set_ylabel("PC 2" if a.pca and Y.shape[1] > 2 else ("y2" if Y.shape[1] >= 2 else "0"))
    ax.set_title(a.title or os.path.basename(a.embedding))
    if names or unlabeled.any():
        ax.legend(fontsize=8, markerscale=1.5, loc="best")
    fig.tight_layout()
    tmp = a.output + ".tmp.%d%s" % (os.getpid(), ext)
    try:
        fig.savefig(tmp)
        os.replace(tmp, a.output)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        fail("cannot write '%s': %s" % (a.output, e.strerror))
    return 0


if __name__ == "__main__":
    sys.exit(main())
