#include "ssdr/driver/commands.hpp"

#include "ssdr/driver/auto_select.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "ssdr/io/output.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/driver/provenance.hpp"
#include "ssdr/model/model.hpp"

namespace ssdr::driver {

namespace {

int comm_rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
int comm_size(MPI_Comm comm) {
  int s = 1;
  MPI_Comm_size(comm, &s);
  return s;
}

nlohmann::json number_or_null(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

std::string fmt_acc(double v) {
  if (std::isnan(v)) return "     -";
  char b[32];
  std::snprintf(b, sizeof b, "%6.4f", v);
  return b;
}

std::vector<data::Role> make_roles(const FitCommand& cmd, const io::Dataset& ds, uint64_t seed, MPI_Comm comm) {
  if (!cmd.split_file.empty()) return data::read_split(cmd.split_file, ds.X.row_start, ds.X.n_local, ds.X.n_global, comm);
  if (cmd.roles_from_data) {
    SSDR_REQUIRE(ds.labeled(), cmd.data + ": the data have no labels; expected a label column (or --labels FILE for NPY)");
    return data::roles_from_labels(ds.labels, comm);
  }
  data::SplitSpec spec = cmd.split;
  spec.seed = seed;
  return data::make_split(ds.labels, ds.X.row_start, ds.classes, spec, comm, ds.class_names);
}

io::Dataset read_data(const std::string& path, io::Format format, const io::ReadOptions& read, MPI_Comm comm,
                      methods::Timings& t) {
  Phase phase("read", &t);
  io::Dataset ds = io::read_dataset(path, format, comm, read);
  say("read " + std::to_string(ds.X.n_global) + " samples x " + std::to_string(ds.X.cols) + " features" +
      (!ds.labeled() ? std::string() : ", " + std::to_string(ds.classes) + " classes") + " from " + path +
      (ds.typed ? std::string(" (kept as ") + to_string(ds.rows.type) + ")" : std::string()));
  return ds;
}

/// The data set's class names as the model records them (integers as numbers, names as
/// strings), or null when they are 0..c-1. Local.
nlohmann::json class_names_json(const io::Dataset& ds) {
  bool identity = ds.integer_labels;
  for (size_t k = 0; identity && k < ds.class_names.size(); ++k) identity = ds.class_names[k] == std::to_string(k);
  if (identity) return nullptr;
  nlohmann::json names = nlohmann::json::array();
  for (const std::string& s : ds.class_names)
    names.push_back(ds.integer_labels ? nlohmann::json(std::stoll(s)) : nlohmann::json(s));
  return names;
}

/// The model's class names: its parameters' class_names (numbers as their decimal text, as
/// the data readers name integer classes), else "0".."c-1". Local.
std::vector<std::string> model_class_names(const model::Model& m) {
  std::vector<std::string> names;
  const nlohmann::json p = nlohmann::json::parse(m.parameters_json, nullptr, false);
  if (p.is_object() && p.contains("class_names") && p["class_names"].is_array() &&
      static_cast<int64_t>(p["class_names"].size()) == m.classes) {
    for (const auto& v : p["class_names"]) names.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    return names;
  }
  for (int64_t k = 0; k < m.classes; ++k) names.push_back(std::to_string(k));
  return names;
}

/// The rows of `--soft-labels`: this rank's transductive (not unseen) rows in file order,
/// with their 0-based index in the data file (global, whatever the rank count), their
/// --id-column text (when the data have ids) and their class codes (−1: unlabeled; when the
/// data have labels). Read from ds before a consuming fit empties ds.X. Local.
struct SoftLabelRows {
  std::vector<int64_t> ids;
  std::vector<std::string> id_names;
  std::vector<int> truth;
};
SoftLabelRows soft_label_rows(const io::Dataset& ds, const std::vector<data::Role>& roles) {
  SoftLabelRows rows;
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i] != data::Role::unseen) {
      rows.ids.push_back(ds.X.row_start + static_cast<int64_t>(i));
      if (i < ds.labels.size()) rows.truth.push_back(ds.labels[i]);
      if (i < ds.ids.size()) rows.id_names.push_back(ds.ids[i]);
    }
  return rows;
}

/// The soft-label CSV's value columns: `p_<name>` for each class (in code order), then, with
/// `outlier`, `p_outlier` for the outlier class. A prefix keeps every column apart from the
/// table's own `id` and `label` whatever the classes are called; a class named `outlier`
/// moves the outlier column to `p_outlier_` (one more `_` per further clash). Local.
std::vector<std::string> soft_label_columns(const std::vector<std::string>& class_names, bool outlier) {
  std::vector<std::string> columns;
  for (const std::string& name : class_names) columns.push_back("p_" + name);
  if (outlier) {
    std::string o = "p_outlier";
    while (std::find(columns.begin(), columns.end(), o) != columns.end()) o.push_back('_');
    columns.push_back(o);
  }
  return columns;
}

nlohmann::json base_report(const FitCommand& cmd, const io::Dataset& ds, MPI_Comm comm) {
  nlohmann::json r;
  r["ssdr_version"] = version();
  r["provenance"] = provenance();
  r["command"] = cmd.splits > 1 ? "evaluate" : "fit";
  r["method"] = cmd.config.method;
  r["ranks"] = comm_size(comm);
  r["data"] = cmd.data;
  r["n"] = ds.X.n_global;
  r["d"] = ds.X.cols;
  r["classes"] = ds.classes;
  r["class_names"] = ds.class_names;
  r["parameters"] = cmd.config.parameters;
  return r;
}

nlohmann::json timings_json(const methods::Timings& t, double total) {
  nlohmann::json j;
  // The contract's stages always appear; any other stage a method timed (kernel, ...) too.
  for (const char* k : {"read", "preprocess", "knn_graph", "propagation", "scatter", "eigensolve", "evaluate"}) {
    auto it = t.find(k);
    j[k] = it == t.end() ? 0.0 : it->second;
  }
  for (const auto& [k, v] : t) j[k] = v;
  j["total"] = total;
  return j;
}

/// Peak resident memory of every rank in MiB (getrusage), gathered on all ranks. Collective.
nlohmann::json peak_memory(MPI_Comm comm) {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  double mine = static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
  std::vector<double> all(static_cast<size_t>(comm_size(comm)));
  MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm);
  double mx = 0;
  for (double v : all) mx = std::max(mx, v);
  return {{"per_rank", all}, {"max", mx}};
}

