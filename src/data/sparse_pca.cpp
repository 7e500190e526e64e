// Preprocessing of sparse rows (data::fit_preprocessor and data::apply on SparseRows): the
// scaling statistics over stored values plus implicit zeros, and PCA by a truncated SVD of
// the implicitly centered fit rows in SLEPc (options prefix -pca_: -pca_svd_type, -pca_svd_tol, ...). No d×d matrix and
// no dense n×d matrix is formed; the replicated basis V (d×d') is the largest object.
#include <slepcsvd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "preprocess_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/data/preprocess.hpp"

namespace ssdr::data {

namespace {

inline void petsc_destroy_svd(SVD& s) { SVDDestroy(&s); }

/// The centered operator Z = A − 1cᵀ as a MATSHELL: A the MATMPIAIJ of the scaled fit rows
/// (n_fit×d), c the d-vector of the centering (A's column layout).
struct Centered {
  Mat A = nullptr;
  Vec c = nullptr;
};

PetscErrorCode centered_mult(Mat Z, Vec x, Vec y) {
  Centered* ctx = nullptr;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(Z, &ctx));
  PetscCall(MatMult(ctx->A, x, y));
  PetscScalar cx = 0;
  PetscCall(VecDot(x, ctx->c, &cx));
  PetscCall(VecShift(y, -cx));
  PetscFunctionReturn(0);
}

PetscErrorCode centered_mult_transpose(Mat Z, Vec u, Vec v) {
  Centered* ctx = nullptr;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(Z, &ctx));
  PetscCall(MatMultTranspose(ctx->A, u, v));
  PetscScalar su = 0;
  PetscCall(VecSum(u, &su));
  PetscCall(VecAXPY(v, -su, ctx->c));
  PetscFunctionReturn(0);
}

/// The fit rows of X, each value multiplied by scale[j] (empty: 1), as a MATMPIAIJ of
/// n_fit×d with this rank's fit rows (in order) and PETSc's default column layout. The
/// arrays are copied by PETSc. Collective.
Owned<Mat> fit_rows_matrix(const SparseRows& X, const std::vector<char>& fit, const std::vector<double>& scale,
                           int64_t n_fit_local) {
  std::vector<PetscInt> ia(1, 0), ja;
  std::vector<PetscScalar> va;
  for (int64_t i = 0; i < X.n_local; ++i) {
    if (!fit[static_cast<size_t>(i)]) continue;
    for (int64_t k = X.row_ptr[static_cast<size_t>(i)]; k < X.row_ptr[static_cast<size_t>(i) + 1]; ++k) {
      const int32_t j = X.col[static_cast<size_t>(k)];
      ja.push_back(static_cast<PetscInt>(j));
      va.push_back(X.val[static_cast<size_t>(k)] * (scale.empty() ? 1.0 : scale[static_cast<size_t>(j)]));
    }
    SSDR_REQUIRE(ja.size() < static_cast<size_t>(1) << 31, "sparse PCA: a rank holds 2^31 or more non-zero values; use more ranks");
    ia.push_back(static_cast<PetscInt>(ja.size()));
  }
  Owned<Mat> A;
  SSDR_PETSC(MatCreateMPIAIJWithArrays(X.comm, static_cast<PetscInt>(n_fit_local), PETSC_DECIDE, PETSC_DETERMINE,
                                       static_cast<PetscInt>(X.cols), ia.data(), ja.data(), va.data(), A.out()));
  return A;
}

/// Σ over ranks of a d-vector, in place (MPI_Allreduce in pieces of at most 2³⁰ values).
void allreduce(std::vector<double>& v, MPI_Op op, MPI_Comm comm) {
  for (size_t at = 0; at < v.size(); at += size_t{1} << 30) {
    const size_t len = std::min(v.size() - at, size_t{1} << 30);
    MPI_Allreduce(MPI_IN_PLACE, v.data() + at, static_cast<int>(len), MPI_DOUBLE, op, comm);
  }
}

