"""The Python door's checks on every rank (ctest runs it on 1, 2 and 3 ranks): each mistake is
made on one rank only (the last; on one rank, the only one), and every rank must raise the same
error (ssdr.Error, a ValueError; a TypeError too where the mistake is a type) with the same
message, within the call: nothing hangs, nothing aborts the interpreter. Then the labels:
any sortable class labels round-trip through classes_ on every rank count.

Usage: mpiexec -n P python3 test_doors.py DATA_DIR
"""
import os
import re
import sys

import numpy as np
from mpi4py import MPI

import ssdr

comm = MPI.COMM_WORLD
last = comm.rank == comm.size - 1
failures = []


def check(condition, what):
    if comm.rank == 0:
        print(("ok: " if condition else "FAILED: ") + what, flush=True)
    if not comm.allreduce(bool(condition), op=MPI.LAND):
        failures.append(what)


def same_error(f, words, kind=ssdr.Error, what=""):
    """f() raises `kind` on every rank, with the same message holding every word."""
    try:
        f()
        text, ok = "no exception", False
    except Exception as e:  # noqa: BLE001 - the type is the point
        text, ok = str(e), isinstance(e, kind) and isinstance(e, ValueError if kind is ssdr.Error else kind)
    texts = comm.allgather(re.sub(r" \(rank \d+\)$", "", text))  # the failing rank is named elsewhere
    ok = ok and all(w in text for w in words) and len(set(texts)) == 1
    check(ok, "%s: %s on every rank (%s)" % (what, kind.__name__, text[:160]))


table = np.loadtxt(os.path.join(sys.argv[1], "wine.csv"), delimiter=",")
labels, X = table[:, 0].astype(np.int64), table[:, 1:]
y = np.full_like(labels, -1)
for c in np.unique(labels):
    y[np.flatnonzero(labels == c)[:5]] = c
n = len(labels)
lo, hi = n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size
Xl, yl = X[lo:hi].copy(), y[lo:hi].copy()


def on_last(a, change):
    """a copy of a, changed by change() on the last rank only."""
    b = a.copy()
    if last:
        b = change(b)
    return b


def set_first(v):
    def change(b):
        b = b.astype(float) if b.dtype.kind != "f" else b
        b.flat[0] = v
        return b
    return change


# 1. X: one bad value, an object array holding a dict, complex, 1-D, one feature fewer.
same_error(lambda: ssdr.SODA().fit(on_last(Xl, set_first(np.nan)), yl), ["= NaN; expected finite values"], what="NaN in X")
same_error(lambda: ssdr.SODA().fit(on_last(Xl, set_first(np.inf)), yl), ["= inf"], what="inf in X")
same_error(lambda: ssdr.SODA().fit(on_last(Xl, set_first(1e308)), yl), ["1e+308; expected |x| <= 7.3e+134", "scale"],
           what="1e308 in X (its square overflows)")


def with_dict(b):
    b = b.astype(object)
    b[0, 0] = {"a": 1}
    return b


same_error(lambda: ssdr.SODA().fit(on_last(Xl, with_dict), yl), ["argument must be a string", "number"], TypeError,
           what="a dict in an object X")
same_error(lambda: ssdr.SODA().fit(on_last(Xl, lambda b: b + 1j), yl), ["Complex data not supported"],
           what="complex X")
same_error(lambda: ssdr.SODA().fit(on_last(Xl, lambda b: b[:, 0]), yl), ["Reshape your data"], what="1-D X")
if comm.size > 1:
    same_error(lambda: ssdr.SODA().fit(on_last(Xl, lambda b: b[:, 1:]), yl), ["X's width is 12 on rank"],
               what="one feature fewer")

# 1b. Missing labels as pandas and NumPy write them are unlabeled rows, as -1 is (one rule for
#     every dtype, the command line's): NaN in a float array or Series, None, pd.NA in a
#     nullable integer array, a Categorical's missing value. The same embedding, bit for bit.
import pandas as pd
ym = yl.copy()
ym[::4] = -1
ref = ssdr.SODA(dim=2, seed=1).fit(Xl, ym).transform(Xl)
yf = ym.astype(float)
yf[ym == -1] = np.nan
names = np.array(["a", "b", "c"], dtype=object)
ys = np.where(ym == -1, None, names[np.maximum(ym, 0)])
for what, yy in [("float NaN", yf), ("Series of floats with NaN", pd.Series(yf)),
                 ("Int64 with pd.NA", pd.array(np.where(ym == -1, None, ym).tolist(), dtype="Int64")),
                 ("object with None", ys), ("object with pd.NA", np.where(ym == -1, pd.NA, names[np.maximum(ym, 0)])),
                 ("Categorical", pd.Categorical(ys, categories=["a", "b", "c"])),
                 ("Series of category", pd.Series(ys, dtype="category"))]:
    got = ssdr.SODA(dim=2, seed=1).fit(Xl, yy).transform(Xl)
    assert np.array_equal(got, ref), what
if comm.rank == 0:
    print("ok: NaN, None, pd.NA and Categorical's missing values are unlabeled rows (7 kinds, the -1 fit's bits)")

# 2. y: one label short, a NaN, continuous values, a label of 2^31 - 1 and 2^32 + 1 (just labels).
same_error(lambda: ssdr.SODA().fit(Xl, on_last(yl, lambda b: b[:-1])), ["one label per row"], what="y one short")
same_error(lambda: ssdr.SODA().fit(Xl, on_last(yl, set_first(np.inf))), ["inf", "expected a class label"],
           what="an infinite label")
