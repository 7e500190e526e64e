#pragma once
/// \file preprocess_internal.hpp
/// Private to src/data (and its tests): what the dense (preprocess.cpp) and the sparse
/// (sparse_pca.cpp) preprocessing share.
#include <cstdint>
#include <vector>

#include "ssdr/data/preprocess.hpp"

namespace ssdr::data::detail {

/// The number of leading eigenpairs to keep (≥ 1) from eigenvalues w in ascending order
/// (length r): those above 1e-10·largest; with options.pca_energy E > 0 the fewest whose sum
/// reaches E·total (total ≤ 0: the sum of w); at most options.pca_dim when it is > 0.
/// `count` (the number of fit samples) is for the message. Replicated input → the same
/// result on every rank. \throws ssdr::Error when every eigenvalue is ≤ 0.
int64_t components_to_keep(const std::vector<double>& w, const PreprocessOptions& options, int64_t count,
                           double total = 0);

/// The covariance Σ (z − m)(z − m)ᵀ / n_fit (d×d, replicated) of the fit rows of X (fit:
/// one flag per local row) scaled by `scale` (z_j = x_j·scale_j; empty: 1), by the exact
/// integer route the covariance PCA takes when every fit value is an integer of magnitude
/// ≤ 255 (see integer_covariance in preprocess.cpp: |error| ≤ 4u per entry below 9.4·10⁷
/// fit rows, where n² is exact, five roundings above; the same bits on any rank count below
/// kIntegerCovarianceRowsMax rows, where the double sums are exact). Collective over X.comm.
/// \throws ssdr::Error (collectively) when a fit value is not such an integer, no row is a
/// fit row, or there are kIntegerCovarianceRowsMax of them or more; (locally) when fit or a
/// non-empty scale has the wrong length.
Dense integer_covariance(const DistMatrix& X, const std::vector<char>& fit, const std::vector<double>& scale);

}  // namespace ssdr::data::detail
