// trace_ratio against independent references (bisection on g(λ), generalized eigenproblem,
// search over the sphere), at any rank count.
#include <gtest/gtest.h>
#include <petscsys.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/solvers/trace_ratio.hpp"
#include "support.hpp"

using namespace ssdr;
using solvers::trace_ratio;
using solvers::TraceRatioOptions;
using solvers::TraceRatioResult;

namespace {

struct Scatter {
  Dense Sb, Sw;
};

/// Between- and within-class scatter of `c` Gaussian classes of `per_class` points in d
/// dimensions (anisotropic within-class covariance), Sb of rank c−1, Sw + μI with μ = 0.1·
/// max diag(Sw) as in the paper. Fixed seed: identical on every rank.
Scatter gaussian_classes(int64_t d, int c, int per_class, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<double> scale(static_cast<size_t>(d));
  for (int64_t k = 0; k < d; ++k) scale[static_cast<size_t>(k)] = 0.3 + 2.0 * std::fabs(nd(gen));
  Dense mix(d, d);  // within-class covariance: mix·diag(scale)
  for (double& x : mix.v) x = nd(gen) / std::sqrt(static_cast<double>(d));
  for (int64_t k = 0; k < d; ++k) mix(k, k) += 1.0;

  const int n = c * per_class;
  Dense X(d, n);
  std::vector<int> label(static_cast<size_t>(n));
  for (int cl = 0; cl < c; ++cl) {
    std::vector<double> mean(static_cast<size_t>(d));
    for (double& m : mean) m = 2.0 * nd(gen);
    for (int s = 0; s < per_class; ++s) {
      const int j = cl * per_class + s;
      label[static_cast<size_t>(j)] = cl;
      std::vector<double> z(static_cast<size_t>(d));
      for (int64_t k = 0; k < d; ++k) z[static_cast<size_t>(k)] = nd(gen) * scale[static_cast<size_t>(k)];
      for (int64_t i = 0; i < d; ++i) {
        double v = mean[static_cast<size_t>(i)];
        for (int64_t k = 0; k < d; ++k) v += mix(i, k) * z[static_cast<size_t>(k)];
        X(i, j) = v;
      }
    }
  }
  std::vector<double> mu(static_cast<size_t>(d), 0.0);
  std::vector<std::vector<double>> mu_c(static_cast<size_t>(c), std::vector<double>(static_cast<size_t>(d), 0.0));
  for (int j = 0; j < n; ++j)
    for (int64_t i = 0; i < d; ++i) {
      mu[static_cast<size_t>(i)] += X(i, j) / n;
      mu_c[static_cast<size_t>(label[static_cast<size_t>(j)])][static_cast<size_t>(i)] += X(i, j) / per_class;
    }
  Scatter S{Dense(d, d), Dense(d, d)};
  for (int cl = 0; cl < c; ++cl)
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b)
        S.Sb(a, b) += static_cast<double>(per_class) / n *
                      (mu_c[static_cast<size_t>(cl)][static_cast<size_t>(a)] - mu[static_cast<size_t>(a)]) *
                      (mu_c[static_cast<size_t>(cl)][static_cast<size_t>(b)] - mu[static_cast<size_t>(b)]);
  for (int j = 0; j < n; ++j) {
    const auto& m = mu_c[static_cast<size_t>(label[static_cast<size_t>(j)])];
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b)
        S.Sw(a, b) += (X(a, j) - m[static_cast<size_t>(a)]) * (X(b, j) - m[static_cast<size_t>(b)]) / n;
  }
  double maxdiag = 0;
  for (int64_t k = 0; k < d; ++k) maxdiag = std::max(maxdiag, S.Sw(k, k));
  for (int64_t k = 0; k < d; ++k) S.Sw(k, k) += 0.1 * maxdiag;
  return S;
}

/// tr(WᵀSW).
double trace_form(const Dense& S, const Dense& W) {
  const int64_t d = W.rows, m = W.cols;
  Dense SW(d, m);
  blas::gemm('N', 'N', d, m, d, 1.0, S.data(), d, W.data(), d, 0.0, SW.data(), d);
  double t = 0;
  for (size_t k = 0; k < SW.v.size(); ++k) t += SW.v[k] * W.v[k];
  return t;
}

