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
//
// SingleBlockProduct is the same product in single precision (float values of A, float
// blocks, float sums; PETSc's kernels are double only, so its row loops are ssdr's): the
// mixed-precision block CG's inner product, half the bytes per entry and per block value.
#pragma once

#include <petscmat.h>
#include <petscsf.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

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
  /// q = A p over plain arrays of n_local·m values (q ≠ p). Collective.
  void apply(const double* p, double* q);

 private:
  Owned<Mat> A_;
  int m_ = 0;
  PetscInt n_ = 0;
  Owned<Mat> diag_;            ///< SEQMAIJ of A's diagonal block (A itself on one rank)
  Owned<Vec> x_local_, y_local_;  ///< sequential Vecs placed over p's and q's local arrays
  Owned<Vec> p_global_;           ///< an MPI Vec placed over p's array (the halo's source)
  // The off-diagonal block (compressed ghost columns) on its non-empty rows only.
  std::vector<PetscInt> rows_;       ///< local rows with a ghost neighbour, ascending
  std::vector<PetscInt> offsets_;    ///< rows_.size() + 1 offsets into cols_/vals_
  std::vector<PetscInt> cols_;       ///< ghost index of each entry
  std::vector<PetscScalar> vals_;
  std::vector<double> ghost_;        ///< the ghost rows' m values
  Owned<Vec> ghost_vec_;             ///< a Vec over ghost_
  VecScatter halo_ = nullptr;
};

/// Q = Â P in single precision for Â = diag(w) A (A: n×n, SEQAIJ or MPIAIJ, distributed by
/// rows; w given on the local rows, or w = 1) and P, Q row-major n_local×m float blocks of
/// A's rows: each row's m sums start at 0 and run over its diagonal-block entries in order,
/// then its off-diagonal (ghost) entries are summed from 0 and added, all in float, with Â's
/// values formed in double and rounded to float once here. (The block CG passes w = D_S⁻¹:
/// Â's entries are then ≤ 1, where a heat-kernel graph's own weights reach 10⁻²⁴⁴ and would
/// underflow in float; an entry of Â below float's range is below 10⁻³⁸ of its row's unit
/// diagonal.) The halo is a PetscSF broadcast of whole rows (m floats), overlapped with the
/// diagonal block. Keeps a reference to A and its diagonal block's row structure
/// (MatGetRowIJ, no copy), so A must not change while this object lives. Memory: 4 bytes per
/// diagonal-block entry, 12 per off-diagonal entry, 4·m per ghost row and 4·m per local row
/// with ghost neighbours (chebyshev_step's pending sums).
class SingleBlockProduct {
 public:
  /// `w`: n_local scales (or null: 1). Collective over A's communicator. \throws
  /// ssdr::Error when m < 1, A is not AIJ, or a PETSc call fails.
  SingleBlockProduct(Mat A, int m, const double* w = nullptr);
  ~SingleBlockProduct();
  SingleBlockProduct(const SingleBlockProduct&) = delete;
  SingleBlockProduct& operator=(const SingleBlockProduct&) = delete;

  /// q = diag(w) A p over arrays of n_local·m floats (q ≠ p). Collective.
  void apply(const float* p, float* q);

  /// One step of the Chebyshev semi-iteration on Ŝ y = b with Ŝ = diag(σ) − Â, Â = diag(w) A
  /// this product's matrix: on every row i with skip[i] = 0,
  ///   y_prev_i ← y_i + c1·(y_i − y_prev_i) + c2·(b_i − (σ_i·y_i − (Â y)_i)),
  /// all in float, (Â y)_i summed as apply() sums it (the same bits; the update's operations in
  /// the formula's order, the same bits unless the build contracts a·b + c to FMA) and never stored; rows with
  /// skip[i] ≠ 0 keep y_prev_i. y_prev is not read by other rows, so it takes the new iterate
  /// in place, and the step is one pass: the product's bytes plus b and y_prev (read, written).
  /// Rows with ghost neighbours are finished after the halo arrives. y, y_prev, b: n_local·m
  /// floats (y ≠ y_prev); σ, skip: n_local values. Collective (the halo). \throws ssdr::Error
  /// when a PETSc call fails.
  void chebyshev_step(const float* y, float* y_prev, const float* b, const float* sigma, const char* skip, float c1,
                      float c2);

