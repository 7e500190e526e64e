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
#include "ssdr/core/mpi_util.hpp"
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

/// Refuses, before the output folder is made and before any group starts, a data set of the
/// job that cannot be read or is not a regular file or an IDX folder (a group's own failure
/// would reach the other groups only at the end of their work). Rank 0 checks; collective
/// over world. \throws ssdr::Error (collectively) naming the job file, the data set and its path.
void check_data_files(const Job& job, MPI_Comm world) {
  std::string msg;
  if (comm_rank(world) == 0)
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
}

/// The keys of the configurations already done in the (locked) output folder: every rank reads
/// the same checkpoint files. Local. \throws ssdr::Error (replicated) when a result there
/// belongs to another configuration of the job (another fingerprint).
std::set<std::string> finished_keys(const Job& job) {
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
  return done;
}

/// This rank's group and the work it has left.
struct GroupPlan {
  MPI_Comm comm = MPI_COMM_NULL;   ///< the group's ranks (the caller frees it)
  int color = 0;                   ///< the group's index
  int size = 1;                    ///< ranks in the group
  bool leader = false;             ///< rank 0 of the group: writes its checkpoint, says its progress
  std::string results_path;        ///< the group's checkpoint file
  std::vector<const Unit*> units;  ///< its units with a configuration not yet done, in job order
};

/// Splits world into `groups` groups of contiguous blocks of ranks (group g takes the blocks
/// b with b mod G == g) and gives this rank's group its units not yet `done`; says what the
/// job holds and what is done. Collective over world.
GroupPlan plan_groups(const Job& job, const std::vector<Unit>& units, const std::set<std::string>& done, int groups,
                      MPI_Comm world) {
  int wrank = 0, wsize = 1;
  MPI_Comm_rank(world, &wrank);
  MPI_Comm_size(world, &wsize);
  // Groups: contiguous blocks of ranks; group g takes blocks b with b mod G == g.
  const int G = groups;
  GroupPlan plan;
  plan.color = static_cast<int>(static_cast<int64_t>(wrank) * G / wsize);
  MPI_Comm_split(world, plan.color, wrank, &plan.comm);
  int grank = 0;
  MPI_Comm_rank(plan.comm, &grank);
  MPI_Comm_size(plan.comm, &plan.size);
  plan.leader = grank == 0;
  plan.results_path = checkpoint_path(job.output, plan.color, G);

  // Every rank sees the same units and the same done set, so these counts need no reduction.
  int64_t total_configs = 0, skipped_all = 0;
  for (const auto& u : units) {
    total_configs += static_cast<int64_t>(u.dims.size());
    int64_t finished = 0;
    for (int64_t dim : u.dims) finished += done.count(config_key(job, u, dim)) ? 1 : 0;
    skipped_all += finished;
    if (u.block % G == plan.color && finished < static_cast<int64_t>(u.dims.size())) plan.units.push_back(&u);
  }
  say("experiment '" + job.name + "': " + std::to_string(total_configs) + " configurations (" +
      std::to_string(units.size()) + " fits), " + std::to_string(skipped_all) + " already done in " + job.output +
      "; " + std::to_string(G) + " group(s) of ~" + std::to_string(wsize / G) + " rank(s)");
  return plan;
}

/// What a group keeps from one unit to the next: its data sets, read once per group, and the
/// current block's caches.
struct GroupState {
  std::map<int, io::Dataset> datasets;
  /// Graphs and propagations of the current block, per preprocessing (GraphCaches keys them
  /// by RowsKey), reused by every method and dimension of the block (the block changes → the
  /// caches are dropped).
  GraphCaches caches;
  /// The block's preprocessed rows and kernel maps, per preprocessing (RowsCache keys them).
  RowsCache rows_cache;
  int cache_block = -1;
};

/// One unit's fit: its outcome, or the error its method rejected it with.
struct UnitFit {
  FitOutcome out;
  std::string failure;        ///< the method's error ("" when it fitted)
  json selection;             ///< the selection's report (auto, cv_grid), else null
  double cv = NAN;            ///< select_by cv: the setting's cross-validated accuracy
  std::string chosen_method;  ///< auto: the method its selection chose in this split
  double seconds = 0;         ///< wall time of the selection and fit
};

