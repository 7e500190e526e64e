// solvers::solve_columns: the lockstep CG route against a dense Cholesky reference and against
// the KSP route, on I + αL of a small kNN graph, and the choice between the two routes.
#include <gtest/gtest.h>
#include <petscmat.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/solvers/sparse_solve.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

constexpr double kAlpha = 4.0;
constexpr int kIsolated = 3;  // the last kIsolated vertices have no edges

/// A replicated n×n SPD system M = I + αL of a symmetrized 5-NN heat-kernel graph on random
/// points of the plane (the same on every rank), with kIsolated isolated vertices.
struct System {
  Dense M;              ///< I + αL, column-major
  double max_degree = 0;
};

System make_system(int64_t n, double alpha) {
  std::mt19937_64 rng(20261128);
  std::normal_distribution<double> g;
  std::vector<double> px(static_cast<size_t>(n)), py(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    px[static_cast<size_t>(i)] = g(rng);
    py[static_cast<size_t>(i)] = g(rng);
  }
  const int k = 5;
  const int64_t linked = n - kIsolated;
  Dense A(n, n);
  for (int64_t i = 0; i < linked; ++i) {
    std::vector<std::pair<double, int64_t>> d;
    for (int64_t j = 0; j < linked; ++j)
      if (j != i) {
        const double dx = px[static_cast<size_t>(i)] - px[static_cast<size_t>(j)];
        const double dy = py[static_cast<size_t>(i)] - py[static_cast<size_t>(j)];
        d.push_back({dx * dx + dy * dy, j});
      }
    std::partial_sort(d.begin(), d.begin() + k, d.end());
    for (int t = 0; t < k; ++t) {
      const double w = std::exp(-d[static_cast<size_t>(t)].first / 0.1);
      const int64_t j = d[static_cast<size_t>(t)].second;
      A(i, j) = std::max(A(i, j), w);
      A(j, i) = A(i, j);
    }
  }
  System s;
  s.M = Dense(n, n);
  for (int64_t i = 0; i < n; ++i) {
    double deg = 0;
    for (int64_t j = 0; j < n; ++j) deg += A(i, j);
    s.max_degree = std::max(s.max_degree, deg);
    for (int64_t j = 0; j < n; ++j) s.M(i, j) = -alpha * A(i, j);
    s.M(i, i) = 1.0 + alpha * deg;
  }
  return s;
}

/// The replicated M as a PETSc AIJ matrix with the block row layout (R's, ref::distribute).
Owned<Mat> to_aij(const Dense& M, MPI_Comm comm) {
  const Layout l = block_layout(M.rows, comm);
  Owned<Mat> A;
  EXPECT_EQ(MatCreateAIJ(comm, static_cast<PetscInt>(l.n_local), static_cast<PetscInt>(l.n_local),
                         static_cast<PetscInt>(M.rows), static_cast<PetscInt>(M.cols), 12, nullptr, 12, nullptr,
                         A.out()),
            0);
  for (int64_t i = l.start; i < l.start + l.n_local; ++i)
    for (int64_t j = 0; j < M.cols; ++j)
      if (M(i, j) != 0.0 || i == j) {
        const PetscInt r = static_cast<PetscInt>(i), c = static_cast<PetscInt>(j);
        const PetscScalar v = M(i, j);
        EXPECT_EQ(MatSetValues(A, 1, &r, 1, &c, &v, INSERT_VALUES), 0);
      }
  EXPECT_EQ(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY), 0);
  EXPECT_EQ(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY), 0);
  return A;
}

/// Ten right-hand sides: 0 is zero (converged before the first iteration), 1..kIsolated are
/// multiples of an isolated vertex's unit vector (M's row there is the identity's, so CG
/// converges in one iteration), then the constant vector (M1 = 1) and random columns of
/// mixed scales.
Dense right_hand_sides(int64_t n) {
  const int64_t r = 10;
  Dense B(n, r);
  for (int t = 1; t <= kIsolated; ++t) B(n - t, t) = 2.5 * t;
  for (int64_t i = 0; i < n; ++i) B(i, kIsolated + 1) = 1.0;
  std::mt19937_64 rng(48);
  std::normal_distribution<double> g;
  for (int64_t j = kIsolated + 2; j < r; ++j)
    for (int64_t i = 0; i < n; ++i) B(i, j) = g(rng) * std::pow(10.0, static_cast<double>(j - 7));
  return B;
}

