// The job of `ssdr experiment`: its YAML file parsed and checked, and the units of work
// and fit configurations derived from it.
#include <algorithm>
#include <dirent.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "job_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/driver/auto_select.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/methods/parameters.hpp"

namespace ssdr::driver::detail {

namespace {

[[noreturn]] void job_error(const Job& job, const std::string& what) {
  throw Error(job.file + ": " + what, __FILE__, __LINE__, true);
}

/// Runs `parse` (a parser shared with the command line, whose errors name the option, e.g.
/// "--method: unknown method 'x'") and rewrites its error to name the job file, line and key.
template <class F>
auto in_job(const Job& job, const YAML::Node& n, const std::string& key, F parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const Error& e) {
    std::string what = e.what();
    const auto colon = what.find(": ");
    if (what.rfind("--", 0) == 0 && colon != std::string::npos) what = what.substr(colon + 2);
    job_error(job, "line " + std::to_string(n.Mark().line + 1) + ": " + key + ": " + what);
  }
}

/// n.as<T>() with a message naming the job file, the line, the key and what was expected
/// (yaml-cpp alone says "bad conversion").
template <class T>
T value(const Job& job, const YAML::Node& n, const std::string& key, const std::string& expected) {
  if constexpr (std::is_same_v<T, std::string>) {
    // A NUL would cut a path or name when it reaches the system ("iris.csv\0x" reads iris.csv).
    if (n.IsScalar() && n.Scalar().find('\0') != std::string::npos)
      job_error(job, "line " + std::to_string(n.Mark().line + 1) + ": " + key + ": contains a NUL character");
  }
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    const std::string got = n.IsScalar() ? "'" + n.Scalar() + "'" : n.IsSequence() ? "a list" : n.IsMap() ? "a map" : "nothing";
    job_error(job, "line " + std::to_string(n.Mark().line + 1) + ": " + key + ": expected " + expected + ", got " + got);
  }
}

std::string dirname_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

std::string resolve(const std::string& base, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return base + "/" + path;
}

/// A YAML scalar as JSON (number when it parses as one, bool, else string).
json scalar_json(const YAML::Node& n) {
  const std::string s = n.as<std::string>();
  if (s == "true" || s == "false") return s == "true";
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end && *end == '\0' && !s.empty()) {
    if (v == std::floor(v) && std::abs(v) < 1e15 && s.find_first_of(".eE") == std::string::npos)
      return static_cast<int64_t>(v);
    return v;
  }
  return s;
}

/// Bounds of what one job may ask for: dimensions per method, grid points per method (each
/// point is at least one fit per split), configurations of the whole job (data sets ×
/// labeled counts × splits × every method's grid points × dimensions: make_units holds
/// them all, and every rank keeps their keys), and the largest dimension m. A job line of a
/// few bytes must not allocate gigabytes nor walk a range past the end of int64.
constexpr int64_t kMaxDims = 10000;
constexpr int64_t kMaxGridPoints = 10000;
constexpr double kMaxConfigurations = 1e6;
constexpr int64_t kMaxDim = INT_MAX;

/// One entry of a method's `dim`: "a", "a:b" or "a:b:step" → a, a+step, ..., ≤ b.
struct DimRange {
  int64_t first = 0, last = 0, step = 1;
  int64_t count() const { return (last - first) / step + 1; }  // no overflow: 1 <= first <= last
  int64_t at(int64_t i) const { return first + i * step; }      // <= last for i < count()
};

