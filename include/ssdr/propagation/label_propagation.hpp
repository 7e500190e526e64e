#pragma once
/// \file label_propagation.hpp
/// Label propagation with the extra outlier class (soda-nie2009 §3.1, eq. (25)–(27);
/// sllda-zhao2014 eq. (3)–(5)):  F = (I − I_α P)⁻¹ I_β Y,  P = D⁻¹A,  I_β = I − I_α.
#include <petscmat.h>

#include <string>
#include <tuple>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/petsc.hpp"

namespace ssdr::propagation {

/// Label propagation with the outlier class (soda-nie2009 eq. (24)–(27)): α per sample kind,
/// the solver's tolerance and its options prefix.
struct PropagationOptions {
  double alpha_labeled = 0.0;     ///< α_i on labeled samples (paper: 0)
  double alpha_unlabeled = 0.99;  ///< α_u on unlabeled samples, in [0, 1)
  double rtol = 1e-12;            ///< relative tolerance on each column's preconditioned residual
  std::string prefix = "lp_";     ///< KSP options prefix (-lp_ksp_type, -lp_pc_type, -lp_ksp_rtol, ...)
  /// CG with point Jacobi on a symmetric graph runs as one block CG (all columns per graph
  /// pass); false runs PETSc's KSPCG one column at a time on the same system (comparisons).
  bool block = true;
  /// The block CG works on each rank's rows renumbered by reverse Cuthill–McKee of its own
  /// diagonal block (graph::rcm_reorder; rows stay on their rank): locality of the block
  /// product's gathers. F is returned in A's order. false, or -<prefix>reorder false: A's
  /// own order. (The partition, and so the halo, is graph::renumber_for_locality's; its
  /// level partition leaves each rank's rows in the global Cuthill–McKee level order, which
  /// false then keeps: faster products on some graphs, slower on others, docs/fitting.md.)
  bool reorder = true;
  /// The block CG refines in double around a single-precision block CG (half the bytes per
  /// product and pass; the same tolerance on the true residual). false, or
  /// -<prefix>mixed_precision false: the block CG in double throughout.
  bool mixed_precision = true;
  /// Every field as a tuple, in declaration order (what methods::PropagationKey compares).
  auto fields() const { return std::tie(alpha_labeled, alpha_unlabeled, rtol, prefix, block, reorder, mixed_precision); }
};

/// The propagated soft labels F and the solver's record.
struct PropagationResult {
  /// n×(c+1) soft labels, A's row layout; column c = outlier. F.comm is A's PETSc
  /// communicator, valid while A (or another PETSc object on it) lives: a copy that outlives
  /// the graph takes its caller's communicator (methods::soft_labels).
  DistMatrix F;
  /// Iterations per right-hand side (c+1): for the block CG the graph products that column
  /// took (its recurrence is frozen after them; in mixed precision the inner iterations of
  /// every refinement step, summed, without the steps' residual products; the outlier column,
  /// 1 − the others' sum, reports the largest of theirs), else KSPGetIterationNumber per KSPSolve.
  std::vector<int> iterations;
  /// "block-cg" (the default on symmetric graphs), "<ksp type>-symmetric" (PETSc's KSP per
  /// column on S, e.g. "cg-symmetric") or "<ksp type>" (PETSc's KSP per column on M, e.g. "gmres").
  std::string solver;
};

/// Solves (I − I_α D⁻¹A) F = I_β Y (soda-nie2009 eq. (25)–(27): F = (I − I_α P)⁻¹ I_β Y,
/// P = D⁻¹A, I_β = I − I_α) for the c+1 columns of Y, Y_i = e_{label_i} for labeled samples
/// and e_{c+1} (the outlier class) for unlabeled ones.
///
/// Rows with α_i = 0 (labeled samples by default) or D_ii = 0 are identity rows of the system:
/// F_i = β_i Y_i = (1 − α_i) Y_i, i.e. a labeled sample keeps its label and an isolated
/// unlabeled vertex gets (1 − α_u) e_{c+1}. The other (free) rows, multiplied by D_ii/α_i,
/// form S F_f = (D β/α)_f Y_f + A_fk F_k with S = diag(D/α)_ff − A_ff, which for a symmetric
/// non-negative A is symmetric and strictly diagonally dominant, hence SPD, and its Jacobi-
/// scaled form I − N has ‖N‖_∞ ≤ α_max, so κ_∞ ≤ (1 + α)/(1 − α).
///
/// Solvers: a KSP with options prefix `prefix` is created with defaults CG (symmetric
/// non-negative A: the builder's MAT_SYMMETRIC flag, else MatIsSymmetric with tolerance 0)
/// or GMRES (otherwise), point Jacobi (the same iteration on any rank count), rtol `rtol`,
/// atol 1e-300, max_it 10 000; KSPSetFromOptions last. Then
/// - CG + plain point Jacobi on a symmetric A (default): block CG on A with each rank's rows
///   renumbered by reverse Cuthill–McKee (graph::rcm_reorder; PropagationOptions::reorder), one product
///   of the graph with the n×c block of the class columns per iteration (PETSc's MAIJ kernel
///   on each rank's diagonal block, the off-diagonal block added on the rows with ghost
///   neighbours only; PETSc log event
///   "LPBlockProduct"; the block's passes: "LPBlockVector"), c scalar CG recurrences, and
///   the outlier column as 1 − their sum on the free rows (M·1 = β and I_β Y·1 = β, so F·1 =
///   1 there: one right-hand side fewer; its error is at most the sum of theirs), a column frozen once
///   ‖D_S⁻¹r‖₂ ≤ max(rtol·‖D_S⁻¹b‖₂, atol) (KSPCG's test, x⁽⁰⁾ = 0 on the free rows). By
///   default in mixed precision (PropagationOptions::mixed_precision, -<prefix>mixed_precision):
///   the test is applied to the true residual, formed in double (one double product per
///   refinement step, "LPBlockProduct"), and an inner solve in single precision on the Jacobi-
///   scaled system Ŝ e = z (z = D_S⁻¹r; the product with D_S⁻¹A, "LPBlockProductSingle": float
///   values and blocks, half the bytes) gains inner_rtol (-<prefix>mixed_inner_rtol, default
///   10⁻⁴) per step (Chebyshev: the steps its bound needs for that, at least a 10× gain, no
///   further than half the target; converged columns get no correction). The inner solve
///   (-<prefix>mixed_inner) is by default the Chebyshev semi-iteration on Ŝ's Gershgorin interval [1 − α_max, 1 + α_max] (Saad, Iterative Methods
///   for Sparse Linear Systems, Alg. 12.1): no reductions, one pass per product, for 7–16 % more
///   products than CG (298 against 278 on a 10⁶-row kNN graph, 255 against 219 on
///   Fashion-MNIST); `cg` runs the block CG there instead. Chebyshev's bound holds in the
///   D_S-norm and the test is in the 2-norm: the second Chebyshev step that does not halve a
///   column's residual hands the rest to the float block CG, and a CG step that does not, to
///   the block CG in double. The answer meets the same test; iterations are the inner products (CG: iterations), summed. Its
///   reductions in a fixed order of B's rows (chunks of rows summed in order); -<prefix>ksp_rtol, _atol,
///   _divtol and _max_it apply (max_it to the summed iterations), KSP monitors do not run (the progress line reports the
///   columns left), and a norm type other than preconditioned or another Jacobi variant
///   (-<prefix>pc_jacobi_type, _abs) selects the next path instead;
/// - CG with another preconditioner on a symmetric A: KSPSolve per column on S (the known
///   rows eliminated by MatZeroRowsColumns);
/// - any other KSP type, or a non-symmetric / negative A: KSPSolve per column on M from
///   x = 0 (the solver before the block CG, e.g. -lp_ksp_type gmres).
/// \param A       n×n graph (MPIAIJ, non-negative; symmetric for the CG paths), rows distributed
/// \param labels  one entry per LOCAL row of A: class in 0..c−1, or −1 when unlabeled
/// \param classes c ≥ 1
/// \return F n×(c+1) in A's row layout, iterations per column, the solver used. Rows with
///   D_ii > 0 sum to 1 up to the tolerance (M·1 = β; to rounding for the block CG, which
///   derives the outlier column from that identity).
/// Collective over A's communicator.
/// \throws ssdr::Error (collectively) when α_u or α_l ∉ [0,1), classes < 1, a label is out
///   of range, labels has the wrong length, or the solver does not converge, breaks down or
///   diverges (naming the prefix).
PropagationResult propagate(Mat A, const std::vector<int>& labels, int classes,
                            const PropagationOptions& options);

/// propagate(A, labels, classes, options), taking over the caller's reference to A: the
/// block CG drops it as soon as its reverse Cuthill–McKee copy exists, so that one copy of
/// the graph, not two, lives during the solve (A is freed then unless another reference,
/// e.g. a sweep's cache, holds it). The same result bit for bit. F.comm is A's PETSc
/// communicator, which may end with A on return: set it to the caller's communicator before
/// any collective use of F (methods::graph_and_propagation does). Shapes, collectivity and
/// errors as above.
PropagationResult propagate(Owned<Mat> A, const std::vector<int>& labels, int classes,
                            const PropagationOptions& options);

/// Transductive prediction: argmax over the first c columns of F for each local row.
std::vector<int> predict(const DistMatrix& F, int classes);

}  // namespace ssdr::propagation
