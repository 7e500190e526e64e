#include "ssdr/driver/experiment.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <unordered_set>

#include "experiment_internal.hpp"
#include "job_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/driver/auto_select.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/driver/selection.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/model/model.hpp"
#include "ssdr/model/projector.hpp"

namespace ssdr::driver {

namespace detail {

namespace {

// ---------------------------------------------------------------------------------------
// Checkpoint files.

/// Every complete line of every results*.jsonl (a line cut by a kill is ignored). Only regular
/// files are opened (prepare_output_folder refused anything else; a FIFO would block here).
std::vector<json> read_results(const std::string& dir) {
  std::vector<json> out;
  for (const auto& f : result_files(dir)) {
    struct stat st {};
    if (::lstat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      try {
        out.push_back(json::parse(line));
      } catch (const json::exception&) {
        // a partial last line from a killed run
      }
    }
  }
  return out;
}

/// Appends one line with a single write() and fsync: the line is either there whole or,
/// after a kill, cut (and ignored on reading).
void append_line(const std::string& path, const std::string& line) {
  // O_NOFOLLOW and a regular-file check: a results file that is a link (to the input data,
  // the job file) or a device is refused, never appended to.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
  SSDR_CHECK(fd >= 0, "cannot open results file '" + path + "' for appending: " +
                          (errno == ELOOP ? std::string("it is a symbolic link") : std::string(std::strerror(errno))));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
    ::close(fd);
    SSDR_THROW("results file '" + path + "' is not a regular file of its own (a device, FIFO or hard link); " +
               "choose a new --output folder");
  }
  // A line cut earlier (full disk, kill) has no newline: start on a fresh line, or this
  // record would be glued to the cut one and lost with it.
  const off_t size = ::lseek(fd, 0, SEEK_END);
  char last = '\n';
  if (size > 0 && ::pread(fd, &last, 1, size - 1) != 1) last = '\n';
  const std::string text = (last == '\n' ? "" : "\n") + line + "\n";
  const ssize_t w = ::write(fd, text.data(), text.size());
  const bool whole = w == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  if (!whole && size >= 0 && ::ftruncate(fd, size) != 0) {
    // nothing more to do: the cut line is ignored on reading
  }
  ::close(fd);
  SSDR_CHECK(whole, "cannot write to results file '" + path + "' (disk full?)");
}

}  // namespace

namespace {

json acc_json(const evaluation::Accuracy& a) {
  auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  return {{"unlabeled", num(a.unlabeled)}, {"unseen", num(a.unseen)}};
}

}  // namespace

}  // namespace detail

using namespace detail;

namespace {

/// The signal that asked the experiment to stop (0: none). Set by the handler only.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

/// SIGUSR1 and SIGTERM ask for a clean stop: the configuration in flight finishes and is
/// checkpointed, no new one starts, the summary covers what is done. SA_RESTART: system
/// calls in flight (MPI, file writes) resume instead of failing with EINTR. Local.
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

int run_experiment(const ExperimentOptions& options, MPI_Comm world) {
  const double t0 = MPI_Wtime();
  install_stop_handlers();
  int wrank = 0, wsize = 1;
  MPI_Comm_rank(world, &wrank);
  MPI_Comm_size(world, &wsize);
  SSDR_REQUIRE(options.groups >= 1 && options.groups <= wsize,
               "--groups " + std::to_string(options.groups) + " must be between 1 and the number of ranks (" +
                   std::to_string(wsize) + ")");
  Job job = parse_job(options.job_file);
  if (!options.output.empty()) job.output = options.output;
  job.fingerprint = job_fingerprint(job);
  const std::vector<Unit> units = make_units(job);
  // What the summary covers: exactly these configurations (a folder may also hold results of
  // configurations an edited job no longer has; they stay in the checkpoint, unreported).
  const std::unordered_set<std::string> keys = config_keys(job, units);

  // Every data set readable, and a regular file or an IDX folder, before the output folder is
  // made and before any group starts (a group's own failure would reach the other groups
  // only at the end of their work).
  bool ok = true;
  std::string msg;
  if (wrank == 0)
    for (const DatasetSpec& d : job.datasets) {
      struct stat st {};
      if (::access(d.path.c_str(), R_OK) != 0 || ::stat(d.path.c_str(), &st) != 0) {
        msg = job.file + ": data set '" + d.name + "': cannot read '" + d.path + "': " + std::strerror(errno);
        break;
      }
      if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        msg = job.file + ": data set '" + d.name + "': cannot read '" + d.path +
              "': not a regular file (a device, FIFO or socket); expected a data file";
        break;
      }
    }
  SSDR_CHECK_COLLECTIVE(world, msg.empty(), msg);

