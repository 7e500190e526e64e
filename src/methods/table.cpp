// The method table: one row per method (name, help text, paper, factory, its own parameters,
// graph, cross-validation grid, preprocessing and kernel defaults). It drives `ssdr methods`,
// --help, validation of --method and its parameters, --select-by cv's default grid and
// dispatch.
#include <algorithm>

#include "ssdr/core/error.hpp"
#include "factories.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/methods/parameters.hpp"

namespace ssdr::methods {

namespace {

/// A row of build_table(): the six fields every method has, then what its paper sets.
struct Row {
  MethodInfo m;
  Row(std::string name, std::string summary, std::string source, bool uses_unlabeled, bool projects,
      std::unique_ptr<Method> (*make)()) {
    m.name = std::move(name);
    m.summary = std::move(summary);
    m.source = std::move(source);
    m.uses_unlabeled = uses_unlabeled;
    m.projects = projects;
    m.make = make;
  }
  /// MethodInfo::parameters, by the options its fit reads.
  Row&& parameters(std::vector<std::string> p) && { m.parameters = std::move(p); return std::move(*this); }
  /// MethodInfo::graph: the kNN graph its paper builds (method_graph).
  Row&& graph(graph::GraphOptions g) && { m.graph = g; return std::move(*this); }
  /// MethodInfo::lnp_graph: the LNP graph its paper builds (method_lnp_graph).
  Row&& lnp_graph(graph::LnpOptions g) && { m.lnp_graph = g; return std::move(*this); }
  /// MethodInfo::cv_grid: what its paper cross-validates.
  Row&& cv_grid(ParameterGrid g) && { m.cv_grid = std::move(g); return std::move(*this); }
  Row&& preprocess(data::PreprocessOptions p) && { m.preprocess = p; return std::move(*this); }
  Row&& kernel(kernels::KernelType type) && { m.kernel.type = type; return std::move(*this); }
  /// An eigenvector method whose solutions for smaller m are the leading columns.
  Row&& nested() && { m.nested_dimensions = true; return std::move(*this); }
};

/// soda-nie2009 §5.2 (the default graph::GraphOptions): kNN heat graph, k = 8, σ by eq. (42)
/// with s = 10⁻³/k.
graph::GraphOptions soda_graph() { return graph::GraphOptions{}; }
/// tca-liu2008 eq. (4): symmetrized kNN heat graph, k = 5 (§5.2 "k = 5 for all datasets";
/// 6 in the face experiments of §5.3), t = σ² = the mean squared edge length (the paper
/// does not state σ).
graph::GraphOptions tca_graph() {
  graph::GraphOptions g;
  g.k = 5;
  g.weight = graph::EdgeWeight::heat;
  g.sigma_rule = graph::SigmaRule::mean_edge_dist2;
  return g;
}
/// soge-liu2017 §5.2 builds L by the constrained Laplacian rank method (Nie et al. 2016):
/// its adaptive-neighbours graph, k = 5 (the default of the CLR authors' constructW_PKN;
/// neither paper states k), refined until L has exactly c zero eigenvalues (weight clr, c =
/// the number of classes). --weight adaptive keeps the closed-form graph without the rank
/// constraint.
graph::GraphOptions soge_graph() {
  graph::GraphOptions g;
  g.k = 5;
  g.weight = graph::EdgeWeight::clr;
  return g;
}
/// Cai, He, Han 2007 (SDA): the 0/1 kNN graph with k = 5.
graph::GraphOptions sda_graph() {
  graph::GraphOptions g;
  g.k = 5;
  g.weight = graph::EdgeWeight::binary;
  return g;
}
/// sllda-zhao2014 Table 1: the LNP reconstruction graph on k = 8 neighbours (the paper does
/// not state k; SODA's), regularized by r = 10⁻³·tr(G)/k in eq. (2).
graph::LnpOptions sllda_graph() {
  graph::LnpOptions g;
  g.k = 8;
  g.regularization = 1e-3;
  return g;
}
data::PreprocessOptions soge_preprocess() {
  data::PreprocessOptions p;
  p.scaling = data::Scaling::global_unit;  // SOGE is not scale-invariant (soge-liu2017)
  p.pca_energy = 0.95;
  return p;
}
data::PreprocessOptions unit_scale() {
  data::PreprocessOptions p;
  p.scaling = data::Scaling::global_unit;  // (xᵀy + 1)^3 is dominated by the data's scale otherwise
  return p;
}
/// sllda-zhao2014 sec. 5 cross-validates the balancing parameter over λ ∈ {10⁻⁹, 10⁻⁶, 10⁻³,
/// 1, 10³, 10⁶, 10⁹} (α_j of eq. (3)); α_u must lie in [0, 1), and α = 1/(1+λ) is the relation
/// between the propagation's α and the fitting weight λ of the consistency method it builds
/// on [39] (the set is symmetric under λ ↔ 1/λ). Nearest the default 0.99 (λ ≈ 10⁻²) first
/// in log λ.
ParameterGrid sllda_grid() {
  std::vector<nlohmann::json> a;
  for (double lambda : {1e-3, 1.0, 1e-6, 1e3, 1e-9, 1e6, 1e9}) a.emplace_back(1.0 / (1.0 + lambda));
  return {{"alpha_u", a}};
}
/// ssgda-zhang-yeung sec. IV: λ of eq. (15) over {10⁻³, 10⁻², …, 10³}.
ParameterGrid m_ssgda_grid() {
  return {{"lambda", std::vector<nlohmann::json>{0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0}}};
}

MethodTable build_table() {
  using K = kernels::KernelType;
  const std::vector<std::string> soda_parameters = {"knn", "weight", "sigma_s", "alpha_u", "mu_scale"};
  MethodTable table = {
      Row("soda", "semi-supervised orthogonal discriminant analysis via label propagation",
          "soda-nie2009 eq. (24)-(32), trace ratio by sec. 2.3.2", true, true, &make_soda)
          .parameters(soda_parameters).graph(soda_graph()).m,
      Row("oda", "orthogonal discriminant analysis (trace ratio on the labeled samples)",
          "soda-nie2009 eq. (16)", false, true, &make_oda)
          .parameters({"mu_scale"}).m,
      Row("lda", "regularized LDA on the labeled samples: Sb a = l (St + 1e-3 tr(St)/d I) a; with --shrinkage "
          "Sb a = l Sw a of shrunk covariances (scikit-learn's shrinkage LDA)",
          "soda-nie2009 eq. (8)/(14)", false, true, &make_lda)
          .parameters({"shrinkage"}).nested().m,
      Row("lp", "label propagation with the outlier class alone (transductive classifier)",
          "soda-nie2009 eq. (25)-(27)", true, false, &make_lp)
          .parameters({"knn", "weight", "sigma_s", "alpha_u"}).graph(soda_graph()).m,
      Row("sl-lda", "soft-label LDA: LNP graph, label propagation, GEVD (St + aI)^-1 Sb",
          "sllda-zhao2014 eq. (3)-(5), (11)-(15)", true, true, &make_sl_lda)
          .parameters({"knn", "alpha_u", "alpha", "eigenvalue_scaling"})  // the LNP graph has no σ
          .lnp_graph(sllda_graph()).cv_grid(sllda_grid()).nested().m,
      Row("sl-lda-wls", "soft-label LDA by its weighted least-squares solution",
          "sllda-zhao2014 eq. (19)/(22)", true, true, &make_sl_lda_wls)
          .parameters({"knn", "alpha_u", "alpha"}).lnp_graph(sllda_graph()).cv_grid(sllda_grid()).nested().m,
      Row("tca", "transductive component analysis (not transfer component analysis)",
          "tca-liu2008 eq. (4), (10)-(21)", true, true, &make_tca)
          .parameters({"knn", "weight", "sigma_s", "alpha", "beta"}).graph(tca_graph()).nested().m,
      Row("otca", "orthogonal transductive component analysis (recursive complement)",
          "tca-liu2008 eq. (4), (23)-(27)", true, true, &make_otca)
          .parameters({"knn", "weight", "sigma_s", "alpha", "beta", "gamma"}).graph(tca_graph()).m,
      Row("soge", "semi-supervised orthogonal graph embedding with recursive projections",
          "soge-liu2017 eq. (7)-(13), Algorithm 1; CLR rank-constrained graph (Nie et al. 2016)", true, true,
          &make_soge)
          .parameters({"knn", "weight", "sigma_s", "alpha", "mu", "recursions"}).graph(soge_graph())
          .preprocess(soge_preprocess()).m,
      Row("olda", "orthogonal LDA (ratio trace with St^+)", "soda-nie2009 eq. (2), Ye 2005", false, true, &make_olda)
          .nested().m,
      Row("sda", "semi-supervised discriminant analysis (Cai, He, Han 2007)",
          "max a'Sb a / a'(St + alpha XLX' + beta I)a", true, true, &make_sda)
          .parameters({"knn", "weight", "sigma_s", "alpha", "beta", "shrinkage"}).graph(sda_graph()).nested().m,
      Row("pca", "principal component analysis (unsupervised baseline)", "top-m covariance eigenvectors", true, true,
          &make_pca)
          .nested().m,
      Row("1nn", "plain 1-NN on the preprocessed data (W = identity, no learning)", "baseline", false, true,
          &make_one_nn).m,
      // SODA's class on the kernel map: its own row, so its own graph (soda-nie2009 §4 keeps
      // SODA's graph in input space).
      Row("ksoda", "kernel SODA: SODA on the empirical kernel map (polynomial p = 3 by default)",
          "soda-nie2009 eq. (33)-(41)", true, true, &make_soda)
          .parameters(soda_parameters).graph(soda_graph()).preprocess(unit_scale()).kernel(K::polynomial).m,
      Row("gda", "generalized discriminant analysis: kernel LDA on the labeled samples (RBF)",
          "Baudat & Anouar 2000; ssgda-zhang-yeung", false, true, &make_lda)
          .parameters({"shrinkage"}).kernel(K::rbf).nested().m,
      // The exact RBF map has rank n-1, which makes SSGDA's S = H_n and every labeling
      // equally good (CCCP saturates); the linear kernel is the default, RBF with --kernel rbf
      // --landmarks r (Nystrom, rank r) or a tuned --sigma2. Its graph (K of Table I) is the
      // paper's, not --knn.
      Row("ssgda", "semi-supervised GDA: CCCP label estimation, confidence selection, GDA (linear kernel)",
          "ssgda-zhang-yeung eq. (5)-(14), sec. III-D", true, true, &make_ssgda)
          .kernel(K::linear).m,
      Row("m-ssgda", "SSGDA with the manifold term lambda sum w_ij |e_i - e_j|_1 (linear kernel; --lambda)",
          "ssgda-zhang-yeung eq. (15)-(17)", true, true, &make_m_ssgda)
          .parameters({"lambda"})  // λ of eq. (15)
          .cv_grid(m_ssgda_grid()).kernel(K::linear).m,
  };
  for (const MethodInfo& m : table) check_method_row(m);
  for (size_t i = 0; i < table.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (table[i].name == table[j].name)
        throw Error("method table: " + table[i].name + " has two rows", __FILE__, __LINE__, true);
  return table;
}

MethodTable& table() {
  static MethodTable t = build_table();
  return t;
}

bool lists(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

const MethodTable& method_table() { return table(); }

FitResult MethodInfo::fit(const TrainingData& data, const MethodOptions& options, Timings& timings) const {
  return make()->fit(*this, data, options, timings);
}

std::string method_names() {
  std::string s;
  for (const auto& m : method_table()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

const MethodInfo& find_method(const std::string& name) {
  for (const auto& m : method_table())
    if (m.name == name) return m;
  throw Error("--method: unknown method '" + name + "'; expected one of " + method_names(), __FILE__,
              __LINE__, true);
}

graph::GraphOptions method_graph(const MethodInfo& method, const MethodOptions& o) {
  if (!method.graph)
    throw Error("method table: " + method.name + " builds no kNN graph (its row has none)", __FILE__, __LINE__, true);
  graph::GraphOptions g = *method.graph;
  if (o.knn_given) g.k = o.graph.k;
  if (o.weight_given) g.weight = o.graph.weight;
  if (o.graph.sigma_s != 0) {  // --sigma-s: the user asks for eq. (42) with this s
    g.sigma_s = o.graph.sigma_s;
    g.sigma_rule = graph::SigmaRule::soda_eq42;
  }
  if (o.graph.sigma != 0) g.sigma = o.graph.sigma;
  g.knn_method = o.graph.knn_method;  // the run's choices, not the paper's graph
  g.knn_seed = o.graph.knn_seed;
  g.knn_recall_sample = o.graph.knn_recall_sample;
  return g;
}

graph::LnpOptions method_lnp_graph(const MethodInfo& method, const MethodOptions& o) {
  if (!method.lnp_graph)
    throw Error("method table: " + method.name + " builds no LNP graph (its row has none)", __FILE__, __LINE__, true);
  graph::LnpOptions g = *method.lnp_graph;
  if (o.knn_given) g.k = o.graph.k;
  return g;
}

void check_method_row(const MethodInfo& row) {
  auto fail = [&](const std::string& what) {
    throw Error("method table: " + (row.name.empty() ? std::string("a row") : row.name) + ": " + what, __FILE__,
                __LINE__, true);
  };
  if (row.name.empty()) fail("no name");
  for (char ch : row.name)
    if (ch == ' ' || ch == '\t' || ch == '\n') fail("a name with white space");
  if (row.summary.empty() || row.source.empty()) fail("no summary or no source (undocumented)");
  if (row.make == nullptr) fail("no factory");
  for (size_t i = 0; i < row.parameters.size(); ++i) {  // a method's own parameter is an own-scoped spec
    const std::string& p = row.parameters[i];
    const ParameterSpec* spec = lookup_parameter(p);
    if (spec == nullptr || spec->scope != ParameterScope::own) fail("lists '" + p + "', which is no own parameter");
    if (std::find(row.parameters.begin(), row.parameters.begin() + static_cast<std::ptrdiff_t>(i), p) !=
        row.parameters.begin() + static_cast<std::ptrdiff_t>(i))
      fail("lists '" + p + "' twice");
  }
  const bool graph_parameters = lists(row.parameters, "knn") && lists(row.parameters, "weight") &&
                                lists(row.parameters, "sigma_s");
  if (row.graph && !graph_parameters)
    fail("has a graph but not its parameters knn, weight and sigma_s (a graph it does not build)");
  if (!row.graph && graph_parameters) fail("has the parameters knn, weight and sigma_s but no graph");
  if (!row.graph && (lists(row.parameters, "weight") || lists(row.parameters, "sigma_s")))
    fail("has weight or sigma_s but no graph");
  if (row.graph && row.lnp_graph) fail("has a kNN graph and an LNP graph");
  if (row.lnp_graph && !lists(row.parameters, "knn")) fail("has an LNP graph but not its parameter knn");
  if (lists(row.parameters, "knn") && !row.graph && !row.lnp_graph)
    fail("has the parameter knn but no graph (its k would come from nowhere)");
  for (const auto& [name, values] : row.cv_grid) {
    if (!uses_parameter(row, name)) fail("cross-validates '" + name + "', which is not one of its parameters");
    if (values.empty()) fail("cross-validates '" + name + "' over no values");
    MethodOptions mo;
    data::PreprocessOptions pre;
    kernels::KernelOptions ko;
    ParameterTarget target{mo, pre, ko};
    for (const auto& v : values) set_parameter(target, name, v, "method table: " + row.name + ": cv_grid");
  }
}

MethodRegistration::MethodRegistration(MethodInfo row) {
  check_method_row(row);
  for (const auto& m : method_table())
    if (m.name == row.name)
      throw Error("method table: " + row.name + " has a row already", __FILE__, __LINE__, true);
  table().push_back(std::move(row));
  row_ = &table().back();
}

MethodRegistration::~MethodRegistration() {
  // Registrations end in reverse order, so this row is the last: erasing it moves no other.
  MethodTable& t = table();
  for (auto it = t.begin(); it != t.end(); ++it)
    if (&*it == row_) {
      t.erase(it);
      return;
    }
}

bool uses_parameter(const MethodInfo& method, const std::string& name) {
  if (name == "dim") return true;
  const ParameterSpec* p = lookup_parameter(name);
  if (p == nullptr) return false;
  switch (p->scope) {
    case ParameterScope::every: return true;
    case ParameterScope::kernel: return method.projects;
    case ParameterScope::knn_backend: return method.graph.has_value();  // the methods with a kNN graph
    case ParameterScope::own: return lists(method.parameters, name);
  }
  return false;
}

bool propagates_labels(const MethodInfo& method) { return lists(method.parameters, "alpha_u"); }

void require_parameter(const MethodInfo& method, const std::string& name, const std::string& spelling) {
  if (uses_parameter(method, name)) return;
  std::string own;
  for (const auto& p : method.parameters) own += (own.empty() ? "" : ", ") + p;
  throw Error(spelling + " is not a parameter of " + method.name + " (its own parameters: " +
                  (own.empty() ? "none" : own) + ")",
              __FILE__, __LINE__, true);
}

int64_t resolve_dim(int64_t requested, int classes, int64_t d) {
  const int64_t m = requested > 0 ? requested : std::min<int64_t>(std::max(classes - 1, 1), d);
  SSDR_REQUIRE(m >= 1 && m <= d, "--dim " + std::to_string(m) + " must be between 1 and the " +
                                     std::to_string(d) + " dimensions left after preprocessing");
  return m;
}

}  // namespace ssdr::methods