/// Parses one `dim` entry of method `method` (job line `line`) without expanding it: every part
/// a strict integer in [1, kMaxDim], a <= b, step >= 1, at most kMaxDims values. \throws
/// ssdr::Error (replicated) "FILE: line L: method M: dim: ..." naming the entry.
DimRange parse_range(const Job& job, int line, const std::string& method, const std::string& s) {
  const std::string where = "line " + std::to_string(line) + ": method " + method + ": dim: ";
  std::vector<int64_t> parts;
  size_t start = 0;
  while (true) {  // every ':'-separated part, an empty one (":5", "1:", "1::2") included
    const size_t colon = s.find(':', start);
    const std::string tok = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (parts.size() == 3) job_error(job, where + "expected a range 'a:b[:step]', got '" + s + "'");
    char* end = nullptr;
    errno = 0;
    const long long v = tok.empty() ? 0 : std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0')
      job_error(job, where + "expected an integer, a list or a range 'a:b[:step]', got '" + s + "'");
    if ((errno == ERANGE && v > 0) || v > kMaxDim)  // a negative one is refused below
      job_error(job, where + "'" + tok + "' in '" + s + "' is larger than " + std::to_string(kMaxDim) +
                         ", the largest dimension m");
    parts.push_back(v);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  DimRange r;
  r.first = r.last = parts[0];
  if (parts.size() == 1) {
    if (parts[0] < 1) job_error(job, where + "expected a positive dimension, got '" + s + "'");
    return r;
  }
  r.last = parts[1];
  r.step = parts.size() == 3 ? parts[2] : 1;
  if (r.first < 1 || r.last < r.first || r.step < 1)
    job_error(job, where + "expected a range 'a:b[:step]' with 1 <= a <= b and step >= 1, got '" + s + "'");
  if (r.count() > kMaxDims)
    job_error(job, where + "range '" + s + "' has more than " + std::to_string(kMaxDims) + " values");
  return r;
}

/// Refuse a mapping that repeats a key anywhere in the job (yaml-cpp keeps one of them
/// silently): "file:line: duplicate key 'k' (first on line L)".
void check_duplicate_keys(const std::string& file, const YAML::Node& node, int depth, int64_t& budget) {
  // A recursive alias (&m [lda, *m]) is a cycle and an alias bomb an exponential tree: both
  // end here with a line instead of a stack overflow or an endless walk.
  if (depth > 32 || --budget < 0)
    throw Error(file + ":" + std::to_string(node.Mark().line + 1) +
                    ": the job nests deeper than 32 levels or expands to more than 10^6 nodes (a recursive or "
                    "repeated YAML alias?)",
                __FILE__, __LINE__, true);
  if (node.IsMap()) {
    std::map<std::string, int> seen;
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.as<std::string>() : std::string("<complex key>");
      const int line = kv.first.Mark().line + 1;
      const auto [it, fresh] = seen.emplace(key, line);
      if (!fresh)
        throw Error(file + ":" + std::to_string(line) + ": duplicate key '" + key + "' (first on line " +
                        std::to_string(it->second) + ")",
                    __FILE__, __LINE__, true);
      check_duplicate_keys(file, kv.second, depth + 1, budget);
    }
  } else if (node.IsSequence()) {
    for (const auto& v : node) check_duplicate_keys(file, v, depth + 1, budget);
  }
}

/// The parameters auto lets a job fix for every candidate (driver::auto_accepts), in the
/// table's order: "scaling, pca_energy, ...". Local.
std::string auto_parameter_list() {
  std::string out;
  for (const auto& p : methods::parameter_table())
    if (p.name != "dim" && auto_accepts(p.name)) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

/// The number of points of a grid (the product of its value counts), in double: no overflow.
double grid_size(const Grid& g) {
  double n = 1;
  for (const auto& kv : g) n *= static_cast<double>(kv.second.size());
  return n;
}

/// Refuses a parameter's value list that repeats a value (`sigma_s: [1, 1]` is two grid points
/// with one configuration key: computed twice, counted as two splits). `where`: "line L".
void require_distinct(const Job& job, const std::string& where, const std::string& key, const std::vector<json>& values) {
  std::set<std::string> seen;
  for (const json& v : values)
    if (!seen.insert(v.dump()).second) job_error(job, where + ": " + key + " lists " + v.dump() + " twice");
}

}  // namespace

