// ssdr command line: parses and validates the options, then calls the driver. ssdr's own
// options have two dashes (--method soda; -q and -h are the only short ones); every other
// single-dash word is a PETSc/SLEPc option (-log_view, -lp_ksp_type gmres, -tr_eps_type
// scalapack, ...), wherever it stands, handed to SlepcInitialize with its value and in order.
#include <algorithm>
#include <slepcsys.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ssdr/core/blas_kernels.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/runtime.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/driver/auto_select.hpp"
#include "ssdr/driver/commands.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/io/output.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/parameters.hpp"
#include "ssdr/model/model.hpp"
#include "ssdr/driver/experiment.hpp"
#include "ssdr/driver/provenance.hpp"

namespace po = boost::program_options;
using namespace ssdr;

namespace {

const char* kUsage =
    "usage: ssdr <command> [options] [PETSc/SLEPc options]\n"
    "\n"
    "commands:\n"
    "  fit        learn a projection on one split, evaluate it (1-NN), write report/model/embedding\n"
    "  evaluate   fit over --splits R random splits (seeds S..S+R-1), report mean and std\n"
    "  transform  apply a saved --model to --data and write the --embedding\n"
    "  predict    label --data by 1-NN against the model's labeled samples, write one label per line\n"
    "  convert    rewrite a data set as HDF5 or NPY, which every rank then reads in parallel\n"
    "  plot       draw an embedding (CSV, NPY, HDF5) as a PNG/SVG scatter coloured by class (matplotlib)\n"
    "  experiment run a YAML job: protocols, parameter grids, splits, groups, checkpoints, plots\n"
    "  methods    list the methods\n"
    "\n"
    "options:\n"
    "  --version  the version, commit, build and libraries\n"
    "  --help     this text\n"
    "\n"
    "Run 'ssdr <command> --help' (or 'ssdr help <command>') for the options of a command. ssdr's\n"
    "options have two dashes; PETSc/SLEPc options have one and may stand anywhere, each with its\n"
    "value, e.g. -lp_ksp_type gmres -tr_eps_type lapack -log_view. A PETSc option that nothing\n"
    "read (misspelled?) is named in a warning at exit.\n";

const char* kFormatHelp =
    "csv | libsvm | npy | hdf5 | idx | auto (from the name: .npy, .h5/.hdf5, .libsvm/.svm, *idx3-ubyte or a "
    "directory, else csv). Plain CSV/LIBSVM, NPY, HDF5 and IDX are read in parallel, each rank its own part; "
    "gzip'd text streams through rank 0";

/// --sparse of transform and predict: how a LIBSVM file is read for a saved model.
const char* kSparseMapHelp =
    "yes | no | auto: keep LIBSVM data sparse and map each row through the model's PCA basis without the dense "
    "matrix (as fit does for sparse data: the same bits as its --embedding); auto: when the dense matrix would "
    "exceed 1 GiB and at most 10% of it is stored";

/// --help text: stdout, rank 0 only, no progress timestamp (so `ssdr fit --help | less`
/// works). Local.
void print_help(const std::string& text) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::fputs(text.c_str(), stdout);
}

/// A negative number ("-5", "-1e-3", "-.5"): a value, never an option.
bool is_negative_number(const char* a) {
  return a[0] == '-' && ((a[1] >= '0' && a[1] <= '9') || (a[1] == '.' && a[2] >= '0' && a[2] <= '9'));
}

/// A PETSc/SLEPc option: one dash and a name (not ssdr's -q/-h, not a negative number).
bool is_petsc_option(const char* a) {
  if (std::strcmp(a, "-q") == 0 || std::strcmp(a, "-h") == 0) return false;  // ssdr's short options
  return a[0] == '-' && a[1] != '-' && a[1] != '\0' && !is_negative_number(a);
}

const char* const kCommands[] = {"fit", "evaluate", "transform", "predict", "convert", "plot", "experiment", "methods",
                                 "help", "version"};

bool is_command(const char* a) {
  for (const char* c : kCommands)
    if (std::strcmp(a, c) == 0) return true;
  return false;
}

/// Splits argv into ssdr's words and PETSc's options, each PETSc option with its value, in
/// their order. A PETSc option's value is the next word when that word is no option (it does
/// not start with '-', or it is a negative number: -mat_shift -5, -lp_ksp_rtol 1e-12), as
/// PETSc reads its own command line; before the command, a command name is the command
/// (ssdr -log_view fit ...), not a value. Replicated (every rank splits the same argv).
void split_arguments(int argc, char** argv, std::vector<std::string>& ssdr_args, std::vector<char*>& petsc_argv) {
  petsc_argv.assign(1, argv[0]);
  for (int i = 1; i < argc; ++i) {
    if (!is_petsc_option(argv[i])) {
      ssdr_args.emplace_back(argv[i]);
      continue;
    }
    petsc_argv.push_back(argv[i]);
    if (i + 1 < argc) {
      const char* next = argv[i + 1];
      const bool value = next[0] != '-' || is_negative_number(next);
      if (value && !(ssdr_args.empty() && is_command(next))) petsc_argv.push_back(argv[++i]);
    }
  }
}

/// PETSc options that name files, checked before PETSc touches them: -options_file and
/// -options_file_yaml must name regular files of at most 1 MiB (an options file is a few
/// lines); the folder of a -log_view :path (and -log_trace,
/// -log_dump, -memory_view) must be writable. "" when all are, else the one-line error. Local.
std::string check_petsc_file_options(const std::vector<char*>& petsc_argv) {
  for (size_t a = 1; a + 1 < petsc_argv.size(); ++a) {
    if (petsc_argv[a] == nullptr || petsc_argv[a + 1] == nullptr) continue;
    const std::string opt = petsc_argv[a];
    if (opt == "-log_view" || opt == "-log_trace" || opt == "-log_dump" || opt == "-memory_view") {
      // -log_view :path[:format] is written at the very end, inside PETSc's finalize, where a
      // failure leaves the ranks out of step: check that the folder can take the file now.
      std::string v = petsc_argv[a + 1];
      if (v.empty() || v[0] != ':') continue;
      v = v.substr(1);
      const auto colon = v.find(':');
      if (colon != std::string::npos) v = v.substr(0, colon);
      if (v.empty()) continue;
      const auto slash = v.find_last_of('/');
      const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : v.substr(0, slash));
      if (::access(dir.c_str(), W_OK) != 0)
        return opt + " :" + v + ": folder '" + dir + "' does not exist or is not writable";
      continue;
    }
    if (opt != "-options_file" && opt != "-options_file_yaml") continue;
    const std::string path = petsc_argv[a + 1];
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      return opt + " " + path + ": " + std::strerror(errno);
    if (!S_ISREG(st.st_mode)) return opt + " " + path + ": not a regular file (a device, FIFO or directory); expected an options file";
    if (st.st_size > (1 << 20))
      return opt + " " + path + ": " + std::to_string(st.st_size) + " bytes; expected an options file of at most 1 MiB";
  }
  return "";
}

