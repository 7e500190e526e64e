// SODA, ODA, LDA and label propagation (soda-nie2009).
#include <cmath>

#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/methods/common.hpp"
#include "factories.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "ssdr/solvers/eigen.hpp"
#include "ssdr/solvers/trace_ratio.hpp"

namespace ssdr::methods {

namespace {

class Soda final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    const graph::GraphOptions go = method_graph(row, o);  // soda's or ksoda's row
    auto gl = graph_and_propagation(data, go, o, t);
    const scatter::ScatterMatrices S = soft_scatter(data, gl, t);
    FitResult out = solve_trace_ratio(S, m, o, data, t, soft_scatter_key(data, gl));
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
    return solve_trace_ratio(S, m, o, data, t, labeled_scatter_key(data));
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
                                     data.X.comm, out);
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

}  // namespace

std::unique_ptr<Method> make_soda() { return std::make_unique<Soda>(); }
std::unique_ptr<Method> make_oda() { return std::make_unique<Oda>(); }
std::unique_ptr<Method> make_lda() { return std::make_unique<Lda>(); }
std::unique_ptr<Method> make_lp() { return std::make_unique<LabelPropagation>(); }

}  // namespace ssdr::methods
