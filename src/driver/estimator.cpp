#include "ssdr/driver/estimator.hpp"

#include "ssdr/driver/auto_select.hpp"

#include <algorithm>
#include <cmath>

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/values.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/parameters.hpp"
#include "ssdr/model/projector.hpp"

namespace ssdr {

namespace driver {

FitConfig make_fit_config(const std::string& method, const std::vector<ParameterSetting>& settings, int64_t dim,
                          uint64_t seed, double max_kernel_memory) {
  const methods::MethodInfo& info = methods::find_method(method);
  SSDR_REQUIRE(dim >= 0, "dim: expected an integer >= 0, got " + std::to_string(dim));
  SSDR_REQUIRE(max_kernel_memory >= 0 && std::isfinite(max_kernel_memory), "max_kernel_memory must be >= 0");
  FitConfig c;
  c.method = info.name;
  auto& mo = c.method_options;
  mo.dim = dim;
  // The method's paper preprocessing and kernel, then every setting the user gave, in the
  // table's order: one the method does not use is an error, and each value goes through the
  // same check as job files and --grid (methods::set_parameter).
  c.preprocess = info.preprocess;
  kernels::KernelOptions kernel = info.kernel;
  methods::ParameterTarget target{mo, c.preprocess, kernel};
  for (const auto& p : methods::parameter_table())
    for (const ParameterSetting& s : settings) {
      if (s.name != p.name) continue;
      methods::require_parameter(info, p.name, s.spelling);
      methods::set_parameter(target, p.name, s.value, s.spelling);
    }
  for (const ParameterSetting& s : settings)
    SSDR_REQUIRE(methods::lookup_parameter(s.name) != nullptr,
                 s.spelling + ": unknown parameter '" + s.name + "'; expected one of " + methods::parameter_list());
  kernel.seed = seed;
  kernel.max_memory_mib = max_kernel_memory;
  mo.graph.knn_seed = seed;
  // What the model and the report record: the parameters the method uses (the graph
  // actually built is in the report's info.graph), its kernel, m and the seed.
  c.parameters = methods::parameter_values(info, methods::ConstParameterTarget{mo, c.preprocess, kernel});
  c.parameters["method"] = c.method;
  c.parameters["dim"] = mo.dim;
  c.parameters["kernel"] = kernels::to_json(kernel);
  c.parameters["seed"] = seed;
  return c;
}

}  // namespace driver

namespace {

/// The estimator's own parameters (not in methods::parameter_table()).
const char* const kOwnParameters[] = {"dim", "seed", "max_kernel_memory", "verbose"};

/// The global quiet switch set to !verbose for the lifetime of a call, then restored.
class QuietScope {
 public:
  QuietScope(bool manage, bool verbose) : manage_(manage), before_(quiet()) {
    if (manage_) set_quiet(!verbose);
  }
  ~QuietScope() {
    if (manage_) set_quiet(before_);
  }
  QuietScope(const QuietScope&) = delete;
  QuietScope& operator=(const QuietScope&) = delete;

