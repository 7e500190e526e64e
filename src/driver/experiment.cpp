#include "ssdr/driver/experiment.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cctype>
#include <climits>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/driver/selection.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/io/output.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/model/model.hpp"

namespace ssdr::driver {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------
// The job file.

struct DatasetSpec {
  std::string name, path;
  io::Format format = io::Format::automatic;
};

struct MethodSpec {
  std::string name;
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

[[noreturn]] void job_error(const Job& job, const std::string& what) {
  throw Error(job.file + ": " + what, __FILE__, __LINE__, true);
}

/// n.as<T>() with a message naming the job file, the line, the key and what was expected
/// (yaml-cpp alone says "bad conversion").
template <class T>
T value(const Job& job, const YAML::Node& n, const std::string& key, const std::string& expected) {
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

/// "a:b" or "a:b:step" → a, a+step, ..., b. Every part a strict integer; a range may expand to
/// at most kMaxDims values (a job line of a few bytes must not allocate gigabytes).
std::vector<int64_t> parse_range(const Job& job, const std::string& s) {
  constexpr int64_t kMaxDims = 100000;
  std::vector<int64_t> parts;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ':')) {
    char* end = nullptr;
    errno = 0;
    const long long v = tok.empty() ? 0 : std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || errno != 0 || *end != '\0')
      job_error(job, "dim: expected an integer, a list or a range 'a:b[:step]', got '" + s + "'");
    parts.push_back(v);
  }
  if (parts.size() == 1) {
    if (parts[0] < 1) job_error(job, "dim: expected a positive dimension, got '" + s + "'");
    return parts;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0] < 1 || parts[1] < parts[0] ||
      (parts.size() == 3 && parts[2] < 1))
    job_error(job, "dim: expected a range 'a:b[:step]' with 1 <= a <= b, got '" + s + "'");
  const int64_t step = parts.size() == 3 ? parts[2] : 1;
  if ((parts[1] - parts[0]) / step + 1 > kMaxDims)
    job_error(job, "dim: range '" + s + "' has more than " + std::to_string(kMaxDims) + " values");
  std::vector<int64_t> out;
  for (int64_t v = parts[0]; v <= parts[1]; v += step) out.push_back(v);
  return out;
}

