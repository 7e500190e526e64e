// TCA and OTCA (tca-liu2008, Transductive Component Analysis) against the paper's identities
// and a serial dense reference written here from the paper's definitions: S = (I+αL)⁻¹αL
// (10) formed densely, W^r, W^e (15), D_l, M_l (18) formed as l×l matrices, the generalized
// eigenproblem (21) by LAPACK dsygvd and the OTCA recursion (23)–(27) with the orthogonal
// complement taken from an eigen-decomposition of I − QQᵀ instead of a full QR.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "methods/impls/tca_internal.hpp"
#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/solvers/sparse_solve.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

namespace tca = ssdr::methods::tca;

// ---------------------------------------------------------------- small dense helpers

Dense axpy(const Dense& A, double b, const Dense& B) {
  Dense C = A;
  for (size_t i = 0; i < C.v.size(); ++i) C.v[i] += b * B.v[i];
  return C;
}

std::vector<double> eigenvalues(Dense A) {
  std::vector<double> w(static_cast<size_t>(A.rows));
  lapack::syev(A.rows, A.data(), A.rows, w.data());
  return w;
}

using test::local_part;
using test::max_abs;
using test::mul;
using test::Problem;

/// The data set standardized (hence centered: wine's features span five orders of
/// magnitude), with the first p samples of each class labeled.
Problem load(const std::string& name, int p) { return test::load_problem(name, p, true); }

// ---------------------------------------------------------------- the dense reference

/// W^r, W^e of eq. (15), D^e (column sums of W^e), D_l and M_l of eq. (18), all l×l.
struct DenseGraphs {
  Dense Wr, We, Dl, Ml;
  std::vector<double> De;
};

DenseGraphs dense_graphs(const std::vector<int>& y, int classes) {
  const int64_t l = static_cast<int64_t>(y.size());
  std::vector<double> lk(static_cast<size_t>(classes), 0.0);
  for (int k : y) lk[static_cast<size_t>(k)] += 1;
  DenseGraphs g;
  g.Wr = Dense(l, l);
  g.We = Dense(l, l);
  for (int64_t i = 0; i < l; ++i)
    for (int64_t j = 0; j < l; ++j) {
      const int k = y[static_cast<size_t>(i)];
      if (y[static_cast<size_t>(j)] == k) g.Wr(i, j) = 1.0 / lk[static_cast<size_t>(k)];
      else g.We(i, j) = 1.0 / (static_cast<double>(l) - lk[static_cast<size_t>(k)]);
    }
  g.De.assign(static_cast<size_t>(l), 0.0);
  for (int64_t j = 0; j < l; ++j)
    for (int64_t i = 0; i < l; ++i) g.De[static_cast<size_t>(j)] += g.We(i, j);
  g.Dl = Dense::identity(l);
  g.Ml = Dense(l, l);
  for (int64_t i = 0; i < l; ++i) {
    g.Dl(i, i) += g.De[static_cast<size_t>(i)];
    for (int64_t j = 0; j < l; ++j)
      g.Ml(i, j) = (i == j ? 3.0 + g.De[static_cast<size_t>(i)] : 0.0) + g.We(i, j) + g.We(j, i) - 2.0 * g.Wr(i, j);
  }
  return g;
}

/// L = D − A of a dense graph.
Dense dense_laplacian(const Dense& A) {
  Dense L(A.rows, A.cols);
  for (int64_t i = 0; i < A.rows; ++i) {
    double deg = 0;
    for (int64_t j = 0; j < A.cols; ++j) {
      deg += A(i, j);
      L(i, j) = -A(i, j);
    }
    L(i, i) += deg;
  }
  return L;
}

/// S = (I + αL)⁻¹ αL, eq. (10), n×n, by a dense SPD solve.
Dense dense_S(const Dense& A, double alpha) {
  const Dense L = dense_laplacian(A);
  Dense M = Dense::identity(L.rows), S(L.rows, L.cols);
  for (size_t i = 0; i < L.v.size(); ++i) {
    M.v[i] += alpha * L.v[i];
    S.v[i] = alpha * L.v[i];
  }
  lapack::posv(L.rows, L.cols, M.data(), M.rows, S.data(), S.rows);
  return S;
}

/// The pieces of (21) and (26) in the PCA subspace of Table 1, Step 4 (d1 = l when d > l).
struct DenseProblem {
  Dense P, XSX, XMX, XDX, XX, XY;
};

