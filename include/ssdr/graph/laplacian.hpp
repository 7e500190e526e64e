#pragma once
/// \file laplacian.hpp
/// Sparse operators built from a graph: degrees, Laplacians and every matrix of the form
/// diag(a) + diag(s)·A that label propagation (I − I_α D⁻¹A), TCA (I + αL) and SOGE
/// (L + U + αI) need.
#include <petscmat.h>

#include <vector>

#include "ssdr/core/petsc.hpp"

namespace ssdr::graph {

/// Degrees D_ii = Σ_j A_ij of the local rows. Collective over A's communicator.
std::vector<double> degrees(Mat A);

/// M = diag(a) + diag(s)·A for the local rows (a, s: one entry per local row of A), with
/// the diagonal stored even where A has none (A's off-diagonal pattern plus the diagonal,
/// exact preallocation). Collective. \throws ssdr::Error when a or s has the wrong length.
/// Examples: Laplacian L = D − A is a = D, s = −1; I + αL is a = 1 + αD, s = −α.
Owned<Mat> diagonal_plus_scaled(Mat A, const std::vector<double>& a, const std::vector<double>& s);

/// A graph renumbered: B = A(π, π) with each rank keeping its row count, and the row of A
/// behind each local row of B.
struct Reordered {
  Owned<Mat> B;               ///< n×n MPIAIJ, A's local sizes; B_ij = A_{π(i)π(j)}
  std::vector<PetscInt> rows;  ///< π on this rank: A's global row of each local row of B
};

/// Reverse Cuthill–McKee of each rank's diagonal block (PETSc's MatGetOrdering on the edges
/// among the rank's own rows: nothing beyond them is gathered), then B = A(π, π) by
/// MatCreateSubMatrix; every row stays on its rank. Neighbours get nearby numbers, so a
/// product with B gathers the block's rows from nearby memory. Which rows share a rank (and so
/// the halo) is graph::renumber_for_locality's partition. B keeps A's MAT_SYMMETRIC flag.
/// Collective over A's communicator. \throws ssdr::Error on a PETSc failure.
Reordered rcm_reorder(Mat A);

/// The graph Laplacian L = D − A. Collective.
Owned<Mat> laplacian(Mat A);

}  // namespace ssdr::graph
