// Parameter selection by k-fold cross-validation on the labeled samples (see selection.hpp).
#include "ssdr/driver/selection.hpp"

#include <limits>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "ssdr/io/output.hpp"
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
    if (it.key() != "method")
      s += (s.empty() ? "" : " ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  if (p.contains("method")) return p["method"].get<std::string>() + (s.empty() ? "" : " (" + s + ")");
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
  if (key == "dim") {  // m: the configuration's own field, not a table parameter
    const bool whole = v.is_number_integer() || (v.is_number() && v.get<double>() == std::floor(v.get<double>()));
    if (!whole || v.get<double>() < 1 || v.get<double>() > 1e9)
      fail(context, "parameter dim: expected a whole number m >= 1, got " + v.dump());
    c.method_options.dim = static_cast<int64_t>(v.get<double>());
    if (!c.parameters.is_object()) c.parameters = json::object();
    c.parameters["dim"] = c.method_options.dim;
    return;
  }
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
  if (name != "dim" && !parameter_names().count(name))
    fail("--grid '" + text + "'", "unknown parameter '" + name + "'; expected dim or one of " + methods::parameter_list());
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
                          int folds, uint64_t seed, MPI_Comm comm, const std::vector<std::string>& names) {
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
    SSDR_REQUIRE(lc >= 2, "cross-validation needs at least 2 labeled samples per class (one is held out); " +
                              data::class_text(c, names) + " has " + std::to_string(lc));
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

namespace {

/// Whether two preprocessings give the same rows (RowsKey's preprocessing fields). Local.
bool same_rows(const data::PreprocessOptions& a, const data::PreprocessOptions& b) {
  return a.fields() == b.fields();
}

/// The leading m columns of Y (n×M, M ≥ m), Y's layout. Local.
DistMatrix leading_columns(const DistMatrix& Y, int64_t m) {
  DistMatrix Z = make_dist_like(Y, m);
  for (int64_t i = 0; i < Y.n_local; ++i) std::copy(Y.row(i), Y.row(i) + m, Z.row(i));
  return Z;
}

}  // namespace

std::vector<CvScore> cross_validate_dims(const io::Dataset& ds, const std::vector<data::Role>& roles,
                                         const FitConfig& config, const std::vector<int64_t>& dims,
                                         const std::vector<int>& folds, CvCaches* caches,
                                         const CvKeepGoing& keep_going) {
  const methods::MethodInfo& info = methods::find_method(config.method);
  SSDR_REQUIRE(info.projects,
               "cross-validation: method '" + config.method + "' learns no projection (transductive only)");
  SSDR_REQUIRE(!dims.empty(), "cross-validation: no dimension to score");
  for (int64_t m : dims) SSDR_REQUIRE(m >= 0, "cross-validation: dimension " + std::to_string(m) + " < 0");
  int k = 0;
  for (int f : folds) k = std::max(k, f + 1);
  MPI_Allreduce(MPI_IN_PLACE, &k, 1, MPI_INT, MPI_MAX, ds.X.comm);
  std::vector<CvScore> scores(dims.size());
  for (auto& s : scores) {
    s.folds = k;
    s.fold_correct.assign(static_cast<size_t>(k), 0);
    s.fold_scored.assign(static_cast<size_t>(k), 0);
  }
  if (caches && caches->folds.size() < static_cast<size_t>(k)) caches->folds.resize(static_cast<size_t>(k));
  const int64_t widest = *std::max_element(dims.begin(), dims.end());
  // One fit per fold at the widest m for nested solutions, else one per (fold, m). A fit the
  // method refuses (m beyond d' or beyond the rank of its S_b) fails that m only: a nested
  // method whose widest fit is refused is then fitted per m, like any other.
  bool nested = info.nested_dimensions && dims.size() > 1;
  int stopped_at = -1;  // the folds done when keep_going stopped the cross-validation
  for (int f = 0; f < k; ++f) {
    if (keep_going && !keep_going(f, scores)) {  // replicated counts: every rank stops here
      stopped_at = f;
      break;
    }
    std::vector<data::Role> r = roles;
    std::vector<data::Role> scored(r.size(), data::Role::labeled);  // "labeled" = not scored
    for (size_t i = 0; i < r.size(); ++i)
      if (folds[i] == f) r[i] = scored[i] = data::Role::unlabeled;
    std::vector<int64_t> fits;
    for (size_t j = 0; j < dims.size(); ++j)
      if (scores[j].error.empty() && !nested) fits.push_back(dims[j]);
    if (nested) fits = {widest};
    for (size_t q = 0; q < fits.size(); ++q) {
      const int64_t fit_dim = fits[q];
      FitConfig c = config;
      c.method_options.dim = fit_dim;
      if (caches) {
        GraphCaches& fc = caches->folds[static_cast<size_t>(f)];
        caches->shared.share_into(fc);
        c.cache = &fc;
      } else {
        c.cache = nullptr;
      }
      FitOutcome out;
      try {
        out = fit_and_evaluate(ds, r, c, true);
      } catch (const Error& e) {
        if (!e.collective_over(ds.X.comm)) throw;
        if (nested) {  // from here on one fit per m, this fold included
          nested = false;
          for (size_t j = 0; j < dims.size(); ++j) fits.push_back(dims[j]);
          continue;
        }
        for (size_t j = 0; j < dims.size(); ++j)
          if (dims[j] == fit_dim) scores[j].error = e.what();
        continue;
      }
      if (caches) caches->folds[static_cast<size_t>(f)].share_into(caches->shared);
      const bool gda = out.info.is_object() && out.info.contains("fallback_to_gda") &&
                       out.info["fallback_to_gda"].get<bool>();
      for (size_t j = 0; j < dims.size(); ++j) {
        if (!scores[j].error.empty()) continue;
        if (nested ? dims[j] > out.embedding.cols : dims[j] != fit_dim) continue;
        const bool whole = dims[j] == 0 || dims[j] == out.embedding.cols;  // 0: the fit's own m
        const DistMatrix Y = whole ? DistMatrix() : leading_columns(out.embedding, dims[j]);
        const auto pred = evaluation::one_nn_predict(Y.cols > 0 ? Y : out.embedding, ds.labels, r);
        const auto acc = evaluation::accuracy(pred, ds.labels, scored, ds.X.comm);
        CvScore& s = scores[j];
        s.correct += acc.correct_unlabeled;
        s.scored += acc.n_unlabeled;
        s.fold_correct[static_cast<size_t>(f)] = acc.correct_unlabeled;
        s.fold_scored[static_cast<size_t>(f)] = acc.n_unlabeled;
        if (gda) ++s.fallback_to_gda;
      }
    }
  }
  bool any = false;
  for (size_t j = 0; j < dims.size(); ++j) {
    CvScore& s = scores[j];
    if (stopped_at >= 0 && s.error.empty()) {  // partial counts, not a k-fold accuracy
      s.stopped = true;
      s.folds_done = stopped_at;
      s.accuracy = NAN;
      any = true;
      continue;
    }
    if (s.error.empty()) s.folds_done = k;
    // An m a fold did not score (the method returned fewer columns than asked) is an error,
    // not a zero. Counts are allreduced: the same verdict on every rank.
    int64_t folds_scored = 0;
    for (int64_t x : s.fold_scored) folds_scored += x > 0;
    if (s.error.empty() && folds_scored < k)
      s.error = "cross-validation: " + config.method + " gave no embedding of m = " + std::to_string(dims[j]);
    s.accuracy = s.error.empty() && s.scored > 0 ? static_cast<double>(s.correct) / static_cast<double>(s.scored) : NAN;
    any = any || s.error.empty();
  }
  // Every m refused: the candidate fails as a whole, with the first m's reason.
  if (!any) throw Error(scores.front().error, __FILE__, __LINE__, true);
  return scores;
}

CvScore cross_validate(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& config,
                       const std::vector<int>& folds, CvCaches* caches) {
  // The configuration's own m (0: c − 1), one fit per fold.
  return cross_validate_dims(ds, roles, config, {config.method_options.dim}, folds, caches).front();
}

bool beats_by_standard_error(int64_t b, int64_t a, int64_t n) {
  SSDR_REQUIRE(n >= 1 && a >= 0 && a <= n && b >= 0 && b <= n,
               "beats_by_standard_error: expected 0 <= a, b <= n and n >= 1, got a = " + std::to_string(a) +
                   ", b = " + std::to_string(b) + ", n = " + std::to_string(n));
  // b/n > a/n + √(max(a(n − a)/n², 1/n)/n)  ⇔  (b − a)²·n > max(a(n − a), n) with b > a.
  if (b <= a) return false;
  const __int128 d = b - a, lhs = d * d * n, rhs = std::max<__int128>(static_cast<__int128>(a) * (n - a), n);
  return lhs > rhs;
}

CvChoice choose_entry(const std::vector<CvEntry>& entries) {
  // The first of the highest accuracy, over all entries and over the preferred ones.
  auto better = [&](int i, int j) {  // entry i strictly more accurate than entry j (exact: i.c/i.n > j.c/j.n)
    const CvEntry &x = entries[static_cast<size_t>(i)], &y = entries[static_cast<size_t>(j)];
    return static_cast<__int128>(x.correct) * y.scored > static_cast<__int128>(y.correct) * x.scored;
  };
  int best = -1, preferred = -1;
  for (int i = 0; i < static_cast<int>(entries.size()); ++i) {
    SSDR_REQUIRE(entries[static_cast<size_t>(i)].scored >= 1, "choose_entry: an entry scored no sample");
    if (best < 0 || better(i, best)) best = i;
    if (entries[static_cast<size_t>(i)].preferred && (preferred < 0 || better(i, preferred))) preferred = i;
  }
  SSDR_REQUIRE(best >= 0, "choose_entry: no entry to choose from");
  if (preferred < 0 || best == preferred) return {best, preferred};
  const CvEntry &b = entries[static_cast<size_t>(best)], &a = entries[static_cast<size_t>(preferred)];
  if (a.scored == b.scored) return {beats_by_standard_error(b.correct, a.correct, a.scored) ? best : preferred, preferred};
  // Entries that scored different samples (not auto's: every entry scores every labeled row).
  const double p = static_cast<double>(a.correct) / static_cast<double>(a.scored);
  const double q = static_cast<double>(b.correct) / static_cast<double>(b.scored);
  return {q > p + cv_standard_error(p, a.scored) ? best : preferred, preferred};
}

int64_t least_beating_count(int64_t a, int64_t n) {
  SSDR_REQUIRE(n >= 1 && a >= 0 && a <= n, "least_beating_count: expected 0 <= a <= n and n >= 1, got a = " +
                                               std::to_string(a) + ", n = " + std::to_string(n));
  // beats_by_standard_error(b, a, n) is false for b ≤ a and monotone in b above a: the first
  // b in (a, n] that beats, by bisection on the exact test; n + 1 when n does not.
  if (!beats_by_standard_error(n, a, n)) return n + 1;
  int64_t lo = a, hi = n;  // beats(lo) false, beats(hi) true
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (beats_by_standard_error(mid, a, n) ? hi : lo) = mid;
  }
  return hi;
}

