// ssdr command line: parses and validates the options, then calls the driver. PETSc/SLEPc
// options (-log_view, -lp_ksp_type gmres, -tr_eps_type scalapack, ...) may follow the ssdr
// options; they are handed to SlepcInitialize untouched.
#include <algorithm>
#include <slepcsys.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/driver/commands.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/driver/experiment.hpp"

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
    "  experiment run a YAML job: protocols, parameter grids, splits, groups, checkpoints, plots\n"
    "  methods    list the methods\n"
    "\n"
    "Run 'ssdr <command> --help' for the options of a command. PETSc/SLEPc options go after the\n"
    "ssdr options, e.g. -lp_ksp_type gmres -tr_eps_type lapack -log_view.\n";

bool is_petsc_option(const char* a) {
  if (std::strcmp(a, "-q") == 0 || std::strcmp(a, "-h") == 0) return false;  // ssdr's short options
  return a[0] == '-' && a[1] != '-' && a[1] != '\0' && !(a[1] >= '0' && a[1] <= '9') && a[1] != '.';
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

/// Kernel options as parsed (the method's default kernel fills what the user left out).
struct KernelArgs {
  std::string kernel = "default";
  kernels::KernelOptions o;
};

/// The options of `fit` (evaluate = false) or `evaluate`, bound to c and to the strings that
/// parse_fit converts and validates afterwards (format, scaling, weight, normalize, kernel).
/// Not collective.
po::options_description fit_options(driver::FitCommand& c, std::string& format, std::string& scaling,
                                    std::string& weight, std::string& knn_method, std::string& normalize, KernelArgs& k,
                                    std::vector<std::string>& grid, bool evaluate) {
  po::options_description d(evaluate ? "ssdr evaluate options" : "ssdr fit options");
  auto& mo = c.config.method_options;
  // clang-format off
  d.add_options()
    ("help,h", "show this help")
    ("method", po::value(&c.config.method)->required(), ("method name: " + methods::method_names()).c_str())
    ("data", po::value(&c.data)->required(), "data file (CSV, LIBSVM[.gz]) or IDX file/directory")
    ("format", po::value(&format)->default_value("auto"), "csv | libsvm | idx | auto")
    ("split", po::value(&c.split_file), "split file: one role per line (labeled/unlabeled/unseen)")
    ("labeled-per-class", po::value(&c.split.labeled_per_class), "p labeled samples per class (random split)")
    ("unlabeled-per-class", po::value(&c.split.unlabeled_per_class), "q unlabeled samples per class; rest unseen")
    ("transductive-fraction", po::value(&c.split.transductive_fraction), "fraction F of each class in the transductive set; rest unseen")
    ("seed", po::value(&c.split.seed)->default_value(0), "random seed of the split")
    ("dim", po::value(&mo.dim)->default_value(0), "projected dimension m (0: c-1)")
    ("knn", po::value(&mo.graph.k)->default_value(8), "neighbors k of the graph (default: the method's paper graph: 8 soda/lp, 5 tca/otca/soge/sda)")
    ("knn-method", po::value(&knn_method)->default_value("exact"),
     "kNN backend of the graph: exact (every pair, single-precision GEMM filter, exact re-ranking) | nndescent "
     "(approximate, distributed NN-descent seeded by --seed; recall estimated in the report's knn_recall)")
    ("knn-recall-sample", po::value(&mo.graph.knn_recall_sample)->default_value(1000),
     "rows whose exact lists estimate the approximate graph's recall@k (0: skip)")
    ("weight", po::value(&weight)->default_value("heat"), "graph weights: heat | cosine | binary | adaptive (default: the method's: adaptive for soge, binary for sda, heat otherwise)")
    ("sigma-s", po::value(&mo.graph.sigma_s)->default_value(0), "heat width by soda-nie2009 eq. (42), sigma = sqrt(-dbar/ln s) (default: the method's rule: eq. (42) with s = 1e-3/k for soda/lp, sigma^2 = dbar for tca/otca)")
    ("alpha-u", po::value(&mo.propagation.alpha_unlabeled)->default_value(0.99), "propagation alpha on unlabeled samples")
    ("mu-scale", po::value(&mo.mu_scale)->default_value(0.1), "SODA/ODA: mu = R * largest diagonal of Sw")
    ("alpha", po::value(&mo.alpha), "alpha of TCA/OTCA/SOGE/SDA; SL-LDA: relative to tr(St)/d (1e-3) (default: the paper value)")
    ("lambda", po::value(&mo.lambda), "M-SSGDA: lambda of the manifold term, ssgda-zhang-yeung eq. (15) (default c/(n * mean degree))")
    ("beta", po::value(&mo.beta), "beta of TCA/OTCA/SDA (default: the paper's)")
    ("gamma", po::value(&mo.gamma), "gamma of OTCA (default: the paper's)")
    ("mu", po::value(&mo.mu), "SOGE: mu on the labeled samples (default 100)")
    ("recursions", po::value(&mo.recursions)->default_value(1), "SOGE: recursive projections K (W is d x Kc)")
    ("eigenvalue-scaling", "SL-LDA: scale the columns of V by Lambda^(1/2) (implies --normalize metric)")
    ("normalize", po::value(&normalize)->default_value("unit"),
     "length of the projection columns: unit | metric (w'(St + eps I)w = 1 for LDA/GDA/SDA/SL-LDA/SSGDA's GDA); "
     "TCA keeps its constraint's scale (metric) unless given")
    ("scaling", po::value(&scaling)->default_value("none"), "none | minmax | standardize | global")
    ("pca-energy", po::value(&c.config.preprocess.pca_energy)->default_value(-1), "PCA variance fraction in (0,1] (default: drop only the null space)")
    ("no-pca", "center only, no PCA")
    ("kernel", po::value(&k.kernel)->default_value("default"), "none | linear | poly | rbf (default: the method's, e.g. ksoda poly, gda rbf)")
    ("degree", po::value(&k.o.degree)->default_value(3), "polynomial kernel (x'y + 1)^p degree p")
    ("sigma2", po::value(&k.o.sigma2)->default_value(0), "RBF exp(-|x-y|^2/sigma2) (0: mean pairwise squared distance)")
    ("sigma-scale", po::value(&k.o.sigma_scale)->default_value(0), "RBF: sigma = S * mean pairwise distance, overrides --sigma2 (0: unused)")
    ("landmarks", po::value(&k.o.landmarks)->default_value(0), "Nystrom landmarks r (0: exact n x n kernel map)")
    ("landmark-seeding", po::value(&k.o.landmark_seeding)->default_value("uniform"), "uniform | kmeans++ (seeded by --seed)")
    ("max-kernel-memory", po::value(&k.o.max_memory_mib)->default_value(0), "exact kernel map: MiB per rank allowed (0: 50% of MemAvailable / ranks per node)")
    ("select-by", po::value(&c.select_by)->default_value("none"),
     "none | cv: choose the --grid candidates (default: the method's paper grid) by k-fold cross-validation on the labeled samples of each split; the choice is in the report's info.selection")
    ("cv-folds", po::value(&c.cv_folds)->default_value(5), "folds k of --select-by cv (at most the number of labeled samples)")
    ("grid", po::value(&grid)->composing(),
     "NAME=v1,v2,... candidates for --select-by cv, repeatable (NAME as in job files: alpha, alpha_u, sigma_scale, sigma2, knn, sigma_s, mu_scale, ...). "
     "Paper grids: rbf kernels sigma_scale 1e-3..1e3, m-ssgda lambda 1e-3..1e3, sl-lda/sl-lda-wls alpha_u = 1/(1+l), l = 1e-9..1e9")
    ("report", po::value(&c.report), "JSON report file")
    ("quiet,q", "no progress output");
  if (evaluate)
    d.add_options()("splits", po::value(&c.splits)->default_value(10), "number of random splits R");
  else
    d.add_options()
      ("model", po::value(&c.model), "model file to write (Boost archive)")
      ("embedding", po::value(&c.embedding), "embedding of every sample, .csv or .npy");
  // clang-format on
  return d;
}

/// Warns (rank 0, stderr, one line per option) about PETSc options nobody queried: a
/// misspelled -lp_ksp_typo would otherwise be ignored without a word. Options that only
/// another method or path reads are reported too (they had no effect on this run). Shown
/// with --quiet as well (a warning, not progress). Local.
void warn_unused_petsc_options(int rank) {
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

/// Parses `fit`/`evaluate` options. Every rank parses the same argv, so errors are
/// replicated (collective).
driver::FitCommand parse_fit(const std::vector<std::string>& args, bool evaluate, bool& help) {
  driver::FitCommand c;
  std::string format, scaling, weight, knn_method, normalize;
  KernelArgs kernel;
  std::vector<std::string> grid;
  auto desc = fit_options(c, format, scaling, weight, knn_method, normalize, kernel, grid, evaluate);
  po::variables_map vm;
  const po::parsed_options parsed = po::command_line_parser(args).options(desc).run();
  reject_positional(parsed);
  po::store(parsed, vm);
  if (vm.count("help")) {
    help = true;
    std::ostringstream s;
    s << desc << "\nmethods:\n" << methods_help();
    ssdr::say(s.str());
    return c;
  }
  po::notify(vm);
  set_quiet(vm.count("quiet") > 0);
  c.format = io::parse_format(format);
  // The method's paper preprocessing unless the user chose one.
  const auto& info = methods::find_method(c.config.method);
  if (!info.projects)  // lp: a transductive classifier, nothing to save or embed
    for (const char* option : {"model", "embedding"})
      SSDR_REQUIRE(!vm.count(option), std::string("--") + option + ": method " + info.name +
                                          " learns no projection, so it has no " + option + " to write");
  if (vm["scaling"].defaulted()) scaling = data::to_string(info.preprocess.scaling);
  if (vm["pca-energy"].defaulted())
    c.config.preprocess.pca_energy = info.preprocess.pca_energy;
  else
    SSDR_REQUIRE(c.config.preprocess.pca_energy > 0 && c.config.preprocess.pca_energy <= 1,
                 "--pca-energy must be in (0, 1], got " + std::to_string(c.config.preprocess.pca_energy));
  SSDR_REQUIRE(c.config.method_options.recursions >= 1,
               "--recursions must be at least 1, got " + std::to_string(c.config.method_options.recursions));
  c.config.preprocess.scaling = data::parse_scaling(scaling);
  c.config.preprocess.pca = vm.count("no-pca") == 0 && info.preprocess.pca;
  c.config.method_options.eigenvalue_scaling = vm.count("eigenvalue-scaling") > 0;
  c.config.method_options.normalization = methods::parse_normalization(normalize);
  c.config.method_options.normalization_given = !vm["normalize"].defaulted();
  c.config.method_options.knn_given = !vm["knn"].defaulted();
  c.config.method_options.weight_given = !vm["weight"].defaulted();
  // The method's paper kernel unless the user chose one with --kernel.
  kernel.o.type = vm["kernel"].defaulted() ? info.kernel.type : kernels::parse_kernel(kernel.kernel);
  if (vm["degree"].defaulted()) kernel.o.degree = info.kernel.degree;
  if (vm["sigma2"].defaulted()) kernel.o.sigma2 = info.kernel.sigma2;
  kernel.o.seed = c.split.seed;
  SSDR_REQUIRE(kernel.o.degree > 0, "--degree must be positive");
  SSDR_REQUIRE(kernel.o.sigma2 >= 0, "--sigma2 must be >= 0 (0: mean pairwise squared distance)");
  SSDR_REQUIRE(kernel.o.landmarks >= 0, "--landmarks must be >= 0 (0: exact kernel map)");
  SSDR_REQUIRE(kernel.o.max_memory_mib >= 0, "--max-kernel-memory must be >= 0");
  SSDR_REQUIRE(kernel.o.sigma_scale >= 0, "--sigma-scale must be >= 0 (0: unused)");
  SSDR_REQUIRE(kernel.o.landmark_seeding == "uniform" || kernel.o.landmark_seeding == "kmeans++",
               "--landmark-seeding: expected uniform or kmeans++, got '" + kernel.o.landmark_seeding + "'");
  c.config.method_options.graph.weight = graph::parse_weight(weight);
  c.config.method_options.graph.knn_method = graph::parse_knn_method(knn_method);
  c.config.method_options.graph.knn_seed = static_cast<uint64_t>(c.split.seed);
  const bool has_split = vm.count("split") > 0, has_p = vm.count("labeled-per-class") > 0;
  SSDR_REQUIRE(has_split != has_p, "give either --split FILE or --labeled-per-class P");
  if (has_split)
    SSDR_REQUIRE(!vm.count("unlabeled-per-class") && !vm.count("transductive-fraction"),
                 "--unlabeled-per-class/--transductive-fraction go with --labeled-per-class, not --split");
  SSDR_REQUIRE(!(vm.count("unlabeled-per-class") && vm.count("transductive-fraction")),
               "--unlabeled-per-class and --transductive-fraction are mutually exclusive");
  SSDR_REQUIRE(c.config.method_options.graph.k >= 1, "--knn must be at least 1");
  // Every parameter option the user gave: one the method does not use is an error, not a
  // silently ignored value; a numeric one goes through the same range check as job files and
  // --grid (driver::set_parameter): --alpha-u 1.5 or --beta -1 fail here, naming the option.
  for (const char* option : {"knn", "knn-method", "knn-recall-sample", "weight", "sigma-s", "alpha-u", "mu-scale", "alpha", "lambda", "beta", "gamma", "mu",
                             "recursions", "eigenvalue-scaling", "kernel", "degree", "sigma2", "sigma-scale",
                             "landmarks", "landmark-seeding", "pca-energy"}) {
    if (!vm.count(option) || vm[option].defaulted()) continue;
    std::string name = option;
    std::replace(name.begin(), name.end(), '-', '_');
    methods::require_parameter(info, name, std::string("--") + option);
    const boost::any& a = vm[option].value();
    nlohmann::json value;
    if (const double* x = boost::any_cast<double>(&a)) value = *x;
    else if (const int* i = boost::any_cast<int>(&a)) value = *i;
    else if (const int64_t* l = boost::any_cast<int64_t>(&a)) value = *l;
    else continue;  // names (weight, kernel, ...) are parsed above
    driver::FitConfig probe;
    probe.method = c.config.method;
    driver::set_parameter(probe, name, value, std::string("--") + option);
  }
  SSDR_REQUIRE(c.config.method_options.dim >= 0, "--dim must be >= 0");
  SSDR_REQUIRE(c.select_by == "none" || c.select_by == "cv",
               "--select-by: expected none or cv, got '" + c.select_by + "'");
  SSDR_REQUIRE(c.cv_folds >= 2, "--cv-folds must be at least 2, got " + std::to_string(c.cv_folds));
  SSDR_REQUIRE(grid.empty() || c.select_by == "cv", "--grid needs --select-by cv");
  SSDR_REQUIRE(c.select_by == "none" || info.projects,
               "--select-by cv: method '" + c.config.method + "' learns no projection to cross-validate");
  for (const auto& g : grid) {
    c.grid.push_back(driver::parse_grid_argument(g));
    methods::require_parameter(info, c.grid.back().first, "--grid " + c.grid.back().first);
  }
  auto& mo = c.config.method_options;
  c.config.parameters = {{"method", c.config.method},
                         {"dim", mo.dim},
                         // the graph actually built is in the report's info.graph
                         {"knn", mo.knn_given ? nlohmann::json(mo.graph.k) : nlohmann::json("default")},
                         {"knn_method", knn_method},
                         {"knn_recall_sample", mo.graph.knn_recall_sample},
                         {"weight", mo.weight_given ? nlohmann::json(weight) : nlohmann::json("default")},
                         {"sigma_s", !vm["sigma-s"].defaulted() ? nlohmann::json(mo.graph.sigma_s) : nlohmann::json("default")},
                         {"alpha_u", mo.propagation.alpha_unlabeled},
                         {"mu_scale", mo.mu_scale},
                         {"alpha", vm.count("alpha") ? nlohmann::json(mo.alpha) : nlohmann::json("default")},
                         {"lambda", vm.count("lambda") ? nlohmann::json(mo.lambda) : nlohmann::json("default")},
                         {"beta", vm.count("beta") ? nlohmann::json(mo.beta) : nlohmann::json("default")},
                         {"gamma", vm.count("gamma") ? nlohmann::json(mo.gamma) : nlohmann::json("default")},
                         {"mu", vm.count("mu") ? nlohmann::json(mo.mu) : nlohmann::json("default")},
                         {"recursions", mo.recursions},
                         {"eigenvalue_scaling", mo.eigenvalue_scaling},
                         {"normalize", mo.normalization_given ? nlohmann::json(normalize) : nlohmann::json("default")},
                         {"scaling", scaling},
                         {"pca", c.config.preprocess.pca},
                         {"pca_energy", c.config.preprocess.pca_energy},
                         {"labeled_per_class", c.split.labeled_per_class},
                         {"unlabeled_per_class", c.split.unlabeled_per_class},
                         {"transductive_fraction", c.split.transductive_fraction},
                         {"seed", c.split.seed},
                         {"split_file", c.split_file},
                         {"kernel", kernels::to_json(kernel.o)}};
  if (c.select_by == "cv") {
    c.config.parameters["select_by"] = "cv";
    c.config.parameters["cv_folds"] = c.cv_folds;
  }
  return c;
}

driver::TransformCommand parse_transform(const std::vector<std::string>& args, bool& help) {
  driver::TransformCommand c;
  std::string format;
  po::options_description d("ssdr transform options");
  d.add_options()("help,h", "show this help")("model", po::value(&c.model)->required(), "model file from fit --model")(
      "data", po::value(&c.data)->required(), "data to project")("format", po::value(&format)->default_value("auto"),
                                                                 "csv | libsvm | idx | auto")(
      "embedding", po::value(&c.embedding)->required(), "output, .csv or .npy")("quiet,q", "no progress output");
  po::variables_map vm;
  const po::parsed_options parsed = po::command_line_parser(args).options(d).run();
  reject_positional(parsed);
  po::store(parsed, vm);
  if (vm.count("help")) {
    help = true;
    std::ostringstream s;
    s << d;
    ssdr::say(s.str());
    return c;
  }
  po::notify(vm);
  set_quiet(vm.count("quiet") > 0);
  c.format = io::parse_format(format);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  // ssdr arguments: argv[1..k); PETSc arguments: from the first single-dash option on.
  std::vector<std::string> ssdr_args;
  std::vector<char*> petsc_argv = {argv[0]};
  int i = 1;
  for (; i < argc && !is_petsc_option(argv[i]); ++i) ssdr_args.emplace_back(argv[i]);
  for (; i < argc; ++i) petsc_argv.push_back(argv[i]);
  int petsc_argc = static_cast<int>(petsc_argv.size());
  petsc_argv.push_back(nullptr);
  char** pargv = petsc_argv.data();
  if (SlepcInitialize(&petsc_argc, &pargv, nullptr, nullptr) != 0) {
    std::fprintf(stderr, "ssdr: error: PETSc/SLEPc initialization failed\n");
    return 1;
  }
  elapsed_since_start();  // the progress clock starts now
  // PETSc/SLEPc errors become ssdr::Error (SSDR_PETSC) with one line, not a traceback.
  PetscPushErrorHandler(reinterpret_cast<PetscErrorCode (*)(MPI_Comm, int, const char*, const char*, PetscErrorCode,
                                                            PetscErrorType, const char*, void*)>(&ssdr::petsc_error_handler),
                        nullptr);
  MPI_Comm comm = PETSC_COMM_WORLD;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int code = 0;
  try {
    const std::string command = ssdr_args.empty() ? "" : ssdr_args.front();
    std::vector<std::string> rest(ssdr_args.begin() + (ssdr_args.empty() ? 0 : 1), ssdr_args.end());
    bool help = false;
    if (command == "" || command == "--help" || command == "-h" || command == "help") {
      if (rank == 0) std::fputs(kUsage, command.empty() ? stderr : stdout);
      code = command.empty() ? 2 : 0;
    } else if (command == "--version" || command == "version") {
      if (rank == 0) std::printf("ssdr %s\n", version());
    } else if (command == "methods") {
      if (rank == 0) std::fputs(methods_help().c_str(), stdout);
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
        ssdr::say(s.str());
      } else {
        po::notify(vm);
        set_quiet(vm.count("quiet") > 0);
        code = driver::run_experiment(eo, comm);
      }
    } else if (command == "transform") {
      auto c = parse_transform(rest, help);
      if (!help) code = driver::run_transform(c, comm);
    } else {
      throw Error("unknown command '" + command + "'; expected fit, evaluate, transform, experiment or methods", __FILE__,
                  __LINE__, true);
    }
  } catch (const po::error& e) {
    // Option errors are the same on every rank (same argv).
    if (rank == 0) std::fprintf(stderr, "ssdr: error: %s\n", e.what());
    code = 2;
  } catch (const Error& e) {
    if (!e.collective()) {
      // The source location only on request (SSDR_DEBUG=1): users get the message.
      if (std::getenv("SSDR_DEBUG") != nullptr)
        std::fprintf(stderr, "ssdr: error: %s (rank %d, %s)\n", e.what(), rank, e.where().c_str());
      else
        std::fprintf(stderr, "ssdr: error: %s (rank %d)\n", e.what(), rank);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) std::fprintf(stderr, "ssdr: error: %s\n", e.what());
    code = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ssdr: error: %s (rank %d)\n", e.what(), rank);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (code == 0) warn_unused_petsc_options(rank);  // after an error the rest never ran
  SlepcFinalize();
  return code;
}
