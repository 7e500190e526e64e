// Parameter selection by k-fold cross-validation on the labeled samples (see selection.hpp).
#include "ssdr/driver/selection.hpp"

#include <limits>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/methods/parameters.hpp"

namespace ssdr::driver {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& context, const std::string& what) {
  throw Error(context + ": " + what, __FILE__, __LINE__, true);
}

std::string point_text(const json& p) {
  std::string s;
  for (auto it = p.begin(); it != p.end(); ++it)
    s += (s.empty() ? "" : " ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  return s.empty() ? "defaults" : s;
}

}  // namespace

const std::set<std::string>& parameter_names() {
  static const std::set<std::string> names = [] {
    std::set<std::string> k;
    for (const auto& p : methods::parameter_table()) k.insert(p.name);
    return k;
  }();
  return names;
}

void set_parameter(FitConfig& c, const std::string& key, const json& v, const std::string& context) {
  const methods::ParameterSpec* spec = methods::lookup_parameter(key);
  // Kernel options travel as the fit's "kernel" parameter (see kernels::to_json).
  kernels::KernelOptions k = c.parameters.is_object() && c.parameters.contains("kernel")
                                 ? kernels::from_json(c.parameters["kernel"])
                                 : methods::find_method(c.method).kernel;
  methods::ParameterTarget target{c.method_options, c.preprocess, k};
  methods::set_parameter(target, key, v, context);  // checks kind and range, names the context
  if (!c.parameters.is_object()) c.parameters = json::object();
  if (spec->scope == methods::ParameterScope::kernel)
    c.parameters["kernel"] = kernels::to_json(k);
  else
    c.parameters[key] = v;
}

std::pair<std::string, std::vector<json>> parse_grid_argument(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    fail("--grid '" + text + "'", "expected NAME=v1,v2,... (e.g. --grid alpha_u=0.9,0.99)");
  std::string name = text.substr(0, eq);
  std::replace(name.begin(), name.end(), '-', '_');
  if (!parameter_names().count(name))
    fail("--grid '" + text + "'", "unknown parameter '" + name + "'; expected one of " + methods::parameter_list());
  std::vector<json> values;
  std::stringstream ss(text.substr(eq + 1));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty()) fail("--grid '" + text + "'", "empty value in the list (expected NAME=v1,v2,...)");
    char* end = nullptr;
    const double v = std::strtod(tok.c_str(), &end);
    if (end && *end == '\0') {
      if (v == std::floor(v) && std::abs(v) < 1e15 && tok.find_first_of(".eE") == std::string::npos)
        values.emplace_back(static_cast<int64_t>(v));
      else
        values.emplace_back(v);
    } else {
      values.emplace_back(tok);
    }
  }
  if (values.empty()) fail("--grid '" + text + "'", "expected at least one value after '='");
  return {name, values};
}

std::vector<json> grid_points(const Grid& grid) {
  std::vector<json> points = {json::object()};
  for (const auto& [key, values] : grid) {
    std::vector<json> next;
    for (const auto& p : points)
      for (const auto& v : values) {
        json q = p;
        q[key] = v;
        next.push_back(q);
      }
    points = std::move(next);
  }
  return points;
}

Grid default_grid(const FitConfig& config) {
  Grid g;
  const auto& info = methods::find_method(config.method);
  const kernels::KernelOptions k = config.parameters.is_object() && config.parameters.contains("kernel")
                                       ? kernels::from_json(config.parameters["kernel"])
                                       : info.kernel;
  if (info.projects && k.type == kernels::KernelType::rbf)
    g.emplace_back("sigma_scale", std::vector<json>{1.0, 0.1, 10.0, 0.01, 100.0, 0.001, 1000.0});
  g.insert(g.end(), info.cv_grid.begin(), info.cv_grid.end());  // the method's own, from its row
  return g;
}