std::string methods_help() {
  std::ostringstream s;
  for (const auto& m : methods::method_table()) {
    s << "  " << m.name << std::string(m.name.size() < 12 ? 12 - m.name.size() : 1, ' ') << m.summary << "\n"
      << "              [" << m.source << "]\n";
    if (!m.parameters.empty()) {
      std::string own;
      for (const auto& p : m.parameters) own += (own.empty() ? "" : ", ") + p;
      s << "              parameters: " << own << "\n";
    }
  }
  return s.str();
}

/// A parameter's default when it is one value for every method, as text; "" when the method's
/// paper sets it (a "default" value, and every preprocessing and kernel parameter but those
/// marked ParameterSpec::fixed_default: their docs say so) or the parameter is a flag. Help
/// and docs/methods.md show the same. Local.
std::string fixed_default(const methods::ParameterSpec& p) {
  if (p.kind == methods::ParameterKind::flag ||
      ((p.scope == methods::ParameterScope::every || p.scope == methods::ParameterScope::kernel) && !p.fixed_default))
    return "";
  methods::MethodOptions mo;
  data::PreprocessOptions pre;
  kernels::KernelOptions ko;
  const nlohmann::json d = p.get(methods::ConstParameterTarget{mo, pre, ko});
  if (d == "default") return "";
  return d.is_string() ? d.get<std::string>() : d.dump();
}

/// `ssdr methods --markdown`: the method table and the parameter table as the Markdown page
/// docs/methods.md (a ctest checks the committed page against this output, so the docs
/// cannot drift from the code). Not collective.
std::string methods_markdown() {
  auto cell = [](std::string t) {  // a table cell: no '|' breaks the row
    std::string out;
    for (char ch : t) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return out;
  };
  std::ostringstream s;
  s << "# Methods and parameters\n\n"
    << "<!-- Generated by `ssdr methods --markdown` from the method and parameter tables in\n"
    << "     src/methods/; do not edit. Regenerate: build/ssdr methods --markdown > docs/methods.md\n"
    << "     (ctest's docs.methods fails when this page and the code disagree). -->\n\n"
    << "Every method below is `ssdr fit --method NAME`, a `method:` entry of an experiment job, and\n"
    << "a Python class (`ssdr.SODA`, `ssdr.SL_LDA`, ...). [The methods guide](methods-guide.md)\n"
    << "says which to choose; this page is the reference.\n\n"
    << "## Methods\n\n"
    << "| method | what it is | source | learns from unlabeled | projects (W) | its own parameters |\n"
    << "|---|---|---|---|---|---|\n";
  for (const auto& m : methods::method_table()) {
    std::string own;
    for (const auto& p : m.parameters) own += (own.empty() ? "" : ", ") + ("`" + p + "`");
    s << "| `" << m.name << "` | " << cell(m.summary) << " | " << cell(m.source) << " | "
      << (m.uses_unlabeled ? "yes" : "no") << " | " << (m.projects ? "yes" : "no (transductive)") << " | "
      << (own.empty() ? "-" : own) << " |\n";
  }
  s << "\nEvery method also takes `--dim` (m; 0 means c-1), the preprocessing and `--normalize`\n"
    << "parameters below; every method that projects takes the kernel parameters.\n\n"
    << "## Parameters\n\n"
    << "The option is the command line's; the job-file key and the `--grid`/Python name is the\n"
    << "option without `--`, with `-` as `_`. A default of \"the method's\" is the value its paper\n"
    << "uses (see each method's source).\n\n"
    << "| option | symbol | applies to | meaning | accepts | default |\n"
    << "|---|---|---|---|---|---|\n";
  for (const auto& p : methods::parameter_table()) {
    std::string scope;
    switch (p.scope) {
      case methods::ParameterScope::own: {
        for (const auto& m : methods::method_table())
          if (std::find(m.parameters.begin(), m.parameters.end(), p.name) != m.parameters.end())
            scope += (scope.empty() ? "" : ", ") + m.name;
        break;
      }
      case methods::ParameterScope::every: scope = "every method"; break;
      case methods::ParameterScope::kernel: scope = "every projecting method"; break;
      case methods::ParameterScope::knn_backend: scope = "methods with a kNN or LNP graph"; break;
    }
    const std::string fixed = fixed_default(p);
    const std::string def = p.kind == methods::ParameterKind::flag ? "-" : fixed.empty() ? "the method's" : fixed;
    s << "| `" << p.cli_option() << "` | " << (p.symbol.empty() ? "-" : cell(p.symbol)) << " | " << cell(scope)
      << " | " << cell(p.doc) << " | " << (p.kind == methods::ParameterKind::flag ? "a switch" : cell(p.expected()))
      << " | " << cell(def) << " |\n";
  }
  return s.str();
}

/// `ssdr --version`: the version, the commit it was built from, the build's options and the
/// libraries it runs with (the xSDK policies' M8). Not collective (rank 0 prints it).
std::string version_text() {
  const nlohmann::json p = driver::provenance();
  std::ostringstream s;
  s << "ssdr " << version() << " (commit " << git_commit() << ")\n"
    << "build: " << SSDR_BUILD_TYPE << ", " << SSDR_COMPILER << ", flags '" << SSDR_CXX_FLAGS << "'\n"
    << "precision: rows kept in the file's type (uint8, float32, float64); kNN filter float32 with exact\n"
    << "           float64 re-rank; covariance, solvers and models float64\n"
    << "model format: " << model::kFormatVersion << " (reads " << "versions 1 to " << model::kFormatVersion << ")\n";
  for (const auto& [name, v] : p["libraries"].items()) {
    std::string text = v.get<std::string>();
    while (!text.empty() && text.back() == ' ') text.pop_back();
    s << name << ": " << text << "\n";
  }
  return s.str();
}

/// One help line of a parameter: symbol, doc, what it accepts and its fixed default.
std::string parameter_help(const methods::ParameterSpec& p) {
  std::string h = (p.symbol.empty() || p.symbol == p.name ? "" : p.symbol + ": ") + p.doc;
  if (p.kind == methods::ParameterKind::flag) return h;
  h += " [" + p.expected();
  const std::string fixed = fixed_default(p);
  if (!fixed.empty()) h += "; default " + fixed;
  return h + "]";
}

