#pragma once
/// \file preprocess.hpp
/// Scaling, centering and PCA, fitted on the transductive samples (labeled + unlabeled)
/// only and applied to all samples, as the papers do before LDA-type methods
/// (soda-nie2009 §5.2: "PCA as the preprocessing step to eliminate the null space").
#include <string>
#include <tuple>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/sparse.hpp"

namespace ssdr::data {

/// Per-feature scaling applied before centering and PCA (fit on the fit samples).
enum class Scaling {
  none,         ///< raw values
  unit_range,   ///< per feature to [0, 1] with the min/max of the fit samples
  standardize,  ///< per feature zero mean, unit variance over the fit samples
  global_unit   ///< one global factor so the centered fit samples have unit mean ‖x‖²
};
/// Parses "none", "minmax"/"unit-range", "standardize", "global". \throws ssdr::Error.
Scaling parse_scaling(const std::string& name);
std::string to_string(Scaling s);

/// How the PCA basis is computed. covariance: the d×d covariance Σ(x−m)(x−m)ᵀ/n_fit,
/// O(d²) memory per rank and O(d³) time. gram: the n_fit×n_fit Gram matrix of the centered
/// fit samples, G = ZZᵀ/n_fit (same nonzero eigenvalues; basis columns Zᵀu/‖Zᵀu‖), O(n_fit² +
/// d·d') memory per rank: the route when d > n_fit (30 samples × 20 000 features: a
/// 30×30 eigenproblem instead of a 20 000×20 000 one). automatic: gram when n_fit < d.
enum class PcaRoute { automatic, covariance, gram };

/// The preprocessing of a fit: scaling, centering and the PCA reduction to d' (soda-nie2009 §6
/// and soge-liu2017 use PCA first); defaults are the method's paper's (MethodInfo::preprocess).
struct PreprocessOptions {
  Scaling scaling = Scaling::none;
  bool pca = true;          ///< false: center only (basis = identity)
  double pca_energy = -1;   ///< in (0,1]: keep the fewest components reaching this fraction
                            ///< of the variance; ≤ 0: keep eigenvalues > 1e-10·largest
  PcaRoute route = PcaRoute::automatic;
  /// --pca-dim: keep at most this many components (0: no cap). With pca_energy as well,
  /// the fewest components reaching the energy, at most pca_dim. Required for sparse data
  /// (the number of singular triplets the truncated SVD computes).
  int64_t pca_dim = 0;
  /// --precision single: the rows a method learns from (the preprocessed transductive rows)
  /// are kept as floats, each value rounded once after the map (apply_single); everything
  /// computed from them reads them as doubles. False: doubles.
  bool single = false;
  /// Every field as a tuple, in declaration order (what driver::RowsKey compares: the
  /// fields that decide the preprocessed rows).
  auto fields() const { return std::tie(scaling, pca, pca_energy, route, pca_dim, single); }
};

/// The fitted map x ↦ Pᵀ((x − shift) ∘ scale − mean) (d → d').
struct Preprocessor {
  std::vector<double> shift, scale;  ///< d each (empty = none)
  std::vector<double> mean;          ///< d, mean of the scaled fit samples
  Dense basis;                       ///< d×d' orthonormal PCA basis (eigenvalues descending)
  std::vector<double> eigenvalues;   ///< d' kept covariance eigenvalues (of Σ(x−m)(x−m)ᵀ/n_fit)
  /// How the basis was computed ("covariance", "covariance-exact" for integer rows of
  /// magnitude ≤ 255, "gram", "sparse-svd"; empty: no PCA) and the
  /// total variance tr(C) = Σ‖x−m‖²/n_fit of the scaled fit samples (the energy rule's
  /// denominator), for the report.
  std::string route;
  double total_variance = 0;
  /// Sparse route: the SVD type used, its iterations and the largest relative residual
  /// ‖(Zv − σu, Zᵀu − σv)‖/σ of the kept triplets (Z the centered fit rows).
  std::string svd_type;
  int64_t svd_iterations = 0;
  int64_t svd_ncv = 0;  ///< the SVD's basis size (its memory: ncv·(n_fit + d)/P doubles per rank)
  double svd_residual = 0;
};

/// Fits the preprocessor on the rows of X whose local flag fit[i] != 0. Every sum over
/// samples (means, variances, the d×d covariance by one DSYRK per chunk of fit rows) goes
/// through ordered_row_sum, so the fitted map has the same bits on any number of ranks and
/// any row layout; the covariance is eigen-decomposed with LAPACK on every rank (identical
/// input → identical result); eigenvector signs are fixed (largest-magnitude entry
/// positive). Memory O(d² log(n/256)) per rank by the covariance route; by the Gram route
/// (options.route, automatic when n_fit < d) O(n_fit² + d·d'·log(n_fit/256)) plus the largest
/// rank's block of fit rows, with the Gram entries from fixed-shape GEMM tiles (the same bits
/// on any rank count). Collective over X.comm.
/// \throws ssdr::Error when no rank has a fit row or pca_energy > 1.
Preprocessor fit_preprocessor(const DistMatrix& X, const std::vector<char>& fit,
                              const PreprocessOptions& options);
/// The same from rows kept in their own element type (uint8, float32; TypedRows): each row is
/// converted to doubles as it is read, exactly, so the preprocessor has the bits of the one
/// fitted on the rows' double copy. Collective over X.comm.
Preprocessor fit_preprocessor(const TypedRows& X, const std::vector<char>& fit, const PreprocessOptions& options);

/// The same preprocessing for sparse rows (high-dimensional text or genomics data,
/// n×d with d up to 10⁶ and few non-zeros per row), without any d×d or n×d dense matrix:
/// scaling statistics per column (sums over the stored values plus the implicit zeros),
/// then the d' = options.pca_dim leading right singular vectors of the centered, scaled fit
/// rows Z = X_fit∘s − 1cᵀ (c = shift∘scale + mean) by a truncated SVD in SLEPc on the
/// distributed MATMPIAIJ of the fit rows (rows where X has them), the centering applied
/// implicitly by a MATSHELL (Zv = Av − 1(cᵀv), Zᵀu = Aᵀu − c(1ᵀu)): C = ZᵀZ/n_fit has the
/// eigenvalues σ²/n_fit and the eigenvectors v. The SVD object has the options prefix
/// `-pca_` (so `-pca_svd_type`; default type trlanczos, tolerance 10⁻¹⁰ relative to σ, its options
/// database settings last: `-pca_svd_type randomized|cross|lanczos`, `-pca_svd_tol`). The
/// basis V (d×d') is gathered on every rank and each column's sign fixed (its largest
/// magnitude entry positive, the smallest index on ties). With options.pca_energy E the
/// fewest of the d' components reaching E·tr(C) are kept (tr(C) from the data in O(nnz)),
/// all d' when they do not reach it.
/// Memory per rank: the rank's rows twice (X and the MATMPIAIJ: 12 bytes per value), the
/// replicated basis and column statistics (d·(d' + 4)·8 bytes), and SLEPc's basis vectors
/// (ncv ≈ 2d' of them, (n_fit + d)/P doubles each). Collective over X.comm.
/// The result depends on the rank count only through the SVD's tolerance (the sums are
/// MPI reductions, SLEPc's Krylov basis is partition-independent up to rounding).
/// \throws ssdr::Error (collectively) when fit has not one flag per local row, no rank has
///   a fit row, options.pca is false (sparse data cannot be used centered but unreduced:
///   that is the dense n×d matrix), options.pca_dim is 0 or exceeds min(n_fit, d), the
///   pca_energy is outside (0, 1], or the SVD does not converge d' triplets.
Preprocessor fit_preprocessor(const SparseRows& X, const std::vector<char>& fit, const PreprocessOptions& options);

/// The map of a Preprocessor with a PCA basis applied to the sparse rows of X whose local
/// flag keep[i] ≠ 0: y = Vᵀ(x∘s) − Vᵀc (n_kept×d', rows kept on their rank, in global
/// order). Every entry is one sum over the row's stored values in increasing column order,
/// so a row's bits depend only on the row and the preprocessor (not on the rank count).
/// Memory: the result plus 8·d doubles (V's columns in row-major blocks of 8). Collective
/// (the result's layout).
/// \throws ssdr::Error when keep has not one flag per local row, the preprocessor has no
///   PCA basis, or it was fitted on another d.
DistMatrix apply(const Preprocessor& p, const SparseRows& X, const std::vector<char>& keep);

/// Rows per GEMM of the map (apply, apply_tile, apply_split): every row goes through a GEMM
/// of this fixed shape, zero-padded, so its bits depend neither on the rows beside it nor on
/// the rank count or the caller (BLAS libraries switch kernels with the matrix size).
constexpr int64_t kApplyTile = 64;

/// Output width of the map: d' (the basis' columns) with PCA, else d.
inline int64_t output_dim(const Preprocessor& p, int64_t d) { return p.basis.rows > 0 ? p.basis.cols : d; }

/// The map on b ≤ kApplyTile row-major rows x (b×d) into out (b×d', row-major), through one
/// kApplyTile-row GEMM; Z and T are the caller's scratch (resized here). The bits of a row
/// are apply's. Local. \throws ssdr::Error when b is outside [0, kApplyTile] or the
/// preprocessor was fitted on another d.
void apply_tile(const Preprocessor& p, const double* x, int64_t b, int64_t d, double* out, std::vector<double>& Z,
                std::vector<double>& T);

/// Applies the map to every row of X: n×d → n×d'. Local (no communication).
DistMatrix apply(const Preprocessor& p, const DistMatrix& X);

/// apply(p, select_rows(X, keep)) without either intermediate: the kept rows (keep[i] ≠ 0 per
/// local row) go through the map 64 rows at a time (fixed-shape GEMM tiles, so every row has
/// the same bits as apply's, on any rank count). Memory: the result plus one 64×d tile.
/// Collective (the result's layout).
/// \throws ssdr::Error when keep has not one flag per local row.
DistMatrix apply(const Preprocessor& p, const DistMatrix& X, const std::vector<char>& keep);
/// The same for typed rows (each row converted to doubles, exactly, into the tile): the bits
/// of apply on their double copy. Collective (the result's layout).
DistMatrix apply(const Preprocessor& p, const TypedRows& X, const std::vector<char>& keep);
/// apply(p, X, keep) with every value rounded once to float (--precision single: the rows a
/// method learns from at half the memory; each 64-row tile is computed in double, then
/// rounded, so the result is exactly to_single(apply(p, X, keep))). Collective (the
/// result's layout). \throws ssdr::Error as apply.
DistMatrixF apply_single(const Preprocessor& p, const DistMatrix& X, const std::vector<char>& keep);
DistMatrixF apply_single(const Preprocessor& p, const TypedRows& X, const std::vector<char>& keep);

/// The kept and the other rows of X after the map, each in file order.
struct SplitRows {
  DistMatrix kept;   ///< n_kept×d', rows distributed as they were (layout from the local counts)
  DistMatrixF kept32;  ///< apply_split(…, single = true): the kept rows as floats (kept empty)
  DistMatrix other;  ///< (n − n_kept)×d'
};

/// apply(p, X, keep) and apply(p, X, !keep) (the same bits) from X's own memory: X is
/// consumed (left empty). The rows go through the map in file order, 64 at a time; the other
/// rows are written back into X's buffer (d' ≤ d, so a row never overwrites one not yet read)
/// and the pages of the buffer that no longer hold a row are returned to the system as the
/// pass goes (madvise MADV_DONTNEED on Linux). Peak memory: X's block plus one tile, where
/// apply(keep) + X would need X's block plus the result. This is what lets a fit hold one
/// copy of its data: 1.0× its share of X (issue 9, the million-sample run).
/// single (--precision single): the kept rows go to kept32 as floats, apply_single's bits,
/// never held as doubles. Collective over X.comm (the two layouts). \throws ssdr::Error when
/// keep has not one flag per local row or the preprocessor was fitted on another d.
SplitRows apply_split(const Preprocessor& p, DistMatrix&& X, const std::vector<char>& keep, bool single = false);

}  // namespace ssdr::data