 private:
  bool manage_, before_;
};

/// A whole number in [0, 2^53] from a JSON value (an integral double such as 9.0 passes).
/// Replicated. \throws ssdr::Error (replicated) naming the parameter.
int64_t whole_number(const nlohmann::json& v, const std::string& name) {
  const bool ok = (v.is_number_integer() && v.get<int64_t>() >= 0) ||
                  (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() <= 9007199254740992.0 &&
                   v.get<double>() == std::floor(v.get<double>()));
  SSDR_REQUIRE(ok, name + ": expected an integer >= 0, got " + v.dump());
  return v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(v.get<double>());
}

/// The rows of X carry the prefix-sum layout over X.comm (row_start = Σ of the lower ranks'
/// n_local, n_global = Σ n_local) and d is the same on every rank. Collective.
void check_layout(const DistMatrix& X, const char* what) {
  int64_t start = 0, n = 0, local = X.n_local;
  MPI_Exscan(&local, &start, 1, MPI_INT64_T, MPI_SUM, X.comm);
  int rank = 0;
  MPI_Comm_rank(X.comm, &rank);
  if (rank == 0) start = 0;  // MPI_Exscan leaves rank 0's result undefined
  MPI_Allreduce(&local, &n, 1, MPI_INT64_T, MPI_SUM, X.comm);
  int64_t cols[2] = {X.cols, -X.cols};
  MPI_Allreduce(MPI_IN_PLACE, cols, 2, MPI_INT64_T, MPI_MAX, X.comm);
  const bool ok = X.n_local >= 0 && X.row_start == start && X.n_global == n &&
                  static_cast<int64_t>(X.v.size()) == X.n_local * X.cols;
  SSDR_CHECK_COLLECTIVE(X.comm, ok,
                        std::string(what) + ": the rows' layout is not the ranks' blocks in rank order (row_start " +
                            std::to_string(X.row_start) + ", expected " + std::to_string(start) + "; n " +
                            std::to_string(X.n_global) + ", expected " + std::to_string(n) +
                            "; or the values are not n_local x d)");
  SSDR_REQUIRE(cols[0] == -cols[1], std::string(what) + ": the ranks' rows differ in width (" +
                                        std::to_string(-cols[1]) + " to " + std::to_string(cols[0]) + " columns)");
}

/// The communicator of a call: a valid intracommunicator. Local: a null communicator has no
/// ranks to agree with, so each rank that holds one raises alone (replicated).
void check_comm(MPI_Comm comm, const char* what) {
  SSDR_REQUIRE(comm != MPI_COMM_NULL, std::string(what) + ": the communicator is MPI_COMM_NULL; expected the "
                                                          "communicator of the ranks that hold the rows");
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  SSDR_REQUIRE(!inter, std::string(what) + ": the communicator is an intercommunicator; expected an intracommunicator");
}

/// The rows a call receives, checked before any numerics, every verdict agreed over X.comm:
/// a valid communicator, the prefix-sum layout with the same d on every rank, and every value
/// finite within ±kMaxAbsValue (check_values, naming `what`[i, j]). Collective over X.comm.
void check_rows(const DistMatrix& X, const char* what) {
  check_comm(X.comm, what);
  check_layout(X, what);
  check_values(X, what);
}
void check_rows(const SparseRows& X, const char* what) {
  check_comm(X.comm, what);
  int64_t local = X.n_local, n = 0, start = 0;
  MPI_Exscan(&local, &start, 1, MPI_INT64_T, MPI_SUM, X.comm);
  if (comm_rank(X.comm) == 0) start = 0;
  MPI_Allreduce(&local, &n, 1, MPI_INT64_T, MPI_SUM, X.comm);
  const bool ok = X.n_local >= 0 && X.row_start == start && X.n_global == n &&
                  static_cast<int64_t>(X.row_ptr.size()) == X.n_local + 1 &&
                  X.col.size() == X.val.size() && static_cast<int64_t>(X.val.size()) == X.nnz_local();
  SSDR_CHECK_COLLECTIVE(X.comm, ok, std::string(what) + ": the sparse rows' layout is not the ranks' blocks in rank order");
  int64_t cols[2] = {X.cols, -X.cols};
  MPI_Allreduce(MPI_IN_PLACE, cols, 2, MPI_INT64_T, MPI_MAX, X.comm);
  SSDR_REQUIRE(cols[0] == -cols[1], std::string(what) + ": the ranks' rows differ in width (" +
                                        std::to_string(-cols[1]) + " to " + std::to_string(cols[0]) + " columns)");
  check_values(X, what);
}

/// The method and parameters are rank 0's on every rank: a parameter set on some ranks only
/// would send the ranks down different code paths. Collective over comm (one broadcast).
/// \throws ssdr::Error (collectively) naming the first parameter that differs.
void check_same_parameters(const driver::FitConfig& config, MPI_Comm comm) {
  const nlohmann::json mine = {{"method", config.method}, {"parameters", config.parameters}};
  const nlohmann::json root = nlohmann::json::parse(bcast_string(mine.dump(), 0, comm));
  // The first name (method, then parameters in name order, set on either side) that differs;
  // the message names this rank, the lowest one that differs (check_collective sends its text).
  std::string differs;
  nlohmann::json here, there;
  if (root["method"] != mine["method"]) {
    differs = "method", here = mine["method"], there = root["method"];
  } else if (root != mine) {
    nlohmann::json names = nlohmann::json::object();
    for (const auto& [name, value] : mine["parameters"].items()) names[name] = true;
    for (const auto& [name, value] : root["parameters"].items()) names[name] = true;
    for (const auto& [name, unused] : names.items()) {
      const nlohmann::json a = mine["parameters"].value(name, nlohmann::json()), b = root["parameters"].value(name, nlohmann::json());
      if (a != b) {
        differs = name, here = a, there = b;
        break;
      }
    }
  }
  const auto shown = [](const nlohmann::json& v) { return v.is_null() ? std::string("unset") : v.dump(); };
  SSDR_CHECK_COLLECTIVE(comm, differs.empty(),
                        "fit: " + differs + " is " + shown(here) + " on rank " + std::to_string(comm_rank(comm)) +
                            " but " + shown(there) + " on rank 0; expected the same method and parameters on every rank");
}

/// The fit's labeled samples into its model, for predict: their embedding (l×m, in
/// increasing global index, so the model has the same bytes on any rank count) and their
/// labels, as the fit gathered them (FitOutcome::labeled_embedding). Local.
void keep_labeled_samples(model::Model& m, const driver::FitOutcome& out) {
  m.labeled_labels = out.labeled_labels;
  const int64_t l = static_cast<int64_t>(m.labeled_labels.size());
  const int64_t cols = l > 0 ? static_cast<int64_t>(out.labeled_embedding.size()) / l : out.dim;
  SSDR_CHECK(static_cast<int64_t>(out.labeled_embedding.size()) == l * cols,
             "fit: the labeled rows of the embedding do not match the split");
  m.labeled_embedding = Dense(cols, l);  // column j = row j of the row-major l×m block
  m.labeled_embedding.v = out.labeled_embedding;
}

}  // namespace

Estimator::Estimator(std::string method, nlohmann::json params) {
  config_.method = driver::is_auto(method) ? std::string(driver::kAutoMethod) : methods::find_method(method).name;
  set_params(params);
}

Estimator::Estimator(driver::FitConfig config) : config_(std::move(config)), manage_quiet_(false) {}

std::vector<std::string> Estimator::parameter_names(const std::string& method) {
  std::vector<std::string> names(std::begin(kOwnParameters), std::end(kOwnParameters));
  if (driver::is_auto(method)) {  // the folds, and what auto lets the user fix for every candidate
    names.push_back("cv_folds");
    names.push_back("auto_race");
    names.push_back("groups");
    for (const auto& p : methods::parameter_table())
      if (p.name != "dim" && driver::auto_accepts(p.name)) names.push_back(p.name);
    return names;
  }
  const methods::MethodInfo& info = methods::find_method(method);
  for (const auto& p : methods::parameter_table())
    if (p.name != "dim" && methods::uses_parameter(info, p.name)) names.push_back(p.name);
  return names;
}

Estimator& Estimator::set_params(const nlohmann::json& params) {
  SSDR_REQUIRE(params.is_object() || params.is_null(), "Estimator parameters: expected an object {name: value}");
  const std::vector<std::string> names = parameter_names(config_.method);
  nlohmann::json merged = params_;
  if (params.is_object())
    for (const auto& [name, value] : params.items()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        SSDR_REQUIRE(false, "'" + name + "' is not a parameter of " + config_.method + " (its parameters: " + list + ")");
      }
      if (value.is_null()) merged.erase(name);
      else merged[name] = value;
    }
  const nlohmann::json before = params_;
  params_ = std::move(merged);
  try {
    configure();
  } catch (...) {
    params_ = before;
    throw;
  }
  fitted_ = false;
  loaded_ = false;
  model_ = model::Model();
  soft_labels_ = DistMatrix();
  info_ = nlohmann::json::object();
  trace_ratio_ = std::numeric_limits<double>::quiet_NaN();
  return *this;
}

