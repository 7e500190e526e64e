#pragma once
/// \file scatter.hpp
/// Soft-label scatter matrices (soda-nie2009 eq. (28)–(30); sllda-zhao2014 eq. (11)–(13)).
/// With hard (0/1) labels they are LDA's S_w, S_b, S_t of eq. (4)–(6) divided by n.
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::scatter {

/// S̃w, S̃b, S̃t (d×d, replicated on every rank) and the quantities behind them.
struct ScatterMatrices {
  Dense Sw, Sb, St;                  ///< eq. (28), (29), (30)
  Dense class_means;                 ///< d×c, x̃_k
  std::vector<double> mean;          ///< d, x̃ (weighted total mean)
  std::vector<double> class_weights; ///< ñ_k = Σ_j F_jk
  double n_tilde = 0;                ///< ñ = Σ_k ñ_k
  /// d×c factor of S̃b = Sb_factor·Sb_factorᵀ (column k: G_k/√(ñ ñ_k), G = Yᵀ F_c), for the
  /// rank-c eigen-solve (solvers::largest_low_rank_eigen). Set by soft_scatter.
  Dense Sb_factor;
};

/// Computes the soft-label scatter matrices from the sample-distributed X (n×d, columns of
/// the paper's X are our rows) and F (n×c' with c' ≥ c; only the first c columns, the
/// soft labels, are used; the outlier column is ignored), in X's row layout.
/// Uses the matrix forms: with y_j = x_j − x̃ and G = Yᵀ F_c (d×c),
///   S̃t = (1/ñ) Yᵀ B Y,  S̃b = (1/ñ) G D Gᵀ,  S̃w = (1/ñ)(Yᵀ B Y − G D Gᵀ),
/// so no n×n matrix is formed: one local DSYRK (rows scaled by √B_jj) and one local GEMM
/// per rank, then MPI_Allreduce of d×d. Memory per rank O(d² + n_local·d). X in either
/// precision (float rows are read as their doubles: the same bits as their double copy's).
/// Collective over X.comm. \throws ssdr::Error when layouts differ, c > F.cols, a class
/// has zero total weight ñ_k, or ñ = 0.
ScatterMatrices soft_scatter(const RowsView& X, const DistMatrix& F, int classes);

/// One-hot F (n_local×c) from hard labels in 0..c−1 (one per local row). Local.
DistMatrix one_hot(const std::vector<int>& labels, int classes, MPI_Comm comm);

/// μ₀ = largest diagonal entry of S (soda-nie2009 §5.2: μ = 0.1·μ₀). Local.
double largest_diagonal(const Dense& S);

}  // namespace ssdr::scatter