double ratio_of(const Scatter& S, const Dense& W) { return trace_form(S.Sb, W) / trace_form(S.Sw, W); }

/// Sb − λSw.
Dense difference(const Scatter& S, double lambda) {
  Dense M = S.Sb;
  for (size_t k = 0; k < M.v.size(); ++k) M.v[k] -= lambda * S.Sw.v[k];
  return M;
}

/// g(λ) = sum of the m largest eigenvalues of Sb − λSw (LAPACK), and the top-m eigenvectors.
double g(const Scatter& S, double lambda, int64_t m, Dense* top = nullptr) {
  const int64_t d = S.Sb.rows;
  Dense M = difference(S, lambda);
  std::vector<double> w(static_cast<size_t>(d));
  lapack::syev(d, M.data(), d, w.data());
  double s = 0;
  for (int64_t k = 0; k < m; ++k) s += w[static_cast<size_t>(d - 1 - k)];
  if (top) {
    *top = Dense(d, m);
    for (int64_t k = 0; k < m; ++k) std::copy(M.col(d - 1 - k), M.col(d - 1 - k) + d, top->col(k));
  }
  return s;
}

/// λ* as the root of the decreasing g (g(0) ≥ 0, g(λmax(Sb)/λmin(Sw)) ≤ 0), by bisection.
double optimum_by_bisection(const Scatter& S, int64_t m) {
  double lo = 0, hi = 1;
  while (g(S, hi, m) > 0) hi *= 2;
  while (hi - lo > 1e-15 * hi) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    (g(S, mid, m) > 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double max_dev_from_identity(const Dense& W) {
  const int64_t m = W.cols;
  Dense G(m, m);
  blas::gemm('T', 'N', m, m, W.rows, 1.0, W.data(), W.rows, W.data(), W.rows, 0.0, G.data(), m);
  double e = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) e = std::max(e, std::fabs(G(i, j) - (i == j ? 1.0 : 0.0)));
  return e;
}

TraceRatioResult solve(const Scatter& S, int64_t m, int max_iterations = 100) {
  TraceRatioOptions o;
  o.dim = m;
  o.max_iterations = max_iterations;
  o.prefix = "trt_";
  return trace_ratio(S.Sb, S.Sw, o, MPI_COMM_WORLD);
}

}  // namespace

TEST(TraceRatio, RatioNeverDecreases) {
  for (int64_t m : {int64_t{2}, int64_t{4}, int64_t{9}}) {
    const Scatter S = gaussian_classes(24, 5, 12, 100 + static_cast<unsigned>(m));
    const TraceRatioResult r = solve(S, m);
    EXPECT_TRUE(r.converged) << "m = " << m;
    ASSERT_FALSE(r.history.empty());
    // One entry per accepted step; a final step without growth is not recorded.
    const size_t its = static_cast<size_t>(r.iterations);
    EXPECT_TRUE(r.history.size() == its || r.history.size() + 1 == its);
    for (size_t k = 1; k < r.history.size(); ++k) EXPECT_GE(r.history[k], r.history[k - 1]) << "step " << k;
    EXPECT_DOUBLE_EQ(r.ratio, r.history.back());
    EXPECT_NEAR(r.ratio, ratio_of(S, r.W), 1e-12 * r.ratio);
    EXPECT_LE(r.iterations, 20) << "the §2.3.2 iteration converges in a handful of steps";
  }
}

