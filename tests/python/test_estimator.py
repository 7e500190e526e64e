"""The Python package against the C++ core, on every rank of MPI_COMM_WORLD (ctest runs it on
1 and 2 ranks with PYTHONPATH=<build>/python): rank-count invariance, scikit-learn's
conventions (get_params/set_params, clone, Pipeline on one rank), parameter and usage errors,
save/load, every method of the table reachable.

Tolerances: predictions are compared exactly; the embedding of a fit on all ranks against the
fit on one rank through its Gram matrix E E^T (blind to the columns' signs) within 1e-7
relative: the distributed sums change order with the partition (n eps ~ 1e-13 relative on
the scatter matrices), the propagation's CG stops at rtol 1e-12 (condition <= 100: 1e-9
relative), and the eigenvectors move by that over the relative eigengap (>= 1e-2 on wine),
as tests/mpi/rank_invariance_test.cpp works out.
Usage: mpiexec -n P python3 test_estimator.py DATA_DIR
"""
import os
import sys
import tempfile

import numpy as np
from mpi4py import MPI

import ssdr

comm = MPI.COMM_WORLD
data_dir = sys.argv[1]
failures = []


def check(condition, what):
    if comm.rank == 0:
        print(("ok: " if condition else "FAILED: ") + what, flush=True)
    if not condition:
        failures.append(what)


def raises(exc, f, *words):
    try:
        f()
    except exc as e:
        text = str(e)
        return all(w in text for w in words), text
    return False, "no exception"


def load(name, p=5):
    table = np.loadtxt(os.path.join(data_dir, name), delimiter=",", ndmin=2)
    labels, X = table[:, 0].astype(np.int64), table[:, 1:]
    y = np.full_like(labels, -1)
    for c in np.unique(labels):
        y[np.flatnonzero(labels == c)[:p]] = c
    return X, labels, y


def block(n, c=comm):
    return n * c.rank // c.size, n * (c.rank + 1) // c.size


X, labels, y = load("wine.csv")
n = len(labels)
lo, hi = block(n)

# 1. The same model on all ranks as on one (every rank fits all rows alone on COMM_SELF).
est = ssdr.SODA(dim=2, seed=3).fit(X[lo:hi], y[lo:hi])
E = np.vstack(comm.allgather(est.transform(X[lo:hi])))
pred = np.concatenate(comm.allgather(est.predict(X[lo:hi])))
alone = ssdr.SODA(dim=2, seed=3).fit(X, y, comm=MPI.COMM_SELF)
E1, pred1 = alone.transform(X), alone.predict(X)
G, G1 = E @ E.T, E1 @ E1.T
check(np.array_equal(pred, pred1), "predictions on %d ranks equal one rank's" % comm.size)
check(np.abs(G - G1).max() <= 1e-7 * np.abs(G1).max(),
      "embedding Gram on %d ranks within 1e-7 of one rank's (%.2e)" % (comm.size, np.abs(G - G1).max() / np.abs(G1).max()))
check(abs(est.trace_ratio_ - alone.trace_ratio_) <= 1e-9 * abs(alone.trace_ratio_), "trace ratio within 1e-9")
hidden = np.where(y == -1, labels, -1)
score = est.score(X[lo:hi], hidden[lo:hi])
check(score == np.mean(pred[y == -1] == labels[y == -1]), "score is the accuracy on the rows given a label (%.4f)" % score)
check(est.transform(X[lo:hi]).shape == (hi - lo, 2) and est.predict(X[lo:hi]).dtype == np.int64,
      "transform gives this rank's n_local x m rows, predict int64 labels")

# 2. Parameters: scikit-learn's conventions and the errors.
e = ssdr.Estimator("sl-lda", alpha_u=0.9)
params = e.get_params()
check(params["method"] == "sl-lda" and params["alpha_u"] == 0.9 and params["knn"] is None and "beta" not in params,
      "get_params: method, the given values, None for the paper defaults")
check(e.set_params(knn=5) is e and e.get_params()["knn"] == 5, "set_params returns self")
check("method" not in ssdr.SODA().get_params(), "a method's class has no 'method' parameter")
ok, text = raises(ValueError, lambda: ssdr.Estimator("sl-lda", beta=1.0), "'beta' is not a parameter of sl-lda", "alpha_u")
check(ok, "an unknown parameter is a ValueError naming it and the valid ones (%s)" % text)
ok, text = raises(ValueError, lambda: ssdr.Estimator("sodaa"), "unknown method", "soda")
check(ok, "an unknown method is a ValueError listing the methods (%s)" % text)
ok, text = raises(ssdr.Error, lambda: ssdr.SODA(alpha_u=2).fit(X[lo:hi], y[lo:hi]), "alpha_u", "[0, 1)")
check(ok, "a value out of range is ssdr.Error with ssdr's message (%s)" % text)
ok, text = raises(ssdr.Error, lambda: ssdr.SODA(precision="half").fit(X[lo:hi], y[lo:hi]), "precision",
                  "expected one of double, single")
