#pragma once
/// \file knn_lists.hpp
/// The kNN lists every backend returns (graph/knn.hpp's exact search, graph/nndescent.hpp's
/// NN-descent) and every graph is built from: a leaf header, so the backends depend on it and
/// the dispatcher (knn.hpp) on them, one way.
#include <cstdint>
#include <vector>

namespace ssdr::graph {

/// k nearest neighbors of each local row of X (self excluded), in X's global row numbering.
/// Row i's neighbors are index[i*k .. i*k+k), sorted by (squared distance, global index):
/// distance ties go to the smaller global index, so the lists do not depend on the
/// partition. dist2 holds exact squared Euclidean distances Σ_t (x_t − y_t)², computed in a
/// fixed order so both endpoints of an edge see the same value bit for bit.
struct KnnLists {
  int k = 0;
  int64_t n_global = 0, row_start = 0, n_local = 0;
  std::vector<int64_t> index;  ///< n_local·k global indices
  std::vector<double> dist2;   ///< n_local·k squared distances
};

}  // namespace ssdr::graph
