#include <gtest/gtest.h>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/ordered_sum.hpp"

#include <algorithm>
#include <cmath>
#include <vector>
#include "support.hpp"

using namespace ssdr;

TEST(BlockLayout, CoversAllRowsWithoutOverlap) {
  const int64_t n = 11;
  Layout l = block_layout(n, MPI_COMM_WORLD);
  int64_t total = 0;
  MPI_Allreduce(&l.n_local, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, n);
  Layout l2 = layout_from_local(l.n_local, MPI_COMM_WORLD);
  EXPECT_EQ(l2.start, l.start);
  EXPECT_EQ(l2.n_global, n);
}

TEST(CheckCollective, EveryRankThrowsTheMessageOfTheLowestFailingRank) {
  const int last = test::size() - 1;
  try {
    SSDR_CHECK_COLLECTIVE(MPI_COMM_WORLD, test::rank() != last, "failed on " + std::to_string(test::rank()));
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "failed on " + std::to_string(last));
  }
  EXPECT_NO_THROW(SSDR_CHECK_COLLECTIVE(MPI_COMM_WORLD, true, "never"));
}

TEST(CheckCollective, AnErrorOverOneGroupIsCollectiveOverThatGroupButNotOverTheWorld) {
  // Two groups as `experiment --groups 2` makes them (one group on one rank).
  const int color = test::size() >= 2 && test::rank() >= test::size() / 2 ? 1 : 0;
  MPI_Comm group = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, color, test::rank(), &group);
  try {
    SSDR_CHECK_COLLECTIVE(group, false, "group failed");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.scope(), Error::Scope::communicator);
    EXPECT_TRUE(e.collective_over(group));
    // Only the world's own ranks may leave the world cleanly; with one rank the group is the world.
    EXPECT_EQ(e.collective_over(MPI_COMM_WORLD), test::size() == 1);
    int group_size = 0;
    MPI_Comm_size(group, &group_size);
    EXPECT_EQ(e.collective_over(MPI_COMM_SELF), group_size == 1);
  }
  MPI_Comm_free(&group);
  const Error local("x", __FILE__, __LINE__), replicated("x", __FILE__, __LINE__, true);
  EXPECT_FALSE(local.collective());
  EXPECT_FALSE(local.collective_over(MPI_COMM_SELF));
  EXPECT_TRUE(replicated.collective_over(MPI_COMM_WORLD));
}

TEST(Multiply, DistributedProductEqualsSerialProduct) {
  DistMatrix X = make_dist(MPI_COMM_WORLD, 7, 3);
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t j = 0; j < 3; ++j) X(i, j) = static_cast<double>((X.row_start + i) * 3 + j);
  Dense W(3, 2);
  W(0, 0) = 1; W(1, 0) = 2; W(2, 0) = -1; W(0, 1) = 0.5; W(2, 1) = 3;
  Dense Y = allgather(multiply(X, W));
  for (int64_t i = 0; i < 7; ++i) {
    EXPECT_DOUBLE_EQ(Y(i, 0), 3.0 * i * 1 + (3.0 * i + 1) * 2 - (3.0 * i + 2));
    EXPECT_DOUBLE_EQ(Y(i, 1), 0.5 * 3.0 * i + 3 * (3.0 * i + 2));
  }
}

namespace {

/// Global row g of the ordered-sum test data: 3 values of very different magnitudes, so the
/// order of additions shows in the last bits.
void test_row(int64_t g, double* out) {
  out[0] = std::sin(1.0 + static_cast<double>(g)) * 1e8;
  out[1] = 1.0 / (1.0 + static_cast<double>(g));
  out[2] = static_cast<double>((g * 7919) % 1000) * 1e-3 - 0.5;
}

void column_sum_partial(const double* block, int64_t rows, double* out) {
  out[0] = out[1] = out[2] = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < 3; ++j) out[j] += block[i * 3 + j];
}

/// Serial reference of the fixed tree: node (l, i) = node(l−1, 2i) + node(l−1, 2i+1).
std::vector<double> tree_node(int64_t n, int64_t B, int64_t level, int64_t index) {
  const int64_t chunks = (n + B - 1) / B;
  if (level == 0) {
    std::vector<double> block, out(3);
    for (int64_t g = index * B; g < std::min(n, (index + 1) * B); ++g) {
      double r[3];
      test_row(g, r);
      block.insert(block.end(), r, r + 3);
    }
    column_sum_partial(block.data(), static_cast<int64_t>(block.size() / 3), out.data());
    return out;
  }
  std::vector<double> left = tree_node(n, B, level - 1, 2 * index);
  const int64_t below = (chunks + (int64_t{1} << (level - 1)) - 1) >> (level - 1);
  if (2 * index + 1 < below) {
    const std::vector<double> right = tree_node(n, B, level - 1, 2 * index + 1);
    for (int j = 0; j < 3; ++j) left[j] += right[j];
  }
  return left;
}

}  // namespace

