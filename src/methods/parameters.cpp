// The parameter table (include/ssdr/methods/parameters.hpp): one spec per parameter, from
// which the command line, the job files, --grid, the reports and the per-method checks are
// made.
#include "ssdr/methods/parameters.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "methods/registry.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/graph/knn.hpp"

namespace ssdr::methods {

namespace {

using nlohmann::json;
using Kind = ParameterKind;
using Scope = ParameterScope;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// NaN (the method's paper value) as "default", else the number.
json or_default_text(double v) { return v == v ? json(v) : json("default"); }

ParameterSpec base(std::string name, std::string symbol, std::string doc, Kind kind, Scope scope) {
  ParameterSpec s;
  s.name = std::move(name);
  s.symbol = std::move(symbol);
  s.doc = std::move(doc);
  s.kind = kind;
  s.scope = scope;
  return s;
}
ParameterSpec number(std::string name, std::string symbol, std::string doc, Kind kind, Scope scope, double lo,
                     bool lo_open, double hi, bool hi_open, std::function<void(ParameterTarget&, const json&)> set,
                     std::function<json(const ConstParameterTarget&)> get) {
  ParameterSpec s = base(std::move(name), std::move(symbol), std::move(doc), kind, scope);
  s.lo = lo;
  s.lo_open = lo_open;
  s.hi = hi;
  s.hi_open = hi_open;
  s.set = set;
  s.get = get;
  return s;
}
ParameterSpec choice(std::string name, std::string doc, Scope scope, std::vector<std::string> choices,
                     std::function<void(ParameterTarget&, const json&)> set,
                     std::function<json(const ConstParameterTarget&)> get) {
  ParameterSpec s = base(std::move(name), "", std::move(doc), Kind::choice, scope);
  s.choices = std::move(choices);
  s.set = set;
  s.get = get;
  return s;
}
/// s with ParameterSpec::fixed_default set.
ParameterSpec fixed(ParameterSpec s) {
  s.fixed_default = true;
  return s;
}
ParameterSpec flag(std::string name, std::string doc, Scope scope, std::string option, bool switch_value,
                   std::function<void(ParameterTarget&, const json&)> set,
                   std::function<json(const ConstParameterTarget&)> get) {
  ParameterSpec s = base(std::move(name), "", std::move(doc), Kind::flag, scope);
  s.option = std::move(option);
  s.switch_value = switch_value;
  s.set = set;
  s.get = get;
  return s;
}

std::vector<ParameterSpec> build() {
  using T = ParameterTarget;
  using C = ConstParameterTarget;
  // clang-format off
  return {
    // The graph (soda-nie2009 §2.2 and eq. (42); each method's paper graph in MethodInfo::graph).
    number("knn", "k", "neighbours of the kNN graph (default: the method's paper graph: 8 soda/lp/sl-lda, 5 tca/otca/soge/sda)",
           Kind::integer, Scope::own, 1, false, 1e6, false,
           [](T& t, const json& v) { t.method.graph.k = v.get<int>(); t.method.knn_given = true; },
           [](const C& t) { return t.method.knn_given ? json(t.method.graph.k) : json("default"); }),
    choice("weight", "graph weights (default: the method's: clr soge, binary sda, heat otherwise; adaptive: CLR's "
           "closed-form graph without the rank constraint)", Scope::own,
           {"heat", "cosine", "binary", "adaptive", "clr"},
           [](T& t, const json& v) { t.method.graph.weight = graph::parse_weight(v.get<std::string>()); t.method.weight_given = true; },
           [](const C& t) { return t.method.weight_given ? json(graph::to_string(t.method.graph.weight)) : json("default"); }),
    number("sigma_s", "s", "heat width by soda-nie2009 eq. (42), sigma = sqrt(-dbar/ln s) (0: the method's rule: "
           "eq. (42) with s = 1e-3/k for soda/lp, sigma^2 = dbar for tca/otca)", Kind::real, Scope::own, 0, false, 1, true,
           [](T& t, const json& v) { t.method.graph.sigma_s = v.get<double>(); },
           [](const C& t) { return t.method.graph.sigma_s != 0 ? json(t.method.graph.sigma_s) : json("default"); }),
    choice("knn_method", "kNN backend: auto (exact up to 100000 graph samples, nndescent beyond) | exact (every pair, "
           "single-precision GEMM filter, exact re-ranking) | nndescent (approximate, distributed NN-descent seeded by "
           "--seed; recall in the report's knn_recall)", Scope::knn_backend,
           {"auto", "exact", "nndescent"},
           [](T& t, const json& v) { t.method.graph.knn_method = graph::parse_knn_method(v.get<std::string>()); },
           [](const C& t) { return json(graph::to_string(t.method.graph.knn_method)); }),
    number("knn_recall_sample", "", "rows whose exact lists estimate the approximate graph's recall@k (0: skip)",
           Kind::integer, Scope::knn_backend, 0, false, 1e9, false,
           [](T& t, const json& v) { t.method.graph.knn_recall_sample = v.get<int64_t>(); },
           [](const C& t) { return json(t.method.graph.knn_recall_sample); }),
    number("nndescent_memory", "", "MiB per rank that NN-descent may use beyond the lists: its float copy of the "
           "rank's rows when it fits (else rows are converted as the joins read them), and the other ranks' rows of "
           "one join block; the graph is the same for any value, more is faster (300 000 Fashion rows, 2 ranks: "
           "1024 took 0.65x the time of the default 160); also the remote rows SL-LDA's LNP weights fetch at once",
           Kind::real, Scope::knn_backend, 1, false, 8192, false,
           [](T& t, const json& v) { t.method.graph.nndescent_memory_mib = v.get<double>(); },
           [](const C& t) { return json(t.method.graph.nndescent_memory_mib); }),
    // Label propagation and the trace ratio (soda-nie2009 eq. (5), (16)/(32)).
    number("alpha_u", "alpha_u", "label propagation's alpha on unlabeled samples (soda-nie2009 eq. (5))",
           Kind::real, Scope::own, 0, false, 1, true,
           [](T& t, const json& v) { t.method.propagation.alpha_unlabeled = v.get<double>(); },
           [](const C& t) { return json(t.method.propagation.alpha_unlabeled); }),
    // The parameters several papers share, by their symbols (NaN: the paper's value, in info).
    // Those of one family only (soda's mu_scale, OTCA's gamma, SOGE's mu and recursions,
    // SL-LDA's eigenvalue_scaling, M-SSGDA's lambda) are declared in its file of
    // src/methods/impls/ (MethodFamily::parameters) and placed after the shared own ones.
    number("alpha", "alpha", "TCA/OTCA smoothness weight (tca-liu2008 eq. (6); sec. 5.1: 10 and 4), SOGE (soge-liu2017 eq. (6); 1), "
           "SDA's graph term; SL-LDA: the regularizer relative to tr(St)/d (default: the paper's)",
           Kind::real, Scope::own, 0, false, kInf, false,
           [](T& t, const json& v) { t.method.alpha = v.get<double>(); },
           [](const C& t) { return or_default_text(t.method.alpha); }),
    number("beta", "beta", "TCA/OTCA label-fit weight (tca-liu2008 eq. (21), (27); sec. 5.1: 6 and 10) and SDA's ridge (default: the paper's)",
           Kind::real, Scope::own, 0, false, kInf, false,
           [](T& t, const json& v) { t.method.beta = v.get<double>(); },
           [](const C& t) { return or_default_text(t.method.beta); }),
    // Shrinkage of the scatter matrices (issue 49; Ledoit & Wolf 2004, scikit-learn's
    // LinearDiscriminantAnalysis(solver="eigen", shrinkage=...)).
    [] {
      ParameterSpec s = number("shrinkage", "", "shrink each class covariance and the total one toward a diagonal "
                               "target instead of the method's ridge: auto = the Ledoit-Wolf coefficient on "
                               "standardized features (scikit-learn's shrinkage='auto'), a number = that "
                               "coefficient toward tr/d I; none = the method's own regularizer",
                               Kind::choice_or_real, Scope::own, 0, false, 1, false,
                               [](T& t, const json& v) {
                                 t.method.shrinkage = v.is_string() ? (v.get<std::string>() == "auto" ? kShrinkageAuto
                                                                       : std::numeric_limits<double>::quiet_NaN())
                                                                    : v.get<double>();
                               },
                               [](const C& t) {
                                 const double x = t.method.shrinkage;
                                 return x != x ? json("none") : x == kShrinkageAuto ? json("auto") : json(x);
                               });
      s.choices = {"none", "auto"};
      return s;
    }(),
    choice("normalize", "length of the projection columns: unit | metric (w'(St + eps I)w = 1 for LDA/GDA/SDA/SL-LDA/"
           "SSGDA's GDA); TCA keeps its constraint's scale (metric) unless given", Scope::every, {"unit", "metric"},
           [](T& t, const json& v) { t.method.normalization = parse_normalization(v.get<std::string>()); t.method.normalization_given = true; },
           [](const C& t) { return t.method.normalization_given ? json(to_string(t.method.normalization)) : json("default"); }),
    // Preprocessing (every method; the method's paper preprocessing unless given).
    choice("scaling", "feature scaling before centering (default: the method's; global for soge and the kernels)",
           Scope::every, {"none", "minmax", "standardize", "global"},
           [](T& t, const json& v) { t.preprocess.scaling = data::parse_scaling(v.get<std::string>()); },
           [](const C& t) { return json(data::to_string(t.preprocess.scaling)); }),
    number("pca_energy", "", "PCA: keep this fraction of the variance (default: drop only the null space; soge 0.95)",
           Kind::real, Scope::every, 0, true, 1, false,
           [](T& t, const json& v) { t.preprocess.pca_energy = v.get<double>(); },
           [](const C& t) { return t.preprocess.pca_energy > 0 ? json(t.preprocess.pca_energy) : json("default"); }),
    number("pca_dim", "d'", "PCA: keep at most this many components (0: no cap); required for sparse data (the "
           "truncated SVD's triplets); with --pca-energy the fewest reaching it",
           Kind::integer, Scope::every, 0, false, 1e6, false,
           [](T& t, const json& v) { t.preprocess.pca_dim = v.get<int64_t>(); },
           [](const C& t) { return t.preprocess.pca_dim > 0 ? json(t.preprocess.pca_dim) : json("default"); }),
    fixed(choice("precision", "the preprocessed rows a method learns from (n_t x d') in double | single: single halves "
                 "them for soda, oda and lp (the others read a double copy); each value is rounded once and read as a "
                 "double", Scope::every,
                 {"double", "single"},
                 [](T& t, const json& v) { t.preprocess.single = v.get<std::string>() == "single"; },
                 [](const C& t) { return json(t.preprocess.single ? "single" : "double"); })),
    flag("pca", "center only, no PCA", Scope::every, "no-pca", false,
         [](T& t, const json& v) { t.preprocess.pca = v.get<bool>(); },
         [](const C& t) { return json(t.preprocess.pca); }),
    // The kernel map (soda-nie2009 sec. 4; ssgda-zhang-yeung sec. IV), for the projecting methods.
    choice("kernel", "none | linear | poly | rbf (default: the method's, e.g. ksoda poly, gda rbf)", Scope::kernel,
           {"none", "linear", "poly", "polynomial", "rbf"},
           [](T& t, const json& v) { t.kernel.type = kernels::parse_kernel(v.get<std::string>()); },
           [](const C& t) { return json(kernels::to_string(t.kernel.type)); }),
    number("degree", "p", "polynomial kernel (x'y + 1)^p degree (soda-nie2009 sec. 5.4: 3)",
           Kind::real, Scope::kernel, 0, true, kernels::kMaxPolynomialDegree, false,
           [](T& t, const json& v) { t.kernel.degree = v.get<double>(); },
           [](const C& t) { return json(t.kernel.degree); }),
    number("sigma2", "sigma^2", "RBF exp(-|x-y|^2/sigma2) (0: mean pairwise squared distance)",
           Kind::real, Scope::kernel, 0, false, kInf, false,
           [](T& t, const json& v) { t.kernel.sigma2 = v.get<double>(); },
           [](const C& t) { return json(t.kernel.sigma2); }),
    number("sigma_scale", "", "RBF: sigma = S * mean pairwise distance, overrides sigma2 (ssgda-zhang-yeung sec. IV; 0: unused)",
           Kind::real, Scope::kernel, 0, false, kInf, false,
           [](T& t, const json& v) { t.kernel.sigma_scale = v.get<double>(); },
           [](const C& t) { return json(t.kernel.sigma_scale); }),
    number("landmarks", "r", "Nystrom landmarks (0: exact n x n kernel map)",
           Kind::integer, Scope::kernel, 0, false, 1e12, false,
           [](T& t, const json& v) { t.kernel.landmarks = v.get<int64_t>(); },
           [](const C& t) { return json(t.kernel.landmarks); }),
    choice("landmark_seeding", "Nystrom landmarks drawn uniformly or by k-means++ (seeded by --seed)", Scope::kernel,
           {"uniform", "kmeans++"},
           [](T& t, const json& v) { t.kernel.landmark_seeding = v.get<std::string>(); },
           [](const C& t) { return json(t.kernel.landmark_seeding); }),
  };
  // clang-format on
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string ParameterSpec::cli_option() const {
  std::string o = option.empty() ? name : option;
  std::replace(o.begin(), o.end(), '_', '-');
  return "--" + o;
}

std::string ParameterSpec::expected() const {
  std::ostringstream s;
  switch (kind) {
    case Kind::choice: return "one of " + join(choices);
    case Kind::flag: return "true or false";
    case Kind::choice_or_real: s << join(choices) << " or a number"; break;
    case Kind::integer: s << "an integer"; break;
    case Kind::real: s << "a number"; break;
  }
  if (std::isinf(hi))
    s << (lo_open ? " > " : " >= ") << lo;
  else
    s << " in " << (lo_open ? "(" : "[") << lo << ", " << hi << (hi_open ? ")" : "]");
  return s.str();
}

ParameterSpec family_number(std::string name, std::string symbol, std::string doc, ParameterKind kind, double lo,
                            bool lo_open, double hi, bool hi_open, json paper_default) {
  SSDR_REQUIRE(kind == Kind::integer || kind == Kind::real, "family_number: " + name + ": not a number kind");
  const std::string key = name;
  return number(std::move(name), std::move(symbol), std::move(doc), kind, Scope::own, lo, lo_open, hi, hi_open,
                [key](ParameterTarget& t, const json& v) { t.method.own[key] = v; },
                [key, paper_default](const ConstParameterTarget& t) {
                  const auto it = t.method.own.find(key);
                  return it == t.method.own.end() ? paper_default : *it;
                });
}

ParameterSpec family_flag(std::string name, std::string doc) {
  const std::string key = name;
  return flag(std::move(name), std::move(doc), Scope::own, "", true,
              [key](ParameterTarget& t, const json& v) { t.method.own[key] = v; },
              [key](const ConstParameterTarget& t) {
                const auto it = t.method.own.find(key);
                return it == t.method.own.end() ? json(false) : *it;
              });
}

namespace {

/// The shared specs, with every family's own inserted after the last shared own-scoped one;
/// refuses a name twice and a family spec that is not own-scoped.
std::vector<ParameterSpec> build_with_families() {
  std::vector<ParameterSpec> table = build();
  std::vector<ParameterSpec> families;
  // Families in the method table's order (MethodFamily::order, then file name).
  std::vector<std::pair<std::pair<int, std::string>, std::vector<ParameterSpec>>> listed;
  for (const FamilyEntry& f : method_families()) {
    MethodFamily family = f.rows();
    listed.push_back({{family.order, f.stem}, std::move(family.parameters)});
  }
  std::stable_sort(listed.begin(), listed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [key, specs] : listed)
    for (ParameterSpec& p : specs) {
      if (p.scope != Scope::own || !p.set || !p.get)
        throw Error("parameter table: " + p.name + " (declared by " + key.second +
                        ") is not an own parameter made by family_number or family_flag",
                    __FILE__, __LINE__, true);
      families.push_back(std::move(p));
    }
  size_t at = 0;
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].scope == Scope::own) at = i + 1;
  table.insert(table.begin() + static_cast<std::ptrdiff_t>(at), std::make_move_iterator(families.begin()),
               std::make_move_iterator(families.end()));
  for (size_t i = 0; i < table.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (table[i].name == table[j].name)
        throw Error("parameter table: " + table[i].name + " is declared twice", __FILE__, __LINE__, true);
  return table;
}

}  // namespace

const std::vector<ParameterSpec>& parameter_table() {
  static const std::vector<ParameterSpec> table = build_with_families();
  return table;
}

const ParameterSpec* lookup_parameter(const std::string& name) {
  for (const auto& p : parameter_table())
    if (p.name == name) return &p;
  return nullptr;
}

std::string parameter_list() {
  std::vector<std::string> names;
  for (const auto& p : parameter_table()) names.push_back(p.name);
  return join(names);
}

void set_parameter(ParameterTarget& target, const std::string& name, const json& value, const std::string& context) {
  const ParameterSpec* spec = lookup_parameter(name);
  auto fail = [&](const std::string& what) { throw Error(context + ": " + what, __FILE__, __LINE__, true); };
  if (spec == nullptr) fail("unknown parameter '" + name + "'; expected one of " + parameter_list());
  // "--alpha-u: expected ..." on the command line (the option names it), "job.yaml: line 7:
  // parameter alpha_u: expected ..." elsewhere.
  const std::string what = context == spec->cli_option() ? "" : "parameter " + name + ": ";
  auto wrong = [&](const std::string& got) { fail(what + "expected " + spec->expected() + ", got " + got); };
  json checked;
  switch (spec->kind) {
    case Kind::choice_or_real:
      if (value.is_string()) {
        if (std::find(spec->choices.begin(), spec->choices.end(), value.get<std::string>()) == spec->choices.end())
          wrong("'" + value.get<std::string>() + "'");
        checked = value;
        break;
      }
      [[fallthrough]];
    case Kind::integer:
    case Kind::real: {
      if (!value.is_number()) wrong(value.dump());
      const double x = value.get<double>();
      const bool ok = std::isfinite(x) && (spec->lo_open ? x > spec->lo : x >= spec->lo) &&
                      (spec->hi_open ? x < spec->hi : x <= spec->hi) &&
                      (spec->kind != Kind::integer || x == std::floor(x));
      if (!ok) {
        // Shortest text that reads back as x (1.0000001 must not print as 1); inf and nan as
        // such (JSON would print null).
        std::ostringstream got;
        for (int digits = 6; digits <= 17; ++digits) {
          got.str("");
          got << std::setprecision(digits) << x;
          if (!std::isfinite(x) || std::strtod(got.str().c_str(), nullptr) == x) break;
        }
        wrong(got.str());
      }
      checked = spec->kind == Kind::integer ? json(static_cast<int64_t>(x)) : json(x);  // choice_or_real: a real
      break;
    }
    case Kind::choice:
      if (!value.is_string()) wrong(value.dump());
      if (std::find(spec->choices.begin(), spec->choices.end(), value.get<std::string>()) == spec->choices.end())
        wrong("'" + value.get<std::string>() + "'");
      checked = value;
      break;
    case Kind::flag:
      if (value.is_boolean()) checked = value;
      else if (value.is_number_integer() && (value.get<int64_t>() == 0 || value.get<int64_t>() == 1))
        checked = value.get<int64_t>() == 1;
      else wrong(value.dump());
      break;
  }
  spec->set(target, checked);
}

json parameter_values(const MethodInfo& method, const ConstParameterTarget& target) {
  json out = json::object();
  for (const auto& p : parameter_table())
    if (p.scope != Scope::kernel && uses_parameter(method, p.name)) out[p.name] = p.get(target);
  return out;
}

}  // namespace ssdr::methods