TEST(TraceRatio, ColumnsAreOrthonormal) {
  for (int64_t m : {int64_t{1}, int64_t{3}, int64_t{12}}) {
    const Scatter S = gaussian_classes(30, 4, 15, 200 + static_cast<unsigned>(m));
    const TraceRatioResult r = solve(S, m);
    ASSERT_EQ(r.W.rows, 30);
    ASSERT_EQ(r.W.cols, m);
    EXPECT_LT(max_dev_from_identity(r.W), 1e-12) << "m = " << m;
    // Replicated: bitwise the same W on every rank.
    Dense W0 = r.W;
    MPI_Bcast(W0.data(), static_cast<int>(W0.v.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double local = test::max_abs_diff(r.W, W0), global = 0;
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(global, 0.0);
  }
}

TEST(TraceRatio, EqualsBruteForceOptimumOnATinyProblem) {
  // λ* is the root of g(λ) = Σ_{top m} eig(Sb − λSw), found independently by bisection.
  for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}}) {
    const Scatter S = gaussian_classes(8, 3, 10, 300 + static_cast<unsigned>(m));
    const TraceRatioResult r = solve(S, m);
    const double ref = optimum_by_bisection(S, m);
    EXPECT_NEAR(r.ratio, ref, 1e-8 * ref) << "m = " << m;
    EXPECT_NEAR(ratio_of(S, r.W), ref, 1e-8 * ref) << "m = " << m;
  }
  // d = 3, m = 1: the optimum is the largest generalized eigenvalue of (Sb, Sw), and a
  // direct search over the unit sphere (grid, then golden-section refinement in each
  // spherical angle) finds the same value.
  const Scatter S = gaussian_classes(3, 3, 8, 399);
  const TraceRatioResult r = solve(S, 1);
  Dense A = S.Sb, B = S.Sw;
  std::vector<double> w(3);
  lapack::sygv(3, A.data(), 3, B.data(), 3, w.data());
  EXPECT_NEAR(r.ratio, w[2], 1e-10 * w[2]);

  auto q = [&](double th, double ph) {
    Dense x(3, 1);
    x(0, 0) = std::sin(th) * std::cos(ph);
    x(1, 0) = std::sin(th) * std::sin(ph);
    x(2, 0) = std::cos(th);
    return ratio_of(S, x);
  };
  const double pi = std::acos(-1.0);
  double best = -1, bt = 0, bp = 0;
  const int N = 400;
  for (int i = 0; i <= N; ++i)
    for (int j = 0; j < 2 * N; ++j) {
      const double th = pi * i / N, ph = pi * j / N;
      const double v = q(th, ph);
      if (v > best) best = v, bt = th, bp = ph;
    }
  // Coordinate-wise golden-section refinement around the best grid point.
  const double gr = (std::sqrt(5.0) - 1) / 2;
  for (int sweep = 0; sweep < 30; ++sweep) {
    for (int coord = 0; coord < 2; ++coord) {
      double a = (coord == 0 ? bt : bp) - pi / N, b = (coord == 0 ? bt : bp) + pi / N;
      auto f = [&](double t) { return coord == 0 ? q(t, bp) : q(bt, t); };
      for (int it = 0; it < 80; ++it) {
        const double c = b - gr * (b - a), d = a + gr * (b - a);
        (f(c) > f(d) ? b : a) = (f(c) > f(d) ? d : c);
      }
      (coord == 0 ? bt : bp) = 0.5 * (a + b);
    }
  }
  best = std::max(best, q(bt, bp));
  EXPECT_NEAR(r.ratio, best, 1e-8 * best);
  EXPECT_LE(best, r.ratio * (1 + 1e-12)) << "no point of the sphere beats the solver";
}

TEST(TraceRatio, SatisfiesTheStationarityCondition21) {
  // (Sb − λ*Sw)W = WΛ̃: the columns of W span an invariant subspace of Sb − λ*Sw, which
  // moreover is the top-m one (g(λ*) = 0).
  for (int64_t m : {int64_t{2}, int64_t{6}}) {
    const Scatter S = gaussian_classes(20, 4, 15, 400 + static_cast<unsigned>(m));
    const TraceRatioResult r = solve(S, m);
    const int64_t d = 20;
    const Dense M = difference(S, r.ratio);
    Dense MW(d, m), WtMW(m, m), R(d, m);
    blas::gemm('N', 'N', d, m, d, 1.0, M.data(), d, r.W.data(), d, 0.0, MW.data(), d);
    blas::gemm('T', 'N', m, m, d, 1.0, r.W.data(), d, MW.data(), d, 0.0, WtMW.data(), m);
    R = MW;  // (I − WWᵀ) M W = MW − W (WᵀMW)
    blas::gemm('N', 'N', d, m, m, -1.0, r.W.data(), d, WtMW.data(), m, 1.0, R.data(), d);
    double res = 0, nrm = 0;
    for (double x : R.v) res = std::max(res, std::fabs(x));
    for (double x : M.v) nrm = std::max(nrm, std::fabs(x));
    EXPECT_LT(res, 1e-9 * nrm) << "m = " << m;
    EXPECT_NEAR(g(S, r.ratio, m), 0.0, 1e-9 * nrm) << "m = " << m;
    // Columns ordered by decreasing τ_i = w_iᵀ(Sb − λ*Sw)w_i.
    for (int64_t k = 1; k < m; ++k) EXPECT_GE(WtMW(k - 1, k - 1), WtMW(k, k) - 1e-12 * nrm);
  }
}