/// The method column of the fit's table: the method, or "auto:NAME" with the chosen NAME.
std::string shown_method(const FitCommand& cmd, const FitConfig& config) {
  return is_auto(cmd.config.method) ? std::string(kAutoMethod) + ":" + config.method : config.method;
}

void print_table_header() {
  std::printf("%-10s %5s %7s %7s %9s %7s %4s %9s %9s %9s %12s\n", "method", "ranks", "n", "labeled", "unlabeled",
              "unseen", "dim", "acc_unlab", "acc_unsee", "time_s", "peak_MiB/rk");
}

/// cmd.config, or with --method auto the configuration select_auto chooses on this split, or
/// with --select-by cv the configuration select_by_cv chooses on this split
/// (folds seeded by `seed`; timed as "selection"; `selection` receives its report).
/// Collective.
FitConfig selected_config(const FitCommand& cmd, const io::Dataset& ds, const std::vector<data::Role>& roles,
                          uint64_t seed, methods::Timings& timings, nlohmann::json& selection) {
  if (is_auto(cmd.config.method)) {
    Phase phase("selection", &timings);
    Selection s = select_auto(ds, roles, cmd.config, seed);
    selection = std::move(s.report);
    // The split's record (labeled_per_class, ..., split_file) stays beside the chosen fit's.
    for (auto it = cmd.config.parameters.begin(); it != cmd.config.parameters.end(); ++it)
      if (!s.config.parameters.contains(it.key()) && it.key() != "settings" && it.key() != "max_kernel_memory")
        s.config.parameters[it.key()] = it.value();
    return s.config;
  }
  if (cmd.select_by != "cv") return cmd.config;
  Phase phase("selection", &timings);
  const Grid grid = cmd.grid.empty() ? default_grid(cmd.config) : cmd.grid;
  Selection s = select_by_cv(ds, roles, cmd.config, grid, cmd.cv_folds, seed);
  selection = std::move(s.report);
  return s.config;
}

}  // namespace

void check_outputs(const FitCommand& cmd, MPI_Comm comm) {
  io::check_outputs({{"--report", cmd.report}, {"--model", cmd.model}, {"--embedding", cmd.embedding},
                     {"--soft-labels", cmd.soft_labels}, {"--graph-out", cmd.graph_out}, {"--plot", cmd.plot},
                     {"--cv-table", cmd.cv_table}},
                    {{"--data", cmd.data}, {"--split", cmd.split_file}, {"--labels", cmd.read.labels},
                     {"--graph-in", cmd.graph_in}},
                    comm);
}