/// The system of make_system(n, kAlpha) as an AIJ matrix on MPI_COMM_WORLD, with
/// right_hand_sides(n) gathered (B) and distributed (R).
struct Problem {
  explicit Problem(int64_t n)
      : sys(make_system(n, kAlpha)), M(to_aij(sys.M, MPI_COMM_WORLD)), B(right_hand_sides(n)),
        R(ref::distribute(B, MPI_COMM_WORLD)) {}
  System sys;
  Owned<Mat> M;
  Dense B;
  DistMatrix R;
};

Dense dense_solve(Dense M, Dense B) {
  lapack::posv(M.rows, B.cols, M.data(), M.rows, B.data(), B.rows);
  return B;
}

double column_norm(const Dense& A, int64_t j) {
  double s = 0;
  for (int64_t i = 0; i < A.rows; ++i) s += A(i, j) * A(i, j);
  return std::sqrt(s);
}

double column_diff(const Dense& A, const Dense& B, int64_t j) {
  double s = 0;
  for (int64_t i = 0; i < A.rows; ++i) s += (A(i, j) - B(i, j)) * (A(i, j) - B(i, j));
  return std::sqrt(s);
}

/// The bound on ‖x̂_j − x*_j‖₂ of a CG solution stopped at ‖D⁻¹r‖ ≤ rtol‖D⁻¹b‖ (D = M's
/// diagonal), for M = I + αL: M's eigenvalues lie in [1, 1 + 2α·d_max] (L is PSD; Gershgorin
/// bounds L's by 2·d_max), so ‖M⁻¹‖ ≤ 1 and κ ≤ 1 + 2α·d_max; D lies between I and
/// (1 + α·d_max)I. The error is M⁻¹ times the true residual r_true:
///   ‖e‖ ≤ ‖M⁻¹‖·‖D‖·‖D⁻¹r_true‖ ≤ (1 + α·d_max)·(rtol·‖D⁻¹b‖ + ‖D⁻¹(r_true − r)‖),
/// with ‖D⁻¹b‖ ≤ ‖b‖, and the gap between CG's recursive and true residuals at most of order
/// eps·(iterations)·(1 + κ)·‖b‖ (each iteration's rounding, ‖M‖‖x_k‖ ≤ κ‖b‖), taken as
/// 2·n·eps·κ·‖b‖ with n ≥ the iterations. The dense Cholesky reference adds n·eps·κ·‖x*‖ ≤
/// n·eps·κ·‖b‖ (backward stable; ‖x*‖ ≤ ‖b‖).
double error_bound(double rtol, double alpha, double max_degree, int64_t n, double b_norm) {
  const double eps = std::numeric_limits<double>::epsilon();
  const double kappa = 1.0 + 2.0 * alpha * max_degree;
  const double nn = static_cast<double>(n);
  return ((1.0 + alpha * max_degree) * (rtol + 2.0 * nn * eps * kappa) + nn * eps * kappa) * b_norm;
}

}  // namespace

