// The Python module ssdr._ssdr (pybind11 + mpi4py's C API): a thin layer over ssdr::Estimator
// (include/ssdr/driver/estimator.hpp). Each rank passes its block of rows as a NumPy array and
// an mpi4py communicator; parameters arrive as JSON text (python/ssdr/__init__.py builds it
// and keeps scikit-learn's conventions). ssdr::Error becomes ssdr.Error with the same one-line
// message when every rank of the call raised it; raised on some ranks only, the others would
// wait forever, so the message is printed and the communicator aborted, as the CLI does.
#include <mpi.h>
// mpi4py's C API: PyMPIComm_Get turns an mpi4py.MPI.Comm into its MPI_Comm.
#include <mpi4py/mpi4py.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ssdr/core/blas_kernels.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/runtime.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/driver/auto_select.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/model/model.hpp"

namespace py = pybind11;

namespace {

using Rows = py::array_t<double, py::array::c_style | py::array::forcecast>;
using Labels = py::array_t<int, py::array::c_style | py::array::forcecast>;

/// The MPI_Comm of an mpi4py communicator (None: MPI_COMM_WORLD). A null communicator or an
/// intercommunicator has no ranks to agree with: a ValueError on the ranks that passed it.
MPI_Comm to_comm(const py::object& comm) {
  if (comm.is_none()) return MPI_COMM_WORLD;
  MPI_Comm* c = PyMPIComm_Get(comm.ptr());
  if (c == nullptr) throw py::error_already_set();
  if (*c == MPI_COMM_NULL)
    throw py::value_error("comm: MPI.COMM_NULL; expected the communicator of the ranks that hold the rows");
  int inter = 0;
  MPI_Comm_test_inter(*c, &inter);
  if (inter) throw py::value_error("comm: an intercommunicator; expected an intracommunicator");
  return *c;
}

/// Runs f; an ssdr::Error not raised on every rank of comm aborts comm (see the file comment).
template <class F>
auto guarded(MPI_Comm comm, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ssdr::Error& e) {
    ssdr::abort_unless_collective(e, comm);
    throw;
  }
}

/// This rank's rows (n_local × d NumPy array) as a DistMatrix over comm with the prefix-sum
/// layout (make_dist_local). Collective.
ssdr::DistMatrix to_rows(const Rows& X, MPI_Comm comm) {
  if (X.ndim() != 2)
    throw py::value_error("X: expected a 2-D array (this rank's rows x features), got " + std::to_string(X.ndim()) +
                          " dimensions");
  const int64_t n = X.shape(0), d = X.shape(1);
  ssdr::DistMatrix D = ssdr::make_dist_local(comm, n, d);
  std::memcpy(D.v.data(), X.data(), static_cast<size_t>(n * d) * sizeof(double));
  return D;
}

using Index64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using Index32 = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

/// This rank's rows in CSR (scipy.sparse's indptr, indices, data; duplicates summed, zeros
/// dropped and indices sorted by the package) as SparseRows over comm with the prefix-sum
/// layout. Collective (the layout).
ssdr::SparseRows to_sparse_rows(const Index64& indptr, const Index32& indices, const Rows& data, int64_t cols,
                                MPI_Comm comm) {
  const int64_t n = indptr.shape(0) - 1, nnz = data.shape(0);
  const ssdr::DistMatrix layout = ssdr::make_dist_local(comm, n, 0);
  ssdr::SparseRows S;
  S.comm = comm;
  S.n_global = layout.n_global;
  S.row_start = layout.row_start;
  S.n_local = n;
  S.cols = cols;
  S.row_ptr.assign(indptr.data(), indptr.data() + indptr.shape(0));
  S.col.assign(indices.data(), indices.data() + indices.shape(0));
  S.val.assign(data.data(), data.data() + nnz);
  return S;
}

std::vector<int> to_labels(const Labels& y) {
  if (y.ndim() != 1) throw py::value_error("y: expected a 1-D array of labels, got " + std::to_string(y.ndim()) + " dimensions");
  return std::vector<int>(y.data(), y.data() + y.shape(0));
}

/// The parameters' JSON text (the package builds it; a parse error is ssdr's own error).
nlohmann::json parse(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    SSDR_REQUIRE(false, std::string("parameters: not valid JSON (") + e.what() + ")");
  }
  return {};
}

/// A DistMatrix's local rows as an n_local × cols NumPy array (a copy).
py::array_t<double> rows_array(const ssdr::DistMatrix& Y) {
  py::array_t<double> out({Y.n_local, Y.cols});
  if (!Y.v.empty()) std::memcpy(out.mutable_data(), Y.v.data(), Y.v.size() * sizeof(double));
  return out;
}

py::array_t<int64_t> labels_array(const std::vector<int>& p) {
  py::array_t<int64_t> out(static_cast<py::ssize_t>(p.size()));
  for (size_t i = 0; i < p.size(); ++i) out.mutable_data()[i] = p[i];
  return out;
}

