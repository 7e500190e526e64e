#!/usr/bin/env bash
# ssdr.Auto (issue 49): the method, m and parameters chosen by k-fold CV on the labeled rows,
# from Python. On iris with 8 labeled rows per class (-1 the others), on 1 and 2 ranks (each
# rank its block of rows): fit, predict, transform, score; save, then Auto.load (the model is
# the chosen method's) and pickle give the same embedding, with auto's own parameters
# (cv_folds, knn_method) set too; get_params and scikit-learn's clone carry auto's parameters;
# Auto.load takes any projecting method's model; the chosen method's soft labels are
# transduction_ as its own estimator's; the same choice and embedding on 1 and 2 ranks.
# Usage: python_auto.sh SSDR_BINARY DATA_DIR   (MPIEXEC, SSDR_PYTHON from the environment)
set -u
SSDR="$1"
DATA="$2"
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
PYDIR="$(dirname "$SSDR")/python"
if [ ! -d "$PYDIR/ssdr" ] || ! "$PY" -c "import numpy, mpi4py" 2>/dev/null; then
  echo "skipped: the Python package is not built (python/ssdr) or numpy/mpi4py are missing"
  exit 0
fi
cat >"$tmp/auto.py" <<'PY'
import os, pickle, sys
import numpy as np
from mpi4py import MPI
import ssdr

comm = MPI.COMM_WORLD
data, out = sys.argv[1:3]
table = np.loadtxt(os.path.join(data, "iris.csv"), delimiter=",")
truth, X = table[:, 0].astype(np.int64), table[:, 1:]
y = np.full(len(truth), -1)
for c in range(3):  # 8 labeled rows per class, the same on every rank count
    y[np.flatnonzero(truth == c)[::6][:8]] = c
n = len(y)
lo, hi = n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size
Xl, yl, tl = X[lo:hi], y[lo:hi], truth[lo:hi]
done = []


def check(cond, what):
    assert cond, what
    done.append(what)


est = ssdr.Auto(seed=1).fit(Xl, yl)
chosen = est.info_["selection"]["chosen"]
method = est.model_["method"]
check(method in {"lda", "sda", "sl-lda", "soda"} and chosen["method"] == method, "fit chose %s" % chosen)
E = est.transform(Xl)
check(E.shape == (hi - lo, chosen["dim"]), "transform: m = the chosen dim")
pred = est.predict(Xl)
acc = est.score(Xl, tl)
check(0.8 <= acc <= 1 and np.array_equal(pred[yl >= 0], yl[yl >= 0]) and list(est.classes_) == [0, 1, 2],
      "predict and score (%.3f)" % acc)
# The chosen method's soft labels, as its own estimator's (lda and sda, which do not
# propagate labels, leave none).
own = {k: v for k, v in chosen.items() if k != "method"}
direct = ssdr.Estimator(method, seed=1, **own).fit(Xl, yl)
if method in ("sl-lda", "soda"):
    check(np.array_equal(est.transduction_, direct.transduction_) and
          np.array_equal(est.label_distributions_, direct.label_distributions_), "transduction_ of the chosen " + method)
else:
    check(not hasattr(est, "transduction_"), "no transduction_ for " + method)
if method in ("sl-lda", "soda"):
    check(est.transduction_.shape == (hi - lo,) and np.array_equal(est.transduction_[yl >= 0], yl[yl >= 0]),
          "transduction_ keeps the given labels")
path = os.path.join(out, "auto.model")  # every rank the same path
est.save(path)
loaded = ssdr.Auto.load(path)
check(type(loaded) is ssdr.Auto and loaded.model_["method"] == method and np.array_equal(loaded.transform(Xl), E) and
      np.array_equal(loaded.predict(Xl), pred), "save, then Auto.load of the %s model" % method)
back = pickle.loads(pickle.dumps(est))
check(np.array_equal(back.transform(Xl), E) and back.get_params() == est.get_params(), "pickle")
generic = ssdr.Estimator("auto", seed=1).fit(Xl, yl)
check(np.array_equal(pickle.loads(pickle.dumps(generic)).transform(Xl), E), "ssdr.Estimator('auto'): the same, pickled")

# auto's own parameters: the chosen method's model need not take them (cv_folds, knn_method).
own = ssdr.Auto(seed=1, cv_folds=3, knn_method="exact", scaling="standardize").fit(Xl, yl)
check(own.info_["selection"]["folds"] == 3 and own.info_["selection"]["chosen"]["scaling"] == "standardize",
      "cv_folds=3, scaling=standardize")
own.save(os.path.join(out, "own.model"))
again = ssdr.Auto.load(os.path.join(out, "own.model"), cv_folds=3, knn_method="exact")
check(np.array_equal(again.transform(Xl), own.transform(Xl)) and again.cv_folds == 3, "Auto.load with cv_folds")
check(np.array_equal(pickle.loads(pickle.dumps(own)).predict(Xl), own.predict(Xl)), "pickle with cv_folds")
names = set(ssdr.Auto().get_params())
check({"dim", "seed", "max_kernel_memory", "verbose", "cv_folds", "scaling"} <= names and "alpha_u" not in names,
      "get_params: %s" % sorted(names))
try:
    from sklearn.base import clone
    twin = clone(ssdr.Auto(seed=2, cv_folds=4, scaling="none"))
    check(type(twin) is ssdr.Auto and twin.get_params() == ssdr.Auto(seed=2, cv_folds=4, scaling="none").get_params(),
          "scikit-learn clone")
except ImportError:
    pass
ssdr.LDA().fit(Xl, yl).save(os.path.join(out, "lda.model"))
check(ssdr.Auto.load(os.path.join(out, "lda.model")).model_["method"] == "lda", "Auto.load of an lda model")
try:
    ssdr.Auto(cv_folds=1).fit(Xl, yl)
    check(False, "cv_folds=1 accepted")
except ssdr.Error as e:
    check("cv-folds" in str(e) or "cv_folds" in str(e), "cv_folds=1 refused: %s" % e)
try:
    ssdr.Auto(alpha_u=0.9)
    check(False, "alpha_u accepted")
except TypeError:
    done.append("alpha_u is not a parameter of Auto")

E_all = np.vstack(comm.allgather(E))
if comm.rank == 0:
    np.save(os.path.join(out, "embedding.npy"), E_all)
    with open(os.path.join(out, "chosen.txt"), "w") as f:
        f.write(repr(sorted(chosen.items())) + "\n")
    print("; ".join(done))
PY
for np in 1 2; do
  mkdir -p "$tmp/np$np"
  if timeout 120 env PYTHONPATH="$PYDIR" "$MPIEXEC" -n "$np" "$PY" "$tmp/auto.py" "$DATA" "$tmp/np$np" >"$tmp/out$np" 2>&1; then
    ok "ssdr.Auto on $np rank(s): $(grep -v '^\[' "$tmp/out$np" | tail -1)"
  else
    bad "ssdr.Auto on $np rank(s)"; cat "$tmp/out$np"
  fi
done
if cmp -s "$tmp/np1/chosen.txt" "$tmp/np2/chosen.txt" &&
   "$PY" -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(0 if a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-9 * np.abs(a).max()) else 1)" \
     "$tmp/np1/embedding.npy" "$tmp/np2/embedding.npy"; then
  ok "ssdr.Auto: the same choice ($(cat "$tmp/np1/chosen.txt")) and embedding on 1 and 2 ranks"
else
  bad "ssdr.Auto: 1 and 2 ranks differ"; cat "$tmp/np1/chosen.txt" "$tmp/np2/chosen.txt"
fi
finish
