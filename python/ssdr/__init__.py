"""ssdr: semi-supervised dimensionality reduction on MPI ranks, from Python.

Every rank passes its own block of rows (the rows of rank 0, then rank 1, ... form the data
set) as a NumPy array, with y = -1 for the unlabeled rows::

    from mpi4py import MPI
    import ssdr
    est = ssdr.SODA(dim=2, seed=1).fit(X_local, y_local, comm=MPI.COMM_WORLD)
    Y_local = est.transform(X_local)         # this rank's rows of the embedding
    labels_local = est.predict(X_local)      # 1-NN against the fit's labeled rows
    est.save("soda.model")                   # the file of `ssdr fit --model`

Every method of `ssdr methods` is reachable as ``ssdr.Estimator(name, **params)`` and as a
class (``ssdr.SODA``, ``ssdr.SL_LDA``, ``ssdr.M_SSGDA``, ``ssdr.ONE_NN`` for ``1nn``, ...).
Parameters are the method's (names as in `ssdr methods` and `ssdr fit --help`, with '_':
``alpha_u``, ``mu_scale``, ``kernel``, ``pca_energy``, ...) plus ``dim``, ``seed``,
``max_kernel_memory`` and ``verbose`` (False: quiet). Every call is collective over ``comm``
(default: the fit's communicator, else MPI.COMM_WORLD); results do not depend on the number
of ranks. The estimators follow scikit-learn's conventions (get_params/set_params, fit returns
self) so ``sklearn.base.clone`` and ``sklearn.pipeline.Pipeline`` work (on one rank: other
scikit-learn steps do not know about the other ranks' rows).

Importing ssdr initializes MPI (through mpi4py), PETSc and SLEPc unless they are already, and
finalizes PETSc and SLEPc at exit. PETSc options come from the PETSC_OPTIONS environment
variable (e.g. PETSC_OPTIONS="-log_view").
"""
import atexit as _atexit
import json as _json
import numbers as _numbers

import numpy as _np
from mpi4py import MPI as _MPI  # initializes MPI before PETSc

from . import _ssdr
from ._ssdr import Error

__version__ = _ssdr.version()
__all__ = ["Error", "Estimator", "methods"]

_ssdr.initialize()
_atexit.register(_ssdr.finalize)


def methods():
    """The method table: a list of (name, summary, paper, projects)."""
    return list(_ssdr.methods())


def _method_names():
    return [m[0] for m in _ssdr.methods()]


