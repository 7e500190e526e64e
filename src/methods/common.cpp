#include "ssdr/methods/common.hpp"

#include "ssdr/core/progress.hpp"
#include "ssdr/solvers/trace_ratio.hpp"

namespace ssdr::methods {

double trace(const Dense& S) {
  double t = 0;
  for (int64_t i = 0; i < S.rows; ++i) t += S(i, i);
  return t;
}

scatter::ScatterMatrices labeled_scatter(const TrainingData& data, Timings& t) {
  Phase phase("scatter", &t);
  LabeledPart l = labeled_part(data);
  return scatter::soft_scatter(l.X, scatter::one_hot(l.labels, data.classes, l.X.comm), data.classes);
}

graph::Graph knn_graph(const TrainingData& data, const MethodOptions& o, Timings& t) {
  Phase phase("knn_graph", &t);
  return graph::build_knn_graph(data.graph_data(), o.graph);
}

Dense add_identity(const Dense& S, double mu) {
  Dense R = S;
  for (int64_t i = 0; i < R.rows; ++i) R(i, i) += mu;
  return R;
}

/// Labeled rows of the training data with their hard labels.
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

GraphAndLabels graph_and_propagation(const TrainingData& data, const MethodOptions& o, Timings& t) {
  GraphAndLabels r;
  r.g = knn_graph(data, o, t);
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


}  // namespace ssdr::methods