/// Fits unit `u` (at its largest m) on data `ds` split as `roles`: auto or a cv_grid choose
/// inside the split first, and select_by cv scores the setting by cross-validation. Quiet
/// while it fits. A configuration the method rejects (e.g. SOGE's K·c > d') comes back with
/// its error. Collective over group. \throws ssdr::Error raised on some of the group's
/// ranks only (main aborts).
UnitFit fit_unit(const Job& job, const Unit& u, const io::Dataset& ds, const std::vector<data::Role>& roles,
                 GroupState& state, bool was_quiet, MPI_Comm group) {
  // auto (auto_select.hpp) is no row of the method table: it chooses one per split.
  const bool automatic = is_auto(job.methods[static_cast<size_t>(u.method)].name);
  const int64_t max_dim = *std::max_element(u.dims.begin(), u.dims.end());
  FitConfig config = make_config(job, u, max_dim);
  config.cache = &state.caches;
  config.rows = &state.rows_cache;
  set_quiet(true);  // per-phase lines of every group would interleave; one line per configuration instead
  const double f0 = MPI_Wtime();
  // A configuration the method rejects (e.g. SOGE's K·c > d') is recorded with its error
  // and the job goes on; only errors raised on every rank can be caught safely.
  UnitFit fit;
  const MethodSpec& ms = job.methods[static_cast<size_t>(u.method)];
  const uint64_t split_seed = job.seed + static_cast<uint64_t>(u.split);
  try {
    if (automatic) {
      // The method, m and parameters chosen by k-fold CV on this split's labeled samples
      // (folds seeded by the split's seed), then fitted on all of them.
      Selection sel = select_auto(ds, roles, config, split_seed);
      config = std::move(sel.config);
      fit.selection = std::move(sel.report);
      fit.chosen_method = config.method;
    } else if (ms.selects()) {
      // The papers' protocol: the cv_grid parameters chosen inside this split by k-fold
      // cross-validation on its labeled samples.
      Selection sel = select_by_cv(ds, roles, config, ms.cv_default ? default_grid(config) : ms.cv_grid,
                                   job.cv_folds, split_seed);
      config = std::move(sel.config);
      fit.selection = std::move(sel.report);
    }
    fit.out = fit_and_evaluate(ds, roles, config, false);
    // select_by: cv scores the setting by cross-validation on the labeled samples at the
    // unit's largest m (the chosen point's own score when the unit selects inside the split).
    if (job.select_by == "cv") {
      if (automatic || ms.selects()) {
        fit.cv = fit.selection["cv_accuracy"].get<double>();
      } else if (u.p >= 2) {
        CvCaches cvc;
        config.cache->share_into(cvc.shared);
        fit.cv = cross_validate(ds, roles, config, cv_folds(ds.labels, roles, ds.classes, job.cv_folds, split_seed, group), &cvc)
                     .accuracy;
      }
    }
  } catch (const Error& e) {
    if (!e.collective_over(group)) throw;  // raised on some of the group's ranks: main aborts
    fit.failure = e.what();
  }
  fit.seconds = MPI_Wtime() - f0;
  set_quiet(was_quiet);
  return fit;
}

/// Records unit `u`'s rejection in the group's checkpoint, one line per configuration not yet
/// done, and says so. The leader writes. Local.
void record_failure(const Job& job, const Unit& u, const std::set<std::string>& done, const UnitFit& fit,
                    const GroupPlan& plan) {
  const std::string& method_name = job.methods[static_cast<size_t>(u.method)].name;
  for (int64_t dim : u.dims) {
    const std::string key = config_key(job, u, dim);
    if (done.count(key)) continue;
    json line = {{"key", key}, {"dataset", job.datasets[static_cast<size_t>(u.dataset)].name},
                 {"method", method_name}, {"labeled_per_class", u.p}, {"split", u.split},
                 {"params", recorded_params(job, u)}, {"dim", dim}, {"error", fit.failure}, {"seconds", fit.seconds},
                 {"group", plan.color}, {"ssdr_version", version()}};
    if (plan.leader) append_line(plan.results_path, line.dump());
  }
  if (plan.leader) say("[group " + std::to_string(plan.color) + "] " + method_name + " skipped: " + fit.failure);
}