/// The scaling and mean of fit_preprocessor for sparse rows: per column, the sum, count of
/// stored values, and (as the scaling needs) min/max and Σ(x − m)² with the implicit zeros
/// added (n_fit − count_j)·m_j². Also the total variance. Collective.
void fit_statistics(const SparseRows& X, const std::vector<char>& fit, const PreprocessOptions& options, int64_t count,
                    Preprocessor& p) {
  const int64_t d = X.cols;
  const size_t D = static_cast<size_t>(d);
  const double n = static_cast<double>(count);
  std::vector<double> sum(D, 0.0), stored(D, 0.0);
  auto for_fit_values = [&](auto&& f) {
    for (int64_t i = 0; i < X.n_local; ++i) {
      if (!fit[static_cast<size_t>(i)]) continue;
      for (int64_t k = X.row_ptr[static_cast<size_t>(i)]; k < X.row_ptr[static_cast<size_t>(i) + 1]; ++k)
        f(static_cast<size_t>(X.col[static_cast<size_t>(k)]), X.val[static_cast<size_t>(k)]);
    }
  };
  for_fit_values([&](size_t j, double v) {
    sum[j] += v;
    stored[j] += 1.0;
  });
  allreduce(sum, MPI_SUM, X.comm);
  allreduce(stored, MPI_SUM, X.comm);
  // Σ_i (x_ij·a − b)² over the fit rows = Σ_stored (x·a − b)² + (n − stored_j)·b².
  auto column_squares = [&](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> ss(D, 0.0);
    for_fit_values([&](size_t j, double v) {
      const double t = v * (a.empty() ? 1.0 : a[j]) - b[j];
      ss[j] += t * t;
    });
    allreduce(ss, MPI_SUM, X.comm);
    for (size_t j = 0; j < D; ++j) ss[j] += (n - stored[j]) * b[j] * b[j];
    return ss;
  };
  std::vector<double> m(D);
  for (size_t j = 0; j < D; ++j) m[j] = sum[j] / n;
  if (options.scaling == Scaling::unit_range) {
    std::vector<double> lo(D, INFINITY), hi(D, -INFINITY);
    for_fit_values([&](size_t j, double v) {
      lo[j] = std::min(lo[j], v);
      hi[j] = std::max(hi[j], v);
    });
    allreduce(lo, MPI_MIN, X.comm);
    allreduce(hi, MPI_MAX, X.comm);
    p.shift.resize(D);
    p.scale.resize(D);
    for (size_t j = 0; j < D; ++j) {
      if (stored[j] < n) {  // an implicit zero among the fit rows
        lo[j] = std::min(lo[j], 0.0);
        hi[j] = std::max(hi[j], 0.0);
      }
      p.shift[j] = lo[j];
      const double r = hi[j] - lo[j];
      p.scale[j] = r > 0 ? 1.0 / r : 1.0;
    }
  } else if (options.scaling == Scaling::standardize) {
    p.shift = m;
    const std::vector<double> ss = column_squares({}, m);
    p.scale.resize(D);
    for (size_t j = 0; j < D; ++j) {
      const double sd = std::sqrt(ss[j] / n);
      p.scale[j] = sd > 0 ? 1.0 / sd : 1.0;
    }
  } else if (options.scaling == Scaling::global_unit) {
    const std::vector<double> css = column_squares({}, m);
    double ss = 0;
    for (double v : css) ss += v;
    const double ms = ss / n;
    p.scale.assign(D, ms > 0 ? 1.0 / std::sqrt(ms) : 1.0);
  }
  p.mean.resize(D);
  for (size_t j = 0; j < D; ++j) {
    double v = m[j];
    if (!p.shift.empty()) v -= p.shift[j];
    if (!p.scale.empty()) v *= p.scale[j];
    p.mean[j] = v;
  }
  // tr(C) = Σ_j Σ_i (x_ij s_j − c_j)²/n with c = shift∘scale + mean = m∘s (the scaled column mean).
  std::vector<double> c(D);
  for (size_t j = 0; j < D; ++j) c[j] = m[j] * (p.scale.empty() ? 1.0 : p.scale[j]);
  const std::vector<double> css = column_squares(p.scale, c);
  p.total_variance = 0;
  for (double v : css) p.total_variance += v;
  p.total_variance /= n;
}

