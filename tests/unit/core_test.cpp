#include <gtest/gtest.h>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
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