check(ok, "an unknown precision is ssdr.Error naming the parameter and its choices, on every rank (%s)" % text)
single = ssdr.SODA(precision="single").fit(X[lo:hi], y[lo:hi])
check(single.get_params()["precision"] == "single" and single.transform(X[lo:hi]).shape == (hi - lo, 2),
      "precision='single' fits and maps (the bits are checked in precision_test.cpp)")
ok, text = raises(ssdr.NotFittedError, lambda: ssdr.SODA().predict(X[lo:hi]), "not fitted")
check(ok, "predict before fit is NotFittedError (%s)" % text)
ok, text = raises(ssdr.Error, lambda: ssdr.Estimator("lp").fit(X[lo:hi], y[lo:hi]).transform(X[lo:hi]),
                  "learns no projection")
check(ok, "transform of lp is ssdr.Error (%s)" % text)
lp = ssdr.LP().fit(X[lo:hi], y[lo:hi])
check(not hasattr(lp, "transform") and not hasattr(lp, "predict") and len(lp.transduction_) == hi - lo,
      "ssdr.LP is transductive: transduction_ for its rows, no transform or predict")
ok, text = raises(ssdr.Error, lambda: ssdr.SODA().fit(X[lo:hi], np.full(hi - lo, -1)), "no row is labeled")
check(ok, "fit without a labeled row is ssdr.Error (%s)" % text)
classes = [ssdr._class_name(m[0]) for m in ssdr.methods()]
check(all(hasattr(ssdr, c) for c in classes) and all(ssdr.Estimator(m[0]).method == m[0] for m in ssdr.methods()),
      "every method of the table is reachable: ssdr.Estimator(name) and ssdr.%s" % ", ssdr.".join(classes))

# 3. save/load: the same predictions, through both entry points.
path = comm.bcast(tempfile.mkdtemp(prefix="ssdr_py_") if comm.rank == 0 else None, root=0)
model = os.path.join(path, "soda.model")
est.save(model)
back = ssdr.SODA.load(model)
check(np.array_equal(back.predict(X[lo:hi]), est.predict(X[lo:hi])) and
      np.array_equal(ssdr.Estimator.load(model).transform(X[lo:hi]), est.transform(X[lo:hi])),
      "a saved model loads (SODA.load, Estimator.load) and gives the same bits")
ok, text = raises(ValueError, lambda: ssdr.LDA.load(model), "not lda")
check(ok, "LDA.load of a soda model is a ValueError (%s)" % text)
comm.barrier()
if comm.rank == 0:
    os.remove(model)
    os.rmdir(path)

# 4. scikit-learn on one rank: clone and Pipeline (other steps see only this rank's rows).
try:
    import sklearn.base
    import sklearn.pipeline
    import sklearn.preprocessing
except ImportError:
    sklearn = None
    if comm.rank == 0:
        print("skipped: scikit-learn checks (python3-sklearn not installed)")
if sklearn is not None and comm.size == 1:
    soda = ssdr.SODA(dim=2, seed=3, alpha_u=0.9)
    twin = sklearn.base.clone(soda)
    check(type(twin) is ssdr.SODA and twin.get_params() == soda.get_params() and twin is not soda,
          "sklearn.base.clone copies the parameters")
    generic = sklearn.base.clone(ssdr.Estimator("sl-lda", alpha_u=0.5))
    check(generic.get_params()["method"] == "sl-lda", "clone of ssdr.Estimator keeps its method")
    pipe = sklearn.pipeline.make_pipeline(sklearn.preprocessing.StandardScaler(), ssdr.SODA(dim=2, seed=3))
    pipe.fit(X, y)
    Xs = sklearn.preprocessing.StandardScaler().fit_transform(X)
    direct = ssdr.SODA(dim=2, seed=3).fit(Xs, y)
    check(np.array_equal(pipe.predict(X), direct.predict(Xs)) and np.array_equal(pipe.transform(X), direct.transform(Xs)),
          "sklearn Pipeline(StandardScaler, SODA) predicts and transforms as the two steps by hand")
    pipe.set_params(soda__dim=1)
    check(pipe.fit(X, y).transform(X).shape == (n, 1), "Pipeline.set_params(soda__dim=1) reaches the estimator")

sys.exit(1 if comm.allreduce(len(failures), op=MPI.SUM) else 0)