/// The graph is the paper's eq. (4) as the method table sets it for TCA and OTCA: k = 5,
/// t = σ² = the mean squared edge length (*t_out).
DenseProblem dense_problem(const Problem& pr, double alpha, double* t_out = nullptr) {
  const Dense A = ref::knn_heat_graph_mean_width(pr.X, 5, t_out);
  std::vector<char> keep(pr.semi.size());
  std::vector<int> yl;
  for (size_t i = 0; i < keep.size(); ++i)
    if ((keep[i] = pr.semi[i] >= 0)) yl.push_back(pr.semi[i]);
  const int64_t l = static_cast<int64_t>(yl.size()), d = pr.X.cols;
  DenseProblem dp;
  if (d > l) {
    Dense C = mul(pr.X, pr.X, 'T', 'N');
    std::vector<double> w(static_cast<size_t>(d));
    lapack::syev(d, C.data(), d, w.data());
    dp.P = Dense(d, l);
    for (int64_t j = 0; j < l; ++j)
      for (int64_t i = 0; i < d; ++i) dp.P(i, j) = C(i, d - 1 - j);
  } else {
    dp.P = Dense::identity(d);
  }
  const Dense Y = mul(pr.X, dp.P), Yl = mul(ref::rows(pr.X, keep), dp.P);
  const DenseGraphs g = dense_graphs(yl, pr.classes);
  dp.XSX = mul(Y, mul(dense_S(A, alpha), Y), 'T', 'N');
  dp.XMX = mul(Yl, mul(g.Ml, Yl), 'T', 'N');
  dp.XDX = mul(Yl, mul(g.Dl, Yl), 'T', 'N');
  dp.XX = mul(Yl, Yl, 'T', 'N');
  Dense ind(l, pr.classes);
  for (int64_t i = 0; i < l; ++i) ind(i, yl[static_cast<size_t>(i)]) = 1.0;
  dp.XY = mul(Yl, ind, 'T', 'N');
  return dp;
}

/// TCA by LAPACK: the m smallest generalized eigenvectors of (21), lifted by P.
Dense dense_tca(const DenseProblem& dp, double beta, int64_t m, std::vector<double>* values) {
  Dense A = axpy(dp.XSX, beta, dp.XMX), B = dp.XDX;
  std::vector<double> w(static_cast<size_t>(A.rows));
  lapack::sygv(A.rows, A.data(), A.rows, B.data(), B.rows, w.data());
  Dense V(A.rows, m);
  std::copy(A.v.begin(), A.v.begin() + A.rows * m, V.v.begin());
  if (values) values->assign(w.begin(), w.begin() + m);
  return mul(dp.P, V);
}

/// Orthonormal basis of the orthogonal complement of span(A) (d×k): the eigenvectors of
/// I − QQᵀ of eigenvalue 1 (a basis different from the paper's Q_2; a_k does not depend on it).
Dense complement(const Dense& A) {
  Dense Q = A;
  lapack::orthonormalize(Q.rows, Q.cols, Q.data(), Q.rows);
  Dense Pc = axpy(Dense::identity(A.rows), -1.0, mul(Q, Q, 'N', 'T'));
  std::vector<double> w(static_cast<size_t>(A.rows));
  lapack::syev(A.rows, Pc.data(), A.rows, w.data());
  Dense E(A.rows, A.rows - A.cols);
  std::copy(Pc.v.begin() + A.rows * A.cols, Pc.v.end(), E.v.begin());
  return E;
}

/// OTCA by the recursion (23)–(27), directions normalized and lifted by P.
Dense dense_otca(const DenseProblem& dp, double beta, double gamma, int64_t m) {
  const Dense H = axpy(axpy(dp.XSX, beta, dp.XMX), gamma, dp.XX);
  const int64_t d1 = H.rows;
  Dense A(d1, m), E = Dense::identity(d1);
  for (int64_t k = 0; k < m; ++k) {
    Dense Hk = mul(E, mul(H, E), 'T', 'N');
    Dense r(d1, 1);
    std::copy(dp.XY.col(k), dp.XY.col(k) + d1, r.data());
    Dense b = mul(E, r, 'T', 'N');
    lapack::posv(Hk.rows, 1, Hk.data(), Hk.rows, b.data(), b.rows);
    const Dense a = mul(E, b);
    for (int64_t i = 0; i < d1; ++i) A(i, k) = a.v[static_cast<size_t>(i)];
    Dense Ak(d1, k + 1);
    std::copy(A.v.begin(), A.v.begin() + d1 * (k + 1), Ak.v.begin());
    if (k + 1 < m) E = complement(Ak);
  }
  for (int64_t k = 0; k < m; ++k) {
    double s = 0;
    for (int64_t i = 0; i < d1; ++i) s += A(i, k) * A(i, k);
    for (int64_t i = 0; i < d1; ++i) A(i, k) /= std::sqrt(s);
  }
  return mul(dp.P, A);
}

/// Labeled rows of the replicated problem, distributed, with their local labels.
struct LabeledRows {
  DistMatrix X;
  std::vector<int> labels;
};

/// Unequal classes in an interleaved order (so every rank holds several classes).
std::vector<int> uneven_labels() { return {2, 0, 1, 3, 1, 2, 0, 2, 3, 2, 1, 0, 2}; }

/// The l×l identity, rows distributed: apply_*(I) is the operator's dense matrix.
DistMatrix distributed_identity(int64_t l) { return ref::distribute(Dense::identity(l), MPI_COMM_WORLD); }

methods::FitResult fit(const char* method, const Problem& pr, const methods::MethodOptions& o,
                       DistMatrix& X) {
  X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const std::vector<int> labels = local_part(pr.semi, X);
  methods::TrainingData td{X, labels, pr.classes};
  methods::Timings t;
  return methods::find_method(method).fit(td, o, t);
}

}  // namespace