TEST(SparseSolve, LockstepRouteAgreesWithTheDenseSolutionAndTheKspRoute) {
  const int64_t n = 300;
  const Problem problem(n);
  const auto& [sys, M, B, R] = problem;
  const Dense ref = dense_solve(sys.M, B);

  solvers::SparseSolveOptions lock;
  lock.prefix = "sparse_test_";
  ASSERT_EQ(solvers::column_route(lock), solvers::SparseSolveRoute::lockstep);
  const solvers::SparseSolveResult a = solvers::solve_columns(M, R, lock);
  EXPECT_EQ(a.route, solvers::SparseSolveRoute::lockstep);
  // The same solver by the KSP route: any -<prefix>ksp_* option selects it (this one
  // restates the default).
  solvers::SparseSolveResult b;
  {
    test::ScopedOption opt("-sparse_test_ksp_type", "cg");
    ASSERT_EQ(solvers::column_route(lock), solvers::SparseSolveRoute::ksp);
    b = solvers::solve_columns(M, R, lock);
  }
  EXPECT_EQ(b.route, solvers::SparseSolveRoute::ksp);

  const Dense za = allgather(a.Z), zb = allgather(b.Z);
  ASSERT_EQ(a.iterations.size(), static_cast<size_t>(B.cols));
  ASSERT_EQ(b.iterations.size(), static_cast<size_t>(B.cols));
  for (int64_t j = 0; j < B.cols; ++j) {
    const double bound = error_bound(lock.rtol, kAlpha, sys.max_degree, n, column_norm(B, j));
    EXPECT_LE(column_diff(za, ref, j), bound) << "column " << j;
    EXPECT_LE(column_diff(zb, ref, j), bound) << "column " << j;
    // Both routes meet the same bound from the exact solution (without the reference's share).
    EXPECT_LE(column_diff(za, zb, j), 2.0 * bound) << "column " << j;
  }
  // The zero column stops before the first iteration, the isolated vertices' columns after
  // one, on both routes. Elsewhere the routes run the same iteration in another rounding:
  // the residual falls by a large factor per iteration, so their stopping tests can
  // disagree at most on the last one.
  EXPECT_EQ(a.iterations[0], 0);
  EXPECT_EQ(b.iterations[0], 0);
  for (int t = 1; t <= kIsolated; ++t) {
    EXPECT_EQ(a.iterations[static_cast<size_t>(t)], 1) << "column " << t;
    EXPECT_EQ(b.iterations[static_cast<size_t>(t)], 1) << "column " << t;
  }
  for (int64_t j = kIsolated + 1; j < B.cols; ++j) {
    const size_t u = static_cast<size_t>(j);
    EXPECT_GT(a.iterations[u], 1) << "column " << j;
    EXPECT_LE(std::abs(a.iterations[u] - b.iterations[u]), 1) << "column " << j;
  }
  // The constant vector: M1 = 1.
  for (int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(za(i, kIsolated + 1), 1.0, error_bound(lock.rtol, kAlpha, sys.max_degree, n, std::sqrt(double(n))));
}

TEST(SparseSolve, LockstepRouteInBatchesWithinItsMemoryGivesEachColumnItsOwnIterations) {
  // A budget of one column per batch (the least memory_mib allows: every batch holds at
  // least one column) against one batch of all columns. The columns of the lockstep CG are
  // independent, so each column runs the same iteration in both; only the product's
  // rounding may differ, so the iterations agree within the last one (as in the test
  // above) and the solutions within the error bound of each.
  const int64_t n = 200;
  const Problem problem(n);
  const auto& [sys, M, B, R] = problem;
  const Dense ref = dense_solve(sys.M, B);
  solvers::SparseSolveOptions one, batched;
  one.prefix = batched.prefix = "sparse_test_";
  batched.memory_mib = 1e-9;
  const solvers::SparseSolveResult a = solvers::solve_columns(M, R, one), b = solvers::solve_columns(M, R, batched);
  EXPECT_EQ(b.route, solvers::SparseSolveRoute::lockstep);
  ASSERT_EQ(b.iterations.size(), static_cast<size_t>(B.cols));
  const Dense za = allgather(a.Z), zb = allgather(b.Z);
  for (int64_t j = 0; j < B.cols; ++j) {
    const double bound = error_bound(one.rtol, kAlpha, sys.max_degree, n, column_norm(B, j));
    EXPECT_LE(column_diff(zb, ref, j), bound) << "column " << j;
    EXPECT_LE(column_diff(za, zb, j), 2.0 * bound) << "column " << j;
    EXPECT_LE(std::abs(a.iterations[static_cast<size_t>(j)] - b.iterations[static_cast<size_t>(j)]), 1) << "column " << j;
  }
  EXPECT_EQ(b.iterations[0], 0);  // the zero column
}

TEST(SparseSolve, LockstepRouteSolvesColumnsNear1e155AsTheirUnscaledSelves) {
  // Columns 2^±520 times another column: ‖D⁻¹b‖² alone would underflow to 0 (a "converged"
  // zero solution) or overflow to inf. The route scales each column by a power of two, which
  // every step of CG carries exactly, so the solutions are the unscaled column's bits times
  // 2^±520 and the iterations the same.
  const int64_t n = 150;
  const System sys = make_system(n, kAlpha);
  const Owned<Mat> M = to_aij(sys.M, MPI_COMM_WORLD);
  const Dense B0 = right_hand_sides(n);
  const int64_t j0 = B0.cols - 1;  // a column that iterates
  Dense B(n, 3);
  for (int64_t i = 0; i < n; ++i) {
    B(i, 0) = B0(i, j0);
    B(i, 1) = std::ldexp(B0(i, j0), -520);
    B(i, 2) = std::ldexp(B0(i, j0), 520);
  }
  solvers::SparseSolveOptions o;
  o.prefix = "sparse_test_";
  const solvers::SparseSolveResult z = solvers::solve_columns(M, ref::distribute(B, MPI_COMM_WORLD), o);
  ASSERT_EQ(z.route, solvers::SparseSolveRoute::lockstep);
  EXPECT_GT(z.iterations[0], 1);
  EXPECT_EQ(z.iterations[1], z.iterations[0]);
  EXPECT_EQ(z.iterations[2], z.iterations[0]);
  const Dense Z = allgather(z.Z);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(Z(i, 1), std::ldexp(Z(i, 0), -520)) << "row " << i;
    EXPECT_EQ(Z(i, 2), std::ldexp(Z(i, 0), 520)) << "row " << i;
  }
}

