// SOGE (soge-liu2017) against the paper's formulas, formed densely with LAPACK (n ≤ 200):
// Q = (L + U + αH_c)⁻¹, A and B of eq. (11)–(12), Algorithm 1 for eq. (13), the recursive
// projections (7)–(8), and the same result for any rank count.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "methods/impls/soge_internal.hpp"
#include "reference.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/methods/method.hpp"
#include "support.hpp"

using namespace ssdr;
namespace sg = ssdr::methods::soge;

namespace {

constexpr double kMu = 100.0;

using test::local_part;
using test::max_abs;
using test::mul;

/// The data as SOGE receives it: centered and scaled by one factor to unit mean ‖x‖².
struct Problem {
  Dense X;  // n×d replicated
  std::vector<int> labels, semi;
  int classes = 0;
};

Problem load(const std::string& name, int p, bool standardize = false) {
  Problem pr;
  test::load_csv_replicated(name, pr.X, pr.labels);
  pr.classes = *std::max_element(pr.labels.begin(), pr.labels.end()) + 1;
  const int64_t n = pr.X.rows, d = pr.X.cols;
  double ss = 0;
  for (int64_t j = 0; j < d; ++j) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; ++i) m += pr.X(i, j) / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) v += (pr.X(i, j) - m) * (pr.X(i, j) - m) / static_cast<double>(n);
    const double f = standardize && v > 0 ? 1.0 / std::sqrt(v) : 1.0;
    for (int64_t i = 0; i < n; ++i) {
      pr.X(i, j) = (pr.X(i, j) - m) * f;
      ss += pr.X(i, j) * pr.X(i, j);
    }
  }
  const double f = 1.0 / std::sqrt(ss / static_cast<double>(n));
  for (double& v : pr.X.v) v *= f;
  pr.semi = test::first_p_labeled(pr.labels, pr.classes, p);
  return pr;
}

/// The dense objects of §4.1 for one α: graph S (`graph`, or the default kNN heat graph
/// that the stage tests build with GraphOptions{}), L + U, H_c, Q = (L + U + αH_c)⁻¹ by a
/// dense SPD solve, X_c (d×n in the paper; here n×d rows).
struct DenseModel {
  Dense LU, Hc, Q, Xc, Y;  // Xc n×d, Y n×c one-hot labeled rows
};

DenseModel dense_model(const Problem& pr, double alpha, const Dense* graph = nullptr) {
  const int64_t n = pr.X.rows;
  DenseModel m;
  const Dense S = graph ? *graph : ref::knn_heat_graph(pr.X, 8, 1e-3 / 8);
  m.LU = Dense(n, n);
  m.Hc = Dense(n, n);
  m.Y = Dense(n, pr.classes);
  for (int64_t i = 0; i < n; ++i) {
    double deg = 0;
    for (int64_t j = 0; j < n; ++j) {
      deg += S(i, j);
      m.LU(i, j) = -S(i, j);
      m.Hc(i, j) = (i == j ? 1.0 : 0.0) - 1.0 / static_cast<double>(n);
    }
    const int k = pr.semi[static_cast<size_t>(i)];
    m.LU(i, i) += deg + (k >= 0 ? kMu : 0.0);
    if (k >= 0) m.Y(i, k) = 1.0;
  }
  Dense M = m.LU;
  for (size_t t = 0; t < M.v.size(); ++t) M.v[t] += alpha * m.Hc.v[t];
  m.Q = Dense::identity(n);
  lapack::posv(n, n, M.data(), n, m.Q.data(), n);
  m.Xc = mul(m.Hc, pr.X);
  return m;
}

/// A = α² X_c(I/α − Q)X_cᵀ, eq. (11), literally.
Dense dense_A_eq11(const DenseModel& m, double alpha) {
  Dense T = m.Q;
  for (auto& v : T.v) v = -alpha * alpha * v;
  for (int64_t i = 0; i < T.rows; ++i) T(i, i) += alpha;
  return mul(m.Xc, mul(T, m.Xc), 'T', 'N');
}

/// A = α X_c Q (L+U) X_cᵀ, the rewrite (R2).
Dense dense_A_rewrite(const DenseModel& m, double alpha) {
  Dense A = mul(m.Xc, mul(m.Q, mul(m.LU, m.Xc)), 'T', 'N');
  for (auto& v : A.v) v *= alpha;
  return A;
}

