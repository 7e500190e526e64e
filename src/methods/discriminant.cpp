// SODA, ODA, LDA and label propagation (soda-nie2009).
#include <cmath>

#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "ssdr/solvers/eigen.hpp"
#include "ssdr/solvers/trace_ratio.hpp"

namespace ssdr::methods {

namespace {

Dense add_identity(const Dense& S, double mu) {
  Dense R = S;
  for (int64_t i = 0; i < R.rows; ++i) R(i, i) += mu;
  return R;
}

/// Labeled rows of the training data with their hard labels.
struct LabeledPart {
  DistMatrix X;
  std::vector<int> labels;
};
LabeledPart labeled_part(const TrainingData& data) {
  std::vector<char> keep(data.labels.size());
  LabeledPart p;
  for (size_t i = 0; i < keep.size(); ++i) {
    keep[i] = data.labels[i] >= 0;
    if (keep[i]) p.labels.push_back(data.labels[i]);
  }
  p.X = select_rows(data.X, keep);
  return p;
}

/// Orthogonal trace ratio on (Sb, Sw + μI), μ = mu_scale·max diag(Sw) (eq. (16)/(32)).
FitResult solve_trace_ratio(const scatter::ScatterMatrices& S, int64_t m, const MethodOptions& o,
                            MPI_Comm comm, Timings& t) {
  Phase phase("eigensolve", &t);
  const double mu = o.mu_scale * scatter::largest_diagonal(S.Sw);
  solvers::TraceRatioOptions tro;
  tro.dim = m;
  tro.prefix = o.trace_ratio_prefix;
  auto r = solvers::trace_ratio(S.Sb, add_identity(S.Sw, mu), tro, comm);
  FitResult out;
  out.W = std::move(r.W);
  out.trace_ratio = r.ratio;
  out.info["mu"] = mu;
  out.info["trace_ratio_iterations"] = r.iterations;
  out.info["trace_ratio_history"] = r.history;
  out.info["trace_ratio_converged"] = r.converged;
  return out;
}

struct GraphAndLabels {
  graph::Graph g;
  propagation::PropagationResult lp;
};
GraphAndLabels graph_and_propagation(const TrainingData& data, const MethodOptions& o, Timings& t) {
  GraphAndLabels r;
  {
    Phase phase("knn_graph", &t);
    r.g = graph::build_knn_graph(data.X, o.graph);
  }
  {
    Phase phase("propagation", &t);
    r.lp = propagation::propagate(r.g.A, data.labels, data.classes, o.propagation);
  }
  return r;
}

void graph_info(const GraphAndLabels& r, nlohmann::json& info) {
  info["sigma"] = r.g.sigma;
  info["mean_edge_dist2"] = r.g.mean_edge_dist2;
  info["graph_edges"] = r.g.edges;
  info["propagation_iterations"] = r.lp.iterations;
}

class Soda final : public Method {
 public:
  FitResult fit(const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    auto gl = graph_and_propagation(data, o, t);
    scatter::ScatterMatrices S;
    {
      Phase phase("scatter", &t);
      S = scatter::soft_scatter(data.X, gl.lp.F, data.classes);
    }
    FitResult out = solve_trace_ratio(S, m, o, data.X.comm, t);
    graph_info(gl, out.info);
    return out;
  }
};

class Oda final : public Method {
 public:
  FitResult fit(const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    scatter::ScatterMatrices S;
    {
      Phase phase("scatter", &t);
      LabeledPart l = labeled_part(data);
      S = scatter::soft_scatter(l.X, scatter::one_hot(l.labels, data.classes, l.X.comm), data.classes);
    }
    return solve_trace_ratio(S, m, o, data.X.comm, t);
  }
};

class Lda final : public Method {
 public:
  FitResult fit(const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    scatter::ScatterMatrices S;
    {
      Phase phase("scatter", &t);
      LabeledPart l = labeled_part(data);
      S = scatter::soft_scatter(l.X, scatter::one_hot(l.labels, data.classes, l.X.comm), data.classes);
    }
    Phase phase("eigensolve", &t);
    double trace = 0;
    for (int64_t i = 0; i < S.St.rows; ++i) trace += S.St(i, i);
    const double r = o.lda_regularization * trace / static_cast<double>(S.St.rows);
    // S_b a = λ (S_t + r I) a, the m largest (regularized LDA, soda-nie2009 eq. (8)/(14)).
    const Dense B = add_identity(S.St, r);
    auto e = solvers::sym_eigen(S.Sb, &B, m, solvers::Which::largest, o.eigen_prefix, data.X.comm);
    FitResult out;
    out.W = std::move(e.vectors);
    out.info["regularization"] = r;
    out.info["eigenvalues"] = e.values;
    return out;
  }
};

class LabelPropagation final : public Method {
 public:
  FitResult fit(const TrainingData& data, const MethodOptions& o, Timings& t) override {
    auto gl = graph_and_propagation(data, o, t);
    FitResult out;
    out.transductive_prediction = propagation::predict(gl.lp.F, data.classes);
    graph_info(gl, out.info);
    return out;
  }
};

template <class M>
std::unique_ptr<Method> make() {
  return std::make_unique<M>();
}

}  // namespace

const std::vector<MethodInfo>& method_table() {
  static const std::vector<MethodInfo> table = {
      {"soda", "semi-supervised orthogonal discriminant analysis via label propagation",
       "soda-nie2009 eq. (24)-(32), trace ratio by sec. 2.3.2", true, true, &make<Soda>},
      {"oda", "orthogonal discriminant analysis (trace ratio on the labeled samples)",
       "soda-nie2009 eq. (16)", false, true, &make<Oda>},
      {"lda", "regularized LDA on the labeled samples: Sb a = l (St + 1e-3 tr(St)/d I) a",
       "soda-nie2009 eq. (8)/(14)", false, true, &make<Lda>},
      {"lp", "label propagation with the outlier class alone (transductive classifier)",
       "soda-nie2009 eq. (25)-(27)", true, false, &make<LabelPropagation>},
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
