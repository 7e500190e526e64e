// The method table: name → factory, help text, paper, preprocessing defaults. It drives
// `ssdr methods`, --help, validation of --method and dispatch.
#include <algorithm>

#include "ssdr/core/error.hpp"
#include "ssdr/methods/factories.hpp"
#include "ssdr/methods/method.hpp"

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
data::PreprocessOptions unit_scale() {
  data::PreprocessOptions p;
  p.scaling = data::Scaling::global_unit;  // (xᵀy + 1)^3 is dominated by the data's scale otherwise
  return p;
}
}  // namespace

const std::vector<MethodInfo>& method_table() {
  static const std::vector<MethodInfo> table = {
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
      nested(MethodInfo{"tca", "transductive component analysis (not transfer component analysis)",
       "tca-liu2008 eq. (10)-(21)", true, true, &make_tca, {}}),
      {"otca", "orthogonal transductive component analysis (recursive complement)",
       "tca-liu2008 eq. (23)-(27)", true, true, &make_otca, {}},
      {"soge", "semi-supervised orthogonal graph embedding with recursive projections",
       "soge-liu2017 eq. (7)-(13), Algorithm 1", true, true, &make_soge, soge_preprocess()},
      nested(MethodInfo{"olda", "orthogonal LDA (ratio trace with St^+)", "soda-nie2009 eq. (2), Ye 2005", false, true,
       &make_olda, {}}),
      nested(MethodInfo{"sda", "semi-supervised discriminant analysis (Cai, He, Han 2007)",
       "max a'Sb a / a'(St + alpha XLX' + beta I)a", true, true, &make_sda, {}}),
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
      {"m-ssgda", "SSGDA with the manifold term lambda sum w_ij |e_i - e_j|_1 (linear kernel; lambda: --alpha)",
       "ssgda-zhang-yeung eq. (15)-(17)", true, true, &make_m_ssgda, {}, kernel(kernels::KernelType::linear)},
  };
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

int64_t resolve_dim(int64_t requested, int classes, int64_t d) {
  const int64_t m = requested > 0 ? requested : std::min<int64_t>(std::max(classes - 1, 1), d);
  SSDR_REQUIRE(m >= 1 && m <= d, "--dim " + std::to_string(m) + " must be between 1 and the " +
                                     std::to_string(d) + " dimensions left after preprocessing");
  return m;
}

}  // namespace ssdr::methods
