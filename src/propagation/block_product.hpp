// The graph times an n×m block of interlaced columns, the block CG's product
// (label_propagation.cpp). PETSc's MPIMAIJ MatMult is: start the halo, the diagonal block's
// MatMult, end the halo, then MatMultAdd of the off-diagonal block over every local row,
// which reads and writes the whole result block once more although only the rows with a
// ghost neighbour change (28 of 5·10⁵ per rank on the tall set). This product does the same
// with PETSc's own pieces (its SEQMAIJ kernel on the diagonal block, a VecScatter for the
// halo) and adds the off-diagonal block on those rows only, each row's sums from 0 over its
// entries, then added: the order of PETSc's fixed-width MAIJ kernels (dof 2–11, 16, 18),
// hence the same bits as MatMult on the MPIMAIJ there; its width-1 and generic kernels add
// onto the diagonal block's sums instead (a rounding apart; tests/unit/label_propagation_test).
#pragma once

#include <petscmat.h>

#include <cstdint>
#include <vector>

#include "ssdr/core/petsc.hpp"

namespace ssdr::propagation::detail {

/// Q = A P for A (n×n, SEQAIJ or MPIAIJ) and P, Q row-major n_local×m blocks of A's rows.
/// Keeps a reference to A, which must not change while this object lives.
class BlockProduct {
 public:
  /// Collective over A's communicator. \throws ssdr::Error when m < 1, A is not AIJ, or a
  /// PETSc call fails.
  BlockProduct(Mat A, int m);
  ~BlockProduct();
  BlockProduct(const BlockProduct&) = delete;
  BlockProduct& operator=(const BlockProduct&) = delete;

  /// A Vec over A's local rows × m values (block size m): P and Q. Collective.
  Owned<Vec> block() const;
  /// q = A p (two block() Vecs, q ≠ p). Collective.
  void apply(Vec p, Vec q);

 private:
  Owned<Mat> A_;
  int m_ = 0;
  PetscInt n_ = 0;
  Owned<Mat> diag_;            ///< SEQMAIJ of A's diagonal block (A itself on one rank)
  Owned<Vec> x_local_, y_local_;  ///< sequential Vecs placed over p's and q's local arrays
  // The off-diagonal block (compressed ghost columns) on its non-empty rows only.
  std::vector<PetscInt> rows_;       ///< local rows with a ghost neighbour, ascending
  std::vector<PetscInt> offsets_;    ///< rows_.size() + 1 offsets into cols_/vals_
  std::vector<PetscInt> cols_;       ///< ghost index of each entry
  std::vector<PetscScalar> vals_;
  std::vector<double> ghost_;        ///< the ghost rows' m values
  Owned<Vec> ghost_vec_;             ///< a Vec over ghost_
  VecScatter halo_ = nullptr;
};

}  // namespace ssdr::propagation::detail