bool race_cannot_win(const std::vector<int64_t>& bounds, int64_t a, int64_t n) {
  SSDR_REQUIRE(n >= 1 && a <= n, "race_cannot_win: expected a <= n and n >= 1, got a = " + std::to_string(a) +
                                     ", n = " + std::to_string(n));
  if (bounds.empty() || a < 0) return false;
  const int64_t need = least_beating_count(a, n);
  for (int64_t b : bounds)
    if (std::min(b, n) >= need) return false;
  return true;
}

double cv_standard_error(double p, int64_t n) {
  SSDR_REQUIRE(n >= 1 && p >= 0 && p <= 1, "cv_standard_error: expected n >= 1 and p in [0, 1], got n = " +
                                               std::to_string(n) + ", p = " + std::to_string(p));
  const double N = static_cast<double>(n);
  return std::sqrt(std::max(p * (1 - p), 1.0 / N) / N);
}

namespace {

/// The folds of a selection and what the race needs of them: the fold of each local row
/// (cv_folds), k, and the held-out samples of the folds from f on (allreduced: the same on
/// every rank; still_to_score[0] = n, the held-out samples in all).
struct FoldPlan {
  std::vector<int> fold;
  int k = 0;
  std::vector<int64_t> still_to_score;
  int64_t n_held_out = 0;
};

/// Collective over ds.X.comm.
FoldPlan plan_folds(const io::Dataset& ds, const std::vector<data::Role>& roles, int folds, uint64_t seed) {
  FoldPlan plan;
  plan.fold = cv_folds(ds.labels, roles, ds.classes, folds, seed, ds.X.comm, ds.class_names);
  for (int f : plan.fold) plan.k = std::max(plan.k, f + 1);
  MPI_Allreduce(MPI_IN_PLACE, &plan.k, 1, MPI_INT, MPI_MAX, ds.X.comm);
  const size_t k = static_cast<size_t>(plan.k);
  std::vector<int64_t> held_out(k, 0);
  for (int f : plan.fold)
    if (f >= 0) ++held_out[static_cast<size_t>(f)];
  MPI_Allreduce(MPI_IN_PLACE, held_out.data(), plan.k, MPI_INT64_T, MPI_SUM, ds.X.comm);
  plan.still_to_score.assign(k + 1, 0);
  for (size_t f = k; f-- > 0;) plan.still_to_score[f] = plan.still_to_score[f + 1] + held_out[f];
  plan.n_held_out = plan.still_to_score[0];
  return plan;
}

/// What scoring one candidate gives: its entries of the report (one per m, or one error), the
/// scored ones for choose_entry, and how many of its entries the race stopped.
struct CandidateResult {
  struct Scored {
    int64_t dim;
    json point;
    double acc;
    CvEntry count;
  };
  int candidate = 0;  ///< its index in the candidate list
  json entries = json::array();
  std::vector<Scored> scored;
  int pruned = 0;