int run_fit(const FitCommand& cmd, MPI_Comm comm) {
  const double t0 = MPI_Wtime();
  SSDR_REQUIRE(cmd.soft_labels.empty() || methods::propagates_labels(methods::find_method(cmd.config.method)),
               "--soft-labels: method " + cmd.config.method +
                   " propagates no labels; expected soda, ksoda, lp, sl-lda or sl-lda-wls");
  check_outputs(cmd, comm);
  methods::Timings timings;
  io::Dataset ds = read_data(cmd.data, cmd.format, cmd.read, comm, timings);
  std::vector<data::Role> roles = make_roles(cmd, ds, cmd.split.seed, comm);
  const auto counts = data::count_roles(roles, comm);
  nlohmann::json selection;
  FitConfig config;
  if (is_auto(cmd.config.method) && selects_on_copy(ds, roles, cmd.config)) {
    // auto selects on a copy of the transductive rows: the data set (five times them at F =
    // 0.2) is released while the selection runs and read again for the fit, so the
    // selection's memory is that of the transductive rows (issue 49: within 1.2x of one fit).
    // The reader and the split are deterministic: the same rows and roles again.
    std::vector<data::Role> t_roles;
    io::Dataset t = transductive_copy(ds, roles, t_roles);
    ds = io::Dataset();
    config = selected_config(cmd, t, t_roles, cmd.split.seed, timings, selection);
    t = io::Dataset();
    ds = read_data(cmd.data, cmd.format, cmd.read, comm, timings);
    roles = make_roles(cmd, ds, cmd.split.seed, comm);
  } else {
    config = selected_config(cmd, ds, roles, cmd.split.seed, timings, selection);
  }
  config.graph_in = cmd.graph_in;
  config.keep_lists = !cmd.graph_out.empty();
  // The classes' names in the model and the report, as Python's fit records them (not for
  // the classes 0..c-1 themselves).
  const nlohmann::json names = class_names_json(ds);
  if (!names.is_null()) config.parameters["class_names"] = names;
  nlohmann::json r = base_report(cmd, ds, comm);
  const int64_t n = ds.X.n_global;
  // The single fit consumes the data (one copy of it in memory, not the raw and the
  // preprocessed rows side by side). The embedding (n×m, small) is kept for --embedding
  // and for the model's labeled samples.
  // The soft labels' rows (the transductive samples, in file order) named before the fit: the
  // consuming fit empties ds.X, its layout (row_start) included, so ids taken after it would
  // be rank-local.
  SoftLabelRows soft_rows;
  if (!cmd.soft_labels.empty()) soft_rows = soft_label_rows(ds, roles);
  Estimator estimator(config);
  FitOutcome out = estimator.fit_split(ds, roles, !cmd.embedding.empty() || !cmd.plot.empty());
  for (auto& [k, v] : out.timings) timings[k] += v;
  if (!selection.is_null()) out.info["selection"] = selection;
  const double total = MPI_Wtime() - t0;

  r["parameters"] = config.parameters;  // with the selected values
  if (is_auto(cmd.config.method)) r["chosen_method"] = config.method;
  r["dim"] = out.dim;
  r["d_reduced"] = out.d_reduced;
  r["split"] = {{"labeled", counts.labeled}, {"unlabeled", counts.unlabeled}, {"unseen", counts.unseen},
                {"seed", cmd.split.seed}, {"file", cmd.split_file}};
  r["accuracy"] = {{"unlabeled", number_or_null(out.accuracy.unlabeled)},
                   {"unseen", number_or_null(out.accuracy.unseen)}};
  // The samples scored: those with a true label (an unlabeled row of the data has none).
  r["scored"] = {{"unlabeled", out.accuracy.n_unlabeled}, {"unseen", out.accuracy.n_unseen}};
  const bool truth = out.accuracy.n_unlabeled + out.accuracy.n_unseen > 0;
  if (!truth) r["accuracy_note"] = "no accuracy: no unlabeled or unseen sample has a true label in the data";
  r["trace_ratio"] = number_or_null(out.trace_ratio);
  // An approximate graph's estimated recall@k at the top level, where nobody misses it.
  if (out.info.contains("graph") && out.info["graph"].contains("knn_recall"))
    r["knn_recall"] = out.info["graph"]["knn_recall"];
  r["info"] = out.info;
  r["timings_s"] = timings_json(timings, total);
  r["peak_memory_mib"] = peak_memory(comm);

  // All outputs or none: when a later one cannot be written, the regular files this run
  // wrote before it are removed (devices and FIFOs are left alone), so a failed run leaves
  // nothing that looks like a result.
  std::vector<std::string> written;
  try {
    // CSV outputs name their columns: each row's sample index, its label by name (empty for an
    // unlabeled row), then y1..ym (soft labels: p_<class name> per class and p_outlier).
    if (!cmd.embedding.empty()) {
      Phase phase("write embedding");
      io::TableColumns table;
      if (ds.labeled() && static_cast<int64_t>(ds.labels.size()) == out.embedding.n_local) {
        table.labels = &ds.labels;
        table.names = &ds.class_names;
      }
      if (!ds.ids.empty() && static_cast<int64_t>(ds.ids.size()) == out.embedding.n_local) table.id_names = &ds.ids;
      io::write_embedding(out.embedding, cmd.embedding, "/embedding", table);
      written.push_back(cmd.embedding);
    }
    if (!cmd.graph_out.empty()) {
      Phase phase("write graph");
      SSDR_REQUIRE(out.knn_lists.k > 0, "--graph-out: the fit built no kNN graph to write");
      graph::write_knn_lists(cmd.graph_out, out.knn_lists, comm, out.graph_provenance.dump());
      written.push_back(cmd.graph_out);
    }
    if (!cmd.soft_labels.empty()) {
      Phase phase("write soft labels");
      // Every rank holds the soft labels of its own transductive rows (FitOutcome::soft_labels);
      // a layout that differs would pair rows with the wrong ids, so it is refused.
      SSDR_CHECK_COLLECTIVE(comm, static_cast<int64_t>(soft_rows.ids.size()) == out.soft_labels.n_local,
                            "--soft-labels: " + std::to_string(out.soft_labels.n_local) + " rows of soft labels for " +
                                std::to_string(soft_rows.ids.size()) + " transductive rows on this rank (internal)");
      io::TableColumns table;
      table.ids = &soft_rows.ids;
      if (!ds.ids.empty()) table.id_names = &soft_rows.id_names;
      if (ds.labeled()) {
        table.labels = &soft_rows.truth;
        table.names = &ds.class_names;
      }
      if (out.soft_labels.cols == ds.classes || out.soft_labels.cols == ds.classes + 1)
        table.columns = soft_label_columns(ds.class_names, out.soft_labels.cols == ds.classes + 1);
      io::write_embedding(out.soft_labels, cmd.soft_labels, "/soft_labels", table);
      written.push_back(cmd.soft_labels);
    }
    if (!cmd.model.empty()) {
      estimator.save(cmd.model, comm);
      written.push_back(cmd.model);
    }
    if (!cmd.cv_table.empty()) {
      on_root(comm, [&] { io::write_text_atomic(cmd.cv_table, cv_table_csv(selection)); });
      written.push_back(cmd.cv_table);
    }
    if (!cmd.report.empty()) on_root(comm, [&] { io::write_text_atomic(cmd.report, r.dump(2) + "\n"); });
    if (!cmd.plot.empty()) {
      // From the CSV embedding just written, else from a temporary CSV beside the figure.
      Phase phase("plot");
      const bool csv = !cmd.embedding.empty() && io::has_extension(cmd.embedding, ".csv");
      // The title names the data file, not the path it was reached by.
      const std::string data_name = cmd.data.substr(cmd.data.find_last_of('/') == std::string::npos
                                                        ? 0
                                                        : cmd.data.find_last_of('/') + 1);
      PlotCommand plot{cmd.embedding, cmd.plot, "", config.method + " on " + data_name, false};
      if (!csv) {
        int pid = ::getpid();  // rank 0's: one temporary name on every rank
        MPI_Bcast(&pid, 1, MPI_INT, 0, comm);
        plot.embedding = cmd.plot + ".tmp." + std::to_string(pid) + ".csv";
        io::TableColumns table;
        if (ds.labeled() && static_cast<int64_t>(ds.labels.size()) == out.embedding.n_local) {
          table.labels = &ds.labels;
          table.names = &ds.class_names;
        }
        io::write_embedding_streamed(out.embedding, plot.embedding, table);
      }
      try {
        run_plot(plot, comm);
      } catch (...) {
        if (!csv && comm_rank(comm) == 0) ::unlink(plot.embedding.c_str());
        throw;
      }
      if (!csv && comm_rank(comm) == 0) ::unlink(plot.embedding.c_str());
      written.push_back(cmd.plot);
    }
  } catch (...) {
    if (comm_rank(comm) == 0)
      for (const std::string& path : written) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
      }
    throw;
  }

  if (comm_rank(comm) == 0 && !truth) {  // nothing to score: no accuracy columns
    std::printf("%-10s %5s %7s %7s %9s %7s %4s %9s %12s\n", "method", "ranks", "n", "labeled", "unlabeled", "unseen",
                "dim", "time_s", "peak_MiB/rk");
    std::printf("%-10s %5d %7lld %7lld %9lld %7lld %4lld %9.2f %12.0f\n", shown_method(cmd, config).c_str(), comm_size(comm),
                static_cast<long long>(n), static_cast<long long>(counts.labeled),
                static_cast<long long>(counts.unlabeled), static_cast<long long>(counts.unseen),
                static_cast<long long>(out.dim), total, r["peak_memory_mib"]["max"].get<double>());
    std::fflush(stdout);
  } else if (comm_rank(comm) == 0) {
    print_table_header();
    std::printf("%-10s %5d %7lld %7lld %9lld %7lld %4lld %9s %9s %9.2f %12.0f\n", shown_method(cmd, config).c_str(), comm_size(comm),
                static_cast<long long>(n), static_cast<long long>(counts.labeled),
                static_cast<long long>(counts.unlabeled), static_cast<long long>(counts.unseen),
                static_cast<long long>(out.dim), fmt_acc(out.accuracy.unlabeled).c_str(),
                fmt_acc(out.accuracy.unseen).c_str(), total, r["peak_memory_mib"]["max"].get<double>());
    std::fflush(stdout);
  }
  return 0;
}

