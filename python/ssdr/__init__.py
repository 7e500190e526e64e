"""ssdr: semi-supervised dimensionality reduction on MPI ranks, from Python.

Every rank passes its own block of rows (the rows of rank 0, then rank 1, ... form the data
set) as a NumPy array, with -1 (or None / NaN) for the unlabeled rows::

    from mpi4py import MPI
    import ssdr
    est = ssdr.SODA(dim=2, seed=1).fit(X_local, y_local, comm=MPI.COMM_WORLD)
    Y_local = est.transform(X_local)         # this rank's rows of the embedding
    labels_local = est.predict(X_local)      # 1-NN against the fit's labeled rows
    est.save("soda.model")                   # the file of `ssdr fit --model`

Every method of `ssdr methods` is a class (``ssdr.SODA``, ``ssdr.SL_LDA``, ``ssdr.M_SSGDA``,
``ssdr.ONE_NN`` for ``1nn``, ...) and is reachable as ``ssdr.Estimator(name, **params)``.
Parameters are the method's (names as in `ssdr methods` and `ssdr fit --help`, with '_':
``alpha_u``, ``mu_scale``, ``kernel``, ``pca_energy``, ...; M-SSGDA's lambda is ``lambda_``)
plus ``dim``, ``seed``, ``max_kernel_memory`` and ``verbose`` (False: quiet); None takes the
method's paper default. Class labels may be bools, ints (64 bits), floats or strings, one kind
per fit: ``classes_`` holds them in sorted order, agreed over the communicator, and a save,
load or pickle gives back the very values. Unlabeled, for every dtype: None, NaN, pandas' NA,
a number equal to -1 or the empty string '' (docs/python.md, "Labels").

``ssdr.Auto`` (``ssdr fit --method auto``) chooses the method, its dimension m and its
parameters by k-fold cross-validation on the labeled rows (the unlabeled rows stay in every
fold's graph; their labels are never read), then fits the choice on every labeled row::

    est = ssdr.Auto(seed=1).fit(X_local, y_local)
    est.model_["method"], est.info_["selection"]["chosen"]   # e.g. "lda", {"dim": 2, ...}

Its parameters are ``dim`` (None: chosen too), ``seed`` (the folds, NN-descent),
``max_kernel_memory``, ``verbose``, ``cv_folds`` (k, default 5), ``auto_race`` (default
True: a candidate stops once it cannot beat the default family, with the same choice; False
scores every candidate on every fold), ``groups`` (G: the candidates scored in G groups of
ranks, each holding a copy of the rows; the same choice) and what every candidate takes (``scaling``, which
replaces the candidates' none/standardize, ``pca_energy``, ``knn_method``, ...). The model is the chosen method's, so transform, predict, save and
pickle are that method's, and ``ssdr.Auto.load`` takes any projecting method's model.

Every call is collective over ``comm`` (default: the fit's communicator, else
MPI.COMM_WORLD), and checks its input on every rank before the C++ core runs: a mistake on
one rank (a NaN, a missing label, a wrong shape) raises the same ``ssdr.Error`` (a
ValueError; also a TypeError where the mistake is a type) on every rank, so no rank is left
waiting. Results do not depend on the number of ranks. With scikit-learn installed the
classes are scikit-learn estimators (BaseEstimator, ClassifierMixin, TransformerMixin), so
``clone``, ``Pipeline`` and ``GridSearchCV`` work (on one rank: scikit-learn's own steps do
not see the other ranks' rows).

Importing ssdr initializes MPI (through mpi4py), PETSc and SLEPc unless they are already, and
finalizes PETSc and SLEPc at exit. PETSc options come from the PETSC_OPTIONS environment
variable (e.g. PETSC_OPTIONS="-log_view").
"""
import atexit as _atexit
import json as _json
import os as _os
import numbers as _numbers
import warnings as _warnings

import numpy as _np


