// Exact distributed kNN search and the symmetrized kNN graph, against a serial brute force
// that every rank computes from the replicated CSV (soda-nie2009 eq. (24), (42), (43)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/petsc.hpp"
#include "graph/knn_internal.hpp"
#include "ssdr/graph/knn.hpp"
#include "support.hpp"

using namespace ssdr;
using namespace ssdr::graph;

namespace {

/// Block-distributes the rows of a replicated Dense over `comm`.
DistMatrix distribute(const Dense& X, MPI_Comm comm = MPI_COMM_WORLD) {
  DistMatrix D = make_dist(comm, X.rows, X.cols);
  for (int64_t i = 0; i < D.n_local; ++i)
    for (int64_t t = 0; t < X.cols; ++t) D(i, t) = X(D.row_start + i, t);
  return D;
}

/// Squared distance by the library's summation convention (test::dist2_convention).
double dist2(const Dense& X, int64_t i, int64_t j) { return test::dist2_convention(X, i, j); }

/// Serial brute force: all (dist2, j) sorted, first k.
struct Reference {
  int k = 0;
  std::vector<int64_t> index;  // n·k
  std::vector<double> d2;      // n·k
  std::vector<std::map<int64_t, double>> rows;  // symmetrized graph: j → dist2
  int64_t edges = 0;
  double mean = 0;
};

Reference brute_force(const Dense& X, int k) {
  const int64_t n = X.rows;
  Reference R;
  R.k = k;
  R.index.resize(static_cast<size_t>(n * k));
  R.d2.resize(static_cast<size_t>(n * k));
  R.rows.resize(static_cast<size_t>(n));
  std::vector<std::pair<double, int64_t>> all;
  for (int64_t i = 0; i < n; ++i) {
    all.clear();
    for (int64_t j = 0; j < n; ++j)
      if (j != i) all.emplace_back(dist2(X, i, j), j);
    std::partial_sort(all.begin(), all.begin() + k, all.end());
    for (int m = 0; m < k; ++m) {
      R.d2[i * k + m] = all[m].first;
      R.index[i * k + m] = all[m].second;
      R.rows[i][all[m].second] = all[m].first;
      R.rows[all[m].second][i] = all[m].first;
    }
  }
  double sum = 0;
  int64_t entries = 0;
  for (const auto& r : R.rows)
    for (const auto& [j, d] : r) {
      sum += d;
      ++entries;
    }
  R.edges = entries / 2;
  R.mean = sum / static_cast<double>(entries);
  return R;
}

/// Every rank's kNN lists concatenated in global row order (on every rank of comm).
void gather_lists(const KnnLists& L, MPI_Comm comm, std::vector<int64_t>& index,
                  std::vector<double>& d2) {
  index = allgatherv(L.index.data(), L.n_local * L.k, comm);
  d2 = allgatherv(L.dist2.data(), L.n_local * L.k, comm);
}

/// The rows of a parallel AIJ matrix on every rank: rows[i] = {col → value}.
std::vector<std::map<int64_t, double>> gather_matrix(Mat A) {
  MPI_Comm comm;
  PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm);
  PetscInt N = 0, M = 0, r0 = 0, r1 = 0;
  MatGetSize(A, &N, &M);
  MatGetOwnershipRange(A, &r0, &r1);
  std::vector<int64_t> meta;  // per local row: its length
  std::vector<int64_t> cols;
  std::vector<double> vals;
  for (PetscInt r = r0; r < r1; ++r) {
    PetscInt nc = 0;
    const PetscInt* c = nullptr;
    const PetscScalar* v = nullptr;
    MatGetRow(A, r, &nc, &c, &v);
    meta.push_back(nc);
    for (PetscInt q = 0; q < nc; ++q) {
      cols.push_back(c[q]);
      vals.push_back(v[q]);
    }
    MatRestoreRow(A, r, &nc, &c, &v);
  }
  const std::vector<int64_t> all_meta = allgatherv(meta, comm), all_cols = allgatherv(cols, comm);
  const std::vector<double> all_vals = allgatherv(vals, comm);
  std::vector<std::map<int64_t, double>> rows(static_cast<size_t>(N));
  size_t p = 0;
  for (PetscInt i = 0; i < N; ++i)
    for (int64_t q = 0; q < all_meta[i]; ++q, ++p) rows[i][all_cols[p]] = all_vals[p];
  return rows;
}

const Dense& dataset(const std::string& name) {
  static std::map<std::string, Dense> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    Dense X;
    std::vector<int> labels;
    test::load_csv_replicated(name, X, labels);
    it = cache.emplace(name, std::move(X)).first;
  }
  return it->second;
}

const Reference& reference(const std::string& name, int k) {
  static std::map<std::pair<std::string, int>, Reference> cache;
  auto key = std::make_pair(name, k);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, brute_force(dataset(name), k)).first;
  return it->second;
}

/// Neighbor lists equal bit for bit (indices and distances).
void expect_lists_equal(const Reference& R, const std::vector<int64_t>& index,
                        const std::vector<double>& d2, const std::string& what) {
  ASSERT_EQ(index.size(), R.index.size()) << what;
  int64_t bad = 0;
  for (size_t e = 0; e < index.size(); ++e)
    if (index[e] != R.index[e] || d2[e] != R.d2[e]) {
      if (bad++ < 5)
        ADD_FAILURE() << what << ": row " << e / R.k << " slot " << e % R.k << ": got ("
                      << index[e] << ", " << d2[e] << "), expected (" << R.index[e] << ", "
                      << R.d2[e] << ")";
    }
  EXPECT_EQ(bad, 0) << what;
}

/// Heat-kernel weights of the reference graph vs the gathered matrix.
void expect_heat_graph(const Reference& R, const std::vector<std::map<int64_t, double>>& A,
                       double sigma, const std::string& what) {
  ASSERT_EQ(A.size(), R.rows.size()) << what;
  double worst = 0;
  int64_t pattern_mismatch = 0;
  for (size_t i = 0; i < A.size(); ++i) {
    if (A[i].size() != R.rows[i].size()) ++pattern_mismatch;
    for (const auto& [j, d] : R.rows[i]) {
      auto it = A[i].find(j);
      if (it == A[i].end()) {
        ++pattern_mismatch;
        continue;
      }
      worst = std::max(worst, std::abs(it->second - std::exp(-d / (sigma * sigma))));
    }
  }
  EXPECT_EQ(pattern_mismatch, 0) << what;
  EXPECT_LE(worst, 1e-12) << what;
}

}  // namespace