  // The output folder: made, checked against the inputs and what it holds, then locked for
  // the whole run (a second run into it is refused here, at once). Then what is already done
  // (every rank reads the same files).
  prepare_output_folder(job, options.groups, world);
  const FolderLock lock(job.output, world);
  MPI_Barrier(world);
  std::set<std::string> done;
  const std::string& fingerprint = job.fingerprint;
  for (const auto& r : read_results(job.output)) {
    const std::string key = r.contains("key") && r["key"].is_string() ? r["key"].get<std::string>() : "";
    SSDR_REQUIRE(key.rfind(fingerprint + "|", 0) == 0,
                 "--output " + job.output + " holds results of another configuration of this job (its seed, protocol, "
                 "splits, selection, preprocessing, data sets or ssdr version differ: '" + key.substr(0, 60) +
                 "'); choose a new --output folder or remove its results*.jsonl to start over");
    done.insert(key);
  }


  // Groups: contiguous blocks of ranks; group g takes blocks b with b mod G == g.
  const int G = options.groups;
  const int color = static_cast<int>(static_cast<int64_t>(wrank) * G / wsize);
  MPI_Comm group = MPI_COMM_NULL;
  MPI_Comm_split(world, color, wrank, &group);
  int grank = 0, gsize = 1;
  MPI_Comm_rank(group, &grank);
  MPI_Comm_size(group, &gsize);
  const bool leader = grank == 0;
  const std::string results_path = checkpoint_path(job.output, color, G);

  // Every rank sees the same units and the same done set, so these counts need no reduction.
  std::vector<const Unit*> mine;
  int64_t total_configs = 0, skipped_all = 0;
  for (const auto& u : units) {
    total_configs += static_cast<int64_t>(u.dims.size());
    int64_t finished = 0;
    for (int64_t dim : u.dims) finished += done.count(config_key(job, u, dim)) ? 1 : 0;
    skipped_all += finished;
    if (u.block % G == color && finished < static_cast<int64_t>(u.dims.size())) mine.push_back(&u);
  }
  say("experiment '" + job.name + "': " + std::to_string(total_configs) + " configurations (" +
      std::to_string(units.size()) + " fits), " + std::to_string(skipped_all) + " already done in " + job.output +
      "; " + std::to_string(G) + " group(s) of ~" + std::to_string(wsize / G) + " rank(s)");