TEST(TraceRatio, BeatsTheTopEigenvectorsOfSbMinusLambdaSw) {
  // One step from λ₀ = tr(Sb)/tr(Sw): the §2.3.2 choice (best m of all d eigenvectors) is at
  // least as good as the §2.3.1 one (the top m).
  {
    const int64_t m = 6;
    const Scatter S = gaussian_classes(16, 3, 20, 501);
    double trb = 0, trw = 0;
    for (int64_t k = 0; k < 16; ++k) trb += S.Sb(k, k), trw += S.Sw(k, k);
    Dense top;
    g(S, trb / trw, m, &top);
    const TraceRatioResult one = solve(S, m, 1);
    EXPECT_EQ(one.iterations, 1);
    EXPECT_GE(one.ratio, ratio_of(S, top) * (1 - 1e-12));
  }
  // A commuting pair Sb = Q diag(a) Qᵀ, Sw = Q diag(b) Qᵀ where it is strictly better: at
  // λ₀ = 38/27 the top two eigenvectors of Sb − λ₀Sw (τ = a − λ₀b) are q₀ and q₁ with ratio
  // 34/11, while {q₁, q₂} has ratio 7.9/2 — which one Dinkelbach step already finds.
  const std::vector<double> a = {30, 4, 3.9, 0, 0, 0}, b = {10, 1, 1, 4, 5, 6};
  const int64_t d = 6;
  std::mt19937_64 gen(502);
  std::normal_distribution<double> nd(0.0, 1.0);
  Dense Q(d, d);
  for (double& x : Q.v) x = nd(gen);
  lapack::orthonormalize(d, d, Q.data(), d);
  Scatter S{Dense(d, d), Dense(d, d)};
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j)
      for (int64_t k = 0; k < d; ++k) {
        S.Sb(i, j) += Q(i, k) * a[static_cast<size_t>(k)] * Q(j, k);
        S.Sw(i, j) += Q(i, k) * b[static_cast<size_t>(k)] * Q(j, k);
      }
  for (int64_t i = 0; i < d; ++i)  // exact symmetry
    for (int64_t j = 0; j < i; ++j) S.Sb(j, i) = S.Sb(i, j), S.Sw(j, i) = S.Sw(i, j);
  Dense top;
  g(S, 38.0 / 27.0, 2, &top);
  EXPECT_NEAR(ratio_of(S, top), 34.0 / 11.0, 1e-12);
  const TraceRatioResult one = solve(S, 2, 1);
  EXPECT_NEAR(one.ratio, 7.9 / 2.0, 1e-12);
  const TraceRatioResult full = solve(S, 2);
  EXPECT_NEAR(full.ratio, 7.9 / 2.0, 1e-12);
  EXPECT_NEAR(full.ratio, optimum_by_bisection(S, 2), 1e-8 * full.ratio);
  // W spans {q₁, q₂}: its projection onto that plane is the identity.
  Dense P(2, 2);
  Dense Q12(d, 2);
  std::copy(Q.col(1), Q.col(1) + d, Q12.col(0));
  std::copy(Q.col(2), Q.col(2) + d, Q12.col(1));
  blas::gemm('T', 'N', 2, 2, d, 1.0, Q12.data(), d, full.W.data(), d, 0.0, P.data(), 2);
  EXPECT_NEAR(std::fabs(P(0, 0) * P(1, 1) - P(0, 1) * P(1, 0)), 1.0, 1e-10);
}