std::vector<int> cv_folds(const std::vector<int>& labels, const std::vector<data::Role>& roles, int classes,
                          int folds, uint64_t seed, MPI_Comm comm) {
  SSDR_REQUIRE(folds >= 2, "--cv-folds must be at least 2, got " + std::to_string(folds));
  SSDR_CHECK_COLLECTIVE(comm, labels.size() == roles.size(), "cross-validation: one role per local row expected");
  // The labeled samples' labels on every rank, in global order (O(l), never O(n)); position j
  // is the j-th labeled sample.
  std::vector<int> mine;
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i] == data::Role::labeled) mine.push_back(labels[i]);
  GatherCounts where;
  const std::vector<int> all = allgatherv(mine, comm, &where);
  std::vector<std::vector<size_t>> members(static_cast<size_t>(classes));
  for (size_t j = 0; j < all.size(); ++j) members[static_cast<size_t>(all[j])].push_back(j);
  size_t labeled = 0;
  for (int c = 0; c < classes; ++c) {
    const size_t lc = members[static_cast<size_t>(c)].size();
    SSDR_REQUIRE(lc >= 2, "cross-validation needs at least 2 labeled samples per class; class " + std::to_string(c) +
                              " has " + std::to_string(lc));
    labeled += lc;
  }
  const int k = static_cast<int>(std::min<size_t>(static_cast<size_t>(folds), labeled));
  std::vector<int> fold_of(all.size(), -1);  // per labeled sample
  std::mt19937_64 rng(seed);
  int next = 0;
  for (auto& idx : members) {
    for (size_t i = idx.size() - 1; i > 0; --i) {  // Fisher–Yates, explicit modulo arithmetic
      const size_t j = static_cast<size_t>(rng() % static_cast<uint64_t>(i + 1));
      std::swap(idx[i], idx[j]);
    }
    for (size_t i : idx) {
      fold_of[i] = next;
      next = (next + 1) % k;
    }
  }
  std::vector<int> fold(roles.size(), -1);
  size_t j = static_cast<size_t>(where.displs[static_cast<size_t>(comm_rank(comm))]);
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i] == data::Role::labeled) fold[i] = fold_of[j++];
  return fold;
}

CvScore cross_validate(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& config,
                       const std::vector<int>& folds, CvCaches* caches) {
  SSDR_REQUIRE(methods::find_method(config.method).projects,
               "cross-validation: method '" + config.method + "' learns no projection (transductive only)");
  CvScore score;
  for (int f : folds) score.folds = std::max(score.folds, f + 1);
  MPI_Allreduce(MPI_IN_PLACE, &score.folds, 1, MPI_INT, MPI_MAX, ds.X.comm);
  if (caches && caches->folds.size() < static_cast<size_t>(score.folds))
    caches->folds.resize(static_cast<size_t>(score.folds));
  for (int f = 0; f < score.folds; ++f) {
    std::vector<data::Role> r = roles;
    std::vector<data::Role> scored(r.size(), data::Role::labeled);  // "labeled" = not scored
    for (size_t i = 0; i < r.size(); ++i)
      if (folds[i] == f) r[i] = scored[i] = data::Role::unlabeled;
    FitConfig c = config;
    if (caches) {
      GraphCaches& fc = caches->folds[static_cast<size_t>(f)];
      caches->shared.share_into(fc);
      c.cache = &fc;
    } else {
      c.cache = nullptr;
    }
    const FitOutcome out = fit_and_evaluate(ds, r, c, true);
    if (caches) caches->folds[static_cast<size_t>(f)].share_into(caches->shared);
    const auto pred = evaluation::one_nn_predict(out.embedding, ds.labels, r);
    const auto acc = evaluation::accuracy(pred, ds.labels, scored, ds.X.comm);
    score.correct += acc.correct_unlabeled;
    score.scored += acc.n_unlabeled;
    if (out.info.is_object() && out.info.contains("fallback_to_gda") && out.info["fallback_to_gda"].get<bool>())
      ++score.fallback_to_gda;
  }
  score.accuracy = score.scored > 0 ? static_cast<double>(score.correct) / static_cast<double>(score.scored) : NAN;
  return score;
}

