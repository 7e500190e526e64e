#pragma once
/// \file common.hpp
/// Building blocks the methods share (so every method composes the same stages).
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ssdr/core/dense.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/lnp.hpp"
#include "ssdr/methods/cache_keys.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/propagation/label_propagation.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "ssdr/scatter/shrinkage.hpp"
#include "ssdr/solvers/block_lanczos.hpp"
#include "ssdr/solvers/trace_ratio.hpp"

namespace ssdr::methods {

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

/// The discriminant eigenproblem of LDA, SDA and SL-LDA: the m largest solutions of
/// S_b w = λ B w (S_b, B d×d and replicated, B symmetric positive definite; soda-nie2009
/// eq. (8)/(14) with B = S_t + rI), by solvers::sym_eigen with B (prefix eigen_prefix),
/// the columns scaled by `n` (scale_generalized_eigenvectors). Sets out.W (d×m),
/// out.normalization, out.info["normalization"] and out.info["eigenvalues"], and returns the
/// m eigenvalues, largest first. With Sb_factor (d×r, S_b = Sb_factor·Sb_factorᵀ, e.g.
/// ScatterMatrices::Sb_factor) and m ≤ r, solvers::largest_low_rank_eigen solves it as the
/// rank-r problem it is. Collective over comm. \throws ssdr::Error as solvers::sym_eigen and
/// scale_generalized_eigenvectors (naming `what`).
std::vector<double> largest_generalized_eigenvectors(const Dense& Sb, const Dense& B, int64_t m, Normalization n,
                                                     const std::string& what, const std::string& eigen_prefix,
                                                     MPI_Comm comm, FitResult& out, const Dense* Sb_factor = nullptr);

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

/// The shrunk scatter matrices of the labeled samples (scatter::shrunk_scatter, --shrinkage:
/// shrinkage is MethodOptions::shrinkage, auto or a coefficient) in the coordinates of the
/// user's features (data.input_basis); records `shrinkage` and the coefficients used
/// (`shrinkage_class_coefficients`, `shrinkage_total_coefficient`) in info. Collective.
/// Times itself as "scatter".
scatter::ShrunkScatter shrunk_labeled_scatter(const TrainingData& data, double shrinkage, Timings& t,
                                              nlohmann::json& info);

/// Orthogonal trace ratio on (Sb, Sw + μI) with μ = mu_scale·max diag(Sw) (soda-nie2009
/// eq. (16)/(32); SODA's and ODA's mu_scale, §5.2: 0.1), m columns; fills W, trace_ratio and
/// info (μ, iterations, history).
/// Collective over data.X.comm. Times itself as "eigensolve".
/// `key` (optional): the scatter matrices' key; with the sweep's cache (data.cache) the
/// m-independent first iteration is kept for every m (solvers::TraceRatioStart) under
/// trace_ratio_start_key(key, μ, o.trace_ratio_prefix).
FitResult solve_trace_ratio(const scatter::ScatterMatrices& S, int64_t m, double mu_scale, const MethodOptions& o,
                            const TrainingData& data, Timings& t, const std::optional<ScatterKey>& key = std::nullopt);

/// The key of the labeled samples' hard-label scatter matrices (labeled_scatter) of `data`:
/// scatter_key(std::nullopt, data.features). Local.
ScatterKey labeled_scatter_key(const TrainingData& data);

/// The graph `g` (usually method_graph(row, o)) on data.graph_data() (n_t vertices, X's row
/// layout), from the sweep's cache (data.cache) when present there (keyed by graph_key), built
/// and timed as "knn_graph" otherwise. The CLR graph (weight clr) with g.components = 0 asks
/// for data.classes connected components. Collective over data.X.comm.
/// \throws ssdr::Error (collectively) as graph::build_knn_graph.
graph::Graph knn_graph(const TrainingData& data, const graph::GraphOptions& g, Timings& t);

/// The key knn_graph(data, g, t) keeps its graph under (g with CLR's components resolved).
/// Local.
GraphKey resolved_graph_key(const TrainingData& data, const graph::GraphOptions& g);

/// The block Lanczos recurrence keyed `key`: the sweep's (data.cache), where a later fit
/// grows the one an earlier fit started, or a new one from `make` (kept in the cache when
/// there is one). Collective over data.X.comm when `make` runs (every rank of a sweep holds
/// the same cache entries, so all of them take the same branch).
std::shared_ptr<solvers::BlockLanczos> block_lanczos(const TrainingData& data, const QuadratureKey& key,
                                                     const std::function<std::shared_ptr<solvers::BlockLanczos>()>& make);

/// Graph `g` plus label propagation with the outlier class (o.propagation), both cached,
/// timed as "knn_graph" and "propagation". Collective over data.X.comm. `key` is the
/// propagation's cache key (graph and propagation options).
struct GraphAndLabels {
  /// The graph's record (k, σ, edges, recall, ...); its matrix g.A is released (null) once the
  /// propagation has its own copy: at 10⁷ rows every graph copy is ~1 GB per rank.
  graph::Graph g;
  propagation::PropagationResult lp;
  PropagationKey key;
};
/// Builds (or takes from the cache) the graph `g` and the propagation of `o`; see GraphAndLabels.
GraphAndLabels graph_and_propagation(const TrainingData& data, const graph::GraphOptions& g,
                                     const MethodOptions& o, Timings& t);

/// The soft labels F of a propagation as FitResult::soft_labels: a copy whose communicator is
/// data.X's (F's own is the graph's PETSc communicator, which ends with the graph). Local.
DistMatrix soft_labels(const propagation::PropagationResult& lp, const TrainingData& data);

/// soft_scatter(data.X, lp.F, c) of graph_and_propagation's result, kept in the sweep's
/// cache under soft_scatter_key (every m, μ of a sweep reuses it, shared and not copied).
/// Timed as "scatter". Collective.
std::shared_ptr<const scatter::ScatterMatrices> soft_scatter(const TrainingData& data, const GraphAndLabels& gl, Timings& t);
/// scatter_key(gl.key, data.features). Local.
ScatterKey soft_scatter_key(const TrainingData& data, const GraphAndLabels& gl);

/// The LNP graph `g` of data.X (graph::build_lnp_graph; it is built on X itself), from the
/// sweep's cache under lnp_key(g, data.features) or built and timed as "knn_graph".
/// Collective over data.X.comm.
graph::LnpGraph lnp_graph(const TrainingData& data, const graph::LnpOptions& g, Timings& t);

/// propagation::propagate(W, data.labels, data.classes, o.propagation) on the LNP graph
/// keyed `graph` (W its matrix), from the sweep's cache under propagation_key(graph,
/// o.propagation) or computed and timed as "propagation". Collective over data.X.comm.
propagation::PropagationResult lnp_propagation(const TrainingData& data, const LnpKey& graph, Mat W,
                                               const MethodOptions& o, Timings& t);

/// scatter::soft_scatter(data.X, F, data.classes) kept in the sweep's cache under `key` (the
/// key of F's propagation and X's features; shared, not copied). Timed as "scatter".
/// Collective.
std::shared_ptr<const scatter::ScatterMatrices> soft_scatter(const TrainingData& data, const DistMatrix& F,
                                                             const ScatterKey& key, Timings& t);

/// Records the graph used as info["graph"] = {k, weight, sigma_rule and sigma, t (heat),
/// edges, mean_degree, mean_edge_dist2}. Local.
void graph_info(const graph::Graph& g, const graph::GraphOptions& options, nlohmann::json& info);

}  // namespace ssdr::methods