  /// As JSON, to travel between groups of ranks (doubles keep their bits: 17 digits).
  json to_json() const {
    json sc = json::array();
    for (const Scored& x : scored)
      sc.push_back({{"dim", x.dim}, {"point", x.point}, {"acc", x.acc}, {"correct", x.count.correct},
                    {"scored", x.count.scored}, {"preferred", x.count.preferred}});
    return {{"candidate", candidate}, {"entries", entries}, {"scored", sc}, {"pruned", pruned}};
  }
  static CandidateResult from_json(const json& j) {
    CandidateResult r;
    r.candidate = j.at("candidate").get<int>();
    r.entries = j.at("entries");
    r.pruned = j.at("pruned").get<int>();
    for (const json& x : j.at("scored"))
      r.scored.push_back({x.at("dim").get<int64_t>(), x.at("point"), x.at("acc").get<double>(),
                          CvEntry{x.at("correct").get<int64_t>(), x.at("scored").get<int64_t>(),
                                  x.at("preferred").get<bool>()}});
    return r;
  }
};

/// Scores candidates[which[0]], candidates[which[1]], ... in that order on ds's rows (the
/// loop of select_candidates; its doc says what the race does), sharing the rows and graphs
/// of one preprocessing between consecutive candidates. Collective over ds.X.comm.
std::vector<CandidateResult> score_candidates(const io::Dataset& ds, const std::vector<data::Role>& roles,
                                              const std::vector<Candidate>& candidates, const std::vector<int>& which,
                                              const FoldPlan& plan, bool race, const std::string& context) {
  std::vector<CandidateResult> out;
  if (which.empty()) return out;
  const int k = plan.k;
  const std::vector<int64_t>& still_to_score = plan.still_to_score;
  const int64_t n_held_out = plan.n_held_out;
  // The race's bar: the best preferred count so far, of n_held_out (−1: none scored yet), and
  // whether every preferred entry scored every held-out sample (the exact integer test holds).
  int64_t bar = -1;
  bool bar_exact = true;
  const Candidate& first = candidates[static_cast<size_t>(which.front())];
  CvCaches caches;
  if (first.config.cache) first.config.cache->share_into(caches.shared);
  // Every fold has the split's transductive set: one preprocessing (and kernel map per
  // kernel) serves every fold of every candidate with that preprocessing.
  RowsCache rows;
  size_t entries = 0;
  for (int p : which) entries += std::max<size_t>(candidates[static_cast<size_t>(p)].dims.size(), 1);
  const bool was_quiet = quiet();
  Progress progress(context + " (" + std::to_string(entries) + " candidates x " + std::to_string(k) + " folds)",
                    static_cast<long>(which.size()));
  for (size_t w = 0; w < which.size(); ++w) {
    const int p = which[w];
    const Candidate& cand = candidates[static_cast<size_t>(p)];
    CandidateResult res;
    res.candidate = p;
    FitConfig c = cand.config;
    if (!c.rows) c.rows = &rows;
    const std::vector<int64_t> dims = cand.dims.empty() ? std::vector<int64_t>{c.method_options.dim} : cand.dims;
    set_quiet(true);  // the fits' phase lines would drown the selection's
    const double c0 = MPI_Wtime();
    // The race (select_candidates' doc): a non-preferred candidate stops before a fold once
    // none of its m can reach the count that beats the best preferred entry so far.
    CvKeepGoing keep_going;
    if (race && !cand.preferred && bar >= 0 && bar_exact)
      keep_going = [&](int done, const std::vector<CvScore>& s) {
        std::vector<int64_t> bounds;
        for (const CvScore& x : s)
          if (x.error.empty()) bounds.push_back(x.correct + still_to_score[static_cast<size_t>(done)]);
        return !race_cannot_win(bounds, bar, n_held_out);
      };
    try {
      std::vector<CvScore> scores;
      scores = cross_validate_dims(ds, roles, c, dims, plan.fold, &caches, keep_going);
      set_quiet(was_quiet);
      // The candidate's seconds over all its folds and m (rank 0's clock), on each of its entries.
      double cand_seconds = MPI_Wtime() - c0;
      MPI_Bcast(&cand_seconds, 1, MPI_DOUBLE, 0, ds.X.comm);
      for (size_t j = 0; j < dims.size(); ++j) {
        const CvScore& s = scores[j];
        json point = cand.point;
        if (!cand.dims.empty()) point["dim"] = dims[j];
        if (!s.error.empty()) {  // this m refused by the method (e.g. beyond d'), the others scored
          res.entries.push_back({{"params", point}, {"error", s.error}});
          continue;
        }
        json fa = json::array();
        for (size_t f = 0; f < s.fold_scored.size(); ++f)
          fa.push_back(s.fold_scored[f] > 0 ? json(static_cast<double>(s.fold_correct[f]) /
                                                   static_cast<double>(s.fold_scored[f]))
                                            : json(nullptr));
        if (s.stopped) {  // the race stopped it: not an entry of choose_entry (it cannot be chosen)
          res.entries.push_back({{"params", point},
                                 {"pruned", true},
                                 {"folds_scored", s.folds_done},
                                 {"correct", s.correct},
                                 {"scored", s.scored},
                                 {"bound", s.correct + still_to_score[static_cast<size_t>(s.folds_done)]},
                                 {"fold_accuracy", fa},
                                 {"candidate_seconds", cand_seconds}});
          ++res.pruned;
          continue;
        }
        json entry = {{"params", point}, {"cv_accuracy", s.accuracy}, {"correct", s.correct},
                      {"scored", s.scored}, {"fold_accuracy", fa}, {"candidate_seconds", cand_seconds}};
        if (s.fallback_to_gda > 0) entry["fallback_to_gda_folds"] = s.fallback_to_gda;
        res.scored.push_back({dims[j], point, s.accuracy, CvEntry{s.correct, s.scored, cand.preferred}});
        res.entries.push_back(entry);
        if (cand.preferred) {  // raise the race's bar (counts replicated: the same on every rank)
          if (s.scored == n_held_out)
            bar = std::max(bar, s.correct);
          else
            bar_exact = false;
        }
      }
    } catch (const Error& e) {
      set_quiet(was_quiet);
      if (!e.collective_over(ds.X.comm)) throw;
      res.entries.push_back({{"params", cand.point}, {"error", e.what()}});
    }
    // Every entry of a preferred candidate says so, scored or not.
    if (cand.preferred)
      for (json& e : res.entries) e["preferred"] = true;
    out.push_back(std::move(res));
    progress.update(static_cast<long>(w + 1));
    // Memory: a candidate's scatter matrices (d'×d' per fold) serve only itself; the rows and
    // graphs of one preprocessing serve the candidates that follow with the same (callers
    // list them together), so a change of preprocessing drops them.
    for (auto& fc : caches.folds)
      for (auto& [key, gc] : fc.by_rows) gc.scatters.clear();
    for (auto& [key, gc] : caches.shared.by_rows) gc.scatters.clear();
    if (w + 1 < which.size() &&
        !same_rows(cand.config.preprocess, candidates[static_cast<size_t>(which[w + 1])].config.preprocess)) {
      rows.entries.clear();
      caches = CvCaches();
      if (first.config.cache) first.config.cache->share_into(caches.shared);
    }
  }
  return out;
}

/// score_candidates in `groups` groups of ranks (contiguous blocks of ds.X.comm's ranks, as
/// the experiment driver's --groups): each group holds every row of ds (distributed over its
/// ranks: G copies in all) and scores whole preprocessing blocks of the candidate list (the
/// consecutive candidates with one preprocessing; block b to group b mod G), racing inside
/// each block as one group would. The results travel to every rank, in candidate order.
/// Collective over ds.X.comm. \throws ssdr::Error (collective) for sparse or typed rows
/// (the groups copy dense rows of doubles), and any error of a group, on every rank.
std::vector<CandidateResult> score_in_groups(const io::Dataset& ds, const std::vector<data::Role>& roles,
                                             const std::vector<Candidate>& candidates, int folds, uint64_t seed,
                                             bool race, const std::string& context, int groups) {
  const MPI_Comm world = ds.X.comm;
  const int P = comm_size(world), rank = comm_rank(world);
  SSDR_REQUIRE(groups >= 1 && groups <= P, context + ": --groups " + std::to_string(groups) +
                                               " must be between 1 and the number of ranks (" + std::to_string(P) + ")");
  SSDR_REQUIRE(!ds.sparse, context + ": --groups copies dense rows to each group; these rows are kept sparse "
                                      "(run without --groups, or with --sparse no)");
  int color = 0;  // group g takes ranks [g·P/G, (g+1)·P/G)
  while (rank >= static_cast<int>((static_cast<int64_t>(color) + 1) * P / groups)) ++color;
  MPI_Comm group;
  MPI_Comm_split(world, color, rank, &group);
  // This group's copy of every row: the rows of [n·j/q, n·(j+1)/q) on its rank j of q.
  const int q = comm_size(group), j = comm_rank(group);
  const int64_t n = ds.X.n_global;
  const int64_t start = n * j / q, count = n * (j + 1) / q - start;
  // As doubles, or in the file's type (uint8, float32) as ds keeps them.
  std::vector<unsigned char> moved(static_cast<size_t>(count) * io::row_bytes(ds));
  redistribute_rows(io::row_data(ds), ds.X.row_start, ds.X.n_local, moved.data(), start, count, io::row_bytes(ds), world);
  io::Dataset gds = io::dataset_of_rows(ds, group, n, start, count, std::move(moved));
  gds.labels = redistribute_rows(ds.labels, ds.X.row_start, start, count, world);
  const std::vector<data::Role> groles = redistribute_rows(roles, ds.X.row_start, start, count, world);
  // The blocks of one preprocessing, dealt to the groups; the world's caches stay the world's.
  std::vector<Candidate> local = candidates;
  for (Candidate& c : local) c.config.cache = nullptr, c.config.rows = nullptr;
  std::vector<int> mine;
  int block = 0;
  for (size_t p = 0; p < candidates.size(); ++p) {
    if (p > 0 && !same_rows(candidates[p - 1].config.preprocess, candidates[p].config.preprocess)) ++block;
    if (block % groups == color) mine.push_back(static_cast<int>(p));
  }
  std::string text, failure;
  try {
    const FoldPlan plan = plan_folds(gds, groles, folds, seed);
    const std::vector<CandidateResult> results =
        score_candidates(gds, groles, local, mine, plan, race,
                         context + " (group " + std::to_string(color + 1) + " of " + std::to_string(groups) + ")");
    json all = json::array();
    for (const CandidateResult& r : results) all.push_back(r.to_json());
    if (j == 0) text = all.dump();
  } catch (const Error& e) {
    // An error on some ranks of the group only leaves its peers inside a collective: abort, as
    // main does without groups; a collective one fails every rank below.
    abort_unless_collective(e, group);
    failure = e.what();
  }
  MPI_Comm_free(&group);
  // A group's error, on every rank: the first failing rank's text.
  int failed = failure.empty() ? P : rank;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MIN, world);
  if (failed < P) {
    int len = static_cast<int>(failure.size());
    MPI_Bcast(&len, 1, MPI_INT, failed, world);
    failure.resize(static_cast<size_t>(len));
    MPI_Bcast(failure.data(), len, MPI_CHAR, failed, world);
    throw Error(failure, __FILE__, __LINE__, true);
  }
  // Each group's results from its first rank (the others send nothing), to every rank,
  // merged in candidate order.
  GatherCounts layout;
  const std::vector<char> gathered = allgatherv(std::vector<char>(text.begin(), text.end()), world, &layout);
  std::vector<CandidateResult> out;
  for (int r = 0; r < P; ++r) {
    const size_t at = static_cast<size_t>(layout.displs[static_cast<size_t>(r)]);
    const size_t len = static_cast<size_t>(layout.counts[static_cast<size_t>(r)]);
    if (len == 0) continue;
    for (const json& x : json::parse(gathered.begin() + static_cast<std::ptrdiff_t>(at),
                                     gathered.begin() + static_cast<std::ptrdiff_t>(at + len)))
      out.push_back(CandidateResult::from_json(x));
  }
  std::sort(out.begin(), out.end(), [](const CandidateResult& a, const CandidateResult& b) { return a.candidate < b.candidate; });
  return out;
}

}  // namespace