class PyEstimator {
 public:
  PyEstimator(const std::string& method, const std::string& params_json) : e_(method, parse(params_json)) {}
  explicit PyEstimator(ssdr::Estimator e) : e_(std::move(e)) {}

  void fit(const Rows& X, const Labels& y, const py::object& comm) {
    const MPI_Comm c = to_comm(comm);
    std::vector<int> labels = to_labels(y);
    guarded(c, [&] {
      e_.fit(to_rows(X, c), labels);
      return 0;
    });
  }
  void fit_sparse(const Index64& indptr, const Index32& indices, const Rows& data, int64_t cols, const Labels& y,
                  const py::object& comm) {
    const MPI_Comm c = to_comm(comm);
    std::vector<int> labels = to_labels(y);
    guarded(c, [&] {
      e_.fit(to_sparse_rows(indptr, indices, data, cols, c), labels);
      return 0;
    });
  }
  py::array_t<double> transform_sparse(const Index64& indptr, const Index32& indices, const Rows& data, int64_t cols,
                                       const py::object& comm) const {
    const MPI_Comm c = to_comm(comm);
    return rows_array(guarded(c, [&] { return e_.transform(to_sparse_rows(indptr, indices, data, cols, c)); }));
  }
  py::array_t<int64_t> predict_sparse(const Index64& indptr, const Index32& indices, const Rows& data, int64_t cols,
                                      const py::object& comm) const {
    const MPI_Comm c = to_comm(comm);
    return labels_array(guarded(c, [&] { return e_.predict(to_sparse_rows(indptr, indices, data, cols, c)); }));
  }
  /// The soft labels of this rank's rows (n_local × (c+1), the outlier class last).
  py::array_t<double> soft_labels() const { return rows_array(e_.soft_labels()); }
  py::bytes to_bytes() const { return py::bytes(e_.to_bytes()); }
  static PyEstimator from_bytes(const py::bytes& bytes, const std::string& params_json, const py::object& comm) {
    const MPI_Comm c = to_comm(comm);
    const std::string b = bytes;
    return guarded(c, [&] { return PyEstimator(ssdr::Estimator::from_bytes(b, c, parse(params_json))); });
  }
  void set_class_names(const std::string& names_json) { e_.set_class_names(parse(names_json)); }
  py::array_t<double> transform(const Rows& X, const py::object& comm) const {
    const MPI_Comm c = to_comm(comm);
    return rows_array(guarded(c, [&] { return e_.transform(to_rows(X, c)); }));
  }
  py::array_t<int64_t> predict(const Rows& X, const py::object& comm) const {
    const MPI_Comm c = to_comm(comm);
    return labels_array(guarded(c, [&] { return e_.predict(to_rows(X, c)); }));
  }
  double score(const Rows& X, const Labels& y, const py::object& comm) const {
    const MPI_Comm c = to_comm(comm);
    std::vector<int> labels = to_labels(y);
    return guarded(c, [&] { return e_.score(to_rows(X, c), labels); });
  }
  void save(const std::string& path, const py::object& comm) const {
    const MPI_Comm c = to_comm(comm);
    guarded(c, [&] {
      e_.save(path, c);
      return 0;
    });
  }
  static PyEstimator load(const std::string& path, const std::string& params_json, const py::object& comm) {
    const MPI_Comm c = to_comm(comm);
    return guarded(c, [&] { return PyEstimator(ssdr::Estimator::load(path, c, parse(params_json))); });
  }
  std::string method() const { return e_.method(); }
  bool fitted() const { return e_.fitted(); }
  std::string info() const { return e_.info().dump(); }
  double trace_ratio() const { return e_.trace_ratio(); }
  /// What the model holds, for the Python attributes: d_input, dim, classes, format, the
  /// fit's parameters (JSON text).
  py::dict model() const {
    const ssdr::model::Model& m = e_.model();
    py::dict d;
    d["method"] = m.method;
    d["d_input"] = m.d_input;
    d["dim"] = m.W.cols;
    d["classes"] = m.classes;
    d["format_version"] = m.format_version;
    d["parameters"] = m.parameters_json;
    d["n_labeled"] = m.labeled_labels.size();
    return d;
  }

 private:
  ssdr::Estimator e_;
};

}  // namespace

