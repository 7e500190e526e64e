// Distributed NN-descent (Dong, Charikar, Li 2011) against the exact lists of knn_search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/nndescent.hpp"
#include "ssdr/io/dataset.hpp"
#include "graph/knn_internal.hpp"
#include "support.hpp"

using namespace ssdr;
using namespace ssdr::graph;

namespace {

Dense dataset(const std::string& name) {
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated(name, X, labels);
  return X;
}

DistMatrix distribute(const Dense& X, MPI_Comm comm = MPI_COMM_WORLD) {
  DistMatrix D = make_dist(comm, X.rows, X.cols);
  for (int64_t i = 0; i < D.n_local; ++i)
    for (int64_t t = 0; t < X.cols; ++t) D(i, t) = X(D.row_start + i, t);
  return D;
}

/// Fashion-MNIST's test images (the Debian package); tests skip without it.
const char* const kFashionTest = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

/// The first n images of kFashionTest (d = 784), distributed by blocks. Collective.
DistMatrix fashion_subset(int64_t n) {
  const io::Dataset ds = io::read_dataset(kFashionTest, io::Format::idx, MPI_COMM_WORLD);
  std::vector<char> keep(static_cast<size_t>(ds.X.n_local));
  for (int64_t i = 0; i < ds.X.n_local; ++i) keep[static_cast<size_t>(i)] = ds.X.row_start + i < n;
  DistMatrix X = select_rows(ds.X, keep);
  EXPECT_EQ(X.n_global, n);
  return X;
}

}  // namespace

TEST(NNDescent, ReachesARecallOfAtLeast95PercentOnDigits) {
  // Recall over every row (sample ≥ n) against the exact lists; the bar is 0.95
  // (measured 0.9985 with the default options and seed).
  const DistMatrix X = distribute(dataset("digits.csv"));
  const KnnLists L = nndescent_search(X, 8, NNDescentOptions{});
  EXPECT_GE(knn_recall(X, L, X.n_global, 1), 0.95);
}

TEST(NNDescent, GivesKDistinctNeighboursSortedByTheirExactDistances) {
  const Dense Xs = dataset("wine.csv");
  const DistMatrix X = distribute(Xs);
  const int k = 6;
  const KnnLists L = nndescent_search(X, k, NNDescentOptions{});
  ASSERT_EQ(L.k, k);
  ASSERT_EQ(L.n_local, X.n_local);
  ASSERT_EQ(static_cast<int64_t>(L.index.size()), X.n_local * k);
  for (int64_t i = 0; i < L.n_local; ++i) {
    const int64_t gi = L.row_start + i;
    for (int m = 0; m < k; ++m) {
      const int64_t j = L.index[static_cast<size_t>(i * k + m)];
      ASSERT_GE(j, 0);
      ASSERT_LT(j, Xs.rows);
      EXPECT_NE(j, gi);
      for (int q = 0; q < m; ++q) EXPECT_NE(L.index[static_cast<size_t>(i * k + q)], j);
      // The exact squared distance by the library's convention, bit for bit (symmetric
      // graphs rely on it).
      EXPECT_EQ(L.dist2[static_cast<size_t>(i * k + m)], test::dist2_convention(Xs, gi, j));
      if (m > 0) {
        const double a = L.dist2[static_cast<size_t>(i * k + m - 1)], b = L.dist2[static_cast<size_t>(i * k + m)];
        EXPECT_TRUE(a < b || (a == b && L.index[static_cast<size_t>(i * k + m - 1)] < j));
      }
    }
  }
}

TEST(NNDescent, GivesTheSameListsForTheSameSeedAndRankCount) {
  const DistMatrix X = distribute(dataset("digits.csv"));
  NNDescentOptions o;
  o.seed = 7;
  const KnnLists A = nndescent_search(X, 5, o), B = nndescent_search(X, 5, o);
  EXPECT_EQ(A.index, B.index);
  EXPECT_EQ(A.dist2, B.dist2);
}

/// Every rank's lists gathered in global row order (index then dist2 per row). Collective.
static std::pair<std::vector<int64_t>, std::vector<double>> gathered(const KnnLists& L, MPI_Comm comm) {
  return {allgatherv(L.index, comm), allgatherv(L.dist2, comm)};
}

