// --shrinkage (issue 49): the shrunk scatter matrices (scatter/shrinkage.hpp) against a serial
// dense reference written here from scikit-learn's definitions (StandardScaler, then
// ledoit_wolf_shrinkage in its unblocked form, then the rescaled shrunk covariance; the
// class covariances weighted by the class priors), and `lda --shrinkage auto` through the
// pipeline (centering and PCA first) against the generalized eigenvectors of that reference
// on the raw features. ctest runs these on 1, 2, 3 and 4 ranks: the same result on each.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "reference.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/scatter/shrinkage.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

/// The rows of X (n×p, replicated) with label k (k = −2: every row with a label ≥ 0).
Dense group_rows(const Dense& X, const std::vector<int>& labels, int k) {
  std::vector<char> keep(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) keep[i] = k == -2 ? labels[i] >= 0 : labels[i] == k;
  return ref::rows(X, keep);
}

/// sklearn's _cov(X, shrinkage): "auto" (shrinkage < 0) or a fixed coefficient; the
/// coefficient used in *s.
Dense reference_cov(const Dense& X, double shrinkage, double* s_out) {
  const int64_t n = X.rows, p = X.cols;
  const double eps = std::numeric_limits<double>::epsilon();
  std::vector<double> mean(static_cast<size_t>(p), 0.0);
  for (int64_t j = 0; j < p; ++j) {
    for (int64_t i = 0; i < n; ++i) mean[static_cast<size_t>(j)] += X(i, j);
    mean[static_cast<size_t>(j)] /= static_cast<double>(n);
  }
  Dense Xc(n, p);
  for (int64_t j = 0; j < p; ++j)
    for (int64_t i = 0; i < n; ++i) Xc(i, j) = X(i, j) - mean[static_cast<size_t>(j)];
  auto covariance = [&](const Dense& Z) {  // empirical_covariance: ZᵀZ/n of centered Z
    Dense C(p, p);
    for (int64_t a = 0; a < p; ++a)
      for (int64_t b = 0; b < p; ++b) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += Z(i, a) * Z(i, b);
        C(a, b) = s / static_cast<double>(n);
      }
    return C;
  };
  if (shrinkage >= 0) {  // shrunk_covariance(empirical_covariance(X), s): toward tr/p·I
    Dense C = covariance(Xc);
    double tr = 0;
    for (int64_t a = 0; a < p; ++a) tr += C(a, a);
    for (double& v : C.v) v *= 1 - shrinkage;
    for (int64_t a = 0; a < p; ++a) C(a, a) += shrinkage * tr / static_cast<double>(p);
    *s_out = shrinkage;
    return C;
  }
  // StandardScaler: scale = the population standard deviation, 1 for a constant feature.
  std::vector<double> scale(static_cast<size_t>(p));
  for (int64_t j = 0; j < p; ++j) {
    double var = 0;
    for (int64_t i = 0; i < n; ++i) var += Xc(i, j) * Xc(i, j);
    var /= static_cast<double>(n);
    const double m = mean[static_cast<size_t>(j)], nn = static_cast<double>(n);
    scale[static_cast<size_t>(j)] = var <= nn * eps * var + (nn * m * eps) * (nn * m * eps) ? 1.0 : std::sqrt(var);
  }
  Dense Z(n, p);
  for (int64_t j = 0; j < p; ++j)
    for (int64_t i = 0; i < n; ++i) Z(i, j) = Xc(i, j) / scale[static_cast<size_t>(j)];
  const Dense C = covariance(Z);
  // ledoit_wolf_shrinkage: beta_ = Σ of the entries of X2ᵀX2 (X2 = Z∘Z), delta_ = Σ of the
  // squared entries of ZᵀZ over n², emp_cov_trace = the diagonal of C.
  double beta_ = 0, trace = 0;
  for (int64_t a = 0; a < p; ++a) {
    trace += C(a, a);
    for (int64_t b = 0; b < p; ++b)
      for (int64_t i = 0; i < n; ++i) beta_ += Z(i, a) * Z(i, a) * Z(i, b) * Z(i, b);
  }
  double delta_ = 0;
  for (double v : C.v) delta_ += v * v;
  const double nn = static_cast<double>(n), pp = static_cast<double>(p), mu = trace / pp;
  double beta = 1.0 / (pp * nn) * (beta_ / nn - delta_);
  double delta = (delta_ - 2.0 * mu * trace + pp * mu * mu) / pp;
  beta = std::min(beta, delta);
  const double s = beta == 0 ? 0.0 : beta / delta;
  *s_out = s;
  Dense S(p, p);
  for (int64_t a = 0; a < p; ++a)
    for (int64_t b = 0; b < p; ++b)
      S(a, b) = scale[static_cast<size_t>(a)] * ((1 - s) * C(a, b) + (a == b ? s * mu : 0.0)) *
                scale[static_cast<size_t>(b)];
  return S;
}

