// Summaries of `ssdr experiment` (rank 0 of the world): results.json, summary.csv,
// summary.md and gnuplot plots of accuracy against dimension and parameters.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "experiment_internal.hpp"
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
Stat stat(const std::vector<double>& v) {
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
};
std::string params_text(const json& p) {
  std::string s;
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (it.key() == "dim" || it.key() == "method") continue;
    s += (s.empty() ? "" : " ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return s.empty() ? "defaults" : s;
}


/// Runs `gnuplot SCRIPT` inside `folder` with an argument vector (posix_spawnp: no shell,
/// so no user text is ever interpreted), its output to /dev/null. The script names its
/// files relative to the folder. Says so (and goes on) when gnuplot is missing or fails.
void run_gnuplot(const std::string& folder, const std::string& script) {
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
    return;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) say("gnuplot failed on " + folder + "/" + script);
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
    auto val = [](const json& v) { return v.is_null() ? NAN : v.get<double>(); };
    s.unlabeled.push_back(val(r["accuracy"]["unlabeled"]));
    s.unseen.push_back(val(r["accuracy"]["unseen"]));
    s.seconds.push_back(r["seconds"].get<double>());
    s.cv.push_back(r.contains("cv_accuracy") ? val(r["cv_accuracy"]) : NAN);
    if (r.contains("selection") && r["selection"].is_object() && r["selection"].contains("chosen"))
      ++s.chosen[params_text(r["selection"]["chosen"])];
    if (r.contains("fallback_to_gda") && r["fallback_to_gda"].is_boolean() && r["fallback_to_gda"].get<bool>())
      ++s.fallbacks;
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
  // For plots: per (dataset, p): method → dim → (unlabeled, unseen) at the best non-dim params.
  std::map<std::pair<std::string, int>, std::map<std::string, std::map<int64_t, std::pair<Stat, Stat>>>> by_dim;
  // Per (dataset, p, method, param): value → best-over-dims mean accuracy.
  std::map<std::tuple<std::string, int, std::string, std::string>, std::map<double, std::pair<Stat, Stat>>> by_param;
  for (const auto& [k, settings] : groups_map) {
    const auto& [dataset, method, p] = k;
    const Setting* best = nullptr;
    Stat best_u, best_t;
    double best_score = NAN;
    for (const auto& [key, s] : settings) {
      if (static_cast<int>(s.unlabeled.size()) < job.splits) continue;  // incomplete (killed mid-setting)
      const Stat u = stat(s.unlabeled), t = stat(s.unseen), c = stat(s.cv);
      const double score = job.select_by == "unseen" ? t.mean : job.select_by == "cv" ? c.mean : u.mean;
      if (!best || (!std::isnan(score) && (std::isnan(best_score) || score > best_score))) {
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
    // Dimension curve at the best parameters.
    json best_params = best->params;
    best_params.erase("dim");
    for (const auto& [key, s] : settings) {
      json q = s.params;
      q.erase("dim");
      if (q == best_params) by_dim[{dataset, p}][method][s.dim] = {stat(s.unlabeled), stat(s.unseen)};
    }
    // Parameter curves at the best dimension: each swept numeric parameter, the others at best.
    for (auto it = best_params.begin(); it != best_params.end(); ++it) {
      if (!it.value().is_number() || it.key() == "method") continue;
      for (const auto& [key, s] : settings) {
        if (s.dim != best->dim) continue;
        json q = s.params;
        q.erase("dim");
        json a = q, b = best_params;
        a.erase(it.key());
        b.erase(it.key());
        if (a == b && q[it.key()].is_number())
          by_param[{dataset, p, method, it.key()}][q[it.key()].get<double>()] = {stat(s.unlabeled), stat(s.unseen)};
      }
    }
  }
  io::write_text_atomic(out_dir + "/summary.csv", csv.str());
  io::write_text_atomic(out_dir + "/summary.md", md.str());

  const std::string plots = out_dir + "/plots";
  make_dirs(plots);
  std::vector<std::string> made;
  for (const auto& [k, methods_map] : by_dim) {
    bool any_curve = false;
    for (const auto& [m, curve] : methods_map) any_curve = any_curve || curve.size() > 1;
    if (!any_curve) continue;
    const std::string stem = slug(k.first) + "_p" + std::to_string(k.second) + "_accuracy_vs_dim";
    std::ostringstream dat, gp;
    std::vector<std::string> names;
    for (const auto& [m, curve] : methods_map) {
      if (curve.size() < 2) continue;
      dat << "# " << m << "\n";
      for (const auto& [dim, st] : curve)
        dat << dim << " " << fmt(st.first.mean, "%.6f") << " " << fmt(st.second.mean, "%.6f") << "\n";
      dat << "\n\n";
      names.push_back(m);
    }
    io::write_text_atomic(plots + "/" + stem + ".dat", dat.str());
    for (const char* term : {"pngcairo size 900,600", "svg size 900,600"}) {
      const bool png = std::string(term).rfind("png", 0) == 0;
      gp << "set terminal " << term << "\nset output '" << stem << (png ? ".png" : ".svg") << "'\n"
         << "set title '" << slug(k.first) << ", " << k.second << " labeled per class (mean of " << job.splits
         << " splits)'\nset xlabel 'dimension m'\nset ylabel '1-NN accuracy'\nset key bottom right\nset grid\n"
         << "set xtics 1\nset mxtics 1\n"
         << "plot ";
      for (size_t i = 0; i < names.size(); ++i)
        gp << (i ? ", " : "") << "'" << stem << ".dat' index " << i << " using 1:2 with linespoints lw 2 title '"
           << slug(names[i]) << " unlabeled', '" << stem << ".dat' index " << i
           << " using 1:3 with linespoints dt 2 title '" << slug(names[i]) << " unseen'";
      gp << "\n";
    }
    io::write_text_atomic(plots + "/" + stem + ".gp", gp.str());
    run_gnuplot(plots, stem + ".gp");
    made.push_back(plots + "/" + stem + ".png");
  }
  for (const auto& [k, curve] : by_param) {
    if (curve.size() < 2) continue;
    const auto& [dataset, p, method, param] = k;
    std::string file_method;  // "ssgda (rbf)" → "ssgda_rbf"
    for (char ch : method)
      if (ch == ' ') file_method += '_';
      else if (ch != '(' && ch != ')') file_method += ch;
    const std::string stem =
        slug(dataset) + "_p" + std::to_string(p) + "_" + slug(file_method) + "_accuracy_vs_" + slug(param);
    std::ostringstream dat, gp;
    bool log_x = true;
    for (const auto& [v, st] : curve) {
      dat << v << " " << fmt(st.first.mean, "%.6f") << " " << fmt(st.second.mean, "%.6f") << "\n";
      log_x = log_x && v > 0;
    }
    log_x = log_x && curve.rbegin()->first / curve.begin()->first >= 100;
    io::write_text_atomic(plots + "/" + stem + ".dat", dat.str());
    for (const char* term : {"pngcairo size 900,600", "svg size 900,600"}) {
      const bool png = std::string(term).rfind("png", 0) == 0;
      gp << "set terminal " << term << "\nset output '" << stem << (png ? ".png" : ".svg") << "'\n"
         << "set title '" << slug(method) << " on " << slug(dataset) << ", " << p << " labeled per class'\n"
         << (log_x ? "set logscale x\n" : "") << "set xlabel '" << slug(param) << "'\nset ylabel '1-NN accuracy'\nset grid\n"
         << "plot '" << stem << ".dat' using 1:2 with linespoints lw 2 title 'unlabeled', '" << stem
         << ".dat' using 1:3 with linespoints dt 2 title 'unseen'\n";
    }
    io::write_text_atomic(plots + "/" + stem + ".gp", gp.str());
    run_gnuplot(plots, stem + ".gp");
    made.push_back(plots + "/" + stem + ".png");
  }
  say("wrote " + out_dir + "/results.json, summary.csv, summary.md and " + std::to_string(made.size()) +
      " plot(s) (PNG and SVG) in " + plots);
  std::fputs(md.str().c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace ssdr::driver::detail
