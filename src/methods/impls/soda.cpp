// SODA, ODA, LDA and label propagation (soda-nie2009).
#include <cmath>
#include <limits>

#include "methods/registry.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "ssdr/solvers/eigen.hpp"
#include "ssdr/solvers/trace_ratio.hpp"

namespace ssdr::methods {

namespace {

/// μ = R·μ₀ with R = 0.1 (soda-nie2009 §5.2), the default of mu_scale.
constexpr double kMuScale = 0.1;

class Soda final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    const graph::GraphOptions go = method_graph(row, o);  // soda's or ksoda's row
    auto gl = graph_and_propagation(data, go, o, t);
    const std::shared_ptr<const scatter::ScatterMatrices> shared = soft_scatter(data, gl, t);
    const scatter::ScatterMatrices& S = *shared;
    FitResult out = solve_trace_ratio(S, m, o.own_number("mu_scale", kMuScale), o, data, t, soft_scatter_key(data, gl));
    graph_info(gl.g, go, out.info);
    out.info["propagation_iterations"] = gl.lp.iterations;
    out.info["propagation_solver"] = gl.lp.solver;
    out.soft_labels = soft_labels(gl.lp, data);
    return out;
  }
};

class Oda final : public Method {
 public:
  FitResult fit(const MethodInfo&, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    const scatter::ScatterMatrices S = labeled_scatter(data, t);
    return solve_trace_ratio(S, m, o.own_number("mu_scale", kMuScale), o, data, t, labeled_scatter_key(data));
  }
};

/// Regularized LDA (soda-nie2009 eq. (8)/(14)) on the labeled samples, also GDA when the
/// pipeline hands over a kernel feature map: S_b a = λ (S_t + rI) a, r =
/// o.lda_regularization·tr(S_t)/d', the m largest, columns of unit length by default
/// (o.normalization; metric: aᵀ(S_t + rI)a = 1).
/// With --shrinkage (o.shrinkage not NaN) the ridge gives way to scikit-learn's shrinkage
/// LDA (LinearDiscriminantAnalysis(solver="eigen", shrinkage=...)): S_b a = λ S_w a with the
/// shrunk S_w and S_b = S_t − S_w of shrunk_labeled_scatter (scatter/shrinkage.hpp).
class Lda final : public Method {
 public:
  FitResult fit(const MethodInfo&, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    if (o.shrinkage == o.shrinkage) {
      FitResult out;
      const scatter::ShrunkScatter S = shrunk_labeled_scatter(data, o.shrinkage, t, out.info);
      Phase phase("eigensolve", &t);
      largest_generalized_eigenvectors(S.Sb, S.Sw, m, o.normalization, "lda", o.eigen_prefix, data.X.comm, out);
      return out;
    }
    const scatter::ScatterMatrices S = labeled_scatter(data, t);
    Phase phase("eigensolve", &t);
    const double r = o.lda_regularization * trace(S.St) / static_cast<double>(S.St.rows);
    // S_b a = λ (S_t + r I) a, the m largest (regularized LDA, soda-nie2009 eq. (8)/(14)).
    FitResult out;
    largest_generalized_eigenvectors(S.Sb, add_identity(S.St, r), m, o.normalization, "lda", o.eigen_prefix,
                                     data.X.comm, out, &S.Sb_factor);
    out.info["regularization"] = r;
    return out;
  }
};

class LabelPropagation final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const graph::GraphOptions go = method_graph(row, o);
    auto gl = graph_and_propagation(data, go, o, t);
    FitResult out;
    out.transductive_prediction = propagation::predict(gl.lp.F, data.classes);
    graph_info(gl.g, go, out.info);
    out.info["propagation_iterations"] = gl.lp.iterations;
    out.info["propagation_solver"] = gl.lp.solver;
    out.soft_labels = soft_labels(gl.lp, data);
    return out;
  }
};

/// soda-nie2009 §5.2 (the default graph::GraphOptions): kNN heat graph, k = 8, σ by eq. (42)
/// with s = 10⁻³/k.
graph::GraphOptions soda_graph() { return graph::GraphOptions{}; }

data::PreprocessOptions unit_scale() {
  data::PreprocessOptions p;
  p.scaling = data::Scaling::global_unit;  // (xᵀy + 1)^3 is dominated by the data's scale otherwise
  return p;
}

}  // namespace
}  // namespace ssdr::methods

/// soda-nie2009: SODA, ODA, LDA, label propagation, and their kernel forms (KSODA, GDA).
SSDR_METHOD_FAMILY(soda) {
  using namespace ssdr::methods;
  using K = ssdr::kernels::KernelType;
  const std::vector<std::string> soda_parameters = {"knn", "weight", "sigma_s", "alpha_u", "mu_scale"};
  const double kInf = std::numeric_limits<double>::infinity();
  return {10,
          {
              MethodRow("soda", "semi-supervised orthogonal discriminant analysis via label propagation",
                        "soda-nie2009 eq. (24)-(32), trace ratio by sec. 2.3.2", true, true, &make_method<Soda>)
                  .parameters(soda_parameters).graph(soda_graph()).row(),
              MethodRow("oda", "orthogonal discriminant analysis (trace ratio on the labeled samples)",
                        "soda-nie2009 eq. (16)", false, true, &make_method<Oda>)
                  .parameters({"mu_scale"}).row(),
              MethodRow("lda", "regularized LDA on the labeled samples: Sb a = l (St + 1e-3 tr(St)/d I) a; with "
                        "--shrinkage Sb a = l Sw a of shrunk covariances (scikit-learn's shrinkage LDA)",
                        "soda-nie2009 eq. (8)/(14)", false, true, &make_method<Lda>)
                  .parameters({"shrinkage"}).nested().row(),
              MethodRow("lp", "label propagation with the outlier class alone (transductive classifier)",
                        "soda-nie2009 eq. (25)-(27)", true, false, &make_method<LabelPropagation>)
                  .parameters({"knn", "weight", "sigma_s", "alpha_u"}).graph(soda_graph()).row(),
              // SODA's class on the kernel map: its own row, so its own graph (soda-nie2009 §4
              // keeps SODA's graph in input space).
              MethodRow("ksoda", "kernel SODA: SODA on the empirical kernel map (polynomial p = 3 by default)",
                        "soda-nie2009 eq. (33)-(41)", true, true, &make_method<Soda>)
                  .parameters(soda_parameters).graph(soda_graph()).preprocess(unit_scale()).kernel(K::polynomial)
                  .row(),
              MethodRow("gda", "generalized discriminant analysis: kernel LDA on the labeled samples (RBF)",
                        "Baudat & Anouar 2000; ssgda-zhang-yeung", false, true, &make_method<Lda>)
                  .parameters({"shrinkage"}).kernel(K::rbf).nested().row(),
          },
          {
              family_number("mu_scale", "R", "SODA/ODA: mu = R * largest diagonal of Sw (soda-nie2009 sec. 5.2)",
                            ParameterKind::real, 0, false, kInf, false, kMuScale),
          }};
}