same_error(lambda: ssdr.SODA().fit(Xl, on_last(yl, set_first(0.5))), ["Unknown label type"], what="label 0.5")
same_error(lambda: ssdr.SODA().fit(Xl, np.where(yl == 0, 0, -1)), ["only one class (0)"], what="one labeled class")
same_error(lambda: ssdr.SODA().fit(Xl, np.full(len(yl), -1)), ["no row is labeled"], what="no labeled row")
same_error(lambda: ssdr.SODA().fit(np.empty((0, 13)), np.empty(0)), ["0 sample(s)"], what="no rows on any rank")
same_error(lambda: ssdr.SODA().fit(np.empty((3, 0)), np.zeros(3)), ["0 feature(s)"], what="no features")
big = np.array([-1, 2, 2**31 - 1, 2**32 + 1], dtype=np.int64)[yl + 1]  # 0, 1, 2 keep their order
est = ssdr.LDA(dim=2).fit(Xl, big)
ref = ssdr.LDA(dim=2).fit(Xl, yl)
check(list(est.classes_) == [2, 2**31 - 1, 2**32 + 1] and
      np.array_equal(est.predict(Xl), np.array([2, 2**31 - 1, 2**32 + 1])[ref.predict(Xl)]),
      "labels 2^31 - 1 and 2^32 + 1 are classes like any other")

# 3. Parameters that differ between ranks, and values the core refuses on every rank.
if comm.size > 1:
    same_error(lambda: ssdr.SODA(dim=1 if last else 2).fit(Xl, yl), ["dim is 1 on rank %d but 2 on rank 0" % (comm.size - 1)],
               what="dim differs on one rank")
same_error(lambda: ssdr.SODA(alpha_u=float("nan")).fit(Xl, yl), ["alpha_u", "finite"], what="alpha_u NaN")
same_error(lambda: ssdr.KSODA(degree=20, scaling="none").fit(Xl * 100, yl), ["polynomial kernel (degree 20)", "2^448"],
           what="a degree-20 kernel whose values overflow")

# 4. After the fit: transform with a NaN or the wrong width on one rank, before fit, COMM_NULL.
fitted = ssdr.SODA(dim=2).fit(Xl, yl)
same_error(lambda: fitted.transform(on_last(Xl, set_first(np.nan))), ["transform: X", "NaN"], what="NaN at transform")
same_error(lambda: fitted.predict(on_last(Xl, lambda b: b[:, :12])), ["X has 12 features", "expecting 13"],
           what="wrong width at predict")
same_error(lambda: fitted.score(Xl, on_last(yl, lambda b: b[:-1])), ["one label per row"], what="y short at score")
same_error(lambda: ssdr.SODA().transform(Xl), ["not fitted"], ssdr.NotFittedError, what="transform before fit")
same_error(lambda: fitted.fit(Xl, yl, comm=MPI.COMM_NULL), ["COMM_NULL"], ValueError, what="MPI.COMM_NULL")
same_error(lambda: fitted.save(5), ["path: expected a file name"], TypeError, what="save to a number")

# 5. Any sortable labels round-trip on every rank count; -1 / None are unlabeled.
names = np.array(["cat", "dog", "emu"], dtype=object)
ys = np.array([names[v] if v >= 0 else None for v in yl], dtype=object)
e = ssdr.SODA(dim=2, seed=1).fit(Xl, ys)
codes = ssdr.SODA(dim=2, seed=1).fit(Xl, yl)
check(list(e.classes_) == ["cat", "dog", "emu"], "string classes_ sorted on every rank")
check(np.array_equal(e.predict(Xl), names[codes.predict(Xl)]) and
      e.score(Xl, names[labels[lo:hi] - labels.min()]) == codes.score(Xl, labels[lo:hi] - labels.min()),
      "string labels predict and score as their codes")
shifted = np.where(yl >= 0, 10 * yl + 3, -1)
check(np.array_equal(ssdr.SODA(dim=2, seed=1).fit(Xl, shifted).predict(Xl), 10 * codes.predict(Xl) + 3),
      "labels 3, 13, 23 predict as 0, 1, 2 do")

# 6. A pickled model loads on any rank count, as a file does: KSODA's exact kernel map fitted
#    and pickled on rank 0 alone is distributed over every rank when unpickled.
import pickle  # noqa: E402

blob = None
if comm.rank == 0:
    y_all = np.array([names[v] if v >= 0 else None for v in y], dtype=object)
    alone = ssdr.KSODA(dim=2).fit(X, y_all, comm=MPI.COMM_SELF)
    blob, expected = pickle.dumps(alone), alone.predict(X, comm=MPI.COMM_SELF)
blob = comm.bcast(blob, root=0)
back = pickle.loads(blob)
got = np.concatenate(comm.allgather(back.predict(Xl, comm=comm)))
check(comm.bcast(np.array_equal(got, expected) if comm.rank == 0 else None, root=0),
      "a KSODA pickled on one rank predicts the same on %d ranks" % comm.size)
if comm.size > 1:
    same_error(lambda: pickle.dumps(ssdr.KSODA(dim=2).fit(Xl, ys)), ["distributed over", "save"],
               what="pickling a kernel map distributed over the ranks")

sys.exit(1 if failures else 0)