/// The label options every command that reads data takes (io::LabelOptions), added to `d`
/// and read back by read_label_options. Not collective.
void add_label_options(po::options_description& d) {
  // clang-format off
  d.add_options()
    ("header", po::value<std::string>()->default_value("auto"),
     "auto | yes | no: the CSV/TSV file's first line names its columns (auto: when one of its value fields is not a number)")
    ("label-column", po::value<std::string>(),
     "CSV/TSV: the label column, by header name or 1-based number [default: 1]")
    ("id-column", po::value<std::string>(),
     "CSV/TSV: a column of row ids (header name or 1-based number), not a feature; the outputs' id column shows them")
    ("unlabeled-marker", po::value<std::vector<std::string>>()->composing(),
     "a label field value that marks an unlabeled row (repeatable; replaces the defaults: the empty field, ?, NA, -1)")
    ("label-type", po::value<std::string>()->default_value("auto"),
     "auto | integer | string: labels are integers or names (auto: integers when every label is one; a mix is refused)");
  // clang-format on
}

/// The label options given (add_label_options). \throws ssdr::Error naming a bad value.
io::LabelOptions read_label_options(const po::variables_map& vm) {
  io::LabelOptions o;
  o.header = io::parse_header(vm["header"].as<std::string>());
  o.type = io::parse_label_type(vm["label-type"].as<std::string>());
  if (vm.count("label-column")) {
    o.column = vm["label-column"].as<std::string>();
    SSDR_REQUIRE(!o.column.empty(), "--label-column: expected a column name or number, got an empty string");
  }
  if (vm.count("id-column")) {
    o.id_column = vm["id-column"].as<std::string>();
    SSDR_REQUIRE(!o.id_column.empty(), "--id-column: expected a column name or number, got an empty string");
  }
  if (vm.count("unlabeled-marker")) o.unlabeled_markers = vm["unlabeled-marker"].as<std::vector<std::string>>();
  return o;
}

/// How a command reads LIBSVM data sparse (--sparse): fit keeps them sparse and reduces them by a
/// truncated SVD; transform and predict map them through the model's basis; convert has no
/// --sparse.
enum class SparseData { none, reduce, map };

/// The data options every command that reads data takes, bound to `read` and `format` and read
/// back by read_data_options: --format and --hdf5-data; --no-labels when the command's labels
/// are optional (!read.labels_required: transform, predict); --hdf5-labels and --labels when
/// `label_files` (every command but transform); --sparse as `sparse` says; then the label
/// options (add_label_options). Not collective.
void add_data_options(po::options_description& d, io::ReadOptions& read, std::string& format, bool label_files,
                      SparseData sparse) {
  const bool optional = !read.labels_required;
  // clang-format off
  d.add_options()
    ("format", po::value(&format)->default_value("auto"), kFormatHelp)
    ("hdf5-data", po::value(&read.hdf5_data)->default_value("/X"), "HDF5 data set of the n x d samples (any numeric type)");
  if (optional)
    d.add_options()("no-labels", "CSV data without a label column: every field is a value");
  if (label_files)
    d.add_options()
      ("hdf5-labels", po::value(&read.hdf5_labels)->default_value("/y"),
       optional ? "HDF5 data set of the n labels (any integer type), if the file has one"
                : "HDF5 data set of the n labels (any integer type)")
      ("labels", po::value(&read.labels),
       optional ? "labels of NPY data (optional): a 1-D integer .npy file of n labels"
                : "labels of NPY data: a 1-D integer .npy file of n labels");
  if (sparse == SparseData::reduce)
    d.add_options()("sparse", po::value<std::string>()->default_value("auto"),
      "yes | no | auto: keep LIBSVM data sparse and reduce them by a truncated SVD (needs --pca-dim); auto: when the "
      "dense matrix would exceed 1 GiB and at most 10% of it is stored");
  if (sparse == SparseData::map)
    d.add_options()("sparse", po::value<std::string>()->default_value("auto"), kSparseMapHelp);
  // clang-format on
  add_label_options(d);
}

/// The data options given (add_data_options) into `read`; returns the --format. \throws
/// ssdr::Error naming a bad value.
io::Format read_data_options(const po::variables_map& vm, const std::string& format, io::ReadOptions& read) {
  read.label = read_label_options(vm);
  const io::Format f = io::parse_format(format);
  if (!read.labels_required) read.no_labels = vm.count("no-labels") > 0;
  if (vm.count("sparse")) read.sparse = io::parse_sparsity(vm["sparse"].as<std::string>());
  return f;
}

