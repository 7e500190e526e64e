#pragma once
/// \file nndescent.hpp
/// Approximate k-nearest-neighbour lists by distributed NN-descent (W. Dong, M. Charikar,
/// K. Li, "Efficient k-nearest neighbor graph construction for generic similarity
/// measures", WWW 2011, Algorithm 2 with local join, incremental search, sampling ρ and
/// early termination δ). The kNN backend behind GraphOptions::knn_method = nndescent.
#include <cstdint>

#include "ssdr/core/dense.hpp"
#include "ssdr/graph/knn_lists.hpp"

namespace ssdr::graph {

/// NN-descent (Dong et al. 2011) as the approximate kNN backend: seed, iterations, sampling.
struct NNDescentOptions {
  uint64_t seed = 1;         ///< random initial lists and sampling; the same seed gives the same lists on any rank count
  double rho = 1.0;          ///< sample rate ρ of Dong et al. §2.5 (ρk new candidates per row and round), (0, 1]
  double delta = 0.001;      ///< stop when fewer than δ·n·k list entries change in a round (§2.6), [0, 1)
  int max_iterations = 30;   ///< rounds at most, ≥ 1
  /// B_f, bytes: the largest float copy of the rank's block kept for the joins (without it,
  /// a cache of converted rows of B_f/4), and the most fetched remote rows a local-join block
  /// may hold (its reply as much again); smaller values save memory and cost time (rows
  /// converted on use, remote rows fetched once per block instead of once per round). ≥ 1 MiB.
  double fetch_budget_bytes = 160.0 * (1 << 20);
  /// Which ranks read each other's float rows in place (an MPI-3 shared-memory window,
  /// MPI_Win_allocate_shared) instead of fetching them every round: 0, the ranks of each node
  /// (MPI_COMM_TYPE_SHARED); g ≥ 1, those of each node in groups of g consecutive ranks (1:
  /// none; tests and benchmarks use it to exercise the fetch across "nodes" on one machine).
  /// A rank's rows are shared only when its float copy fits B_f. The lists do not depend on it.
  int shared_group = 0;
};

/// Approximate kNN lists of the rows of X (n×d, rows distributed, any layout), in the layout
/// of knn_search: row i's k neighbours (self excluded) sorted by (dist2, global index), dist2
/// the exact squared distance Σ_t (x_t − y_t)² summed in index order (so both endpoints of an
/// edge see the same bits, as knn_search gives). Each rank owns its rows' lists; candidate
/// pairs travel with MPI_Alltoallv; the local joins run in blocks of local rows, the remote
/// rows a block needs fetched once (as floats), the dot products read in place from the rows;
/// the ranks of one node read each other's float rows in place from an MPI-3 shared-memory
/// window instead (options.shared_group).
/// The same lists for the same seed on any rank count and any B_f (the file's header says
/// why; ties by global index). Float rows (--precision single) give the
/// lists of their double copy. Collective over X.comm. Memory per rank:
/// its block (double or float), its float copy when that is at most B_f (else rows are converted as a
/// join reads them), about 0.65 KB per local row (lists and candidate sets, K = max(k, 12)),
/// (in the node's shared window when shared, the same bytes), and the remote rows of one
/// local-join block with their reply (at most 2·B_f: all local
/// rows form one block when the other ranks' rows fit, else blocks of at least 256 rows
/// sized to B_f). Fashion-MNIST 10⁶ rows on 2 ranks: 1.2× the rank's share of X in all.
/// \throws ssdr::Error (collectively) when k < 1, k ≥ n, or an option is out of range
///   (naming it: ρ ∉ (0, 1], δ ∉ [0, 1), iterations < 1, B_f < 1 MiB, shared_group < 0).
KnnLists nndescent_search(const RowsView& X, int k, const NNDescentOptions& options);

}  // namespace ssdr::graph