TEST(NNDescent, GivesTheListsOfOneRankOnAnyRankCountAndFetchBudget) {
  // The serial reference: every rank builds the lists of all the rows alone (MPI_COMM_SELF).
  // The distributed build must give exactly those lists, bit for bit (the same pairs are
  // computed in the same float arithmetic, and a round's lists do not depend on the order
  // its proposals are applied in), with the default budget (one fetch block, the float copy)
  // and with the smallest (no float copy, a row cache, fetch blocks of 256 rows on 2+ ranks);
  // with the ranks reading each other's rows in one shared-memory window (the default on one
  // machine), with none sharing (every row fetched, as across nodes), and in groups of two
  // (on 3 and 4 ranks, both at once).
  // 2 000 Fashion-MNIST images (d = 784; about a dozen rounds) when installed, else digits.
  // The values are divided by 3 (not exactly representable: sums over the ranks' blocks
  // differ in their last bits from one sum in order), and the first 300 rows appear twice
  // (exact ties at the k-th distance, which only the global index may break).
  const bool fashion = std::ifstream(kFashionTest).good();
  const Dense base = fashion ? allgather(fashion_subset(2000)) : dataset("digits.csv");
  const int64_t twice = std::min<int64_t>(300, base.rows);
  Dense all(base.rows + twice, base.cols);
  for (int64_t i = 0; i < all.rows; ++i)
    for (int64_t t = 0; t < all.cols; ++t) all(i, t) = base(i < base.rows ? i : i - base.rows, t) / 3.0;
  // After 2 rounds, far from converged, as well as to the end: the lists of an unfinished
  // build are where an order dependence would show (at the end most lists are exact).
  for (int rounds : {2, 30}) {
    NNDescentOptions o;
    o.seed = 3;
    o.max_iterations = rounds;
    const KnnLists one = nndescent_search(distribute(all, MPI_COMM_SELF), 8, o);  // the default budget
    const std::pair<double, int> variants[] = {
        {160.0 * (1 << 20), 0}, {double(1 << 20), 0}, {160.0 * (1 << 20), 1}, {160.0 * (1 << 20), 2}};
    for (const auto& [budget, group] : variants) {
      o.fetch_budget_bytes = budget;
      o.shared_group = group;
      const auto [index, dist2] = gathered(nndescent_search(distribute(all), 8, o), MPI_COMM_WORLD);
      EXPECT_EQ(index, one.index) << rounds << " rounds, fetch budget " << budget << " bytes, shared group " << group;
      EXPECT_EQ(dist2, one.dist2) << rounds << " rounds, fetch budget " << budget << " bytes, shared group " << group;
      if (budget > double(1 << 20)) {
        // Every rank keeps its float copy at 160 MiB: it reads the rows of every other rank of
        // its group (all ranks run on this one machine) in place.
        int size = 1, rank = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        const int g = group == 0 ? size : group;
        const int peers = std::min(size, (rank / g + 1) * g) - (rank / g) * g - 1;
        EXPECT_EQ(detail::nndescent_last_shared_ranks(), peers) << "shared group " << group;
      }
    }
  }
}

TEST(NNDescent, GivesTheListsOfOneRankWhenSomeRanksHoldNoRowsOrNoFloatCopy) {
  // Uneven layouts (distribute splits evenly): on 3 and 4 ranks rank 0 holds no rows, rank 1
  // 300 rows (their float copy, 300 × 784 floats, fits B_f = 1 MiB: shared), the other ranks
  // the rest (no float copy: rows fetched from the window's other ranks, or converted), so one
  // machine's window mixes a rank that shares its rows, ranks that share none and a rank with
  // an empty segment; on 2 ranks, rank 0 the 300 rows and rank 1 the rest. The lists must be
  // the serial ones, bit for bit. Fashion-MNIST when installed (digits, d = 64, would let
  // every rank keep its copy).
  if (!std::ifstream(kFashionTest).good()) GTEST_SKIP() << kFashionTest << " not installed";
  const Dense all = allgather(fashion_subset(2000));
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  NNDescentOptions o;
  o.seed = 5;
  o.fetch_budget_bytes = double(1 << 20);
  const KnnLists one = nndescent_search(distribute(all, MPI_COMM_SELF), 8, o);
  const int sharer = size == 2 ? 0 : 1;  // the rank of 300 rows
  std::vector<int64_t> counts(static_cast<size_t>(size), 0);
  if (size == 1) {
    counts[0] = all.rows;
  } else {
    counts[static_cast<size_t>(sharer)] = 300;
    const int first = sharer + 1, rest = size - first;
    for (int r = first; r < size; ++r)
      counts[static_cast<size_t>(r)] = (all.rows - 300) / rest + (r - first < (all.rows - 300) % rest ? 1 : 0);
  }
  DistMatrix X = make_dist_local(MPI_COMM_WORLD, counts[static_cast<size_t>(rank)], all.cols);
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t t = 0; t < all.cols; ++t) X(i, t) = all(X.row_start + i, t);
  const auto [index, dist2] = gathered(nndescent_search(X, 8, o), MPI_COMM_WORLD);
  EXPECT_EQ(index, one.index);
  EXPECT_EQ(dist2, one.dist2);
  // Only the 300-row rank shares its rows: every other rank reads them in place.
  if (size > 1) EXPECT_EQ(detail::nndescent_last_shared_ranks(), rank == sharer ? 0 : 1);
}

