#pragma once
/// \file locality.hpp
/// A symmetric renumbering of a graph's vertices that puts each vertex's neighbours on as few
/// ranks as possible (a graph partitioning by PETSc's MatPartitioning: by default ssdr's own
/// type "levels", a Cuthill–McKee level order cut into one range per rank; PT-Scotch on
/// request), so that a sparse product with the graph exchanges its halo with a few
/// neighbouring ranks instead of with every rank (rows in file order link every rank to
/// nearly every other).
#include <petscmat.h>

#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/petsc.hpp"

namespace ssdr::graph {

/// The MatPartitioning type registered by ssdr: the vertices in a distributed Cuthill–McKee
/// level order (George & Liu 1981, ch. 4), cut into part->n contiguous ranges of equal size.
/// Edges join the same or adjacent levels, so a range borders mostly the ranges beside it:
/// on Fashion-MNIST's kNN graph (F = 0.2) 2.8 partners per rank at P = 8 against PT-Scotch's
/// 6.6 and file order's 7.1, with a halo 4.3× PT-Scotch's and 27 % of file order's
/// (docs/scaling.md). Its order depends on the
/// graph only (no random stream, no rank count).
inline constexpr const char* kLevelsPartitioner = "levels";

/// Registers kLevelsPartitioner with PETSc (once per process; later calls do nothing), so
/// `-<prefix>mat_partitioning_type levels` names it. Called by renumber_for_locality.
/// Not collective; PETSc must be initialized. \throws ssdr::Error on a PETSc failure.
void register_partitioners();

/// A graph A (n×n, rows distributed) renumbered: B = Π A Πᵀ with B's rows distributed as the
/// partitioning chose (uneven counts), and the moves of per-vertex data between A's layout
/// and B's. Empty (`renumbered()` false) when nothing was renumbered (one rank, or the
/// partitioning type `current`): then B is A itself.
struct Renumbering {
  Owned<Mat> B;            ///< the renumbered graph (or A)
  Owned<IS> rows;          ///< B's local rows as A's global row indices (empty when not renumbered)
  Owned<VecScatter> move;  ///< A's layout → B's layout (SCATTER_REVERSE: back)
  Owned<Vec> a_vec, b_vec; ///< work vectors in A's and B's layouts
  /// The MatPartitioning type used ("" when not renumbered). With kLevelsPartitioner, B's
  /// rows are numbered by their level positions: each rank's rows in the global
  /// Cuthill–McKee level order.
  std::string partitioner;
  /// Whether B is a renumbered copy (false: B is A). Local.
  bool renumbered() const { return rows.get() != nullptr; }
};

/// Partitions the graph A (symmetric, non-negative, zero diagonal; n×n MPIAIJ, rows
/// distributed) into one part per rank of its communicator by PETSc's MatPartitioning on A's
/// pattern (unit edge and vertex weights; options prefix `prefix`, so
/// `-lp_mat_partitioning_type levels|ptscotch|current|average|...` chooses it; default
/// kLevelsPartitioner, fewest partners; `ptscotch`, the smallest halo; `current`, no
/// renumbering) and renumbers A accordingly (MatCreateSubMatrix with the
/// inverse of ISPartitioningToNumbering). The result is the same graph in another order:
/// solves on B agree with solves on A to their tolerance. The same graph gets the same
/// partition every time on a given rank count (levels: by construction; PT-Scotch with one
/// thread, SCOTCH_PTHREAD_NUMBER=1 unless set, and its random stream reset before each call).
/// Collective over A's communicator.
/// \throws ssdr::Error (collectively) on a PETSc failure, with PETSc's message.
Renumbering renumber_for_locality(Mat A, const std::string& prefix);

/// Per-vertex integers (one per local row of A, exact as doubles: |v| < 2^53) moved to B's
/// rows (one per local row of B). Collective. \throws ssdr::Error when v is not one per
/// local row of A.
std::vector<int> to_renumbered(const Renumbering& r, const std::vector<int>& v);

/// A row-distributed matrix in B's rows (n×k, B's local rows) moved back to A's rows: the
/// rows of A's vertices in A's layout, column by column through the scatter; its comm is
/// `comm` (also when nothing was renumbered). Collective.
DistMatrix from_renumbered(const Renumbering& r, const DistMatrix& X, MPI_Comm comm);

}  // namespace ssdr::graph
