#pragma once
/// \file preprocess.hpp
/// Scaling, centering and PCA, fitted on the transductive samples (labeled + unlabeled)
/// only and applied to all samples, as the papers do before LDA-type methods
/// (soda-nie2009 §5.2: "PCA as the preprocessing step to eliminate the null space").
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::data {

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

struct PreprocessOptions {
  Scaling scaling = Scaling::none;
  bool pca = true;          ///< false: center only (basis = identity)
  double pca_energy = -1;   ///< in (0,1]: keep the fewest components reaching this fraction
                            ///< of the variance; ≤ 0: keep eigenvalues > 1e-10·largest
  PcaRoute route = PcaRoute::automatic;
};

/// The fitted map x ↦ Pᵀ((x − shift) ∘ scale − mean) (d → d').
struct Preprocessor {
  std::vector<double> shift, scale;  ///< d each (empty = none)
  std::vector<double> mean;          ///< d, mean of the scaled fit samples
  Dense basis;                       ///< d×d' orthonormal PCA basis (eigenvalues descending)
  std::vector<double> eigenvalues;   ///< d' kept covariance eigenvalues (of Σ(x−m)(x−m)ᵀ/n_fit)
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

/// The kept and the other rows of X after the map, each in file order.
struct SplitRows {
  DistMatrix kept;   ///< n_kept×d', rows distributed as they were (layout from the local counts)
  DistMatrix other;  ///< (n − n_kept)×d'
};

/// apply(p, X, keep) and apply(p, X, !keep) (the same bits) from X's own memory: X is
/// consumed (left empty). The rows go through the map in file order, 64 at a time; the other
/// rows are written back into X's buffer (d' ≤ d, so a row never overwrites one not yet read)
/// and the pages of the buffer that no longer hold a row are returned to the system as the
/// pass goes (madvise MADV_DONTNEED on Linux). Peak memory: X's block plus one tile, where
/// apply(keep) + X would need X's block plus the result. This is what lets a fit hold one
/// copy of its data: 1.0× its share of X (issue 9, the million-sample run).
/// Collective over X.comm (the two layouts). \throws ssdr::Error when keep has not one flag
/// per local row or the preprocessor was fitted on another d.
SplitRows apply_split(const Preprocessor& p, DistMatrix&& X, const std::vector<char>& keep);

}  // namespace ssdr::data
