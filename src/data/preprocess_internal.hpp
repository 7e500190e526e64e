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

}  // namespace ssdr::data::detail
