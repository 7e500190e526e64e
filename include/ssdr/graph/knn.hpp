#pragma once
/// \file knn.hpp
/// Exact k-nearest-neighbor search and the symmetrized neighborhood graph
/// (soda-nie2009 §3.1, eq. (24), (42), (43)).
#include <cstdint>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/petsc.hpp"

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

/// Exact kNN by a ring over the ranks: each rank keeps its rows and the row blocks of the
/// other ranks travel around the ring; distances ‖x‖²+‖y‖²−2xᵀy by BLAS GEMM in
/// cache-sized tiles select candidates, whose distances are then recomputed exactly.
/// Duplicate points (distance 0) are neighbors like any other. Collective over X.comm.
/// Memory per rank: its block plus one travelling block plus O(tile²).
/// \throws ssdr::Error (collectively) when k < 1 or k ≥ n.
KnnLists knn_search(const DistMatrix& X, int k);

/// Edge weights of the graph.
enum class EdgeWeight {
  heat,    ///< A_ij = exp(−‖x_i−x_j‖²/σ²), eq. (24), σ from eq. (42)
  cosine,  ///< A_ij = max(0, x_iᵀx_j/(‖x_i‖‖x_j‖)), eq. (43) (clamped at 0)
  binary   ///< A_ij = 1 (0/1 graph, as SDA uses)
};

struct GraphOptions {
  int k = 8;                           ///< neighbors
  EdgeWeight weight = EdgeWeight::heat;
  double sigma_s = 0;                  ///< s of eq. (42); 0 → 1e-3/k
  double sigma = 0;                    ///< explicit σ (> 0 overrides eq. (42))
};

/// The symmetrized neighborhood graph: an edge joins i and j when i ∈ kNN(j) or j ∈ kNN(i).
struct Graph {
  Owned<Mat> A;               ///< n×n symmetric MPIAIJ, X's row layout, zero diagonal
  double sigma = 0;           ///< heat-kernel σ actually used
  double mean_edge_dist2 = 0; ///< d̄ of eq. (42): mean squared length over undirected edges
  int64_t edges = 0;          ///< number of undirected edges
};

/// For each local row, its neighbors in the symmetrized graph (union of both directions),
/// as sorted global indices with the exact squared distances. Collective (edges are
/// exchanged with MPI_Alltoallv so each rank holds the full rows it owns).
struct SymmetricEdges {
  int64_t n_global = 0, row_start = 0, n_local = 0;
  std::vector<int64_t> row_ptr;  ///< n_local+1 offsets (CSR)
  std::vector<int64_t> col;      ///< global column indices, sorted within a row
  std::vector<double> dist2;     ///< squared distances
};
SymmetricEdges symmetrize(const KnnLists& knn, MPI_Comm comm);

/// Builds the weighted graph from X: knn_search, symmetrize, weights, exact MPIAIJ
/// preallocation. X's rows must be the graph's vertices (e.g. the transductive samples).
/// Collective over X.comm. \throws ssdr::Error (collectively) for k < 1, k ≥ n, s ∉ (0,1).
Graph build_knn_graph(const DistMatrix& X, const GraphOptions& options);

}  // namespace ssdr::graph