TEST(NNDescent, ReadsCenteredFloatRowsInPlaceAndGivesTheListsOfTheirDoubleCopyOnOneRank) {
  // PCA scores (--precision single) are centered: their sample mean is negligible, so the
  // build does not center them (μ = 0) and, without room for a float copy (B_f = 1 MiB <
  // 2 300 × 784 × 4 / P bytes for P ≤ 4), reads the float rows in place instead of
  // converting each row it gathers. The lists must be those of the rows' double copy built
  // on one rank with a float copy (also μ = 0), bit for bit. Shifted by 40 per feature the
  // same rows are centered (‖μ‖² far above 1 % of the spread) and converted as gathered.
  if (!std::ifstream(kFashionTest).good()) GTEST_SKIP() << kFashionTest << " not installed";  // digits' copy fits 1 MiB
  const Dense base = allgather(fashion_subset(2000));
  const int64_t twice = 300;
  Dense all(base.rows + twice, base.cols);
  std::vector<double> mean(static_cast<size_t>(base.cols), 0.0);
  for (int64_t i = 0; i < base.rows; ++i)
    for (int64_t t = 0; t < base.cols; ++t) mean[static_cast<size_t>(t)] += base(i, t) / static_cast<double>(base.rows);
  for (int64_t i = 0; i < all.rows; ++i)
    for (int64_t t = 0; t < all.cols; ++t)
      all(i, t) = static_cast<float>((base(i < base.rows ? i : i - base.rows, t) - mean[static_cast<size_t>(t)]) / 3.0);
  for (const double shift : {0.0, 40.0}) {
    Dense X = all;
    for (double& v : X.v) v = static_cast<float>(v + shift);  // exact in float: the float copy holds these values
    NNDescentOptions o;
    o.seed = 7;
    const KnnLists one = nndescent_search(distribute(X, MPI_COMM_SELF), 8, o);
    EXPECT_EQ(detail::nndescent_last_rows(), 1);  // the float copy fits the default budget
    EXPECT_EQ(detail::nndescent_last_centered(), shift != 0.0);
    o.fetch_budget_bytes = double(1 << 20);
    const DistMatrixF X32 = to_single(distribute(X));
    const auto [index, dist2] = gathered(nndescent_search(RowsView(X32), 8, o), MPI_COMM_WORLD);
    EXPECT_EQ(detail::nndescent_last_rows(), shift == 0.0 ? 2 : 0) << "shift " << shift;
    EXPECT_EQ(detail::nndescent_last_centered(), shift != 0.0) << "shift " << shift;
    EXPECT_EQ(index, one.index) << "shift " << shift;
    EXPECT_EQ(dist2, one.dist2) << "shift " << shift;
  }
}

TEST(NNDescent, TakesItsMemoryFromTheGraphOptionsAndGivesTheSameGraphForAnyValue) {
  // --nndescent-memory reaches nndescent_search as B_f (below 1 MiB it is refused there), and
  // the lists are the same for 1 MiB (no float copy, fetch blocks) and 1 GiB.
  const DistMatrix X = distribute(dataset("digits.csv"));
  GraphOptions g;
  g.knn_method = KnnMethod::nndescent;
  g.nndescent_memory_mib = 1;
  const KnnLists small = knn_lists(X, 5, g);
  g.nndescent_memory_mib = 1024;
  const KnnLists large = knn_lists(X, 5, g);
  EXPECT_EQ(small.index, large.index);
  EXPECT_EQ(small.dist2, large.dist2);
  g.nndescent_memory_mib = 0.5;
  EXPECT_THROW(knn_lists(X, 5, g), Error);
}