/// B = α X_c Q U Y, eq. (12).
Dense dense_B(const DenseModel& m, double alpha, const std::vector<int>& semi) {
  Dense UY = m.Y;
  for (int64_t i = 0; i < UY.rows; ++i)
    for (int64_t k = 0; k < UY.cols; ++k) UY(i, k) *= semi[static_cast<size_t>(i)] >= 0 ? kMu : 0.0;
  Dense B = mul(m.Xc, mul(m.Q, UY), 'T', 'N');
  for (auto& v : B.v) v *= alpha;
  return B;
}

/// Algorithm 1 written straight from the paper: λ_max by dsyev, W⁰ the polar factor of B,
/// D = (λI − A)W + B, W = ΛVᵀ from the SVD of D, until W stops moving (‖ΔW‖ ≤ 1e-13).
Dense dense_algorithm1(const Dense& A, const Dense& B, int* iterations, std::vector<double>* history = nullptr) {
  const int64_t d = A.rows, c = B.cols;
  Dense E = A;
  std::vector<double> ev(static_cast<size_t>(d));
  lapack::syev(d, E.data(), d, ev.data());
  const double lambda = ev.back();
  auto polar = [&](Dense D) {
    Dense U(d, c), Vt(c, c);
    std::vector<double> s(static_cast<size_t>(c));
    lapack::gesvd(d, c, D.data(), d, s.data(), U.data(), d, Vt.data(), c);
    return mul(U, Vt);
  };
  // The start of soge.cpp: polar factor of B with its null columns (B1_c = 0) taken as the
  // bottom eigenvectors of A in the complement (rounding would decide them otherwise).
  Dense Ua(d, c), Vt(c, c);
  {
    Dense a = B;
    std::vector<double> s(static_cast<size_t>(c));
    lapack::gesvd(d, c, a.data(), d, s.data(), Ua.data(), d, Vt.data(), c);
    Dense Ur(d, c - 1);
    std::copy(Ua.v.begin(), Ua.v.begin() + (c - 1) * d, Ur.v.begin());
    Dense P = Dense::identity(d);
    const Dense UUt = mul(Ur, Ur, 'N', 'T');
    for (size_t t = 0; t < P.v.size(); ++t) P.v[t] -= UUt.v[t];
    Dense M = mul(P, mul(A, P));
    for (size_t t = 0; t < M.v.size(); ++t) M.v[t] += 1e6 * UUt.v[t];
    std::vector<double> e(static_cast<size_t>(d));
    lapack::syev(d, M.data(), d, e.data());
    std::copy(M.v.begin(), M.v.begin() + d, Ua.v.begin() + (c - 1) * d);
  }
  Dense W = mul(Ua, Vt);
  for (int it = 0; it < 200000; ++it) {
    Dense D = mul(A, W);
    for (size_t t = 0; t < D.v.size(); ++t) D.v[t] = lambda * W.v[t] - D.v[t] + B.v[t];
    Dense Wn = polar(D);
    const double step = test::max_abs_diff(Wn, W);
    W = std::move(Wn);
    if (history) history->push_back(sg::objective13(A, B, lambda, W));
    *iterations = it + 1;
    if (step <= 1e-13) break;
  }
  return W;
}

solvers::SparseSolveOptions tight() {
  solvers::SparseSolveOptions so;
  so.prefix = "soge_test_";
  so.rtol = 1e-13;
  return so;
}

}  // namespace

