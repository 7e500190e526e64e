#pragma once
/// \file common.hpp
/// Building blocks the methods share (so every method composes the same stages).
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "ssdr/core/dense.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/lnp.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/propagation/label_propagation.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "ssdr/solvers/trace_ratio.hpp"

namespace ssdr::methods {

/// Graphs and label propagations of one set of training samples (one data set, split and
/// preprocessing), keyed by every parameter of their graph::GraphOptions (graph_key), so
/// methods with different graphs (e.g. SODA's and TCA's) share one cache safely; see
/// TrainingData::cache. Entries share their PETSc matrices (reference counted) and must not
/// be modified.
struct GraphCache {
  std::map<std::string, graph::Graph> graphs;
  /// The kNN lists the graphs were built from, by backend (lists_key): a graph with another
  /// weight, σ or a smaller k (exact backend) is built from them without a new search.
  std::map<std::string, graph::KnnLists> lists;
  /// SL-LDA's reconstruction-weight (LNP) graphs, by k and regularization.
  std::map<std::string, graph::LnpGraph> lnp_graphs;
  std::map<std::string, propagation::PropagationResult> propagations;
  /// Soft-label scatter matrices (scatter::soft_scatter of the training rows with a cached
  /// propagation's F), by the propagation's key.
  std::map<std::string, scatter::ScatterMatrices> scatters;
  /// The trace ratio's first iteration (m-independent) per scatter set and μ.
  std::map<std::string, solvers::TraceRatioStart> trace_ratio_starts;
  /// σ₀ = kernels::mean_pairwise_distance of the samples (input space), 0 until computed:
  /// an RBF sweep over sigma_scale computes the O(n²d) mean once.
  double sigma0 = 0;
  int hits = 0, misses = 0;
};

/// S + μI. Local.
Dense add_identity(const Dense& S, double mu);
/// tr(S). Local.
double trace(const Dense& S);

/// Gives the eigenvectors W (d×m, replicated) of a generalized eigenproblem S w = λ B w, as
/// solvers::sym_eigen returns them with B (wᵀBw = 1, largest-magnitude entry positive),
/// the column scale `n`: unit → every column scaled to Euclidean length 1 (a positive factor:
/// same eigenvectors, span and signs); metric → unchanged. Records info["normalization"]
/// and returns `n` (for FitResult::normalization). Local. \throws ssdr::Error (marked
/// collective) naming `what` when a column is zero or not finite (unit only).
Normalization scale_generalized_eigenvectors(Dense& W, Normalization n, const std::string& what,
                                             nlohmann::json& info);

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
/// `cache` and `key` (optional): the GraphCache and the scatter matrices' cache key, under
/// which the m-independent first iteration is kept for every m (solvers::TraceRatioStart).
FitResult solve_trace_ratio(const scatter::ScatterMatrices& S, int64_t m, const MethodOptions& o,
                            MPI_Comm comm, Timings& t, GraphCache* cache = nullptr, const std::string& key = "");

/// The cache key of a graph: every field of `g` (k, weights, σ rule, s, σ), printed exactly.
/// Local.
std::string graph_key(const graph::GraphOptions& g);

/// The graph `g` (usually method_graph(name, o)) on data.graph_data() (n_t vertices, X's row
/// layout), from data.cache when present there (keyed by graph_key), built and timed as
/// "knn_graph" otherwise. The CLR graph (weight clr) with g.components = 0 asks for
/// data.classes connected components. Collective over data.X.comm.
/// \throws ssdr::Error (collectively) as graph::build_knn_graph.
graph::Graph knn_graph(const TrainingData& data, const graph::GraphOptions& g, Timings& t);

/// Graph `g` plus label propagation with the outlier class (o.propagation), both cached,
/// timed as "knn_graph" and "propagation". Collective over data.X.comm. `key` is the
/// propagation's cache key (graph and propagation options).
struct GraphAndLabels {
  graph::Graph g;
  propagation::PropagationResult lp;
  std::string key;
};
/// Builds (or takes from the cache) the graph `g` and the propagation of `o`; see GraphAndLabels.
GraphAndLabels graph_and_propagation(const TrainingData& data, const graph::GraphOptions& g,
                                     const MethodOptions& o, Timings& t);

/// The soft labels F of a propagation as FitResult::soft_labels: a copy whose communicator is
/// data.X's (F's own is the graph's PETSc communicator, which ends with the graph). Local.
DistMatrix soft_labels(const propagation::PropagationResult& lp, const TrainingData& data);

/// soft_scatter(data.X, lp.F, c) of graph_and_propagation's result, cached in data.cache by
/// the propagation's key and X's features (every m, μ of a sweep reuses it), which is
/// soft_scatter_key. Timed as "scatter". Collective.
scatter::ScatterMatrices soft_scatter(const TrainingData& data, const GraphAndLabels& gl, Timings& t);
std::string soft_scatter_key(const TrainingData& data, const GraphAndLabels& gl);

/// Records the graph used as info["graph"] = {k, weight, sigma_rule and sigma, t (heat),
/// edges, mean_degree, mean_edge_dist2}. Local.
void graph_info(const graph::Graph& g, const graph::GraphOptions& options, nlohmann::json& info);

}  // namespace ssdr::methods