int run_evaluate(const FitCommand& cmd, MPI_Comm comm) {
  const double t0 = MPI_Wtime();
  SSDR_REQUIRE(cmd.splits >= 1, "--splits must be at least 1");
  SSDR_REQUIRE(cmd.split_file.empty(), "evaluate draws random splits: use --labeled-per-class, not --split");
  SSDR_REQUIRE(cmd.embedding.empty(), "evaluate writes no embedding; use fit --embedding");
  check_outputs(cmd, comm);
  methods::Timings timings;
  io::Dataset ds = read_data(cmd.data, cmd.format, cmd.read, comm, timings);
  std::vector<double> unl, uns, ratio;
  nlohmann::json per_split = nlohmann::json::array();
  int64_t dim = 0, d_reduced = 0;
  data::SplitCounts counts;
  nlohmann::json chosen = nlohmann::json::array();
  double selection_seconds = 0;
  for (int s = 0; s < cmd.splits; ++s) {
    const uint64_t seed = cmd.split.seed + static_cast<uint64_t>(s);
    say("split " + std::to_string(s + 1) + "/" + std::to_string(cmd.splits) + " (seed " + std::to_string(seed) + ")");
    const auto roles = make_roles(cmd, ds, seed, comm);
    counts = data::count_roles(roles, comm);
    nlohmann::json selection;
    const FitConfig config = selected_config(cmd, ds, roles, seed, timings, selection);
    FitOutcome out = fit_and_evaluate(ds, roles, config, false);
    for (auto& [k, v] : out.timings) timings[k] += v;
    if (!selection.is_null()) {
      out.info["selection"] = selection;
      chosen.push_back(selection["chosen"]);
      if (is_auto(cmd.config.method)) chosen.back()["method"] = config.method;
      selection_seconds += selection["seconds"].get<double>();
    }
    dim = out.dim;
    d_reduced = out.d_reduced;
    unl.push_back(out.accuracy.unlabeled);
    uns.push_back(out.accuracy.unseen);
    ratio.push_back(out.trace_ratio);
    per_split.push_back({{"seed", seed},
                         {"accuracy", {{"unlabeled", number_or_null(out.accuracy.unlabeled)},
                                       {"unseen", number_or_null(out.accuracy.unseen)}}},
                         {"trace_ratio", number_or_null(out.trace_ratio)},
                         {"info", out.info}});
    const double elapsed = MPI_Wtime() - t0;
    char b[128];
    std::snprintf(b, sizeof b, "split %d/%d done: unlabeled %s, unseen %s; ETA %.0f s", s + 1, cmd.splits,
                  fmt_acc(out.accuracy.unlabeled).c_str(), fmt_acc(out.accuracy.unseen).c_str(),
                  elapsed / (s + 1) * (cmd.splits - s - 1));
    say(b);
  }
  auto stats = [](const std::vector<double>& v) {
    double mean = 0, sq = 0;
    int n = 0;
    for (double x : v)
      if (!std::isnan(x)) { mean += x; ++n; }
    if (n == 0) return std::pair<double, double>{NAN, NAN};
    mean /= n;
    for (double x : v)
      if (!std::isnan(x)) sq += (x - mean) * (x - mean);
    return std::pair<double, double>{mean, n > 1 ? std::sqrt(sq / (n - 1)) : 0.0};
  };
  const auto [mu_u, sd_u] = stats(unl);
  const auto [mu_t, sd_t] = stats(uns);
  const double total = MPI_Wtime() - t0;
  nlohmann::json r = base_report(cmd, ds, comm);
  r["dim"] = dim;
  r["d_reduced"] = d_reduced;
  r["splits"] = cmd.splits;
  r["split"] = {{"labeled", counts.labeled}, {"unlabeled", counts.unlabeled}, {"unseen", counts.unseen},
                {"first_seed", cmd.split.seed}};
  nlohmann::json vu = nlohmann::json::array(), vt = nlohmann::json::array();
  for (double x : unl) vu.push_back(number_or_null(x));
  for (double x : uns) vt.push_back(number_or_null(x));
  r["accuracy"] = {{"unlabeled", {{"mean", number_or_null(mu_u)}, {"std", number_or_null(sd_u)}, {"values", vu}}},
                   {"unseen", {{"mean", number_or_null(mu_t)}, {"std", number_or_null(sd_t)}, {"values", vt}}}};
  const auto [mu_r, sd_r] = stats(ratio);
  r["trace_ratio"] = number_or_null(mu_r);
  r["per_split"] = per_split;
  if (cmd.select_by == "cv" || is_auto(cmd.config.method))
    r["selection"] = {{"by", "cv"}, {"cv_folds", cmd.cv_folds}, {"chosen_per_split", chosen},
                      {"seconds", selection_seconds}};
  r["timings_s"] = timings_json(timings, total);
  r["peak_memory_mib"] = peak_memory(comm);
  if (!cmd.report.empty()) on_root(comm, [&] { io::write_text_atomic(cmd.report, r.dump(2) + "\n"); });
  if (comm_rank(comm) == 0) {
    std::printf("%-10s %5s %7s %7s %9s %7s %4s %15s %15s %9s\n", "method", "ranks", "n", "labeled", "unlabeled",
                "unseen", "dim", "acc_unlabeled", "acc_unseen", "time_s");
    auto ms = [](double m, double s) {
      if (std::isnan(m)) return std::string("              -");
      char b[40];
      std::snprintf(b, sizeof b, "%6.4f ± %6.4f", m, s);
      return std::string(b);
    };
    std::printf("%-10s %5d %7lld %7lld %9lld %7lld %4lld %15s %15s %9.2f\n", cmd.config.method.c_str(), comm_size(comm),
                static_cast<long long>(ds.X.n_global), static_cast<long long>(counts.labeled),
                static_cast<long long>(counts.unlabeled), static_cast<long long>(counts.unseen),
                static_cast<long long>(dim), ms(mu_u, sd_u).c_str(), ms(mu_t, sd_t).c_str(), total);
    std::fflush(stdout);
  }
  (void)sd_r;
  return 0;
}

