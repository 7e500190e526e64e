// Summaries of `ssdr experiment` (rank 0 of the world): results.json, summary.csv,
// summary.md and gnuplot plots of accuracy against dimension and parameters: means with
// error bars of ± the std over the splits, methods with a single m (or no embedding) as
// horizontal reference lines, and the parameters held fixed in every title.
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "experiment_internal.hpp"
#include "ssdr/driver/auto_select.hpp"
#include "ssdr/driver/provenance.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/io/output.hpp"

namespace ssdr::driver::detail {

namespace {

// ---------------------------------------------------------------------------------------
// Summary, tables and plots (rank 0 of the world).

struct Stat {
  double mean = NAN, std = NAN;
  int n = 0;
};
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

/// Mean and sample std over the splits of one setting: a point of a plot.
struct Point {
  Stat unlabeled, unseen;
};
/// A method's accuracy by dimension at its best parameters (accuracy-vs-dimension plot); one
/// point only (one m, or no embedding: lp) makes it a horizontal reference line there.
struct DimCurve {
  std::map<int64_t, Point> points;
  std::string fixed;  ///< its parameters held fixed, as the title names them
};
/// A method's accuracy against one swept parameter, m and the other parameters at their best.
struct ParamCurve {
  std::map<double, Point> points;
  std::string fixed;
};

/// Text as a gnuplot single-quoted string: control characters dropped, a quote doubled (the
/// only escape there). Single quotes also keep gnuplot from substituting backquotes and
/// macros (@name) inside, so text from job files is shown, never run.
std::string gp_quote(const std::string& text) {
  std::string out = "'";
  for (char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) continue;
    out += ch;
    if (ch == '\'') out += '\'';
  }
  return out + "'";
}

/// Several lines as one gnuplot string expression ('a'."\n".'b'), for titles.
std::string gp_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? ".\"\\n\"." : "") + gp_quote(lines[i]);
  return out;
}

/// Parts joined by `sep` into lines of at most about `width` characters (a part is never cut).
std::vector<std::string> wrap(const std::vector<std::string>& parts, const std::string& sep, size_t width) {
  std::vector<std::string> lines;
  std::string cur;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string piece = parts[i] + (i + 1 < parts.size() ? sep : "");
    if (!cur.empty() && cur.size() + piece.size() > width) {
      while (!cur.empty() && cur.back() == ' ') cur.pop_back();
      lines.push_back(cur);
      cur.clear();
    }
    cur += piece;
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// How the summary picks a setting: "mean unlabeled accuracy".
std::string select_text(const Job& job) {
  return job.select_by == "cv" ? "mean " + std::to_string(job.cv_folds) + "-fold CV accuracy"
                               : "mean " + job.select_by + " accuracy";
}

/// The protocol and job-wide preprocessing, as a plot title names them:
/// "3 labeled/class, transductive fraction 0.5, scaling=standardize".
std::string protocol_text(const Job& job, int p) {
  std::string s = std::to_string(p) + " labeled";
  if (job.protocol == "labeled-unlabeled-per-class")
    s += " + " + std::to_string(job.unlabeled_per_class) + " unlabeled/class";
  else if (job.protocol == "half-split")
    s += "/class, half split";
  else
    s += "/class, transductive fraction " + value_text(json(job.transductive_fraction));
  for (auto it = job.preprocess.begin(); it != job.preprocess.end(); ++it)
    s += ", " + it.key() + "=" + value_text(it.value());
  return s;
}

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

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (const auto& part : parts) s += (s.empty() ? "" : sep) + part;
  return s;
}

/// The closing clause of a title whose fixed values include chosen ones.
std::string chosen_clause(const Job& job, const std::string& fixed) {
  return fixed.find("(best of ") == std::string::npos ? std::string() : "best values by " + select_text(job);
}

/// "oda (m=2)", "lp (no embedding)": a reference line's name.
std::string reference_name(const std::string& method, int64_t dim) {
  return method + (dim > 0 ? " (m=" + std::to_string(dim) + ")" : " (no embedding)");
}

/// One line of a plot's .dat: x, unlabeled mean and std, unseen mean and std, splits.
std::string dat_row(const std::string& x, const Point& pt) {
  return x + " " + fmt(pt.unlabeled.mean, "%.6f") + " " + fmt(pt.unlabeled.std, "%.6f") + " " +
         fmt(pt.unseen.mean, "%.6f") + " " + fmt(pt.unseen.std, "%.6f") + " " + std::to_string(pt.unlabeled.n) + "\n";
}

/// Title lines are wrapped at about this many characters (the key takes the right of the canvas).
constexpr size_t kTitleWidth = 90;