TEST(NNDescent, RejectsBadKAndOptionsOnEveryRank) {
  const DistMatrix X = distribute(dataset("iris.csv"));
  NNDescentOptions o;
  EXPECT_THROW(nndescent_search(X, 0, o), Error);
  EXPECT_THROW(nndescent_search(X, 150, o), Error);
  o.rho = 0;
  EXPECT_THROW(nndescent_search(X, 5, o), Error);
  o = NNDescentOptions{};
  o.delta = 1;
  EXPECT_THROW(nndescent_search(X, 5, o), Error);
  o = NNDescentOptions{};
  o.max_iterations = 0;
  EXPECT_THROW(nndescent_search(X, 5, o), Error);
  o = NNDescentOptions{};
  o.shared_group = -1;
  EXPECT_THROW(nndescent_search(X, 5, o), Error);
}

TEST(NNDescent, ReachesARecallOfAtLeast95PercentOnAFashionMnistSubset) {
  // The first 5 000 images of Fashion-MNIST's test part (d = 784), when the Debian package is
  // installed; recall over all 5 000 rows.
  if (!std::ifstream(kFashionTest).good()) GTEST_SKIP() << kFashionTest << " not installed";
  const DistMatrix X = fashion_subset(5000);
  const KnnLists L = nndescent_search(X, 8, NNDescentOptions{});
  EXPECT_GE(knn_recall(X, L, X.n_global, 1), 0.95);
}

TEST(NNDescent, ReachesTheRecallWithoutAFloatCopyAndWithSmallFetchBlocks) {
  // The same 5 000 images with the smallest fetch budget (1 MiB): the block's float copy
  // (5 000/P rows × 784 × 4 bytes ≥ 3.9 MB on 4 ranks) is not kept, so rows are converted
  // as a join reads them (through a cache of 83 converted rows, whose slots collide: the
  // in-use path runs too) in a locality order, and on 2 or more ranks the remote rows (≥ 1 250 × 786 × 4
  // bytes) do not fit, so the join runs in fetch blocks of 256 rows. The lists are not those
  // of one block (remote k-th distances are fetched at each block's start), but the recall
  // bar is the same.
  if (!std::ifstream(kFashionTest).good()) GTEST_SKIP() << kFashionTest << " not installed";
  const DistMatrix X = fashion_subset(5000);
  NNDescentOptions o;
  o.fetch_budget_bytes = 1 << 20;
  const KnnLists L = nndescent_search(X, 8, o);
  EXPECT_GE(knn_recall(X, L, X.n_global, 1), 0.95);
  o.fetch_budget_bytes = (1 << 20) - 1;
  EXPECT_THROW(nndescent_search(X, 8, o), Error);
}