// ---------------------------------------------------------------- supervised graphs (15)–(18)

TEST(TcaGraphs, IntraAndInterClassWeightsMatchEquation15AndRowsSumToOne) {
  const std::vector<int> y = uneven_labels();
  const int c = 4;
  const int64_t l = static_cast<int64_t>(y.size());
  DistMatrix I = distributed_identity(l);
  const std::vector<int> yl = local_part(y, I);
  const Dense Wr = allgather(tca::apply_Wr(I, yl, c));  // W^r I = W^r
  const Dense We = allgather(tca::apply_We(I, yl, c));
  const Dense WeT = allgather(tca::apply_WeT(I, yl, c));
  const DenseGraphs g = dense_graphs(y, c);
  EXPECT_LT(test::max_abs_diff(Wr, g.Wr), 1e-15);
  EXPECT_LT(test::max_abs_diff(We, g.We), 1e-15);
  for (int64_t i = 0; i < l; ++i) {
    double sr = 0, se = 0;
    for (int64_t j = 0; j < l; ++j) {
      sr += Wr(i, j);
      se += We(i, j);
      EXPECT_EQ(Wr(i, j), Wr(j, i));                 // G^r is undirected
      EXPECT_NEAR(WeT(i, j), We(j, i), 1e-15);       // the transpose operator
    }
    EXPECT_NEAR(sr, 1.0, 1e-14) << "row " << i;      // "the sum of each row in W^r and W^e is 1"
    EXPECT_NEAR(se, 1.0, 1e-14) << "row " << i;
  }
  // W^e is directed: classes of different sizes give an asymmetric matrix.
  EXPECT_GT(test::max_abs_diff(We, WeT), 0.01);
}

TEST(TcaGraphs, MarginMatrixMlIsPositiveSemidefiniteAndDlPositiveDiagonal) {
  const std::vector<int> y = uneven_labels();
  const int c = 4;
  const int64_t l = static_cast<int64_t>(y.size());
  DistMatrix I = distributed_identity(l);
  const std::vector<int> yl = local_part(y, I);
  const Dense Ml = allgather(tca::apply_Ml(I, yl, c));
  const Dense Dl = allgather(tca::apply_Dl(I, yl, c));
  const DenseGraphs g = dense_graphs(y, c);
  EXPECT_LT(test::max_abs_diff(Ml, g.Ml), 1e-14);  // eq. (18)
  EXPECT_LT(test::max_abs_diff(Dl, g.Dl), 1e-14);
  for (int64_t i = 0; i < l; ++i) {
    EXPECT_GT(Dl(i, i), 1.0);
    for (int64_t j = 0; j < l; ++j) {
      EXPECT_NEAR(Ml(i, j), Ml(j, i), 1e-15);
      if (i != j) EXPECT_EQ(Dl(i, j), 0.0);
    }
  }
  const std::vector<double> w = eigenvalues(Ml);  // Proposition 2
  EXPECT_GT(w.front(), -1e-12);
  EXPECT_GT(w.back(), 1.0);
}

TEST(TcaGraphs, AverageMarginEqualsTheQuadraticFormsOfEquation17) {
  // m̄ = (1/l) Σ_i m(i) with the pointwise margin (16) summed pair by pair, against
  // (2/l) yᵀD_l y − (1/l) yᵀM_l y computed by the distributed operators.
  const std::vector<int> y = uneven_labels();
  const int c = 4;
  const int64_t l = static_cast<int64_t>(y.size());
  std::mt19937_64 rng(3);
  std::normal_distribution<double> N(0.0, 1.0);
  Dense v(l, 1);
  for (auto& x : v.v) x = N(rng);
  DistMatrix vd = ref::distribute(v, MPI_COMM_WORLD);
  const std::vector<int> yl = local_part(y, vd);
  const Dense Dv = transpose_multiply(vd, tca::apply_Dl(vd, yl, c));
  const Dense Mv = transpose_multiply(vd, tca::apply_Ml(vd, yl, c));
  const double quadratic = (2.0 * Dv(0, 0) - Mv(0, 0)) / static_cast<double>(l);

  std::vector<double> lk(static_cast<size_t>(c), 0.0);
  for (int k : y) lk[static_cast<size_t>(k)] += 1;
  double mbar = 0;
  for (int64_t i = 0; i < l; ++i) {
    const int k = y[static_cast<size_t>(i)];
    double m = 0;
    for (int64_t t = 0; t < l; ++t) {
      if (y[static_cast<size_t>(t)] != k) continue;
      for (int64_t j = 0; j < l; ++j) {
        if (y[static_cast<size_t>(j)] == k) continue;
        m += std::pow(v.v[i] - v.v[j], 2) - std::pow(v.v[i] - v.v[t], 2);
      }
    }
    mbar += m / (lk[static_cast<size_t>(k)] * (static_cast<double>(l) - lk[static_cast<size_t>(k)]));
  }
  mbar /= static_cast<double>(l);
  EXPECT_NEAR(quadratic, mbar, 1e-12 * std::max(1.0, std::abs(mbar)));
  EXPECT_GT(std::abs(mbar), 1e-3);  // a non-trivial value
}

