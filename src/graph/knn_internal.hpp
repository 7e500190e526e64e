#pragma once
// Private to src/graph and its tests: the exact kNN search with the precision of its
// candidate filter as a parameter, so tests can check that the single-precision filter gives
// the same lists as the double one.
#include "ssdr/graph/knn.hpp"

namespace ssdr::graph::detail {

/// knn_search with the GEMM candidate filter in `Real` (float: the default path; double:
/// the reference). The lists are the same for both (the filter's slack covers its rounding
/// and every candidate is re-ranked by its exact double distance). Collective over X.comm.
template <class Real>
KnnLists exact_knn(const DistMatrix& X, int k);

/// Filter slack coefficient c of the exact search: |approx − exact| ≤ c·(‖x−μ‖² + ‖y−μ‖²)
/// (plus an absolute underflow term), for the GEMM in `Real` over d features.
template <class Real>
double filter_slack(int64_t d);

}  // namespace ssdr::graph::detail