void Estimator::configure() {
  int64_t dim = 0;
  uint64_t seed = 0;
  double max_kernel_memory = 0;
  bool verbose = false;
  int cv_folds = 5;
  bool race = true;
  int groups = 1;
  std::vector<driver::ParameterSetting> settings;
  for (const auto& [name, value] : params_.items()) {
    if (name == "cv_folds") {  // auto only (parameter_names)
      cv_folds = static_cast<int>(std::min<int64_t>(whole_number(value, name), 1 << 30));
    } else if (name == "auto_race") {  // auto only: select_candidates' exact racing (--auto-race)
      SSDR_REQUIRE(value.is_boolean() || value == "on" || value == "off",
                   "auto_race: expected true or false (or \"on\", \"off\"), got " + value.dump());
      race = value.is_boolean() ? value.get<bool>() : value == "on";
    } else if (name == "groups") {  // auto only: candidates in groups of ranks (--groups)
      groups = static_cast<int>(std::min<int64_t>(whole_number(value, name), 1 << 30));
    } else if (name == "dim") {
      dim = whole_number(value, name);
    } else if (name == "seed") {
      seed = static_cast<uint64_t>(whole_number(value, name));
    } else if (name == "max_kernel_memory") {
      SSDR_REQUIRE(value.is_number() && value.get<double>() >= 0, "max_kernel_memory: expected a number >= 0, got " + value.dump());
      max_kernel_memory = value.get<double>();
    } else if (name == "verbose") {
      SSDR_REQUIRE(value.is_boolean(), "verbose: expected true or false, got " + value.dump());
      verbose = value.get<bool>();
    } else {
      settings.push_back({name, value, config_.method + " estimator"});
    }
  }
  driver::FitConfig c = driver::is_auto(config_.method)
                           ? driver::make_auto_config(settings, dim, seed, max_kernel_memory, cv_folds, race, groups)
                           : driver::make_fit_config(config_.method, settings, dim, seed, max_kernel_memory);
  config_ = std::move(c);
  verbose_ = verbose;
}