const char* const kDatColumns = "unlabeled_mean unlabeled_std unseen_mean unseen_std splits";

/// Ten colours that stay apart on white (gnuplot's fifth default is a pale yellow).
const char* const kPalette =
    "set linetype 1 lc rgb '#1f77b4'\nset linetype 2 lc rgb '#d62728'\nset linetype 3 lc rgb '#2ca02c'\n"
    "set linetype 4 lc rgb '#ff7f0e'\nset linetype 5 lc rgb '#9467bd'\nset linetype 6 lc rgb '#8c564b'\n"
    "set linetype 7 lc rgb '#e377c2'\nset linetype 8 lc rgb '#7f7f7f'\nset linetype 9 lc rgb '#bcbd22'\n"
    "set linetype 10 lc rgb '#17becf'\nset linetype cycle 10\n";

/// The same plot as PNG and SVG: the script's settings once per terminal, then `plot`.
std::string both_terminals(const std::string& stem, const std::string& body) {
  std::string gp;
  for (const char* term : {"pngcairo size 1000,600 noenhanced font ',10'", "svg size 1000,600 noenhanced font ',10'"}) {
    const bool png = std::string(term).rfind("png", 0) == 0;
    gp += std::string("set terminal ") + term + "\nset encoding utf8\nset output '" + stem + (png ? ".png" : ".svg") +
          "'\n" + kPalette + body;
  }
  return gp;
}

/// "0.888 ± 0.041" (or "-" without a value).
std::string pm(const Stat& s) { return std::isnan(s.mean) ? "-" : fmt(s.mean, "%.3f") + " ± " + fmt(s.std, "%.3f"); }

/// Runs `gnuplot SCRIPT` inside `folder` with an argument vector (posix_spawnp: no shell,
/// so no user text is ever interpreted), its output to /dev/null. The script names its
/// files relative to the folder. Says so (and goes on) when gnuplot is missing or fails;
/// returns false when it is missing (the caller then skips the other plots).
bool run_gnuplot(const std::string& folder, const std::string& script) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, folder.c_str());
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::string prog = "gnuplot", arg = script;
  char* argv[] = {prog.data(), arg.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    say("gnuplot not found: plots skipped (their data and scripts are in the plots/ folder)");
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) say("gnuplot failed on " + folder + "/" + script);
  return true;
}

