// --method auto: candidates and their cross-validated choice (see auto_select.hpp).
#include "ssdr/driver/auto_select.hpp"

#include <algorithm>

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/methods/parameters.hpp"

namespace ssdr::driver {

using nlohmann::json;

const char* const kAutoMethod = "auto";

bool is_auto(const std::string& method) { return method == kAutoMethod; }

bool auto_accepts(const std::string& name) {
  const methods::ParameterSpec* p = methods::lookup_parameter(name);
  return p != nullptr &&
         (p->scope == methods::ParameterScope::every || p->scope == methods::ParameterScope::knn_backend);
}

FitConfig make_auto_config(const std::vector<ParameterSetting>& settings, int64_t dim, uint64_t seed,
                           double max_kernel_memory, int cv_folds, bool race, int groups) {
  SSDR_REQUIRE(dim >= 0, "dim: expected an integer >= 0, got " + std::to_string(dim));
  SSDR_REQUIRE(groups >= 1, "groups (--groups): expected an integer >= 1, got " + std::to_string(groups));
  SSDR_REQUIRE(cv_folds >= 2, "cv_folds (--cv-folds): expected an integer >= 2, got " + std::to_string(cv_folds));
  // Each setting checked against a method that uses it (soda takes every accepted name), so a
  // bad value is refused here, before any data is read.
  json given = json::object();
  for (const ParameterSetting& s : settings) {
    SSDR_REQUIRE(methods::lookup_parameter(s.name) != nullptr,
                 s.spelling + ": unknown parameter '" + s.name + "'; expected one of " + methods::parameter_list());
    SSDR_REQUIRE(auto_accepts(s.name), s.spelling + " is not a parameter of auto: auto chooses the method and its "
                                                    "own parameters; name a method instead to set them yourself");
    FitConfig probe = make_fit_config("soda", {s}, 0, seed, max_kernel_memory);
    given[s.name] = s.value;
  }
  FitConfig c;
  c.method = kAutoMethod;
  c.method_options.dim = dim;
  c.parameters = {{"method", kAutoMethod}, {"dim", dim},          {"seed", seed},
                  {"cv_folds", cv_folds},  {"settings", given}, {"max_kernel_memory", max_kernel_memory}};
  // Recorded only when off: the default's parameters (a job's, a report's) stay as they were.
  if (!race) c.parameters["auto_race"] = false;
  if (groups > 1) c.parameters["groups"] = groups;
  return c;
}

namespace {

/// m = 1 … min(c − 1, d), or the user's m.
std::vector<int64_t> discriminant_dims(int classes, int64_t d, int64_t fixed) {
  if (fixed > 0) return {fixed};
  std::vector<int64_t> dims;
  for (int64_t m = 1; m <= std::min<int64_t>(std::max(classes - 1, 1), d); ++m) dims.push_back(m);
  return dims;
}

}  // namespace

std::vector<Candidate> auto_candidates(const FitConfig& a, int classes, int64_t d) {
  SSDR_REQUIRE(is_auto(a.method), "auto_candidates: not an auto configuration (internal)");
  const json& given = a.parameters.at("settings");
  const uint64_t seed = a.parameters.at("seed").get<uint64_t>();
  const double max_kernel_memory = a.parameters.at("max_kernel_memory").get<double>();
  const int64_t fixed = a.method_options.dim;
  std::vector<std::string> scalings = {"standardize", "none"};
  if (given.contains("scaling")) scalings = {given["scaling"].get<std::string>()};
  std::vector<Candidate> out;
  // One candidate: the method, its own settings, then the user's that it uses.
  auto add = [&](const std::string& method, const std::string& scaling, json own, std::vector<int64_t> dims,
                 bool preferred = false) {
    const methods::MethodInfo& info = methods::find_method(method);
    std::vector<ParameterSetting> settings;
    json point = {{"method", method}, {"scaling", scaling}};
    settings.push_back({"scaling", scaling, "--method auto: scaling"});
    for (auto it = own.begin(); it != own.end(); ++it) {
      settings.push_back({it.key(), it.value(), "--method auto: " + it.key()});
      point[it.key()] = it.value();
    }
    for (auto it = given.begin(); it != given.end(); ++it)
      if (it.key() != "scaling" && methods::uses_parameter(info, it.key()))
        settings.push_back({it.key(), it.value(), "--" + it.key()});
    Candidate cand;
    cand.config = make_fit_config(method, settings, 0, seed, max_kernel_memory);
    cand.point = std::move(point);
    cand.dims = std::move(dims);
    cand.preferred = preferred;
    out.push_back(std::move(cand));
  };
  const std::vector<int64_t> nested = discriminant_dims(classes, d, fixed);
  // The trace ratio's subspaces are not nested: each m is its own fit (its d'×d'
  // eigen-solves), so SODA is scored at m = c − 1 only (or the user's m).
  const std::vector<int64_t> trace_ratio_dims =
      nested.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{nested.back()};
  // A user's m beyond c − 1 is past the rank of the discriminant methods' S_b (their columns
  // there are the eigen-solver's arbitrary choice): only the trace ratio takes it.
  const bool discriminant = fixed <= std::max(classes - 1, 1);
  for (const std::string& scaling : scalings) {
    if (discriminant) {
      // The default family first in its scaling's block, so that select_candidates' race has
      // its bar before the others are scored (it stops those that can no longer beat it). The
      // order changes no choice: choose_entry's A, the first best preferred entry, is the same
      // (the preferred keep their order among themselves: standardize's, then none's); its B,
      // the first best of all, is the same whenever B is not preferred (the others keep their
      // order among themselves, and B is not preferred when no preferred entry has its
      // accuracy); and when a preferred entry has the best accuracy, A has it, so A is chosen
      // in either order (B = A, or B ties with A and does not beat it). The plain maximum
      // (no preferred entry scored) orders only the others, whose order is kept.
      add("sl-lda", scaling, {{"alpha_u", 1.0 / (1.0 + 1e-3)}}, nested, true);
      add("lda", scaling, {{"shrinkage", "auto"}}, nested);
      add("sda", scaling, {{"shrinkage", "auto"}}, nested);
      // The paper's grid λ ∈ {10⁻⁹, …, 10⁹} (α_u = 1/(1 + λ)) at its two distinct behaviours
      // beside LDA's, λ = 10⁻³ and 1 (α_u = 0.999, 0.5). Its λ ≤ 10⁻⁶ put α_u within 10⁻⁶ of 1,
      // within 10⁻³ of λ = 10⁻³'s (their CV scores tie with it) at up to 10⁶ times its condition number; at
      // λ ≥ 10³ the unlabeled rows keep soft labels near 0 and SL-LDA is LDA on the labeled
      // rows, which the shrinkage LDA above is (the panel's accuracies are unchanged without
      // it, with a third fewer SL-LDA fits).
      // The default family (Candidate::preferred): SL-LDA at λ = 10⁻³ (α_u ≈ 1, the
      // unlabeled rows' labels all from the propagation, close to its paper's default 0.99),
      // at every scaling and m.
      add("sl-lda", scaling, {{"alpha_u", 1.0 / (1.0 + 1.0)}}, nested);
    }
    for (double mu_scale : {0.1, 1.0}) add("soda", scaling, {{"mu_scale", mu_scale}}, trace_ratio_dims);
  }
  return out;
}

io::Dataset transductive_copy(const io::Dataset& ds, const std::vector<data::Role>& roles,
                              std::vector<data::Role>& roles_out) {
  const MPI_Comm comm = ds.X.comm;
  SSDR_CHECK_COLLECTIVE(comm, !ds.sparse && static_cast<int64_t>(roles.size()) == ds.X.n_local,
                        "transductive_copy: expected dense or typed rows and one role per local row (internal)");
  const size_t row_bytes = io::row_bytes(ds);
  const unsigned char* from = io::row_data(ds);
  std::vector<unsigned char> rows;
  std::vector<int> labels;
  std::vector<data::Role> kept;
  for (int64_t i = 0; i < ds.X.n_local; ++i) {
    if (roles[static_cast<size_t>(i)] == data::Role::unseen) continue;
    rows.insert(rows.end(), from + static_cast<size_t>(i) * row_bytes, from + static_cast<size_t>(i + 1) * row_bytes);
    labels.push_back(ds.labels[static_cast<size_t>(i)]);
    kept.push_back(roles[static_cast<size_t>(i)]);
  }
  const int64_t mine = static_cast<int64_t>(kept.size());
  int64_t first = 0, n = 0;
  MPI_Exscan(&mine, &first, 1, MPI_INT64_T, MPI_SUM, comm);
  if (comm_rank(comm) == 0) first = 0;  // MPI_Exscan leaves rank 0's undefined
  MPI_Allreduce(&mine, &n, 1, MPI_INT64_T, MPI_SUM, comm);
  const int P = comm_size(comm), r = comm_rank(comm);
  const int64_t start = n * r / P, count = n * (r + 1) / P - start;
  std::vector<unsigned char> moved(static_cast<size_t>(count) * row_bytes);
  redistribute_rows(rows.data(), first, mine, moved.data(), start, count, row_bytes, comm);
  std::vector<unsigned char>().swap(rows);  // not beside the copy for the rest of the selection
  io::Dataset t = io::dataset_of_rows(ds, comm, n, start, count, std::move(moved));
  t.labels = redistribute_rows(labels, first, start, count, comm);
  roles_out = redistribute_rows(kept, first, start, count, comm);
  return t;
}

bool selects_on_copy(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& a) {
  int64_t unseen = 0;
  for (data::Role x : roles) unseen += x == data::Role::unseen;
  MPI_Allreduce(MPI_IN_PLACE, &unseen, 1, MPI_INT64_T, MPI_SUM, ds.X.comm);
  return unseen > 0 && !ds.sparse && a.cache == nullptr && a.rows == nullptr;
}

Selection select_auto(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& a,
                      uint64_t seed) {
  // The selection learns from the transductive rows only (the unseen take no part in a fold's
  // fit or score): without a sweep's caches, which are keyed on ds's own rows, it runs on a
  // copy of those rows alone, so that no fold preprocesses or embeds the unseen rows (at
  // 1.05 M rows with F = 0.2, four fifths of the data). The same folds, fits and scores.
  if (selects_on_copy(ds, roles, a)) {
    std::vector<data::Role> t_roles;
    const io::Dataset t = transductive_copy(ds, roles, t_roles);
    return select_auto(t, t_roles, a, seed);
  }
  std::vector<Candidate> candidates = auto_candidates(a, ds.classes, ds.X.cols);
  for (Candidate& c : candidates) {
    c.config.cache = a.cache;
    c.config.rows = a.rows;
  }
  const bool race = a.parameters.value("auto_race", true);
  const int groups = a.parameters.value("groups", 1);
  Selection sel = select_candidates(ds, roles, candidates, a.parameters.at("cv_folds").get<int>(), seed,
                                    "--method auto", race, groups);
  sel.report["method"] = kAutoMethod;
  sel.config.parameters["selected_by"] = "auto";
  return sel;
}

}  // namespace ssdr::driver