def _detach_from_launcher():
    """A child process of an MPI rank that imports ssdr (joblib's workers for
    GridSearchCV(n_jobs=2), multiprocessing) inherits the launcher's variables and would try to
    join the job as that rank again, and fail; it starts as its own one-process MPI job instead
    (MPI's singleton start). SSDR_MPI_PID marks the process that imported ssdr first."""
    owner = _os.environ.get("SSDR_MPI_PID")
    if owner is not None and owner != str(_os.getpid()):
        launcher = ("PMIX_", "PMI_", "OMPI_COMM_WORLD", "OMPI_UNIVERSE", "OMPI_FILE_LOCATION", "OMPI_APP_CTX",
                    "OMPI_NUM_APP_CTX", "OMPI_FIRST_RANKS", "OMPI_ARGV", "OMPI_COMMAND", "OMPI_MCA_ess",
                    "OMPI_MCA_orte_", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem")
        keep = ("OMPI_MCA_orte_execute_quiet",)
        for key in list(_os.environ):
            if key.startswith(launcher) and key not in keep:
                del _os.environ[key]
    _os.environ["SSDR_MPI_PID"] = str(_os.getpid())


_detach_from_launcher()
from mpi4py import MPI as _MPI  # noqa: E402 - initializes MPI before PETSc

from . import _ssdr

try:  # scikit-learn's base classes where it is installed
    from sklearn.base import BaseEstimator as _BaseEstimator
    from sklearn.base import ClassifierMixin as _ClassifierMixin
    from sklearn.base import TransformerMixin as _TransformerMixin
    from sklearn.exceptions import DataConversionWarning as _DataConversionWarning
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - the same conventions without scikit-learn
    _DataConversionWarning = UserWarning

    class NotFittedError(ValueError, AttributeError):
        """Raised by transform/predict/score/save before fit (scikit-learn's type)."""

    class _BaseEstimator:
        """get_params/set_params from the __init__ signature, as scikit-learn's."""

        @classmethod
        def _get_param_names(cls):
            import inspect
            return sorted(p for p in inspect.signature(cls.__init__).parameters if p != "self")

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for name, value in params.items():
                if name not in valid:
                    raise ValueError("Invalid parameter %r for estimator %s. Valid parameters are: %s."
                                     % (name, type(self).__name__, valid))
                setattr(self, name, value)
            return self

    class _ClassifierMixin:
        _estimator_type = "classifier"

    class _TransformerMixin:
        pass

Error = _ssdr.Error
__version__ = _ssdr.version()
blas_kernels = _ssdr.blas_kernels
__all__ = ["Error", "Estimator", "NotFittedError", "blas_kernels", "methods"]

_ssdr.initialize()
_atexit.register(_ssdr.finalize)


def methods():
    """The method table: a list of (name, summary, paper, projects)."""
    return list(_ssdr.methods())


def _method_names():
    return [m[0] for m in _ssdr.methods()]


# Parameters whose table name is a Python keyword, and their Python spelling (numpy's `lam`
# for lambda: a trailing underscore would mark a fitted attribute for scikit-learn).
_PYTHON_NAMES = {"lambda": "lam"}
_TABLE_NAMES = {v: k for k, v in _PYTHON_NAMES.items()}


def _python_name(name):
    """A parameter's name as a Python identifier: lambda -> lam."""
    return _PYTHON_NAMES.get(name, name)


def _table_name(name):
    return _TABLE_NAMES.get(name, name)


# -------------------------------------------------------------------------------------------
# Agreement over the communicator: every local check's verdict is shared before any rank
# enters the C++ core, so a mistake on one rank raises on every rank.
# -------------------------------------------------------------------------------------------
_error_types = {}


def _error_type(base):
    """ssdr.Error, or a subclass of ssdr.Error and `base` (TypeError, ...) for scikit-learn."""
    if base is None or issubclass(Error, base):
        return Error
    if base not in _error_types:
        _error_types[base] = type("Error", (Error, base), {"__module__": __name__})
    return _error_types[base]


def _checked_comm(comm):
    """The call's communicator: an mpi4py intracommunicator (None: MPI.COMM_WORLD). A null or
    wrong communicator has no ranks to agree with, so it raises on the ranks that passed it."""
    if comm is None:
        return _MPI.COMM_WORLD
    if not isinstance(comm, _MPI.Comm):
        raise TypeError("comm: expected an mpi4py communicator (e.g. MPI.COMM_WORLD), got %s" % type(comm).__name__)
    if comm == _MPI.COMM_NULL:
        raise ValueError("comm: MPI.COMM_NULL; expected the communicator of the ranks that hold the rows")
    if comm.Is_inter():
        raise ValueError("comm: an intercommunicator; expected an intracommunicator")
    return comm


def _shown(value, limit=80):
    text = "unset" if value is None else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _first_difference(what, sames):
    """The message naming the first rank whose agreed values (a dict: name -> value) differ
    from rank 0's, or None. Every rank computes it from the same gathered values, so every
    rank raises the same message. Names are compared in sorted order."""
    root = sames[0] or {}
    for rank, mine in enumerate(sames[1:], start=1):
        mine = mine or {}
        for name in sorted(set(root) | set(mine)):
            a, b = mine.get(name), root.get(name)
            if a != b or type(a) is not type(b):
                return ("%s: %s is %s on rank %d but %s on rank 0; expected the same %s on every rank"
                        % (what, name, _shown(a), rank, _shown(b), name))
    return None


def _agreed(comm, step, what=None, same=None, share=None):
    """Runs step() on this rank, then agrees over comm in one allgather, before any other
    collective of the call:
    - when step raised a ValueError or TypeError on any rank, every rank raises ssdr.Error (of
      the same type too) with the lowest such rank's message;
    - else, when `same` (result -> dict of name -> value that must be equal on every rank:
      parameters, feature names, the path of an output) differs between ranks, every rank
      raises the same ssdr.Error "<what>: <name> is <value> on rank r but <value> on rank 0".
    Returns step()'s result, or (result, [share(result) of every rank]) when share is given."""
    result, problem, mine, part = None, None, None, None
    try:
        result = step()
        mine = same(result) if same is not None else None
        part = share(result) if share is not None else None
    except (ValueError, TypeError, OverflowError) as e:
        kind = NotFittedError if isinstance(e, NotFittedError) else TypeError if isinstance(e, TypeError) else None
        problem = (kind, str(e))
    gathered = comm.allgather((problem, mine, part))
    for rank, (p, _, _) in enumerate(gathered):
        if p is not None:
            kind, text = p
            if comm.size > 1 and rank != comm.rank:
                text = "%s (rank %d)" % (text, rank)
            raise _error_type(kind)(text)
    if same is not None:
        differs = _first_difference(what, [m for _, m, _ in gathered])
        if differs is not None:
            raise Error(differs)
    if share is not None:
        return result, [s for _, _, s in gathered]
    return result


# -------------------------------------------------------------------------------------------
# Rows and labels (local checks; the C++ core then checks values and layout collectively)
# -------------------------------------------------------------------------------------------
class _SparseRows:
    """This rank's rows of a scipy.sparse matrix in canonical CSR (indices sorted, duplicates
    summed, explicit zeros dropped), as the core's SparseRows takes them."""

    def __init__(self, X):
        X = X.tocsr(copy=True)
        if X.dtype.kind == "c":
            raise ValueError("Complex data not supported: X has dtype %s" % X.dtype)
        if X.dtype.kind not in "biuf":
            raise TypeError("X: a sparse matrix of dtype %s; expected numbers" % X.dtype)
        X.sum_duplicates()
        X.eliminate_zeros()
        X.sort_indices()
        if X.shape[1] == 0:
            raise ValueError("0 feature(s) (shape=%s) while a minimum of 1 is required." % (X.shape,))
        if X.shape[1] >= 2**31:
            raise ValueError("X: %d features; sparse rows take at most 2^31 - 1" % X.shape[1])
        self.shape = X.shape
        self.indptr = _np.ascontiguousarray(X.indptr, dtype=_np.int64)
        self.indices = _np.ascontiguousarray(X.indices, dtype=_np.int32)
        self.data = _np.ascontiguousarray(X.data, dtype=_np.float64)

    def args(self):
        return self.indptr, self.indices, self.data, self.shape[1]


def _kind_of_rows(X):
    return "sparse" if isinstance(X, _SparseRows) else "dense"


def _feature_names(X):
    """X's feature names as scikit-learn reads them (a DataFrame's column names when they are
    all strings), a list, or None. Local. \raises TypeError for mixed column names."""
    try:
        from sklearn.utils.validation import _get_feature_names
    except ImportError:  # pragma: no cover - the same rule without scikit-learn
        columns = getattr(X, "columns", None)
        if columns is None or not all(isinstance(c, str) for c in columns):
            return None
        return [str(c) for c in columns]
    names = _get_feature_names(X)
    return None if names is None else [str(c) for c in names]


def _is_sparse(X):
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def _rows(X):
    """This rank's rows as a C-contiguous float64 n_local x d array, or _SparseRows for a
    scipy.sparse matrix (scikit-learn's check_array conventions and messages). Local.
    float32 and integer rows are converted to float64 (the core computes in double)."""
    if _is_sparse(X):
        return _SparseRows(X)
    if hasattr(X, "iloc") and hasattr(X, "columns"):  # pandas DataFrame
        X = X.to_numpy()
    X = _np.asarray(X)
    if X.dtype.kind == "c":
        raise ValueError("Complex data not supported: X has dtype %s" % X.dtype)
    if X.dtype.kind not in "biuf":
        X = X.astype(_np.float64)  # object arrays of numbers; anything else raises TypeError/ValueError
    if X.ndim == 1:
        raise ValueError("Expected 2D array, got 1D array instead: X has shape %s. Reshape your data either "
                         "using array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) "
                         "if it contains a single sample." % (X.shape,))
    if X.ndim != 2:
        raise ValueError("X: expected a 2-D array (this rank's rows x features), got %d dimensions" % X.ndim)
    if X.shape[1] == 0:
        raise ValueError("0 feature(s) (shape=%s) while a minimum of 1 is required." % (X.shape,))
    return _np.ascontiguousarray(X, dtype=_np.float64)


# The labels' rules, one for every dtype (docs/python.md, "Labels"):
# - unlabeled: a missing value (None, NaN, pandas' NA), a number equal to -1 (not a bool) or
#   the empty string (as an empty field on the command line: a class has a non-empty name);
# - kept exactly (classes_, save/load, pickles): bools, ints in [-2^63, 2^64), finite floats
#   and strings, numpy scalars as the Python values they hold; one kind per fit (bools do not
#   mix with numbers: True == 1 would merge two classes), the same kind on every rank;
# - refused before the fit, with one line: bytes, ints beyond 64 bits, and any other type
#   (tuples, lists, ...), which a model file cannot keep as given.
_LABEL_KINDS = {"b": "bool", "i": "number", "u": "number", "f": "number", "U": "str"}


def _is_missing(v):
    """None, NaN or pandas' NA / NaT: a missing label (unlabeled). Local."""
    return v is None or (isinstance(v, float) and v != v) or type(v).__name__ in ("NAType", "NaTType")


def _label_kind(v):
    """bool, number or str for a label that a model file keeps as given, else None. Local."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, _numbers.Integral):
        return "number" if -2**63 <= v < 2**64 else None
    if isinstance(v, _numbers.Real):
        return "number" if abs(v) != float("inf") else None
    return "str" if isinstance(v, str) else None


def _plain_labels(y, what):
    """An object array's labels as plain Python values (numpy scalars by .item()), each of a
    kind _label_kind keeps or missing. Local. \raises ValueError naming the first other."""
    plain = _np.empty(len(y), dtype=object)
    for i, v in enumerate(y.tolist()):
        plain[i] = v.item() if isinstance(v, _np.generic) else v
    y = plain
    for i, v in enumerate(y.tolist()):
        if not _is_missing(v) and _label_kind(v) is None:
            kind = ("an int beyond 64 bits" if isinstance(v, _numbers.Integral) else
                    "bytes (decode them to str)" if isinstance(v, bytes) else type(v).__name__)
            raise ValueError("Unknown label type: %s[%d] = %s on this rank is %s; expected a bool, an int in "
                             "[-2^63, 2^64), a float or a str (a model file keeps these as given)"
                             % (what, i, _shown(v, 40), kind))
    return y


def _unlabeled(y):
    """The mask of unlabeled entries (the rule above). Local."""
    if y.dtype.kind in "iu":
        return y == -1
    if y.dtype.kind == "f":
        return (y == -1) | _np.isnan(y)
    if y.dtype.kind == "U":
        return y == ""
    if y.dtype.kind == "O":
        return _np.fromiter((_is_missing(v) or (_label_kind(v) == "number" and v == -1) or
                             (isinstance(v, str) and v == "") for v in y), dtype=bool, count=len(y))
    return _np.zeros(len(y), dtype=bool)


def _from_pandas(y):
    """A pandas Series, Categorical or extension array as a NumPy array whose missing values
    (NaN, None, pandas.NA, a Categorical's -1 code) are None in an object array; other
    array-likes unchanged. Local."""
    if type(y).__name__ == "Categorical" or str(getattr(y, "dtype", "")) == "category":
        cat = y.array if hasattr(y, "array") else y
        values = _np.asarray(cat.categories, dtype=object)[_np.maximum(cat.codes, 0)]
        values[_np.asarray(cat.codes) < 0] = None
        return values
    if hasattr(y, "isna") and hasattr(y, "to_numpy"):
        missing = _np.asarray(y.isna())
        if missing.any():
            values = y.to_numpy(dtype=object)
            values[missing] = None
            return values
        return y.to_numpy()
    return y


def _label_array(y, n, what="y"):
    """y as a 1-D array of n labels (a column vector is raveled with scikit-learn's warning).
    Local. \raises ValueError naming the problem."""
    y = _np.asarray(_from_pandas(y))
    if y.ndim == 2 and y.shape[1] == 1:
        _warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                       "to (n_samples, ), for example using ravel().", _DataConversionWarning, stacklevel=2)
        y = y.ravel()
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError("%s: expected one label per row of X (%d on this rank), got shape %s" % (what, n, y.shape))
    if y.dtype.kind == "c":
        raise ValueError("Unknown label type: complex labels in %s" % what)
    if y.dtype.kind == "S":
        raise ValueError("Unknown label type: %s holds bytes (dtype %s); decode them to str" % (what, y.dtype))
    if y.dtype.kind == "f":
        bad = _np.isinf(y)
        if bad.any():
            i = int(_np.flatnonzero(bad)[0])
            raise ValueError("%s[%d] = %r on this rank; expected a class label, or -1 or NaN (unlabeled)" % (what, i, y[i]))
        labeled = y[~_np.isnan(y)]
        if (labeled != _np.floor(labeled)).any():
            raise ValueError("Unknown label type: continuous values in %s; expected class labels" % what)
    if y.dtype.kind not in "biufUO":
        raise ValueError("Unknown label type: %s has dtype %s; expected class labels" % (what, y.dtype))
    if y.dtype.kind == "O":
        y = _plain_labels(y, what)
    return y


def _local_classes(y, unlabeled):
    """The distinct labels among this rank's labeled entries, sorted, and their kind (bool,
    number or str; None without any). Local. \raises ValueError for labels of mixed kinds."""
    values = y[~unlabeled]
    if y.dtype.kind != "O":
        return _np.unique(values), (_LABEL_KINDS[y.dtype.kind] if len(values) else None)
    kinds = sorted({_label_kind(v) for v in values.tolist()})
    if len(kinds) > 1:
        raise ValueError("Unknown label type: y mixes %s labels on this rank (True == 1 would merge classes); "
                         "expected labels of one kind" % " and ".join(kinds))
    return _np.array(sorted(set(values.tolist())), dtype=object), (kinds[0] if kinds else None)


def _union_classes(parts):
    """The sorted union of every rank's classes (the same on every rank), from every rank's
    (classes, kind). \raises ValueError when the ranks' labels differ in kind."""
    kinds = [(rank, kind) for rank, (_, kind) in enumerate(parts) if kind is not None]
    for rank, kind in kinds[1:]:
        if kind != kinds[0][1]:
            raise ValueError("Unknown label type: y holds %s labels on rank %d but %s labels on rank %d; expected "
                             "labels of one kind on every rank" % (kind, rank, kinds[0][1], kinds[0][0]))
    labeled = [p for p, _ in parts if len(p)]
    if not labeled:
        return _np.array([], dtype=_np.int64)
    if any(p.dtype.kind == "O" for p in labeled):
        return _np.array(sorted(set(v for p in labeled for v in p.tolist())), dtype=object)
    return _np.unique(_np.concatenate(labeled))


def _classes_from_names(names):
    """classes_ from a model's class names (JSON values): a NumPy array of their type, object
    where one array type would change a value (ints beyond int64 with negative ones). Local."""
    kinds = {type(v) for v in names}
    if kinds <= {int} and not (min(names) < 0 and max(names) >= 2**63):
        return _np.asarray(names)
    if len(kinds) == 1 and kinds <= {bool, float, str}:
        return _np.asarray(names)
    out = _np.empty(len(names), dtype=object)
    out[:] = names
    return out


def _encode(y, unlabeled, classes):
    """Each label's index in classes (int32), -1 for the unlabeled entries and len(classes) for
    a label the fit did not see. Local."""
    codes = _np.full(len(y), -1, dtype=_np.int32)
    labeled = ~unlabeled
    if not labeled.any():
        return codes
    if classes.dtype.kind == "O" or y.dtype.kind == "O":
        index = {v: k for k, v in enumerate(classes.tolist())}
        codes[labeled] = [index.get(v, len(classes)) for v in y[labeled].tolist()]
        return codes
    values = y[labeled]
    pos = _np.searchsorted(classes, values)
    pos = _np.minimum(pos, len(classes) - 1) if len(classes) else pos
    found = len(classes) > 0
    known = (classes[pos] == values) if found else _np.zeros(len(values), dtype=bool)
    codes[labeled] = _np.where(known, pos, len(classes)).astype(_np.int32)
    return codes


# -------------------------------------------------------------------------------------------
# The estimators
# -------------------------------------------------------------------------------------------
# The methods whose fit propagates labels (their soft labels F become transduction_,
# label_distributions_ and outlier_distribution_), from the method table.
_PROPAGATING = set(_ssdr.propagating_methods())
# ssdr.Auto's method: it chooses a method of the table by cross-validation, and its model is
# the chosen method's.
_AUTO = "auto"
# The parameters every method of the table takes (dim, seed, verbose, preprocessing, ...): what
# a loaded or unpickled auto model keeps of auto's parameters.
_COMMON_PARAMETERS = set.intersection(*[set(_ssdr.parameter_names(m[0])) for m in _ssdr.methods() if m[0] != _AUTO])


class _Core:
    """What every ssdr estimator does: fit, transform, predict, score, save and load, each
    collective over its communicator, and pickling through the model's bytes. Subclasses say
    which method (_method()) and parameters (_given(): name -> value, only the ones set)."""

    def _fitted(self, comm=None):
        core = getattr(self, "_core", None)
        if core is None and getattr(self, "_model_bytes", None) is not None:
            # Unpickled: the model is rebuilt from its bytes on the first collective call.
            comm = comm or _MPI.COMM_WORLD
            core = _ssdr.Estimator.from_bytes(self._model_bytes, self._given_json(load=True), comm)
            self._core, self._comm, self._model_bytes = core, comm, None
        if core is None:
            raise NotFittedError("This %s instance is not fitted yet. Call 'fit' with appropriate arguments before "
                                 "using this estimator." % type(self).__name__)
        return core

    def _given_json(self, load=False):
        """The set parameters as JSON for the core. load: for a model being loaded or unpickled;
        auto's model is the chosen method's, which may not take auto's own parameters
        (cv_folds, knn_method, ...): only those every method takes go with it."""
        out = {}
        for name, value in self._given().items():
            if load and self._method() == _AUTO and name not in _COMMON_PARAMETERS:
                continue
            out[name] = _plain(name, value)
        return _json.dumps(out, sort_keys=True)

    def _comm_or_default(self, comm):
        if comm is not None:
            return _checked_comm(comm)
        return getattr(self, "_comm", None) or _MPI.COMM_WORLD

    def _check_width(self, X):
        if X.shape[1] != self.n_features_in_:
            raise ValueError("X has %d features, but %s is expecting %d features as input."
                             % (X.shape[1], type(self).__name__, self.n_features_in_))

    def _check_names(self, X, reset):
        """scikit-learn's feature-name bookkeeping (feature_names_in_ for pandas input)."""
        if hasattr(self, "_check_feature_names"):
            self._check_feature_names(X, reset=reset)
        elif reset and hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def fit(self, X, y, comm=None):
        """Learns the projection from this rank's rows X (n_local x d; a NumPy array, anything
        NumPy converts, a pandas DataFrame or a scipy.sparse matrix, whose fit needs pca_dim)
        and labels y (n_local: a class label, or -1 / None / NaN for an unlabeled row; see
        "Labels" in docs/python.md). The classes (classes_) are the sorted labels of every rank;
        at least two must be labeled. Every check (parameters, feature names, X's kind and
        width, the labels) is agreed over comm in one exchange before the core runs: a mistake
        or a difference on one rank raises the same ssdr.Error on every rank. Collective over
        comm. Returns self."""
        comm = _checked_comm(comm)
        method = self._method()
        original = X

        def local():
            given = self._given_json()  # a NaN parameter raises here, on its rank
            core = _ssdr.Estimator(method, given)  # the core's own checks of the values
            if y is None:
                raise ValueError("%s requires y to be passed, but the target y is None (-1 marks an unlabeled row)"
                                 % type(self).__name__)
            names = _feature_names(original)
            X_ = _rows(X)
            y_ = _label_array(y, X_.shape[0])
            unl = _unlabeled(y_)
            return core, given, names, X_, y_, unl, _local_classes(y_, unl)

        def same(r):
            core, given, names, X_ = r[:4]
            out = {"method": method, "feature names": names, "X's kind": _kind_of_rows(X_), "X's width": X_.shape[1]}
            out.update({"parameter " + k: v for k, v in _json.loads(given).items()})
            return out
        (core, _, names, X, y, unlabeled, _), parts = _agreed(comm, local, "fit", same,
                                                              lambda r: (r[6], r[3].shape[0]))
        # From here every rank decides alike from the same gathered values: no rank raises alone.
        if sum(rows for _, rows in parts) == 0:
            raise Error("Found array with 0 sample(s) (shape=%s) while a minimum of 1 is required: X has no rows on "
                        "any rank" % (X.shape,))
        try:
            classes = _union_classes([p for p, _ in parts])
        except ValueError as e:
            raise Error(str(e))
        if len(classes) == 0:
            raise Error("y: no row is labeled (every label is -1, None or NaN); expected at least two labeled classes")
        if len(classes) == 1:
            raise Error("y: only one class (%r) is labeled; expected at least two labeled classes" % (classes[0],))
        codes = _encode(y, unlabeled, classes)  # replicated classes: every rank encodes alike
        if isinstance(X, _SparseRows):
            core.fit_sparse(*X.args(), codes, comm)
        else:
            core.fit(X, codes, comm)
        class_names = classes.tolist()
        if not (classes.dtype.kind in "iu" and class_names == list(range(len(classes)))):
            core.set_class_names(_json.dumps(class_names))  # every kind _label_kind keeps is JSON's
        self._core, self._comm, self._model_bytes = core, comm, None
        if names is not None:
            self.feature_names_in_ = _np.asarray(names, dtype=object)
        else:
            self.__dict__.pop("feature_names_in_", None)
        self.n_features_in_ = core.model()["d_input"]
        self.classes_ = classes
        self.trace_ratio_ = core.trace_ratio
        self.info_ = _json.loads(core.info)
        for name in ("transduction_", "label_distributions_", "outlier_distribution_"):
            self.__dict__.pop(name, None)
        # Auto's fit is its chosen method's: that method says whether there are soft labels.
        if (core.model()["method"] if method == _AUTO else method) in _PROPAGATING:
            F = core.soft_labels()
            c = len(classes)
            self.transduction_ = classes[_np.argmax(F[:, :c], axis=1)] if len(F) else classes[:0]
            mass = F[:, :c].sum(axis=1, keepdims=True)
            self.label_distributions_ = _np.divide(F[:, :c], mass, out=_np.full_like(F[:, :c], 1.0 / c),
                                                   where=mass > 0)
            self.outlier_distribution_ = F[:, c].copy()
        return self

    def _prepared(self, X, comm, what="transform"):
        """X checked on this rank against the fit, agreed over comm with its kind (dense or
        sparse) before the model is used. Collective."""
        def local():
            if getattr(self, "_core", None) is None and getattr(self, "_model_bytes", None) is None:
                self._fitted()  # raises NotFittedError, agreed like any other mistake
            self._check_names(X, reset=False)
            X_ = _rows(X)
            self._check_width(X_)
            return X_
        X = _agreed(comm, local, what, lambda X_: {"X's kind": _kind_of_rows(X_)})
        return self._fitted(comm), X

    def save(self, path, comm=None):
        """Writes the model file (as `ssdr fit --model`), with the class labels: one file, which
        rank 0 writes, so every rank must pass the same path (a path that differs on one rank
        raises the same ssdr.Error on every rank, naming it). Collective over comm."""
        comm = self._comm_or_default(comm)

        def local():
            if getattr(self, "_core", None) is None and getattr(self, "_model_bytes", None) is None:
                self._fitted()
            return _path(path)
        path = _agreed(comm, local, "save", lambda p: {"path": p})
        self._fitted(comm).save(path, comm)

    @property
    def model_(self):
        """What the fitted model holds: method, d_input, dim, classes, format_version, n_labeled
        and the fit's parameters (JSON text)."""
        return self._fitted().model()

    def _adopt(self, core, comm):
        """Takes a loaded core (load): the classes from the model's class names if it has them."""
        self._core, self._comm, self._model_bytes = core, comm, None
        model = core.model()
        self.n_features_in_ = model["d_input"]
        names = _json.loads(model["parameters"]).get("class_names")
        self.classes_ = _classes_from_names(names) if names is not None else _np.arange(model["classes"])
        return self

    # pickling: the model's bytes (the --model format), rebuilt on first use ------------------
    def __getstate__(self):
        state = dict(self.__dict__)
        core = state.pop("_core", None)
        state.pop("_comm", None)
        if core is not None and isinstance(self, _Projecting):  # lp keeps no model to predict with
            state["_model_bytes"] = core.to_bytes()
        return state

    def __setstate__(self, state):
        """Refuses a pickle whose model is not of this class's method (a SODA model under the
        name LDA would transform as SODA, silently), as load() does. Local (no collective: the
        model is parsed on this rank). \raises ssdr.Error naming both methods."""
        blob = state.get("_model_bytes")
        if blob is not None:
            held = _ssdr.model_method(blob)  # parses and checks the bytes (checksum, shapes)
            expected = self._fixed_method if isinstance(self, _MethodEstimator) else state.get("method")
            if held != expected and expected != _AUTO:  # auto's model is the chosen method's
                raise Error("pickle: the model's method is %s, not %s (%s)" % (held, expected, type(self).__name__))
        self.__dict__.update(state)
        self._core, self._comm = None, None

    def _more_tags(self):
        return {"requires_y": True,
                "_xfail_checks": {"check_classifiers_classes":
                                  "y = -1 marks an unlabeled sample (LabelSpreading's convention), so the check's "
                                  "binary labels [-1, 1] leave one labeled class"}}


class _Projecting:
    """transform, predict and score of the methods that learn a projection (all but lp)."""

    def transform(self, X, comm=None):
        """This rank's rows of the embedding (n_local x m, float64). Collective over comm."""
        comm = self._comm_or_default(comm)
        core, X = self._prepared(X, comm)
        if isinstance(X, _SparseRows):
            return core.transform_sparse(*X.args(), comm)
        return core.transform(X, comm)

    def fit_transform(self, X, y, comm=None):
        """fit(X, y) then transform(X). Collective over comm."""
        return self.fit(X, y, comm).transform(X, comm)

    def predict(self, X, comm=None):
        """The class of each of this rank's rows by 1-NN in the embedding against the fit's
        labeled rows (values of classes_). Collective over comm."""
        comm = self._comm_or_default(comm)
        core, X = self._prepared(X, comm, "predict")
        if isinstance(X, _SparseRows):
            return self.classes_[core.predict_sparse(*X.args(), comm)]
        return self.classes_[core.predict(X, comm)]

    def score(self, X, y, comm=None):
        """The fraction of the labeled rows of every rank (y not -1 / None) that predict labels
        right; a label the fit did not see counts as wrong. Collective over comm."""
        comm = self._comm_or_default(comm)

        def local():
            if getattr(self, "_core", None) is None and getattr(self, "_model_bytes", None) is None:
                self._fitted()
            self._check_names(X, reset=False)
            X_ = _rows(X)
            if isinstance(X_, _SparseRows):
                raise TypeError("score: X is sparse; use predict and compare")
            self._check_width(X_)
            y_ = _label_array(y, X_.shape[0])
            return X_, _encode(y_, _unlabeled(y_), self.classes_)
        X, codes = _agreed(comm, local)
        core = self._fitted(comm)
        return core.score(X, codes, comm)


class _Transductive:
    """lp: a transductive classifier. It labels the rows it was fitted on (transduction_,
    label_distributions_) and learns no projection for new rows, so it has no transform or
    predict (scikit-learn then treats it as a plain estimator)."""

    def fit_predict(self, X, y, comm=None):
        """fit(X, y), then the label of each of this rank's rows (transduction_). Collective."""
        return self.fit(X, y, comm).transduction_


def _path(path):
    import os
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError("path: expected a file name, got %s" % type(path).__name__)
    path = os.fsdecode(os.fspath(path))
    if not path:
        raise ValueError("path: empty; expected a file name")
    return path


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
        if value != value or value in (float("inf"), float("-inf")):
            raise Error("parameter %s: expected a finite number, got %r" % (name, value))
        return float(value)
    raise Error("parameter %s: expected a number, a string or a bool, got %r" % (name, value))


class Estimator(_Core, _Projecting):
    """A method of the table with its parameters: ``ssdr.Estimator("sl-lda", alpha_u=0.9)``.

    Unknown parameter names raise ValueError naming the parameter and listing the method's;
    values are checked (range, choices) at fit, raising ssdr.Error with ssdr's one-line
    message. Unset parameters (None) take the method's paper defaults, as `ssdr fit` does.
    The per-method classes (ssdr.SODA, ...) are scikit-learn estimators with explicit
    parameters; this generic one keeps ``method`` as a parameter.
    """

    def __init__(self, method, **params):
        self._setup(method, params)

    def _setup(self, method, params):
        if method not in _method_names():
            raise ValueError("unknown method %r; expected one of %s" % (method, ", ".join(_method_names())))
        self.method = method
        self._names = [_python_name(n) for n in _ssdr.parameter_names(method)]
        self._check_params(params)
        self._params = {name: params.get(name) for name in self._names}
        self._core, self._comm, self._model_bytes = None, None, None

    def _check_params(self, params):
        for name in params:
            if name not in self._names:
                raise ValueError("%r is not a parameter of %s (its parameters: %s)"
                                 % (name, self.method, ", ".join(self._names)))

    def _method(self):
        return self.method

    def _given(self):
        return {_table_name(n): v for n, v in self._params.items() if v is not None}

    def get_params(self, deep=True):
        """``method`` and every parameter of the method (None: its default)."""
        out = {"method": self.method}
        out.update(self._params)
        return out

    def set_params(self, **params):
        """Sets parameters by name (None: back to the default); forgets the fit. Returns self."""
        if "method" in params:
            rest = dict(self._params)
            rest.update({k: v for k, v in params.items() if k != "method"})
            self._setup(params["method"], {k: v for k, v in rest.items() if v is not None and
                                           k in [_python_name(n) for n in _ssdr.parameter_names(params["method"])]})
            return self
        self._check_params(params)
        self._params.update(params)
        self._core, self._model_bytes = None, None
        return self

    def __repr__(self):
        given = ["%s=%r" % (k, v) for k, v in self._params.items() if v is not None]
        return "Estimator(%s)" % ", ".join([repr(self.method)] + given)

    @classmethod
    def load(cls, path, comm=None, **params):
        """An estimator with the model of `path` (`ssdr fit --model` or save). Collective."""
        comm = _checked_comm(comm)
        plain = _agreed(comm, lambda: (_path(path), {k: _plain(k, v) for k, v in params.items() if v is not None}),
                        "load", lambda r: dict([("path", r[0])] + [("parameter " + k, v) for k, v in r[1].items()]))
        path, plain = plain
        core = _ssdr.Estimator.load(path, _json.dumps(plain), comm)
        return Estimator(core.method, **params)._adopt(core, comm)


class _MethodEstimator(_Core):
    """Base of the per-method classes: the parameters are the __init__ arguments."""

    _fixed_method = None  # "soda" for ssdr.SODA

    def _method(self):
        return self._fixed_method

    def _given(self):
        out = {}
        for name in _ssdr.parameter_names(self._fixed_method):
            value = getattr(self, _python_name(name))
            if value is not None and not (name == "verbose" and value is False):
                out[name] = value
        return out

    @classmethod
    def load(cls, path, comm=None, **params):
        """An estimator of this class with the model of `path`. Collective.
        \\raises ValueError when the model is of another method."""
        comm = _checked_comm(comm)
        plain = _agreed(comm, lambda: (_path(path), {k: _plain(k, v) for k, v in params.items() if v is not None}),
                        "load", lambda r: dict([("path", r[0])] + [("parameter " + k, v) for k, v in r[1].items()]))
        path, plain = plain
        if cls._fixed_method == _AUTO:  # the model's method (the chosen one) may not take cv_folds, ...
            plain = {k: v for k, v in plain.items() if k in _COMMON_PARAMETERS}
        core = _ssdr.Estimator.load(path, _json.dumps(plain), comm)
        # Auto's model is the chosen method's: any projecting method's model loads as Auto.
        if core.method != cls._fixed_method and cls._fixed_method != _AUTO:
            raise Error("%s: the model's method is %s, not %s" % (path, core.method, cls._fixed_method))
        return cls(**params)._adopt(core, comm)


def _class_name(method):
    special = {"1nn": "ONE_NN", "auto": "Auto"}
    return special.get(method, method.upper().replace("-", "_"))


def _make_class(method, summary, source, projects):
    """The class of one method: an explicit __init__ signature from the method's parameters
    (scikit-learn reads it), storing each argument unchanged."""
    names = [_python_name(n) for n in _ssdr.parameter_names(method)]
    defaults = {"verbose": False}
    args = ", ".join("%s=%r" % (n, defaults.get(n)) for n in names)
    body = "\n".join("    self.%s = %s" % (n, n) for n in names) or "    pass"
    namespace = {}
    exec("def __init__(self, *, %s):\n%s\n" % (args, body), namespace)
    init = namespace["__init__"]
    init.__doc__ = "%s: %s [%s]. None takes the method's paper default." % (method, summary, source)
    if projects:
        bases = (_MethodEstimator, _Projecting, _ClassifierMixin, _TransformerMixin, _BaseEstimator)
    else:
        bases = (_MethodEstimator, _Transductive, _BaseEstimator)
    doc = "%s: %s [%s]\n\nParameters: %s." % (method, summary, source, ", ".join(names))
    return type(_class_name(method), bases, {"__init__": init, "__doc__": doc, "_fixed_method": method,
                                             "__module__": __name__})


for _name, _summary, _source, _projects in _ssdr.methods():
    _cls = _make_class(_name, _summary, _source, _projects)
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
del _name, _summary, _source, _projects, _cls
