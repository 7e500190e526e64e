#include "ssdr/driver/commands.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

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
  data::SplitSpec spec = cmd.split;
  spec.seed = seed;
  return data::make_split(ds.labels, ds.X.row_start, ds.classes, spec, comm);
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

void print_table_header() {
  std::printf("%-10s %5s %7s %7s %9s %7s %4s %9s %9s %9s %12s\n", "method", "ranks", "n", "labeled", "unlabeled",
              "unseen", "dim", "acc_unlab", "acc_unsee", "time_s", "peak_MiB/rk");
}

/// cmd.config, or with --select-by cv the configuration select_by_cv chooses on this split
/// (folds seeded by `seed`; timed as "selection"; `selection` receives its report).
/// Collective.
FitConfig selected_config(const FitCommand& cmd, const io::Dataset& ds, const std::vector<data::Role>& roles,
                          uint64_t seed, methods::Timings& timings, nlohmann::json& selection) {
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
                     {"--soft-labels", cmd.soft_labels}, {"--graph-out", cmd.graph_out}},
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
  const auto roles = make_roles(cmd, ds, cmd.split.seed, comm);
  const auto counts = data::count_roles(roles, comm);
  nlohmann::json selection;
  FitConfig config = selected_config(cmd, ds, roles, cmd.split.seed, timings, selection);
  config.graph_in = cmd.graph_in;
  config.keep_lists = !cmd.graph_out.empty();
  nlohmann::json r = base_report(cmd, ds, comm);
  const int64_t n = ds.X.n_global;
  // The single fit consumes the data (one copy of it in memory, not the raw and the
  // preprocessed rows side by side). The embedding (n×m, small) is kept for --embedding
  // and for the model's labeled samples.
  Estimator estimator(config);
  FitOutcome out = estimator.fit_split(ds, roles, !cmd.embedding.empty());
  for (auto& [k, v] : out.timings) timings[k] += v;
  if (!selection.is_null()) out.info["selection"] = selection;
  const double total = MPI_Wtime() - t0;

  r["parameters"] = config.parameters;  // with the selected values
  r["dim"] = out.dim;
  r["d_reduced"] = out.d_reduced;
  r["split"] = {{"labeled", counts.labeled}, {"unlabeled", counts.unlabeled}, {"unseen", counts.unseen},
                {"seed", cmd.split.seed}, {"file", cmd.split_file}};
  r["accuracy"] = {{"unlabeled", number_or_null(out.accuracy.unlabeled)},
                   {"unseen", number_or_null(out.accuracy.unseen)}};
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
    if (!cmd.embedding.empty()) {
      Phase phase("write embedding");
      io::write_embedding(out.embedding, cmd.embedding);
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
      io::write_embedding(out.soft_labels, cmd.soft_labels, "/soft_labels");
      written.push_back(cmd.soft_labels);
    }
    if (!cmd.model.empty()) {
      estimator.save(cmd.model, comm);
      written.push_back(cmd.model);
    }
    if (!cmd.report.empty()) on_root(comm, [&] { io::write_text_atomic(cmd.report, r.dump(2) + "\n"); });
  } catch (...) {
    if (comm_rank(comm) == 0)
      for (const std::string& path : written) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
      }
    throw;
  }

  if (comm_rank(comm) == 0) {
    print_table_header();
    std::printf("%-10s %5d %7lld %7lld %9lld %7lld %4lld %9s %9s %9.2f %12.0f\n", cmd.config.method.c_str(), comm_size(comm),
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
  if (cmd.select_by == "cv")
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
  io::write_embedding(Y, cmd.embedding);
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
  int64_t correct = 0;
  if (labeled)
    for (size_t i = 0; i < predicted.size(); ++i)
      correct += predicted[i] == ds.labels[i] ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &correct, 1, MPI_INT64_T, MPI_SUM, comm);
  ds = io::Dataset();
  // Each rank's predictions, streamed to the file through rank 0 in row order.
  io::write_labels(predicted, cmd.output, comm, io::has_extension(cmd.output, ".npy"));
  say("wrote " + std::to_string(n) + " predicted labels to " + cmd.output);
  if (labeled && comm_rank(comm) == 0) {  // the accuracy, like fit's table, whatever --quiet says
    std::printf("predict: %lld samples, accuracy %s (%lld correct)\n", static_cast<long long>(n),
                fmt_acc(static_cast<double>(correct) / static_cast<double>(n)).c_str(), static_cast<long long>(correct));
    std::fflush(stdout);
  }
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
  Phase phase("write");
  if (h5) {
    io::write_hdf5(cmd.output, ds.X, "/X", &ds.labels, "/y");
  } else {
    io::write_embedding(ds.X, cmd.output);
    try {
      io::write_labels(ds.labels, cmd.labels_output, comm, true);  // always NPY, whatever the name
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