TEST(SogeRewrites, CenteredQEqualsHcTimesTheDenseInverse) {
  // (R1): H_c Q r = K₀⁻¹r − w(1ᵀK₀⁻¹r)/(1ᵀw), K₀ = L + U + αI, w = K₀⁻¹U1.
  Problem pr = load("wine.csv", 3);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  std::mt19937_64 rng(3);
  std::normal_distribution<double> N(0.0, 1.0);
  Dense R(pr.X.rows, 4);
  for (double& v : R.v) v = N(rng);
  // Both routes (-soge_test_route): K₀ factored densely on every rank, and the CG solves.
  for (const char* route : {"dense", "krylov"}) {
    test::ScopedOption o("-soge_test_route", route);
    for (double alpha : {1e-3, 1.0, 1e3}) {
      DenseModel m = dense_model(pr, alpha);
      const Dense expected = mul(m.Hc, mul(m.Q, R));
      std::vector<int> its;
      bool dense = false;
      DistMatrix Z = sg::centered_q(g.A, sg::label_weights(local_part(pr.semi, X), kMu), alpha,
                                    ref::distribute(R, MPI_COMM_WORLD), tight(), &its, &dense);
      EXPECT_EQ(its.size(), 5u);
      EXPECT_EQ(dense, std::string(route) == "dense");
      EXPECT_LT(test::max_abs_diff(allgather(Z), expected), 1e-9 * max_abs(expected))
          << route << ", alpha " << alpha;
    }
  }
}

TEST(SogeRewrites, OperatorsEqualTheDenseFormulasOfEq11And12) {
  Problem pr = load("wine.csv", 3);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  for (double alpha : {1e-3, 1.0, 1e2, 1e6}) {
    DenseModel m = dense_model(pr, alpha);
    auto op = sg::operators(sg::center(X), g.A, local_part(pr.semi, X), pr.classes, alpha, kMu, tight());
    EXPECT_EQ(op.iterations.size(), static_cast<size_t>(pr.X.cols + pr.classes + 1));
    const Dense A2 = dense_A_rewrite(m, alpha), B = dense_B(m, alpha, pr.semi);
    EXPECT_LT(test::max_abs_diff(op.A, A2), 1e-9 * max_abs(A2)) << "alpha " << alpha;
    EXPECT_LT(test::max_abs_diff(op.B, B), 1e-9 * max_abs(B)) << "alpha " << alpha;
    if (alpha <= 1e2) {
      // The paper's eq. (11) itself, where cancellation is still mild (it loses ~α·‖Q‖ digits).
      const Dense A1 = dense_A_eq11(m, alpha);
      EXPECT_LT(test::max_abs_diff(op.A, A1), 1e-7 * max_abs(A1)) << "alpha " << alpha;
    }
    // A is symmetric positive semi-definite (I/α − Q ⪰ 0 on 1^⊥).
    Dense E = op.A;
    std::vector<double> ev(static_cast<size_t>(E.rows));
    lapack::syev(E.rows, E.data(), E.rows, ev.data());
    EXPECT_GT(ev.front(), -1e-10 * ev.back()) << "alpha " << alpha;
  }
}

namespace {

/// 600 digits (n ≤ the size a test affords at 4 ranks on 2 cores), d = 64, c = 10, p = 2,
/// after PCA keeping 95 % of the energy as SOGE's preprocessing does.
Problem digits_600() {
  Problem pr = load("digits.csv", 2);
  Problem sub;
  sub.classes = pr.classes;
  sub.X = Dense(600, pr.X.cols);
  for (int64_t i = 0; i < 600; ++i)
    for (int64_t j = 0; j < pr.X.cols; ++j) sub.X(i, j) = pr.X(i, j);
  sub.semi.assign(pr.semi.begin(), pr.semi.begin() + 600);
  // PCA keeping 95 % of the energy as SOGE's preprocessing does (always-blank pixels make A
  // singular and the maximizer of (13) a continuum; the low-energy directions make it flat).
  {
    Dense C = mul(sub.X, sub.X, 'T', 'N');
    std::vector<double> ev(static_cast<size_t>(C.rows));
    lapack::syev(C.rows, C.data(), C.rows, ev.data());
    int64_t drop = 0;
    const double total = std::accumulate(ev.begin(), ev.end(), 0.0);
    double dropped = 0;
    while (dropped + ev[static_cast<size_t>(drop)] <= 0.05 * total) dropped += ev[static_cast<size_t>(drop++)];
    Dense V(C.rows, C.rows - drop);
    std::copy(C.v.begin() + drop * C.rows, C.v.end(), V.v.begin());
    sub.X = mul(sub.X, V);
  }
  return sub;
}

}  // namespace