TEST(NNDescent, JoinDotsGiveTheSameBitsWithFourByFourAndTwoByFourTiles) {
  // detail::join_dots_4x4 (AVX-512) against join_dots_2x4, whose "fma" clone is the one
  // chosen on any CPU that has the 4x4 kernel (AVX-512F implies FMA here: the check includes
  // it): every pair b > a, bitwise. d covers no tail (8), tail only (1, 7), both (9, 61, 784);
  // nn covers partial 4-row and 2-row tiles (nn % 4 ≠ 0) and nc − b < 4 covers partial
  // column tiles. The rows are reached through shuffled pointers into one pool (unaligned
  // for d % 8 ≠ 0), as the join's gathered rows are.
  //
  // Each value is also checked against Σ_t x_t·y_t in double. The float sum takes each term
  // through at most m roundings: for d < 8 the tail alone (one multiply-add, or a product and
  // an addition, per later term: m ≤ d, the first addition to 0 being exact); for d ≥ 8 at
  // most d8/8 in its lane (d8 = d − d mod 8), 3 in the fixed sum of the 8 lanes and d mod 8
  // in the tail, plus 1 for a product rounded before its addition: m ≤ d8/8 + 4 + d mod 8 ≤ d
  // since d8 ≥ 8. Without underflow (the values are multiples of 2⁻²³ in [−1, 1): products
  // ≥ 2⁻⁴⁶ or 0) the standard bound (Higham, Accuracy and Stability, §3.1) gives
  // |G − x·y| ≤ γ_d·Σ|x_t y_t|, γ_d = d·u/(1 − d·u), u = 2⁻²⁴. The double reference's
  // products are exact (24 + 24 bits ≤ 53) and its sums err by at most γ'_d·Σ|x_t y_t|
  // (u' = 2⁻⁵³), the computed Σ|x_t y_t| by the same factor: (γ_d + 2γ'_d)·Σ|x_t y_t| covers
  // both (2γ_dγ'_d + 2γ'_d² ≤ γ'_d).
  if (!detail::join_dots_has_4x4()) GTEST_SKIP() << "the CPU lacks AVX-512F/VL or FMA: no 4x4 kernel";
  std::mt19937_64 rng(20261128);
  // Exact floats in [−1, 1): a multiple of 2⁻²³ from the generator's top 24 bits.
  auto value = [&rng] { return static_cast<float>(static_cast<int32_t>(rng() >> 40) - (1 << 23)) * 0x1p-23f; };
  int64_t checked = 0, different = 0, outside = 0;
  for (const int64_t d : {1, 7, 8, 9, 61, 784}) {
    const double u = 0x1p-24, ud = 0x1p-53;
    const double gamma = d * u / (1 - d * u), gamma_d = d * ud / (1 - d * ud);
    for (const int64_t nn : {1, 2, 3, 5, 8, 13})
      for (int64_t nc = nn; nc <= nn + 11; ++nc) {
        std::vector<float> pool(static_cast<size_t>(nc * d));
        for (float& x : pool) x = value();
        std::vector<int64_t> perm(static_cast<size_t>(nc));
        for (int64_t q = 0; q < nc; ++q) perm[static_cast<size_t>(q)] = q;
        std::shuffle(perm.begin(), perm.end(), rng);
        std::vector<const float*> rows(static_cast<size_t>(nc));
        for (int64_t q = 0; q < nc; ++q) rows[static_cast<size_t>(q)] = pool.data() + perm[static_cast<size_t>(q)] * d;
        std::vector<float> G2(static_cast<size_t>(nn * nc), std::nanf("")), G4 = G2;
        detail::join_dots_2x4(rows.data(), nn, nc, d, G2.data());
        detail::join_dots_4x4(rows.data(), nn, nc, d, G4.data());
        for (int64_t a = 0; a < nn; ++a)
          for (int64_t b = a + 1; b < nc; ++b) {
            const float g2 = G2[static_cast<size_t>(a * nc + b)], g4 = G4[static_cast<size_t>(a * nc + b)];
            ++checked;
            if (std::memcmp(&g2, &g4, sizeof g2) != 0 && ++different <= 5)
              ADD_FAILURE() << "d " << d << ", nn " << nn << ", nc " << nc << ", pair (" << a << ", " << b
                            << "): 2x4 " << g2 << ", 4x4 " << g4;
            const float* x = rows[static_cast<size_t>(a)];
            const float* y = rows[static_cast<size_t>(b)];
            double dot = 0, abs = 0;
            for (int64_t t = 0; t < d; ++t) {
              dot += static_cast<double>(x[t]) * y[t];
              abs += std::fabs(static_cast<double>(x[t]) * y[t]);
            }
            const double tol = (gamma + 2 * gamma_d) * abs;
            for (const float g : {g2, g4})
              if (!(std::fabs(g - dot) <= tol) && ++outside <= 5)
                ADD_FAILURE() << "d " << d << ", nn " << nn << ", nc " << nc << ", pair (" << a << ", " << b
                              << "): " << g << " against " << dot << " (tolerance " << tol << ")";
          }
      }
  }
  EXPECT_EQ(different, 0) << "of " << checked << " pairs";
  EXPECT_EQ(outside, 0) << "of " << 2 * checked << " values";
}