namespace {
/// The data set and roles of Estimator::fit from every rank's y (one entry per local row:
/// class 0..c−1 or −1): the labels and roles of this rank's rows (an unlabeled row stands as
/// class 0 in the data set; its evaluation means nothing and is not kept) and c, agreed over
/// comm without gathering y (nothing of size n on any rank). Collective over comm.
/// \throws ssdr::Error (collectively) as Estimator::fit.
std::vector<data::Role> labeled_roles(const std::vector<int>& y, int64_t n_local, int64_t row_start, int64_t n_global,
                                      int64_t d, MPI_Comm comm, io::Dataset& ds) {
  SSDR_CHECK_COLLECTIVE(comm, static_cast<int64_t>(y.size()) == n_local,
                        "fit: y has " + std::to_string(y.size()) + " labels for " + std::to_string(n_local) +
                            " rows on this rank; expected one per row (-1: unlabeled)");
  SSDR_REQUIRE(n_global > 0, "fit: X has no rows on any rank; expected at least one labeled row per class");
  SSDR_REQUIRE(d > 0, "fit: X has no features (d = 0); expected n x d rows with d >= 1");
  std::vector<data::Role> roles(y.size(), data::Role::unlabeled);
  ds.labels.assign(y.size(), 0);
  // The first bad label in row order (the lowest failing rank's message), the largest label
  // and the number of labeled rows.
  std::string bad;
  int64_t facts[2] = {-1, 0};  // largest label, labeled rows
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] < -1) {
      bad = "fit: y[" + std::to_string(row_start + static_cast<int64_t>(i)) + "] = " + std::to_string(y[i]) +
            "; expected a class 0, 1, ... or -1 (unlabeled)";
      break;
    }
    if (y[i] < 0) continue;
    roles[i] = data::Role::labeled;
    ds.labels[i] = y[i];
    facts[0] = std::max<int64_t>(facts[0], y[i]);
    ++facts[1];
  }
  SSDR_CHECK_COLLECTIVE(comm, bad.empty(), bad);
  int64_t largest = 0, labeled = 0;
  MPI_Allreduce(&facts[0], &largest, 1, MPI_INT64_T, MPI_MAX, comm);
  MPI_Allreduce(&facts[1], &labeled, 1, MPI_INT64_T, MPI_SUM, comm);
  SSDR_REQUIRE(labeled > 0, "fit: no row is labeled (every y is -1); expected at least two labeled classes");
  // Which classes are labeled: a flag per class up to min(largest, labeled) — c ≤ the labeled
  // rows, so the first missing class is found there (O(l), never O(n) or O(largest label)).
  const int64_t span = std::min(largest, labeled) + 1;
  std::vector<int> present(static_cast<size_t>(span), 0);
  for (size_t i = 0; i < y.size(); ++i)
    if (y[i] >= 0 && y[i] < span) present[static_cast<size_t>(y[i])] = 1;
  MPI_Allreduce(MPI_IN_PLACE, present.data(), static_cast<int>(span), MPI_INT, MPI_MAX, comm);
  // Classes 0..c−1, c = the largest label + 1 (no wrap-around: at most l classes), each labeled.
  for (int64_t k = 0; k < span; ++k)
    SSDR_REQUIRE(present[static_cast<size_t>(k)] != 0,
                 "fit: class " + std::to_string(k) + " has no labeled row, but the largest label is " +
                     std::to_string(largest) + "; expected every class 0.." + std::to_string(largest) +
                     " labeled at least once");
  SSDR_REQUIRE(largest < span, "fit: the largest label is " + std::to_string(largest) + " but only " +
                                   std::to_string(labeled) + " rows are labeled; expected every class 0.." +
                                   std::to_string(largest) + " labeled at least once");
  SSDR_REQUIRE(largest >= 1, "fit: only class 0 is labeled; expected at least two labeled classes");
  ds.classes = static_cast<int>(largest + 1);
  return roles;
}
}  // namespace