Selection select_by_cv(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& base,
                       const Grid& grid, int folds, uint64_t seed) {
  const double t0 = MPI_Wtime();
  SSDR_REQUIRE(!grid.empty(), "--select-by cv: nothing to select for method '" + base.method +
                                  "' (no grid given and the method has no default grid); give --grid NAME=v1,v2,...");
  SSDR_REQUIRE(methods::find_method(base.method).projects,
               "--select-by cv: method '" + base.method + "' learns no projection (transductive only)");
  const std::vector<int> fold = cv_folds(ds.labels, roles, ds.classes, folds, seed, ds.X.comm);
  int k = 0;
  for (int f : fold) k = std::max(k, f + 1);
  MPI_Allreduce(MPI_IN_PLACE, &k, 1, MPI_INT, MPI_MAX, ds.X.comm);
  CvCaches caches;
  if (base.cache) base.cache->share_into(caches.shared);
  // Every fold has the split's transductive set: one preprocessing (and kernel map per
  // kernel) serves every fold of every candidate.
  RowsCache rows;
  const std::vector<json> points = grid_points(grid);
  json candidates = json::array(), grid_json = json::object();
  for (const auto& [name, values] : grid) grid_json[name] = values;
  int best = -1;
  double best_acc = -1;
  const bool was_quiet = quiet();
  Progress progress("cross-validation (" + std::to_string(points.size()) + " candidates x " + std::to_string(k) +
                        " folds)",
                    static_cast<long>(points.size()));
  for (size_t p = 0; p < points.size(); ++p) {
    FitConfig c = base;
    if (!c.rows) c.rows = &rows;
    for (auto it = points[p].begin(); it != points[p].end(); ++it) set_parameter(c, it.key(), it.value(), "--grid");
    json entry = {{"params", points[p]}};
    set_quiet(true);  // the fits' phase lines would drown the selection's
    try {
      const CvScore s = cross_validate(ds, roles, c, fold, &caches);
      set_quiet(was_quiet);
      entry["cv_accuracy"] = s.accuracy;
      entry["correct"] = s.correct;
      entry["scored"] = s.scored;
      if (s.fallback_to_gda > 0) entry["fallback_to_gda_folds"] = s.fallback_to_gda;
      // Ties: the first candidate in grid order (strictly greater replaces). The accuracy is
      // correct/scored over integer counts, the same on any rank count.
      if (s.accuracy > best_acc) {
        best_acc = s.accuracy;
        best = static_cast<int>(p);
      }
    } catch (const Error& e) {
      set_quiet(was_quiet);
      if (!e.collective_over(ds.X.comm)) throw;
      entry["error"] = e.what();
    }
    candidates.push_back(entry);
    progress.update(static_cast<long>(p + 1));
  }
  SSDR_REQUIRE(best >= 0, "--select-by cv: every candidate failed; the first: " +
                              candidates[0].value("error", std::string("?")));
  Selection sel;
  sel.config = base;
  for (auto it = points[static_cast<size_t>(best)].begin(); it != points[static_cast<size_t>(best)].end(); ++it)
    set_parameter(sel.config, it.key(), it.value(), "--grid");
  const double seconds = MPI_Wtime() - t0;
  sel.report = {{"by", "cv"},          {"folds", k},
                {"requested_folds", folds}, {"seed", seed},
                {"held_out_as", "unlabeled"}, {"grid", grid_json},
                {"candidates", candidates}, {"chosen", points[static_cast<size_t>(best)]},
                {"cv_accuracy", best_acc},  {"seconds", seconds}};
  say("cross-validation chose " + point_text(points[static_cast<size_t>(best)]) + " (" + std::to_string(k) +
      "-fold accuracy " + std::to_string(best_acc).substr(0, 6) + ", " + std::to_string(points.size()) +
      " candidates, " + std::to_string(seconds).substr(0, 5) + " s)");
  return sel;
}

}  // namespace ssdr::driver
