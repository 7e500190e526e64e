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

#include "ssdr/core/error.hpp"
#include "ssdr/core/runtime.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/methods/method.hpp"

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
  py::array_t<double> transform(const Rows& X, const py::object& comm) const {
    const MPI_Comm c = to_comm(comm);
    const ssdr::DistMatrix Y = guarded(c, [&] { return e_.transform(to_rows(X, c)); });
    py::array_t<double> out({Y.n_local, Y.cols});
    std::memcpy(out.mutable_data(), Y.v.data(), Y.v.size() * sizeof(double));
    return out;
  }
  py::array_t<int64_t> predict(const Rows& X, const py::object& comm) const {
    const MPI_Comm c = to_comm(comm);
    const std::vector<int> p = guarded(c, [&] { return e_.predict(to_rows(X, c)); });
    py::array_t<int64_t> out(static_cast<py::ssize_t>(p.size()));
    for (size_t i = 0; i < p.size(); ++i) out.mutable_data()[i] = p[i];
    return out;
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
      "initialize",
      [] {
        // No argv (PETSc reads PETSC_OPTIONS), and Python keeps its own signal handling.
        return ssdr::initialize(nullptr, nullptr, false);
      },
      "Initializes SLEPc and PETSc on MPI_COMM_WORLD unless already (collective); True when it did.");
  m.def("finalize", &ssdr::finalize, "Finalizes SLEPc/PETSc if initialize() started them (collective).");
  m.def("version", [] { return std::string(ssdr::version()); });
  m.def("methods", [] {
    py::list out;
    for (const auto& info : ssdr::methods::method_table())
      out.append(py::make_tuple(info.name, info.summary, info.source, info.projects));
    return out;
  }, "The method table: (name, summary, paper, projects) per method.");
  m.def("parameter_names", &ssdr::Estimator::parameter_names, py::arg("method"),
        "Every parameter the method accepts (dim, seed, max_kernel_memory, verbose, then its own).");
  py::class_<PyEstimator>(m, "Estimator")
      .def(py::init<const std::string&, const std::string&>(), py::arg("method"), py::arg("params_json"))
      .def("fit", &PyEstimator::fit, py::arg("X"), py::arg("y"), py::arg("comm"))
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
