#pragma once
/// \file baselines_internal.hpp
/// Helpers of the baselines (OLDA, SDA, PCA), private to src/methods/baselines.cpp and its
/// unit test (tests/unit/baselines_test.cpp; the test target has src/ on its include path).
#include <petscmat.h>

#include "ssdr/core/dense.hpp"

namespace ssdr::methods::baselines {

/// XᵀLX in our row-sample convention, i.e. the paper's X L Xᵀ (d×d, replicated), for the
/// sample-distributed X (n×d) and a sparse symmetric n×n L (MPIAIJ) whose row layout is
/// X's. Y = L X by sparse×dense products (MatMatMult with an MPIDENSE copy of `block`
/// columns of X at a time, n×block distributed like X), each followed by the local GEMM
/// X_localᵀ Y_local for those columns of the result, then an MPI_Allreduce of d×d; the
/// result is symmetrized ((C + Cᵀ)/2). The width changes no bit of the result (each entry
/// is the same sum). block ≤ 0: about 32 MiB of rows per copy (the same on every rank).
/// No n×n dense matrix; memory O(n_local·block + d²) beside X. Collective over X.comm.
/// \throws ssdr::Error when L's local row count differs from X's.
Dense graph_scatter(Mat L, const DistMatrix& X, int64_t block = 0);

/// Covariance Σ = (1/n) Σ_i (x_i − x̄)(x_i − x̄)ᵀ (d×d, replicated) of the sample-distributed
/// X (n×d): the mean by MPI_Allreduce, then a local DSYRK on the centered block and an
/// MPI_Allreduce of d×d. Collective over X.comm. \throws ssdr::Error (collectively) when n = 0.
Dense covariance(const DistMatrix& X);

/// Orthonormalizes the columns of A (d×m, m ≤ d, full column rank) by Householder QR and
/// flips each column so that diag(R) > 0 (qᵢᵀaᵢ > 0): the result is the unique
/// Gram–Schmidt basis of A, so it does not depend on LAPACK's sign conventions. Local.
Dense orthonormal_basis(const Dense& A);

}  // namespace ssdr::methods::baselines
