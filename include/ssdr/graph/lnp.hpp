#pragma once
/// \file lnp.hpp
/// The local reconstruction graph of sllda-zhao2014 §2 (Table 1), after Wang & Zhang's
/// linear neighborhood propagation (LNP): every sample is reconstructed from its k nearest
/// neighbors with non-negative weights summing to one (eq. (2)), the weights are
/// symmetrized, W ← (W + Wᵀ)/2, and normalized, W̃ = D^{-1/2} W D^{-1/2}.
///
/// Table 1's last step, the row normalization W̃ ← D̃⁻¹W̃ (the paper writes W̃D̃⁻¹ in its
/// sample-per-column notation), is the stochastic matrix P = D̃⁻¹W̃ of eq. (3); it is left to
/// propagation::propagate, which forms exactly that P from the symmetric W̃ returned here.
/// So W̃ stays symmetric and can be reused as an ordinary graph.
#include <cstdint>
#include <tuple>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/graph/knn.hpp"

namespace ssdr::graph {

/// Lawson–Hanson non-negative least squares: x = argmin_{x ≥ 0} ‖A x − b‖₂ for a small
/// dense A (rows×cols, column-major, rows ≥ 1) and b (rows). Active-set method of Lawson &
/// Hanson (1974, ch. 23); each passive-set subproblem is solved by Householder QR.
/// Local (no communication). Returns the number of outer iterations in *iterations.
/// \throws ssdr::Error when b has the wrong length or the method does not terminate
///   within 3·cols + 30 outer iterations (it terminates in finitely many in exact arithmetic).
std::vector<double> nnls(const Dense& A, const std::vector<double>& b, int* iterations = nullptr);

/// The exact solution of the reconstruction QP of sllda-zhao2014 eq. (2) for one sample:
///   w = argmin_{w ≥ 0, 1ᵀw = 1} wᵀ (G + r I) w,   r = regularization · tr(G)/k,
/// where G (k×k, replicated column-major, symmetric PSD) is the local Gram matrix
/// G_jl = (x_i − x_j)ᵀ(x_i − x_l) of x_i's neighbors. With G + rI = RᵀR (Cholesky),
/// w = v/Σv for v = argmin_{v ≥ 0} ‖[R; 1ᵀ] v − [0; 1]‖² (NNLS), which is exact: for
/// v = t·w, w on the simplex, the NNLS objective is t²q(w) + (t−1)², minimized at
/// t = 1/(1+q(w)) with value q/(1+q), increasing in q = wᵀ(G+rI)w.
/// When tr(G) = 0 (all neighbors coincide with x_i) every w on the simplex is optimal and
/// the uniform w = 1/k is returned. *iterations: NNLS outer iterations. Local. \throws ssdr::Error when G is not square or
///   regularization < 0, or G + rI is not positive definite (r = 0 with singular G).
std::vector<double> simplex_reconstruction_weights(const Dense& G, double regularization,
                                                   int* iterations = nullptr);

/// Reconstruction weights of every local row of X (n×d, rows distributed) from its k
/// nearest neighbors (self excluded; found by the backend of LnpOptions::knn_method), eq. (2).
struct ReconstructionWeights {
  int k = 0;
  int64_t n_global = 0, row_start = 0, n_local = 0;
  std::vector<int64_t> index;  ///< n_local·k neighbor global indices (knn_search order)
  std::vector<double> weight;  ///< n_local·k weights; each row on the simplex
  int max_nnls_iterations = 0; ///< largest NNLS iteration count over the local rows
};

/// Computes the weights of eq. (2) for every local row of X (n×d) from its k nearest
/// neighbors, found exactly (graph::knn_search), by the lists overload below with its
/// default memory budget. Collective over X.comm.
/// \param regularization  r/(tr(G)/k), 1e-3 by default (sllda spec; LLE's usual choice)
/// \throws ssdr::Error (collectively) when k < 1 or k ≥ n.
ReconstructionWeights reconstruction_weights(const DistMatrix& X, int k, double regularization = 1e-3);

/// The weights of eq. (2) (sllda-zhao2014 §2, Table 1) from given neighbor lists: `lists`
/// holds k = lists.k neighbors (self excluded) of each local row of X (n×d, rows distributed)
/// in X's layout (knn_search's or nndescent_search's lists of X); the result has X's layout,
/// n_local·k weights in the lists' order. The neighbors' rows that live on other ranks are
/// fetched in chunks of local rows (each chunk's rows deduplicated, requested from their
/// owners with one MPI_Alltoallv, freed after the chunk): at most `memory_mib` MiB per rank
/// for the fetched rows and the replies to the other ranks (at least one row per chunk; see
/// detail::reconstruction_chunk_rows), so the memory beyond X and the n_local·k lists does
/// not grow with n. build_lnp_graph passes LnpOptions::nndescent_memory_mib. The weights are
/// the same bits for any budget and rank count. Collective over X.comm (every rank takes part
/// in as many fetches as the rank with the most chunks).
/// \throws ssdr::Error (collectively) when the lists do not match X's layout,
///   regularization < 0, memory_mib ≤ 0, or a row's QP fails (G + rI not positive definite).
ReconstructionWeights reconstruction_weights(const DistMatrix& X, const KnnLists& lists, double regularization = 1e-3,
                                             double memory_mib = 160);

/// The reconstruction-weight graph of SL-LDA (sllda-zhao2014 §3.1, LNP).
struct LnpOptions {
  int k = 8;                     ///< neighbors
  double regularization = 1e-3;  ///< r = regularization · tr(G)/k
  /// How the k neighbors are found (--knn-method, as the kNN graph's GraphOptions::
  /// knn_method): exact, NN-descent, or automatic (exact up to kExactKnnMax rows).
  KnnMethod knn_method = KnnMethod::automatic;
  uint64_t knn_seed = 1;  ///< NN-descent's seed (the run's --seed)
  /// Rows whose exact lists estimate an approximate search's recall (--knn-recall-sample,
  /// graph::knn_recall; 0: not estimated). Unused by the exact search (recall 1).
  int64_t knn_recall_sample = 1000;
  /// NN-descent's memory budget (--nndescent-memory, GraphOptions::nndescent_memory_mib),
  /// also the budget of reconstruction_weights' fetched neighbour rows per chunk of local
  /// rows: neither the lists nor the weights depend on it, so fields() leaves it out.
  double nndescent_memory_mib = 160;
  /// Every field as a tuple, in declaration order (what methods::LnpKey compares).
  auto fields() const { return std::tie(k, regularization, knn_method, knn_seed, knn_recall_sample); }
};

/// The normalized symmetric reconstruction graph of sllda-zhao2014 Table 1.
struct LnpGraph {
  Owned<Mat> W;               ///< n×n MPIAIJ, X's row layout: W̃ = D^{-1/2} (W+Wᵀ)/2 D^{-1/2}, zero diagonal
  std::vector<double> degree; ///< D_ii of (W+Wᵀ)/2 for the local rows (each ≥ 1/2)
  int64_t edges = 0;          ///< undirected edges (pairs i<j with W̃_ij > 0)
  int max_nnls_iterations = 0;
  KnnMethod knn_method = KnnMethod::exact;  ///< the search that found the neighbors
  /// Recall@k of the neighbor lists (graph::knn_recall on LnpOptions::knn_recall_sample rows):
  /// 1 for the exact search, NaN when not estimated.
  double knn_recall = 1.0;
};

/// Builds W̃ from X (n×d, rows distributed; the graph's vertices are X's rows):
/// reconstruction_weights on the k neighbors of options.knn_method (graph::knn_lists: the
/// exact search, or NN-descent with options.knn_seed, whose lists are the same on any rank
/// count; their recall estimated as the kNN graph's; the weights' fetches of neighbour rows
/// within options.nndescent_memory_mib), then W + Wᵀ by MatTranspose + MatAXPY,
/// halved, then scaled by D^{-1/2} on both sides (MatDiagonalScale). Collective over X.comm.
/// \throws ssdr::Error (collectively) when k < 1, k ≥ n or regularization < 0.
LnpGraph build_lnp_graph(const DistMatrix& X, const LnpOptions& options);

}  // namespace ssdr::graph
