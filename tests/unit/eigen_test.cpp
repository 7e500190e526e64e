// sym_eigen against serial LAPACK references, at any rank count.
#include <gtest/gtest.h>
#include <petscsys.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/solvers/eigen.hpp"
#include "support.hpp"

using namespace ssdr;
using solvers::EigenPairs;
using solvers::sym_eigen;
using solvers::Which;

namespace {

/// Symmetric d×d with i.i.d. N(0,1) entries (the same on every rank: fixed seed).
Dense random_symmetric(int64_t d, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  Dense A(d, d);
  for (int64_t j = 0; j < d; ++j)
    for (int64_t i = j; i < d; ++i) A(i, j) = A(j, i) = nd(gen);
  return A;
}

/// Q diag(values) Qᵀ with a random orthogonal Q: well separated spectrum, so eigenvectors
/// are determined to rounding level.
Dense with_spectrum(const std::vector<double>& values, unsigned seed) {
  const int64_t d = static_cast<int64_t>(values.size());
  Dense Q = random_symmetric(d, seed);  // any full-rank matrix; QR below
  lapack::orthonormalize(d, d, Q.data(), d);
  Dense QL = Q;
  for (int64_t j = 0; j < d; ++j)
    for (int64_t i = 0; i < d; ++i) QL(i, j) *= values[static_cast<size_t>(j)];
  Dense A(d, d);
  blas::gemm('N', 'T', d, d, d, 1.0, QL.data(), d, Q.data(), d, 0.0, A.data(), d);
  blas::symmetrize('L', d, A.data(), d);
  return A;
}

/// Random SPD: GᵀG/d + I.
Dense random_spd(int64_t d, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  Dense G(d, d);
  for (double& x : G.v) x = nd(gen);
  Dense B(d, d);
  blas::gemm('T', 'N', d, d, d, 1.0 / static_cast<double>(d), G.data(), d, G.data(), d, 0.0,
             B.data(), d);
  blas::symmetrize('L', d, B.data(), d);
  for (int64_t i = 0; i < d; ++i) B(i, i) += 1.0;
  return B;
}

/// LAPACK reference: all eigenpairs, descending (largest) or ascending (smallest), first nev.
EigenPairs lapack_reference(const Dense& A, const Dense* B, int64_t nev, Which which) {
  const int64_t d = A.rows;
  Dense V = A;
  std::vector<double> w(static_cast<size_t>(d));
  if (B) {
    Dense Bc = *B;
    lapack::sygv(d, V.data(), d, Bc.data(), d, w.data());
  } else {
    lapack::syev(d, V.data(), d, w.data());
  }
  EigenPairs r;
  r.vectors = Dense(d, nev);
  for (int64_t k = 0; k < nev; ++k) {
    const int64_t src = which == Which::largest ? d - 1 - k : k;
    r.values.push_back(w[static_cast<size_t>(src)]);
    std::copy(V.col(src), V.col(src) + d, r.vectors.col(k));
  }
  return r;
}

/// Max over ranks of |X − X on rank 0|: zero when the result is replicated exactly.
double max_diff_from_rank0(const Dense& X) {
  Dense X0 = X;
  MPI_Bcast(X0.data(), static_cast<int>(X0.v.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double local = test::max_abs_diff(X, X0), global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return global;
}

/// xᵀBx = 1 for every column of V (B-normalized generalized eigenvectors).
void expect_b_normalized(const Dense& B, const Dense& V) {
  const int64_t d = V.rows, nev = V.cols;
  Dense BV(d, nev);
  blas::gemm('N', 'N', d, nev, d, 1.0, B.data(), d, V.data(), d, 0.0, BV.data(), d);
  for (int64_t k = 0; k < nev; ++k) {
    double q = 0;
    for (int64_t i = 0; i < d; ++i) q += V(i, k) * BV(i, k);
    EXPECT_NEAR(q, 1.0, 1e-13) << "column " << k;
  }
}

using test::ScopedOption;

}  // namespace

TEST(SymEigen, MatchesLapackOnARandomSymmetricMatrix) {
  const int64_t d = 40;
  const Dense A = random_symmetric(d, 11);
  for (Which which : {Which::largest, Which::smallest}) {
    // 1 and 7 of 40 pairs: dsyevr's subset; 13 and 40 (more than d/4): dsyevd's whole
    // decomposition, of which the 13 are sliced from either end.
    for (int64_t nev : {int64_t{1}, int64_t{7}, int64_t{13}, d}) {
      const EigenPairs got = sym_eigen(A, nullptr, nev, which, "x_", MPI_COMM_WORLD);
      const EigenPairs ref = lapack_reference(A, nullptr, nev, which);
      ASSERT_EQ(got.values.size(), static_cast<size_t>(nev));
      ASSERT_EQ(got.vectors.rows, d);
      ASSERT_EQ(got.vectors.cols, nev);
      for (int64_t k = 0; k < nev; ++k)
        EXPECT_NEAR(got.values[static_cast<size_t>(k)], ref.values[static_cast<size_t>(k)], 1e-10)
            << "eigenvalue " << k;
      EXPECT_LT(test::max_diff_up_to_column_sign(got.vectors, ref.vectors), 1e-9);
      for (int64_t k = 0; k < nev; ++k) {
        double n2 = 0;
        for (int64_t i = 0; i < d; ++i) n2 += got.vectors(i, k) * got.vectors(i, k);
        EXPECT_NEAR(n2, 1.0, 1e-13);
      }
      EXPECT_EQ(max_diff_from_rank0(got.vectors), 0.0);
    }
  }
}

TEST(SymEigen, MatchesLapackSygvOnAGeneralizedProblem) {
  const int64_t d = 30;
  const Dense A = random_symmetric(d, 21);
  const Dense B = random_spd(d, 22);
  for (Which which : {Which::largest, Which::smallest}) {
    const int64_t nev = which == Which::largest ? d : 4;
    const EigenPairs got = sym_eigen(A, &B, nev, which, "x_", MPI_COMM_WORLD);
    const EigenPairs ref = lapack_reference(A, &B, nev, which);
    for (int64_t k = 0; k < nev; ++k)
      EXPECT_NEAR(got.values[static_cast<size_t>(k)], ref.values[static_cast<size_t>(k)], 1e-10);
    EXPECT_LT(test::max_diff_up_to_column_sign(got.vectors, ref.vectors), 1e-9);
    expect_b_normalized(B, got.vectors);
    EXPECT_EQ(max_diff_from_rank0(got.vectors), 0.0);
  }
}

TEST(SymEigen, SignsAreFixedSoResultsAgreeAcrossRankCounts) {
  const int64_t d = 24;
  std::vector<double> spectrum;
  for (int64_t i = 0; i < d; ++i) spectrum.push_back(static_cast<double>(i) - 7.5);
  const Dense A = with_spectrum(spectrum, 31);
  const EigenPairs got = sym_eigen(A, nullptr, d, Which::largest, "x_", MPI_COMM_WORLD);
  EigenPairs ref = lapack_reference(A, nullptr, d, Which::largest);
  canonicalize_signs(ref.vectors);  // the contract's sign rule applied to the reference
  // The sign rule is only well-defined when the largest entry stands out; make sure the
  // test matrix is not a borderline case.
  for (int64_t k = 0; k < d; ++k) {
    std::vector<double> mags;
    for (int64_t i = 0; i < d; ++i) mags.push_back(std::fabs(ref.vectors(i, k)));
    std::sort(mags.rbegin(), mags.rend());
    ASSERT_GT(mags[0] - mags[1], 1e-6) << "column " << k;
  }
  // Serial LAPACK (this is what a 1-rank run would give up to rounding) vs this rank count:
  // no sign flips allowed.
  EXPECT_LT(test::max_abs_diff(got.vectors, ref.vectors), 1e-12);
  for (int64_t k = 0; k < d; ++k)
    EXPECT_NEAR(got.values[static_cast<size_t>(k)], spectrum[static_cast<size_t>(d - 1 - k)],
                1e-12);
  EXPECT_EQ(max_diff_from_rank0(got.vectors), 0.0);
}

TEST(SymEigen, TiesInTheLargestMagnitudeMakeTheFirstSuchEntryPositive) {
  // Diagonal matrix with eigenvectors ±(e0 + e1)/√2 style ties: A = [[1,1],[1,1]] ⊕ [3].
  Dense A(3, 3);
  A(0, 0) = A(0, 1) = A(1, 0) = A(1, 1) = 1.0;
  A(2, 2) = 3.0;
  const EigenPairs got = sym_eigen(A, nullptr, 3, Which::largest, "x_", MPI_COMM_WORLD);
  ASSERT_EQ(got.values.size(), 3u);
  EXPECT_NEAR(got.values[0], 3.0, 1e-13);
  EXPECT_NEAR(got.values[1], 2.0, 1e-13);
  EXPECT_NEAR(got.values[2], 0.0, 1e-13);
  const double s = 1.0 / std::sqrt(2.0);
  EXPECT_NEAR(got.vectors(2, 0), 1.0, 1e-13);
  EXPECT_NEAR(got.vectors(0, 1), s, 1e-13);
  EXPECT_NEAR(got.vectors(1, 1), s, 1e-13);
  // (1, −1)/√2: both magnitudes are equal up to rounding; whichever entry wins is positive.
  const double a = got.vectors(0, 2), b = got.vectors(1, 2);
  EXPECT_NEAR(std::fabs(a), s, 1e-13);
  EXPECT_NEAR(a, -b, 1e-13);
  EXPECT_GT(std::fabs(a) >= std::fabs(b) ? a : b, 0.0);
}

TEST(SymEigen, OptionsPrefixSelectsKrylovSchurForAStandardProblem) {
  const int64_t d = 60;
  const Dense A = random_symmetric(d, 41);
  const EigenPairs ref = lapack_reference(A, nullptr, 5, Which::largest);
  {
    ScopedOption type("-x_eps_type", "krylovschur");
    ScopedOption tol("-x_eps_tol", "1e-13");
    const EigenPairs got = sym_eigen(A, nullptr, 5, Which::largest, "x_", MPI_COMM_WORLD);
    for (int64_t k = 0; k < 5; ++k)
      EXPECT_NEAR(got.values[static_cast<size_t>(k)], ref.values[static_cast<size_t>(k)], 1e-10);
    EXPECT_LT(test::max_diff_up_to_column_sign(got.vectors, ref.vectors), 1e-8);
    EXPECT_EQ(max_diff_from_rank0(got.vectors), 0.0);
  }
  {
    // Proof that the option is honoured: one Krylov-Schur restart with a tiny basis cannot
    // converge 20 eigenpairs (the dense default would), so the solver reports the prefix.
    ScopedOption type("-x_eps_type", "krylovschur");
    ScopedOption ncv("-x_eps_ncv", "21");
    ScopedOption it("-x_eps_max_it", "1");
    ScopedOption tol("-x_eps_tol", "1e-14");
    try {
      sym_eigen(A, nullptr, 20, Which::largest, "x_", MPI_COMM_WORLD);
      FAIL() << "expected a convergence error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'x_'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("converged"), std::string::npos) << e.what();
    }
  }
  // A different prefix is not affected by the x_ options (cleared above, set again here).
  {
    ScopedOption type("-x_eps_type", "krylovschur");
    ScopedOption ncv("-x_eps_ncv", "21");
    ScopedOption it("-x_eps_max_it", "1");
    EXPECT_NO_THROW(sym_eigen(A, nullptr, 20, Which::largest, "y_", MPI_COMM_WORLD));
  }
}

TEST(SymEigen, OptionsSelectOtherSolversForAGeneralizedProblem) {
  const int64_t d = 20;
  const Dense A = random_symmetric(d, 51);
  const Dense B = random_spd(d, 52);
  const EigenPairs ref = lapack_reference(A, &B, 4, Which::largest);
  for (const char* type : {"lapack", "krylovschur"}) {
    ScopedOption t("-x_eps_type", type);
    ScopedOption tol("-x_eps_tol", "1e-13");
    const EigenPairs got = sym_eigen(A, &B, 4, Which::largest, "x_", MPI_COMM_WORLD);
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_NEAR(got.values[static_cast<size_t>(k)], ref.values[static_cast<size_t>(k)], 1e-10)
          << type;
    EXPECT_LT(test::max_diff_up_to_column_sign(got.vectors, ref.vectors), 1e-8) << type;
  }
}

namespace {

/// F (d×r) with orthogonal columns of lengths √λ_k: F Fᵀ has the nonzero eigenvalues λ_k.
Dense low_rank_factor(int64_t d, const std::vector<double>& lambda, unsigned seed) {
  const int64_t r = static_cast<int64_t>(lambda.size());
  Dense F = random_symmetric(d, seed);  // full rank; its first r orthonormalized columns
  lapack::orthonormalize(d, d, F.data(), d);
  Dense out(d, r);
  for (int64_t k = 0; k < r; ++k)
    for (int64_t i = 0; i < d; ++i) out(i, k) = F(i, k) * std::sqrt(lambda[static_cast<size_t>(k)]);
  return out;
}

Dense outer(const Dense& F) {
  const int64_t d = F.rows;
  Dense A(d, d);
  blas::gemm('N', 'T', d, d, F.cols, 1.0, F.data(), d, F.data(), d, 0.0, A.data(), d);
  blas::symmetrize('L', d, A.data(), d);
  return A;
}

bool same_bits(const EigenPairs& a, const EigenPairs& b) {
  return a.values == b.values && a.vectors.v == b.vectors.v;
}

}  // namespace

TEST(LowRankEigen, GivesTheFullProblemsLargestPairsWithoutItsEigenSolve) {
  // A = F Fᵀ of rank 5 in d = 40 against B SPD (κ(B) ≈ 5). Both routes solve the same pencil
  // backward stably, so values differ by O(d ε κ(B) ‖A‖) ≈ 10⁻¹³ and vectors by that over
  // the relative gap (≥ 0.25 here between the four kept eigenvalues and the rest of the
  // pencil's spectrum, 0 included): 10⁻¹⁰ and 10⁻⁹ leave three orders of margin.
  const int64_t d = 40, nev = 4;
  const Dense F = low_rank_factor(d, {9.0, 6.0, 4.0, 2.5, 1.0}, 71);
  const Dense B = random_spd(d, 72);
  lapack::reset_work_counters();
  const EigenPairs got = solvers::largest_low_rank_eigen(F, B, nev, "x_", MPI_COMM_WORLD);
  // The route taken: no eigen-solve of order d (sym_eigen's reduction would run dsyevr).
  EXPECT_EQ(lapack::work_counters().eigen.count({d, nev}), 0u);
  const EigenPairs ref = sym_eigen(outer(F), &B, nev, Which::largest, "x_", MPI_COMM_WORLD);
  ASSERT_EQ(got.values.size(), static_cast<size_t>(nev));
  for (int64_t k = 0; k < nev; ++k)
    EXPECT_NEAR(got.values[static_cast<size_t>(k)], ref.values[static_cast<size_t>(k)], 1e-10 * ref.values[0]);
  EXPECT_LT(test::max_diff_up_to_column_sign(got.vectors, ref.vectors), 1e-9);
  // The same convention: xᵀBx = 1 and the entry of largest magnitude positive, so the
  // columns agree with sym_eigen's without a sign flip, and the same bits on every rank.
  expect_b_normalized(B, got.vectors);
  for (int64_t k = 0; k < nev; ++k) {
    double diff = 0;
    for (int64_t i = 0; i < d; ++i) diff = std::max(diff, std::fabs(got.vectors(i, k) - ref.vectors(i, k)));
    EXPECT_LT(diff, 1e-9) << "column " << k << " has the other sign";
  }
  EXPECT_EQ(max_diff_from_rank0(got.vectors), 0.0);
}

TEST(LowRankEigen, HandsRankDeficientOrTunedProblemsToSymEigen) {
  const int64_t d = 30;
  const Dense B = random_spd(d, 82);
  // λ₄ = 0 (rank 3) or 10⁻¹⁴λ₁ (below the d × d solve's rounding level, 10³·d·ε·λ₁ ≈
  // 7·10⁻¹²λ₁ here): its vector is not determined by F, so sym_eigen decides it, as before.
  for (double tiny : {0.0, 5e-14}) {
    const Dense F = low_rank_factor(d, {5.0, 3.0, 2.0, tiny}, 81);
    const EigenPairs got = solvers::largest_low_rank_eigen(F, B, 4, "x_", MPI_COMM_WORLD);
    EXPECT_TRUE(same_bits(got, sym_eigen(outer(F), &B, 4, Which::largest, "x_", MPI_COMM_WORLD))) << tiny;
  }
  {
    // 10⁻⁸λ₁ is well above it: the rank-4 route (no eigen-solve of order d), same pairs.
    const Dense F = low_rank_factor(d, {5.0, 3.0, 2.0, 5e-8}, 86);
    lapack::reset_work_counters();
    const EigenPairs got = solvers::largest_low_rank_eigen(F, B, 4, "x_", MPI_COMM_WORLD);
    EXPECT_EQ(lapack::work_counters().eigen.count({d, 4}), 0u);
    const EigenPairs ref = sym_eigen(outer(F), &B, 4, Which::largest, "x_", MPI_COMM_WORLD);
    EXPECT_NEAR(got.values[3], ref.values[3], 1e-10 * ref.values[0]);
  }
  {
    // The caller's A = F Fᵀ is the one the d × d solve gets.
    const Dense F = low_rank_factor(d, {5.0, 3.0, 2.0, 0.0}, 87);
    const Dense A = outer(F);
    const EigenPairs got = solvers::largest_low_rank_eigen(F, B, 4, "x_", MPI_COMM_WORLD, &A);
    EXPECT_TRUE(same_bits(got, sym_eigen(A, &B, 4, Which::largest, "x_", MPI_COMM_WORLD)));
  }
  {
    // An eigen-solver asked for on the prefix: it is used.
    const Dense F = low_rank_factor(d, {5.0, 3.0, 2.0, 1.0}, 83);
    ScopedOption t("-x_eps_type", "lapack");
    const EigenPairs got = solvers::largest_low_rank_eigen(F, B, 2, "x_", MPI_COMM_WORLD);
    EXPECT_TRUE(same_bits(got, sym_eigen(outer(F), &B, 2, Which::largest, "x_", MPI_COMM_WORLD)));
  }
  const Dense F = low_rank_factor(d, {5.0, 3.0}, 84);
  EXPECT_THROW(solvers::largest_low_rank_eigen(F, B, 3, "x_", MPI_COMM_WORLD), Error);  // nev > r
  EXPECT_THROW(solvers::largest_low_rank_eigen(F, B, 0, "x_", MPI_COMM_WORLD), Error);
  EXPECT_THROW(solvers::largest_low_rank_eigen(F, random_spd(d + 1, 85), 1, "x_", MPI_COMM_WORLD), Error);
  Dense notpd = B;
  notpd(0, 0) = -1.0;
  EXPECT_THROW(solvers::largest_low_rank_eigen(F, notpd, 1, "x_", MPI_COMM_WORLD), Error);
}

TEST(SymEigen, RejectsBadShapesAndCounts) {
  const Dense A = random_symmetric(5, 61);
  const Dense R(5, 4);
  const Dense B4 = random_spd(4, 62);
  EXPECT_THROW(sym_eigen(R, nullptr, 1, Which::largest, "x_", MPI_COMM_WORLD), Error);
  EXPECT_THROW(sym_eigen(A, &B4, 1, Which::largest, "x_", MPI_COMM_WORLD), Error);
  EXPECT_THROW(sym_eigen(A, nullptr, 0, Which::largest, "x_", MPI_COMM_WORLD), Error);
  EXPECT_THROW(sym_eigen(A, nullptr, 6, Which::smallest, "x_", MPI_COMM_WORLD), Error);
  EXPECT_NO_THROW(sym_eigen(A, nullptr, 5, Which::smallest, "x_", MPI_COMM_WORLD));
}

// Timing of a 784×784 full solve (MNIST-sized scatter matrix), not part of the suite:
//   ssdr_tests --gtest_also_run_disabled_tests --gtest_filter='SymEigen.DISABLED_*'
TEST(SymEigen, DISABLED_TimesA784FullSolve) {
  const int64_t d = 784;
  const Dense A = random_symmetric(d, 71);
  const Dense B = random_spd(d, 72);
  for (const char* type : {"scalapack", "lapack", "krylovschur"}) {
    for (bool gen : {false, true}) {
      ScopedOption t("-t_eps_type", type);
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      const EigenPairs got = sym_eigen(A, gen ? &B : nullptr, d, Which::largest, "t_",
                                       MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      const double t1 = MPI_Wtime();
      const EigenPairs ref = lapack_reference(A, gen ? &B : nullptr, d, Which::largest);
      const double t2 = MPI_Wtime();
      double err = 0;
      for (int64_t k = 0; k < d; ++k)
        err = std::max(err, std::fabs(got.values[static_cast<size_t>(k)] -
                                      ref.values[static_cast<size_t>(k)]));
      if (test::rank() == 0)
        std::printf("784x784 %s %-11s ranks=%d: %.3f s (max |dλ| = %.1e; serial dsyevd/dsygvd %.3f s)\n",
                    gen ? "GHEP" : "HEP ", type, test::size(), t1 - t0, err, t2 - t1);
    }
  }
}