/// sklearn's _class_cov and _cov: S_w (priors n_k/n) and S_t of the labeled rows.
struct Reference {
  Dense Sw, St;
  std::vector<double> class_s;
  double total_s = 0;
};
Reference reference(const Dense& X, const std::vector<int>& semi, int classes, double shrinkage) {
  Reference r;
  double n = 0;
  for (int v : semi) n += v >= 0;
  r.Sw = Dense(X.cols, X.cols);
  for (int k = 0; k < classes; ++k) {
    const Dense Xk = group_rows(X, semi, k);
    double s = 0;
    const Dense Ck = reference_cov(Xk, shrinkage, &s);
    r.class_s.push_back(s);
    for (size_t i = 0; i < Ck.v.size(); ++i) r.Sw.v[i] += static_cast<double>(Xk.rows) / n * Ck.v[i];
  }
  r.St = reference_cov(group_rows(X, semi, -2), shrinkage, &r.total_s);
  return r;
}

double max_abs(const Dense& A) {
  double m = 0;
  for (double v : A.v) m = std::max(m, std::abs(v));
  return m;
}
double max_diff(const Dense& A, const Dense& B) {
  EXPECT_EQ(A.rows, B.rows);
  EXPECT_EQ(A.cols, B.cols);
  double m = 0;
  for (size_t i = 0; i < A.v.size(); ++i) m = std::max(m, std::abs(A.v[i] - B.v[i]));
  return m;
}
/// VᵀAV.
Dense congruence(const Dense& V, const Dense& A) {
  Dense AV(A.rows, V.cols), out(V.cols, V.cols);
  blas::gemm('N', 'N', A.rows, V.cols, A.cols, 1.0, A.data(), A.rows, V.data(), V.rows, 0.0, AV.data(), A.rows);
  blas::gemm('T', 'N', V.cols, V.cols, V.rows, 1.0, V.data(), V.rows, AV.data(), AV.rows, 0.0, out.data(), V.cols);
  return out;
}
/// A random p×p orthogonal matrix (fixed seed: the same on every rank).
Dense random_rotation(int64_t p) {
  std::mt19937_64 rng(49);
  std::normal_distribution<double> g;
  Dense V(p, p);
  for (double& v : V.v) v = g(rng);
  lapack::orthonormalize(p, p, V.data(), p);
  return V;
}
/// The rows of X (n×p) minus their column means, times V: a PCA-like map of the features.
Dense rotate(const Dense& X, const Dense& V) {
  const Dense Xc = test::center_columns(X, false);
  Dense Y(X.rows, V.cols);
  blas::gemm('N', 'N', X.rows, V.cols, X.cols, 1.0, Xc.data(), X.rows, V.data(), V.rows, 0.0, Y.data(), X.rows);
  return Y;
}