TEST(KnnGraph, EqualsBruteForceSerialGraph) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"iris.csv", 8}, {"wine.csv", 5}, {"digits.csv", 10}};
  for (const auto& [name, k] : cases) {
    const Dense& Xs = dataset(name);
    const Reference& R = reference(name, k);
    DistMatrix X = distribute(Xs);

    KnnLists L = knn_search(X, k);
    EXPECT_EQ(L.k, k);
    EXPECT_EQ(L.n_global, Xs.rows);
    EXPECT_EQ(L.row_start, X.row_start);
    EXPECT_EQ(L.n_local, X.n_local);
    std::vector<int64_t> index;
    std::vector<double> d2;
    gather_lists(L, MPI_COMM_WORLD, index, d2);
    expect_lists_equal(R, index, d2, name);

    GraphOptions opt;
    opt.k = k;
    Graph G = build_knn_graph(X, opt);
    EXPECT_EQ(G.edges, R.edges) << name;
    EXPECT_NEAR(G.mean_edge_dist2, R.mean, 1e-12 * R.mean) << name;
    const double sigma = std::sqrt(-R.mean / std::log(1e-3 / k));
    EXPECT_NEAR(G.sigma, sigma, 1e-12 * sigma) << name;
    PetscInt m = 0, nloc = 0;
    MatGetLocalSize(G.A, &m, &nloc);
    EXPECT_EQ(m, X.n_local);
    EXPECT_EQ(nloc, X.n_local);
    expect_heat_graph(R, gather_matrix(G.A), sigma, name);
  }
}

TEST(KnnGraph, IrisHasDuplicateRowsThatAreNeighborsAtDistanceZero) {
  // iris rows 101 and 142 (0-based) are identical: each is the other's nearest neighbor.
  const Dense& Xs = dataset("iris.csv");
  ASSERT_EQ(dist2(Xs, 101, 142), 0.0);
  const Reference& R = reference("iris.csv", 8);
  EXPECT_EQ(R.index[101 * 8], 142);
  EXPECT_EQ(R.d2[101 * 8], 0.0);
  Graph G = build_knn_graph(distribute(Xs), GraphOptions{});
  auto A = gather_matrix(G.A);
  EXPECT_EQ(A[101].at(142), 1.0);  // exp(0)
  EXPECT_EQ(A[142].at(101), 1.0);
}

TEST(KnnGraph, IsSymmetricAfterSymmetrize) {
  for (EdgeWeight w : {EdgeWeight::heat, EdgeWeight::cosine, EdgeWeight::binary}) {
    GraphOptions opt;
    opt.k = 6;
    opt.weight = w;
    Graph G = build_knn_graph(distribute(dataset("wine.csv")), opt);
    PetscBool sym = PETSC_FALSE;
    ASSERT_EQ(MatIsSymmetric(G.A, 0.0, &sym), 0);
    EXPECT_TRUE(sym);
    // Independently: A − Aᵀ is exactly zero.
    Mat At = nullptr;
    ASSERT_EQ(MatTranspose(G.A, MAT_INITIAL_MATRIX, &At), 0);
    ASSERT_EQ(MatAXPY(At, -1.0, G.A, DIFFERENT_NONZERO_PATTERN), 0);
    PetscReal diff = -1;
    MatNorm(At, NORM_FROBENIUS, &diff);
    MatDestroy(&At);
    EXPECT_EQ(diff, 0.0);
    // Zero diagonal, and no diagonal entry stored at all.
    auto A = gather_matrix(G.A);
    int64_t diag_entries = 0, nnz = 0;
    for (size_t i = 0; i < A.size(); ++i) {
      diag_entries += A[i].count(static_cast<int64_t>(i));
      nnz += static_cast<int64_t>(A[i].size());
    }
    EXPECT_EQ(diag_entries, 0);
    EXPECT_EQ(nnz, 2 * G.edges);
    EXPECT_GE(G.edges, 178 * 6 / 2);  // at least k·n/2 undirected edges
    EXPECT_LE(G.edges, 178 * 6);
  }
}

TEST(KnnGraph, SigmaFollowsEquation42) {
  const Dense& Xs = dataset("wine.csv");
  const Reference& R = reference("wine.csv", 5);
  DistMatrix X = distribute(Xs);
  // Default s = 1e-3/k, an explicit s, and an explicit σ that bypasses eq. (42).
  for (double s : {0.0, 0.05, 0.5}) {
    GraphOptions opt;
    opt.k = 5;
    opt.sigma_s = s;
    Graph G = build_knn_graph(X, opt);
    const double s_used = s == 0 ? 1e-3 / 5 : s;
    const double sigma = std::sqrt(-R.mean / std::log(s_used));
    EXPECT_NEAR(G.sigma, sigma, 1e-12 * sigma) << "s = " << s;
    EXPECT_NEAR(G.mean_edge_dist2, R.mean, 1e-12 * R.mean);
    // With σ² = −d̄/ln s an edge of mean length gets exactly weight s.
    EXPECT_NEAR(std::exp(-G.mean_edge_dist2 / (G.sigma * G.sigma)), s_used, 1e-12);
    expect_heat_graph(R, gather_matrix(G.A), sigma, "s");
  }
  GraphOptions opt;
  opt.k = 5;
  opt.sigma = 42.5;
  Graph G = build_knn_graph(X, opt);
  EXPECT_EQ(G.sigma, 42.5);
  expect_heat_graph(R, gather_matrix(G.A), 42.5, "explicit sigma");
}

TEST(KnnGraph, RejectsSigmaSOutsideTheOpenUnitInterval) {
  DistMatrix X = distribute(dataset("iris.csv"));
  for (double s : {1.0, -0.1, 2.0}) {
    GraphOptions opt;
    opt.sigma_s = s;
    try {
      build_knn_graph(X, opt);
      ADD_FAILURE() << "no exception for s = " << s;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("between 0 and 1"), std::string::npos) << e.what();
    }
  }
  GraphOptions bad;
  bad.sigma = -1;
  EXPECT_THROW(build_knn_graph(X, bad), Error);
}

TEST(KnnGraph, CosineAndBinaryWeightsFollowTheirDefinitions) {
  // wine plus a zero row (cosine weight 0) and a row opposite to row 0 (clamped to 0).
  const Dense& W = dataset("wine.csv");
  Dense Xs(W.rows + 2, W.cols);
  for (int64_t i = 0; i < W.rows; ++i)
    for (int64_t t = 0; t < W.cols; ++t) Xs(i, t) = W(i, t);
  for (int64_t t = 0; t < W.cols; ++t) Xs(W.rows + 1, t) = -1e-3 * W(0, t);
  const int k = 4;
  const Reference R = brute_force(Xs, k);
  DistMatrix X = distribute(Xs);

  GraphOptions opt;
  opt.k = k;
  opt.weight = EdgeWeight::cosine;
  auto A = gather_matrix(build_knn_graph(X, opt).A);
  ASSERT_EQ(A.size(), R.rows.size());
  double worst = 0;
  int64_t entries = 0;
  for (size_t i = 0; i < A.size(); ++i) {
    ASSERT_EQ(A[i].size(), R.rows[i].size()) << "row " << i;
    for (const auto& [j, v] : A[i]) {
      ASSERT_TRUE(R.rows[i].count(j));
      double dot = 0, ni = 0, nj = 0;
      for (int64_t t = 0; t < Xs.cols; ++t) {
        dot += Xs(i, t) * Xs(j, t);
        ni += Xs(i, t) * Xs(i, t);
        nj += Xs(j, t) * Xs(j, t);
      }
      const double c = (ni > 0 && nj > 0) ? std::max(0.0, dot / std::sqrt(ni * nj)) : 0.0;
      worst = std::max(worst, std::abs(v - c));
      ++entries;
    }
  }
  EXPECT_LE(worst, 1e-12);
  EXPECT_GT(entries, 0);
  // The zero row's edges weigh 0.
  for (const auto& [j, v] : A[static_cast<size_t>(W.rows)]) EXPECT_EQ(v, 0.0) << j;

  opt.weight = EdgeWeight::binary;
  auto B = gather_matrix(build_knn_graph(X, opt).A);
  for (size_t i = 0; i < B.size(); ++i) {
    ASSERT_EQ(B[i].size(), R.rows[i].size());
    for (const auto& [j, v] : B[i]) {
      EXPECT_TRUE(R.rows[i].count(j));
      EXPECT_EQ(v, 1.0);
    }
  }
}