TEST(OrderedRowSum, HasTheSameBitsAsTheSerialFixedTreeForEveryLayout) {
  // Uneven layouts with empty ranks, chunk sizes that straddle several ranks, and n around
  // powers of two (the tree's odd last nodes).
  for (int64_t B : {1, 3, 256}) {
    for (int64_t n : {0, 1, 2, 5, 64, 255, 256, 257, 1000}) {
      for (int layout = 0; layout < 3; ++layout) {
        // layout 0: block; 1: everything on the last rank; 2: rank r gets weight (r*5+1)%4.
        const int p = test::size(), r = test::rank();
        std::vector<int64_t> weight(static_cast<size_t>(p));
        for (int q = 0; q < p; ++q) weight[q] = layout == 0 ? 1 : layout == 1 ? (q == p - 1) : (q * 5 + 1) % 4;
        int64_t wsum = 0, before = 0;
        for (int q = 0; q < p; ++q) wsum += weight[q];
        for (int q = 0; q < r; ++q) before += weight[q];
        const int64_t start = n * before / wsum, end = n * (before + weight[r]) / wsum;
        const std::vector<double> got = ordered_row_sum(
            MPI_COMM_WORLD, end - start, 3, 3, [&](int64_t i, double* out) { test_row(start + i, out); },
            column_sum_partial, B);
        std::vector<double> want(3, 0.0);
        if (n > 0) {
          const int64_t chunks = (n + B - 1) / B;
          int64_t top = 0;
          while (((chunks + (int64_t{1} << top) - 1) >> top) > 1) ++top;
          want = tree_node(n, B, top, 0);
        }
        for (int j = 0; j < 3; ++j)
          EXPECT_EQ(got[j], want[j]) << "B " << B << " n " << n << " layout " << layout << " column " << j;
      }
    }
  }
}

TEST(ChunkedColumnSums, HasTheSameBitsAsTheSerialChunkOrderForEveryLayout) {
  // sum(), sum<3>() and fold_ranges() against the documented order (chunks of B(n) = max(64, ⌈n/256⌉) rows summed in row order, chunk
  // sums added in order) written out serially, against every layout: block, all on the last
  // rank, uneven with empty ranks; n below one chunk, across several chunks, and one where a
  // rank's rows lie inside one chunk (the carried running sum passes through it). The row
  // values span twelve orders of magnitude, so another order changes the bits.
  for (int64_t n : {0, 1, 5, 64, 65, 100, 130, 200, 1000, 20000}) {
    for (int layout = 0; layout < 3; ++layout) {
      const int p = test::size(), r = test::rank();
      std::vector<int64_t> weight(static_cast<size_t>(p));
      for (int q = 0; q < p; ++q) weight[q] = layout == 0 ? 1 : layout == 1 ? (q == p - 1) : (q * 5 + 1) % 4;
      int64_t wsum = 0, before = 0;
      for (int q = 0; q < p; ++q) wsum += weight[q];
      for (int q = 0; q < r; ++q) before += weight[q];
      const int64_t start = n * before / wsum, end = n * (before + weight[r]) / wsum;
      ChunkedColumnSums sums(MPI_COMM_WORLD, end - start, 3);
      std::vector<int64_t> visited;
      const std::vector<double> got = sums.sum([&](int64_t i, double* out) {
        visited.push_back(i);
        test_row(start + i, out);
      });
      std::sort(visited.begin(), visited.end());
      for (int64_t i = 0; i < end - start; ++i) ASSERT_EQ(visited[static_cast<size_t>(i)], i) << "each row once";
      ASSERT_EQ(static_cast<int64_t>(visited.size()), end - start);
      const int64_t B = std::max<int64_t>(64, (n + 255) / 256);
      std::vector<double> want(3, 0.0), chunk(3);
      for (int64_t g0 = 0; g0 < n; g0 += B) {
        std::fill(chunk.begin(), chunk.end(), 0.0);
        for (int64_t g = g0; g < std::min(n, g0 + B); ++g) {
          double row[3];
          test_row(g, row);
          for (int j = 0; j < 3; ++j) chunk[j] += row[j];
        }
        for (int j = 0; j < 3; ++j) want[j] += chunk[j];
      }
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[j], want[j]) << "n " << n << " layout " << layout << " column " << j;
      // The same through the width fixed at compile time, and through fold_ranges with the
      // caller's own loop (the block CG's residual pass): every local row in exactly one
      // range, the same bits.
      const std::vector<double> fixed = sums.sum<3>([&](int64_t i, double* out) { test_row(start + i, out); });
      std::vector<int64_t> covered;
      const std::vector<double> ranged = sums.fold_ranges([&](int64_t i0, int64_t i1, double* acc) {
        for (int64_t i = i0; i < i1; ++i) {
          covered.push_back(i);
          double row[3];
          test_row(start + i, row);
          for (int j = 0; j < 3; ++j) acc[j] += row[j];
        }
      });
      std::sort(covered.begin(), covered.end());
      ASSERT_EQ(covered, visited) << "fold_ranges covers each local row once";
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(fixed[j], want[j]) << "sum<3>, n " << n << " layout " << layout << " column " << j;
        EXPECT_EQ(ranged[j], want[j]) << "fold_ranges, n " << n << " layout " << layout << " column " << j;
      }
    }
  }
}

TEST(Multiply, GivesEveryRowTheSameBitsWhateverTheLocalRowCount) {
  // 150 rows × 13 by a 13×5 W on 1 rank and on every rank: fixed-shape GEMM tiles.
  const int64_t n = 150, d = 13, m = 5;
  Dense W(d, m);
  for (int64_t t = 0; t < d * m; ++t) W.v[t] = std::cos(0.37 * t) * (1 + t % 3);
  auto make = [&](MPI_Comm comm) {
    DistMatrix X = make_dist(comm, n, d);
    for (int64_t i = 0; i < X.n_local; ++i)
      for (int64_t j = 0; j < d; ++j) X(i, j) = std::sin(0.1 * ((X.row_start + i) * d + j)) * 1e3;
    return allgather(multiply(X, W));
  };
  const Dense all = make(MPI_COMM_WORLD), one = make(MPI_COMM_SELF);
  EXPECT_EQ(all.v, one.v);
}