/// The largest sine of the principal angles between span([1 A]) and span([1 B]) (A, B: n×m
/// row-major): zero exactly when B = A·M + 1bᵀ for an invertible M. Frobenius norm of
/// (I − QaQaᵀ)Qb, an upper bound of the largest sine.
double affine_span_sine(const std::vector<double>& A, const std::vector<double>& B, int64_t m) {
  const int64_t n = static_cast<int64_t>(A.size()) / m;
  auto basis = [&](const std::vector<double>& E) {
    Dense Q(n, m + 1);
    for (int64_t i = 0; i < n; ++i) {
      Q(i, 0) = 1;
      for (int64_t j = 0; j < m; ++j) Q(i, j + 1) = E[static_cast<size_t>(i * m + j)];
    }
    lapack::orthonormalize(n, m + 1, Q.data(), n);
    return Q;
  };
  const Dense Qa = basis(A), Qb = basis(B);
  Dense P(m + 1, m + 1), R = Qb;
  blas::gemm('T', 'N', m + 1, m + 1, n, 1.0, Qa.data(), n, Qb.data(), n, 0.0, P.data(), m + 1);
  blas::gemm('N', 'N', n, m + 1, m + 1, -1.0, Qa.data(), n, P.data(), m + 1, 1.0, R.data(), n);
  double f = 0;
  for (double v : R.v) f += v * v;
  return std::sqrt(f);
}

}  // namespace

TEST(Shrinkage, LedoitWolfCoefficientsAndMatricesMatchTheSerialReference) {
  for (const char* file : {"iris.csv", "wine.csv"}) {
    const test::Problem pr = test::load_problem(file, 30, false);  // 30 labeled per class, the rest −1
    const Reference want = reference(pr.X, pr.semi, pr.classes, -1);
    const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    const scatter::ShrunkScatter got =
        scatter::shrunk_scatter(X, test::local_part(pr.semi, X), pr.classes, nullptr, scatter::kLedoitWolf);
    ASSERT_EQ(got.class_coefficients.size(), static_cast<size_t>(pr.classes));
    for (int k = 0; k < pr.classes; ++k) {
      EXPECT_NEAR(got.class_coefficients[static_cast<size_t>(k)], want.class_s[static_cast<size_t>(k)], 1e-11)
          << file << " class " << k;
      EXPECT_GT(want.class_s[static_cast<size_t>(k)], 0.0) << file << ": a real shrinkage, not the bound";
      EXPECT_LT(want.class_s[static_cast<size_t>(k)], 1.0) << file;
    }
    EXPECT_NEAR(got.total_coefficient, want.total_s, 1e-11) << file;
    EXPECT_LE(max_diff(got.Sw, want.Sw), 1e-12 * max_abs(want.St)) << file;
    EXPECT_LE(max_diff(got.St, want.St), 1e-12 * max_abs(want.St)) << file;
    Dense Sb = want.St;
    for (size_t i = 0; i < Sb.v.size(); ++i) Sb.v[i] -= want.Sw.v[i];
    EXPECT_LE(max_diff(got.Sb, Sb), 1e-12 * max_abs(want.St)) << file;
  }
}