Selection select_candidates(const io::Dataset& ds, const std::vector<data::Role>& roles,
                            const std::vector<Candidate>& candidates, int folds, uint64_t seed,
                            const std::string& context, bool race, int groups) {
  const double t0 = MPI_Wtime();
  SSDR_REQUIRE(!candidates.empty(), context + ": no candidate to choose from");
  const FoldPlan plan = plan_folds(ds, roles, folds, seed);
  const int k = plan.k;
  size_t entries = 0;
  for (const Candidate& cand : candidates) entries += std::max<size_t>(cand.dims.size(), 1);
  std::vector<CandidateResult> results;
  if (groups > 1) {
    results = score_in_groups(ds, roles, candidates, folds, seed, race, context, groups);
  } else {
    std::vector<int> all(candidates.size());
    for (size_t p = 0; p < all.size(); ++p) all[p] = static_cast<int>(p);
    results = score_candidates(ds, roles, candidates, all, plan, race, context);
  }
  // The entries in candidate order (candidate, m), for the report and choose_entry.
  json scored_entries = json::array();
  struct Scored {
    int candidate;
    int64_t dim;
    json point;
    double acc;
  };
  std::vector<Scored> scored;
  std::vector<CvEntry> counts;
  int pruned_entries = 0;
  for (const CandidateResult& r : results) {
    for (const json& e : r.entries) scored_entries.push_back(e);
    for (const CandidateResult::Scored& x : r.scored) {
      scored.push_back({r.candidate, x.dim, x.point, x.acc});
      counts.push_back(x.count);
    }
    pruned_entries += r.pruned;
  }
  SSDR_REQUIRE(!scored.empty(), context + ": every candidate failed; the first: " +
                                   scored_entries[0].value("error", std::string("?")));
  const CvChoice choice = choose_entry(counts);
  const bool by_preference = choice.preferred >= 0;
  const Scored& chosen = scored[static_cast<size_t>(choice.chosen)];
  const std::string rule =
      by_preference
          ? "the preferred candidate (the default family) with the highest pooled k-fold 1-NN accuracy p on the n "
            "held-out labeled samples, unless another beats it by more than one standard error sqrt(max(p(1-p), "
            "1/n)/n); a tie with the preferred one goes to it, any other tie to the candidate listed first"
          : "the highest pooled k-fold 1-NN accuracy on the held-out labeled samples; a tie goes to the candidate "
            "listed first (the simpler)";
  Selection sel;
  sel.config = candidates[static_cast<size_t>(chosen.candidate)].config;
  if (!candidates[static_cast<size_t>(chosen.candidate)].dims.empty())
    set_parameter(sel.config, "dim", chosen.dim, context);
  const double seconds = MPI_Wtime() - t0;
  sel.report = {{"by", "cv"},
                {"folds", k},
                {"requested_folds", folds},
                {"seed", seed},
                {"held_out_as", "unlabeled"},
                {"rule", rule},
                {"candidates", scored_entries},
                {"chosen", chosen.point},
                {"cv_accuracy", chosen.acc},
                {"race", race},
                {"pruned", pruned_entries},
                {"groups", groups},
                {"seconds", seconds}};
  if (by_preference) {
    const CvEntry& a = counts[static_cast<size_t>(choice.preferred)];
    sel.report["preferred_margin"] =
        cv_standard_error(static_cast<double>(a.correct) / static_cast<double>(a.scored), a.scored);
  }
  say(context + " chose " + point_text(chosen.point) + " (" + std::to_string(k) + "-fold accuracy " +
      std::to_string(chosen.acc).substr(0, 6) + ", " + std::to_string(entries) + " candidates, " +
      (pruned_entries > 0 ? std::to_string(pruned_entries) + " of them pruned by the race, " : std::string()) +
      std::to_string(seconds).substr(0, 5) + " s)");
  return sel;
}