TEST(SogeAlgorithm1, ObjectiveOfEq13NeverDecreases) {
  const Problem sub = digits_600();
  DistMatrix X = ref::distribute(sub.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  auto op = sg::operators(sg::center(X), g.A, local_part(sub.semi, X), sub.classes, 1.0, kMu,
                          solvers::SparseSolveOptions{"soge_test_"});
  // B1_c = 0: QU1 = 1 because Q⁻¹1 = (L + U + αH_c)1 = U1, and X_c1 = 0 (from eq. (9)).
  for (int64_t i = 0; i < op.B.rows; ++i) {
    double row = 0;
    for (int64_t k = 0; k < op.B.cols; ++k) row += op.B(i, k);
    EXPECT_LT(std::abs(row), 1e-9 * max_abs(op.B));
  }
  double plain_final = 0, plain_stationarity = 0;
  for (bool accelerate : {false, true}) {
    // Plain Algorithm 1 (the paper's), then with the extrapolation and Newton candidates.
    sg::StiefelOptions so;
    so.extrapolate = so.newton = accelerate;
    so.max_iterations = accelerate ? 2000 : 1500;
    auto r = sg::maximize_on_stiefel(op.A, op.B, so, MPI_COMM_WORLD);
    ASSERT_GE(r.objective.size(), 3u);
    const double scale = std::abs(r.objective.back());
    for (size_t t = 1; t < r.objective.size(); ++t)
      ASSERT_GE(r.objective[t], r.objective[t - 1] - 1e-13 * scale) << "iteration " << t;
    EXPECT_GT(r.objective.back(), r.objective.front() + 1e-6 * scale);
    if (!accelerate) {
      plain_final = r.objective.back();
      plain_stationarity = r.stationarity;
      EXPECT_EQ(r.extrapolated + r.newton_steps, 0);
    } else {
      // The accelerated iteration converges, at least as far as the plain one on (13).
      EXPECT_TRUE(r.converged);
      EXPECT_LT(r.stationarity, 1e-6);
      EXPECT_GE(r.objective.back(), plain_final - 1e-12 * scale);
      EXPECT_GT(r.extrapolated + r.newton_steps, 0);
      printf("[ soge ] plain: J %.12g stationarity %.3g; accelerated: J %.12g stationarity %.3g, %d iterations (%d extrapolated, %d Newton)\n",
             plain_final, plain_stationarity, r.objective.back(), r.stationarity, r.iterations, r.extrapolated, r.newton_steps);
    }
    EXPECT_LT(test::max_abs_diff(mul(r.W, r.W, 'T', 'N'), Dense::identity(r.W.cols)), 1e-12);
    // No orthonormal W from random starts does better than the returned one.
    std::mt19937_64 rng(5);
    std::normal_distribution<double> N(0.0, 1.0);
    for (int trial = 0; trial < 20; ++trial) {
      Dense V(r.W.rows, r.W.cols);
      for (double& v : V.v) v = N(rng);
      lapack::orthonormalize(V.rows, V.cols, V.data(), V.rows);
      EXPECT_LT(sg::objective13(op.A, op.B, r.lambda_max, V), r.objective.back());
    }
  }
}

TEST(SogeAlgorithm1, TrustRegionsReachTheMaximizerInFewIterationsAtEveryAlphaOfThePapersGrid) {
  // Algorithm 1 contracts by about 1 − gap/λ_max(A) per iteration, and λ_max(A) grows with α
  // while the spectrum that decides W does not: on COIL-20 it needed thousands of iterations
  // at α ≥ 10³, most in the deflated recursions. The trust-region iteration must converge in
  // a number of iterations that does not grow with α, to a point no worse than many plain
  // iterations reach, in every recursion.
  const Problem sub = digits_600();
  DistMatrix X = ref::distribute(sub.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  for (double alpha : {1e-3, 1e3, 1e6, 1e9}) {
    auto op = sg::operators(sg::center(X), g.A, local_part(sub.semi, X), sub.classes, alpha, kMu,
                            solvers::SparseSolveOptions{"soge_test_"});
    sg::StiefelOptions fast;  // the defaults: trust regions
    sg::StiefelOptions plain;
    plain.newton = plain.extrapolate = false;
    plain.max_iterations = 3000;
    const sg::Recursion a = sg::recursive_projections(op.A, op.B, 2, fast, MPI_COMM_WORLD);  // K·c ≤ d' = 27
    for (size_t k = 0; k < a.results.size(); ++k) {
      const sg::StiefelResult& r = a.results[k];
      SCOPED_TRACE("alpha " + std::to_string(alpha) + ", recursion " + std::to_string(k + 1));
      EXPECT_TRUE(r.converged);
      // The KKT residual: ‖D − W sym(WᵀD)‖/‖D‖ (stationarity) at the returned W; rounding in
      // D = (λI − A)W + B is ~u·λ_max·‖W‖/‖D‖, below 1e-9 for every α here.
      EXPECT_LT(r.stationarity, 1e-9);
      EXPECT_LE(r.iterations, 300);
      EXPECT_LT(test::max_abs_diff(mul(r.W, r.W, 'T', 'N'), Dense::identity(r.W.cols)), 1e-12);
    }
    // The first recursion against 3000 plain iterations from the same start: (13) at least as
    // high, to its rounding (u·c·λ_max relative).
    const sg::StiefelResult p = sg::maximize_on_stiefel(op.A, op.B, plain, MPI_COMM_WORLD);
    const double scale = std::abs(p.objective.back()) + a.results[0].lambda_max;
    EXPECT_GE(a.results[0].objective.back(), p.objective.back() - 1e-12 * scale) << "alpha " << alpha;
  }
}

TEST(SogeAlgorithm1, TrustRegionsConvergeAtAnyScaleOfAAndBAndWhereTheMaximizerIsNotIsolated) {
  // d = 12, c = 4; A = s·U diag(0, 0, 0, 10⁻²…1) Uᵀ has a triple zero eigenvalue (constant
  // features without PCA give such an A), B = s·Z(I − 11ᵀ/c) with Z's part in A's null space
  // removed, so B1_c = 0 as SOGE's B and the maximizer is not isolated. The scale s stands for
  // α (λ_max(A) grows with it). The trust regions must converge in a few iterations at every
  // scale, to a point that plain Algorithm 1 started there cannot raise.
  const int64_t d = 12, c = 4;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> N(0.0, 1.0);
  Dense U(d, d);
  for (double& v : U.v) v = N(rng);
  lapack::orthonormalize(d, d, U.data(), d);
  Dense Z(d, c);
  for (double& v : Z.v) v = N(rng);
  for (int64_t k = 0; k < c; ++k) {  // Z's components along the null space U(:, 0..2) removed
    for (int64_t j = 0; j < 3; ++j) {
      double proj = 0;
      for (int64_t i = 0; i < d; ++i) proj += U(i, j) * Z(i, k);
      for (int64_t i = 0; i < d; ++i) Z(i, k) -= proj * U(i, j);
    }
  }
  Dense center = Dense::identity(c);
  for (double& v : center.v) v -= 1.0 / static_cast<double>(c);
  for (double s : {1e-9, 1.0, 1e9}) {
    SCOPED_TRACE("scale " + std::to_string(s));
    Dense L(d, d);
    for (int64_t i = 3; i < d; ++i) L(i, i) = s * std::pow(10.0, -2.0 + 2.0 * static_cast<double>(i - 3) / 8.0);
    const Dense A = mul(U, mul(L, U, 'N', 'T'));
    Dense B = mul(Z, center);
    for (double& v : B.v) v *= s;
    const sg::StiefelResult r = sg::maximize_on_stiefel(A, B, sg::StiefelOptions{}, MPI_COMM_WORLD);
    EXPECT_TRUE(r.converged);
    // The solver's contract: stationarity ≤ tol (10⁻¹²), or, where steps are below the
    // rounding of f and of the gradient, ≤ stagnation_tol (10⁻⁹). Where that floor lies
    // depends on the BLAS kernel's rounding along the flat directions (10⁻¹⁴ with one
    // OpenBLAS kernel, 5·10⁻¹¹ with another), so the contract is what is asserted.
    EXPECT_LE(r.stationarity, sg::StiefelOptions{}.stagnation_tol);
    EXPECT_LE(r.iterations, 30);
    sg::StiefelOptions plain;
    plain.newton = plain.extrapolate = false;
    plain.tol = 1e-14;
    plain.max_iterations = 20000;
    // Plain Algorithm 1 from the returned W (as its start: B replaced by nothing else, so run
    // it on the same A, B and compare the optimum it reaches from its own start as well).
    const sg::StiefelResult p = sg::maximize_on_stiefel(A, B, plain, MPI_COMM_WORLD);
    const double J = r.objective.back(), Jp = p.objective.back();
    EXPECT_GE(J, Jp - 1e-12 * (std::abs(Jp) + s * static_cast<double>(c)));
  }
}

TEST(SogeReference, AgreesWithTheSerialDenseReferenceOnABAndW) {
  // On CLR's closed-form adaptive-neighbours graph (--weight adaptive; k = 5, the method
  // table's), against the brute-force (S + Sᵀ)/2 of ref::adaptive_graph: the operators and
  // Algorithm 1 are checked on a graph with an exact dense reference (the CLR refinement has
  // its own tests in knn_test.cpp).
  graph::GraphOptions go = methods::method_graph(methods::find_method("soge"), methods::MethodOptions{});
  ASSERT_EQ(go.weight, graph::EdgeWeight::clr);
  go.weight = graph::EdgeWeight::adaptive;
  for (const char* name : {"iris.csv", "wine.csv"}) {
    Problem pr = load(name, 2, /*standardize=*/true);
    const double alpha = 1.0;
    DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    auto g = graph::build_knn_graph(X, go);
    const Dense S = ref::adaptive_graph(pr.X, go.k);
    auto op = sg::operators(sg::center(X), g.A, local_part(pr.semi, X), pr.classes, alpha, kMu, tight());
    // Accelerated Algorithm 1 from the same deterministic start as the reference's plain one.
    sg::StiefelOptions so;
    so.tol = 1e-15;
    so.max_iterations = 100000;
    so.extrapolate = so.newton = true;
    auto rec = sg::recursive_projections(op.A, op.B, 1, so, MPI_COMM_WORLD);

    DenseModel m = dense_model(pr, alpha, &S);
    const Dense A = dense_A_eq11(m, alpha), B = dense_B(m, alpha, pr.semi);
    EXPECT_LT(test::max_abs_diff(op.A, A), 1e-8 * max_abs(A)) << name;
    EXPECT_LT(test::max_abs_diff(op.B, B), 1e-8 * max_abs(B)) << name;
    int its = 0;
    const Dense W = dense_algorithm1(A, B, &its);
    ASSERT_LT(its, 200000) << name << ": the reference Algorithm 1 did not converge";
    const double lambda = rec.results[0].lambda_max;
    EXPECT_NEAR(sg::objective13(A, B, lambda, rec.W), sg::objective13(A, B, lambda, W), 1e-10 * std::abs(sg::objective13(A, B, lambda, W))) << name;
    // W is unique only up to W ↦ W(I − 2·11ᵀ/c) (B1_c = 0 makes that reflection leave (13)
    // unchanged), and so is the embedding up to that rotation: compare the projectors.
    EXPECT_LT(test::max_abs_diff(ref::projector(rec.W), ref::projector(W)), 1e-6) << name;
  }
}

TEST(SogeRecursion, BlocksAreOrthonormalAndDeflatedDataIsOrthogonalToEarlierBlocks) {
  Problem pr = load("wine.csv", 3);
  const int K = 3, c = pr.classes;
  const int64_t d = pr.X.cols, n = pr.X.rows;
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  const auto labels = local_part(pr.semi, X);
  DistMatrix Xc = sg::center(X);
  auto op = sg::operators(Xc, g.A, labels, c, 1.0, kMu, tight());
  auto rec = sg::recursive_projections(op.A, op.B, K, sg::StiefelOptions{}, MPI_COMM_WORLD);
  ASSERT_EQ(rec.W.cols, K * c);
  // W* has orthonormal columns: within each block and across blocks.
  EXPECT_LT(test::max_abs_diff(mul(rec.W, rec.W, 'T', 'N'), Dense::identity(K * c)), 1e-12);
  // The first block is the K = 1 solution.
  auto one = sg::recursive_projections(op.A, op.B, 1, sg::StiefelOptions{}, MPI_COMM_WORLD);
  EXPECT_LT(test::max_abs_diff(one.W, rec.blocks[0]), 1e-12);
  // Explicit deflation, eq. (7): X̃_{k+1} = (I − W_kW_kᵀ)X̃_k (rows here: X̃ ← X̃ − X̃W_kW_kᵀ).
  Dense Xt = allgather(Xc);
  for (int k = 0; k < K; ++k) {
    const Dense& Wk = rec.blocks[static_cast<size_t>(k)];
    for (int j = 0; j < k; ++j) {  // deflated data ⟂ every earlier block
      const Dense proj = mul(Xt, rec.blocks[static_cast<size_t>(j)]);
      EXPECT_LT(max_abs(proj), 1e-12 * max_abs(Xt)) << "k " << k << " j " << j;
    }
    // The returned W* maps the original data to the block learned on the deflated data.
    Dense Wstar_k(d, c);
    std::copy(rec.W.v.begin() + k * c * d, rec.W.v.begin() + (k + 1) * c * d, Wstar_k.v.begin());
    EXPECT_LT(test::max_abs_diff(mul(Xt, Wk), mul(allgather(Xc), Wstar_k)), 1e-12) << "k " << k;
    // The operators rebuilt from the deflated data by new sparse solves are P A P and P B:
    // block k maximizes (13) for X̃_k.
    if (k > 0) {
      auto opk = sg::operators(ref::distribute(Xt, MPI_COMM_WORLD), g.A, labels, c, 1.0, kMu, tight());
      Dense P = Dense::identity(d);
      for (int j = 0; j < k; ++j) {
        const Dense& Wj = rec.blocks[static_cast<size_t>(j)];
        const Dense WWt = mul(Wj, Wj, 'N', 'T');
        for (size_t t = 0; t < P.v.size(); ++t) P.v[t] -= WWt.v[t];
      }
      const Dense PAP = mul(P, mul(op.A, P)), PB = mul(P, op.B);
      EXPECT_LT(test::max_abs_diff(opk.A, PAP), 1e-9 * max_abs(op.A)) << "k " << k;
      EXPECT_LT(test::max_abs_diff(opk.B, PB), 1e-9 * max_abs(op.B)) << "k " << k;
      // And no orthonormal d×c block inside range(P) scores higher on (13) there.
      const double lam = rec.results[static_cast<size_t>(k)].lambda_max;
      const double best = sg::objective13(PAP, PB, lam, Wk);
      std::mt19937_64 rng(9);
      std::normal_distribution<double> N(0.0, 1.0);
      for (int trial = 0; trial < 10; ++trial) {
        Dense V(d, c);
        for (double& v : V.v) v = N(rng);
        V = mul(P, V);
        lapack::orthonormalize(d, c, V.data(), d);
        EXPECT_LT(sg::objective13(PAP, PB, lam, V), best);
      }
    }
    const Dense XW = mul(Xt, Wk);
    const Dense XWWt = mul(XW, Wk, 'N', 'T');
    for (size_t t = 0; t < Xt.v.size(); ++t) Xt.v[t] -= XWWt.v[t];
  }
  (void)n;
}

TEST(Soge, GivesTheSameEmbeddingAndAccuracyOnOneRankAsOnAllRanks) {
  // The whole pipeline (SOGE's preprocessing, graph, solves, Algorithm 1, two recursions,
  // 1-NN) on rank 0 alone (MPI_COMM_SELF) against every rank of MPI_COMM_WORLD.
  driver::FitConfig cfg;
  cfg.method = "soge";
  cfg.preprocess = methods::find_method("soge").preprocess;
  cfg.preprocess.pca_energy = -1;  // iris keeps d' = 4 ≥ c (95 % energy would leave 2 < c)
  const data::SplitSpec spec = test::transductive_split(3, 0.6, 4);
  const test::SerialAndDistributed r = test::fit_serial_and_distributed("iris.csv", spec, cfg);
  const driver::FitOutcome& dist = r.dist;
  EXPECT_EQ(dist.dim, r.classes);
  EXPECT_EQ(dist.info["recursions"], 1);
  EXPECT_EQ(dist.info["alpha"], 1.0);
  EXPECT_EQ(dist.info["mu"], 100.0);
  // The paper's graph by default (soge-liu2017 §5.2, CLR with c = 3 components), recorded.
  EXPECT_EQ(dist.info["graph"]["weight"], "clr");
  EXPECT_EQ(dist.info["graph"]["components"], 3);
  EXPECT_EQ(dist.info["graph"]["clr_converged"], true);
  EXPECT_EQ(dist.info["graph"]["k"], 5);
  EXPECT_EQ(dist.info["graph"]["edges"], r.serial_info["graph"]["edges"]);
  // Rows of S sum to 1, so Σ A_ij / n = 1 within (2k + 1 + 2nk)ε ≈ 2e-13 (n = 90, k = 5; the
  // bound of AdaptiveGraph.WeightsMatchTheClosedFormAndRowsSumToOne).
  EXPECT_NEAR(dist.info["graph"]["mean_degree"].get<double>(), 1.0, (2 * 5 + 1 + 2 * 90 * 5) * 2.3e-16);
  EXPECT_EQ(dist.accuracy.unlabeled, r.serial_accuracy.unlabeled);
  EXPECT_EQ(dist.accuracy.unseen, r.serial_accuracy.unseen);
  // The embeddings agree up to an orthogonal map (W ↦ W(I − 2·11ᵀ/c) leaves (13) unchanged):
  // compare the Gram matrices Y Yᵀ.
  const Dense Gd = mul(r.Y_dist, r.Y_dist, 'N', 'T'), Gs = mul(r.Y_serial, r.Y_serial, 'N', 'T');
  // The preprocessing and graph have the same bits on any rank count; the CG solves stop
  // at rtol 1e-12 (condition of L + U + αI on iris ≲ 10³ → ≤ 1e-9 relative on A and B) and
  // Algorithm 1 at relative stationarity 1e-12, so W moves by ≲ 1e-9/gap with gaps ≥ 1e-2:
  // 1e-7 relative on the Gram matrix (see tests/mpi/rank_invariance_test.cpp).
  EXPECT_LT(test::max_abs_diff(Gd, Gs), 1e-7 * max_abs(Gs));
  EXPECT_GT(dist.accuracy.unlabeled, 0.6);  // SOGE on iris with 3 labels per class: 0.69 (adaptive graph)
}

TEST(SogeRewrites, OneLanczosRecurrenceGivesTheOperatorsOfEq11And12AtEveryAlpha) {
  // The sweep's route: one block Lanczos recurrence from [X_c, UY] on L + U serves every α
  // (grown for the hardest), with one CG solve for K₀⁻¹1. Its forms are within 10⁻¹³ of
  // their norm (the quadrature's bound) and the CG meets tight()'s tolerance, so A and B
  // agree with the dense formulas within OperatorsEqualTheDenseFormulasOfEq11And12's 10⁻⁹.
  Problem pr = digits_600();
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  const std::vector<int> labels = local_part(pr.semi, X);
  auto lz = sg::operators_lanczos_start(sg::center(X), g.A, labels, pr.classes, kMu);
  std::vector<int> grown;
  for (double alpha : {1.0, 1e-3, 1e2, 1e6, 1.0}) {
    DenseModel m = dense_model(pr, alpha);
    int steps = 0, new_steps = 0;
    auto op = sg::operators_lanczos(*lz, sg::center(X), g.A, labels, pr.classes, alpha, kMu, tight(), &steps, &new_steps);
    ASSERT_TRUE(op.has_value()) << "alpha " << alpha << ": " << lz->why();
    grown.push_back(new_steps);
    EXPECT_EQ(op->iterations.size(), 1u);  // the one solve K₀⁻¹1
    const Dense A2 = dense_A_rewrite(m, alpha), B = dense_B(m, alpha, pr.semi);
    EXPECT_LT(test::max_abs_diff(op->A, A2), 1e-9 * max_abs(A2)) << "alpha " << alpha;
    EXPECT_LT(test::max_abs_diff(op->B, B), 1e-9 * max_abs(B)) << "alpha " << alpha;
    EXPECT_GE(steps, 1);
  }
  // α = 1 starts the recurrence, 10⁻³ (the hardest) grows it; the others read it.
  EXPECT_GT(grown[0], 0);
  EXPECT_GT(grown[1], 0);
  EXPECT_EQ(grown[2] + grown[3] + grown[4], 0);
}