 private:
  Owned<Mat> A_;
  Mat Ad_ = nullptr;  ///< A's diagonal block (A itself when SEQAIJ), owned by A_
  int m_ = 0;
  PetscInt n_ = 0;
  const PetscInt* ia_ = nullptr;  ///< Ad_'s row offsets and columns (MatGetRowIJ, held)
  const PetscInt* ja_ = nullptr;
  PetscBool row_ij_ = PETSC_FALSE;
  std::vector<float> vals_;          ///< Ad_'s values in float
  std::vector<PetscInt> rows_, offsets_, cols_;  ///< the off-diagonal block's non-empty rows
  std::vector<float> off_vals_;
  std::vector<float> ghost_;         ///< the ghost rows' m values
  PetscSF halo_ = nullptr;           ///< roots: local rows; leaves: ghost rows (Ao's column order)
  MPI_Datatype unit_ = MPI_DATATYPE_NULL;  ///< one row: m floats
  /// chebyshev_step's rows, for a width W known at compile time (0: m at run time). Local but
  /// for the halo's end.
  template <int W>
  void chebyshev_rows(const float* y, float* y_prev, const float* b, const float* sigma, const char* skip, float c1,
                      float c2);
  std::vector<float> pending_;       ///< chebyshev_step: the sums of rows with ghost neighbours (rows_), m each
  /// The constructor's work once the row structure is held: Â's float values, the
  /// off-diagonal rows, the halo.
  void build(Mat A, Mat Ao, const PetscInt* garray, int m, const double* w);
  void release();  ///< what the destructor frees (also when the constructor throws)
};

/// The Chebyshev semi-iteration in single precision on Ŝ e = z, Ŝ = diag(σ) − Â on the rows
/// with known[i] = 0 (Â = diag(w) A, `product`'s matrix; the mixed-precision block CG's inner
/// system, unit diagonal), `steps` ≥ 1 steps from e = 0: the residual polynomial of degree
/// `steps` least on [lo, hi], 0 < lo < hi (Saad, Iterative Methods for Sparse Linear Systems,
/// 2nd ed., Alg. 12.1, in its three-term form e_1 = z/θ, e_{j+1} = e_j + c1(e_j − e_{j−1}) +
/// c2(z − Ŝe_j) with θ = (hi + lo)/2, δ = (hi − lo)/2, σ₁ = θ/δ, ρ_0 = 1/σ₁, ρ_j = 1/(2σ₁ −
/// ρ_{j−1}), c1 = ρ_jρ_{j−1}, c2 = 2ρ_j/δ). Its coefficients depend on lo and hi only, so a
/// step needs no reduction and is one pass (SingleBlockProduct::chebyshev_step). With Ŝ
/// self-adjoint in ⟨x, y⟩ = Σ_i d_i x_i·y_i for some d > 0 (d = D_S there) and its spectrum in
/// [lo, hi], ‖z − Ŝe‖_d ≤ ‖z‖_d / T_steps(σ₁) (T: the Chebyshev polynomial) up to float
/// rounding. z: n_local×m floats (0 on known rows); e: on exit (0 on entry; known rows stay
/// 0); scratch: the same size, overwritten. σ, known: n_local values. Returns the products
/// done, steps − 1. Collective over the product's communicator. \throws ssdr::Error when
/// not 0 < lo < hi, steps < 1, z, e or scratch is not n_local·m values or σ not n_local
/// (all ranks call it with the same lo, hi and steps), or a PETSc call fails.
int chebyshev_solve(SingleBlockProduct& product, const std::vector<char>& known, const std::vector<float>& sigma,
                    int64_t m, const std::vector<float>& z, std::vector<float>& e, std::vector<float>& scratch,
                    double lo, double hi, int steps);

/// Flush-to-zero and denormals-are-zero while it lives (x86's MXCSR; elsewhere nothing): the
/// single-precision solve meets values below float's normal range (the far-off rows' tiny
/// couplings times small residuals), and subnormal arithmetic costs ~100 cycles per operation
/// (it doubled the product's time on a blob graph). Such float values are below 10⁻³⁸ of the
/// quantities they add to; the double sums weighted by D_S are flushed too below 10⁻³⁰⁸ (a
/// column whose γ or ρ flushes to 0 breaks down and finishes in double). Deterministic; the
/// old MXCSR, with any exception flags raised meanwhile, is restored on exit. Local.
struct FlushSubnormals {
#if defined(__SSE__)
  unsigned saved = _mm_getcsr();
  FlushSubnormals() { _mm_setcsr(saved | 0x8040u); }  // FTZ (bit 15) and DAZ (bit 6)
  ~FlushSubnormals() { _mm_setcsr(saved); }
#endif
};

}  // namespace ssdr::propagation::detail