int run_transform(const TransformCommand& cmd, MPI_Comm comm) {
  SSDR_REQUIRE(!cmd.embedding.empty(), "transform needs --embedding FILE");
  io::check_outputs({{"--embedding", cmd.embedding}},
                    {{"--model", cmd.model}, {"--data", cmd.data}, {"--labels", cmd.read.labels}}, comm);
  const Estimator estimator = Estimator::load(cmd.model, comm, {{"verbose", !quiet()}});
  const model::Model& m = estimator.model();
  methods::Timings t;
  io::Dataset ds = read_data(cmd.data, cmd.format, cmd.read, comm, t);
  SSDR_REQUIRE(ds.X.cols == m.d_input, "--data " + cmd.data + " has " + std::to_string(ds.X.cols) +
                                           " features but the model '" + cmd.model + "' expects " +
                                           std::to_string(m.d_input));
  const DistMatrix Y = ds.sparse ? estimator.transform(ds.Xs) : estimator.transform(ds.X);
  io::TableColumns table;
  if (ds.labeled() && static_cast<int64_t>(ds.labels.size()) == Y.n_local) {
    table.labels = &ds.labels;
    table.names = &ds.class_names;
  }
  if (!ds.ids.empty() && static_cast<int64_t>(ds.ids.size()) == Y.n_local) table.id_names = &ds.ids;
  io::write_embedding(Y, cmd.embedding, "/embedding", table);
  say("wrote " + std::to_string(Y.n_global) + " x " + std::to_string(Y.cols) + " embedding to " + cmd.embedding);
  return 0;
}

