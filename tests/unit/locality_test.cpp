// The graph renumbered for locality (graph/locality.hpp): a permutation of the vertices, the
// same propagation, and a smaller halo than the rows in file order.
#include <gtest/gtest.h>

#include <petscmat.h>

#include <algorithm>
#include <numeric>

#include "reference.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/locality.hpp"
#include "ssdr/propagation/label_propagation.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

/// Columns of the off-diagonal block (the rows a product fetches from other ranks), summed
/// over the ranks. Collective.
int64_t halo_values(Mat A) {
  Mat Ad = nullptr, Ao = nullptr;
  const PetscInt* colmap = nullptr;
  MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, &colmap);
  PetscInt cols = 0;
  if (Ao) MatGetSize(Ao, nullptr, &cols);
  int64_t h = cols;
  MPI_Allreduce(MPI_IN_PLACE, &h, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return h;
}

}  // namespace

TEST(Locality, RenumbersThePropagationWithoutChangingItsAnswer) {
  test::Problem pr = test::load_problem("digits.csv", 3, false);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  const graph::Renumbering r = graph::renumber_for_locality(g.A, "lp_");
  EXPECT_EQ(r.renumbered(), test::size() > 1);
  // A permutation: every global index once, and back to its own row.
  std::vector<int> index(static_cast<size_t>(X.n_local));
  std::iota(index.begin(), index.end(), static_cast<int>(X.row_start));
  const std::vector<int> moved = graph::to_renumbered(r, index);
  std::vector<int> all = allgatherv(moved, MPI_COMM_WORLD);
  std::sort(all.begin(), all.end());
  std::vector<int> want(static_cast<size_t>(X.n_global));
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(all, want);
  DistMatrix M = make_dist_local(MPI_COMM_WORLD, static_cast<int64_t>(moved.size()), 1);
  for (size_t i = 0; i < moved.size(); ++i) M.v[i] = moved[i];
  const DistMatrix back = graph::from_renumbered(r, M, MPI_COMM_WORLD);
  ASSERT_EQ(back.n_local, X.n_local);
  for (int64_t i = 0; i < X.n_local; ++i) EXPECT_EQ(back.v[static_cast<size_t>(i)], static_cast<double>(X.row_start + i));
  // The same soft labels: both solves stop at rtol 1e-12 on M = I − diag(α/D)A, whose
  // condition number is at most (1 + α)/(1 − α) = 199 (α = 0.99): each F is within
  // 199·1e-12 ≈ 2e-10 of the exact solution (entries in [0, 1]), so they differ by < 1e-9.
  propagation::PropagationOptions po;
  const std::vector<int> semi = test::local_part(pr.semi, X);
  const auto direct = propagation::propagate(g.A, semi, pr.classes, po);
  auto lp = propagation::propagate(r.B, graph::to_renumbered(r, semi), pr.classes, po);
  const DistMatrix F = graph::from_renumbered(r, lp.F, MPI_COMM_WORLD);
  ASSERT_EQ(F.v.size(), direct.F.v.size());
  double worst = 0;
  for (size_t i = 0; i < F.v.size(); ++i) worst = std::max(worst, std::abs(F.v[i] - direct.F.v[i]));
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_LT(worst, 1e-9);
  // Digits' kNN graph partitioned by PT-Scotch: a rank's halo is its part's boundary, far
  // below the rows in file order (which link each rank to the others' rows of every class).
  if (r.renumbered()) EXPECT_LT(2 * halo_values(r.B), halo_values(g.A));
}

TEST(Locality, KeepsTheFileOrderWhenAskedTo) {
  test::Problem pr = test::load_problem("iris.csv", 3, false);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  PetscOptionsSetValue(nullptr, "-loctest_mat_partitioning_type", "current");
  const graph::Renumbering r = graph::renumber_for_locality(g.A, "loctest_");
  PetscOptionsClearValue(nullptr, "-loctest_mat_partitioning_type");
  EXPECT_FALSE(r.renumbered());
  EXPECT_EQ(r.B.get(), g.A.get());
}

TEST(Locality, GivesTheSamePartitionEveryTime) {
  // Two fits of one data set (a sweep, a rerun) must give the same bits: PT-Scotch's random
  // stream is reset before every partitioning, so the same graph gets the same parts.
  for (const char* file : {"iris.csv", "wine.csv", "digits.csv"}) {
    test::Problem pr = test::load_problem(file, 3, true);
    const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
    std::vector<int> index(static_cast<size_t>(X.n_local));
    std::iota(index.begin(), index.end(), static_cast<int>(X.row_start));
    const std::vector<int> first = graph::to_renumbered(graph::renumber_for_locality(g.A, "lp_"), index);
    for (int again = 0; again < 4; ++again)
      EXPECT_EQ(graph::to_renumbered(graph::renumber_for_locality(g.A, "lp_"), index), first) << file;
  }
}