TEST(TraceRatio, ReachesTheSameOptimumWhenTheEigenSolvesUseKrylovSchur) {
  const Scatter S = gaussian_classes(18, 4, 12, 551);
  const TraceRatioResult dense = solve(S, 3);
  PetscOptionsSetValue(nullptr, "-trt_eps_type", "krylovschur");
  TraceRatioResult ks;
  try {
    ks = solve(S, 3);
  } catch (...) {
    PetscOptionsClearValue(nullptr, "-trt_eps_type");
    throw;
  }
  PetscOptionsClearValue(nullptr, "-trt_eps_type");
  EXPECT_TRUE(ks.converged);
  EXPECT_NEAR(ks.ratio, dense.ratio, 1e-10 * dense.ratio);
  EXPECT_LT(max_dev_from_identity(ks.W), 1e-12);
  EXPECT_LT(test::max_diff_up_to_column_sign(ks.W, dense.W), 1e-6);
}

TEST(TraceRatio, HandlesTheFullDimensionAndAZeroSb) {
  const Scatter S = gaussian_classes(7, 3, 10, 601);
  const TraceRatioResult full = solve(S, 7);
  double trb = 0, trw = 0;
  for (int64_t k = 0; k < 7; ++k) trb += S.Sb(k, k), trw += S.Sw(k, k);
  EXPECT_NEAR(full.ratio, trb / trw, 1e-12 * full.ratio);
  EXPECT_TRUE(full.converged);
  EXPECT_LT(max_dev_from_identity(full.W), 1e-12);

  Scatter Z = S;
  std::fill(Z.Sb.v.begin(), Z.Sb.v.end(), 0.0);
  const TraceRatioResult zero = solve(Z, 2);
  EXPECT_EQ(zero.ratio, 0.0);
  EXPECT_TRUE(zero.converged);
  EXPECT_LT(max_dev_from_identity(zero.W), 1e-12);
}

TEST(TraceRatio, RejectsAnIndefiniteSw) {
  Scatter S = gaussian_classes(6, 3, 10, 701);
  Scatter bad = S;
  for (int64_t k = 0; k < 6; ++k) bad.Sw(k, k) -= 1e3;  // strongly indefinite
  EXPECT_THROW(solve(bad, 2), Error);
  Scatter singular = S;
  std::fill(singular.Sw.v.begin(), singular.Sw.v.end(), 0.0);  // PSD but singular
  EXPECT_THROW(solve(singular, 2), Error);
  EXPECT_THROW(solve(S, 0), Error);
  EXPECT_THROW(solve(S, 7), Error);
  TraceRatioOptions o;
  o.dim = 1;
  EXPECT_THROW(trace_ratio(S.Sb, Dense(6, 5), o, MPI_COMM_WORLD), Error);
  EXPECT_THROW(trace_ratio(Dense(6, 5), Dense(6, 5), o, MPI_COMM_WORLD), Error);
  EXPECT_NO_THROW(solve(S, 2));
}

// Timing of a 784-dimensional problem (10 classes), not part of the suite:
//   ssdr_tests --gtest_also_run_disabled_tests --gtest_filter='TraceRatio.DISABLED_*'
TEST(TraceRatio, DISABLED_TimesA784DimensionalProblem) {
  const Scatter S = gaussian_classes(784, 10, 100, 901);
  for (int64_t m : {int64_t{9}, int64_t{30}}) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    const TraceRatioResult r = solve(S, m);
    const double t1 = MPI_Wtime();
    if (test::rank() == 0) {
      std::printf("d=784 m=%d ranks=%d: %.3f s, %d iterations, converged=%d, history:",
                  static_cast<int>(m), test::size(), t1 - t0, r.iterations, r.converged ? 1 : 0);
      for (double h : r.history) std::printf(" %.15g", h);
      std::printf("\n");
    }
  }
}
