#pragma once
// Private to src/graph and its tests: the exact kNN search with the precision of its
// candidate filter as a parameter, so tests can check that the single-precision filter gives
// the same lists as the double one.
#include <string>

#include "ssdr/graph/knn.hpp"

namespace ssdr::graph::detail {

/// Exact squared distance Σ_t (x_t − y_t)², summed in index order t = 0..d−1: the bit pattern
/// both endpoints of an edge agree on, whichever backend or rank computes it.
inline double exact_dist2(const double* x, const double* y, int64_t d) {
  double s = 0;
  for (int64_t t = 0; t < d; ++t) {
    const double diff = x[t] - y[t];
    s += diff * diff;
  }
  return s;
}

/// The error for a k outside [1, n): "--knn K must be ...".
inline std::string k_message(int k, int64_t n) {
  if (k < 1) return "--knn " + std::to_string(k) + " must be at least 1";
  return "--knn " + std::to_string(k) + " must be smaller than the number of graph samples (" +
         std::to_string(n) + ")";
}

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
