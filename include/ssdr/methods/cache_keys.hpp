#pragma once
/// \file cache_keys.hpp
/// The typed keys of what a sweep reuses (methods/graph_cache.hpp holds the store; the driver
/// keeps one per prepared rows, driver::GraphCaches, whose RowsKey is the outer key). Each
/// key holds the option structs its value depends on and is compared field by field (the
/// structs' own fields(), a std::tie defined once beside their fields, then the key's other
/// fields), never as formatted text; one function builds each kind.
/// The methods reach the store only through methods/common.hpp's functions (knn_graph,
/// graph_and_propagation, soft_scatter, solve_trace_ratio, lnp_graph, cached_propagation).
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <variant>

#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/lnp.hpp"
#include "ssdr/propagation/label_propagation.hpp"

namespace ssdr::methods {

/// The key of a kNN graph: every field of graph::GraphOptions. Built by graph_key.
struct GraphKey {
  graph::GraphOptions options;
  /// The fields as a tuple: GraphOptions::fields(). Local.
  auto fields() const { return options.fields(); }
  /// Field-by-field order and equality. Local.
  bool operator<(const GraphKey& o) const { return fields() < o.fields(); }
  bool operator==(const GraphKey& o) const { return fields() == o.fields(); }
  bool operator!=(const GraphKey& o) const { return !(*this == o); }
};
/// The GraphKey of `g` (every field). Local.
GraphKey graph_key(const graph::GraphOptions& g);

/// The key of searched kNN lists: the backend that searched them (graph::resolve'd), its seed
/// and k for NN-descent; seed 0 and k 0 for the exact backend, whose lists of a larger k hold
/// those of a smaller one. Built by lists_key.
struct ListsKey {
  graph::KnnMethod backend = graph::KnnMethod::exact;
  uint64_t seed = 0;
  int k = 0;
  /// The fields as a tuple. Local.
  auto fields() const { return std::tie(backend, seed, k); }
  /// Field-by-field order. Local.
  bool operator<(const ListsKey& o) const { return fields() < o.fields(); }
  bool operator==(const ListsKey& o) const { return fields() == o.fields(); }
};
/// The ListsKey of the lists a graph `g` reads (`need` neighbours: k, or k + 1 for the
/// adaptive weights) on n samples. Local.
ListsKey lists_key(const graph::GraphOptions& g, int need, int64_t n);

/// The key of an LNP (reconstruction-weight) graph: every field of graph::LnpOptions and what
/// the rows it is built on hold (TrainingData::features). Built by lnp_key.
struct LnpKey {
  graph::LnpOptions options;
  std::string features;
  /// The fields as a tuple: LnpOptions::fields(), then features. Local.
  auto fields() const { return std::tuple_cat(options.fields(), std::tie(features)); }
  /// Field-by-field order. Local.
  bool operator<(const LnpKey& o) const { return fields() < o.fields(); }
  bool operator==(const LnpKey& o) const { return fields() == o.fields(); }
};
/// The LnpKey of `g` on rows holding `features`. Local.
LnpKey lnp_key(const graph::LnpOptions& g, const std::string& features);

/// The key of a label propagation: its graph's key and every field of
/// propagation::PropagationOptions. Built by propagation_key.
struct PropagationKey {
  std::variant<GraphKey, LnpKey> graph;
  propagation::PropagationOptions options;
  /// The fields as a tuple: the graph's key, then PropagationOptions::fields(). Local.
  auto fields() const { return std::tuple_cat(std::tie(graph), options.fields()); }
  /// Field-by-field order. Local.
  bool operator<(const PropagationKey& o) const { return fields() < o.fields(); }
  bool operator==(const PropagationKey& o) const { return fields() == o.fields(); }
};
/// The PropagationKey of the propagation `p` on the graph keyed `graph`. Local.
PropagationKey propagation_key(const std::variant<GraphKey, LnpKey>& graph, const propagation::PropagationOptions& p);

/// The key of scatter matrices: the soft labels F that weigh them (their propagation's key;
/// none: the labeled samples' hard labels) and what X holds (TrainingData::features). Built
/// by scatter_key.
struct ScatterKey {
  std::optional<PropagationKey> soft_labels;
  std::string features;
  /// The fields as a tuple. Local.
  auto fields() const { return std::tie(soft_labels, features); }
  /// Field-by-field order. Local.
  bool operator<(const ScatterKey& o) const { return fields() < o.fields(); }
  bool operator==(const ScatterKey& o) const { return fields() == o.fields(); }
};
/// The ScatterKey of X holding `features` weighed by the propagation `soft_labels`
/// (std::nullopt: the hard labels of the labeled samples). Local.
ScatterKey scatter_key(const std::optional<PropagationKey>& soft_labels, const std::string& features);

/// The key of the trace ratio's first iteration (m-independent, solvers::TraceRatioStart):
/// its scatter matrices, μ and the SLEPc prefix. Built by trace_ratio_start_key.
struct TraceRatioStartKey {
  ScatterKey scatter;
  double mu = 0;
  std::string prefix;
  /// The fields as a tuple. Local.
  auto fields() const { return std::tie(scatter, mu, prefix); }
  /// Field-by-field order. Local.
  bool operator<(const TraceRatioStartKey& o) const { return fields() < o.fields(); }
  bool operator==(const TraceRatioStartKey& o) const { return fields() == o.fields(); }
};
/// The TraceRatioStartKey of the scatter set `scatter` with μ and the SLEPc `prefix`. Local.
TraceRatioStartKey trace_ratio_start_key(const ScatterKey& scatter, double mu, const std::string& prefix);

/// The key of a block Lanczos recurrence (solvers::BlockLanczos) on a graph's Laplacian: the
/// graph's key, what the rows hold (TrainingData::features) and which block of them started it
/// (a name such as "tca_pca", and its width). Built by quadrature_key.
struct QuadratureKey {
  GraphKey graph;
  std::string features;
  std::string block;
  int64_t width = 0;
  /// The fields as a tuple. Local.
  auto fields() const { return std::tie(graph, features, block, width); }
  /// Field-by-field order. Local.
  bool operator<(const QuadratureKey& o) const { return fields() < o.fields(); }
  bool operator==(const QuadratureKey& o) const { return fields() == o.fields(); }
};
/// The QuadratureKey of the block `block` (`width` columns) of rows holding `features`, on the
/// graph keyed `graph`. Local.
QuadratureKey quadrature_key(const GraphKey& graph, const std::string& features, const std::string& block,
                             int64_t width);

}  // namespace ssdr::methods