TEST(Shrinkage, ThroughABasisTheFeaturesAreStandardizedNotTheRotatedAxes) {
  // X's columns are (features − mean)·V, the basis V: the result is Vᵀ(the features' shrunk
  // matrices)V with the features' coefficients, for auto and for a fixed value. With 5
  // labeled rows per class on wine (13 features) each class has fewer rows than d', which
  // takes the low-rank route (the group's rows mapped to the features, W = V·Yᵀ); the 15 rows
  // of the total and every group with 30 per class take the route through G = VᵀD⁻²V.
  for (const auto& [file, per_class] : std::vector<std::pair<const char*, int>>{
           {"iris.csv", 30}, {"wine.csv", 30}, {"wine.csv", 5}}) {
    const test::Problem pr = test::load_problem(file, per_class, false);
    const Dense V = random_rotation(pr.X.cols);
    const DistMatrix Y = ref::distribute(rotate(pr.X, V), MPI_COMM_WORLD);
    // The features' variances come back as diag(VΣVᵀ), whose rounding is ε times the largest
    // variance: relative ε·κ for the smallest, κ = the ratio of the largest to the smallest
    // feature variance (7·10⁶ on wine, whose features span five orders of magnitude; 30 on
    // iris). The coefficients inherit that relative error; ten times it is the bound.
    double vmax = 0, vmin = std::numeric_limits<double>::infinity();
    {
      const Dense Xc = test::center_columns(pr.X, false);
      for (int64_t j = 0; j < Xc.cols; ++j) {
        double v = 0;
        for (int64_t i = 0; i < Xc.rows; ++i) v += Xc(i, j) * Xc(i, j);
        vmax = std::max(vmax, v);
        vmin = std::min(vmin, v);
      }
    }
    const double tol = std::max(1e-11, 10 * std::numeric_limits<double>::epsilon() * vmax / vmin);
    for (double shrinkage : {scatter::kLedoitWolf, 0.3}) {
      const Reference want = reference(pr.X, pr.semi, pr.classes, shrinkage);
      const scatter::ShrunkScatter got =
          scatter::shrunk_scatter(Y, test::local_part(pr.semi, Y), pr.classes, &V, shrinkage);
      for (int k = 0; k < pr.classes; ++k)
        EXPECT_NEAR(got.class_coefficients[static_cast<size_t>(k)], want.class_s[static_cast<size_t>(k)], tol)
            << file << " class " << k << " shrinkage " << shrinkage;
      EXPECT_NEAR(got.total_coefficient, want.total_s, tol) << file;
      // The matrices: their shrinkage target's entries scale as √(D_i·D_j), so a feature
      // variance's relative error ε·κ (above) moves them by about ε·√κ·max|S_t|; with the
      // congruence's rounding, ten times that bounds both (6e-12 on wine, where OpenBLAS's
      // SkylakeX kernels gave 1.6e-12 and the earlier 1e-12 was exceeded; 1e-12 on iris).
      const double mtol =
          std::max(1e-12, 10 * std::numeric_limits<double>::epsilon() * std::sqrt(vmax / vmin)) * max_abs(want.St);
      EXPECT_LE(max_diff(got.Sw, congruence(V, want.Sw)), mtol) << file << " " << shrinkage;
      EXPECT_LE(max_diff(got.St, congruence(V, want.St)), mtol) << file << " " << shrinkage;
    }
    // Without the basis the rotated axes would be standardized instead: another coefficient.
    const scatter::ShrunkScatter axes =
        scatter::shrunk_scatter(Y, test::local_part(pr.semi, Y), pr.classes, nullptr, scatter::kLedoitWolf);
    const Reference want = reference(pr.X, pr.semi, pr.classes, -1);
    EXPECT_GT(std::abs(axes.total_coefficient - want.total_s), 1e-6) << file;
  }
}

TEST(Shrinkage, RefusesAValueOutsideZeroOneAndAClassWithoutRows) {
  const test::Problem pr = test::load_problem("iris.csv", 5, false);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  std::vector<int> semi = test::local_part(pr.semi, X);
  EXPECT_THROW(scatter::shrunk_scatter(X, semi, pr.classes, nullptr, 1.5), Error);
  for (int& v : semi)
    if (v == 2) v = -1;
  EXPECT_THROW(scatter::shrunk_scatter(X, semi, pr.classes, nullptr, scatter::kLedoitWolf), Error);
}

