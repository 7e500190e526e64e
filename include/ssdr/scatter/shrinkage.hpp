#pragma once
/// \file shrinkage.hpp
/// Shrunk scatter matrices (issue 49, `--shrinkage auto|VALUE`): each class covariance and
/// the total covariance of the labeled samples shrunk toward a diagonal target, as
/// scikit-learn's LinearDiscriminantAnalysis(solver="eigen", shrinkage=...) does
/// (sklearn/discriminant_analysis.py `_cov`, `_class_cov`, `_solve_eigen`):
///   S_w = Σ_k (n_k/n) Σ̂_k,  S_t = Σ̂,  S_b = S_t − S_w,
/// with Σ_k = (1/n_k) Σ_{i∈k} (x_i − m_k)(x_i − m_k)ᵀ and, for a coefficient s,
///   auto:  Σ̂ = D [(1 − s) C + s μ I] D,  C = D⁻¹ Σ D⁻¹ (the covariance of the standardized
///          features, D = diag of the features' standard deviations, 1 for a constant one),
///          μ = tr(C)/p, s the Ledoit–Wolf coefficient of the standardized samples (Ledoit &
///          Wolf 2004, Lemma 3.1 with the bound s ≤ 1; sklearn's ledoit_wolf_shrinkage):
///            s = min(b̄², d²)/d²,  d² = ‖C − μI‖²_F / p,
///            b̄² = (Σ_i ‖z_i‖⁴ / n − ‖C‖²_F) / (p n),  z_i = D⁻¹(x_i − m);
///   VALUE: Σ̂ = (1 − s) Σ + s (tr Σ / p) I in the features' coordinates (sklearn's
///          shrunk_covariance of the empirical covariance, not standardized).
/// p is the number of features. The rows may be given in other coordinates than the
/// features': X = (features − mean)·V with V (p×d') orthonormal columns (the PCA basis);
/// then D, C and z_i are those of the features (computed through V: G = VᵀD⁻²V, d'×d'), and
/// the result is VᵀΣ̂V, the same as shrinking in the features' space and projecting.
/// A feature is constant (scale 1) as in sklearn's StandardScaler: its variance within the
/// rounding bound n·ε·var + (n·ε)²·(mean² + v_max), v_max the largest variance along X's
/// columns standing in for the raw mean the centering removed, plus, through a basis, the
/// rounding of diag(VΣVᵀ) and the leakage of V into a direction the PCA dropped:
/// 16·(d' + 2)·ε·((Σ_q |V_aq| √Σ_qq)² + v_max) (a feature constant within a class, such as
/// a pixel always 0 in one digit, must come out constant). Every statistic is a local sum over this rank's rows and one
/// MPI_Allreduce, except for a group with fewer rows n_g than d' (a class of a few labeled
/// rows), whose n_g centered rows are gathered on every rank and whose statistics come from
/// them mapped to the features (Σ has rank < n_g): memory O(c·d' + d'² + 256·(d' + n_g) +
/// n_g²) per rank beside the basis, nothing of size n; time O(n_local·d'² + p·d'·Σ n_g +
/// k·p·d'²), k ≤ c + 1 the groups with n_g ≥ d', plus 2·p·d'² for the two targets.
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::scatter {

/// MethodOptions::shrinkage's auto (Ledoit–Wolf); any other value in [0, 1] is the fixed
/// coefficient.
constexpr double kLedoitWolf = -1;

/// The shrunk S_w, S_b, S_t (d'×d', replicated) and the coefficients used.
struct ShrunkScatter {
  Dense Sw, Sb, St;                        ///< shrunk S_w, S_t − S_w, shrunk S_t (d'×d')
  std::vector<double> class_coefficients;  ///< s_k of each class's covariance (c)
  double total_coefficient = 0;            ///< s of the total covariance (S_t)
  std::vector<double> class_counts;        ///< n_k
};

/// The shrunk scatter matrices of the rows of X whose label (one per local row) is in
/// 0..classes−1 (others are skipped), shrinkage kLedoitWolf or a coefficient in [0, 1].
/// basis: nullptr (X's columns are the features), or the p×d' basis V described above.
/// Collective over X.comm (MPI_Allreduce of the counts and sums, then per group its covariance,
/// its size, and its fourth moments or, for a group of fewer than d' rows, an allgatherv of its
/// rows).
/// \throws ssdr::Error (collectively) when a class has no row, the shrinkage is neither auto
///   nor in [0, 1], or the basis has not d' columns.
ShrunkScatter shrunk_scatter(const DistMatrix& X, const std::vector<int>& labels, int classes, const Dense* basis,
                             double shrinkage);

}  // namespace ssdr::scatter
