// The plots of `ssdr experiment`'s summary (rank 0 of the world): gnuplot plots of accuracy
// against dimension and parameters: means with error bars of ± the std over the splits,
// methods with a single m (or no embedding) as horizontal reference lines, and the
// parameters held fixed in every title. Each plot is its data (.dat), its script (.gp), and
// PNG and SVG drawn by gnuplot, run from an argument vector (no shell).
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "summary_internal.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/io/output.hpp"

namespace ssdr::driver::detail {

namespace {

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

/// Accuracy against m for one (data set, p) = `k` into `plots`: a method with several m is a
/// curve with error bars (± the std over the splits), a method with one m (or none: lp) a
/// horizontal reference line with its mean ± std in the key. Writes the .dat and .gp and runs
/// gnuplot unless `gnuplot` is false (set false when gnuplot is missing). Returns the plot's
/// stem, or "" when no method has a curve (no plot). Local.
std::string plot_accuracy_vs_dim(const Job& job, const std::string& plots, const std::pair<std::string, int>& k,
                                 const std::map<std::string, DimCurve>& methods_map, bool& gnuplot) {
  bool any_curve = false;
  for (const auto& [m, c] : methods_map) any_curve = any_curve || c.points.size() > 1;
  if (!any_curve) return "";
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
  return stem;
}

/// Accuracy against one swept numeric parameter (k: data set, p, method, parameter) with
/// error bars, into `plots`, as plot_accuracy_vs_dim. Returns the plot's stem, or "" when the
/// curve has fewer than two points (no plot). Local.
std::string plot_accuracy_vs_param(const Job& job, const std::string& plots,
                                   const std::tuple<std::string, int, std::string, std::string>& k,
                                   const ParamCurve& pc, bool& gnuplot) {
  const auto& curve = pc.points;
  if (curve.size() < 2) return "";
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
  return stem;
}

}  // namespace

size_t write_plots(const Job& job, const std::string& plots, const DimCurves& by_dim, const ParamCurves& by_param) {
  make_dirs(plots);
  size_t made = 0;
  std::set<std::string> stems;  // of every plot this summary writes
  bool gnuplot = true;          // false once gnuplot was not found
  // Accuracy against m, one per (data set, p): a method with several m is a curve with error
  // bars (± the std over the splits), a method with one m (or none: lp) a horizontal
  // reference line with its mean ± std in the key.
  for (const auto& [k, methods_map] : by_dim) {
    const std::string stem = plot_accuracy_vs_dim(job, plots, k, methods_map, gnuplot);
    if (stem.empty()) continue;
    ++made;
    stems.insert(stem);
  }
  // Accuracy against each swept numeric parameter, with error bars.
  for (const auto& [k, pc] : by_param) {
    const std::string stem = plot_accuracy_vs_param(job, plots, k, pc, gnuplot);
    if (stem.empty()) continue;
    ++made;
    stems.insert(stem);
  }
  remove_stale_plots(plots, stems);
  return made;
}

}  // namespace ssdr::driver::detail