/// Refuse a mapping that repeats a key anywhere in the job (yaml-cpp keeps one of them
/// silently): "file:line: duplicate key 'k' (first on line L)".
void check_duplicate_keys(const std::string& file, const YAML::Node& node) {
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
      check_duplicate_keys(file, kv.second);
    }
  } else if (node.IsSequence()) {
    for (const auto& v : node) check_duplicate_keys(file, v);
  }
}

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
  check_duplicate_keys(path, root);
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
    if (job.splits < 1) job_error(job, "splits must be at least 1");
    if (job.protocol == "transductive-fraction" &&
        !(job.transductive_fraction > 0 && job.transductive_fraction <= 1))  // NaN fails too
      job_error(job, "transductive_fraction must be in (0, 1], got " + std::to_string(job.transductive_fraction));
    if (job.protocol == "labeled-unlabeled-per-class" && job.unlabeled_per_class < 0)
      job_error(job, "unlabeled_per_class must be at least 0, got " + std::to_string(job.unlabeled_per_class));
    for (int p : job.labeled_per_class)
      if (p < 1) job_error(job, "labeled_per_class must be at least 1, got " + std::to_string(p));
    if (!root["datasets"] || !root["datasets"].IsSequence() || root["datasets"].size() == 0)
      job_error(job, "datasets: expected a list of {name, path[, format]}");
    for (const auto& d : root["datasets"]) {
      DatasetSpec ds;
      if (!d["path"]) job_error(job, "line " + std::to_string(d.Mark().line + 1) + ": a data set needs a path");
      ds.path = resolve(base, value<std::string>(job, d["path"], "path", "a file name"));
      ds.name = d["name"] ? value<std::string>(job, d["name"], "name", "a name") : ds.path;
      ds.format = io::parse_format(d["format"] ? value<std::string>(job, d["format"], "format", "csv, libsvm, idx or auto") : "auto");
      job.datasets.push_back(ds);
    }
    if (!root["methods"] || !root["methods"].IsSequence() || root["methods"].size() == 0)
      job_error(job, "methods: expected a list of {name, parameters...}");
    for (const auto& m : root["methods"]) {
      MethodSpec ms;
      if (m.IsScalar()) {
        ms.name = value<std::string>(job, m, "methods", "a method name or {name: ...}");
      } else {
        if (!m["name"]) job_error(job, "line " + std::to_string(m.Mark().line + 1) + ": a method needs a name");
        ms.name = value<std::string>(job, m["name"], "name", "a method name");
        methods::find_method(ms.name);  // an unknown name first, before its parameters
        for (const auto& kv : m) {
          const std::string key = kv.first.as<std::string>();
          if (key == "name") continue;
          if (key == "dim") {
            // A number, a range "a:b[:step]", or a list of numbers and ranges.
            if (kv.second.IsSequence())
              for (const auto& v : kv.second)
                for (int64_t m : parse_range(job, v.as<std::string>())) ms.dims.push_back(m);
            else
              ms.dims = parse_range(job, kv.second.as<std::string>());
            continue;
          }
          if (key == "cv_grid") {
            const std::string where = "line " + std::to_string(kv.first.Mark().line + 1) + ": cv_grid of method " + ms.name;
            if (kv.second.IsScalar() && kv.second.as<std::string>() == "default") {
              ms.cv_default = true;
            } else if (kv.second.IsMap()) {
              for (const auto& g : kv.second) {
                const std::string name = g.first.as<std::string>();
                if (!parameter_names().count(name)) job_error(job, where + ": unknown parameter '" + name + "'");
                methods::require_parameter(methods::find_method(ms.name), name, job.file + ": " + where + ": " + name);
                std::vector<json> values;
                if (g.second.IsSequence())
                  for (const auto& v : g.second) values.push_back(scalar_json(v));
                else
                  values.push_back(scalar_json(g.second));
                FitConfig probe;  // values of the wrong kind fail here, naming the job line
                probe.method = ms.name;
                for (const auto& v : values) set_parameter(probe, name, v, job.file + ": " + where);
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
          methods::require_parameter(methods::find_method(ms.name), key,
                                     job.file + ": line " + std::to_string(kv.first.Mark().line + 1) + ": " + key);
          std::vector<json> values;
          if (kv.second.IsSequence())
            for (const auto& v : kv.second) values.push_back(scalar_json(v));
          else
            values.push_back(scalar_json(kv.second));
          {  // every value checked now, naming the line, not after hours of other fits
            FitConfig probe;
            probe.method = ms.name;
            for (const auto& v : values)
              set_parameter(probe, key, v, job.file + ": line " + std::to_string(kv.first.Mark().line + 1));
          }
          ms.grid.emplace_back(key, values);
        }
      }
      methods::find_method(ms.name);
      job.methods.push_back(ms);
    }
    if (root["preprocess"])
      for (const auto& kv : root["preprocess"]) job.preprocess[kv.first.as<std::string>()] = scalar_json(kv.second);
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg, __FILE__, __LINE__, true);
  }
  return job;
}

// ---------------------------------------------------------------------------------------
// Configurations.

struct Unit {
  int dataset = 0, p = 0, split = 0, method = 0;
  json params = json::object();  ///< one point of the method's grid (no dim)
  std::vector<int64_t> dims;     ///< {0} = the method's default
  int block = 0;                 ///< (dataset, p, split): the unit of work of a group
};

/// What determines every result of a job besides the unit's own coordinates: the protocol
/// (seed, fractions, counts, selection), the preprocessing override, each data set's file
/// (resolved path, size, modification time, inode) and the ssdr version, as a 64-bit FNV-1a
/// hash in hex. A resumed run whose output folder holds results under another hash is
/// refused: changing the seed or the data and re-running into the same folder must not
/// bring old results back. Local (stat only).
std::string job_fingerprint(const Job& job) {
  json j = {{"seed", job.seed}, {"protocol", job.protocol}, {"splits", job.splits},
            {"transductive_fraction", job.transductive_fraction}, {"unlabeled_per_class", job.unlabeled_per_class},
            {"select_by", job.select_by}, {"cv_folds", job.cv_folds}, {"preprocess", job.preprocess},
            {"version", version()}};
  for (const DatasetSpec& d : job.datasets) {
    struct stat st {};
    char real[PATH_MAX];
    const bool found = ::stat(d.path.c_str(), &st) == 0;
    j["data"].push_back({{"name", d.name}, {"path", ::realpath(d.path.c_str(), real) ? std::string(real) : d.path},
                         {"format", static_cast<int>(d.format)}, {"size", found ? static_cast<int64_t>(st.st_size) : -1},
                         {"mtime_ns", found ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec : -1},
                         {"inode", found ? static_cast<int64_t>(st.st_ino) : -1}});
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
          const auto& info = methods::find_method(job.methods[m].name);
          std::vector<int64_t> dims = job.methods[m].dims.empty() ? std::vector<int64_t>{0} : job.methods[m].dims;
          for (const auto& point : grid_points(job.methods[m].grid)) {
            if (info.nested_dimensions || dims.size() == 1) {
              units.push_back(Unit{static_cast<int>(d), p, s, static_cast<int>(m), point, dims, block});
            } else {
              for (int64_t dim : dims)
                units.push_back(Unit{static_cast<int>(d), p, s, static_cast<int>(m), point, {dim}, block});
            }
          }
        }
  return units;
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

// ---------------------------------------------------------------------------------------
// Checkpoint files.

std::vector<std::string> result_files(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind("results", 0) == 0 && n.size() > 6 && n.substr(n.size() - 6) == ".jsonl") files.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Every complete line of every results*.jsonl (a line cut by a kill is ignored).
std::vector<json> read_results(const std::string& dir) {
  std::vector<json> out;
  for (const auto& f : result_files(dir)) {
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
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND, 0644);
  SSDR_CHECK(fd >= 0, "cannot open results file '" + path + "' for appending");
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

void make_dirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    ::mkdir(cur.c_str(), 0755);
  }
}