PYBIND11_MODULE(_ssdr, m) {
  m.doc() = "ssdr's C++ core (use the ssdr package: ssdr.Estimator, ssdr.SODA, ...)";
  if (import_mpi4py() < 0) throw py::error_already_set();
  // ssdr.Error: a ValueError (scikit-learn's type for bad input) and, as before, a RuntimeError.
  static PyObject* error_type = nullptr;
  {
    py::tuple bases = py::make_tuple(py::reinterpret_borrow<py::object>(PyExc_ValueError),
                                     py::reinterpret_borrow<py::object>(PyExc_RuntimeError));
    error_type = PyErr_NewExceptionWithDoc("ssdr._ssdr.Error",
                                           "ssdr's error: one line, raised on every rank of the call's communicator.",
                                           bases.ptr(), nullptr);
    if (error_type == nullptr) throw py::error_already_set();
    m.attr("Error") = py::handle(error_type);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ssdr::Error& e) {
      PyErr_SetString(error_type, e.what());
    }
  });
  m.def(
      "agree",
      [](const py::object& comm, const std::string& problem) {
        const MPI_Comm c = to_comm(comm);
        ssdr::check_collective(c, problem.empty(), problem, __FILE__, __LINE__);
      },
      py::arg("comm"), py::arg("problem"),
      "Collective over comm: raises ssdr.Error on every rank with the lowest rank's problem when any rank "
      "passed a non-empty one (the Python layer's local checks, agreed before the C++ core runs).");
  m.def(
      "model_method",
      [](const py::bytes& bytes) {
        const std::string b = bytes;
        return ssdr::model::from_bytes_collective(b, "the pickled model", MPI_COMM_SELF).method;
      },
      py::arg("bytes"),
      "The method of the model whose bytes (to_bytes) these are, parsed and checked on this rank alone "
      "(a pickle's __setstate__). Local. Raises ssdr.Error as load does.");
  m.def(
      "initialize",
      [] {
        // No argv (PETSc reads PETSC_OPTIONS), and Python keeps its own signal handling.
        return ssdr::initialize(nullptr, nullptr, false);
      },
      "Initializes SLEPc and PETSc on MPI_COMM_WORLD unless already (collective); True when it did.");
  m.def("finalize", &ssdr::finalize, "Finalizes SLEPc/PETSc if initialize() started them (collective).");
  m.def("version", [] { return std::string(ssdr::version()); });
  m.def("blas_kernels", &ssdr::blas_core_name,
        "The kernels OpenBLAS runs (openblas_get_corename(): 'SkylakeX', 'Haswell', 'Prescott', ...; '' for "
        "another BLAS). Generic ones on a CPU with AVX2: set OPENBLAS_CORETYPE before starting Python (local).");
  m.def("methods", [] {
    py::list out;
    for (const auto& info : ssdr::methods::method_table())
      out.append(py::make_tuple(info.name, info.summary, info.source, info.projects));
    // auto: a method of the table chosen by cross-validation (driver/auto_select.hpp).
    out.append(py::make_tuple(std::string(ssdr::driver::kAutoMethod),
                              std::string("the method, m and parameters chosen by k-fold cross-validation on the "
                                          "labeled rows (transductive: the unlabeled rows stay in every fold)"),
                              std::string("docs/methods-guide.md"), true));
    return out;
  }, "The method table: (name, summary, paper, projects) per method, then auto.");
  m.def("propagating_methods", [] {
    py::list out;
    for (const auto& info : ssdr::methods::method_table())
      if (ssdr::methods::propagates_labels(info)) out.append(info.name);
    return out;
  }, "The methods whose fit propagates labels (soft labels: transduction_, label_distributions_).");
  m.def("parameter_names", &ssdr::Estimator::parameter_names, py::arg("method"),
        "Every parameter the method accepts (dim, seed, max_kernel_memory, verbose, then its own).");
  py::class_<PyEstimator>(m, "Estimator")
      .def(py::init<const std::string&, const std::string&>(), py::arg("method"), py::arg("params_json"))
      .def("fit", &PyEstimator::fit, py::arg("X"), py::arg("y"), py::arg("comm"))
      .def("fit_sparse", &PyEstimator::fit_sparse, py::arg("indptr"), py::arg("indices"), py::arg("data"),
           py::arg("cols"), py::arg("y"), py::arg("comm"))
      .def("transform_sparse", &PyEstimator::transform_sparse, py::arg("indptr"), py::arg("indices"), py::arg("data"),
           py::arg("cols"), py::arg("comm"))
      .def("predict_sparse", &PyEstimator::predict_sparse, py::arg("indptr"), py::arg("indices"), py::arg("data"),
           py::arg("cols"), py::arg("comm"))
      .def("soft_labels", &PyEstimator::soft_labels)
      .def("to_bytes", &PyEstimator::to_bytes)
      .def_static("from_bytes", &PyEstimator::from_bytes, py::arg("bytes"), py::arg("params_json"), py::arg("comm"))
      .def("set_class_names", &PyEstimator::set_class_names, py::arg("names_json"))
      .def("transform", &PyEstimator::transform, py::arg("X"), py::arg("comm"))
      .def("predict", &PyEstimator::predict, py::arg("X"), py::arg("comm"))
      .def("score", &PyEstimator::score, py::arg("X"), py::arg("y"), py::arg("comm"))
      .def("save", &PyEstimator::save, py::arg("path"), py::arg("comm"))
      .def_static("load", &PyEstimator::load, py::arg("path"), py::arg("params_json"), py::arg("comm"))
      .def_property_readonly("method", &PyEstimator::method)
      .def_property_readonly("fitted", &PyEstimator::fitted)
      .def_property_readonly("info", &PyEstimator::info)
      .def_property_readonly("trace_ratio", &PyEstimator::trace_ratio)
      .def("model", &PyEstimator::model);
}
