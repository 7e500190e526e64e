#pragma once
/// \file common.hpp
/// Building blocks the methods share (so every method composes the same stages).
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "ssdr/core/dense.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/propagation/label_propagation.hpp"
#include "ssdr/scatter/scatter.hpp"

namespace ssdr::methods {

/// Graphs and label propagations of one set of training samples (one data set, split and
/// preprocessing), keyed by their options; see TrainingData::cache. Entries share their
/// PETSc matrices (reference counted) and must not be modified.
struct GraphCache {
  std::map<std::string, graph::Graph> graphs;
  std::map<std::string, propagation::PropagationResult> propagations;
  /// σ₀ = kernels::mean_pairwise_distance of the samples (input space), 0 until computed:
  /// an RBF sweep over sigma_scale computes the O(n²d) mean once.
  double sigma0 = 0;
  int hits = 0, misses = 0;
};

/// S + μI. Local.
Dense add_identity(const Dense& S, double mu);
/// tr(S). Local.
double trace(const Dense& S);

/// The labeled rows of the training data (rows stay on their rank) and their labels.
struct LabeledPart {
  DistMatrix X;             ///< l×d', l = number of labeled samples
  std::vector<int> labels;  ///< one per local row of X, in 0..c−1
};
/// Collective over data.X.comm.
LabeledPart labeled_part(const TrainingData& data);

/// Hard-label scatter matrices of the labeled samples (LDA's (4)–(6) divided by l).
/// Collective. Times itself as "scatter".
scatter::ScatterMatrices labeled_scatter(const TrainingData& data, Timings& t);

/// Orthogonal trace ratio on (Sb, Sw + μI) with μ = o.mu_scale·max diag(Sw) (soda-nie2009
/// eq. (16)/(32)), m columns; fills W, trace_ratio and info (μ, iterations, history).
/// Collective. Times itself as "eigensolve".
FitResult solve_trace_ratio(const scatter::ScatterMatrices& S, int64_t m, const MethodOptions& o,
                            MPI_Comm comm, Timings& t);

/// The kNN graph (o.graph) on data.X, timed as "knn_graph". Collective.
graph::Graph knn_graph(const TrainingData& data, const MethodOptions& o, Timings& t);

/// Graph plus label propagation with the outlier class (o.propagation), timed as
/// "knn_graph" and "propagation". Collective.
struct GraphAndLabels {
  graph::Graph g;
  propagation::PropagationResult lp;
};
GraphAndLabels graph_and_propagation(const TrainingData& data, const MethodOptions& o, Timings& t);

/// Records σ, d̄, edges and propagation iterations in info.
void graph_info(const GraphAndLabels& r, nlohmann::json& info);

}  // namespace ssdr::methods