TEST(KnnGraph, AllDuplicatePointsGiveSigmaOneAndUnitWeights) {
  Dense Xs(9, 3);
  for (int64_t i = 0; i < 9; ++i) Xs(i, 0) = 2.5, Xs(i, 1) = -1, Xs(i, 2) = 7;
  GraphOptions opt;
  opt.k = 3;
  Graph G = build_knn_graph(distribute(Xs), opt);
  EXPECT_EQ(G.mean_edge_dist2, 0.0);
  EXPECT_EQ(G.sigma, 1.0);
  auto A = gather_matrix(G.A);
  // Ties at distance 0 go to the smaller index: row i links to the 3 smallest j ≠ i.
  const Reference R = brute_force(Xs, 3);
  EXPECT_EQ(R.index[0 * 3 + 0], 1);
  EXPECT_EQ(R.index[5 * 3 + 2], 2);
  for (size_t i = 0; i < A.size(); ++i) {
    EXPECT_EQ(A[i].size(), R.rows[i].size());
    for (const auto& [j, v] : A[i]) EXPECT_EQ(v, 1.0);
  }
}

TEST(KnnLists, BreakDistanceTiesBySmallerGlobalIndex) {
  // 23 points at x = 0, 3, 6, … (exact squared distances 9, 36, …): interior point i has the
  // tied pairs (i−1, i+1), (i−2, i+2); the smaller index must come first.
  const int64_t n = 23;
  Dense Xs(n, 2);
  for (int64_t i = 0; i < n; ++i) Xs(i, 0) = 3.0 * static_cast<double>(i), Xs(i, 1) = 1.0;
  const int k = 4;
  KnnLists L = knn_search(distribute(Xs), k);
  std::vector<int64_t> index;
  std::vector<double> d2;
  gather_lists(L, MPI_COMM_WORLD, index, d2);
  for (int64_t i = 2; i < n - 2; ++i) {
    const std::vector<int64_t> got(index.begin() + i * k, index.begin() + i * k + k);
    EXPECT_EQ(got, (std::vector<int64_t>{i - 1, i + 1, i - 2, i + 2})) << "row " << i;
    EXPECT_EQ(d2[i * k + 0], 9.0);
    EXPECT_EQ(d2[i * k + 1], 9.0);
    EXPECT_EQ(d2[i * k + 2], 36.0);
    EXPECT_EQ(d2[i * k + 3], 36.0);
  }
  // Ends: point 0 sees 1, 2, 3, 4; point 1 sees 0 and 2 (tied at 9), then 3, 4.
  EXPECT_EQ(std::vector<int64_t>(index.begin(), index.begin() + k),
            (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(std::vector<int64_t>(index.begin() + k, index.begin() + 2 * k),
            (std::vector<int64_t>{0, 2, 3, 4}));
  expect_lists_equal(brute_force(Xs, k), index, d2, "line");
}

TEST(KnnLists, AreTheSameForEveryRankCount) {
  // The first 700 digits on sub-communicators of 1, 2, …, p ranks: bitwise the brute force.
  const Dense& D = dataset("digits.csv");
  Dense Xs(700, D.cols);
  for (int64_t i = 0; i < Xs.rows; ++i)
    for (int64_t t = 0; t < D.cols; ++t) Xs(i, t) = D(i, t);
  const int k = 7;
  const Reference R = brute_force(Xs, k);
  for (int m = 1; m <= test::size(); ++m) {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, test::rank() < m ? 0 : MPI_UNDEFINED, test::rank(), &sub);
    if (sub != MPI_COMM_NULL) {
      KnnLists L = knn_search(distribute(Xs, sub), k);
      std::vector<int64_t> index;
      std::vector<double> d2;
      gather_lists(L, sub, index, d2);
      expect_lists_equal(R, index, d2, std::to_string(m) + " ranks");
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST(KnnLists, FromTheSinglePrecisionFilterAreBitwiseThoseOfTheDoubleFilterAndOfBruteForce) {
  // All 1797 digits: several 256-row tiles per rank on 1–4 ranks, so the triangle of the own
  // block, the half ring and (for even rank counts) its split last step are all exercised.
  const Dense& Xs = dataset("digits.csv");
  const int k = 8;
  const Reference R = brute_force(Xs, k);
  const DistMatrix X = distribute(Xs);
  for (bool single : {true, false}) {
    KnnLists L = single ? detail::exact_knn<float>(X, k) : detail::exact_knn<double>(X, k);
    std::vector<int64_t> index;
    std::vector<double> d2;
    gather_lists(L, MPI_COMM_WORLD, index, d2);
    expect_lists_equal(R, index, d2, single ? "float filter" : "double filter");
  }
}

TEST(KnnLists, StayExactForDataFarFromUnitScaleOrFarFromTheOrigin) {
  // The float filter centers and rescales by a power of two: values near 1e±30 (beyond
  // float's range once squared) and rows offset by 1e6 (norms ≫ distances) must give the
  // brute-force lists all the same. Wine: 13 features of very different scales.
  const Dense& W = dataset("wine.csv");
  const int k = 5;
  for (const auto& [factor, offset] : std::vector<std::pair<double, double>>{{1e30, 0}, {1e-30, 0}, {1, 1e6}}) {
    Dense Xs(W.rows, W.cols);
    for (int64_t i = 0; i < W.rows; ++i)
      for (int64_t t = 0; t < W.cols; ++t) Xs(i, t) = W(i, t) * factor + offset;
    const Reference R = brute_force(Xs, k);
    KnnLists L = knn_search(distribute(Xs), k);
    std::vector<int64_t> index;
    std::vector<double> d2;
    gather_lists(L, MPI_COMM_WORLD, index, d2);
    expect_lists_equal(R, index, d2, "factor " + std::to_string(factor) + ", offset " + std::to_string(offset));
  }
}

TEST(KnnLists, StayExactWhenTheDataSpreadIsBeyondTheSquaredScaleOfADouble) {
  // The float filter scales the rows by 2^-e and compares list distances times 4^-e, which is
  // not a normal double when |e| > 511. 300 rows (more than one tile, so the locality order
  // runs) on a line: (i, 0) with one row at 1e162 (its squared distances overflow to inf,
  // e = 539), and (1e-170·i, 0) (e = −564; every squared distance underflows to 0, so the
  // lists are the smallest indices, ties broken by index). Before the fix the first gave
  // empty lists (inf·0 = NaN thresholds) and the second the wrong rows.
  const int64_t n = 300;
  const int k = 3;
  for (const std::string& which : {"huge", "tiny"}) {
    Dense Xs(n, 2);
    for (int64_t i = 0; i < n; ++i) Xs(i, 0) = which == "huge" ? static_cast<double>(i) : 1e-170 * static_cast<double>(i);
    if (which == "huge") Xs(n / 2, 0) = 1e162;
    const Reference R = brute_force(Xs, k);
    for (bool single : {true, false}) {
      KnnLists L = single ? detail::exact_knn<float>(distribute(Xs), k) : detail::exact_knn<double>(distribute(Xs), k);
      std::vector<int64_t> index;
      std::vector<double> d2;
      gather_lists(L, MPI_COMM_WORLD, index, d2);
      expect_lists_equal(R, index, d2, which + (single ? ", float filter" : ", double filter"));
    }
  }
}

TEST(FilterSlack, GrowsLinearlyWithTheDimensionAndCoversFloatRounding) {
  // 1.25·(1.1(d+2)u + 4(d+4)ε + 15ε): for d = 784 about 6.5e-5, above the d·u = 4.7e-5 of the
  // classical dot-product bound; the double filter's is ~2e9 times smaller.
  EXPECT_GT(detail::filter_slack<float>(784), 784 * std::ldexp(1.0, -24));
  EXPECT_LT(detail::filter_slack<float>(784), 7e-5);
  EXPECT_NEAR(detail::filter_slack<float>(2000) / detail::filter_slack<float>(1000), 2.0, 1e-2);
  EXPECT_LT(detail::filter_slack<double>(784), 1e-12);
}

TEST(KnnRecall, IsOneForExactListsAndCountsEachReplacedNeighbourAsAMiss) {
  const Dense& Xs = dataset("digits.csv");
  const DistMatrix X = distribute(Xs);
  const int k = 8;
  KnnLists L = knn_search(X, k);
  EXPECT_EQ(knn_recall(X, L, 500, 3), 1.0);
  EXPECT_EQ(knn_recall(X, L, 100000, 3), 1.0);  // more than n: every row
  EXPECT_TRUE(std::isnan(knn_recall(X, L, 0, 3)));
  // Replace the k-th neighbour of every row by a row that is not among its k nearest (the
  // farthest candidate: the row itself + 1 + n/2 mod n is no neighbour for all but a few;
  // check and count exactly against the exact lists).
  KnnLists M = L;
  int64_t replaced = 0;
  for (int64_t i = 0; i < M.n_local; ++i) {
    const int64_t gi = M.row_start + i;
    int64_t j = (gi + 1 + M.n_global / 2) % M.n_global;
    const int64_t* row = L.index.data() + i * k;
    while (j == gi || std::find(row, row + k, j) != row + k) j = (j + 1) % M.n_global;
    M.index[static_cast<size_t>(i * k + k - 1)] = j;
    ++replaced;
  }
  MPI_Allreduce(MPI_IN_PLACE, &replaced, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  ASSERT_EQ(replaced, X.n_global);
  EXPECT_EQ(knn_recall(X, M, 100000, 3), static_cast<double>(k - 1) / k);
  EXPECT_EQ(knn_recall(X, M, 300, 9), static_cast<double>(k - 1) / k);
}

TEST(KnnLists, HandleUnevenAndEmptyLocalBlocks) {
  // Odd ranks keep nothing, rank 0 keeps every third row, other even ranks keep all.
  const Dense& Xs = dataset("wine.csv");
  DistMatrix X = distribute(Xs);
  std::vector<char> keep(static_cast<size_t>(X.n_local), 0);
  const int r = test::rank();
  for (int64_t i = 0; i < X.n_local; ++i)
    keep[i] = test::size() == 1 ? (i % 3 != 1) : (r % 2 == 1 ? 0 : (r == 0 ? i % 3 == 0 : 1));
  DistMatrix Y = select_rows(X, keep);
  // Global indices of the kept rows, in order.
  std::vector<int64_t> mine;
  for (int64_t i = 0; i < X.n_local; ++i)
    if (keep[i]) mine.push_back(X.row_start + i);
  const std::vector<int64_t> kept = allgatherv(mine, MPI_COMM_WORLD);
  Dense Ys(Y.n_global, Xs.cols);
  for (int64_t i = 0; i < Y.n_global; ++i)
    for (int64_t t = 0; t < Xs.cols; ++t) Ys(i, t) = Xs(kept[i], t);

  const int k = 6;
  const Reference R = brute_force(Ys, k);
  KnnLists L = knn_search(Y, k);
  EXPECT_EQ(L.n_local, Y.n_local);
  std::vector<int64_t> index;
  std::vector<double> d2;
  gather_lists(L, MPI_COMM_WORLD, index, d2);
  expect_lists_equal(R, index, d2, "uneven blocks");

  GraphOptions opt;
  opt.k = k;
  Graph G = build_knn_graph(Y, opt);
  EXPECT_EQ(G.edges, R.edges);
  expect_heat_graph(R, gather_matrix(G.A), G.sigma, "uneven blocks");
  EXPECT_NEAR(G.sigma, std::sqrt(-R.mean / std::log(1e-3 / k)), 1e-12 * G.sigma);
}

TEST(SymmetricEdges, AreTheUnionOfBothDirectionsSortedByColumn) {
  const Dense& Xs = dataset("iris.csv");
  const Reference& R = reference("iris.csv", 8);
  DistMatrix X = distribute(Xs);
  SymmetricEdges E = symmetrize(knn_search(X, 8), MPI_COMM_WORLD);
  EXPECT_EQ(E.n_local, X.n_local);
  EXPECT_EQ(E.row_start, X.row_start);
  ASSERT_EQ(static_cast<int64_t>(E.row_ptr.size()), X.n_local + 1);
  for (int64_t i = 0; i < E.n_local; ++i) {
    const auto& ref = R.rows[static_cast<size_t>(E.row_start + i)];
    ASSERT_EQ(E.row_ptr[i + 1] - E.row_ptr[i], static_cast<int64_t>(ref.size()));
    auto it = ref.begin();
    for (int64_t p = E.row_ptr[i]; p < E.row_ptr[i + 1]; ++p, ++it) {
      EXPECT_EQ(E.col[p], it->first);
      EXPECT_EQ(E.dist2[p], it->second);
    }
  }
}

TEST(KnnSearch, RejectsKNotSmallerThanN) {
  DistMatrix X = distribute(dataset("iris.csv"));
  try {
    knn_search(X, 150);
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--knn 150 must be smaller than the number of graph samples (150)");
  }
  EXPECT_THROW(knn_search(X, 0), Error);
  GraphOptions opt;
  opt.k = 200;
  EXPECT_THROW(build_knn_graph(X, opt), Error);
  // k = n − 1 is the largest valid k: every other point is a neighbor.
  KnnLists L = knn_search(X, 149);
  for (int64_t i = 0; i < L.n_local; ++i) {
    std::set<int64_t> s(L.index.begin() + i * 149, L.index.begin() + (i + 1) * 149);
    EXPECT_EQ(s.size(), 149u);
    EXPECT_EQ(s.count(L.row_start + i), 0u);
  }
}

TEST(KnnGraph, IsTheSameOnEveryRankCountWhenDistancesTie) {
  // 400 points on the integer grid {0,1,2}^4 (81 distinct points, so every point has
  // duplicates and a shell of equidistant neighbours: ties everywhere), on sub-communicators
  // of 1..p ranks with uneven blocks (rank r drops rows with (i + r) % 4 == 0 of its
  // block). Lists must equal the brute force bit for bit (ties to the smaller global
  // index), and σ (eq. (42)) must have the same bits as on one rank.
  Dense Xs(400, 4);
  for (int64_t i = 0; i < Xs.rows; ++i)
    for (int64_t t = 0; t < 4; ++t) Xs(i, t) = static_cast<double>(((i * 7 + t * 13) / (t + 1)) % 3);
  const int k = 8;
  double sigma_one = 0;
  int64_t edges_one = 0;
  for (int m = 1; m <= test::size(); ++m) {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, test::rank() < m ? 0 : MPI_UNDEFINED, test::rank(), &sub);
    if (sub != MPI_COMM_NULL) {
      int r = 0;
      MPI_Comm_rank(sub, &r);
      DistMatrix X = distribute(Xs, sub);
      std::vector<char> keep(static_cast<size_t>(X.n_local));
      for (int64_t i = 0; i < X.n_local; ++i) keep[static_cast<size_t>(i)] = m == 1 || (i + r) % 4 != 0;
      DistMatrix Y = select_rows(X, keep);
      const Dense Ys = allgather(Y);
      const Reference R = brute_force(Ys, k);
      std::vector<int64_t> index;
      std::vector<double> d2;
      gather_lists(knn_search(Y, k), sub, index, d2);
      expect_lists_equal(R, index, d2, std::to_string(m) + " ranks");
      GraphOptions opt;
      opt.k = k;
      const Graph G = build_knn_graph(Y, opt);
      EXPECT_EQ(G.edges, R.edges) << m << " ranks";
      if (m == 1) {
        // The one-rank graph (all 400 rows) is the reference for σ's bits; later
        // sub-communicators drop rows, so compare them with their own serial graph.
        sigma_one = G.sigma;
        edges_one = G.edges;
      } else {
        DistMatrix Yself = distribute(Ys, MPI_COMM_SELF);
        const Graph Gs = build_knn_graph(Yself, opt);
        EXPECT_EQ(G.sigma, Gs.sigma) << m << " ranks: σ differs in its bits from one rank's";
        EXPECT_EQ(G.edges, Gs.edges) << m << " ranks";
      }
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (test::rank() == 0) {
    EXPECT_GT(sigma_one, 0.0);
    EXPECT_GT(edges_one, 0);
  }
}

// ---------------------------------------------------------------- tca-liu2008 eq. (4): t = d̄

TEST(KnnGraph, MeanEdgeWidthUsesTheMeanSquaredEdgeLengthAsT) {
  // tca-liu2008 eq. (4) with t = σ² = d̄ (SigmaRule::mean_edge_dist2): t must be the mean of
  // the squared distances over the undirected edges of the brute-force graph.
  for (const auto& [name, k] : std::vector<std::pair<std::string, int>>{{"iris.csv", 5}, {"digits.csv", 5}}) {
    const Reference& R = reference(name, k);
    GraphOptions opt;
    opt.k = k;
    opt.sigma_rule = SigmaRule::mean_edge_dist2;
    const Graph G = build_knn_graph(distribute(dataset(name)), opt);
    // Error analysis: both sides sum the same N = 2·edges (library) or `edges` (reference)
    // non-negative doubles (bitwise the same dist2) in different orders, then divide; each
    // relative error is at most N·ε (first order), so they differ by at most 2·N·ε·d̄.
    const double eps = std::numeric_limits<double>::epsilon();
    const double tol = 2.0 * 2.0 * static_cast<double>(R.edges) * eps * R.mean;
    EXPECT_EQ(G.edges, R.edges) << name;
    EXPECT_NEAR(G.t, R.mean, tol) << name;
    EXPECT_EQ(G.t, G.mean_edge_dist2) << name;  // t is d̄ itself, not a rounding of sqrt²
    EXPECT_NEAR(G.sigma * G.sigma, G.t, 4 * eps * G.t) << name;
    // Weights exp(−d/t): a relative error δ ≤ 2Nε of t moves a weight by w·(d/t)·δ, plus
    // 2ε for exp and the division.
    const auto A = gather_matrix(G.A);
    double worst = 0;  // in units of the per-entry bound
    double degree = 0;
    for (size_t i = 0; i < A.size(); ++i) {
      ASSERT_EQ(A[i].size(), R.rows[i].size()) << name << " row " << i;
      for (const auto& [j, d] : R.rows[i]) {
        const double w = std::exp(-d / R.mean);
        const double bound = w * ((d / R.mean) * (tol / R.mean) + 2 * eps) + 1e-300;
        worst = std::max(worst, std::abs(A[i].at(j) - w) / bound);
        degree += A[i].at(j);
      }
    }
    EXPECT_LE(worst, 1.0) << name;
    // Σ_ij A_ij / n: n·(k…2k) weights summed in different orders (relative ≈ 2k·n·ε).
    EXPECT_NEAR(G.mean_degree, degree / static_cast<double>(A.size()), 1e-10 * G.mean_degree) << name;
    EXPECT_GT(G.mean_degree, 1.0) << name;  // the point of the rule: not SODA's ≈ 0.06
  }
}

// ---------------------------------------------------------------- adaptive neighbours

namespace {

/// The brute-force adaptive-neighbours weights of row i (the closed form as the CLR paper
/// writes it, on the serially sorted distances) and the per-weight error bound.
struct AdaptiveRow {
  std::vector<int64_t> j;       // the k nearest
  std::vector<double> s, tol;   // weights and |library − reference| bounds
};

AdaptiveRow adaptive_row(const Dense& X, int64_t i, int k) {
  std::vector<std::pair<double, int64_t>> all;
  for (int64_t j = 0; j < X.rows; ++j)
    if (j != i) all.emplace_back(dist2(X, i, j), j);
  std::partial_sort(all.begin(), all.begin() + k + 1, all.end());
  const double dk1 = all[k].first;
  double sum = 0;
  for (int h = 0; h < k; ++h) sum += all[h].first;
  // The denominator vanishes exactly when d_1 = … = d_{k+1} (tested exactly: k·d − Σd can
  // round to ±tiny for equal inexact d); then the weights are the limit 1/k.
  bool equal = true;
  for (int h = 0; h < k; ++h) equal = equal && all[h].first == dk1;
  const double den = k * dk1 - sum;  // the closed form as written
  AdaptiveRow r;
  const double eps = std::numeric_limits<double>::epsilon();
  for (int h = 0; h < k; ++h) {
    r.j.push_back(all[h].second);
    const double s = equal ? 1.0 / k : (dk1 - all[h].first) / den;
    r.s.push_back(s);
    // Error analysis, relative to s (first order; doubled to cover the second-order terms).
    // Both sides start from the same dist2 bits. Library: numerator d_{k+1} − d_j one
    // rounding (ε), denominator Σ_h (d_{k+1} − d_h) of non-negative terms ((k−1)ε after the
    // k numerator roundings already counted), division ε: (k+1)ε. Reference: numerator ε,
    // division ε, and k·d_{k+1} − Σd_h with an absolute error ≤ (k+2)ε(k·d_{k+1} + Σd_h),
    // i.e. amp·ε relative to den, amp = (k+2)(k·d_{k+1} + Σd_h)/den (the cancellation).
    const double amp = equal ? 0.0 : (k + 2) * (k * dk1 + sum) / den;
    r.tol.push_back(2.0 * eps * s * (k + 3 + amp) + 1e-300);
  }
  return r;
}

/// Per-row weights of the library, gathered in global row order (n·k).
std::vector<double> gather_weights(const std::vector<double>& w, MPI_Comm comm, int64_t n, int k) {
  std::vector<double> all = allgatherv(w, comm);
  EXPECT_EQ(static_cast<int64_t>(all.size()), n * k);
  return all;
}

}  // namespace

TEST(AdaptiveGraph, WeightsMatchTheClosedFormAndRowsSumToOne) {
  const double eps = std::numeric_limits<double>::epsilon();
  for (const auto& [name, k] : std::vector<std::pair<std::string, int>>{{"iris.csv", 5}, {"digits.csv", 5}, {"wine.csv", 9}}) {
    const Dense& Xs = dataset(name);
    DistMatrix X = distribute(Xs);
    const KnnLists wide = knn_search(X, k + 1);
    std::vector<int64_t> index;
    std::vector<double> d2;
    gather_lists(wide, MPI_COMM_WORLD, index, d2);
    const std::vector<double> w = gather_weights(adaptive_weights(wide, k), MPI_COMM_WORLD, Xs.rows, k);
    int64_t bad = 0, bad_sum = 0;
    for (int64_t i = 0; i < Xs.rows; ++i) {
      const AdaptiveRow r = adaptive_row(Xs, i, k);
      double row = 0;
      for (int h = 0; h < k; ++h) {
        const double got = w[static_cast<size_t>(i * k + h)];
        row += got;
        EXPECT_GE(got, 0.0);
        if (index[static_cast<size_t>(i * (k + 1) + h)] != r.j[h] || std::abs(got - r.s[h]) > r.tol[h]) {
          if (bad++ < 5)
            ADD_FAILURE() << name << " row " << i << " slot " << h << ": " << got << " vs " << r.s[h]
                          << " (bound " << r.tol[h] << ")";
        }
      }
      // Before symmetrization every row sums to 1: the k quotients of one denominator
      // (its own (k−1)ε, ε per division) summed with (k−1)ε: within (2k−1)ε, first order.
      if (std::abs(row - 1.0) > 2.0 * (2 * k - 1) * eps) ++bad_sum;
    }
    EXPECT_EQ(bad, 0) << name;
    EXPECT_EQ(bad_sum, 0) << name;

    // The graph: A = (S + Sᵀ)/2 of the brute-force S, exactly symmetric, mean degree 1.
    GraphOptions opt;
    opt.k = k;
    opt.weight = EdgeWeight::adaptive;
    const Graph G = build_knn_graph(X, opt);
    EXPECT_EQ(G.k, k);
    EXPECT_EQ(G.weight, EdgeWeight::adaptive);
    EXPECT_EQ(G.sigma, 0.0);  // no heat kernel
    EXPECT_EQ(G.t, 0.0);
    const Reference& R = reference(name, k);
    EXPECT_EQ(G.edges, R.edges) << name;  // the support is the symmetrized kNN graph
    Dense S(Xs.rows, Xs.rows), T(Xs.rows, Xs.rows);  // reference weights and their bounds
    for (int64_t i = 0; i < Xs.rows; ++i) {
      const AdaptiveRow r = adaptive_row(Xs, i, k);
      for (int h = 0; h < k; ++h) S(i, r.j[h]) = r.s[h], T(i, r.j[h]) = r.tol[h];
    }
    const auto A = gather_matrix(G.A);
    double worst = 0, total = 0;
    for (size_t i = 0; i < A.size(); ++i) {
      ASSERT_EQ(A[i].size(), R.rows[i].size()) << name << " row " << i;
      for (const auto& [j, v] : A[i]) {
        const double ref = 0.5 * (S(i, j) + S(j, i));
        // the two weights' bounds, halved, plus the rounding of the sum and the halving
        const double bound = 0.5 * (T(i, j) + T(j, i)) + 2 * eps * ref + 1e-300;
        worst = std::max(worst, std::abs(v - ref) / bound);
        EXPECT_EQ(v, A[j].at(static_cast<int64_t>(i)));  // bitwise symmetric
        total += v;
      }
    }
    EXPECT_LE(worst, 1.0) << name;
    // Σ_ij A_ij = Σ_ij S_ij = n: each row of S sums to 1 within (2k−1)ε, each entry of A
    // carries 2ε of its own (sum and halving), and the recursive sum of N ≤ 2nk positive
    // terms errs by at most N·ε relative: |mean degree − 1| ≤ (2k + 1 + 2nk)ε.
    const double degree_tol = (2.0 * k + 1 + 2.0 * static_cast<double>(Xs.rows) * k) * eps;
    EXPECT_NEAR(G.mean_degree, 1.0, degree_tol) << name;
    EXPECT_NEAR(total / static_cast<double>(A.size()), 1.0, degree_tol) << name;
    PetscBool sym = PETSC_FALSE;
    ASSERT_EQ(MatIsSymmetric(G.A, 0.0, &sym), 0);
    EXPECT_TRUE(sym);
  }
}

TEST(AdaptiveGraph, EqualDistancesGiveUniformWeightsInsteadOfZeroOverZero) {
  // Nine identical points: d_1 = … = d_{k+1} = 0, so the closed form is 0/0; the guard gives
  // the equal-distance limit 1/k (rows still sum to 1). And a point whose k+1 nearest are
  // equidistant (the centre of a square, k = 3): the same.
  Dense Xs(9, 3);
  for (int64_t i = 0; i < 9; ++i) Xs(i, 0) = 2.5, Xs(i, 1) = -1, Xs(i, 2) = 7;
  const int k = 3;
  const std::vector<double> w = adaptive_weights(knn_search(distribute(Xs), k + 1), k);
  for (double v : w) EXPECT_EQ(v, 1.0 / k);
  GraphOptions opt;
  opt.k = k;
  opt.weight = EdgeWeight::adaptive;
  const auto A = gather_matrix(build_knn_graph(distribute(Xs), opt).A);
  for (size_t i = 0; i < A.size(); ++i)
    for (const auto& [j, v] : A[i]) EXPECT_TRUE(v == 1.0 / k || v == 0.5 / k) << i << " " << j;

  Dense Q(5, 2);  // centre 0 and four corners at squared distance 2 from it
  const double c[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
  for (int p = 0; p < 4; ++p) Q(p + 1, 0) = c[p][0], Q(p + 1, 1) = c[p][1];
  KnnLists L = knn_search(distribute(Q, MPI_COMM_SELF), k + 1);
  const std::vector<double> wq = adaptive_weights(L, k);
  for (int h = 0; h < k; ++h) EXPECT_EQ(wq[static_cast<size_t>(h)], 1.0 / k);  // row 0
}

TEST(AdaptiveGraph, IsBitwiseTheSameOnOneRankAsOnAllRanks) {
  // kNN lists are partition independent bit for bit, the weights are computed per row and
  // (w_ij + w_ji)/2 adds the same two doubles at both ends: the gathered matrix must not
  // depend on the number of ranks at all.
  const Dense& Xs = dataset("digits.csv");
  GraphOptions opt;
  opt.k = 5;
  opt.weight = EdgeWeight::adaptive;
  const auto all = gather_matrix(build_knn_graph(distribute(Xs), opt).A);
  if (test::rank() == 0) {
    const auto one = gather_matrix(build_knn_graph(distribute(Xs, MPI_COMM_SELF), opt).A);
    ASSERT_EQ(one.size(), all.size());
    for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], all[i]) << "row " << i;
  }
}

TEST(AdaptiveGraph, RejectsKWithoutAKPlusFirstNeighbour) {
  DistMatrix X = distribute(dataset("iris.csv"));
  GraphOptions opt;
  opt.weight = EdgeWeight::adaptive;
  opt.k = 149;  // valid for the heat graph, but the (k+1)-th neighbour does not exist
  try {
    build_knn_graph(X, opt);
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("adaptive"), std::string::npos) << e.what();
  }
  opt.k = 148;
  EXPECT_NO_THROW(build_knn_graph(X, opt));
  EXPECT_THROW(adaptive_weights(knn_search(X, 5), 5), Error);  // needs k + 1 lists
}

TEST(SymmetricEdges, CarryTheHalfSumOfTheDirectedWeights) {
  // Directed weight w(i → j) = 1000·i + j (distinct per direction): the merged entry must be
  // (w_ij + w_ji)/2 with w = 0 for a missing direction.
  const Dense& Xs = dataset("wine.csv");
  DistMatrix X = distribute(Xs);
  const int k = 4;
  const KnnLists L = knn_search(X, k);
  std::vector<double> w(L.index.size());
  for (int64_t i = 0; i < L.n_local; ++i)
    for (int m = 0; m < k; ++m)
      w[static_cast<size_t>(i * k + m)] = 1000.0 * static_cast<double>(L.row_start + i) + static_cast<double>(L.index[i * k + m]);
  const SymmetricEdges E = symmetrize(L, MPI_COMM_WORLD, &w);
  ASSERT_EQ(E.weight.size(), E.col.size());
  const Reference R = brute_force(Xs, k);
  auto directed = [&](int64_t i, int64_t j) {
    for (int m = 0; m < k; ++m)
      if (R.index[i * k + m] == j) return 1000.0 * static_cast<double>(i) + static_cast<double>(j);
    return 0.0;
  };
  for (int64_t i = 0; i < E.n_local; ++i)
    for (int64_t p = E.row_ptr[i]; p < E.row_ptr[i + 1]; ++p) {
      const int64_t gi = E.row_start + i, j = E.col[p];
      EXPECT_EQ(E.weight[p], 0.5 * (directed(gi, j) + directed(j, gi))) << gi << " " << j;  // small integers: exact
    }
  EXPECT_TRUE(symmetrize(L, MPI_COMM_WORLD).weight.empty());
}

TEST(LocalityOrder, IsADeterministicPermutationWhoseTilesHoldManyOfTheirRowsNeighbours) {
  // All 1797 digits in a shuffled order (the file's own order is not random: its rows come in
  // runs by writer, and its 256-row tiles hold 41 % of the neighbours). In a random order a
  // tile of 256 positions holds a row's neighbour with probability about 255/1796 (14 %); the
  // leaves of the random-projection tree are built to hold them (the point of the order). The
  // assertion asks for twice the shuffled rate: far below what a working tree gives, far above
  // what an order that ignores the data (the identity, say) gives.
  const Dense& Xs = dataset("digits.csv");
  const int k = 8;
  const int64_t n = Xs.rows, d = Xs.cols, leaf = 256;
  const Reference R = brute_force(Xs, k);
  std::vector<int64_t> shuffled(static_cast<size_t>(n)), slot(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) shuffled[static_cast<size_t>(i)] = i;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(7));
  for (int64_t p = 0; p < n; ++p) slot[static_cast<size_t>(shuffled[static_cast<size_t>(p)])] = p;
  std::vector<float> xf(static_cast<size_t>(n * d));  // row p: digit shuffled[p]
  for (int64_t p = 0; p < n; ++p)
    for (int64_t t = 0; t < d; ++t) xf[static_cast<size_t>(p * d + t)] = static_cast<float>(Xs(shuffled[static_cast<size_t>(p)], t));
  const std::vector<int64_t> order = detail::locality_order(xf.data(), n, d, leaf);
  ASSERT_EQ(static_cast<int64_t>(order.size()), n);
  std::vector<int64_t> position(static_cast<size_t>(n), -1);  // of row p of xf in the order
  for (int64_t q = 0; q < n; ++q) {
    const int64_t p = order[static_cast<size_t>(q)];
    ASSERT_TRUE(p >= 0 && p < n && position[static_cast<size_t>(p)] == -1) << "not a permutation at " << q;
    position[static_cast<size_t>(p)] = q;
  }
  EXPECT_EQ(detail::locality_order(xf.data(), n, d, leaf), order);
  // The fraction of (row, neighbour) pairs in one tile when xf's row p sits at pos[p].
  auto same_tile_fraction = [&](const std::vector<int64_t>& pos) {
    int64_t same = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int m = 0; m < k; ++m) {
        const int64_t j = R.index[static_cast<size_t>(i * k + m)];
        same += pos[static_cast<size_t>(slot[static_cast<size_t>(i)])] / leaf ==
                pos[static_cast<size_t>(slot[static_cast<size_t>(j)])] / leaf;
      }
    return static_cast<double>(same) / static_cast<double>(n * k);
  };
  std::vector<int64_t> identity(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) identity[static_cast<size_t>(p)] = p;
  const double chance = same_tile_fraction(identity), local = same_tile_fraction(position);
  EXPECT_GT(local, 2.0 * chance) << "tiles of the shuffled order hold " << chance << " of the neighbours";
  if (test::rank() == 0)
    std::cout << "[ info ] neighbours in the same tile: shuffled order " << chance << ", locality order " << local << "\n";
}

namespace {

/// The eigenvalues of L = D − A (ascending) of a gathered graph, by LAPACK (dsyevd), and
/// ‖L‖₁ (≥ ‖L‖₂: the scale of every rounding bound below).
std::vector<double> dense_laplacian_eigenvalues(const std::vector<std::map<int64_t, double>>& A, double* norm1) {
  const int64_t n = static_cast<int64_t>(A.size());
  Dense L(n, n);
  *norm1 = 0;
  for (int64_t i = 0; i < n; ++i) {
    double deg = 0;
    for (const auto& [j, v] : A[static_cast<size_t>(i)]) L(i, j) = -v, deg += v;
    L(i, i) = deg;
    *norm1 = std::max(*norm1, 2 * deg);
  }
  std::vector<double> w(static_cast<size_t>(n));
  lapack::syev(n, L.data(), n, w.data());
  return w;
}

}  // namespace

TEST(ClrGraph, LaplacianHasExactlyCZeroEigenvaluesAndRowsStayOnTheSimplex) {
  // soge-liu2017 §5.2 / Nie et al. 2016: the CLR graph's L = D − A has rank n − c. On iris
  // (n = 150, c = 3) and wine (n = 178, c = 3), k = 5: the closed-form adaptive graph has
  // another number of components (checked), CLR must end with exactly c.
  const double eps = std::numeric_limits<double>::epsilon();
  for (const char* name : {"iris.csv", "wine.csv"}) {
    const Dense& Xs = dataset(name);
    const int64_t n = Xs.rows;
    const int c = 3;
    GraphOptions opt;
    opt.k = 5;
    opt.weight = EdgeWeight::adaptive;
    double norm0 = 0;
    const std::vector<double> w0 = dense_laplacian_eigenvalues(gather_matrix(build_knn_graph(distribute(Xs), opt).A), &norm0);
    opt.weight = EdgeWeight::clr;
    opt.components = c;
    const Graph G = build_knn_graph(distribute(Xs), opt);
    EXPECT_EQ(G.weight, EdgeWeight::clr);
    EXPECT_TRUE(G.clr_converged) << name;
    EXPECT_EQ(G.components, c) << name;
    EXPECT_GE(G.clr_iterations, 1);
    double norm = 0;
    const std::vector<double> w = dense_laplacian_eigenvalues(gather_matrix(G.A), &norm);
    // dsyevd is backward stable: each computed eigenvalue is within p(n)·ε·‖L‖₂ of an exact
    // one; p(n) = n is the usual (pessimistic) constant, so "zero" is |λ| ≤ n·ε·‖L‖₁ (about
    // 7e-14 here). A graph with exactly c components has exactly c zero eigenvalues.
    const double zero = static_cast<double>(n) * eps * norm;
    auto zeros = [&](const std::vector<double>& v, double z) {
      return std::count_if(v.begin(), v.end(), [&](double x) { return std::abs(x) <= z; });
    };
    EXPECT_EQ(zeros(w, zero), c) << name;
    EXPECT_GT(w[static_cast<size_t>(c)], 1e3 * zero) << name;  // λ_{c+1} clearly nonzero
    EXPECT_NE(zeros(w0, static_cast<double>(n) * eps * norm0), c) << name << ": the closed form had c already";
    // The graph's own c + 1 smallest (zeros set exactly for the components, the rest from
    // SLEPc with residual ≤ 1e-10·‖L‖, so each within that of an exact eigenvalue, symmetric
    // case) against LAPACK's (within n·ε·‖L‖₁).
    ASSERT_EQ(G.laplacian_eigenvalues.size(), static_cast<size_t>(c + 1));
    for (int q = 0; q <= c; ++q)
      EXPECT_NEAR(G.laplacian_eigenvalues[static_cast<size_t>(q)], w[static_cast<size_t>(q)], 1e-10 * norm + zero)
          << name << " eigenvalue " << q;
    // Every row of the directed S is a point of the simplex (CLR's constraint), so Σ_ij A_ij
    // = n: the projection's rows sum to 1 within about kε (θ from a k-term sum), A's entries
    // carry 2ε more, the sum of ≤ 2nk terms nkε: |mean degree − 1| ≤ (3k + 2nk)ε.
    EXPECT_NEAR(G.mean_degree, 1.0, (3.0 * opt.k + 2.0 * static_cast<double>(n) * opt.k) * eps) << name;
    PetscBool sym = PETSC_FALSE;
    ASSERT_EQ(MatIsSymmetric(G.A, 0.0, &sym), 0);
    EXPECT_TRUE(sym);
  }
}

TEST(ClrGraph, IsTheSameOnOneRankAsOnAllRanks) {
  // The kNN lists, the closed-form start and the components (F's null-space columns) are
  // bitwise partition independent; the other eigenvectors are not (Krylov–Schur's reductions
  // run in another order): each spans
  // its invariant subspace within sin θ ≤ r/gap, r ≤ 1e-10·‖L‖ the residual and gap =
  // λ_{c+1} − λ_c, and v_ij = ‖f_i − f_j‖² depends on the subspace only. A weight moves by
  // at most (λ/2)·|Δv_ij| ≤ (λ/2)·4·sin θ (rows of F have norm ≤ 1) per iteration, and the
  // simplex projection is 1-Lipschitz, so |ΔA_ij| ≤ iterations·2λ·r/gap.
  const Dense& Xs = dataset("iris.csv");
  GraphOptions opt;
  opt.k = 5;
  opt.weight = EdgeWeight::clr;
  opt.components = 3;
  const Graph G = build_knn_graph(distribute(Xs), opt);
  const auto all = gather_matrix(G.A);
  if (test::rank() == 0) {
    const Graph G1 = build_knn_graph(distribute(Xs, MPI_COMM_SELF), opt);
    const auto one = gather_matrix(G1.A);
    EXPECT_EQ(G1.components, G.components);
    EXPECT_EQ(G1.clr_iterations, G.clr_iterations);
    EXPECT_EQ(G1.clr_lambda, G.clr_lambda);
    double norm = 0;
    const std::vector<double> w = dense_laplacian_eigenvalues(one, &norm);
    const double gap = w[3] - w[2];
    ASSERT_GT(gap, 1e-6);
    const double tol = G.clr_iterations * 2 * G.clr_lambda * 1e-10 * norm / gap;
    ASSERT_EQ(one.size(), all.size());
    double worst = 0;
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_EQ(one[i].size(), all[i].size()) << "row " << i;
      for (const auto& [j, v] : one[i]) worst = std::max(worst, std::abs(v - all[i].at(j)));
    }
    EXPECT_LE(worst, tol);
  }
}

TEST(ClrGraph, RejectsAComponentCountOutsideOneToN) {
  DistMatrix X = distribute(dataset("iris.csv"));
  GraphOptions opt;
  opt.weight = EdgeWeight::clr;
  opt.k = 5;
  opt.components = 0;  // not set: build_knn_graph does not guess the classes
  EXPECT_THROW(build_knn_graph(X, opt), Error);
  opt.components = 150;
  EXPECT_THROW(build_knn_graph(X, opt), Error);
}