Estimator& Estimator::fit(DistMatrix X, const std::vector<int>& y) {
  QuietScope scope(manage_quiet_, verbose_);
  check_rows(X, "fit: X");
  io::Dataset ds;
  const std::vector<data::Role> roles = labeled_roles(y, X.n_local, X.row_start, X.n_global, X.cols, X.comm, ds);
  ds.X = std::move(X);
  fit_split(ds, roles, false);
  return *this;
}

Estimator& Estimator::fit(SparseRows X, const std::vector<int>& y) {
  QuietScope scope(manage_quiet_, verbose_);
  check_rows(X, "fit: X");
  io::Dataset ds;
  const std::vector<data::Role> roles = labeled_roles(y, X.n_local, X.row_start, X.n_global, X.cols, X.comm, ds);
  // The dense matrix's shape and layout without its values, as the LIBSVM reader keeps it.
  ds.X.comm = X.comm;
  ds.X.n_global = X.n_global;
  ds.X.row_start = X.row_start;
  ds.X.n_local = X.n_local;
  ds.X.cols = X.cols;
  ds.sparse = true;
  ds.Xs = std::move(X);
  fit_split(ds, roles, false);
  return *this;
}

driver::FitOutcome Estimator::fit_split(io::Dataset& ds, const std::vector<data::Role>& roles, bool keep_embedding) {
  QuietScope scope(manage_quiet_, verbose_);
  fitted_ = false;
  loaded_ = false;
  const MPI_Comm comm = ds.X.comm;
  check_comm(comm, "fit");
  check_same_parameters(config_, comm);
  const std::string what = ds.source.empty() ? "fit: X" : ds.source;
  if (ds.sparse) check_values(ds.Xs, what);
  else if (ds.typed) check_values(ds.rows, what);
  else check_values(ds.X, what);
  // auto: the configuration cross-validation chooses on the labeled rows (driver::select_auto),
  // before the fit consumes the rows.
  driver::FitConfig config = config_;
  nlohmann::json selection;
  if (driver::is_auto(config_.method)) {
    driver::Selection sel =
        driver::select_auto(ds, roles, config_, config_.parameters.at("seed").get<uint64_t>());
    config = std::move(sel.config);
    selection = std::move(sel.report);
  }
  const bool projects = methods::find_method(config.method).projects;
  // The model's labeled samples come with the fit (FitOutcome::labeled_embedding): the n×m
  // embedding is formed only when asked for.
  driver::FitOutcome out = driver::fit_and_evaluate_consuming(ds, roles, config, keep_embedding);
  if (projects) keep_labeled_samples(out.model, out);
  if (!selection.is_null()) out.info["selection"] = selection;
  model_ = out.model;
  info_ = out.info;
  trace_ratio_ = out.trace_ratio;
  soft_labels_ = out.soft_labels;  // n_t×(c+1): small beside the data
  fitted_ = true;
  return out;
}