// ---------------------------------------------------------------- smoothness regularizer (10)–(13)

TEST(TcaSmoothness, SparseSolvesGiveTheDenseXSXt) {
  // X S Xᵀ by d CG solves with I + αL equals the dense (I + αL)⁻¹αL form, for the paper's
  // α and for α → 0, where S/α → L (13) and the naive X Xᵀ − X(I+αL)⁻¹Xᵀ would cancel.
  Problem pr = load("wine.csv", 3);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  const Dense A = ref::knn_heat_graph(pr.X, 8, 1e-3 / 8);
  for (double alpha : {10.0, 4.0, 1e-6}) {
    solvers::SparseSolveOptions so;
    so.prefix = "tca_test_";
    std::vector<int> its;
    const Dense XSX = tca::smoothness_regularizer(g.A, X, alpha, so, &its);
    const Dense S = dense_S(A, alpha);
    const Dense ref = mul(pr.X, mul(S, pr.X), 'T', 'N');
    EXPECT_LT(test::max_abs_diff(XSX, ref), 1e-8 * max_abs(ref)) << "alpha " << alpha;
    EXPECT_EQ(static_cast<int64_t>(its.size()), pr.X.cols);
    // Proposition 1: S (and so X S Xᵀ) is positive semidefinite, with eigenvalues below 1.
    const std::vector<double> ws = eigenvalues(S);
    EXPECT_GT(ws.front(), -1e-12);
    EXPECT_LT(ws.back(), 1.0);
    EXPECT_GT(eigenvalues(XSX).front(), -1e-10 * max_abs(ref));
    if (alpha == 1e-6) {  // eq. (13): X S Xᵀ/α → X L Xᵀ
      const Dense XLX = mul(pr.X, mul(dense_laplacian(A), pr.X), 'T', 'N');
      Dense scaled = XSX;
      for (double& v : scaled.v) v /= alpha;
      EXPECT_LT(test::max_abs_diff(scaled, XLX), 1e-3 * max_abs(XLX));
    }
  }
}

// ---------------------------------------------------------------- the dense and Krylov routes

namespace {

/// Sets a PETSc option for a scope (-tca_route ...), clearing it after.
using test::ScopedOption;

double max_row_sum(const Dense& A) {
  double m = 0;
  for (int64_t i = 0; i < A.rows; ++i) {
    double s = 0;
    for (int64_t j = 0; j < A.cols; ++j) s += A(i, j);
    m = std::max(m, s);
  }
  return m;
}

/// How far the two routes' X S Xᵀ may be apart, entrywise, from an error analysis of both.
/// With M = I + αL ⪰ I (‖M⁻¹‖₂ ≤ 1), the right-hand sides b_j = αLy_j (‖b_j‖ ≤ 2αD_max‖y_j‖,
/// Gershgorin: λ(L) ≤ 2D_max) and Y's largest column norm ν:
///  - CG with point Jacobi stops at ‖diag(M)⁻¹r‖ ≤ rtol‖diag(M)⁻¹b‖, so the true residual is
///    within (1 + αD_max)·rtol·‖b‖ (diag(M) ∈ [1, 1 + αD_max]) and so is its error ‖Δz‖;
///  - dposv is backward stable: ‖Δz‖ ≤ n·ε·κ(M)·‖z‖ with κ(M) ≤ 1 + 2αD_max, ‖z‖ ≤ ‖b‖;
///  - forming b and YᵀZ adds n·ε relative to ν·‖b‖ (summation of n terms).
/// |ΔG_ij| ≤ ‖y_i‖‖Δz_j‖, so the bound is ν²·2αD_max·((1+αD_max)·rtol + (2 + 2αD_max)·n·ε),
/// doubled for the symmetrization and the rounding of the bound's own constants.
double routes_tolerance(double alpha, double dmax, int64_t n, double nu, double rtol = 1e-12) {
  const double eps = std::numeric_limits<double>::epsilon();
  const double nn = static_cast<double>(n);
  return 2.0 * nu * nu * 2.0 * alpha * dmax * ((1.0 + alpha * dmax) * rtol + (2.0 + 2.0 * alpha * dmax) * nn * eps);
}

double largest_column_norm(const Dense& X) {
  double m = 0;
  for (int64_t j = 0; j < X.cols; ++j) {
    double s = 0;
    for (int64_t i = 0; i < X.rows; ++i) s += X(i, j) * X(i, j);
    m = std::max(m, std::sqrt(s));
  }
  return m;
}

}  // namespace