TEST(SparseSolve, UserOptionsForThePrefixOrAnotherKspTypeSelectTheKspRoute) {
  const int64_t n = 120;
  const Problem problem(n);
  const auto& [sys, M, B, R] = problem;
  solvers::SparseSolveOptions o;
  o.prefix = "sparse_test_";
  EXPECT_EQ(solvers::column_route(o), solvers::SparseSolveRoute::lockstep);
  {
    // Another solver's options leave this one's route alone.
    test::ScopedOption other("-other_test_ksp_type", "gmres");
    EXPECT_EQ(solvers::column_route(o), solvers::SparseSolveRoute::lockstep);
  }
  {
    // The user's -<prefix>ksp_max_it reaches PETSc's KSP: two iterations are too few for
    // the first random column (the zero and isolated ones need at most one).
    test::ScopedOption opt("-sparse_test_ksp_max_it", "2");
    EXPECT_EQ(solvers::column_route(o), solvers::SparseSolveRoute::ksp);
    const std::string e = test::error_of([&] { solvers::solve_columns(M, R, o); });
    EXPECT_NE(e.find("-sparse_test_"), std::string::npos) << e;
    EXPECT_NE(e.find("did not converge"), std::string::npos) << e;
    EXPECT_NE(e.find("right-hand side " + std::to_string(kIsolated + 1)), std::string::npos) << e;
  }
  {
    // A -<prefix>pc_* option, in any case (PETSc's option names ignore it).
    test::ScopedOption opt("-SPARSE_TEST_PC_TYPE", "none");
    EXPECT_EQ(solvers::column_route(o), solvers::SparseSolveRoute::ksp);
    const solvers::SparseSolveResult z = solvers::solve_columns(M, R, o);
    EXPECT_EQ(z.route, solvers::SparseSolveRoute::ksp);
  }
  {
    solvers::SparseSolveOptions g = o;
    g.ksp_type = "gmres";
    EXPECT_EQ(solvers::column_route(g), solvers::SparseSolveRoute::ksp);
    const solvers::SparseSolveResult z = solvers::solve_columns(M, R, g);
    EXPECT_EQ(z.route, solvers::SparseSolveRoute::ksp);
    EXPECT_STREQ(solvers::route_name(z.route), "ksp");
  }
  EXPECT_EQ(solvers::solve_columns(M, R, o).route, solvers::SparseSolveRoute::lockstep);
}

TEST(SparseSolve, LockstepRouteRefusesABreakdownNamingThePrefixAndTheColumn) {
  // An isolated vertex whose diagonal is −1: the column of its unit vector has pᵀMp < 0.
  const int64_t n = 100;
  System sys = make_system(n, kAlpha);
  sys.M(n - 1, n - 1) = -1.0;
  const Owned<Mat> M = to_aij(sys.M, MPI_COMM_WORLD);
  // Random columns that do not touch that vertex, and its unit vector as column 5.
  Dense B(n, 7);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g;
  for (int64_t j = 0; j < B.cols; ++j)
    for (int64_t i = 0; i < n - 1; ++i) B(i, j) = j == 5 ? 0.0 : g(rng);
  B(n - 1, 5) = 1.0;
  const DistMatrix R = ref::distribute(B, MPI_COMM_WORLD);
  solvers::SparseSolveOptions o;
  o.prefix = "sparse_test_";
  const std::string e = test::error_of([&] { solvers::solve_columns(M, R, o); });
  EXPECT_NE(e.find("-sparse_test_"), std::string::npos) << e;
  EXPECT_NE(e.find("right-hand side 5"), std::string::npos) << e;
  EXPECT_NE(e.find("INDEFINITE"), std::string::npos) << e;
}

TEST(SparseSolve, LockstepRouteSolvesNoColumnsAndRefusesAnotherLayout) {
  const int64_t n = 50;
  const System sys = make_system(n, kAlpha);
  const Owned<Mat> M = to_aij(sys.M, MPI_COMM_WORLD);
  solvers::SparseSolveOptions o;
  o.prefix = "sparse_test_";
  const solvers::SparseSolveResult z = solvers::solve_columns(M, ref::distribute(Dense(n, 0), MPI_COMM_WORLD), o);
  EXPECT_TRUE(z.iterations.empty());
  EXPECT_EQ(z.Z.cols, 0);
  if (test::size() > 1) {
    // Every row on rank 0: another layout than M's block rows on more than one rank.
    const DistMatrix R = make_dist_local(MPI_COMM_WORLD, test::rank() == 0 ? n : 0, 2);
    const std::string e = test::error_of([&] { solvers::solve_columns(M, R, o); });
    EXPECT_NE(e.find("local rows"), std::string::npos) << e;
  }
}