  // Each group works through its units; data sets are read once per group.
  const bool was_quiet = quiet();
  std::map<int, io::Dataset> datasets;
  // Graphs and propagations of the current block, per preprocessing (GraphCaches keys them
  // by RowsKey), reused by every method and dimension of the block (the block changes → the
  // caches are dropped).
  GraphCaches caches;
  // The block's preprocessed rows and kernel maps, per preprocessing (RowsCache keys them).
  RowsCache rows_cache;
  int cache_block = -1;
  const double g0 = MPI_Wtime();
  // An error raised on every rank of one group (a data set that fails to parse, a full
  // disk) is collective over that group only: the other groups would wait for it at the
  // final barrier forever. It is caught here and made collective over the world below.
  std::string group_failure;
  int stopped_by = 0;  // the signal that ended this group's loop early
  try {
  for (size_t i = 0; i < mine.size(); ++i) {
    {
      // A stop request on any rank of the group ends the group's loop here, between two
      // configurations (the ranks must agree, so the flag is reduced over the group).
      int mine_stop = g_stop_signal, any_stop = 0;
      MPI_Allreduce(&mine_stop, &any_stop, 1, MPI_INT, MPI_MAX, group);
      if (any_stop != 0) {
        stopped_by = any_stop;
        break;
      }
    }
    const Unit& u = *mine[i];
    if (!datasets.count(u.dataset)) {
      const auto& spec = job.datasets[static_cast<size_t>(u.dataset)];
      io::ReadOptions read = spec.read;
      read.native_types = true;  // uint8/float32 rows stay in their type (the fits read TypedRows)
      datasets.emplace(u.dataset, io::read_dataset(spec.path, spec.format, group, read));
    }
    const io::Dataset& ds = datasets.at(u.dataset);
    const auto roles = data::make_split(ds.labels, ds.X.row_start, ds.classes, split_spec(job, u.p, u.split), group,
                                          ds.class_names);
    // auto (auto_select.hpp) is no row of the method table: it chooses one per split.
    const std::string& method_name = job.methods[static_cast<size_t>(u.method)].name;
    const bool automatic = is_auto(method_name);
    const bool nested = !automatic && methods::find_method(method_name).nested_dimensions;
    const int64_t max_dim = *std::max_element(u.dims.begin(), u.dims.end());
    if (u.block != cache_block) {
      caches = GraphCaches();
      rows_cache = RowsCache();
      cache_block = u.block;
    }
    FitConfig config = make_config(job, u, max_dim);
    config.cache = &caches;
    config.rows = &rows_cache;
    set_quiet(true);  // per-phase lines of every group would interleave; one line per configuration instead
    const double f0 = MPI_Wtime();
    // A configuration the method rejects (e.g. SOGE's K·c > d') is recorded with its error
    // and the job goes on; only errors raised on every rank can be caught safely.
    FitOutcome out;
    std::string failure;
    json selection;
    double cv = NAN;
    const MethodSpec& ms = job.methods[static_cast<size_t>(u.method)];
    const uint64_t split_seed = job.seed + static_cast<uint64_t>(u.split);
    std::string chosen_method;  // auto: the method its selection chose in this split
    try {
      if (automatic) {
        // The method, m and parameters chosen by k-fold CV on this split's labeled samples
        // (folds seeded by the split's seed), then fitted on all of them.
        Selection sel = select_auto(ds, roles, config, split_seed);
        config = std::move(sel.config);
        selection = std::move(sel.report);
        chosen_method = config.method;
      } else if (ms.selects()) {
        // The papers' protocol: the cv_grid parameters chosen inside this split by k-fold
        // cross-validation on its labeled samples.
        Selection sel = select_by_cv(ds, roles, config, ms.cv_default ? default_grid(config) : ms.cv_grid,
                                     job.cv_folds, split_seed);
        config = std::move(sel.config);
        selection = std::move(sel.report);
      }
      out = fit_and_evaluate(ds, roles, config, false);
      // select_by: cv scores the setting by cross-validation on the labeled samples at the
      // unit's largest m (the chosen point's own score when the unit selects inside the split).
      if (job.select_by == "cv") {
        if (automatic || ms.selects()) {
          cv = selection["cv_accuracy"].get<double>();
        } else if (u.p >= 2) {
          CvCaches cvc;
          config.cache->share_into(cvc.shared);
          cv = cross_validate(ds, roles, config, cv_folds(ds.labels, roles, ds.classes, job.cv_folds, split_seed, group), &cvc)
                   .accuracy;
        }
      }
    } catch (const Error& e) {
      if (!e.collective_over(group)) throw;  // raised on some of the group's ranks: main aborts
      failure = e.what();
    }
    const double fit_seconds = MPI_Wtime() - f0;
    if (!failure.empty()) {
      set_quiet(was_quiet);
      for (int64_t dim : u.dims) {
        const std::string key = config_key(job, u, dim);
        if (done.count(key)) continue;
        json line = {{"key", key}, {"dataset", job.datasets[static_cast<size_t>(u.dataset)].name},
                     {"method", method_name}, {"labeled_per_class", u.p}, {"split", u.split},
                     {"params", recorded_params(job, u)}, {"dim", dim}, {"error", failure}, {"seconds", fit_seconds},
                     {"group", color}, {"ssdr_version", version()}};
        if (leader) append_line(results_path, line.dump());
      }
      if (leader) say("[group " + std::to_string(color) + "] " + method_name + " skipped: " + failure);
      continue;
    }
    set_quiet(was_quiet);
    for (int64_t dim : u.dims) {
      const std::string key = config_key(job, u, dim);
      if (done.count(key)) continue;
      evaluation::Accuracy acc = out.accuracy;
      int64_t used_dim = out.dim;
      if (dim != max_dim && dim > 0 && nested && dim <= out.model.W.cols) {
        // Nested solutions: the first `dim` columns are the dim-dimensional solution.
        model::Model m = out.model;
        Dense W(m.W.rows, dim);
        std::copy(m.W.v.begin(), m.W.v.begin() + m.W.rows * dim, W.v.begin());
        m.W = W;
        acc = evaluation::one_nn_accuracy(ds.typed ? model::project(m, ds.rows) : model::project(m, ds.X), ds.labels,
                                          roles);
        used_dim = dim;
      }
      json line = {{"key", key},
                   {"dataset", job.datasets[static_cast<size_t>(u.dataset)].name},
                   {"method", method_name},
                   {"labeled_per_class", u.p},
                   {"split", u.split},
                   {"seed", job.seed + static_cast<uint64_t>(u.split)},
                   {"params", recorded_params(job, u)},
                   {"dim", dim},
                   {"dim_used", used_dim},
                   {"accuracy", acc_json(acc)},
                   {"trace_ratio", std::isnan(out.trace_ratio) ? json(nullptr) : json(out.trace_ratio)},
                   {"cv_accuracy", std::isnan(cv) ? json(nullptr) : json(cv)},
                   {"selection", selection},
                   {"fallback_to_gda", out.info.value("fallback_to_gda", json(nullptr))},
                   {"seconds", fit_seconds},
                   {"timings_s", out.timings},
                   {"group", color},
                   {"group_ranks", gsize},
                   {"ssdr_version", version()}};
      if (automatic) line["chosen_method"] = chosen_method;  // its m and parameters: selection.chosen
      bool wrote = true;
      std::string werr;
      if (leader) {
        try {
          append_line(results_path, line.dump());
        } catch (const std::exception& e) {
          wrote = false;
          werr = e.what();
        }
      }
      SSDR_CHECK_COLLECTIVE(group, wrote, werr);
    }
    if (leader && !was_quiet) {
      const double el = MPI_Wtime() - g0;
      const double eta = el / static_cast<double>(i + 1) * static_cast<double>(mine.size() - i - 1);
      char b[512];
      std::snprintf(b, sizeof b, "[group %d] %zu/%zu %s p=%d split %d %s dims %zu: unlabeled %s unseen %s (%.1f s), ETA %.0f s",
                    color, i + 1, mine.size(), job.datasets[static_cast<size_t>(u.dataset)].name.c_str(), u.p, u.split,
                    (automatic ? "auto:" + chosen_method : method_name).c_str(), u.dims.size(), fmt(out.accuracy.unlabeled).c_str(),
                    fmt(out.accuracy.unseen).c_str(), fit_seconds, eta);
      std::fprintf(stderr, "[%8.1f s] %s\n", elapsed_since_start(), b);
      std::fflush(stderr);
    }
  }
  } catch (const Error& e) {
    if (!e.collective_over(group)) throw;  // raised on some ranks only: main aborts the world
    group_failure = e.what();
  }
  MPI_Comm_free(&group);
  SSDR_CHECK_COLLECTIVE(world, group_failure.empty(), group_failure);
  MPI_Barrier(world);
  const double sweep = MPI_Wtime() - t0;
  ok = true;
  msg.clear();
  if (wrank == 0) {
    try {
      // Each of this job's configurations once (a folder filled before the lock existed may
      // hold one twice); results of configurations the job no longer has are left out.
      std::vector<json> results;
      std::unordered_set<std::string> reported;
      int64_t others = 0;
      for (json& r : read_results(job.output)) {
        const std::string key = r.contains("key") && r["key"].is_string() ? r["key"].get<std::string>() : "";
        if (!keys.count(key))
          ++others;
        else if (reported.insert(key).second)
          results.push_back(std::move(r));
      }
      if (others > 0)
        say(std::to_string(others) + " result(s) of configurations this job no longer has are kept in " + job.output +
            "/results*.jsonl but not reported");
      summarize(job, job.output, results, sweep, G, wsize);
      // A job none of whose configurations a method accepted produced no result at all: an
      // error, not a success with an empty table (the summary still records the rejects).
      const auto first_ok = std::find_if(results.begin(), results.end(), [](const json& r) { return !r.contains("error"); });
      if (!results.empty() && first_ok == results.end()) {
        ok = false;
        msg = job.file + ": every configuration was rejected by its method; the first: " +
              results.front()["error"].get<std::string>();
      }
    } catch (const std::exception& e) {
      ok = false;
      msg = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(world, ok, msg);
  int stopped = 0;
  MPI_Allreduce(&stopped_by, &stopped, 1, MPI_INT, MPI_MAX, world);
  if (stopped != 0) {
    if (wrank == 0) {
      std::fprintf(stderr, "ssdr: experiment stopped by %s: the summary in %s covers the configurations finished so "
                   "far; run the same command again to resume\n",
                   stopped == SIGUSR1 ? "SIGUSR1" : stopped == SIGTERM ? "SIGTERM" : "a signal", job.output.c_str());
      std::fflush(stderr);
    }
    return 128 + stopped;  // the shell's convention for "ended by this signal"
  }
  return 0;
}

}  // namespace ssdr::driver