/// Removes the plot files (.dat, .gp, .png, .svg named *_accuracy_vs_*) in `plots` that this
/// summary did not make: plots of methods, parameters or labeled counts an edited job no
/// longer has, which would otherwise sit beside the current ones. Local (rank 0).
void remove_stale_plots(const std::string& plots, const std::set<std::string>& stems) {
  DIR* d = opendir(plots.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const auto dot = name.find_last_of('.');
    if (dot == std::string::npos || name.find("_accuracy_vs_") == std::string::npos) continue;
    const std::string ext = name.substr(dot);
    if ((ext == ".dat" || ext == ".gp" || ext == ".png" || ext == ".svg") && !stems.count(name.substr(0, dot)))
      stale.push_back(plots + "/" + name);
  }
  closedir(d);
  for (const std::string& f : stale) ::unlink(f.c_str());
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

  // (dataset, method, p) → setting key → Setting
  std::map<std::tuple<std::string, std::string, int>, std::map<std::string, Setting>> groups_map;
  int failed = 0;
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
  std::map<std::pair<std::string, int>, std::map<std::string, DimCurve>> by_dim;
  // Per (dataset, p, method, param): value → accuracy at the best dimension and other parameters.
  std::map<std::tuple<std::string, int, std::string, std::string>, ParamCurve> by_param;
  for (const auto& [k, settings] : groups_map) {
    const auto& [dataset, method, p] = k;
    const Setting* best = nullptr;
    Stat best_u, best_t;
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
  io::write_text_atomic(out_dir + "/summary.csv", csv.str());
  io::write_text_atomic(out_dir + "/summary.md", md.str());

  const std::string plots = out_dir + "/plots";
  make_dirs(plots);
  std::vector<std::string> made;
  std::set<std::string> stems;  // of every plot this summary writes
  bool gnuplot = true;          // false once gnuplot was not found
  // Accuracy against m, one per (data set, p): a method with several m is a curve with error
  // bars (± the std over the splits), a method with one m (or none: lp) a horizontal
  // reference line with its mean ± std in the key.
  for (const auto& [k, methods_map] : by_dim) {
    bool any_curve = false;
    for (const auto& [m, c] : methods_map) any_curve = any_curve || c.points.size() > 1;
    if (!any_curve) continue;
    const std::string stem = slug(k.first) + "_p" + std::to_string(k.second) + "_accuracy_vs_dim";
    std::ostringstream dat;
    dat << "# " << slug(k.first) << ", " << protocol_text(job, k.second)
        << ": 1-NN accuracy by dimension m, mean and sample std over the splits\n"
        << "# columns: m " << kDatColumns << "\n";
    std::vector<std::string> plot;  // the plot command's elements
    std::vector<std::string> defaults, fixed;
    int64_t xmin = 0, xmax = 0, index = 0, color = 0;
    bool first = true, fewer = false;
    for (const auto& [m, c] : methods_map) {
      ++color;
      (c.fixed.empty() ? defaults : fixed).push_back(c.fixed.empty() ? m : m + ": " + c.fixed);
      for (const auto& [dim, pt] : c.points) fewer = fewer || pt.unlabeled.n < job.splits;
      const bool has_unseen = std::any_of(c.points.begin(), c.points.end(),
                                          [](const auto& e) { return !std::isnan(e.second.unseen.mean); });
      const std::string lc = " lc " + std::to_string(color);
      if (c.points.size() > 1) {
        dat << (index ? "\n\n" : "\n") << "# curve " << m << (c.fixed.empty() ? "" : ": " + c.fixed) << "\n";
        for (const auto& [dim, pt] : c.points) dat << dat_row(std::to_string(dim), pt);
        xmin = first ? c.points.begin()->first : std::min(xmin, c.points.begin()->first);
        xmax = first ? c.points.rbegin()->first : std::max(xmax, c.points.rbegin()->first);
        first = false;
        const std::string src = "'" + stem + ".dat' index " + std::to_string(index++);
        plot.push_back(src + " using 1:2:3 with yerrorlines" + lc + " lw 2 pt 7 ps 0.8 title " +
                       gp_quote(m + " unlabeled"));
        if (has_unseen)
          plot.push_back(src + " using 1:4:5 with yerrorlines" + lc + " dt 2 pt 6 ps 0.8 title " +
                         gp_quote(m + " unseen"));
      } else {
        const auto& [dim, pt] = *c.points.begin();
        const std::string name = reference_name(m, dim);
        dat << (index ? "\n\n" : "\n") << "# reference " << name << (c.fixed.empty() ? "" : ": " + c.fixed) << "\n"
            << dat_row(std::to_string(dim), pt);
        // The line at the mean, its ± std in the key, and its error bar at its own m when
        // that lies inside the plotted range (gnuplot clips it otherwise).
        const std::string src = "'" + stem + ".dat' index " + std::to_string(index++);
        auto reference = [&](const Stat& s, const std::string& which, const char* dash, const char* columns) {
          if (std::isnan(s.mean)) return;
          plot.push_back(fmt(s.mean, "%.6f") + " with lines" + lc + " dt " + dash + " lw 2 title " +
                         gp_quote(name + " " + which + " " + pm(s)));
          plot.push_back(src + " using " + columns + " with yerrorbars" + lc + " pt 4 ps 0.8 notitle");
        };
        reference(pt.unlabeled, "unlabeled", "4", "1:2:3");
        reference(pt.unseen, "unseen", "3", "1:4:5");
      }
    }
    io::write_text_atomic(plots + "/" + stem + ".dat", dat.str());
    std::vector<std::string> parts;
    for (const auto& f : fixed) parts.push_back(f);
    if (!defaults.empty()) {
      std::string names;
      for (const auto& d : defaults) names += (names.empty() ? "" : ", ") + d;
      parts.push_back(names + (defaults.size() > 1 ? " at their defaults" : " at its defaults"));
    }
    if (!parts.empty()) parts.front() = "held fixed: " + parts.front();
    const std::string clause = chosen_clause(job, join(fixed, ";"));
    if (!clause.empty()) parts.push_back(clause);
    std::vector<std::string> title = wrap({slug(k.first) + ", " + protocol_text(job, k.second),
                                           "1-NN accuracy, mean ± std over " + std::to_string(job.splits) + " splits" +
                                               (fewer ? " (fewer where the job was stopped)" : "")},
                                          ": ", kTitleWidth);
    for (const auto& line : wrap(parts, "; ", kTitleWidth)) title.push_back(line);
    const double pad = std::max(0.5, 0.02 * static_cast<double>(xmax - xmin));
    std::ostringstream body;
    body << "set title " << gp_lines(title) << "\nset xlabel 'dimension m'\nset ylabel '1-NN accuracy'\n"
         << "set key outside right top Left reverse samplen 3\nset grid\nset datafile missing '-'\n"
         << "set xrange [" << fmt(static_cast<double>(xmin) - pad, "%g") << ":"
         << fmt(static_cast<double>(xmax) + pad, "%g") << "]\n"
         << (xmax - xmin <= 20 ? "set xtics 1\n" : "") << "plot ";
    for (size_t i = 0; i < plot.size(); ++i) body << (i ? ", \\\n     " : "") << plot[i];
    body << "\n";
    io::write_text_atomic(plots + "/" + stem + ".gp", both_terminals(stem, body.str()));
    gnuplot = gnuplot && run_gnuplot(plots, stem + ".gp");
    made.push_back(plots + "/" + stem + ".png");
    stems.insert(stem);
  }
  // Accuracy against each swept numeric parameter, with error bars.
  for (const auto& [k, pc] : by_param) {
    const auto& curve = pc.points;
    if (curve.size() < 2) continue;
    const auto& [dataset, p, method, param] = k;
    std::string file_method;  // "ssgda (rbf)" → "ssgda_rbf"
    for (char ch : method)
      if (ch == ' ') file_method += '_';
      else if (ch != '(' && ch != ')') file_method += ch;
    const std::string stem =
        slug(dataset) + "_p" + std::to_string(p) + "_" + slug(file_method) + "_accuracy_vs_" + slug(param);
    std::ostringstream dat;
    dat << "# " << method << ", " << slug(dataset) << ", " << protocol_text(job, p) << ": 1-NN accuracy against "
        << param << ", mean and sample std over the splits; held fixed: " << pc.fixed << "\n"
        << "# columns: " << param << " " << kDatColumns << "\n";
    bool log_x = true, has_unseen = false, fewer = false;
    for (const auto& [v, pt] : curve) {
      dat << dat_row(fmt(v, "%.10g"), pt);
      log_x = log_x && v > 0;
      has_unseen = has_unseen || !std::isnan(pt.unseen.mean);
      fewer = fewer || pt.unlabeled.n < job.splits;
    }
    log_x = log_x && curve.rbegin()->first / curve.begin()->first >= 100;
    io::write_text_atomic(plots + "/" + stem + ".dat", dat.str());
    std::vector<std::string> title = wrap({method + ", " + slug(dataset) + ", " + protocol_text(job, p),
                                           "1-NN accuracy, mean ± std over " + std::to_string(job.splits) + " splits" +
                                               (fewer ? " (fewer where the job was stopped)" : "")},
                                          ": ", kTitleWidth);
    std::vector<std::string> parts = {"held fixed: " + (pc.fixed.empty() ? std::string("the method's defaults") : pc.fixed)};
    const std::string clause = chosen_clause(job, pc.fixed);
    if (!clause.empty()) parts.push_back(clause);
    for (const auto& line : wrap(parts, "; ", kTitleWidth)) title.push_back(line);
    // A margin of 5 % of the range on both sides (the points off the frame, the tics apart).
    const double x0 = curve.begin()->first, x1 = curve.rbegin()->first;
    std::string xrange;
    if (log_x) {
      const double pad = 0.05 * std::log10(x1 / x0);
      xrange = fmt(x0 / std::pow(10.0, pad), "%.6g") + ":" + fmt(x1 * std::pow(10.0, pad), "%.6g");
    } else {
      const double pad = 0.05 * (x1 - x0);
      xrange = fmt(x0 - pad, "%.6g") + ":" + fmt(x1 + pad, "%.6g");
    }
    std::ostringstream body;
    body << "set title " << gp_lines(title) << "\n"
         << (log_x ? "set logscale x\n" : "") << "set xrange [" << xrange << "]\nset format x '%g'\nset xlabel "
         << gp_quote(param) << "\nset ylabel '1-NN accuracy'\n"
         << "set key outside right top Left reverse samplen 3\nset grid\nset datafile missing '-'\n"
         << "plot '" << stem << ".dat' using 1:2:3 with yerrorlines lc 1 lw 2 pt 7 ps 0.8 title 'unlabeled'";
    if (has_unseen)
      body << ", \\\n     '" << stem << ".dat' using 1:4:5 with yerrorlines lc 2 dt 2 pt 6 ps 0.8 title 'unseen'";
    body << "\n";
    io::write_text_atomic(plots + "/" + stem + ".gp", both_terminals(stem, body.str()));
    gnuplot = gnuplot && run_gnuplot(plots, stem + ".gp");
    made.push_back(plots + "/" + stem + ".png");
    stems.insert(stem);
  }
  remove_stale_plots(plots, stems);
  say("wrote " + out_dir + "/results.json, summary.csv, summary.md and " + std::to_string(made.size()) +
      " plot(s) (PNG and SVG) in " + plots);
  std::fputs(md.str().c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace ssdr::driver::detail