/// The options of `fit` (evaluate = false) or `evaluate`: the run's options bound to c, and
/// one option per entry of methods::parameter_table() (read back by parse_fit, which checks
/// each through methods::set_parameter). Not collective.
po::options_description fit_options(driver::FitCommand& c, std::string& format, double& max_kernel_memory,
                                    std::vector<std::string>& grid, bool evaluate) {
  po::options_description d(evaluate ? "ssdr evaluate options" : "ssdr fit options");
  auto& mo = c.config.method_options;
  // clang-format off
  d.add_options()
    ("help,h", "show this help")
    ("method", po::value(&c.config.method)->required(),
     ("method name: auto (chosen by cross-validation on the labeled samples) or one of " + methods::method_names()).c_str())
    ("data", po::value(&c.data)->required(), "data file (CSV, LIBSVM[.gz], NPY, HDF5) or IDX file/directory");
  add_data_options(d, c.read, format, true, SparseData::reduce);
  d.add_options()
    ("split", po::value(&c.split_file), "split file: one role per line (labeled/unlabeled/unseen)")
    ("labeled-per-class", po::value(&c.split.labeled_per_class), "p labeled samples per class (random split)")
    ("unlabeled-per-class", po::value(&c.split.unlabeled_per_class), "q unlabeled samples per class; rest unseen")
    ("transductive-fraction", po::value(&c.split.transductive_fraction), "fraction F of each class in the transductive set; rest unseen")
    ("seed", po::value<int64_t>()->default_value(0), "random seed of the split (and of NN-descent and the landmarks), >= 0")
    ("dim", po::value(&mo.dim)->default_value(0), "projected dimension m (0: c-1)");
  if (!evaluate)
    d.add_options()("plot", po::value(&c.plot), "a PNG/SVG scatter of the embedding at the end (as ssdr plot; matplotlib)");
  po::options_description params("method parameters (job-file keys: the option without '--', '-' -> '_')");
  for (const auto& p : methods::parameter_table()) {
    const std::string name = p.cli_option().substr(2), help = parameter_help(p);
    if (p.kind == methods::ParameterKind::flag)
      params.add_options()(name.c_str(), help.c_str());
    else
      params.add_options()(name.c_str(), po::value<std::string>(), help.c_str());
  }
  d.add(params);
  d.add_options()
    ("max-kernel-memory", po::value(&max_kernel_memory)->default_value(0), "exact kernel map: MiB per rank allowed (0: 50% of MemAvailable / ranks per node)")
    ("select-by", po::value(&c.select_by)->default_value("none"),
     "none | cv: choose the --grid candidates (default: the method's paper grid) by k-fold cross-validation on the labeled samples of each split; the choice is in the report's info.selection")
    ("cv-folds", po::value(&c.cv_folds)->default_value(5), "folds k of --select-by cv and --method auto (at most the number of labeled samples)")
    ("groups", po::value<int>()->default_value(1),
     "G: --method auto scores its candidates in G groups of ranks, each holding a copy of every row (one scaling's candidates per group; the same choice, and the same score of every candidate the race does not stop, as G = 1)")
    ("auto-race", po::value<std::string>()->default_value("on"),
     "on | off: --method auto stops scoring a candidate once it can no longer beat the default family (exact: the same choice and scores); off scores every candidate on every fold")
    ("grid", po::value(&grid)->composing(),
     "NAME=v1,v2,... candidates for --select-by cv, repeatable (NAME as in job files: alpha, alpha_u, sigma_scale, sigma2, knn, sigma_s, mu_scale, ...). "
     "Paper grids: rbf kernels sigma_scale 1e-3..1e3, m-ssgda lambda 1e-3..1e3, sl-lda/sl-lda-wls alpha_u = 1/(1+l), l = 1e-9..1e9")
    ("report", po::value(&c.report), "JSON report file")
    ("quiet,q", "no progress output");
  if (!evaluate)
    d.add_options()("cv-table", po::value(&c.cv_table),
                    "CSV of every candidate of --method auto or --select-by cv: its parameters, m, pooled and per-fold "
                    "accuracy, and the chosen one with the rule that chose it");
  if (evaluate)
    d.add_options()("splits", po::value(&c.splits)->default_value(10), "number of random splits R");
  else
    d.add_options()
      ("model", po::value(&c.model), "model file to write (Boost archive)")
      ("embedding", po::value(&c.embedding), "embedding of every sample: .csv, .npy (parallel MPI-IO) or .h5 (parallel HDF5, data set /embedding)")
      ("graph-out", po::value(&c.graph_out), "kNN lists of the transductive samples the graph was built from, as HDF5 (/knn/index n x k int64, /knn/dist2 n x k float64), for --graph-in; methods with a kNN graph")
      ("graph-in", po::value(&c.graph_in), "kNN lists (HDF5, as --graph-out writes or computed elsewhere) of the transductive samples in file order, used instead of the kNN search; its provenance (data, split, preprocessing, distance: --graph-out records it) must match this fit, and a sample of its distances is recomputed (a file without provenance: a warning); methods with a kNN graph")
      ("soft-labels", po::value(&c.soft_labels), "propagated soft labels F of the transductive samples in file order (c columns, then the outlier class): .csv, .npy or .h5 (data set /soft_labels); soda, ksoda, lp, sl-lda, sl-lda-wls");
  // clang-format on
  return d;
}

/// A parameter option's text as JSON for methods::set_parameter: a number when the whole
/// text parses as one (a whole number as an integer), else the text (a name, or a value that
/// set_parameter then refuses naming the option). Local.
nlohmann::json option_value(const methods::ParameterSpec& p, const std::string& text) {
  if (p.kind == methods::ParameterKind::choice) return text;
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0') return text;
  if (std::isfinite(x) && x == std::floor(x) && std::abs(x) < 9e15) return static_cast<int64_t>(x);
  return x;
}

/// The options PETSc reads only inside PetscFinalize (PETSc 3.18 pinit.c: reports, dumps,
/// the log viewers), i.e. after warn_unused_petsc_options looks: they are PETSc's own, used.
const char* const kReadAtFinalize[] = {
    "-citations", "-get_total_flops", "-log", "-log_all", "-log_mpe", "-log_summary", "-log_view", "-malloc_debug",
    "-malloc_dump", "-malloc_info", "-malloc_test", "-malloc_view", "-memory_view", "-mpi_linear_solver_server",
    "-mpidump", "-no_signal_handler", "-nox", "-nox_warning", "-objects_dump", "-options_left", "-options_view",
    "-saw_options", "-tellmycell", "-textbelt", "-x_virtual"};

/// Warns (rank 0, stderr, one line per option) about PETSc options nobody queried: a
/// misspelled -lp_ksp_typo would otherwise be ignored without a word. Options that only
/// another method or path reads are reported too (they had no effect on this run); the ones
/// PETSc reads at finalize (kReadAtFinalize) are not. Shown with --quiet as well (a
/// warning, not progress). Local.
void warn_unused_petsc_options(int rank) {
  for (const char* name : kReadAtFinalize) {
    PetscBool set = PETSC_FALSE;
    PetscOptionsHasName(nullptr, nullptr, name, &set);  // marks it used when it is there
  }
  if (rank != 0) return;
  PetscInt n = 0;
  char** names = nullptr;
  char** values = nullptr;
  if (PetscOptionsLeftGet(nullptr, &n, &names, &values) != 0) return;
  for (PetscInt i = 0; i < n; ++i)
    std::fprintf(stderr, "ssdr: warning: PETSc option -%s%s%s was not used by this run (misspelled?)\n", names[i],
                 values[i] ? " " : "", values[i] ? values[i] : "");
  PetscOptionsLeftRestore(nullptr, &n, &names, &values);
}

/// A word that is no option (a stray "foo", a value without its option) is an error, not
/// silently dropped. Replicated (every rank parses the same argv).
void reject_positional(const po::parsed_options& parsed) {
  for (const auto& o : parsed.options)
    if (o.position_key >= 0 || o.string_key.empty())
      SSDR_REQUIRE(false, "unexpected argument '" + (o.original_tokens.empty() ? std::string() : o.original_tokens.front()) +
                              "': every ssdr argument is an option (--name value); PETSc options start with a single '-'");
}

/// Parses a command's options into `vm`: no stray words, --help printed (with `help_tail`)
/// instead of parsing further, required options checked, --quiet applied. Returns true when
/// --help was asked for. Replicated (every rank parses the same argv).
bool parse_command(const std::vector<std::string>& args, const po::options_description& d, po::variables_map& vm,
                   const std::string& help_tail = "", const po::positional_options_description* positional = nullptr) {
  const po::parsed_options parsed = positional != nullptr
                                        ? po::command_line_parser(args).options(d).positional(*positional).run()
                                        : po::command_line_parser(args).options(d).run();
  if (positional == nullptr) reject_positional(parsed);
  po::store(parsed, vm);
  if (vm.count("help")) {
    std::ostringstream s;
    s << d << help_tail;
    print_help(s.str());
    return true;
  }
  po::notify(vm);
  set_quiet(vm.count("quiet") > 0);
  return false;
}

