#pragma once
/// \file job_internal.hpp
/// Private to src/driver (not installed): the job of `ssdr experiment` as parsed from its
/// YAML file, and the units of work and configurations derived from it (job.cpp). Used by
/// experiment.cpp (the run) and summary.cpp (tables and plots).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/driver/selection.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::driver::detail {

using nlohmann::json;

// ---------------------------------------------------------------------------------------
// The job file.

struct DatasetSpec {
  std::string name, path;
  io::Format format = io::Format::automatic;
  io::ReadOptions read;  ///< keys labels (NPY), hdf5_data, hdf5_labels
};

struct MethodSpec {
  /// A row of the method table, or "auto" (driver::is_auto: no row of the table; each unit
  /// chooses the method, m and parameters by driver::select_auto inside its split, `grid`
  /// then holds only what driver::auto_accepts, and there is no cv_grid).
  std::string name;
  int line = 0;               ///< the job file's line of this entry (for messages)
  Grid grid;                  ///< swept parameters (not dim)
  std::vector<int64_t> dims;  ///< empty → method default
  /// `cv_grid`: parameters chosen inside every split by select_by_cv (cv_folds folds on the
  /// split's labeled samples), as the papers do; `cv_grid: default` → default_grid.
  Grid cv_grid;
  bool cv_default = false;
  bool selects() const { return cv_default || !cv_grid.empty(); }
  json cv_json() const {
    if (cv_default) return "default";
    json j = json::object();
    for (const auto& [k, v] : cv_grid) j[k] = v;
    return j;
  }
};

struct Job {
  std::string file, name, output, protocol;
  int splits = 10;
  uint64_t seed = 0;
  double transductive_fraction = -1;
  int unlabeled_per_class = -1;
  std::vector<int> labeled_per_class;
  std::string select_by = "unlabeled";
  int cv_folds = 5;
  std::vector<DatasetSpec> datasets;
  std::vector<MethodSpec> methods;
  json preprocess = json::object();  ///< job-wide preprocessing override
  std::string fingerprint;           ///< job_fingerprint(), set once the job is complete
};

/// Reads and checks a job file (job.cpp). \throws ssdr::Error (collective) naming the file,
/// the line and the key.
Job parse_job(const std::string& path);

/// A file-name-safe form of user text (summary.cpp): letters, digits, '-', '_' and '.' kept,
/// anything else '_', a leading '.' or '-' prefixed with '_'. Plot files are named by the
/// slugs of data set names, so parse_job refuses two names with one slug. Local.
std::string slug(const std::string& text);

// ---------------------------------------------------------------------------------------
// Configurations.

struct Unit {
  int dataset = 0, p = 0, split = 0, method = 0;
  json params = json::object();  ///< one point of the method's grid (no dim)
  std::vector<int64_t> dims;     ///< {0} = the method's default
  int block = 0;                 ///< (dataset, p, split): the unit of work of a group
};

/// The job's 64-bit fingerprint in hex (see job.cpp). Local (stat only): run_experiment
/// broadcasts rank 0's.
std::string job_fingerprint(const Job& job);
/// The key of one configuration in the results files: fingerprint, data set, p, split,
/// method, grid point, dim (and cv_grid).
std::string config_key(const Job& job, const Unit& u, int64_t dim);
/// Every unit of the job, block by block (data set × labeled count × split). parse_job
/// bounds their number (10^6 configurations). A nested method's unit holds all its dims; auto
/// has a unit per dim (0: m chosen by its selection). Local.
std::vector<Unit> make_units(const Job& job);
/// The config_key of every configuration of `units` (each unit at each of its dims): what the
/// job's summary covers. Local (every rank computes the same set).
/// \throws ssdr::Error (replicated) naming the job file and the method's line when two method
/// entries overlap (`{name: lda, dim: [1, 2]}` and `{name: lda, dim: 2}`): one configuration
/// would be fitted twice and count as two splits.
std::unordered_set<std::string> config_keys(const Job& job, const std::vector<Unit>& units);
/// The parameters a results line records (see job.cpp).
json recorded_params(const Job& job, const Unit& u);
/// The fit configuration of unit `u` at dimension `dim`; for auto, the configuration
/// driver::select_auto takes (make_auto_config: the job's preprocessing and the entry's
/// settings, dim, the job's seed and cv_folds). \throws ssdr::Error (replicated) as
/// make_auto_config for a setting parse_job would have refused.
FitConfig make_config(const Job& job, const Unit& u, int64_t dim);
/// The split of labeled count `p` and split number `split` (seed = job seed + split).
data::SplitSpec split_spec(const Job& job, int p, int split);

}  // namespace ssdr::driver::detail
