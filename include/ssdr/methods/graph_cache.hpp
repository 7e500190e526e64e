#pragma once
/// \file graph_cache.hpp
/// The store of what a sweep reuses for one set of prepared rows. Included by the driver
/// (which keeps one per driver::RowsKey and decides what is shared) and by methods/common.cpp
/// (which implements the lookups); a method sees it only as an incomplete type through
/// TrainingData::cache and asks methods/common.hpp's functions for what it needs.
#include <map>
#include <memory>
#include <vector>

#include "ssdr/methods/cache_keys.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "ssdr/solvers/block_lanczos.hpp"
#include "ssdr/solvers/trace_ratio.hpp"

namespace ssdr::methods {

/// What a sweep reuses for one set of prepared rows (one data set, transductive set and
/// preprocessing; the driver keeps one per driver::RowsKey and decides what is shared), by
/// typed key, so methods with different graphs (e.g. SODA's and TCA's) share one store
/// safely. Entries share their PETSc matrices (reference counted) and must not be modified.
struct GraphCache {
  std::map<GraphKey, graph::Graph> graphs;
  /// The kNN lists the graphs were built from: a graph with another weight, σ or a smaller
  /// k (exact backend) is built from them without a new search.
  std::map<ListsKey, graph::KnnLists> lists;
  /// SL-LDA's reconstruction-weight (LNP) graphs.
  std::map<LnpKey, graph::LnpGraph> lnp_graphs;
  std::map<PropagationKey, propagation::PropagationResult> propagations;
  /// Scatter matrices weighed by a cached propagation's F (shared, not copied: at d' = 784
  /// one set is 15 MB, and a copy per fit was a tenth of SL-LDA's fit in a sweep).
  std::map<ScatterKey, std::shared_ptr<const scatter::ScatterMatrices>> scatters;
  /// The trace ratio's first iteration (m-independent) per scatter set, μ and prefix.
  std::map<TraceRatioStartKey, solvers::TraceRatioStart> trace_ratio_starts;
  /// Block Lanczos recurrences (TCA's X S Xᵀ at every α): grown by the fits that need more
  /// steps, which changes no form an earlier fit took (solvers::BlockLanczos).
  std::map<QuadratureKey, std::shared_ptr<solvers::BlockLanczos>> quadratures;
  /// The quadratures' keys, oldest first: beyond kMaxQuadratures the oldest is dropped.
  std::vector<QuadratureKey> quadrature_order;
  static constexpr size_t kMaxQuadratures = 2;
  /// σ₀ = kernels::mean_pairwise_distance of the samples (input space), 0 until computed:
  /// an RBF sweep over sigma_scale computes the O(n²d) mean once.
  double sigma0 = 0;
  int hits = 0, misses = 0;  ///< graph lookups
};

}  // namespace ssdr::methods