/// Records unit `u`'s results in the group's checkpoint, one line per configuration not yet
/// done: each m of a nested method from the leading columns of the fit at the largest m.
/// Collective over the group. \throws ssdr::Error (collectively over the group) when the
/// leader cannot append a line.
void record_results(const Job& job, const Unit& u, const std::set<std::string>& done, const io::Dataset& ds,
                    const std::vector<data::Role>& roles, const UnitFit& fit, const GroupPlan& plan) {
  const std::string& method_name = job.methods[static_cast<size_t>(u.method)].name;
  const bool automatic = is_auto(method_name);
  const bool nested = !automatic && methods::find_method(method_name).nested_dimensions;
  const int64_t max_dim = *std::max_element(u.dims.begin(), u.dims.end());
  const FitOutcome& out = fit.out;
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
                 {"cv_accuracy", std::isnan(fit.cv) ? json(nullptr) : json(fit.cv)},
                 {"selection", fit.selection},
                 {"fallback_to_gda", out.info.value("fallback_to_gda", json(nullptr))},
                 {"seconds", fit.seconds},
                 {"timings_s", out.timings},
                 {"group", plan.color},
                 {"group_ranks", plan.size},
                 {"ssdr_version", version()}};
    if (automatic) line["chosen_method"] = fit.chosen_method;  // its m and parameters: selection.chosen
    bool wrote = true;
    std::string werr;
    if (plan.leader) {
      try {
        append_line(plan.results_path, line.dump());
      } catch (const std::exception& e) {
        wrote = false;
        werr = e.what();
      }
    }
    SSDR_CHECK_COLLECTIVE(plan.comm, wrote, werr);
  }
}

/// The leader's progress line after the group's unit i (0-based) of its units, with the time
/// left estimated from the time since `g0`. Local.
void say_progress(const Job& job, const Unit& u, size_t i, const UnitFit& fit, const GroupPlan& plan, double g0) {
  const std::string& method_name = job.methods[static_cast<size_t>(u.method)].name;
  const bool automatic = is_auto(method_name);
  const size_t units = plan.units.size();
  const double el = MPI_Wtime() - g0;
  const double eta = el / static_cast<double>(i + 1) * static_cast<double>(units - i - 1);
  char b[512];
  std::snprintf(b, sizeof b, "[group %d] %zu/%zu %s p=%d split %d %s dims %zu: unlabeled %s unseen %s (%.1f s), ETA %.0f s",
                plan.color, i + 1, units, job.datasets[static_cast<size_t>(u.dataset)].name.c_str(), u.p, u.split,
                (automatic ? "auto:" + fit.chosen_method : method_name).c_str(), u.dims.size(),
                fmt(fit.out.accuracy.unlabeled).c_str(), fmt(fit.out.accuracy.unseen).c_str(), fit.seconds, eta);
  std::fprintf(stderr, "[%8.1f s] %s\n", elapsed_since_start(), b);
  std::fflush(stderr);
}