TEST(NNDescent, FloatDistancesLieWithinTheBoundThatSparesTheirExactDistance) {
  // detail::float_distance_bound is what lets the final lists skip an entry's exact distance
  // (and its fetch): it must hold for the build's float distances as the build forms them —
  // rows centered in float by a μ of the data, squared norms summed in double and rounded to
  // float, dot products by the join's kernels, d̃ = max(0, fl(ñ_a + ñ_b − 2G)) — against the
  // exact squared distance of the double rows (a long double sum: its error, ≤ d·2⁻⁶⁴
  // relative, is far below the bound's γ_{d+12} in float). Rows at 300 ± 1, centered by their
  // mean or by a μ 50 off it (the centered values then carry rounding errors of 50·2⁻²⁴, the
  // distances of order d·2: the centering's rounding matters), near duplicates (10⁻⁴ apart:
  // the sum cancels) and exact duplicates. The bound must also be tight enough to skip
  // anything: below 2·10⁻⁴ of the pair's norms at d = 784.
  std::mt19937_64 rng(20261129);
  std::normal_distribution<double> g;
  int64_t checked = 0;
  for (const int64_t d : {3, 8, 61, 784}) {
    const int64_t n = 24;
    std::vector<double> X(static_cast<size_t>(n * d));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t t = 0; t < d; ++t) {
        double& x = X[static_cast<size_t>(i * d + t)];
        if (i >= 8 && i < 16) x = X[static_cast<size_t>((i - 8) * d + t)] + 1e-4 * g(rng);  // near duplicates
        else if (i >= 16) x = X[static_cast<size_t>((i - 16) * d + t)];                     // duplicates
        else x = 300.0 + g(rng);
      }
    for (const double offset : {0.0, 50.0}) {
      std::vector<double> mu(static_cast<size_t>(d), offset);
      for (int64_t i = 0; i < 8; ++i)
        for (int64_t t = 0; t < d; ++t) mu[static_cast<size_t>(t)] += X[static_cast<size_t>(i * d + t)] / 8.0;
      std::vector<float> F(static_cast<size_t>(n * d));
      std::vector<float> nrm(static_cast<size_t>(n));
      std::vector<const float*> rows(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        detail::center_to_float(X.data() + i * d, mu.data(), d, F.data() + i * d);
        double s = 0;
        for (int64_t t = 0; t < d; ++t) s += static_cast<double>(F[static_cast<size_t>(i * d + t)]) * F[static_cast<size_t>(i * d + t)];
        nrm[static_cast<size_t>(i)] = static_cast<float>(s);
        rows[static_cast<size_t>(i)] = F.data() + i * d;
      }
      std::vector<std::vector<float>> Gs;
      Gs.emplace_back(static_cast<size_t>(n * n));
      detail::join_dots_2x4(rows.data(), n, n, d, Gs.back().data());
      if (detail::join_dots_has_4x4()) {
        Gs.emplace_back(static_cast<size_t>(n * n));
        detail::join_dots_4x4(rows.data(), n, n, d, Gs.back().data());
      }
      double worst = 0, loosest = 0;
      for (const auto& G : Gs)
        for (int64_t a = 0; a < n; ++a)
          for (int64_t b = a + 1; b < n; ++b) {
            const float dt = std::max(0.0f, nrm[static_cast<size_t>(a)] + nrm[static_cast<size_t>(b)] -
                                                2.0f * G[static_cast<size_t>(a * n + b)]);
            long double e = 0;
            for (int64_t t = 0; t < d; ++t) {
              const long double diff = static_cast<long double>(X[static_cast<size_t>(a * d + t)]) - X[static_cast<size_t>(b * d + t)];
              e += diff * diff;
            }
            // The bound from either end of the pair (each row's own norm).
            for (const int64_t own : {a, b}) {
              const double delta = detail::float_distance_bound(nrm[static_cast<size_t>(own)], dt, d);
              const double err = std::fabs(static_cast<double>(static_cast<long double>(dt) - e));
              worst = std::max(worst, err / delta);
              loosest = std::max(loosest, delta / (static_cast<double>(nrm[static_cast<size_t>(a)]) + nrm[static_cast<size_t>(b)] + 1e-300));
              ++checked;
            }
          }
      EXPECT_LE(worst, 1.0) << "d = " << d << ", offset " << offset << ": a float distance outside its bound";
      if (d == 784) EXPECT_LT(loosest, 2e-4) << "the bound spares nothing at d = 784";
    }
  }
  EXPECT_GT(checked, 1000);
}