TEST(TcaSmoothness, DenseRouteGivesTheSameXSXtAsTheKrylovRouteAndTheDenseReference) {
  Problem pr = load("wine.csv", 3);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  const Dense A = ref::knn_heat_graph(pr.X, 8, 1e-3 / 8);
  const double dmax = max_row_sum(A), nu = largest_column_norm(pr.X);
  for (double alpha : {1e-6, 1e-3, 1.0, 4.0, 10.0, 1e3}) {
    solvers::SparseSolveOptions so;
    so.prefix = "tca_test_";
    const Dense krylov = tca::smoothness_regularizer(g.A, X, alpha, so, nullptr);
    const Dense dense = tca::smoothness_regularizer_dense(g.A, X, alpha);
    const double tol = routes_tolerance(alpha, dmax, pr.X.rows, nu);
    EXPECT_LT(test::max_abs_diff(dense, krylov), tol) << "alpha " << alpha;
    // The serial reference (S formed densely, then X S Xᵀ): the same dense arithmetic in
    // another order, within the dense route's share of the bound.
    const Dense ref = mul(pr.X, mul(dense_S(A, alpha), pr.X), 'T', 'N');
    EXPECT_LT(test::max_abs_diff(dense, ref), routes_tolerance(alpha, dmax, pr.X.rows, nu, 0.0) +
                                                   static_cast<double>(pr.X.rows) * 1e-16 * max_abs(ref))
        << "alpha " << alpha;
    // Symmetric, and the same bits on every rank (replicated computation).
    for (int64_t i = 0; i < dense.rows; ++i)
      for (int64_t j = 0; j < dense.cols; ++j) EXPECT_EQ(dense(i, j), dense(j, i));
    Dense lo = dense, hi = dense;
    MPI_Allreduce(MPI_IN_PLACE, lo.data(), static_cast<int>(lo.v.size()), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, hi.data(), static_cast<int>(hi.v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo.v, hi.v) << "alpha " << alpha;
  }
}

TEST(TcaSmoothness, DenseRouteHasTheSameBitsOnOneRankAsOnAllRanks) {
  // The graph and Y on one rank (MPI_COMM_SELF, all rows) and spread over every rank: the
  // dense route gathers copies and computes in a fixed order, so the bits agree.
  Problem pr = load("wine.csv", 3);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  DistMatrix Xs = ref::distribute(pr.X, MPI_COMM_SELF);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  auto gs = graph::build_knn_graph(Xs, graph::GraphOptions{});
  for (double alpha : {1e-3, 10.0}) {
    const Dense all = tca::smoothness_regularizer_dense(g.A, X, alpha);
    const Dense one = tca::smoothness_regularizer_dense(gs.A, Xs, alpha);
    ASSERT_EQ(all.v.size(), one.v.size());
    EXPECT_EQ(0, std::memcmp(all.data(), one.data(), all.v.size() * sizeof(double))) << "alpha " << alpha;
  }
}

TEST(TcaRoute, OptionChoosesTheRouteAndTheCrossoverDecidesAuto) {
  EXPECT_EQ(tca::route_option("tca_"), tca::Route::automatic);
  {
    ScopedOption o("-tca_route", "krylov");
    EXPECT_EQ(tca::route_option("tca_"), tca::Route::krylov);
  }
  {
    ScopedOption o("-tca_route", "dense");
    EXPECT_EQ(tca::route_option("tca_"), tca::Route::dense);
  }
  {
    ScopedOption o("-tca_route", "cholesky");
    EXPECT_THROW(tca::route_option("tca_"), ssdr::Error);
  }
  EXPECT_TRUE(tca::dense_route(tca::Route::automatic, tca::kDenseRouteMaxSamples));
  EXPECT_FALSE(tca::dense_route(tca::Route::automatic, tca::kDenseRouteMaxSamples + 1));
  EXPECT_TRUE(tca::dense_route(tca::Route::dense, tca::kDenseRouteMaxSamples + 1));
  EXPECT_FALSE(tca::dense_route(tca::Route::krylov, 10));
  EXPECT_THROW(tca::dense_route(tca::Route::dense, tca::kDenseRouteLimit + 1), ssdr::Error);
}

namespace {

/// One fit through the pipeline with -tca_route `route`: its embedding (gathered) and outcome.
struct RouteFit {
  driver::FitOutcome out;
  Dense Y;
};
RouteFit fit_by_route(const char* method, const Problem& pr, double alpha, const char* route) {
  ScopedOption o("-tca_route", route);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  driver::FitConfig cfg = driver::make_fit_config(method, {{"alpha", alpha, "alpha"}}, 0, 1, 0);
  RouteFit r;
  r.out = test::fit_problem(pr, X, cfg);
  r.Y = allgather(r.out.embedding);
  return r;
}

}  // namespace

TEST(TcaRoute, DenseAndKrylovRoutesGiveTheSameProjectionAndAccuracy) {
  // iris (no PCA step), wine (PCA to 9) and digits (PCA to 50, n_t = 1797 ≤ the crossover),
  // every unlabeled row scored (test::fit_problem has no unseen rows).
  // The routes' X S Xᵀ agree within routes_tolerance (above: about 10⁻⁸ of its largest entry
  // at α = 10, less at smaller α); the eigenvectors of (21) and the OTCA solves amplify that
  // by the reciprocal relative eigen-gap. The tolerance, 10⁻⁶ of the embedding's largest
  // entry, is the one Tca.AgreesWithTheSerialDenseReference allows the Krylov route against
  // the serial dense reference: it admits an amplification of 10². (The largest difference,
  // TCA on digits at α = 10, is 2.4·10⁻⁸ of the largest entry; iris and wine below 10⁻¹¹.)
  // At that scale the 1-NN decisions have no near-ties: the same accuracies.
  struct Case {
    const char* file;
    int p;
  };
  for (const Case& c : {Case{"iris.csv", 3}, Case{"wine.csv", 3}, Case{"digits.csv", 5}})
    for (const char* method : {"tca", "otca"})
      for (double alpha : {1e-3, 1.0, 10.0}) {
        Problem pr = load(c.file, c.p);
        const RouteFit dense = fit_by_route(method, pr, alpha, "dense");
        const RouteFit krylov = fit_by_route(method, pr, alpha, "krylov");
        const RouteFit automatic = fit_by_route(method, pr, alpha, "auto");
        const std::string what = std::string(method) + " " + c.file + " alpha " + std::to_string(alpha);
        EXPECT_EQ(dense.out.info.at("solver_route").get<std::string>(), "dense") << what;
        EXPECT_EQ(krylov.out.info.at("solver_route").get<std::string>(), "krylov") << what;
        EXPECT_EQ(automatic.out.info.at("solver_route").get<std::string>(), "dense") << what;  // n_t ≤ 2000
        EXPECT_EQ(automatic.out.info.at("solver_route_size").get<int64_t>(), pr.X.rows) << what;
        EXPECT_EQ(automatic.out.info.at("solver_route_crossover").get<int64_t>(), tca::kDenseRouteMaxSamples);
        EXPECT_LT(test::max_diff_up_to_column_sign(dense.Y, krylov.Y), 1e-6 * max_abs(krylov.Y)) << what;
        EXPECT_EQ(std::memcmp(dense.Y.data(), automatic.Y.data(), dense.Y.v.size() * sizeof(double)), 0) << what;
        ASSERT_TRUE(std::isfinite(dense.out.accuracy.unlabeled)) << what;  // every unlabeled row scored
        EXPECT_EQ(dense.out.accuracy.unlabeled, krylov.out.accuracy.unlabeled) << what;
        if (std::getenv("SSDR_TCA_ROUTE_DIFF"))
          std::printf("%s: max diff %.3g of max %.3g\n", what.c_str(), test::max_diff_up_to_column_sign(dense.Y, krylov.Y),
                      max_abs(krylov.Y));
      }
}

// ---------------------------------------------------------------- TCA (21)

TEST(Tca, AgreesWithTheSerialDenseReference) {
  // iris: l = 9 > d = 4 (no PCA step); wine: d = 13 > l = 9 (PCA to d1 = 9 dimensions).
  for (const char* name : {"iris.csv", "wine.csv"}) {
    Problem pr = load(name, 3);
    methods::MethodOptions o;
    DistMatrix X;
    const methods::FitResult r = fit("tca", pr, o, X);
    const int64_t m = pr.classes - 1;
    ASSERT_EQ(r.W.rows, pr.X.cols);
    ASSERT_EQ(r.W.cols, m);
    EXPECT_EQ(r.info.at("alpha").get<double>(), 10.0);  // the paper's defaults
    EXPECT_EQ(r.info.at("beta").get<double>(), 6.0);
    EXPECT_EQ(r.info.at("pca_dim").get<int64_t>(), std::min<int64_t>(pr.X.cols, 9));

    double t = 0;
    const DenseProblem dp = dense_problem(pr, 10.0, &t);
    // The paper's graph (eq. (4), k = 5, t = d̄), recorded in info: t within the 2·N·ε·d̄ of
    // two orders of summing the same N ≤ 2nk squared distances (N ≤ 2·150·5 here).
    const auto& gi = r.info.at("graph");
    EXPECT_EQ(gi.at("k").get<int>(), 5);
    EXPECT_EQ(gi.at("weight").get<std::string>(), "heat");
    EXPECT_EQ(gi.at("sigma_rule").get<std::string>(), "mean_edge_dist2");
    EXPECT_NEAR(gi.at("t").get<double>(), t, 2.0 * 2 * 150 * 5 * 2.3e-16 * t) << name;
    EXPECT_GT(gi.at("mean_degree").get<double>(), 1.0) << name;  // not SODA's vanishing graph
    std::vector<double> values;
    const Dense U = dense_tca(dp, 6.0, m, &values);
    const auto got = r.info.at("eigenvalues").get<std::vector<double>>();
    for (int64_t i = 0; i < m; ++i) EXPECT_NEAR(got[static_cast<size_t>(i)], values[static_cast<size_t>(i)], 1e-8 * values.back()) << name;
    EXPECT_LT(test::max_diff_up_to_column_sign(U, r.W), 1e-6 * max_abs(U)) << name;
    // The constraint of (20): uᵀ X_l D_l X_lᵀ u = 1 in the PCA coordinates.
    const Dense a = mul(dp.P, r.W, 'T', 'N');
    const Dense B = mul(a, mul(dp.XDX, a), 'T', 'N');
    for (int64_t i = 0; i < m; ++i) EXPECT_NEAR(B(i, i), 1.0, 1e-8) << name;
  }
}

TEST(Tca, PcaStepKeepsTheLeadingPrincipalAxes) {
  Problem pr = load("wine.csv", 3);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const Dense P = tca::pca_basis(X, 5);
  const Dense C = mul(pr.X, pr.X, 'T', 'N');
  std::vector<double> w = eigenvalues(C);
  const Dense PtP = mul(P, P, 'T', 'N');
  EXPECT_LT(test::max_abs_diff(PtP, Dense::identity(5)), 1e-12);
  const Dense PtCP = mul(P, mul(C, P), 'T', 'N');  // diag of the 5 largest eigenvalues
  for (int64_t j = 0; j < 5; ++j) EXPECT_NEAR(PtCP(j, j), w[static_cast<size_t>(w.size() - 1 - j)], 1e-10 * w.back());
}

// ---------------------------------------------------------------- OTCA (23)–(27)

TEST(Otca, AgreesWithTheSerialDenseReference) {
  for (const char* name : {"iris.csv", "wine.csv"}) {
    Problem pr = load(name, 3);
    methods::MethodOptions o;
    DistMatrix X;
    const methods::FitResult r = fit("otca", pr, o, X);
    ASSERT_EQ(r.W.cols, pr.classes);  // one direction per class
    EXPECT_EQ(r.info.at("alpha").get<double>(), 4.0);
    EXPECT_EQ(r.info.at("beta").get<double>(), 10.0);
    EXPECT_EQ(r.info.at("gamma").get<double>(), 1e-3);
    const Dense U = dense_otca(dense_problem(pr, 4.0), 10.0, 1e-3, pr.classes);
    EXPECT_LT(test::max_abs_diff(U, r.W), 1e-6) << name;
  }
}

TEST(Otca, DirectionsAreOrthonormalOnDigits) {
  // l = 50 < d = 64: PCA step to 50 dimensions (constant pixels standardize to 0).
  Problem pr = load("digits.csv", 5);
  methods::MethodOptions o;
  DistMatrix X;
  const methods::FitResult r = fit("otca", pr, o, X);
  ASSERT_EQ(r.W.cols, 10);
  EXPECT_EQ(r.info.at("pca_dim").get<int64_t>(), 50);
  const Dense G = mul(r.W, r.W, 'T', 'N');
  EXPECT_LT(test::max_abs_diff(G, Dense::identity(10)), 1e-10);
}

TEST(Otca, EachDirectionSolvesItsRegularizedLeastSquaresOnTheComplement) {
  // Stationarity of (26) at a_k = E_{k−1}b*: the gradient H a_k − R_{·k} is orthogonal to
  // span{a_1 … a_{k−1}}⊥, i.e. lies in span{a_1 … a_{k−1}}; and the a_k are orthogonal (22).
  std::mt19937_64 rng(5);
  std::normal_distribution<double> N(0.0, 1.0);
  const int64_t d1 = 12, c = 5;
  Dense G(d1, 2 * d1), R(d1, c);
  for (auto& x : G.v) x = N(rng);
  for (auto& x : R.v) x = N(rng);
  const Dense H = axpy(mul(G, G, 'N', 'T'), 0.1, Dense::identity(d1));
  const Dense A = tca::otca_directions(H, R, c);
  const Dense AtA = mul(A, A, 'T', 'N');
  for (int64_t i = 0; i < c; ++i) {
    EXPECT_GT(AtA(i, i), 1e-6);
    for (int64_t j = 0; j < c; ++j)
      if (i != j) EXPECT_LT(std::abs(AtA(i, j)), 1e-12 * std::sqrt(AtA(i, i) * AtA(j, j)));
  }
  for (int64_t k = 0; k < c; ++k) {
    Dense a(d1, 1), g(d1, 1);
    std::copy(A.col(k), A.col(k) + d1, a.data());
    g = mul(H, a);
    for (int64_t i = 0; i < d1; ++i) g.v[i] -= R(i, k);
    Dense Pg = g;  // the component of g in the complement of span{a_1 … a_{k−1}}
    if (k > 0) {
      Dense Ak(d1, k);
      std::copy(A.v.begin(), A.v.begin() + d1 * k, Ak.v.begin());
      const Dense E = complement(Ak);
      Pg = mul(E, g, 'T', 'N');
    }
    EXPECT_LT(max_abs(Pg), 1e-10 * max_abs(R)) << "direction " << k;
  }
  EXPECT_THROW(tca::otca_directions(H, R, c + 1), ssdr::Error);  // at most c directions
}

// ---------------------------------------------------------------- any rank count

namespace {
void expect_same_on_one_rank(const std::string& method) {
  driver::FitConfig cfg;
  cfg.method = method;
  cfg.preprocess.scaling = data::Scaling::standardize;
  const data::SplitSpec spec = test::transductive_split(3, 0.8, 11);
  const test::SerialAndDistributed r = test::fit_serial_and_distributed("wine.csv", spec, cfg);
  EXPECT_EQ(r.dist.accuracy.unlabeled, r.serial_accuracy.unlabeled) << method;
  EXPECT_EQ(r.dist.accuracy.unseen, r.serial_accuracy.unseen) << method;
  EXPECT_LT(test::max_diff_up_to_column_sign(r.Y_dist, r.Y_serial), 1e-6 * max_abs(r.Y_serial)) << method;
  // The same graph on one rank: the same edges, and t = d̄ within 2·N·ε·t (the same
  // N = 2·edges squared distances summed in two orders).
  const auto& gd = r.dist.info.at("graph");
  const auto& gs = r.serial_info.at("graph");
  EXPECT_EQ(gd.at("edges"), gs.at("edges")) << method;
  const double t = gs.at("t").get<double>(), edges = gs.at("edges").get<double>();
  EXPECT_NEAR(gd.at("t").get<double>(), t, 2.0 * 2.0 * edges * std::numeric_limits<double>::epsilon() * t) << method;
  // wine, 3 labels per class, this split, on the paper's graph (eq. (4), k = 5, t = d̄):
  // tca 0.78, otca 0.80 (0.74 and 0.65 on SODA's narrow graph; chance 0.33).
  EXPECT_GT(r.dist.accuracy.unlabeled, 0.6) << method;
}
}  // namespace

TEST(Tca, GivesTheSameEmbeddingAndAccuracyOnOneRankAsOnAllRanks) { expect_same_on_one_rank("tca"); }
TEST(Otca, GivesTheSameEmbeddingAndAccuracyOnOneRankAsOnAllRanks) { expect_same_on_one_rank("otca"); }

TEST(TcaSweep, OneLanczosRecurrenceServesEveryAlphaAndAgreesWithTheCgOfASingleFit) {
  // digits with -tca_route krylov (n_t = 1797, PCA to d1 = 50): the fits of a sweep (a
  // cache) take X S Xᵀ from one block Lanczos recurrence, grown for the harder α and reused
  // for the easier ones (and by OTCA, on the same graph and PCA width); single fits solve by
  // CG. Both meet their tolerance (the quadrature's bound 10⁻¹³, CG's residual 10⁻¹²), so
  // the embeddings agree within TcaRoute's 10⁻⁶ of the largest entry and the accuracies are
  // the same.
  ScopedOption o("-tca_route", "krylov");
  Problem pr = load("digits.csv", 5);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  driver::RowsCache rows;
  driver::GraphCaches graphs;
  std::vector<int64_t> new_steps;
  for (const char* method : {"tca", "otca"})
    for (double alpha : {0.25, 4.0, 1.0}) {
      driver::FitConfig alone = driver::make_fit_config(method, {{"alpha", alpha, "alpha"}}, 0, 1, 0);
      driver::FitConfig swept = alone;
      swept.rows = &rows;
      swept.cache = &graphs;
      const driver::FitOutcome a = test::fit_problem(pr, X, alone);
      const driver::FitOutcome s = test::fit_problem(pr, X, swept);
      const std::string what = std::string(method) + " alpha " + std::to_string(alpha);
      EXPECT_EQ(a.info.at("krylov_method").get<std::string>(), "cg") << what;
      ASSERT_EQ(s.info.at("krylov_method").get<std::string>(), "block_lanczos") << what;
      new_steps.push_back(s.info.at("lanczos_new_steps").get<int64_t>());
      const Dense Ya = allgather(a.embedding), Ys = allgather(s.embedding);
      EXPECT_LT(test::max_diff_up_to_column_sign(Ya, Ys), 1e-6 * max_abs(Ya)) << what;
      EXPECT_EQ(a.accuracy.unlabeled, s.accuracy.unlabeled) << what;
    }
  // α = 0.25 starts the recurrence, α = 4 grows it, α = 1 and OTCA's three reuse it.
  EXPECT_EQ(new_steps, (std::vector<int64_t>{new_steps[0], new_steps[1], 0, 0, 0, 0}));
  EXPECT_GT(new_steps[0], 0);
  EXPECT_GT(new_steps[1], 0);
  ASSERT_EQ(graphs.by_rows.size(), 1u);
  EXPECT_EQ(graphs.by_rows.begin()->second.quadratures.size(), 1u);
  // Two more graphs (k = 6, 7): a recurrence each, and the oldest is dropped beyond two.
  for (int k : {6, 7}) {
    driver::FitConfig swept = driver::make_fit_config("tca", {{"alpha", 1.0, "alpha"}, {"knn", k, "knn"}}, 0, 1, 0);
    swept.rows = &rows;
    swept.cache = &graphs;
    const driver::FitOutcome s = test::fit_problem(pr, X, swept);
    EXPECT_EQ(s.info.at("krylov_method").get<std::string>(), "block_lanczos") << "knn " << k;
  }
  const methods::GraphCache& gc = graphs.by_rows.begin()->second;
  EXPECT_EQ(gc.quadratures.size(), methods::GraphCache::kMaxQuadratures);
  ASSERT_EQ(gc.quadrature_order.size(), methods::GraphCache::kMaxQuadratures);
  EXPECT_EQ(gc.quadrature_order.back().graph.options.k, 7);
  EXPECT_EQ(gc.quadrature_order.front().graph.options.k, 6);
}