Job parse_job(const std::string& path) {
  Job job;
  job.file = path;
  YAML::Node root;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))  // a FIFO would block forever
    throw Error("job file '" + path + "' is not a regular file", __FILE__, __LINE__, true);
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw Error("cannot open job file '" + path + "'", __FILE__, __LINE__, true);
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg, __FILE__, __LINE__, true);
  }
  const std::string base = dirname_of(path);
  {
    int64_t budget = 1000000;
    check_duplicate_keys(path, root, 0, budget);
  }
  try {
    static const std::set<std::string> top = {"name", "output", "splits", "seed", "protocol", "transductive_fraction",
                                              "unlabeled_per_class", "labeled_per_class", "select_by", "cv_folds", "datasets",
                                              "methods", "preprocess"};
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (!top.count(key))
        job_error(job, "line " + std::to_string(kv.first.Mark().line + 1) + ": unknown key '" + key + "'");
    }
    job.name = root["name"] ? value<std::string>(job, root["name"], "name", "a name") : "experiment";
    job.output = resolve(base, root["output"] ? value<std::string>(job, root["output"], "output", "a folder") : "results/" + job.name);
    job.splits = root["splits"] ? value<int>(job, root["splits"], "splits", "an integer") : 10;
    job.seed = root["seed"] ? value<uint64_t>(job, root["seed"], "seed", "a non-negative integer") : 0;
    job.protocol = root["protocol"] ? value<std::string>(job, root["protocol"], "protocol", "a protocol name") : "transductive-fraction";
    if (job.protocol == "transductive-fraction") {
      if (!root["transductive_fraction"]) job_error(job, "protocol transductive-fraction needs transductive_fraction");
      job.transductive_fraction = value<double>(job, root["transductive_fraction"], "transductive_fraction", "a number in (0, 1]");
    } else if (job.protocol == "labeled-unlabeled-per-class") {
      if (!root["unlabeled_per_class"]) job_error(job, "protocol labeled-unlabeled-per-class needs unlabeled_per_class");
      job.unlabeled_per_class = value<int>(job, root["unlabeled_per_class"], "unlabeled_per_class", "an integer >= 0");
    } else if (job.protocol == "half-split") {
      job.transductive_fraction = 0.5;
    } else {
      job_error(job, "protocol: expected transductive-fraction, labeled-unlabeled-per-class or half-split, got '" +
                         job.protocol + "'");
    }
    if (!root["labeled_per_class"]) job_error(job, "labeled_per_class is required (a number or a list)");
    if (root["labeled_per_class"].IsSequence())
      for (const auto& v : root["labeled_per_class"]) job.labeled_per_class.push_back(value<int>(job, v, "labeled_per_class", "an integer >= 1"));
    else
      job.labeled_per_class.push_back(value<int>(job, root["labeled_per_class"], "labeled_per_class", "an integer >= 1 or a list"));
    job.select_by = root["select_by"] ? value<std::string>(job, root["select_by"], "select_by", "unlabeled, unseen or cv") : "unlabeled";
    if (job.select_by != "unlabeled" && job.select_by != "unseen" && job.select_by != "cv")
      job_error(job, "select_by: expected unlabeled, unseen or cv, got '" + job.select_by + "'");
    job.cv_folds = root["cv_folds"] ? value<int>(job, root["cv_folds"], "cv_folds", "an integer >= 2") : 5;
    if (job.cv_folds < 2) job_error(job, "cv_folds must be at least 2");
    if (job.splits < 1 || job.splits > 10000) job_error(job, "splits must be between 1 and 10000, got " + std::to_string(job.splits));
    if (job.protocol == "transductive-fraction" &&
        !(job.transductive_fraction > 0 && job.transductive_fraction <= 1))  // NaN fails too
      job_error(job, "transductive_fraction must be in (0, 1], got " + std::to_string(job.transductive_fraction));
    if (job.protocol == "labeled-unlabeled-per-class" && job.unlabeled_per_class < 0)
      job_error(job, "unlabeled_per_class must be at least 0, got " + std::to_string(job.unlabeled_per_class));
    {
      std::set<int> seen;  // not a pairwise scan: a list of 10^5 values must not take minutes
      for (const int p : job.labeled_per_class) {
        if (p < 1) job_error(job, "labeled_per_class must be at least 1, got " + std::to_string(p));
        if (!seen.insert(p).second) job_error(job, "labeled_per_class lists " + std::to_string(p) + " twice");
      }
    }
    if (!root["datasets"] || !root["datasets"].IsSequence() || root["datasets"].size() == 0)
      job_error(job, "datasets: expected a list of {name, path[, format]}");
    std::map<std::string, std::string> slugs;  // slug → data set name
    for (const auto& d : root["datasets"]) {
      DatasetSpec ds;
      if (!d["path"]) job_error(job, "line " + std::to_string(d.Mark().line + 1) + ": a data set needs a path");
      ds.path = resolve(base, value<std::string>(job, d["path"], "path", "a file name"));
      ds.name = d["name"] ? value<std::string>(job, d["name"], "name", "a name") : ds.path;
      const std::string format = d["format"] ? value<std::string>(job, d["format"], "format", "csv, libsvm, npy, hdf5, idx or auto") : "auto";
      ds.format = in_job(job, d["format"] ? d["format"] : d, "format", [&] { return io::parse_format(format); });
      if (d["labels"]) ds.read.labels = resolve(base, value<std::string>(job, d["labels"], "labels", "an NPY file name"));
      if (d["hdf5_data"]) ds.read.hdf5_data = value<std::string>(job, d["hdf5_data"], "hdf5_data", "an HDF5 data set name");
      if (d["hdf5_labels"])
        ds.read.hdf5_labels = value<std::string>(job, d["hdf5_labels"], "hdf5_labels", "an HDF5 data set name");
      // Names key the checkpoints and the summary rows, their slugs the plot files.
      const auto [it, fresh] = slugs.emplace(slug(ds.name), ds.name);
      if (!fresh && it->second == ds.name)
        job_error(job, "line " + std::to_string(d.Mark().line + 1) + ": data set name '" + ds.name + "' is used twice");
      if (!fresh)
        job_error(job, "line " + std::to_string(d.Mark().line + 1) + ": data set names '" + it->second + "' and '" +
                           ds.name + "' make the same plot file name '" + slug(ds.name) + "'");
      job.datasets.push_back(ds);
    }
    if (!root["methods"] || !root["methods"].IsSequence() || root["methods"].size() == 0)
      job_error(job, "methods: expected a list of {name, parameters...}");
    std::set<std::string> signatures;  // of the method entries, to find one listed twice
    for (const auto& m : root["methods"]) {
      MethodSpec ms;
      ms.line = m.Mark().line + 1;
      if (m.IsScalar()) {
        ms.name = value<std::string>(job, m, "methods", "a method name or {name: ...}");
        if (!is_auto(ms.name)) in_job(job, m, "methods", [&] { methods::find_method(ms.name); });
      } else {
        if (!m["name"]) job_error(job, "line " + std::to_string(m.Mark().line + 1) + ": a method needs a name");
        ms.name = value<std::string>(job, m["name"], "name", "a method name");
        if (!is_auto(ms.name))  // auto: the method chosen by cross-validation (auto_select.hpp)
          in_job(job, m["name"], "name", [&] { methods::find_method(ms.name); });  // before its parameters
        for (const auto& kv : m) {
          const std::string key = kv.first.as<std::string>();
          if (key == "name") continue;
          if (key == "dim") {
            // A number, a range "a:b[:step]", or a list of numbers and ranges: every entry
            // parsed and the total counted before anything is expanded.
            const int line = kv.first.Mark().line + 1;
            std::vector<DimRange> ranges;
            int64_t total = 0;
            auto add = [&](const YAML::Node& v) {
              ranges.push_back(parse_range(job, line, ms.name, value<std::string>(job, v, "dim", "a dimension or a range")));
              total += ranges.back().count();  // <= 10^4 per entry, < 10^6 entries: no overflow
            };
            if (kv.second.IsSequence())
              for (const auto& v : kv.second) add(v);
            else
              add(kv.second);
            if (total > kMaxDims)
              job_error(job, "line " + std::to_string(line) + ": dim of method " + ms.name + ": " + std::to_string(total) +
                                 " values, more than " + std::to_string(kMaxDims));
            ms.dims.reserve(static_cast<size_t>(total));
            for (const DimRange& r : ranges)
              for (int64_t i = 0; i < r.count(); ++i) ms.dims.push_back(r.at(i));
            continue;
          }
          if (key == "cv_grid" && is_auto(ms.name))
            job_error(job, "line " + std::to_string(kv.first.Mark().line + 1) +
                               ": cv_grid of method auto: auto chooses the method and its parameters by cross-validation "
                               "itself; give cv_grid to a named method");
          if (key == "cv_grid") {
            const std::string where = "line " + std::to_string(kv.first.Mark().line + 1) + ": cv_grid of method " + ms.name;
            if (kv.second.IsScalar() && kv.second.as<std::string>() == "default") {
              ms.cv_default = true;
            } else if (kv.second.IsMap()) {
              for (const auto& g : kv.second) {
                const std::string name = g.first.as<std::string>();
                if (name != "dim" && !parameter_names().count(name))
                  job_error(job, where + ": unknown parameter '" + name + "'; expected dim or a parameter of the method");
                methods::require_parameter(methods::find_method(ms.name), name, job.file + ": " + where + ": " + name);
                std::vector<json> values;
                if (g.second.IsSequence())
                  for (const auto& v : g.second) values.push_back(scalar_json(v));
                else
                  values.push_back(scalar_json(g.second));
                FitConfig probe;  // values of the wrong kind fail here, naming the job line
                probe.method = ms.name;
                for (const auto& v : values) set_parameter(probe, name, v, job.file + ": " + where);
                require_distinct(job, where, name, values);
                ms.cv_grid.emplace_back(name, values);
              }
            } else {
              job_error(job, where + ": expected 'default' or a map {parameter: [values]}");
            }
            continue;
          }
          if (!parameter_names().count(key))
            job_error(job, "line " + std::to_string(kv.first.Mark().line + 1) + ": unknown parameter '" + key +
                               "' of method " + ms.name);
          const std::string at = job.file + ": line " + std::to_string(kv.first.Mark().line + 1);
          if (!is_auto(ms.name)) methods::require_parameter(methods::find_method(ms.name), key, at + ": " + key);
          std::vector<json> values;
          if (kv.second.IsSequence())
            for (const auto& v : kv.second) values.push_back(scalar_json(v));
          else
            values.push_back(scalar_json(kv.second));
          if (is_auto(ms.name)) {
            // What auto lets the user fix for every candidate (auto_accepts), each value checked
            // as `ssdr fit --method auto` checks it; anything else is auto's to choose.
            if (!auto_accepts(key))
              job_error(job, "line " + std::to_string(kv.first.Mark().line + 1) + ": " + key +
                                 " is not a parameter of auto: auto chooses the method and its parameters by "
                                 "cross-validation; it takes dim and " + auto_parameter_list() +
                                 " (list a named method to set " + key + ")");
            for (const auto& v : values) make_auto_config({{key, v, at}}, 0, job.seed, 0, 2);
          } else {  // every value checked now, naming the line, not after hours of other fits
            FitConfig probe;
            probe.method = ms.name;
            for (const auto& v : values) set_parameter(probe, key, v, at);
          }
          require_distinct(job, "line " + std::to_string(kv.first.Mark().line + 1) + ": method " + ms.name, key, values);
          ms.grid.emplace_back(key, values);
        }
      }
      if (!is_auto(ms.name)) methods::find_method(ms.name);
      // Every value once (the count is bounded above, before the values were expanded).
      {
        std::vector<int64_t> sorted = ms.dims;
        std::sort(sorted.begin(), sorted.end());
        const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
        if (dup != sorted.end())
          job_error(job, "dim of method " + ms.name + " lists " + std::to_string(*dup) + " twice");
      }
      for (const auto& [name, values] : ms.cv_grid)
        if (name == "dim" && !ms.dims.empty())
          job_error(job, "line " + std::to_string(ms.line) + ": method " + ms.name +
                             ": dim and a cv_grid over dim; give the candidates of m in one of them");
      if (grid_size(ms.grid) > kMaxGridPoints || grid_size(ms.cv_grid) > kMaxGridPoints)
        job_error(job, "method " + ms.name + ": a parameter grid of more than " + std::to_string(kMaxGridPoints) +
                           " points (the product of the value counts)");
      // The same configurations twice would count as two splits (entries that overlap only
      // in part are refused by config_keys).
      if (!signatures.insert(json({ms.name, ms.grid, ms.cv_grid, ms.dims, ms.cv_default}).dump()).second)
        job_error(job, "line " + std::to_string(ms.line) + ": method " + ms.name + " is listed twice with the same settings");
      job.methods.push_back(ms);
    }
    {
      // The whole sweep bounded before make_units allocates it (every factor may be at its
      // own bound: 10^4 splits × 10^4 dims × ...).
      double per_block = 0;
      for (const MethodSpec& ms : job.methods)
        per_block += grid_size(ms.grid) * static_cast<double>(std::max<size_t>(1, ms.dims.size()));
      const double total = per_block * static_cast<double>(job.datasets.size()) *
                           static_cast<double>(job.labeled_per_class.size()) * job.splits;
      if (total > kMaxConfigurations)
        job_error(job, "the job has " + std::to_string(static_cast<long long>(std::min(total, 9e18))) +
                           " configurations (data sets × labeled_per_class × splits × each method's grid points × dims), "
                           "more than 10^6");
    }
    if (root["preprocess"])
      for (const auto& kv : root["preprocess"]) job.preprocess[kv.first.as<std::string>()] = scalar_json(kv.second);
    // auto takes the job-wide preprocessing for every candidate: only what it accepts.
    for (const MethodSpec& ms : job.methods) {
      if (!is_auto(ms.name)) continue;
      for (auto it = job.preprocess.begin(); it != job.preprocess.end(); ++it) {
        const std::string line = std::to_string(root["preprocess"][it.key()].Mark().line + 1);
        if (!auto_accepts(it.key()))
          job_error(job, "line " + line + ": preprocess: " + it.key() + " does not hold for method auto (line " +
                             std::to_string(ms.line) + "), which takes " + auto_parameter_list());
        make_auto_config({{it.key(), it.value(), job.file + ": line " + line + ": preprocess"}}, 0,
                         job.seed, 0, 2);
      }
      break;
    }
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg, __FILE__, __LINE__, true);
  }
  return job;
}

