// Summaries of `ssdr experiment` (rank 0 of the world): results.json, summary.csv and
// summary.md, aggregated over the splits (the best setting of every data set, method and
// labeled count by the job's select_by), and the curves that the plots draw
// (summary_plots.cpp: gnuplot plots of accuracy against dimension and parameters).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "summary_internal.hpp"
#include "ssdr/driver/auto_select.hpp"
#include "ssdr/driver/provenance.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/io/output.hpp"

namespace ssdr::driver::detail {

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (const auto& part : parts) s += (s.empty() ? "" : sep) + part;
  return s;
}

namespace {

Stat stat(const std::vector<double>& values) {
  // Summed in ascending order: the results arrive in an order that depends on --groups and
  // the rank count, and a sum in arrival order would make equal settings differ in the last
  // bit and break their ties differently (issue 32).
  std::vector<double> v = values;
  std::sort(v.begin(), v.end(), [](double a, double b) { return std::isnan(b) ? !std::isnan(a) : a < b; });
  Stat s;
  double sum = 0;
  for (double x : v)
    if (!std::isnan(x)) {
      sum += x;
      ++s.n;
    }
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  double sq = 0;
  for (double x : v)
    if (!std::isnan(x)) sq += (x - s.mean) * (x - s.mean);
  s.std = s.n > 1 ? std::sqrt(sq / (s.n - 1)) : 0.0;
  return s;
}

struct Setting {
  json params;
  int64_t dim = 0;
  std::vector<double> unlabeled, unseen, seconds, cv;
  std::map<std::string, int> chosen;  ///< cv_grid choices over the splits ("alpha=0.01" → count)
  int fallbacks = 0;                  ///< splits in which SSGDA fell back to GDA
  /// auto with m chosen per split: each split's m → count (dim is then the most frequent).
  std::map<int64_t, int> chosen_dims;
};
std::string params_text(const json& p) {
  std::string s;
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (it.key() == "dim" || it.key() == "method") continue;
    s += (s.empty() ? "" : " ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return s.empty() ? "defaults" : s;
}

/// One split's choice of a selection, as summary.md counts them: the cv_grid point
/// ("alpha=0.01"), or for auto the method, its m and parameters ("lda m=2 scaling=standardize
/// shrinkage=auto").
std::string choice_text(const json& r) {
  const json& chosen = r["selection"]["chosen"];
  if (!r.contains("chosen_method") || !r["chosen_method"].is_string()) {
    // A cv_grid over dim: the chosen m leads ("m=1 alpha=10").
    const std::string rest = params_text(chosen);
    if (!chosen.contains("dim") || !chosen["dim"].is_number_integer()) return rest;
    const std::string m = "m=" + std::to_string(chosen["dim"].get<int64_t>());
    return rest == "defaults" ? m : m + " " + rest;
  }
  std::string s = r["chosen_method"].get<std::string>();
  if (chosen.contains("dim") && chosen["dim"].is_number_integer()) s += " m=" + std::to_string(chosen["dim"].get<int64_t>());
  const std::string rest = params_text(chosen);
  return rest == "defaults" ? s : s + " " + rest;
}

/// The settings of every (data set, method, p): setting key → Setting.
using Groups = std::map<std::tuple<std::string, std::string, int>, std::map<std::string, Setting>>;

/// Distinct values of every parameter (and "dim") over a method's complete settings: a
/// parameter with more than one was chosen by the summary's select_by, not by the job.
using Swept = std::map<std::string, std::set<std::string>>;

/// The parameters held fixed in a plot, as its title shows them: {"m=8 (best of 8)", "knn=10",
/// "sigma_s=0.001 (best of 3)"}; "best of N": the job swept N values and the summary chose
/// this one by its select_by. `skip` is the plotted parameter; `dim` > 0 puts m first.
std::vector<std::string> fixed_parts(const Job& job, const json& params, const Swept& swept, const std::string& skip,
                                     int64_t dim) {
  auto best_of = [&](const std::string& key) {
    const auto it = swept.find(key);
    return it != swept.end() && it->second.size() > 1 ? " (best of " + std::to_string(it->second.size()) + ")"
                                                      : std::string();
  };
  std::vector<std::string> parts;
  if (dim > 0) parts.push_back("m=" + std::to_string(dim) + best_of("dim"));
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (it.key() == "dim" || it.key() == "method" || it.key() == skip) continue;
    if (it.key() == "cv_grid") {
      std::string names;
      if (it.value().is_object())
        for (auto c = it.value().begin(); c != it.value().end(); ++c) names += (names.empty() ? "" : ", ") + c.key();
      parts.push_back((names.empty() ? std::string("the paper's grid") : names) + " by " +
                      std::to_string(job.cv_folds) + "-fold CV in every split");
      continue;
    }
    parts.push_back(it.key() + "=" + value_text(it.value()) + best_of(it.key()));
  }
  return parts;
}

/// The results grouped by (data set, method, p) and, inside, by setting (parameters and m),
/// their accuracies, times and choices collected over the splits; an auto setting's m the most
/// frequent of its splits' (a tie to the smaller). `failed` counts the results that hold an
/// error. Local.
Groups group_results(const std::vector<json>& results, int& failed) {
  // (dataset, method, p) → setting key → Setting
  Groups groups_map;
  failed = 0;
  for (const auto& r : results) {
    if (r.contains("error")) {
      ++failed;
      continue;
    }
    // A kernel chosen in the job is part of the row's name (the papers tabulate linear and RBF
    // kernels separately, e.g. ssgda-zhang-yeung Tables III and VII).
    std::string method = r["method"].get<std::string>();
    if (r["params"].contains("kernel") && r["params"]["kernel"].is_string())
      method += " (" + r["params"]["kernel"].get<std::string>() + ")";
    auto& g = groups_map[{r["dataset"].get<std::string>(), method, r["labeled_per_class"].get<int>()}];
    json p = r["params"];
    const std::string key = p.dump() + "|" + std::to_string(r["dim"].get<int64_t>());
    Setting& s = g[key];
    s.params = p;
    s.dim = r["dim"].get<int64_t>() > 0 ? r["dim"].get<int64_t>() : r["dim_used"].get<int64_t>();
    // m chosen per split (auto, or a cv_grid over dim): counted, so the row's m does not
    // depend on the order the results came in.
    const bool m_chosen = r.contains("chosen_method") ||
                          (r.contains("selection") && r["selection"].is_object() &&
                           r["selection"].contains("chosen") && r["selection"]["chosen"].contains("dim"));
    if (r["dim"].get<int64_t>() == 0 && m_chosen) ++s.chosen_dims[s.dim];
    auto val = [](const json& v) { return v.is_null() ? NAN : v.get<double>(); };
    s.unlabeled.push_back(val(r["accuracy"]["unlabeled"]));
    s.unseen.push_back(val(r["accuracy"]["unseen"]));
    s.seconds.push_back(r["seconds"].get<double>());
    s.cv.push_back(r.contains("cv_accuracy") ? val(r["cv_accuracy"]) : NAN);
    if (r.contains("selection") && r["selection"].is_object() && r["selection"].contains("chosen"))
      ++s.chosen[choice_text(r)];
    if (r.contains("fallback_to_gda") && r["fallback_to_gda"].is_boolean() && r["fallback_to_gda"].get<bool>())
      ++s.fallbacks;
  }
  // m chosen per split (auto, a cv_grid over dim): the setting's m is the most frequent (a tie to the smaller),
  // whatever order the results came in; summary.md lists every split's choice.
  for (auto& [k, settings] : groups_map)
    for (auto& [key, s] : settings) {
      int most = 0;
      for (const auto& [dim, count] : s.chosen_dims)
        if (count > most) {
          most = count;
          s.dim = dim;
        }
    }
  return groups_map;
}

/// The best complete setting of one (data set, method, p) by the job's select_by (nullptr when
/// none is complete), its unlabeled and unseen accuracies in `best_u` and `best_t`. Local.
const Setting* best_setting(const Job& job, const std::map<std::string, Setting>& settings, Stat& best_u, Stat& best_t) {
  const Setting* best = nullptr;
  double best_score = NAN;
  for (const auto& [key, s] : settings) {
    if (static_cast<int>(s.unlabeled.size()) < job.splits) continue;  // incomplete (killed mid-setting)
    const Stat u = stat(s.unlabeled), t = stat(s.unseen), c = stat(s.cv);
    const double score = job.select_by == "unseen" ? t.mean : job.select_by == "cv" ? c.mean : u.mean;
    // Ties (equal means, summed order-independently above) go to the smallest dim, then the
    // smallest parameter values in name order (JSON order: numbers numerically), the same
    // on any rank count and --groups: for a grid written ascending, its first candidate.
    const bool earlier = best && (s.dim != best->dim ? s.dim < best->dim : s.params < best->params);
    if (!best || (!std::isnan(score) && (std::isnan(best_score) || score > best_score ||
                                         (score == best_score && earlier)))) {
      best = &s;
      best_u = u;
      best_t = t;
      best_score = score;
    }
  }
  return best;
}

/// The plots' curves of one (data set, method, p) at its best setting `best`: its accuracy by
/// dimension at the best parameters (into `by_dim`) and against each swept numeric parameter
/// at the best dimension and other parameters (into `by_param`), each with the values held
/// fixed as its title names them. Local.
void add_curves(const Job& job, const std::string& dataset, const std::string& method, int p,
                const std::map<std::string, Setting>& settings, const Setting* best, DimCurves& by_dim,
                ParamCurves& by_param) {
  // What the job swept for this method (over its complete settings): the plots' titles
  // say which held-fixed values the summary chose.
  Swept swept;
  for (const auto& [key, s] : settings) {
    if (static_cast<int>(s.unlabeled.size()) < job.splits) continue;
    swept["dim"].insert(std::to_string(s.dim));
    for (auto it = s.params.begin(); it != s.params.end(); ++it) swept[it.key()].insert(it.value().dump());
  }
  // Dimension curve at the best parameters.
  json best_params = best->params;
  best_params.erase("dim");
  DimCurve& dc = by_dim[{dataset, p}][method];
  std::vector<std::string> fixed = fixed_parts(job, best_params, swept, "", -1);
  if (is_auto(method))  // no defaults: its method, m (unless the job fixed it) and parameters chosen in every split
    fixed.insert(fixed.begin(), std::string(best->chosen_dims.empty() ? "method and parameters" : "method, m and parameters") +
                                    " by " + std::to_string(job.cv_folds) + "-fold CV in every split");
  dc.fixed = join(fixed, ", ");
  for (const auto& [key, s] : settings) {
    json q = s.params;
    q.erase("dim");
    if (q == best_params) dc.points[s.dim] = {stat(s.unlabeled), stat(s.unseen)};
  }
  // Parameter curves at the best dimension: each swept numeric parameter, the others at best.
  for (auto it = best_params.begin(); it != best_params.end(); ++it) {
    if (!it.value().is_number() || it.key() == "method") continue;
    ParamCurve& pc = by_param[{dataset, p, method, it.key()}];
    pc.fixed = join(fixed_parts(job, best_params, swept, it.key(), best->dim), ", ");
    for (const auto& [key, s] : settings) {
      if (s.dim != best->dim) continue;
      json q = s.params;
      q.erase("dim");
      json a = q, b = best_params;
      a.erase(it.key());
      b.erase(it.key());
      if (a == b && q[it.key()].is_number())
        pc.points[q[it.key()].get<double>()] = {stat(s.unlabeled), stat(s.unseen)};
    }
  }
}

}  // namespace