/// The centering vector c = shift∘scale + mean (d): z = x∘scale − c. Local.
std::vector<double> centering(const Preprocessor& p) {
  std::vector<double> c(p.mean);
  for (size_t j = 0; j < c.size(); ++j)
    if (!p.shift.empty()) c[j] += p.shift[j] * (p.scale.empty() ? 1.0 : p.scale[j]);
  return c;
}

Preprocessor fit_sparse(const SparseRows& X, const std::vector<char>& fit, const PreprocessOptions& options) {
  int64_t n_fit_local = 0;
  for (char f : fit) n_fit_local += f != 0;
  int64_t count = n_fit_local;
  MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, X.comm);
  SSDR_REQUIRE(count > 0, "no transductive sample to fit the preprocessing on");
  const int64_t d = X.cols, k = options.pca_dim;
  SSDR_REQUIRE(k <= std::min(count, d),
               "--pca-dim " + std::to_string(k) + ": at most min(transductive samples, features) = " +
                   std::to_string(std::min(count, d)) + " for sparse data");
  Preprocessor p;
  fit_statistics(X, fit, options, count, p);
  p.route = "sparse-svd";
  // Degenerate input, refused before the SVD (whose Lanczos process cannot start on a zero
  // operator and ends in PETSc's own message): no nonzero value, or rows that do not vary.
  int64_t nonzero = 0;
  for (int64_t i = 0; i < X.n_local; ++i)
    if (fit[static_cast<size_t>(i)])
      for (int64_t q = X.row_ptr[static_cast<size_t>(i)]; q < X.row_ptr[static_cast<size_t>(i) + 1]; ++q)
        nonzero += X.val[static_cast<size_t>(q)] != 0;
  MPI_Allreduce(MPI_IN_PLACE, &nonzero, 1, MPI_INT64_T, MPI_SUM, X.comm);
  SSDR_REQUIRE(nonzero > 0, "sparse data (" + std::to_string(count) + " x " + std::to_string(d) +
                                " transductive rows): every value is 0 (nnz 0); expected data that varies");
  SSDR_REQUIRE(p.total_variance > 0, "sparse data (" + std::to_string(count) + " x " + std::to_string(d) +
                                         " transductive rows): every row is the same (total variance 0 after "
                                         "centering); expected data that varies");

  Owned<Mat> A = fit_rows_matrix(X, fit, p.scale, n_fit_local);
  PetscInt m_loc = 0, d_loc = 0;
  SSDR_PETSC(MatGetLocalSize(A, &m_loc, &d_loc));
  // c in A's column layout (this rank's slice of the replicated vector).
  Owned<Vec> c;
  SSDR_PETSC(MatCreateVecs(A, c.out(), nullptr));
  {
    const std::vector<double> cc = centering(p);
    PetscInt lo = 0, hi = 0;
    SSDR_PETSC(VecGetOwnershipRange(c, &lo, &hi));
    PetscScalar* a = nullptr;
    SSDR_PETSC(VecGetArray(c, &a));
    for (PetscInt j = lo; j < hi; ++j) a[j - lo] = cc[static_cast<size_t>(j)];
    SSDR_PETSC(VecRestoreArray(c, &a));
  }
  Centered ctx{A.get(), c.get()};
  Owned<Mat> Z;
  SSDR_PETSC(MatCreateShell(X.comm, m_loc, d_loc, static_cast<PetscInt>(count), static_cast<PetscInt>(d), &ctx, Z.out()));
  SSDR_PETSC(MatShellSetOperation(Z, MATOP_MULT, reinterpret_cast<void (*)(void)>(centered_mult)));
  SSDR_PETSC(MatShellSetOperation(Z, MATOP_MULT_TRANSPOSE, reinterpret_cast<void (*)(void)>(centered_mult_transpose)));

  SVD svd = nullptr;
  SSDR_PETSC(SVDCreate(X.comm, &svd));
  struct SvdGuard {
    SVD& s;
    ~SvdGuard() { petsc_destroy_svd(s); }
  } guard{svd};
  SSDR_PETSC(SVDSetOperators(svd, Z, nullptr));
  SSDR_PETSC(SVDSetProblemType(svd, SVD_STANDARD));
  SSDR_PETSC(SVDSetType(svd, SVDTRLANCZOS));
  SSDR_PETSC(SVDSetWhichSingularTriplets(svd, SVD_LARGEST));
  SSDR_PETSC(SVDSetDimensions(svd, static_cast<PetscInt>(k), PETSC_DEFAULT, PETSC_DEFAULT));
  SSDR_PETSC(SVDSetTolerances(svd, 1e-10, 1000));
  SSDR_PETSC(SVDSetImplicitTranspose(svd, PETSC_TRUE));
  SSDR_PETSC(SVDSetOptionsPrefix(svd, "pca_"));
  SSDR_PETSC_OPTIONS(SVDSetFromOptions(svd));
  {
    Phase phase("sparse PCA: truncated SVD (" + std::to_string(count) + " x " + std::to_string(d) + ", " +
                std::to_string(k) + " triplets)");
    SSDR_PETSC(SVDSolve(svd));
  }
  PetscInt nconv = 0, its = 0;
  SSDR_PETSC(SVDGetConverged(svd, &nconv));
  SSDR_PETSC(SVDGetIterationNumber(svd, &its));
  SVDType type = nullptr;
  SSDR_PETSC(SVDGetType(svd, &type));
  p.svd_type = type;
  p.svd_iterations = its;
  PetscInt nsv = 0, ncv = 0, mpd = 0;
  SSDR_PETSC(SVDGetDimensions(svd, &nsv, &ncv, &mpd));
  p.svd_ncv = ncv;
  SSDR_REQUIRE(nconv >= k, "sparse PCA: the truncated SVD (-pca_svd_type " + std::string(type) + ") converged " +
                               std::to_string(nconv) + " of the " + std::to_string(k) +
                               " singular triplets --pca-dim asks for; raise -pca_svd_max_it or lower --pca-dim");
  // Triplets by decreasing σ (SLEPc's order for SVD_LARGEST); eigenvalues of C = σ²/n_fit.
  std::vector<double> sigma(static_cast<size_t>(k));
  Dense V(d, k);
  Owned<Vec> u, v;
  SSDR_PETSC(MatCreateVecs(Z, v.out(), u.out()));
  for (int64_t t = 0; t < k; ++t) {
    PetscReal s = 0, res = 0;
    SSDR_PETSC(SVDGetSingularTriplet(svd, static_cast<PetscInt>(t), &s, u, v));
    SSDR_PETSC(SVDComputeError(svd, static_cast<PetscInt>(t), SVD_ERROR_RELATIVE, &res));
    p.svd_residual = std::max(p.svd_residual, static_cast<double>(res));
    sigma[static_cast<size_t>(t)] = s;
    const std::vector<double> col = vec_allgather(v);
    std::copy(col.begin(), col.end(), V.col(t));
  }
  canonicalize_signs(V);
  // The energy rule over the computed components (ascending, as components_to_keep takes
  // them), against the total variance of the data.
  std::vector<double> w(static_cast<size_t>(k));
  for (int64_t t = 0; t < k; ++t) {
    const double s = sigma[static_cast<size_t>(k - 1 - t)];
    w[static_cast<size_t>(t)] = s * s / static_cast<double>(count);
  }
  const int64_t keep = detail::components_to_keep(w, options, count, p.total_variance);
  p.eigenvalues.resize(static_cast<size_t>(keep));
  for (int64_t t = 0; t < keep; ++t) p.eigenvalues[static_cast<size_t>(t)] = w[static_cast<size_t>(k - 1 - t)];
  if (keep < k) V.v.resize(static_cast<size_t>(d * keep));  // column-major: the first keep columns
  V.cols = keep;
  p.basis = std::move(V);
  return p;
}

}  // namespace