// ---------------------------------------------------------------------------------------
// Configurations.

/// What determines every result of a job besides the unit's own coordinates: the protocol
/// (seed, fractions, counts, selection), the preprocessing override, each data set's files
/// (resolved path; size and modification time of the file, or of every regular file in the
/// folder for a folder data set) and the ssdr version, as a 64-bit FNV-1a hash in hex. A
/// resumed run whose output folder holds results under another hash is refused: changing the
/// seed or the data and re-running into the same folder must not bring old results back.
/// Neither inodes nor a folder's own times enter: a checkpoint copied to another machine with
/// the same data (a package install keeps the files' times, as do `cp -p` and `rsync -a`)
/// resumes there. A separate labels file (`labels:`) counts too. Local (stat only);
/// run_experiment takes rank 0's for every rank.
std::string job_fingerprint(const Job& job) {
  json j = {{"seed", job.seed}, {"protocol", job.protocol}, {"splits", job.splits},
            {"transductive_fraction", job.transductive_fraction}, {"unlabeled_per_class", job.unlabeled_per_class},
            {"select_by", job.select_by}, {"cv_folds", job.cv_folds}, {"preprocess", job.preprocess},
            {"version", version()}};
  auto file_json = [](const std::string& path) {
    struct stat st {};
    const bool found = ::stat(path.c_str(), &st) == 0;
    return json{{"size", found ? static_cast<int64_t>(st.st_size) : -1},
                {"mtime_ns", found ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec : -1}};
  };
  for (const DatasetSpec& d : job.datasets) {
    struct stat st {};
    char real[PATH_MAX];
    json files = json::object();  // name → size, mtime (sorted by name: json objects are ordered maps)
    if (::stat(d.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      if (DIR* dir = ::opendir(d.path.c_str())) {
        while (const dirent* e = ::readdir(dir)) {
          const std::string name = e->d_name, path = d.path + "/" + name;
          struct stat fs {};
          if (::stat(path.c_str(), &fs) == 0 && S_ISREG(fs.st_mode)) files[name] = file_json(path);
        }
        ::closedir(dir);
      }
    } else {
      files[""] = file_json(d.path);
    }
    if (!d.read.labels.empty()) files["labels:" + d.read.labels] = file_json(d.read.labels);
    j["data"].push_back({{"name", d.name}, {"path", ::realpath(d.path.c_str(), real) ? std::string(real) : d.path},
                         {"format", static_cast<int>(d.format)}, {"files", files},
                         {"labels", d.read.labels}, {"hdf5_data", d.read.hdf5_data}, {"hdf5_labels", d.read.hdf5_labels}});
  }
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : j.dump()) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string config_key(const Job& job, const Unit& u, int64_t dim) {
  const MethodSpec& ms = job.methods[static_cast<size_t>(u.method)];
  std::ostringstream s;
  s << job.fingerprint << "|" << job.datasets[static_cast<size_t>(u.dataset)].name << "|p=" << u.p << "|split=" << u.split << "|"
    << ms.name << "|" << u.params.dump() << "|dim=" << dim;
  if (ms.selects()) s << "|cv_grid=" << ms.cv_json().dump();
  return s.str();
}

std::vector<Unit> make_units(const Job& job) {
  std::vector<Unit> units;
  int block = 0;
  for (size_t d = 0; d < job.datasets.size(); ++d)
    for (int p : job.labeled_per_class)
      for (int s = 0; s < job.splits; ++s, ++block)
        for (size_t m = 0; m < job.methods.size(); ++m) {
          // auto: one selection and fit per split at each dim (0: m chosen with the method).
          const bool nested = !is_auto(job.methods[m].name) && methods::find_method(job.methods[m].name).nested_dimensions;
          std::vector<int64_t> dims = job.methods[m].dims.empty() ? std::vector<int64_t>{0} : job.methods[m].dims;
          for (const auto& point : grid_points(job.methods[m].grid)) {
            if (nested || dims.size() == 1) {
              units.push_back(Unit{static_cast<int>(d), p, s, static_cast<int>(m), point, dims, block});
            } else {
              for (int64_t dim : dims)
                units.push_back(Unit{static_cast<int>(d), p, s, static_cast<int>(m), point, {dim}, block});
            }
          }
        }
  return units;
}

std::unordered_set<std::string> config_keys(const Job& job, const std::vector<Unit>& units) {
  std::unordered_set<std::string> keys;
  for (const Unit& u : units)
    for (int64_t dim : u.dims) {
      std::string key = config_key(job, u, dim);
      if (keys.insert(key).second) continue;
      // Which entry made it first (only on this error path: a scan of the units).
      int first = u.method;
      for (const Unit& v : units)
        if (std::find(v.dims.begin(), v.dims.end(), dim) != v.dims.end() && config_key(job, v, dim) == key) {
          first = v.method;
          break;
        }
      const MethodSpec& ms = job.methods[static_cast<size_t>(u.method)];
      job_error(job, "line " + std::to_string(ms.line) + ": method " + ms.name + " repeats the configuration " +
                         u.params.dump() + (dim > 0 ? " dim " + std::to_string(dim) : std::string()) +
                         " of the entry on line " + std::to_string(job.methods[static_cast<size_t>(first)].line) +
                         " (it would be fitted twice and count as two splits)");
    }
  return keys;
}

/// The parameters a results line records: the grid point, and the cv_grid when the method
/// selects inside each split (so the summary keeps such a setting apart).
json recorded_params(const Job& job, const Unit& u) {
  const MethodSpec& ms = job.methods[static_cast<size_t>(u.method)];
  json p = u.params;
  if (ms.selects()) p["cv_grid"] = ms.cv_json();
  return p;
}

FitConfig make_config(const Job& job, const Unit& u, int64_t dim) {
  const MethodSpec& ms = job.methods[static_cast<size_t>(u.method)];
  if (is_auto(ms.name)) {
    // The job's preprocessing, then the entry's settings (each replaces the job's), for every
    // candidate; the landmarks and NN-descent seeded by the job's seed (fixed across splits),
    // the folds by the split's (experiment.cpp).
    std::vector<ParameterSetting> settings;
    for (auto it = job.preprocess.begin(); it != job.preprocess.end(); ++it)
      if (!u.params.contains(it.key())) settings.push_back({it.key(), it.value(), job.file + ": preprocess: " + it.key()});
    for (auto it = u.params.begin(); it != u.params.end(); ++it)
      settings.push_back({it.key(), it.value(), job.file + ": method auto: " + it.key()});
    return make_auto_config(settings, dim, job.seed, 0, job.cv_folds);
  }
  const auto& info = methods::find_method(ms.name);
  FitConfig c;
  c.method = ms.name;
  c.preprocess = info.preprocess;  // the method's paper preprocessing ...
  for (auto it = job.preprocess.begin(); it != job.preprocess.end(); ++it)
    set_parameter(c, it.key(), it.value(), job.file + ": preprocess");
  for (auto it = u.params.begin(); it != u.params.end(); ++it)
    set_parameter(c, it.key(), it.value(), job.file + ": method " + ms.name);
  c.method_options.dim = dim;
  const json kernel = c.parameters.contains("kernel") ? c.parameters["kernel"] : json();
  c.parameters = u.params;
  c.parameters["dim"] = dim;
  c.parameters["method"] = ms.name;
  if (!kernel.is_null()) {
    json k = kernel;
    k["seed"] = job.seed;  // landmarks fixed across splits, as `ssdr evaluate` does
    c.parameters["kernel"] = k;
  }
  return c;
}

data::SplitSpec split_spec(const Job& job, int p, int split) {
  data::SplitSpec s;
  s.labeled_per_class = p;
  s.transductive_fraction = job.transductive_fraction;
  s.unlabeled_per_class = job.unlabeled_per_class;
  s.seed = job.seed + static_cast<uint64_t>(split);
  return s;
}

}  // namespace ssdr::driver::detail
