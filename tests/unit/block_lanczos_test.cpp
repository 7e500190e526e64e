// solvers::BlockLanczos: block Gauss quadrature of Yᵀ(σI + τH)⁻¹Y and Yᵀ(σI + τH)⁻¹τHY on a
// kNN graph's Laplacian, against dense references (the graph gathered, LAPACK's dposv).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "methods/dense_route.hpp"
#include "methods/impls/tca_internal.hpp"
#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "ssdr/solvers/block_lanczos.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

using solvers::BlockLanczos;
using solvers::QuadratureForm;

/// The graph's Laplacian H = D − A (n×n, every rank) and its largest degree.
Dense dense_laplacian(Mat A, const DistMatrix& like, double* dmax) {
  Dense L = methods::dense::gather_graph(A, like, "test");
  const std::vector<double> D = methods::dense::column_sums(L);
  *dmax = *std::max_element(D.begin(), D.end());
  for (double& v : L.v) v = -v;
  for (int64_t i = 0; i < L.rows; ++i) L(i, i) += D[static_cast<size_t>(i)];
  return L;
}

/// Yᵀ(σI + τH)⁻¹Y and Yᵀ(σI + τH)⁻¹τHY by one dposv on the dense H (2r right-hand sides).
struct DenseForms {
  Dense resolvent, smoothed;
  const Dense& operator[](QuadratureForm which) const {
    return which == QuadratureForm::resolvent ? resolvent : smoothed;
  }
};
DenseForms dense_forms(const Dense& H, const Dense& Y, double sigma, double tau) {
  const int64_t n = H.rows, r = Y.cols;
  Dense M(n, n);
  for (size_t i = 0; i < M.v.size(); ++i) M.v[i] = tau * H.v[i];
  for (int64_t i = 0; i < n; ++i) M(i, i) += sigma;
  const Dense HY = test::mul(H, Y);
  Dense R(n, 2 * r);  // [Y, τHY]
  for (int64_t j = 0; j < r; ++j)
    for (int64_t i = 0; i < n; ++i) {
      R(i, j) = Y(i, j);
      R(i, r + j) = tau * HY(i, j);
    }
  lapack::posv(n, 2 * r, M.data(), n, R.data(), n);
  const Dense YZ = test::mul(Y, R, 'T', 'N');  // r×2r
  DenseForms out{Dense(r, r), Dense(r, r)};
  for (int64_t j = 0; j < r; ++j)
    for (int64_t i = 0; i < r; ++i) {
      out.resolvent(i, j) = 0.5 * (YZ(i, j) + YZ(j, i));
      out.smoothed(i, j) = 0.5 * (YZ(i, r + j) + YZ(j, r + i));
    }
  return out;
}

double frobenius(const Dense& A) {
  double s = 0;
  for (double v : A.v) s += v * v;
  return std::sqrt(s);
}

/// The digits' r leading principal components (replicated, and distributed) on the graph `go`.
struct Block {
  Dense Y;
  DistMatrix Yd;
  graph::Graph g;
};
/// TCA's graph (tca-liu2008 eq. (4)): k = 5, heat weights with t the mean squared edge length.
using methods::tca::tca_graph;

Block digits_block(int64_t r, const graph::GraphOptions& go = tca_graph()) {
  const test::Problem pr = test::load_problem("digits.csv", 5, true);
  Block b;
  b.g = graph::build_knn_graph(ref::distribute(pr.X, MPI_COMM_WORLD), go);
  // The r leading principal components of the centered rows (TCA's Y = XP, Step 4).
  const DistMatrix Xd = ref::distribute(pr.X, MPI_COMM_WORLD);
  const Dense P = methods::tca::pca_basis(Xd, r);
  b.Y = test::mul(pr.X, P);
  b.Yd = ref::distribute(b.Y, MPI_COMM_WORLD);
  return b;
}

}  // namespace