json acc_json(const evaluation::Accuracy& a) {
  auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  return {{"unlabeled", num(a.unlabeled)}, {"unseen", num(a.unseen)}};
}

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

std::string fmt(double v, const char* f = "%.4f") {
  if (std::isnan(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string params_text(const json& p) {
  std::string s;
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (it.key() == "dim" || it.key() == "method") continue;
    s += (s.empty() ? "" : " ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return s.empty() ? "defaults" : s;
}

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

void summarize(const Job& job, const std::string& out_dir, const std::vector<json>& results, double sweep_seconds,
               int groups, int ranks) {
  // results.json: every split of every configuration.
  json all = {{"job", job.name}, {"job_file", job.file}, {"ssdr_version", version()}, {"groups", groups},
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

}  // namespace

int run_experiment(const ExperimentOptions& options, MPI_Comm world) {
  const double t0 = MPI_Wtime();
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

  // Output directory and what is already done (every rank reads the same files).
  bool ok = true;
  std::string msg;
  if (wrank == 0) {
    make_dirs(job.output);
    if (access(job.output.c_str(), W_OK) != 0) {
      ok = false;
      msg = "output directory '" + job.output + "' cannot be created or written";
    }
  }
  SSDR_CHECK_COLLECTIVE(world, ok, msg);
  MPI_Barrier(world);
  std::set<std::string> done;
  const std::string& fingerprint = job.fingerprint;
  for (const auto& r : read_results(job.output)) {
    const std::string key = r.contains("key") && r["key"].is_string() ? r["key"].get<std::string>() : "";
    SSDR_REQUIRE(key.rfind(fingerprint + "|", 0) == 0,
                 "--output " + job.output + " holds results of another configuration of this job (its seed, protocol, "
                 "data files or ssdr version differ: '" + key.substr(0, 60) +
                 "'); choose a new --output folder or remove its results*.jsonl to start over");
    done.insert(key);
  }

  // Every data set readable before any group starts (a group's own failure would reach the
  // other groups only at the end of their work).
  msg.clear();
  if (wrank == 0)
    for (const DatasetSpec& d : job.datasets)
      if (::access(d.path.c_str(), R_OK) != 0) {
        msg = job.file + ": data set '" + d.name + "': cannot read '" + d.path + "': " + std::strerror(errno);
        break;
      }
  SSDR_CHECK_COLLECTIVE(world, msg.empty(), msg);

  // Groups: contiguous blocks of ranks; group g takes blocks b with b mod G == g.
  const int G = options.groups;
  const int color = static_cast<int>(static_cast<int64_t>(wrank) * G / wsize);
  MPI_Comm group = MPI_COMM_NULL;
  MPI_Comm_split(world, color, wrank, &group);
  int grank = 0, gsize = 1;
  MPI_Comm_rank(group, &grank);
  MPI_Comm_size(group, &gsize);
  const bool leader = grank == 0;
  const std::string results_path =
      job.output + "/results.g" + std::to_string(color) + "of" + std::to_string(G) + ".jsonl";

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
  // Graphs and propagations of the current block, per preprocessing, reused by every
  // method and dimension of the block (the block changes → the caches are dropped).
  std::map<std::string, methods::GraphCache> caches;
  int cache_block = -1;
  const double g0 = MPI_Wtime();
  // An error raised on every rank of one group (a data set that fails to parse, a full
  // disk) is collective over that group only: the other groups would wait for it at the
  // final barrier forever. It is caught here and made collective over the world below.
  std::string group_failure;
  try {
  for (size_t i = 0; i < mine.size(); ++i) {
    const Unit& u = *mine[i];
    if (!datasets.count(u.dataset)) {
      const auto& spec = job.datasets[static_cast<size_t>(u.dataset)];
      datasets.emplace(u.dataset, io::read_dataset(spec.path, spec.format, group));
    }
    const io::Dataset& ds = datasets.at(u.dataset);
    const auto roles = data::make_split(ds.labels, ds.classes, split_spec(job, u.p, u.split));
    const auto& info = methods::find_method(job.methods[static_cast<size_t>(u.method)].name);
    const int64_t max_dim = *std::max_element(u.dims.begin(), u.dims.end());
    if (u.block != cache_block) {
      caches.clear();
      cache_block = u.block;
    }
    FitConfig config = make_config(job, u, max_dim);
    char pkey[96];
    std::snprintf(pkey, sizeof pkey, "%d|%d|%.17g", static_cast<int>(config.preprocess.scaling),
                  static_cast<int>(config.preprocess.pca), config.preprocess.pca_energy);
    config.cache = &caches[pkey];
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
    try {
      if (ms.selects()) {
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
        if (ms.selects()) {
          cv = selection["cv_accuracy"].get<double>();
        } else if (u.p >= 2) {
          CvCaches cvc;
          cvc.shared.graphs = config.cache->graphs;
          cvc.shared.sigma0 = config.cache->sigma0;
          cv = cross_validate(ds, roles, config, cv_folds(ds.labels, roles, ds.classes, job.cv_folds, split_seed), &cvc)
                   .accuracy;
        }
      }
    } catch (const Error& e) {
      if (!e.collective()) throw;
      failure = e.what();
    }
    const double fit_seconds = MPI_Wtime() - f0;
    if (!failure.empty()) {
      set_quiet(was_quiet);
      for (int64_t dim : u.dims) {
        const std::string key = config_key(job, u, dim);
        if (done.count(key)) continue;
        json line = {{"key", key}, {"dataset", job.datasets[static_cast<size_t>(u.dataset)].name},
                     {"method", info.name}, {"labeled_per_class", u.p}, {"split", u.split},
                     {"params", recorded_params(job, u)}, {"dim", dim}, {"error", failure}, {"seconds", fit_seconds},
                     {"group", color}, {"ssdr_version", version()}};
        if (leader) append_line(results_path, line.dump());
      }
      if (leader) say("[group " + std::to_string(color) + "] " + info.name + " skipped: " + failure);
      continue;
    }
    set_quiet(was_quiet);
    for (int64_t dim : u.dims) {
      const std::string key = config_key(job, u, dim);
      if (done.count(key)) continue;
      evaluation::Accuracy acc = out.accuracy;
      int64_t used_dim = out.dim;
      if (dim != max_dim && dim > 0 && info.nested_dimensions && dim <= out.model.W.cols) {
        // Nested solutions: the first `dim` columns are the dim-dimensional solution.
        model::Model m = out.model;
        Dense W(m.W.rows, dim);
        std::copy(m.W.v.begin(), m.W.v.begin() + m.W.rows * dim, W.v.begin());
        m.W = W;
        acc = evaluation::one_nn_accuracy(model::project(m, ds.X), ds.labels, roles);
        used_dim = dim;
      }
      json line = {{"key", key},
                   {"dataset", job.datasets[static_cast<size_t>(u.dataset)].name},
                   {"method", info.name},
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
                    info.name.c_str(), u.dims.size(), fmt(out.accuracy.unlabeled).c_str(),
                    fmt(out.accuracy.unseen).c_str(), fit_seconds, eta);
      std::fprintf(stderr, "[%8.1f s] %s\n", elapsed_since_start(), b);
      std::fflush(stderr);
    }
  }
  } catch (const Error& e) {
    if (!e.collective()) throw;  // raised on some ranks only: main aborts the world
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
      summarize(job, job.output, read_results(job.output), sweep, G, wsize);
    } catch (const std::exception& e) {
      ok = false;
      msg = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(world, ok, msg);
  return 0;
}

}  // namespace ssdr::driver