Selection select_by_cv(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& base,
                       const Grid& grid, int folds, uint64_t seed) {
  SSDR_REQUIRE(!grid.empty(), "--select-by cv: nothing to select for method '" + base.method +
                                  "' (no grid given and the method has no default grid); give --grid NAME=v1,v2,...");
  SSDR_REQUIRE(methods::find_method(base.method).projects,
               "--select-by cv: method '" + base.method + "' learns no projection (transductive only)");
  // dim in the grid: scored per candidate (a nested method fits once at the widest m).
  Grid rest;
  std::vector<int64_t> dims;
  for (const auto& [name, values] : grid) {
    if (name != "dim") {
      rest.emplace_back(name, values);
      continue;
    }
    for (const json& v : values) {
      FitConfig probe;
      set_parameter(probe, "dim", v, "--grid");  // checks the value
      dims.push_back(probe.method_options.dim);
    }
  }
  std::vector<Candidate> candidates;
  for (const json& point : grid_points(rest)) {
    Candidate cand;
    cand.config = base;
    for (auto it = point.begin(); it != point.end(); ++it) set_parameter(cand.config, it.key(), it.value(), "--grid");
    cand.point = point;
    cand.dims = dims;
    candidates.push_back(std::move(cand));
  }
  Selection sel = select_candidates(ds, roles, candidates, folds, seed, "cross-validation");
  json grid_json = json::object();
  for (const auto& [name, values] : grid) grid_json[name] = values;
  sel.report["grid"] = grid_json;
  return sel;
}