/// A file-name-safe form of user text (data set names come from job files): letters,
/// digits, '-', '_' and '.' are kept, anything else becomes '_', and a leading '.' or '-'
/// gets a '_' in front, so the result never leaves its folder ("../x" → "_.._x"), never
/// reads as an option, and needs no quoting inside a gnuplot string. Local.
std::string slug(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    out += (std::isalnum(u) || ch == '-' || ch == '_' || ch == '.') ? ch : '_';
  }
  if (out.empty() || out[0] == '.' || out[0] == '-') out.insert(out.begin(), '_');
  return out;
}

std::string fmt(double v, const char* f) {
  if (std::isnan(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

void summarize(const Job& job, const std::string& out_dir, const std::vector<json>& results, double sweep_seconds,
               int groups, int ranks) {
  // results.json: every split of every configuration.
  json all = {{"job", job.name}, {"job_file", job.file}, {"ssdr_version", version()}, {"provenance", provenance()}, {"groups", groups},
              {"ranks", ranks}, {"sweep_seconds", sweep_seconds}, {"results", results}};
  io::write_text_atomic(out_dir + "/results.json", all.dump(1) + "\n");

  int failed = 0;
  const Groups groups_map = group_results(results, failed);
  std::ostringstream csv, md;
  csv << "dataset,method,labeled_per_class,splits,best_dim,best_params,unlabeled_mean,unlabeled_std,unseen_mean,"
         "unseen_std,cv_mean,seconds_per_fit\n";
  md << "# " << job.name << "\n\n"
     << "ssdr " << version() << ", protocol " << job.protocol << ", " << job.splits
     << " random splits (seeds " << job.seed << ".." << job.seed + static_cast<uint64_t>(job.splits) - 1
     << "), best setting by mean " << job.select_by << " accuracy, " << ranks << " ranks in " << groups
     << " group(s), sweep " << fmt(sweep_seconds, "%.1f") << " s"
     << (failed ? "; " + std::to_string(failed) + " configuration(s) rejected by their method (see results.json)" : "")
     << ".\n\n"
     << "| data set | method | labeled/class | unlabeled | unseen | dim | parameters | s/fit |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  // For plots: per (dataset, p): method → accuracy by dim at its best non-dim parameters.
  DimCurves by_dim;
  // Per (dataset, p, method, param): value → accuracy at the best dimension and other parameters.
  ParamCurves by_param;
  for (const auto& [k, settings] : groups_map) {
    const auto& [dataset, method, p] = k;
    Stat best_u, best_t;
    const Setting* best = best_setting(job, settings, best_u, best_t);
    if (!best) continue;
    const Stat secs = stat(best->seconds);
    csv << dataset << "," << method << "," << p << "," << best_u.n << "," << best->dim << ",\""
        << params_text(best->params) << "\"," << fmt(best_u.mean, "%.6f") << "," << fmt(best_u.std, "%.6f") << ","
        << fmt(best_t.mean, "%.6f") << "," << fmt(best_t.std, "%.6f") << "," << fmt(stat(best->cv).mean, "%.6f") << ","
        << fmt(secs.mean, "%.3f") << "\n";
    std::string chosen;
    for (const auto& [text, count] : best->chosen) chosen += (chosen.empty() ? "" : ", ") + text + " ×" + std::to_string(count);
    if (!chosen.empty()) chosen = "; by CV per split: " + chosen;
    if (best->fallbacks > 0) chosen += "; GDA fallback in " + std::to_string(best->fallbacks) + " split(s)";
    md << "| " << dataset << " | " << method << " | " << p << " | " << fmt(best_u.mean) << " ± " << fmt(best_u.std)
       << " | " << fmt(best_t.mean) << " ± " << fmt(best_t.std) << " | " << best->dim << " | "
       << params_text(best->params) << chosen << " | " << fmt(secs.mean, "%.2f") << " |\n";
    add_curves(job, dataset, method, p, settings, best, by_dim, by_param);
  }
  io::write_text_atomic(out_dir + "/summary.csv", csv.str());
  io::write_text_atomic(out_dir + "/summary.md", md.str());

  const std::string plots = out_dir + "/plots";
  const size_t made = write_plots(job, plots, by_dim, by_param);
  say("wrote " + out_dir + "/results.json, summary.csv, summary.md and " + std::to_string(made) +
      " plot(s) (PNG and SVG) in " + plots);
  std::fputs(md.str().c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace ssdr::driver::detail