/// The parameter options the user gave (methods::parameter_table()), each with its value
/// checked against its kind by option_value and its spelling (--alpha-u) for messages.
/// Replicated.
std::vector<driver::ParameterSetting> parameter_settings(const po::variables_map& vm) {
  std::vector<driver::ParameterSetting> settings;
  for (const auto& p : methods::parameter_table()) {
    const std::string option = p.cli_option();
    if (!vm.count(option.substr(2))) continue;
    settings.push_back({p.name,
                        p.kind == methods::ParameterKind::flag ? nlohmann::json(p.switch_value)
                                                               : option_value(p, vm[option.substr(2)].as<std::string>()),
                        option});
  }
  return settings;
}

/// The split options' checks shared by every method and auto. Replicated.
void check_split_options(driver::FitCommand& c, const po::variables_map& vm, bool evaluate) {
  const bool has_split = vm.count("split") > 0, has_p = vm.count("labeled-per-class") > 0;
  // Neither: the data's own labeled and unlabeled rows (data::roles_from_labels); evaluate
  // draws random splits and needs p.
  SSDR_REQUIRE(!(has_split && has_p), "give either --split FILE or --labeled-per-class P, not both");
  SSDR_REQUIRE(!evaluate || has_p, "evaluate draws random splits: give --labeled-per-class P");
  c.roles_from_data = !has_split && !has_p;
  SSDR_REQUIRE(c.plot.empty() || io::has_extension(c.plot, ".png") || io::has_extension(c.plot, ".svg"),
               "--plot " + c.plot + ": expected a name ending in .png or .svg");
  SSDR_REQUIRE(has_split || has_p || (!vm.count("unlabeled-per-class") && !vm.count("transductive-fraction")),
               "--unlabeled-per-class/--transductive-fraction go with --labeled-per-class");
  if (has_split)
    SSDR_REQUIRE(!vm.count("unlabeled-per-class") && !vm.count("transductive-fraction"),
                 "--unlabeled-per-class/--transductive-fraction go with --labeled-per-class, not --split");
  SSDR_REQUIRE(!(vm.count("unlabeled-per-class") && vm.count("transductive-fraction")),
               "--unlabeled-per-class and --transductive-fraction are mutually exclusive");
}

/// The report's record of the split options. Local.
void record_split(driver::FitCommand& c) {
  c.config.parameters["labeled_per_class"] = c.split.labeled_per_class;
  c.config.parameters["unlabeled_per_class"] = c.split.unlabeled_per_class;
  c.config.parameters["transductive_fraction"] = c.split.transductive_fraction;
  c.config.parameters["seed"] = c.split.seed;
  c.config.parameters["split_file"] = c.split_file;
}

/// `fit|evaluate --method auto`: the options auto takes (driver::auto_accepts), checked and
/// recorded by driver::make_auto_config; what auto chooses itself is refused. Replicated.
driver::FitCommand parse_auto_fit(driver::FitCommand& c, const po::variables_map& vm,
                                  const std::vector<std::string>& grid, double max_kernel_memory, bool evaluate) {
  const std::vector<driver::ParameterSetting> settings = parameter_settings(vm);
  SSDR_REQUIRE(c.select_by == "none", "--select-by cv: --method auto cross-validates already; drop --select-by");
  SSDR_REQUIRE(grid.empty(), "--grid: --method auto chooses among its own candidates (docs/methods-guide.md); give "
                             "--method NAME --select-by cv --grid ... to choose among yours");
  for (const char* option : {"graph-in", "graph-out", "soft-labels"})
    SSDR_REQUIRE(!vm.count(option), std::string("--") + option + ": not with --method auto (the chosen method may " +
                                        "build no kNN graph or propagate no labels); give --method NAME");
  SSDR_REQUIRE(c.config.method_options.dim >= 0, "--dim must be >= 0");
  SSDR_REQUIRE(max_kernel_memory >= 0, "--max-kernel-memory must be >= 0");
  const std::string race = vm["auto-race"].as<std::string>();
  SSDR_REQUIRE(race == "on" || race == "off", "--auto-race: expected on or off, got '" + race + "'");
  const int groups = vm["groups"].as<int>();
  SSDR_REQUIRE(groups >= 1, "--groups: expected an integer >= 1, got " + std::to_string(groups));  // <= ranks: at the selection
  c.config = driver::make_auto_config(settings, c.config.method_options.dim, c.split.seed, max_kernel_memory,
                                      c.cv_folds, race == "on", groups);
  check_split_options(c, vm, evaluate);
  record_split(c);
  return c;
}