const DistMatrix& Estimator::soft_labels() const {
  SSDR_REQUIRE(fitted_ && !loaded_, "soft_labels: the " + config_.method +
                                        " estimator has no fit of its own: call fit first (a loaded model keeps none)");
  SSDR_REQUIRE(soft_labels_.cols > 0, "soft_labels: method " + config_.method +
                                          " propagates no labels (soda, ksoda, lp, sl-lda and sl-lda-wls do)");
  return soft_labels_;
}

std::string Estimator::to_bytes() const {
  SSDR_REQUIRE(fitted_, "to_bytes: the " + config_.method + " estimator is not fitted: call fit (or load) first");
  return model::to_bytes(model_);
}

Estimator Estimator::from_bytes(const std::string& bytes, MPI_Comm comm, const nlohmann::json& params) {
  check_comm(comm, "from_bytes");
  model::Model m = model::from_bytes_collective(bytes, "the pickled model", comm);
  Estimator e(m.method, params);
  e.model_ = std::move(m);
  e.fitted_ = true;
  e.loaded_ = true;
  return e;
}

Estimator& Estimator::set_class_names(const nlohmann::json& names) {
  SSDR_REQUIRE(fitted_, "set_class_names: the " + config_.method + " estimator is not fitted");
  SSDR_REQUIRE(names.is_array() && static_cast<int64_t>(names.size()) == model_.classes,
               "set_class_names: expected a list of " + std::to_string(model_.classes) + " names, got " +
                   std::to_string(names.is_array() ? names.size() : 0));
  nlohmann::json p = nlohmann::json::parse(model_.parameters_json);
  p["class_names"] = names;
  model_.parameters_json = p.dump();
  return *this;
}

const model::Model& Estimator::model() const {
  SSDR_REQUIRE(fitted_, "the " + config_.method + " estimator is not fitted: call fit (or load) first");
  return model_;
}

void Estimator::require_projection(const char* what, MPI_Comm comm) const {
  SSDR_CHECK_COLLECTIVE(comm, fitted_, std::string(what) + ": the " + config_.method +
                                           " estimator is not fitted: call fit (or load) first");
  SSDR_REQUIRE(methods::find_method(model_.method).projects,
               std::string(what) + ": method " + model_.method +
                   " learns no projection (a transductive classifier of its fit's rows only)");
}

namespace {
/// model::project of dense or sparse rows after the estimator's checks. Collective over X.comm.
template <class Rows>
DistMatrix checked_project(const model::Model& m, const Rows& X, const char* what) {
  SSDR_CHECK_COLLECTIVE(X.comm, X.cols == m.d_input,
                        std::string(what) + ": X has " + std::to_string(X.cols) + " features but the model expects " +
                            std::to_string(m.d_input));
  DistMatrix Y = model::project(m, X);
  // Rows within ±kMaxAbsValue can still map beyond it (a polynomial kernel of rows far
  // larger than the fit's): refused, never returned as infinities.
  int64_t bad = -1;
  for (int64_t k = 0; k < Y.n_local * Y.cols && bad < 0; ++k)
    if (!value_problem(Y.v[static_cast<size_t>(k)]).empty()) bad = k;
  SSDR_CHECK_COLLECTIVE(X.comm, bad < 0,
                        std::string(what) + ": the embedding of row " + std::to_string(X.row_start + bad / std::max<int64_t>(Y.cols, 1)) +
                            " of X overflows (" + value_problem(Y.v[static_cast<size_t>(std::max<int64_t>(bad, 0))]) +
                            "); expected rows on the scale of the fit's data");
  return Y;
}
}  // namespace