/// The group works through its units: data sets read once per group, each unit fitted and
/// its configurations recorded in the group's checkpoint. A stop request on any rank of the
/// group ends the loop between two units; returns its signal (0: none). An error raised on
/// every rank of the group (a data set that fails to parse, a full disk) is collective over
/// the group only, so it is returned in `group_failure` for the caller to make collective
/// over the world (the other groups would otherwise wait for this one at the final barrier
/// forever). Collective over the group. \throws ssdr::Error raised on some of the group's
/// ranks only (main aborts the world).
int run_units(const Job& job, const GroupPlan& plan, const std::set<std::string>& done, std::string& group_failure) {
  MPI_Comm group = plan.comm;
  const bool was_quiet = quiet();
  GroupState state;
  const double g0 = MPI_Wtime();
  int stopped_by = 0;  // the signal that ended this group's loop early
  try {
    for (size_t i = 0; i < plan.units.size(); ++i) {
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
      const Unit& u = *plan.units[i];
      if (!state.datasets.count(u.dataset)) {
        const auto& spec = job.datasets[static_cast<size_t>(u.dataset)];
        io::ReadOptions read = spec.read;
        read.native_types = true;  // uint8/float32 rows stay in their type (the fits read TypedRows)
        state.datasets.emplace(u.dataset, io::read_dataset(spec.path, spec.format, group, read));
      }
      const io::Dataset& ds = state.datasets.at(u.dataset);
      const auto roles = data::make_split(ds.labels, ds.X.row_start, ds.classes, split_spec(job, u.p, u.split), group,
                                          ds.class_names);
      if (u.block != state.cache_block) {
        state.caches = GraphCaches();
        state.rows_cache = RowsCache();
        state.cache_block = u.block;
      }
      const UnitFit fit = fit_unit(job, u, ds, roles, state, was_quiet, group);
      if (!fit.failure.empty()) {
        record_failure(job, u, done, fit, plan);
        continue;
      }
      record_results(job, u, done, ds, roles, fit, plan);
      if (plan.leader && !was_quiet) say_progress(job, u, i, fit, plan, g0);
    }
  } catch (const Error& e) {
    if (!e.collective_over(group)) throw;  // raised on some ranks only: main aborts the world
    group_failure = e.what();
  }
  return stopped_by;
}

/// The finish, after every group's loop: rank 0 summarizes this job's configurations found in
/// the output folder (each once; results of configurations the job no longer has are kept but
/// not reported), `sweep` seconds after the start of `groups` groups; a job whose every
/// configuration was rejected fails. Returns the exit status: 0, or 128 + the signal that
/// stopped a group early (said on rank 0). Collective over world. \throws ssdr::Error
/// (collectively over world) when the summary cannot be written or nothing was accepted.
int finish(const Job& job, const std::unordered_set<std::string>& keys, double sweep, int groups, int stopped_by,
           MPI_Comm world) {
  int wrank = 0, wsize = 1;
  MPI_Comm_rank(world, &wrank);
  MPI_Comm_size(world, &wsize);
  bool ok = true;
  std::string msg;
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
      summarize(job, job.output, results, sweep, groups, wsize);
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

}  // namespace

int run_experiment(const ExperimentOptions& options, MPI_Comm world) {
  const double t0 = MPI_Wtime();
  install_stop_handlers();
  const int wsize = comm_size(world);
  SSDR_REQUIRE(options.groups >= 1 && options.groups <= wsize,
               "--groups " + std::to_string(options.groups) + " must be between 1 and the number of ranks (" +
                   std::to_string(wsize) + ")");
  Job job = parse_job(options.job_file);
  if (!options.output.empty()) job.output = options.output;
  // Rank 0's fingerprint for every rank: ranks on other nodes may stat other copies of the
  // data (or see a file appear mid-scan); mixed keys would split the checkpoint.
  {
    int wrank = 0;
    MPI_Comm_rank(world, &wrank);
    job.fingerprint = bcast_string(wrank == 0 ? job_fingerprint(job) : std::string(), 0, world);
  }
  const std::vector<Unit> units = make_units(job);
  // What the summary covers: exactly these configurations (a folder may also hold results of
  // configurations an edited job no longer has; they stay in the checkpoint, unreported).
  const std::unordered_set<std::string> keys = config_keys(job, units);
  check_data_files(job, world);

  // The output folder: made, checked against the inputs and what it holds, then locked for
  // the whole run (a second run into it is refused here, at once). Then what is already done
  // (every rank reads the same files).
  prepare_output_folder(job, options.groups, world);
  const FolderLock lock(job.output, world);
  MPI_Barrier(world);
  const std::set<std::string> done = finished_keys(job);

  // Each group works through its units, then the world agrees on the groups' outcomes.
  GroupPlan plan = plan_groups(job, units, done, options.groups, world);
  std::string group_failure;
  const int stopped_by = run_units(job, plan, done, group_failure);
  MPI_Comm_free(&plan.comm);
  SSDR_CHECK_COLLECTIVE(world, group_failure.empty(), group_failure);
  MPI_Barrier(world);
  return finish(job, keys, MPI_Wtime() - t0, options.groups, stopped_by, world);
}

}  // namespace ssdr::driver