/// Parses `fit`/`evaluate` options. Every rank parses the same argv, so errors are
/// replicated (collective).
driver::FitCommand parse_fit(const std::vector<std::string>& args, bool evaluate, bool& help) {
  driver::FitCommand c;
  std::string format;
  double max_kernel_memory = 0;
  std::vector<std::string> grid;
  auto desc = fit_options(c, format, max_kernel_memory, grid, evaluate);
  po::variables_map vm;
  help = parse_command(args, desc, vm, "\nmethods:\n" + methods_help());
  if (help) return c;
  c.format = read_data_options(vm, format, c.read);
  c.read.native_types = true;  // the fit reads uint8/float32 rows through TypedRows
  const int64_t seed = vm["seed"].as<int64_t>();  // an unsigned option would take -1 as 2^64 - 1
  SSDR_REQUIRE(seed >= 0, "--seed: expected an integer >= 0, got " + std::to_string(seed));
  c.split.seed = static_cast<uint64_t>(seed);
  for (const char* option : {"report", "model", "embedding", "soft-labels", "split", "data", "graph-in", "graph-out", "plot",
                             "cv-table"})
    SSDR_REQUIRE(!vm.count(option) || !vm[option].as<std::string>().empty(),
                 std::string("--") + option + ": expected a file name, got an empty string");
  if (driver::is_auto(c.config.method)) return parse_auto_fit(c, vm, grid, max_kernel_memory, evaluate);
  const auto& info = methods::find_method(c.config.method);
  SSDR_REQUIRE(vm["auto-race"].defaulted(), "--auto-race: expected --method auto (it races auto's candidates)");
  SSDR_REQUIRE(vm["groups"].defaulted(), "--groups: expected --method auto (it spreads auto's candidates; a sweep's "
                                         "groups are ssdr experiment --groups)");
  SSDR_REQUIRE(c.cv_table.empty() || c.select_by == "cv",
               "--cv-table: expected --method auto or --select-by cv (a table of the candidates they score)");
  if (!info.projects)  // lp: a transductive classifier, nothing to save or embed
    for (const char* option : {"model", "embedding", "plot"})
      SSDR_REQUIRE(!vm.count(option), std::string("--") + option + ": method " + info.name +
                                          " learns no projection, so it has no " + option + " to write");
  // The method's paper preprocessing and kernel with every parameter option the user gave
  // over them (driver::make_fit_config, as the library's Estimator builds it): one the method
  // does not use is an error, and each value goes through the same check as job files and
  // --grid (methods::set_parameter): --alpha-u 1.5 or --beta -1 fail there.
  const std::vector<driver::ParameterSetting> settings = parameter_settings(vm);
  SSDR_REQUIRE(c.config.method_options.dim >= 0, "--dim must be >= 0");
  SSDR_REQUIRE(max_kernel_memory >= 0, "--max-kernel-memory must be >= 0");
  c.config = driver::make_fit_config(c.config.method, settings, c.config.method_options.dim, c.split.seed,
                                     max_kernel_memory);
  check_split_options(c, vm, evaluate);
  SSDR_REQUIRE(c.select_by == "none" || c.select_by == "cv",
               "--select-by: expected none or cv, got '" + c.select_by + "'");
  SSDR_REQUIRE(c.cv_folds >= 2, "--cv-folds must be at least 2, got " + std::to_string(c.cv_folds));
  SSDR_REQUIRE(grid.empty() || c.select_by == "cv", "--grid needs --select-by cv");
  for (const char* option : {"graph-in", "graph-out"}) {
    SSDR_REQUIRE(!vm.count(option) || methods::uses_parameter(info, "weight"),
                 std::string("--") + option + ": method " + info.name +
                     " builds no kNN graph; expected one of the methods with --weight (soda, ksoda, lp, tca, otca, soge, sda, ...)");
    SSDR_REQUIRE(!vm.count(option) || c.select_by == "none",
                 std::string("--") + option + ": not with --select-by cv (a saved graph serves single fits)");
  }
  SSDR_REQUIRE(c.select_by == "none" || info.projects,
               "--select-by cv: method '" + c.config.method + "' learns no projection to cross-validate");
  for (const auto& g : grid) {
    c.grid.push_back(driver::parse_grid_argument(g));
    methods::require_parameter(info, c.grid.back().first, "--grid " + c.grid.back().first);
    SSDR_REQUIRE(c.grid.back().first != "dim" || vm["dim"].defaulted(),
                 "--grid dim=...: the candidates of m; drop --dim " + std::to_string(c.config.method_options.dim) +
                     " (one m or a grid of them, not both)");
  }
  // The report's parameters: make_fit_config's (those the method uses, its kernel, m and
  // the seed) and the split.
  record_split(c);
  if (c.select_by == "cv") {
    c.config.parameters["select_by"] = "cv";
    c.config.parameters["cv_folds"] = c.cv_folds;
  }
  return c;
}

driver::TransformCommand parse_transform(const std::vector<std::string>& args, bool& help) {
  driver::TransformCommand c;
  c.read.labels_required = false;
  std::string format;
  po::options_description d("ssdr transform options");
  // clang-format off
  d.add_options()
    ("help,h", "show this help")
    ("model", po::value(&c.model)->required(), "model file from fit --model")
    ("data", po::value(&c.data)->required(), "data to project (CSV and LIBSVM with a label column unless --no-labels; NPY and HDF5 with or without labels)");
  add_data_options(d, c.read, format, false, SparseData::map);
  d.add_options()
    ("embedding", po::value(&c.embedding)->required(), "output, .csv, .npy (parallel MPI-IO) or .h5 (parallel HDF5)")
    ("quiet,q", "no progress output");
  // clang-format on
  po::variables_map vm;
  help = parse_command(args, d, vm);
  if (help) return c;
  for (const char* option : {"model", "data", "embedding"})
    SSDR_REQUIRE(!vm[option].as<std::string>().empty(), std::string("--") + option + ": expected a file name, got an empty string");
  c.format = read_data_options(vm, format, c.read);
  return c;
}

driver::PredictCommand parse_predict(const std::vector<std::string>& args, bool& help) {
  driver::PredictCommand c;
  c.read.labels_required = false;
  std::string format;
  po::options_description d("ssdr predict options (1-NN in the embedding against the fit's labeled samples, kept in the model)");
  // clang-format off
  d.add_options()
    ("help,h", "show this help")
    ("model", po::value(&c.model)->required(), "model file from fit --model (format 5 or later: older models hold no labeled samples)")
    ("data", po::value(&c.data)->required(), "data to label (CSV and LIBSVM with a label column unless --no-labels; NPY and HDF5 with or without labels); with labels the accuracy is printed");
  add_data_options(d, c.read, format, true, SparseData::map);
  d.add_options()
    ("output", po::value(&c.output)->required(), "predicted labels, one per line in file order (.npy: a 1-D int64 array)")
    ("quiet,q", "no progress output");
  // clang-format on
  po::variables_map vm;
  help = parse_command(args, d, vm);
  if (help) return c;
  for (const char* option : {"model", "data", "output"})
    SSDR_REQUIRE(!vm[option].as<std::string>().empty(), std::string("--") + option + ": expected a file name, got an empty string");
  c.format = read_data_options(vm, format, c.read);
  return c;
}

driver::ConvertCommand parse_convert(const std::vector<std::string>& args, bool& help) {
  driver::ConvertCommand c;
  std::string format;
  po::options_description d("ssdr convert options (read once in any format, then in parallel from HDF5 or NPY)");
  // clang-format off
  d.add_options()
    ("help,h", "show this help")
    ("data", po::value(&c.data)->required(), "data file to convert (any input format)");
  add_data_options(d, c.read, format, true, SparseData::none);
  d.add_options()
    ("output", po::value(&c.output)->required(), ".h5/.hdf5 (data sets /X float64 and /y, the labels by class name: integers or strings) or .npy (X float64)")
    ("labels-output", po::value(&c.labels_output), "with an .npy --output: the labels as an .npy (int64, or '<U' strings for class names)")
    ("quiet,q", "no progress output");
  // clang-format on
  po::variables_map vm;
  help = parse_command(args, d, vm);
  if (help) return c;
  for (const char* option : {"data", "output"})
    SSDR_REQUIRE(!vm[option].as<std::string>().empty(), std::string("--") + option + ": expected a file name, got an empty string");
  c.format = read_data_options(vm, format, c.read);
  return c;
}