std::string cv_table_csv(const json& report) {
  // The parameter columns: every name any entry has, in first-seen order.
  std::vector<std::string> names;
  const json& entries = report.at("candidates");
  for (const auto& e : entries)
    for (auto it = e.at("params").begin(); it != e.at("params").end(); ++it)
      if (std::find(names.begin(), names.end(), it.key()) == names.end()) names.push_back(it.key());
  // method and scaling first, m last; the rest in the order first seen.
  auto rank = [](const std::string& n) { return n == "method" ? 0 : n == "scaling" ? 1 : n == "dim" ? 3 : 2; };
  std::stable_sort(names.begin(), names.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  const int k = report.value("folds", 0);
  std::ostringstream o;
  for (const auto& n : names) o << io::csv_field(n) << ',';
  o << "cv_accuracy,correct,scored,seconds";
  for (int f = 1; f <= k; ++f) o << ",fold_" << f;
  o << ",preferred,chosen,rule,error,pruned,bound\n";
  auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  for (const auto& e : entries) {
    const json& p = e.at("params");
    for (const auto& n : names) o << (p.contains(n) ? io::csv_field(text(p[n])) : std::string()) << ',';
    if (e.contains("error")) {
      o << ",,,";
      for (int f = 0; f < k; ++f) o << ',';
      o << ',' << (e.value("preferred", false) ? 1 : 0) << ",0,," << io::csv_field(e["error"].get<std::string>())
        << ",0,\n";
      continue;
    }
    const bool pruned = e.value("pruned", false);  // partial counts, no pooled accuracy
    char buf[64];
    if (!pruned) {
      std::snprintf(buf, sizeof buf, "%.6f", e["cv_accuracy"].get<double>());
      o << buf;
    }
    o << ',' << e["correct"].get<int64_t>() << ',' << e["scored"].get<int64_t>();
    std::snprintf(buf, sizeof buf, ",%.3f", e.value("candidate_seconds", 0.0));
    o << buf;
    for (const auto& a : e["fold_accuracy"]) {
      if (a.is_null()) {
        o << ',';
      } else {
        std::snprintf(buf, sizeof buf, ",%.6f", a.get<double>());
        o << buf;
      }
    }
    const bool chosen = p == report.at("chosen");
    o << ',' << (e.value("preferred", false) ? 1 : 0) << ',' << (chosen ? 1 : 0) << ','
      << (chosen ? io::csv_field(report.value("rule", std::string())) : "") << ",," << (pruned ? 1 : 0) << ','
      << (pruned ? std::to_string(e["bound"].get<int64_t>()) : std::string()) << '\n';
  }
  return o.str();
}

}  // namespace ssdr::driver