Preprocessor fit_preprocessor(const SparseRows& X, const std::vector<char>& fit, const PreprocessOptions& options) {
  SSDR_CHECK(static_cast<int64_t>(fit.size()) == X.n_local, "fit_preprocessor: mask length");
  SSDR_CHECK(static_cast<int64_t>(X.row_ptr.size()) == X.n_local + 1, "fit_preprocessor: sparse rows without row_ptr");
  SSDR_REQUIRE(!(options.pca_energy > 1.0) && !std::isnan(options.pca_energy),
               "--pca-energy must be in (0, 1], got " + std::to_string(options.pca_energy));
  SSDR_REQUIRE(options.pca, "--no-pca: sparse data (" + std::to_string(X.n_global) + " x " + std::to_string(X.cols) +
                                ") are reduced by PCA; centered but unreduced they are the dense n x d matrix");
  SSDR_REQUIRE(options.pca_dim > 0,
               "sparse data (" + std::to_string(X.n_global) + " x " + std::to_string(X.cols) +
                   "): give --pca-dim D, the principal components the truncated SVD computes (e.g. 100; with "
                   "--pca-energy E the fewest of them reaching E); the d x d covariance is not formed");
  return fit_sparse(X, fit, options);
}

DistMatrix apply(const Preprocessor& p, const SparseRows& X, const std::vector<char>& keep) {
  SSDR_CHECK(static_cast<int64_t>(keep.size()) == X.n_local,
             "apply: " + std::to_string(keep.size()) + " row flags for " + std::to_string(X.n_local) + " local rows");
  SSDR_CHECK(p.basis.rows > 0, "apply: sparse rows need a preprocessor with a PCA basis");
  SSDR_CHECK(p.basis.rows == X.cols && static_cast<int64_t>(p.mean.size()) == X.cols,
             "preprocessing was fitted on " + std::to_string(p.basis.rows) + " features, data has " +
                 std::to_string(X.cols));
  const int64_t d = X.cols, k = p.basis.cols;
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < X.n_local; ++i)
    if (keep[static_cast<size_t>(i)]) rows.push_back(i);
  DistMatrix Y = make_dist_local(X.comm, static_cast<int64_t>(rows.size()), k);
  const std::vector<double> c = centering(p);
  // Columns of V in blocks of kBlock, copied row-major (d×kBlock, with the scale folded in)
  // so each stored value reads one cache line of the block instead of kBlock scattered
  // entries; every entry is still one sum over the row's values in increasing column order.
  constexpr int64_t kBlock = 8;
  std::vector<double> Vb;
  for (int64_t t0 = 0; t0 < k; t0 += kBlock) {
    const int64_t b = std::min(kBlock, k - t0);
    Vb.assign(static_cast<size_t>(d * kBlock), 0.0);
    double off[kBlock] = {};  // cᵀv, in index order
    for (int64_t t = 0; t < b; ++t) {
      const double* v = p.basis.col(t0 + t);
      for (int64_t j = 0; j < d; ++j) {
        off[t] += c[static_cast<size_t>(j)] * v[j];
        Vb[static_cast<size_t>(j * kBlock + t)] = (p.scale.empty() ? 1.0 : p.scale[static_cast<size_t>(j)]) * v[j];
      }
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      const int64_t i = rows[r];
      double acc[kBlock] = {};
      for (int64_t q = X.row_ptr[static_cast<size_t>(i)]; q < X.row_ptr[static_cast<size_t>(i) + 1]; ++q) {
        const double x = X.val[static_cast<size_t>(q)];
        const double* vb = Vb.data() + static_cast<int64_t>(X.col[static_cast<size_t>(q)]) * kBlock;
        for (int64_t t = 0; t < kBlock; ++t) acc[t] += x * vb[t];
      }
      for (int64_t t = 0; t < b; ++t) Y(static_cast<int64_t>(r), t0 + t) = acc[t] - off[t];
    }
  }
  return Y;
}

}  // namespace ssdr::data