driver::PlotCommand parse_plot(const std::vector<std::string>& args, bool& help) {
  driver::PlotCommand c;
  po::options_description d("ssdr plot EMBEDDING --output FIG.png|.svg (first two coordinates, coloured by the label column)");
  // clang-format off
  d.add_options()
    ("help,h", "show this help")
    ("embedding", po::value(&c.embedding)->required(), "embedding file: CSV written by ssdr (id,label,y1..), NPY or HDF5 (/embedding)")
    ("output", po::value(&c.output)->required(), "the figure: a name ending in .png or .svg")
    ("labels", po::value(&c.labels), "an NPY file of labels (integers, -1 unlabeled, or strings) for an NPY/HDF5 embedding")
    ("title", po::value(&c.title), "the figure's title (default: the embedding's file name)")
    ("pca", "draw the first two principal components of all m coordinates instead of y1, y2")
    ("quiet,q", "no progress output");
  // clang-format on
  po::positional_options_description pos;
  pos.add("embedding", 1);
  po::variables_map vm;
  help = parse_command(args, d, vm, "", &pos);
  if (help) return c;
  for (const char* option : {"embedding", "output"})
    SSDR_REQUIRE(!vm[option].as<std::string>().empty(), std::string("--") + option + ": expected a file name, got an empty string");
  SSDR_REQUIRE(io::has_extension(c.output, ".png") || io::has_extension(c.output, ".svg"),
               "--output " + c.output + ": expected a name ending in .png or .svg");
  c.pca = vm.count("pca") > 0;
  return c;
}

volatile std::sig_atomic_t g_world_rank = -1;

/// SIGTERM, SIGINT and SIGHUP outside `experiment` (which stops cleanly on SIGTERM instead):
/// mpiexec sends SIGTERM to the ranks that are left when one rank died (killed, out of memory,
/// its host gone) or the job was cancelled. Every rank removes the temporary files of the
/// outputs it was writing (so no "<path>.tmp.<pid>" is left behind), and rank 0 says why in one
/// line, so the job does not end with an exit status and nothing else. Async-signal-safe:
/// unlink(2), write(2) and _exit only.
extern "C" void on_terminate(int sig) {
  ssdr::io::remove_temporary_files();
  if (g_world_rank == 0) {
    static const char term[] =
        "ssdr: error: terminated by SIGTERM: another rank died (killed, out of memory or its host lost) or the job "
        "was cancelled\n";
    static const char other[] = "ssdr: error: interrupted (SIGINT or SIGHUP); no output was left half-written\n";
    const ssize_t ignored = sig == SIGTERM ? ::write(2, term, sizeof term - 1) : ::write(2, other, sizeof other - 1);
    (void)ignored;
  }
  ::_exit(128 + sig);
}

/// The first error of a write to standard output (its errno), 0 while every write succeeded.
int g_stdout_errno = 0;

/// Standard output's writer (route_standard_output): write(2) on descriptor 1, keeping the
/// reason of the first failure, which stdio itself forgets once the bytes are dropped.
extern "C" ssize_t write_standard_output(void*, const char* buf, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(1, buf + done, size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (g_stdout_errno == 0) g_stdout_errno = w < 0 ? errno : EIO;
      return done > 0 ? static_cast<ssize_t>(done) : -1;
    }
    done += static_cast<size_t>(w);
  }
  return static_cast<ssize_t>(size);
}

/// Routes stdout (ssdr's tables, help, PETSc's reports) through write_standard_output, with
/// stdio's buffering (by lines on a terminal), so that check_standard_output can name why a
/// write failed. glibc's stdout is an assignable variable; left as it is if fopencookie fails.
void route_standard_output() {
  cookie_io_functions_t io{nullptr, write_standard_output, nullptr, nullptr};
  FILE* f = fopencookie(nullptr, "w", io);
  if (f == nullptr) return;
  std::fflush(stdout);
  std::setvbuf(f, nullptr, ::isatty(1) ? _IOLBF : _IOFBF, BUFSIZ);
  stdout = f;
}

