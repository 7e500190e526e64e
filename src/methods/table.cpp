// The method table: name → factory, help text, paper, preprocessing defaults. It drives
// `ssdr methods`, --help, validation of --method and dispatch.
#include <algorithm>
#include <map>

#include "ssdr/core/error.hpp"
#include "ssdr/methods/factories.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/methods/parameters.hpp"

namespace ssdr::methods {

namespace {
data::PreprocessOptions soge_preprocess() {
  data::PreprocessOptions p;
  p.scaling = data::Scaling::global_unit;  // SOGE is not scale-invariant (soge-liu2017)
  p.pca_energy = 0.95;
  return p;
}
kernels::KernelOptions kernel(kernels::KernelType type) {
  kernels::KernelOptions k;
  k.type = type;
  return k;
}
/// Marks an eigenvector method whose solutions for smaller m are the leading columns.
MethodInfo nested(MethodInfo m) {
  m.nested_dimensions = true;
  return m;
}
/// A method whose paper builds another graph than SODA's (the default MethodInfo::graph).
MethodInfo with_graph(MethodInfo m, graph::GraphOptions g) {
  m.graph = g;
  return m;
}
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
data::PreprocessOptions unit_scale() {
  data::PreprocessOptions p;
  p.scaling = data::Scaling::global_unit;  // (xᵀy + 1)^3 is dominated by the data's scale otherwise
  return p;
}

/// Each method's own parameters (MethodInfo::parameters), by the options its fit reads.
const std::map<std::string, std::vector<std::string>>& own_parameters() {
  static const std::map<std::string, std::vector<std::string>> p = {
      {"soda", {"knn", "weight", "sigma_s", "alpha_u", "mu_scale"}},
      {"oda", {"mu_scale"}},
      {"lda", {}},
      {"lp", {"knn", "weight", "sigma_s", "alpha_u"}},
      {"sl-lda", {"knn", "alpha_u", "alpha", "eigenvalue_scaling"}},  // the LNP graph has no σ
      {"sl-lda-wls", {"knn", "alpha_u", "alpha"}},
      {"tca", {"knn", "weight", "sigma_s", "alpha", "beta"}},
      {"otca", {"knn", "weight", "sigma_s", "alpha", "beta", "gamma"}},
      {"soge", {"knn", "weight", "sigma_s", "alpha", "mu", "recursions"}},
      {"olda", {}},
      {"sda", {"knn", "weight", "sigma_s", "alpha", "beta"}},
      {"pca", {}},
      {"1nn", {}},
      {"ksoda", {"knn", "weight", "sigma_s", "alpha_u", "mu_scale"}},
      {"gda", {}},
      {"ssgda", {}},  // its graph (K of Table I) is the paper's, not --knn
      {"m-ssgda", {"lambda"}},  // λ of eq. (15)
  };
  return p;
}

std::vector<MethodInfo> build_table() {
  std::vector<MethodInfo> table = {
      {"soda", "semi-supervised orthogonal discriminant analysis via label propagation",
       "soda-nie2009 eq. (24)-(32), trace ratio by sec. 2.3.2", true, true, &make_soda, {}},
      {"oda", "orthogonal discriminant analysis (trace ratio on the labeled samples)",
       "soda-nie2009 eq. (16)", false, true, &make_oda, {}},
      nested(MethodInfo{"lda", "regularized LDA on the labeled samples: Sb a = l (St + 1e-3 tr(St)/d I) a",
       "soda-nie2009 eq. (8)/(14)", false, true, &make_lda, {}}),
      {"lp", "label propagation with the outlier class alone (transductive classifier)",
       "soda-nie2009 eq. (25)-(27)", true, false, &make_lp, {}},
      nested(MethodInfo{"sl-lda", "soft-label LDA: LNP graph, label propagation, GEVD (St + aI)^-1 Sb",
       "sllda-zhao2014 eq. (3)-(5), (11)-(15)", true, true, &make_sl_lda, {}}),
      nested(MethodInfo{"sl-lda-wls", "soft-label LDA by its weighted least-squares solution",
       "sllda-zhao2014 eq. (19)/(22)", true, true, &make_sl_lda_wls, {}}),
      with_graph(nested(MethodInfo{"tca", "transductive component analysis (not transfer component analysis)",
       "tca-liu2008 eq. (4), (10)-(21)", true, true, &make_tca, {}}), tca_graph()),
      with_graph(MethodInfo{"otca", "orthogonal transductive component analysis (recursive complement)",
       "tca-liu2008 eq. (4), (23)-(27)", true, true, &make_otca, {}}, tca_graph()),
      with_graph(MethodInfo{"soge", "semi-supervised orthogonal graph embedding with recursive projections",
       "soge-liu2017 eq. (7)-(13), Algorithm 1; CLR rank-constrained graph (Nie et al. 2016)", true, true,
       &make_soge, soge_preprocess()}, soge_graph()),
      nested(MethodInfo{"olda", "orthogonal LDA (ratio trace with St^+)", "soda-nie2009 eq. (2), Ye 2005", false, true,
       &make_olda, {}}),
      with_graph(nested(MethodInfo{"sda", "semi-supervised discriminant analysis (Cai, He, Han 2007)",
       "max a'Sb a / a'(St + alpha XLX' + beta I)a", true, true, &make_sda, {}}), sda_graph()),
      nested(MethodInfo{"pca", "principal component analysis (unsupervised baseline)", "top-m covariance eigenvectors",
       true, true, &make_pca, {}}),
      {"1nn", "plain 1-NN on the preprocessed data (W = identity, no learning)", "baseline", false, true,
       &make_one_nn, {}},
      {"ksoda", "kernel SODA: SODA on the empirical kernel map (polynomial p = 3 by default)",
       "soda-nie2009 eq. (33)-(41)", true, true, &make_soda, unit_scale(), kernel(kernels::KernelType::polynomial)},
      nested(MethodInfo{"gda", "generalized discriminant analysis: kernel LDA on the labeled samples (RBF)",
       "Baudat & Anouar 2000; ssgda-zhang-yeung", false, true, &make_lda, {}, kernel(kernels::KernelType::rbf)}),
      // The exact RBF map has rank n-1, which makes SSGDA's S = H_n and every labeling
      // equally good (CCCP saturates); the linear kernel is the default, RBF with --kernel rbf
      // --landmarks r (Nystrom, rank r) or a tuned --sigma2.
      {"ssgda", "semi-supervised GDA: CCCP label estimation, confidence selection, GDA (linear kernel)",
       "ssgda-zhang-yeung eq. (5)-(14), sec. III-D", true, true, &make_ssgda, {}, kernel(kernels::KernelType::linear)},
      {"m-ssgda", "SSGDA with the manifold term lambda sum w_ij |e_i - e_j|_1 (linear kernel; --lambda)",
       "ssgda-zhang-yeung eq. (15)-(17)", true, true, &make_m_ssgda, {}, kernel(kernels::KernelType::linear)},
  };
  for (MethodInfo& m : table) {
    m.parameters = own_parameters().at(m.name);
    for (const auto& p : m.parameters) {  // a method's own parameter is an own-scoped spec
      const ParameterSpec* spec = lookup_parameter(p);
      if (spec == nullptr || spec->scope != ParameterScope::own)
        throw Error("method table: " + m.name + " lists '" + p + "', which is no own parameter", __FILE__, __LINE__, true);
    }
  }
  return table;
}
}  // namespace

const std::vector<MethodInfo>& method_table() {
  static const std::vector<MethodInfo> table = build_table();
  return table;
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

FitResult MethodInfo::fit(const TrainingData& data, const MethodOptions& options, Timings& timings) const {
  return make()->fit(*this, data, options, timings);
}

graph::GraphOptions method_graph(const MethodInfo& method, const MethodOptions& o) {
  graph::GraphOptions g = method.graph;
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

bool uses_parameter(const MethodInfo& method, const std::string& name) {
  if (name == "dim") return true;
  const ParameterSpec* p = lookup_parameter(name);
  if (p == nullptr) return false;
  auto own = [&](const std::string& n) {
    return std::find(method.parameters.begin(), method.parameters.end(), n) != method.parameters.end();
  };
  switch (p->scope) {
    case ParameterScope::every: return true;
    case ParameterScope::kernel: return method.projects;
    case ParameterScope::knn_backend: return own("weight");  // the methods with a kNN graph
    case ParameterScope::own: return own(name);
  }
  return false;
}

bool propagates_labels(const MethodInfo& method) {
  return std::find(method.parameters.begin(), method.parameters.end(), "alpha_u") != method.parameters.end();
}

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