def _plain(name, value):
    """value as a JSON-ready Python value (NumPy scalars become Python numbers)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, _np.generic):
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, _numbers.Integral):
        return int(value)
    if isinstance(value, _numbers.Real):
        return float(value)
    raise ValueError("parameter %s: expected a number, a string or a bool, got %r" % (name, value))


class Estimator:
    """A method of the table with its parameters: ``ssdr.Estimator("sl-lda", alpha_u=0.9)``.

    Unknown parameter names raise ValueError naming the parameter and listing the method's;
    values are checked (range, choices) at fit, raising ssdr.Error with ssdr's one-line
    message. Unset parameters (None) take the method's paper defaults, as `ssdr fit` does.
    """

    _fixed_method = None  # the method of a generated subclass (ssdr.SODA: "soda")

    def __init__(self, method, **params):
        self._setup(method, params)

    def _setup(self, method, params):
        if method not in _method_names():
            raise ValueError("unknown method %r; expected one of %s" % (method, ", ".join(_method_names())))
        self.method = method
        self._names = list(_ssdr.parameter_names(method))
        self._check_names(params)
        self._params = {name: params.get(name) for name in self._names}
        self._core = None
        self._comm = None

    def _check_names(self, params):
        for name in params:
            if name not in self._names:
                raise ValueError("%r is not a parameter of %s (its parameters: %s)"
                                 % (name, self.method, ", ".join(self._names)))

    # scikit-learn's estimator conventions ------------------------------------------------
    def get_params(self, deep=True):
        """Every parameter of the method (None: its default), and ``method`` for ssdr.Estimator."""
        out = {} if self._fixed_method else {"method": self.method}
        out.update(self._params)
        return out

    def set_params(self, **params):
        """Sets parameters by name (None: back to the default); forgets the fit. Returns self."""
        if "method" in params:
            if self._fixed_method:
                raise ValueError("%s's method is %s: it has no parameter 'method'"
                                 % (type(self).__name__, self._fixed_method))
            rest = dict(self._params)
            rest.update({k: v for k, v in params.items() if k != "method"})
            self._setup(params["method"], {k: v for k, v in rest.items() if v is not None})
            return self
        self._check_names(params)
        self._params.update(params)
        self._core = None
        return self

    def __repr__(self):
        given = ["%s=%r" % (k, v) for k, v in self._params.items() if v is not None]
        if self._fixed_method:
            return "%s(%s)" % (type(self).__name__, ", ".join(given))
        return "Estimator(%s)" % ", ".join([repr(self.method)] + given)

    # the work ---------------------------------------------------------------------------
    def _given_json(self):
        return _json.dumps({k: _plain(k, v) for k, v in self._params.items() if v is not None})

    def _comm_or_default(self, comm):
        if comm is not None:
            return comm
        return self._comm if self._comm is not None else _MPI.COMM_WORLD

    def _fitted(self):
        if self._core is None:
            raise Error("the %s estimator is not fitted: call fit (or load) first" % self.method)
        return self._core

    @staticmethod
    def _rows(X):
        X = _np.ascontiguousarray(X, dtype=_np.float64)
        if X.ndim != 2:
            raise ValueError("X: expected a 2-D array (this rank's rows x features), got shape %s" % (X.shape,))
        return X

    @staticmethod
    def _labels(y, n):
        y = _np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError("y: expected one label per row of X (%d), got shape %s" % (n, y.shape))
        if y.size and not _np.issubdtype(y.dtype, _np.integer):
            if not _np.all(_np.equal(_np.mod(y, 1), 0)):
                raise ValueError("y: expected integer classes 0, 1, ... and -1 for unlabeled rows")
        return _np.ascontiguousarray(y, dtype=_np.int32)

    def fit(self, X, y, comm=None):
        """Learns the projection from this rank's rows X (n_local x d) and labels y (n_local:
        class 0..c-1, or -1 for an unlabeled row). Collective over comm. Returns self."""
        comm = comm if comm is not None else _MPI.COMM_WORLD
        X = self._rows(X)
        y = self._labels(y, X.shape[0])
        core = _ssdr.Estimator(self.method, self._given_json())
        core.fit(X, y, comm)
        self._core, self._comm = core, comm
        model = core.model()
        self.n_features_in_ = model["d_input"]
        self.classes_ = _np.arange(model["classes"])
        self.trace_ratio_ = core.trace_ratio
        self.info_ = _json.loads(core.info)
        return self

    def transform(self, X, comm=None):
        """This rank's rows of the embedding (n_local x m). Collective over comm."""
        return self._fitted().transform(self._rows(X), self._comm_or_default(comm))

    def fit_transform(self, X, y, comm=None):
        return self.fit(X, y, comm).transform(X, comm)

    def predict(self, X, comm=None):
        """The label of each of this rank's rows by 1-NN in the embedding against the fit's
        labeled rows (int64, n_local). Collective over comm."""
        return self._fitted().predict(self._rows(X), self._comm_or_default(comm))

    def score(self, X, y, comm=None):
        """The fraction of rows with y >= 0 (on every rank) that predict labels right.
        Collective over comm."""
        X = self._rows(X)
        return self._fitted().score(X, self._labels(y, X.shape[0]), self._comm_or_default(comm))

    def save(self, path, comm=None):
        """Writes the model file (as `ssdr fit --model`; rank 0 writes). Collective over comm."""
        self._fitted().save(str(path), self._comm_or_default(comm))

    @classmethod
    def load(cls, path, comm=None, **params):
        """An estimator with the model of `path` (`ssdr fit --model` or save). Collective."""
        comm = comm if comm is not None else _MPI.COMM_WORLD
        plain = {k: _plain(k, v) for k, v in params.items() if v is not None}
        core = _ssdr.Estimator.load(str(path), _json.dumps(plain), comm)
        if cls._fixed_method is not None:
            if core.method != cls._fixed_method:
                raise ValueError("%s: the model's method is %s, not %s" % (path, core.method, cls._fixed_method))
            est = cls(**params)
        else:
            est = Estimator(core.method, **params)
        est._core, est._comm = core, comm
        model = core.model()
        est.n_features_in_ = model["d_input"]
        est.classes_ = _np.arange(model["classes"])
        return est

    @property
    def model_(self):
        """What the fitted model holds: method, d_input, dim, classes, format_version, n_labeled
        and the fit's parameters (JSON text)."""
        return self._fitted().model()


def _class_name(method):
    special = {"1nn": "ONE_NN"}
    return special.get(method, method.upper().replace("-", "_"))


def _make_class(method, summary, source):
    def __init__(self, **params):
        self._setup(method, params)

    doc = "%s: %s [%s]\n\nParameters: %s." % (method, summary, source, ", ".join(_ssdr.parameter_names(method)))
    return type(_class_name(method), (Estimator,), {"__init__": __init__, "__doc__": doc, "_fixed_method": method})


for _name, _summary, _source, _projects in _ssdr.methods():
    _cls = _make_class(_name, _summary, _source)
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
del _name, _summary, _source, _projects, _cls