TEST(BlockLanczos, GivesTheDenseResolventAndSmoothedFormsAtEveryShift) {
  // Digits: n = 1797, a block of r = 12 columns, on TCA's graph and on SODA's default one
  // (k = 8, s = 10⁻³/k: weights so narrow that H is tiny and W's columns differ by orders of
  // magnitude, which takes the shifted Cholesky QR). Shifts from TCA's σ = 1 with
  // α = 10⁻³ … 10³ to a small σ (the resolvent's hard case).
  //
  // Error analysis, in ‖·‖_F relative to s = ‖Y‖_F²/σ (the largest a form can be: both
  // resolvents are at most 1/σ on H's spectrum, the smoothed one at most 1):
  //  - the stopping rule leaves at most rtol·‖F‖ ≤ rtol·s (the quadrature's bound, file
  //    comment of block_lanczos.hpp);
  //  - the dense reference: dposv is backward stable, ‖ΔZ‖ ≤ c·n·ε·κ·‖Z‖ with
  //    κ = (σ + τλ_max)/σ ≤ 1 + 2τD_max/σ (Gershgorin), and YᵀZ adds n·ε;
  //  - the recurrence in floating point is the exact recurrence of a matrix within
  //    k·ε·‖H‖ of H (Paige; its block form, Golub–Meurant ch. 7), so its quadrature is off by
  //    at most that perturbation times ‖(σI + τH)⁻¹‖² τ‖Y‖² ≤ k·ε·κ·s, k ≤ 2n/r + 20.
  // Together (rtol + (2n + k + n)·ε·κ)·s, doubled for the constants.
  for (const graph::GraphOptions& go : {tca_graph(), graph::GraphOptions{}}) {
  Block b = digits_block(12, go);
  double dmax = 0;
  const Dense H = dense_laplacian(b.g.A, b.Yd, &dmax);
  const std::vector<double> h = graph::degrees(b.g.A);
  BlockLanczos lz(b.g.A, h, b.Yd);
  ASSERT_TRUE(lz.why().empty()) << lz.why();
  const double eps = std::numeric_limits<double>::epsilon(), n = static_cast<double>(H.rows);
  struct Shift {
    double sigma, tau;
  };
  for (const Shift s : {Shift{1, 1e-3}, Shift{1, 1}, Shift{1, 10}, Shift{1, 1e3}, Shift{1e-2, 1}}) {
    const DenseForms refs = dense_forms(H, b.Y, s.sigma, s.tau);
    for (QuadratureForm which : {QuadratureForm::smoothed, QuadratureForm::resolvent}) {
      const std::optional<solvers::QuadratureResult> q = lz.form(which, s.sigma, s.tau);
      const std::string what = std::string(which == QuadratureForm::smoothed ? "smoothed" : "resolvent") +
                               " sigma " + std::to_string(s.sigma) + " tau " + std::to_string(s.tau);
      ASSERT_TRUE(q.has_value()) << what << ": " << lz.why();
      const Dense& ref = refs[which];
      const double kappa = 1 + 2 * s.tau * dmax / s.sigma;
      const double scale = frobenius(test::mul(b.Y, b.Y, 'T', 'N')) / (which == QuadratureForm::resolvent ? s.sigma : 1.0);
      const double k = 2 * n / 12 + 20;
      const double tol = 2 * (1e-13 + (3 * n + k) * eps * kappa) * scale;
      EXPECT_LT(test::max_abs_diff(q->form, ref), tol) << what;
      EXPECT_GT(frobenius(ref), 1e-6 * scale) << what;  // a form that is not negligible
      EXPECT_LE(q->bound, 1e-13 * frobenius(q->form)) << what;
      EXPECT_GE(q->steps, 1) << what;
      // Replicated: the same bits on every rank.
      Dense lo = q->form, hi = q->form;
      MPI_Allreduce(MPI_IN_PLACE, lo.data(), static_cast<int>(lo.v.size()), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, hi.data(), static_cast<int>(hi.v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_EQ(lo.v, hi.v) << what;
    }
  }
  // The harder shifts needed more steps than the easiest one.
  EXPECT_GT(lz.form(QuadratureForm::smoothed, 1, 1e3)->steps, lz.form(QuadratureForm::smoothed, 1, 1e-3)->steps);
  }
}

TEST(BlockLanczos, AFormDoesNotDependOnTheShiftsAskedBefore) {
  // A sweep grows one recurrence: α = 0.25 asked after α = 1000 (many more steps run) gives
  // the bits a fresh recurrence gives it, at the same step.
  Block b = digits_block(10);
  const std::vector<double> h = graph::degrees(b.g.A);
  BlockLanczos grown(b.g.A, h, b.Yd), fresh(b.g.A, h, b.Yd);
  const auto hard = grown.form(QuadratureForm::smoothed, 1.0, 1e3);
  const auto easy = grown.form(QuadratureForm::smoothed, 1.0, 0.25);
  const auto alone = fresh.form(QuadratureForm::smoothed, 1.0, 0.25);
  ASSERT_TRUE(hard && easy && alone);
  EXPECT_GT(hard->steps, alone->steps);
  EXPECT_EQ(easy->new_steps, 0);  // nothing grown for the easy shift
  EXPECT_EQ(alone->new_steps, alone->steps);
  EXPECT_EQ(easy->steps, alone->steps);
  ASSERT_EQ(easy->form.v.size(), alone->form.v.size());
  EXPECT_EQ(0, std::memcmp(easy->form.data(), alone->form.data(), easy->form.v.size() * sizeof(double)));
}

TEST(BlockLanczos, BothFormsAtOnceAreTheBitsOfTwoSeparateCalls) {
  // SOGE asks for both forms at every α: forms() shares their forward block LU, and each must
  // still be what a call of its own gives (same step, same bits). The two forms stop a step
  // or two apart, either first (here: the resolvent later at σ = 10⁻³, the smoothed form
  // later at σ = τ = 1, 88/86 and 25/27 steps), and the shared loop must serve both orders.
  Block b = digits_block(10);
  const std::vector<double> h = graph::degrees(b.g.A);
  bool resolvent_later = false, smoothed_later = false;
  for (const auto& [sigma, tau] : {std::pair{1e-3, 1.0}, std::pair{1.0, 1.0}, std::pair{0.1, 1.0}, std::pair{1.0, 16.0}}) {
    BlockLanczos both(b.g.A, h, b.Yd), one(b.g.A, h, b.Yd), other(b.g.A, h, b.Yd);
    const auto f = both.forms({QuadratureForm::resolvent, QuadratureForm::smoothed}, sigma, tau);
    const auto r = one.form(QuadratureForm::resolvent, sigma, tau);
    const auto s = other.form(QuadratureForm::smoothed, sigma, tau);
    ASSERT_EQ(f.size(), 2u);
    ASSERT_TRUE(f[0] && f[1] && r && s) << both.why();
    EXPECT_EQ(f[0]->steps, r->steps);
    EXPECT_EQ(f[1]->steps, s->steps);
    EXPECT_EQ(f[0]->bound, r->bound);
    EXPECT_EQ(f[1]->bound, s->bound);
    resolvent_later |= r->steps > s->steps;
    smoothed_later |= s->steps > r->steps;  // the case the shared loop must handle
    ASSERT_EQ(f[0]->form.v.size(), r->form.v.size());
    ASSERT_EQ(f[1]->form.v.size(), s->form.v.size());
    EXPECT_EQ(0, std::memcmp(f[0]->form.data(), r->form.data(), r->form.v.size() * sizeof(double)));
    EXPECT_EQ(0, std::memcmp(f[1]->form.data(), s->form.data(), s->form.v.size() * sizeof(double)));
  }
  EXPECT_TRUE(resolvent_later && smoothed_later) << "the shifts no longer exercise both orders";
}

TEST(BlockLanczos, ARankDeficientBlockGivesNoFormAndSaysWhy) {
  Block b = digits_block(6);
  for (int64_t i = 0; i < b.Yd.n_local; ++i) b.Yd(i, 5) = 2.0 * b.Yd(i, 1);  // column 5 = 2 × column 1
  BlockLanczos lz(b.g.A, graph::degrees(b.g.A), b.Yd);
  EXPECT_FALSE(lz.why().empty());
  EXPECT_FALSE(lz.form(QuadratureForm::smoothed, 1.0, 1.0).has_value());
}

TEST(BlockLanczos, RefusesANonPositiveShiftAndAWrongLayout) {
  Block b = digits_block(4);
  BlockLanczos lz(b.g.A, graph::degrees(b.g.A), b.Yd);
  EXPECT_THROW(lz.form(QuadratureForm::resolvent, 0.0, 1.0), ssdr::Error);
  EXPECT_THROW(lz.form(QuadratureForm::resolvent, 1.0, -1.0), ssdr::Error);
  EXPECT_THROW(lz.form(QuadratureForm::resolvent, 1.0, std::nan("")), ssdr::Error);
  std::vector<double> short_h = graph::degrees(b.g.A);
  short_h.pop_back();  // on every rank that has rows; the check is collective
  EXPECT_THROW(BlockLanczos(b.g.A, short_h, b.Yd), ssdr::Error);
}

TEST(BlockLanczos, AFormThatNeedsTheWholeSpaceStillMeetsItsBound) {
  // iris: n = 150, a block of 4 columns: at τ = 10⁶ the form needs the whole space
  // (κ ≈ 10⁷): the recurrence runs n/r = 38 steps.
  const test::Problem pr = test::load_problem("iris.csv", 3, true);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  graph::Graph g = graph::build_knn_graph(X, tca_graph());
  double dmax = 0;
  const Dense H = dense_laplacian(g.A, X, &dmax);
  BlockLanczos lz(g.A, graph::degrees(g.A), X);
  const double sigma = 1, tau = 1e6;
  const auto q = lz.form(QuadratureForm::smoothed, sigma, tau);
  ASSERT_TRUE(q.has_value()) << lz.why();
  EXPECT_GE(q->steps, 150 / 4);  // the whole space: n/r steps
  const Dense ref = dense_forms(H, pr.X, sigma, tau).smoothed;
  const double eps = std::numeric_limits<double>::epsilon(), n = static_cast<double>(H.rows);
  const double kappa = 1 + 2 * tau * dmax / sigma, k = 2 * n / 4 + 20;
  const double tol = 2 * (1e-13 + (3 * n + k) * eps * kappa) * frobenius(test::mul(pr.X, pr.X, 'T', 'N'));
  EXPECT_LT(test::max_abs_diff(q->form, ref), tol);
}

TEST(BlockLanczos, ABlockSpanningAnInvariantSubspaceGivesTheExactFormAfterOneStep) {
  // Y = 4 eigenvectors of H (iris, n = 150): H Y = Y Λ, so W = H Q₁ − Q₁A₁ is at rounding
  // level after the first step and the recurrence stops there as invariant; the form is
  // then exact: Yᵀ(σI + τH)⁻¹τHY = diag(τλ/(σ + τλ)) for orthonormal Y. Error: the
  // eigenvectors' residual ‖HY − YΛ‖ ≤ c·n·ε·‖H‖ (dsyev is backward stable) against the
  // form's κ = 1 + 2τD_max/σ, as in GivesTheDenseResolventAndSmoothedFormsAtEveryShift.
  const test::Problem pr = test::load_problem("iris.csv", 3, true);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  graph::Graph g = graph::build_knn_graph(X, tca_graph());
  double dmax = 0;
  const Dense H = dense_laplacian(g.A, X, &dmax);
  Dense V = H;
  std::vector<double> lambda(static_cast<size_t>(H.rows));
  lapack::syev(V.rows, V.data(), V.rows, lambda.data());
  Dense Y(H.rows, 4);
  for (int64_t j = 0; j < 4; ++j) std::copy_n(V.col(40 + 20 * j), H.rows, Y.col(j));  // interior eigenvectors
  const DistMatrix Yd = ref::distribute(Y, MPI_COMM_WORLD);
  BlockLanczos lz(g.A, graph::degrees(g.A), Yd);
  const double sigma = 1, tau = 3;
  const auto q = lz.form(QuadratureForm::smoothed, sigma, tau);
  ASSERT_TRUE(q.has_value()) << lz.why();
  EXPECT_EQ(q->steps, 1);
  EXPECT_NE(lz.why().find("invariant"), std::string::npos) << lz.why();
  EXPECT_FALSE(lz.can_grow());
  const double eps = std::numeric_limits<double>::epsilon(), n = static_cast<double>(H.rows);
  const double kappa = 1 + 2 * tau * dmax / sigma;
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t i = 0; i < 4; ++i) {
      const double lam = lambda[static_cast<size_t>(40 + 20 * j)];
      const double expected = i == j ? tau * lam / (sigma + tau * lam) : 0.0;
      EXPECT_NEAR(q->form(i, j), expected, 2 * (3 * n) * eps * kappa * dmax) << i << "," << j;
    }
  // Another shift reads the same single step.
  const auto q2 = lz.form(QuadratureForm::resolvent, 0.5, 2.0);
  ASSERT_TRUE(q2.has_value()) << lz.why();
  EXPECT_EQ(q2->steps, 1);
  EXPECT_NEAR(q2->form(0, 0), 1.0 / (0.5 + 2.0 * lambda[40]), 2 * (3 * n) * eps * (1 + 4 * dmax / 0.5) * dmax / 0.5);
}
