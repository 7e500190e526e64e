#pragma once
/// \file label_propagation.hpp
/// Label propagation with the extra outlier class (soda-nie2009 §3.1, eq. (25)–(27);
/// sllda-zhao2014 eq. (3)–(5)):  F = (I − I_α P)⁻¹ I_β Y,  P = D⁻¹A,  I_β = I − I_α.
#include <petscmat.h>

#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::propagation {

/// Label propagation with the outlier class (soda-nie2009 eq. (9)-(12)): α per sample kind,
/// the solver's tolerance and its options prefix.
struct PropagationOptions {
  double alpha_labeled = 0.0;     ///< α_i on labeled samples (paper: 0)
  double alpha_unlabeled = 0.99;  ///< α_u on unlabeled samples, in [0, 1)
  double rtol = 1e-12;            ///< KSP relative tolerance (rows of F sum to 1 to ~rtol)
  std::string prefix = "lp_";     ///< KSP options prefix (-lp_ksp_type, -lp_pc_type, ...)
};

/// The propagated soft labels F and the solver's record.
struct PropagationResult {
  /// n×(c+1) soft labels, A's row layout; column c = outlier. F.comm is A's PETSc
  /// communicator, valid while A (or another PETSc object on it) lives: a copy that outlives
  /// the graph takes its caller's communicator (methods::soft_labels).
  DistMatrix F;
  std::vector<int> iterations;  ///< KSP iterations per right-hand side (c+1)
};

/// Solves (I − I_α D⁻¹A) F = I_β Y for the c+1 columns of Y with one PETSc KSP (options
/// prefix `prefix`, default GMRES + block Jacobi/ILU(0); KSPSetFromOptions last; the
/// preconditioner is built once and reused for every right-hand side).
/// Y_i = e_{label_i} for labeled samples, Y_i = e_{c+1} (the outlier class) for unlabeled
/// ones. A vertex without edges (D_ii = 0) keeps its initial label.
/// \param A       n×n symmetric non-negative graph (MPIAIJ), rows distributed
/// \param labels  one entry per LOCAL row of A: class in 0..c−1, or −1 when unlabeled
/// \param classes c
/// Collective over A's communicator. Every row of F sums to 1 (up to the KSP tolerance).
/// \throws ssdr::Error (collectively) when α_u ∉ [0,1), a label is out of range, labels
///   has the wrong length, or the KSP diverges (naming the prefix).
PropagationResult propagate(Mat A, const std::vector<int>& labels, int classes,
                            const PropagationOptions& options);

/// Transductive prediction: argmax over the first c columns of F for each local row.
std::vector<int> predict(const DistMatrix& F, int classes);

}  // namespace ssdr::propagation