/// Whether everything the ranks wrote on standard output reached it: a full disk or a closed
/// descriptor (`ssdr methods --markdown > /dev/full`) must not end with exit status 0. Flushes
/// stdout; the lowest rank whose writes failed prints one line ("cannot write standard output:
/// No space left on device") unless `code` already reports an error, and every rank returns a
/// non-zero code when any rank's writes failed. A failed stdout then writes to /dev/null, so
/// that PETSc's finalize (which flushes it too) does not fail a second time. Collective over
/// MPI_COMM_WORLD.
int check_standard_output(int code) {
  errno = 0;
  int err = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) err = g_stdout_errno ? g_stdout_errno : errno ? errno : EIO;
  if (err != 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, 1);
      ::close(null);
    }
    std::clearerr(stdout);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int mine = err != 0 ? rank : size;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size) return code;
  if (rank == first && code == 0) {
    std::fprintf(stderr, "ssdr: error: cannot write standard output: %s\n", std::strerror(err));
    std::fflush(stderr);
  }
  return code != 0 ? code : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS on its generic kernels (a CPU model it does not know): start again with the
  // kernels the CPU's features call for (ssdr/core/blas_kernels.hpp). Before anything else.
  ssdr::reexec_with_openblas_coretype(argv);
  route_standard_output();
  // ssdr's words (the command and its double-dash options) and PETSc's options, wherever
  // they stand on the command line.
  std::vector<std::string> ssdr_args;
  std::vector<char*> petsc_argv;
  split_arguments(argc, argv, ssdr_args, petsc_argv);
  int petsc_argc = static_cast<int>(petsc_argv.size());
  petsc_argv.push_back(nullptr);
  char** pargv = petsc_argv.data();
  // MPI first, so a bad -options_file can be refused with one line before PETSc reads it
  // (PETSc would read /dev/zero until memory runs out, wait on a FIFO forever, or print its
  // traceback for a missing file). PETSc then leaves MPI_Finalize to us.
  MPI_Init(&argc, &argv);
  {
    int wrank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    const std::string bad = check_petsc_file_options(petsc_argv);
    if (!bad.empty()) {  // argv is the same on every rank: every rank leaves here
      if (wrank == 0) std::fprintf(stderr, "ssdr: error: %s\n", bad.c_str());
      MPI_Finalize();
      return 2;
    }
  }
  // SLEPc and PETSc, the progress clock, and PETSc errors as one-line ssdr::Error messages
  // (ssdr::initialize, as the Python module starts them).
  try {
    ssdr::initialize(&petsc_argc, &pargv);
  } catch (const Error& e) {
    std::fprintf(stderr, "ssdr: error: %s\n", e.what());
    MPI_Finalize();
    return 1;
  }
  {
    int wrank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    g_world_rank = wrank;
    driver::record_provenance(argc, argv, MPI_COMM_WORLD);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) std::signal(sig, on_terminate);
  }
  MPI_Comm comm = PETSC_COMM_WORLD;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int code = 0;
  try {
    if (const char* every = std::getenv("SSDR_PROGRESS_EVERY")) {  // the same on every rank (mpiexec passes it)
      char* end = nullptr;
      const double seconds = std::strtod(every, &end);
      SSDR_REQUIRE(*every != '\0' && end != nullptr && *end == '\0' && std::isfinite(seconds) && seconds >= 0,
                   std::string("SSDR_PROGRESS_EVERY: expected a number of seconds >= 0, got '") + every + "'");
      set_progress_interval(seconds);
    }
    std::string command = ssdr_args.empty() ? "" : ssdr_args.front();
    std::vector<std::string> rest(ssdr_args.begin() + (ssdr_args.empty() ? 0 : 1), ssdr_args.end());
    if (command == "help" && !rest.empty()) {  // `ssdr help fit` is `ssdr fit --help`
      SSDR_REQUIRE(rest.size() == 1, "unexpected argument '" + rest.back() + "': ssdr help takes one command name");
      command = rest.front();
      rest.assign(1, "--help");
    }
    bool help = false;
    // PETSc's own -help (its options, printed by SlepcInitialize) without a command is a
    // request for help too, not a missing command.
    PetscBool petsc_help = PETSC_FALSE;
    if (command.empty()) PetscOptionsHasName(nullptr, nullptr, "-help", &petsc_help);
    if (command == "" || command == "--help" || command == "-h" || command == "help") {
      SSDR_REQUIRE(rest.empty(), "unexpected argument '" + (rest.empty() ? std::string() : rest.front()) + "': ssdr " +
                                     command + " takes no other argument (ssdr COMMAND --help for a command's options)");
      const bool asked = !command.empty() || petsc_help;
      if (rank == 0) std::fputs(kUsage, asked ? stdout : stderr);  // no command at all: an error
      code = asked ? 0 : 2;
    } else if (command == "--version" || command == "version") {
      SSDR_REQUIRE(rest.empty(), "unexpected argument '" + (rest.empty() ? std::string() : rest.front()) + "': ssdr " +
                                     command + " takes no other argument");
      if (rank == 0) std::fputs(version_text().c_str(), stdout);
    } else if (command == "methods") {
      // At most one of --markdown and --help; the message names the first other argument.
      const auto known = [](const std::string& a) { return a == "--help" || a == "-h" || a == "--markdown"; };
      const auto stray = std::find_if(rest.begin(), rest.end(), [&](const std::string& a) { return !known(a); });
      SSDR_REQUIRE(stray == rest.end(), "unexpected argument '" + (stray == rest.end() ? std::string() : *stray) +
                                            "': ssdr methods takes only --markdown (the reference page docs/methods.md)");
      SSDR_REQUIRE(rest.size() <= 1, "unexpected argument '" + (rest.size() > 1 ? rest[1] : std::string()) +
                                         "': ssdr methods takes one of --markdown and --help");
      const bool asked = rest.size() == 1 && (rest.front() == "--help" || rest.front() == "-h");
      const bool markdown = rest.size() == 1 && rest.front() == "--markdown";
      if (rank == 0 && asked)
        std::fputs("usage: ssdr methods [--markdown]\n\nLists the methods: name, what it computes, its paper and its "
                   "parameters.\n  --markdown  the reference page of every method and parameter (docs/methods.md)\n"
                   "  -h, --help  show this help\n",
                   stdout);
      else if (rank == 0)
        std::fputs(markdown ? methods_markdown().c_str() : methods_help().c_str(), stdout);
    } else if (command == "fit" || command == "evaluate") {
      auto c = parse_fit(rest, command == "evaluate", help);
      if (!help) code = command == "fit" ? driver::run_fit(c, comm) : driver::run_evaluate(c, comm);
    } else if (command == "experiment") {
      driver::ExperimentOptions eo;
      po::options_description d("ssdr experiment JOB.yaml options");
      d.add_options()("help,h", "show this help")("job", po::value(&eo.job_file)->required(), "YAML job file")(
          "groups", po::value(&eo.groups)->default_value(1), "run G configurations at once on G sub-communicators")(
          "output", po::value(&eo.output), "output directory (overrides the job's)")("quiet,q", "no progress output");
      po::positional_options_description pos;
      pos.add("job", 1);
      po::variables_map vm;
      po::store(po::command_line_parser(rest).options(d).positional(pos).run(), vm);
      if (vm.count("help")) {
        std::ostringstream s;
        s << d << "\nJob file format: jobs/experiments/README.md\n";
        print_help(s.str());
      } else {
        po::notify(vm);
        set_quiet(vm.count("quiet") > 0);
        code = driver::run_experiment(eo, comm);
      }
    } else if (command == "transform") {
      auto c = parse_transform(rest, help);
      if (!help) code = driver::run_transform(c, comm);
    } else if (command == "predict") {
      auto c = parse_predict(rest, help);
      if (!help) code = driver::run_predict(c, comm);
    } else if (command == "convert") {
      auto c = parse_convert(rest, help);
      if (!help) code = driver::run_convert(c, comm);
    } else if (command == "plot") {
      auto c = parse_plot(rest, help);
      if (!help) code = driver::run_plot(c, comm);
    } else {
      throw Error("unknown command '" + command +
                      "'; expected fit, evaluate, transform, predict, convert, plot, experiment or methods",
                  __FILE__, __LINE__, true);
    }
  } catch (const po::error& e) {
    // Option errors are the same on every rank (same argv).
    if (rank == 0) std::fprintf(stderr, "ssdr: error: %s\n", e.what());
    code = 2;
  } catch (const Error& e) {
    abort_unless_collective(e, MPI_COMM_WORLD);  // raised on some ranks only: the others would hang
    if (rank == 0) std::fprintf(stderr, "ssdr: error: %s\n", e.what());
    code = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ssdr: error: %s (rank %d)\n", e.what(), rank);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (code == 0) warn_unused_petsc_options(rank);  // after an error the rest never ran
  code = check_standard_output(code);
  // PETSc's finalize writes -log_view and similar reports; a failure there (an unwritable
  // -log_view :path) gets its one line too instead of a bare exit status.
  const int fin = ssdr::finalize();
  if (fin != 0) {
    std::fprintf(stderr, "ssdr: error: %s (rank %d)\n", petsc_error_text(static_cast<int>(fin), "SlepcFinalize: writing the -log_view or other PETSc reports").c_str(), rank);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);  // PETSc stopped midway: the ranks may be out of step
  }
  code = check_standard_output(code);  // again: PETSc's finalize writes -log_view on stdout
  MPI_Finalize();
  return code;
}