TEST(Shrinkage, LdaAutoThroughThePipelineSpansTheReferenceSubspace) {
  // `ssdr fit --method lda --shrinkage auto` (centering and PCA, which keeps every direction
  // of iris and wine) against the generalized eigenvectors S_b v = λ S_w v of the reference on
  // the raw features, as scikit-learn's LinearDiscriminantAnalysis(solver="eigen",
  // shrinkage="auto") computes them: the embeddings of all rows span the same affine
  // subspace. S_w is well conditioned after shrinkage (κ ≤ 3·10⁶ on wine), so the subspaces
  // agree to about κ·ε ≈ 10⁻⁹; the bound 10⁻⁸ leaves a factor of ten.
  for (const char* file : {"iris.csv", "wine.csv"}) {
    const test::Problem pr = test::load_problem(file, 30, false);
    const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    const driver::FitOutcome out =
        test::fit_problem(pr, X, driver::make_fit_config("lda", {{"shrinkage", "auto", "--shrinkage"}}, 0, 0, 0));
    const int64_t m = pr.classes - 1;
    ASSERT_EQ(out.embedding.cols, m);
    EXPECT_EQ(out.info["shrinkage"], "auto");
    EXPECT_EQ(out.info["shrinkage_coordinates"], "features");
    const Reference r = reference(pr.X, pr.semi, pr.classes, -1);
    for (int k = 0; k < pr.classes; ++k)
      EXPECT_NEAR(out.info["shrinkage_class_coefficients"][k].get<double>(), r.class_s[static_cast<size_t>(k)], 1e-11);
    const int64_t p = pr.X.cols;
    Dense A = r.St, B = r.Sw;
    for (size_t i = 0; i < A.v.size(); ++i) A.v[i] -= r.Sw.v[i];
    std::vector<double> w(static_cast<size_t>(p));
    lapack::sygv(p, A.data(), p, B.data(), p, w.data());  // ascending: the last m columns
    std::vector<double> Yref(static_cast<size_t>(pr.X.rows * m));
    for (int64_t i = 0; i < pr.X.rows; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t t = 0; t < p; ++t) s += pr.X(i, t) * A(t, p - 1 - j);
        Yref[static_cast<size_t>(i * m + j)] = s;
      }
    const std::vector<double> Y = allgatherv(out.embedding.v, MPI_COMM_WORLD);
    EXPECT_LT(affine_span_sine(Y, Yref, m), 1e-8) << file;
  }
}

TEST(Shrinkage, AWideBasisOfFewerColumnsWithConstantFeatures) {
  // p = 300 features of rank d' = 40 (X = mean + U Vᵀ, the PCA that drops the null space
  // keeps exactly V), five of them constant up to rounding (zero rows before the QR of V:
  // scale 1 in sklearn's StandardScaler, which the reference follows), the basis read in
  // blocks of 256 rows: the shrunk matrices are Vᵀ(the features' ones)V and the
  // coefficients the features'.
  const int64_t n = 240, p = 300, dp = 40;
  const int classes = 3;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g;
  Dense V(p, dp);
  for (double& v : V.v) v = g(rng);
  for (int64_t a : {0, 17, 150, 256, 299})
    for (int64_t q = 0; q < dp; ++q) V(a, q) = 0;
  lapack::orthonormalize(p, dp, V.data(), p);
  Dense U(n, dp), X(n, p);
  std::vector<int> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(i % classes);
    labels[static_cast<size_t>(i)] = i % 11 == 0 ? -1 : k;
    for (int64_t q = 0; q < dp; ++q) U(i, q) = g(rng) * (1.0 + 0.1 * static_cast<double>(q)) + (q == k ? 2.0 : 0.0);
  }
  blas::gemm('N', 'T', n, p, dp, 1.0, U.data(), n, V.data(), p, 0.0, X.data(), n);
  for (int64_t a = 0; a < p; ++a)
    for (int64_t i = 0; i < n; ++i) X(i, a) += 3.0 + 0.01 * static_cast<double>(a);
  const Reference want = reference(X, labels, classes, -1);
  const DistMatrix Y = ref::distribute(rotate(X, V), MPI_COMM_WORLD);
  const scatter::ShrunkScatter got = scatter::shrunk_scatter(Y, test::local_part(labels, Y), classes, &V,
                                                             scatter::kLedoitWolf);
  for (int k = 0; k < classes; ++k)
    EXPECT_NEAR(got.class_coefficients[static_cast<size_t>(k)], want.class_s[static_cast<size_t>(k)], 1e-11) << k;
  EXPECT_NEAR(got.total_coefficient, want.total_s, 1e-11);
  EXPECT_LE(max_diff(got.Sw, congruence(V, want.Sw)), 1e-12 * max_abs(want.St));
  EXPECT_LE(max_diff(got.St, congruence(V, want.St)), 1e-12 * max_abs(want.St));
}