int run_predict(const PredictCommand& cmd, MPI_Comm comm) {
  io::check_outputs({{"--output", cmd.output}},
                    {{"--model", cmd.model}, {"--data", cmd.data}, {"--labels", cmd.read.labels}}, comm);
  const Estimator estimator = Estimator::load(cmd.model, comm, {{"verbose", !quiet()}});
  const model::Model& m = estimator.model();
  SSDR_REQUIRE(m.format_version >= model::kFirstVersionWithLabeled,
               "--model " + cmd.model + ": model format version " + std::to_string(m.format_version) +
                   " predates ssdr predict (it keeps no labeled samples); refit it with this ssdr (ssdr fit --model)");
  SSDR_REQUIRE(!m.labeled_labels.empty(), "--model " + cmd.model +
                                              ": the model keeps no labeled samples to predict from; refit it with "
                                              "ssdr fit --model");
  methods::Timings t;
  io::Dataset ds = read_data(cmd.data, cmd.format, cmd.read, comm, t);
  SSDR_REQUIRE(ds.X.cols == m.d_input, "--data " + cmd.data + " has " + std::to_string(ds.X.cols) +
                                           " features but the model '" + cmd.model + "' expects " +
                                           std::to_string(m.d_input));
  const std::vector<int> predicted = ds.sparse ? estimator.predict(ds.Xs) : estimator.predict(ds.X);
  const int64_t n = ds.X.n_global;
  const bool labeled = ds.labeled();
  // The model's classes by name (its class_names, else 0..c-1); the data's labels are
  // compared by name, so the two files need not code the classes alike.
  const std::vector<std::string> names = model_class_names(m);
  // Which of the file's classes the model knows (both lists are the same on every rank). When
  // it knows none, the file's labels are written otherwise (quoted, other codes): nothing is
  // scored, and rank 0 says so, rather than print an accuracy of 0.
  std::vector<char> known(ds.class_names.size(), 0);
  size_t n_known = 0;
  for (size_t k = 0; k < ds.class_names.size(); ++k) {
    known[k] = std::find(names.begin(), names.end(), ds.class_names[k]) != names.end() ? 1 : 0;
    n_known += known[k] != 0 ? 1 : 0;
  }
  const bool score = labeled && n_known > 0;
  int64_t facts[3] = {0, 0, 0};  // correct, scored, scored with a class the model does not know
  if (labeled)
    for (size_t i = 0; i < predicted.size(); ++i) {
      if (ds.labels[i] < 0) continue;  // an unlabeled row has no truth
      ++facts[1];
      facts[0] += names[static_cast<size_t>(predicted[i])] == ds.class_names[static_cast<size_t>(ds.labels[i])] ? 1 : 0;
      facts[2] += known[static_cast<size_t>(ds.labels[i])] != 0 ? 0 : 1;
    }
  MPI_Allreduce(MPI_IN_PLACE, facts, 3, MPI_INT64_T, MPI_SUM, comm);
  if (labeled && !score && facts[1] > 0 && comm_rank(comm) == 0) {
    auto shown = [](const std::string& name) {  // on one line: control characters escaped
      std::string text;
      for (unsigned char ch : name) {
        if (ch >= 0x20 && ch != 0x7f) {
          text.push_back(static_cast<char>(ch));
        } else {
          char esc[8];
          std::snprintf(esc, sizeof esc, ch == '\n' ? "\\n" : ch == '\r' ? "\\r" : "\\x%02x", ch);
          text += esc;
        }
      }
      return text;
    };
    auto listed = [&](const std::vector<std::string>& v) {
      std::string text;
      for (size_t k = 0; k < v.size() && k < 5; ++k) text += (k > 0 ? ", '" : "'") + shown(v[k]) + "'";
      return text + (v.size() > 5 ? ", ... (" + std::to_string(v.size()) + " in all)" : "");
    };
    std::fprintf(stderr,
                 "ssdr: warning: --data %s: none of its %zu class names (%s) is a class of the model %s (%s); no "
                 "accuracy scored\n",
                 cmd.data.c_str(), ds.class_names.size(), listed(ds.class_names).c_str(), cmd.model.c_str(),
                 listed(names).c_str());
    std::fflush(stderr);
  }
  // Each rank's predictions by name, streamed to the file through rank 0 in row order: a CSV
  // table (id,prediction; the data's ids when it has an --id-column), else one per line or NPY.
  if (io::has_extension(cmd.output, ".csv")) {
    // No values, the rows' own layout (the ids follow it).
    DistMatrix none = dist_layout<double>(comm, layout_from_local(static_cast<int64_t>(predicted.size()), comm), 0);
    io::TableColumns table;
    table.labels = &predicted;
    table.names = &names;
    table.label_column = "prediction";
    if (!ds.ids.empty() && ds.ids.size() == predicted.size()) table.id_names = &ds.ids;
    io::write_embedding_streamed(none, cmd.output, table);
  } else {
    io::write_labels(predicted, cmd.output, comm, io::has_extension(cmd.output, ".npy"), &names);
  }
  ds = io::Dataset();
  say("wrote " + std::to_string(n) + " predicted labels to " + cmd.output);
  // The accuracy, like fit's table, whatever --quiet says, with what it counts: the rows the
  // file labels, which may be rows the model was trained on.
  if (score && facts[1] > 0 && comm_rank(comm) == 0) {
    const std::string unknown =
        facts[2] == 0 ? std::string()
                      : "; " + std::to_string(facts[2]) + " of them have a class the model does not know";
    std::printf("predict: %lld samples; accuracy %s on the %lld rows labeled in %s (%lld correct%s; rows the model "
                "may have been trained on)\n",
                static_cast<long long>(n), fmt_acc(static_cast<double>(facts[0]) / static_cast<double>(facts[1])).c_str(),
                static_cast<long long>(facts[1]), cmd.data.c_str(), static_cast<long long>(facts[0]), unknown.c_str());
    std::fflush(stdout);
  }
  return 0;
}