template <class Rows>
DistMatrix Estimator::project(const Rows& X, const char* what) const {
  check_rows(X, (std::string(what) + ": X").c_str());
  require_projection(what, X.comm);
  return checked_project(model_, X, what);
}

DistMatrix Estimator::transform(const DistMatrix& X) const {
  QuietScope scope(manage_quiet_, verbose_);
  Phase phase("transform");
  return project(X, "transform");
}

DistMatrix Estimator::transform(const SparseRows& X) const {
  QuietScope scope(manage_quiet_, verbose_);
  Phase phase("transform");
  return project(X, "transform");
}

std::vector<int> Estimator::nearest_labeled(const DistMatrix& Y) const {
  return evaluation::nearest_labels(Y, model_.labeled_embedding.v, model_.labeled_labels);
}

namespace {
void require_labeled(const model::Model& m) {
  SSDR_REQUIRE(m.format_version >= model::kFirstVersionWithLabeled && !m.labeled_labels.empty(),
               "predict: the model (format version " + std::to_string(m.format_version) +
                   ") keeps no labeled samples to predict from; refit it with this ssdr");
}
}  // namespace

template <class Rows>
std::vector<int> Estimator::predict_rows(const Rows& X) const {
  QuietScope scope(manage_quiet_, verbose_);
  check_rows(X, "predict: X");
  require_projection("predict", X.comm);
  require_labeled(model_);
  Phase phase("predict");
  return nearest_labeled(project(X, "predict"));
}

std::vector<int> Estimator::predict(const DistMatrix& X) const { return predict_rows(X); }

std::vector<int> Estimator::predict(const SparseRows& X) const { return predict_rows(X); }

double Estimator::score(const DistMatrix& X, const std::vector<int>& y) const {
  check_comm(X.comm, "score");
  SSDR_CHECK_COLLECTIVE(X.comm, static_cast<int64_t>(y.size()) == X.n_local,
                        "score: y has " + std::to_string(y.size()) + " labels for " + std::to_string(X.n_local) +
                            " rows on this rank; expected one per row");
  const auto below = std::find_if(y.begin(), y.end(), [](int v) { return v < -1; });
  SSDR_CHECK_COLLECTIVE(X.comm, below == y.end(),
                        "score: y[" + std::to_string(below - y.begin()) + "] = " + std::to_string(*below) +
                            " on this rank; expected a class 0, 1, ... or -1 (not counted)");
  const std::vector<int> predicted = predict(X);
  int64_t counts[2] = {0, 0};  // rows with a label, right predictions
  for (size_t i = 0; i < y.size(); ++i)
    if (y[i] >= 0) {
      ++counts[0];
      counts[1] += predicted[i] == y[i] ? 1 : 0;
    }
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_SUM, X.comm);
  return counts[0] > 0 ? static_cast<double>(counts[1]) / static_cast<double>(counts[0])
                       : std::numeric_limits<double>::quiet_NaN();
}

void Estimator::save(const std::string& path, MPI_Comm comm) const {
  check_comm(comm, "save");
  require_projection("save", comm);
  SSDR_CHECK_COLLECTIVE(comm, !path.empty(), "save: the path is empty; expected a file name");
  model::save_collective(model_, path, comm);
}

Estimator Estimator::load(const std::string& path, MPI_Comm comm, const nlohmann::json& params) {
  check_comm(comm, "load");
  model::Model m = model::load_collective(path, comm);
  Estimator e(m.method, params);
  e.model_ = std::move(m);
  e.fitted_ = true;
  e.loaded_ = true;
  return e;
}

}  // namespace ssdr