namespace {

/// The plotting script: beside an installed ssdr (PREFIX/share/ssdr), else in the source tree.
std::string plot_script() {
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len > 0) {
    std::string dir(exe, static_cast<size_t>(len));
    dir = dir.substr(0, dir.rfind('/'));
    const std::string installed = dir + "/../share/ssdr/plot_embedding.py";
    struct stat st {};
    if (::stat(installed.c_str(), &st) == 0) return installed;
  }
  return SSDR_PLOT_SCRIPT_SOURCE;
}

/// Runs argv (no shell) and returns its exit status; its stderr is captured into `err`.
int run_program(const std::vector<std::string>& args, std::string& err) {
  int fds[2];
  if (::pipe(fds) != 0) {
    err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    err = "cannot run " + args[0] + ": " + std::strerror(rc);
    return -1;
  }
  char buf[4096];
  ssize_t got = 0;
  while ((got = ::read(fds[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<size_t>(got));
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

int run_plot(const PlotCommand& cmd, MPI_Comm comm) {
  io::check_outputs({{"--output", cmd.output}}, {{"EMBEDDING", cmd.embedding}, {"--labels", cmd.labels}}, comm);
  std::string message;
  bool ok = true;
  if (comm_rank(comm) == 0) {
    std::vector<std::string> args = {SSDR_PYTHON, plot_script(), cmd.embedding, "--output", cmd.output};
    if (!cmd.labels.empty()) args.insert(args.end(), {"--labels", cmd.labels});
    if (!cmd.title.empty()) args.insert(args.end(), {"--title", cmd.title});
    if (cmd.pca) args.push_back("--pca");
    std::string err;
    const int status = run_program(args, err);
    if (status != 0) {
      ok = false;
      // The script's last line (its own one-line error), without its "ssdr plot: " prefix.
      while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
      const size_t nl = err.rfind('\n');
      message = nl == std::string::npos ? err : err.substr(nl + 1);
      if (message.rfind("ssdr plot: ", 0) == 0) message = message.substr(11);
      if (message.empty()) message = "plot: " + args[0] + " exited with status " + std::to_string(status);
      else message = "plot: " + message;
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  say("wrote the plot " + cmd.output);
  return 0;
}

int run_convert(const ConvertCommand& cmd, MPI_Comm comm) {
  const bool h5 = io::has_extension(cmd.output, ".h5") || io::has_extension(cmd.output, ".hdf5");
  const bool npy = io::has_extension(cmd.output, ".npy");
  SSDR_REQUIRE(h5 || npy, "--output " + cmd.output + ": expected a name ending in .h5, .hdf5 or .npy");
  SSDR_REQUIRE(!npy || !cmd.labels_output.empty(),
               "--output " + cmd.output + ": an NPY file holds no labels; give --labels-output y.npy as well");
  SSDR_REQUIRE(!h5 || cmd.labels_output.empty(), "--labels-output: only with an NPY --output (HDF5 keeps the labels as /y)");
  io::check_outputs({{"--output", cmd.output}, {"--labels-output", cmd.labels_output}},
                    {{"--data", cmd.data}, {"--labels", cmd.read.labels}}, comm);
  methods::Timings t;
  const io::Dataset ds = read_data(cmd.data, cmd.format, cmd.read, comm, t);
  // The labels are written by their class names, so that reading the output gives the same
  // classes (class_names) as reading the input: names as strings, integer classes as their
  // own integers (not their codes), −1 (or "") unlabeled. An integer class −1 beside
  // unlabeled rows (--unlabeled-marker moved −1 off the markers) could not be told apart.
  int64_t unlabeled = 0;
  for (int code : ds.labels) unlabeled += code < 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &unlabeled, 1, MPI_INT64_T, MPI_SUM, comm);
  SSDR_REQUIRE(!(ds.integer_labels && unlabeled > 0 &&
                 std::find(ds.class_names.begin(), ds.class_names.end(), "-1") != ds.class_names.end()),
               "--data " + cmd.data + ": class -1 and " + std::to_string(unlabeled) +
                   " unlabeled rows would both be written as -1; expected no class -1 "
                   "(or --label-type string, which writes the labels as names)");
  const std::vector<std::string>* names = ds.labeled() ? &ds.class_names : nullptr;
  Phase phase("write");
  if (h5) {
    io::write_hdf5(cmd.output, ds.X, "/X", &ds.labels, "/y", names, !ds.integer_labels);
  } else {
    io::write_embedding(ds.X, cmd.output);
    try {
      // Always NPY, whatever the name.
      io::write_labels(ds.labels, cmd.labels_output, comm, true, names, !ds.integer_labels);
    } catch (const Error&) {
      // Both files or neither: X without its labels is no data set.
      if (comm_rank(comm) == 0) ::unlink(cmd.output.c_str());
      throw;
    }
  }
  say("wrote " + std::to_string(ds.X.n_global) + " x " + std::to_string(ds.X.cols) + " samples to " + cmd.output);
  return 0;
}

}  // namespace ssdr::driver
