// The graph renumbered for locality (graph/locality.hpp): a permutation of the vertices, the
// same propagation, and a smaller halo than the rows in file order.
#include <gtest/gtest.h>

#include <petscmat.h>

#include <algorithm>
#include <numeric>
#include <set>

#include <deque>

#include "graph/level_order.hpp"
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

/// Cuthill–McKee on the whole graph, serially (the textbook queue): each component from its
/// open vertex of least degree (ties: lowest index), each dequeued vertex's open neighbours
/// appended in index order. The distributed level order must give exactly this order when no
/// level is wider than kLevelBins.
/// Past max_components components, the rest follow in index order (level_order's cap).
std::vector<int64_t> serial_cuthill_mckee(const std::vector<std::vector<int64_t>>& adj,
                                          int max_components = graph::detail::kMaxComponents) {
  const int64_t n = static_cast<int64_t>(adj.size());
  std::vector<int64_t> pos(static_cast<size_t>(n), -1), degree(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) {
    std::set<int64_t> s(adj[static_cast<size_t>(v)].begin(), adj[static_cast<size_t>(v)].end());
    s.erase(v);
    degree[static_cast<size_t>(v)] = static_cast<int64_t>(s.size());
  }
  int64_t next = 0;
  for (int component = 0; next < n; ++component) {
    if (component == max_components) {
      for (int64_t v = 0; v < n; ++v)
        if (pos[static_cast<size_t>(v)] < 0) pos[static_cast<size_t>(v)] = next++;
      break;
    }
    int64_t root = -1;
    for (int64_t v = 0; v < n; ++v)
      if (pos[static_cast<size_t>(v)] < 0 && (root < 0 || degree[static_cast<size_t>(v)] < degree[static_cast<size_t>(root)]))
        root = v;
    std::deque<int64_t> queue{root};
    pos[static_cast<size_t>(root)] = next++;
    while (!queue.empty()) {
      const int64_t u = queue.front();
      queue.pop_front();
      std::set<int64_t> open;
      for (int64_t v : adj[static_cast<size_t>(u)])
        if (pos[static_cast<size_t>(v)] < 0) open.insert(v);
      for (int64_t v : open) {
        pos[static_cast<size_t>(v)] = next++;
        queue.push_back(v);
      }
    }
  }
  return pos;
}

/// This rank's rows of `adj` (global adjacency lists) in the balanced block layout.
graph::detail::LocalAdjacency local_rows(const std::vector<std::vector<int64_t>>& adj, MPI_Comm comm) {
  const int64_t n = static_cast<int64_t>(adj.size());
  const int64_t P = test::size(), r = test::rank();
  graph::detail::LocalAdjacency a;
  a.n_global = n;
  a.lo = n * r / P;
  const int64_t hi = n * (r + 1) / P;
  a.offsets.assign(1, 0);
  for (int64_t i = a.lo; i < hi; ++i) {
    a.cols.insert(a.cols.end(), adj[static_cast<size_t>(i)].begin(), adj[static_cast<size_t>(i)].end());
    a.offsets.push_back(static_cast<int64_t>(a.cols.size()));
  }
  (void)comm;
  return a;
}

/// The whole pattern of a distributed graph (tests only: gathered on every rank).
std::vector<std::vector<int64_t>> gather_pattern(Mat A) {
  PetscInt lo = 0, hi = 0, n = 0;
  MatGetOwnershipRange(A, &lo, &hi);
  MatGetSize(A, &n, nullptr);
  std::vector<int64_t> rows, cols;
  for (PetscInt i = lo; i < hi; ++i) {
    PetscInt nc = 0;
    const PetscInt* c = nullptr;
    MatGetRow(A, i, &nc, &c, nullptr);
    for (PetscInt k = 0; k < nc; ++k) {
      rows.push_back(i);
      cols.push_back(c[k]);
    }
    MatRestoreRow(A, i, &nc, &c, nullptr);
  }
  rows = allgatherv(rows, MPI_COMM_WORLD);
  cols = allgatherv(cols, MPI_COMM_WORLD);
  std::vector<std::vector<int64_t>> adj(static_cast<size_t>(n));
  for (size_t e = 0; e < rows.size(); ++e) adj[static_cast<size_t>(rows[e])].push_back(cols[e]);
  return adj;
}

/// Distinct other parts each part's vertices have an edge to, averaged over the parts, when
/// the vertices at positions pos are cut into `parts` contiguous ranges.
double partners_per_part(const std::vector<std::vector<int64_t>>& adj, const std::vector<int64_t>& pos, int64_t parts) {
  const int64_t n = static_cast<int64_t>(adj.size());
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (int64_t v = 0; v < n; ++v)
    for (int64_t u : adj[static_cast<size_t>(v)]) {
      const int64_t a = pos[static_cast<size_t>(v)] * parts / n, b = pos[static_cast<size_t>(u)] * parts / n;
      if (a != b) pairs.insert({a, b});
    }
  return static_cast<double>(pairs.size()) / static_cast<double>(parts);
}

}  // namespace

TEST(LevelOrder, IsTheSerialCuthillMcKeeOrderOnAnyRankCount) {
  // Digits' kNN graph: one component, levels narrower than kLevelBins, so the order is exact.
  test::Problem pr = test::load_problem("digits.csv", 3, false);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  const auto adj = gather_pattern(g.A);
  const std::vector<int64_t> want = serial_cuthill_mckee(adj);
  const std::vector<int64_t> got = allgatherv(graph::detail::level_order(MPI_COMM_WORLD, local_rows(adj, MPI_COMM_WORLD)), MPI_COMM_WORLD);
  EXPECT_EQ(got, want);
  // Its point: cut into 4 ranges, each borders about 2 others (its neighbours in the order),
  // where the rows in file order border all 3.
  std::vector<int64_t> file(want.size());
  std::iota(file.begin(), file.end(), 0);
  EXPECT_LE(partners_per_part(adj, want, 4), 2.0);  // measured 1.5 (this graph is the same on any CPU: exact kNN)
  EXPECT_EQ(partners_per_part(adj, file, 4), 3.0);
}

TEST(LevelOrder, OrdersEveryComponentAndIgnoresSelfLoops) {
  // Three components in scrambled index order: a cycle, a path with a self loop, a star;
  // the roots are each component's least-degree vertex (path ends, star leaves).
  const int64_t n = 37;
  std::vector<std::vector<int64_t>> adj(n);
  auto edge = [&](int64_t a, int64_t b) {
    adj[static_cast<size_t>(a)].push_back(b);
    adj[static_cast<size_t>(b)].push_back(a);
  };
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = (i * 11) % n;  // 11 and 37 coprime
  for (int64_t i = 0; i < 12; ++i) edge(perm[static_cast<size_t>(i)], perm[static_cast<size_t>((i + 1) % 12)]);
  for (int64_t i = 12; i < 24; ++i) edge(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(i + 1)]);
  adj[static_cast<size_t>(perm[15])].push_back(perm[15]);
  for (int64_t i = 26; i < n; ++i) edge(perm[25], perm[static_cast<size_t>(i)]);
  const std::vector<int64_t> want = serial_cuthill_mckee(adj);
  const std::vector<int64_t> got = allgatherv(graph::detail::level_order(MPI_COMM_WORLD, local_rows(adj, MPI_COMM_WORLD)), MPI_COMM_WORLD);
  EXPECT_EQ(got, want);
  std::vector<int64_t> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
}

TEST(LevelOrder, AppendsTheComponentsPastItsCapInIndexOrder) {
  // kMaxComponents + 44 separate edges: the first kMaxComponents components are ordered from
  // their roots, the remaining vertices follow in index order. And a 3-vertex path, which
  // leaves ranks without rows on 4 ranks.
  for (const int64_t pairs : {static_cast<int64_t>(graph::detail::kMaxComponents) + 44, int64_t{0}}) {
    std::vector<std::vector<int64_t>> adj;
    if (pairs > 0) {
      adj.resize(static_cast<size_t>(2 * pairs));
      for (int64_t i = 0; i < pairs; ++i) {  // pair i joins vertices i and 2·pairs − 1 − i
        adj[static_cast<size_t>(i)].push_back(2 * pairs - 1 - i);
        adj[static_cast<size_t>(2 * pairs - 1 - i)].push_back(i);
      }
    } else {
      adj = {{1}, {0, 2}, {1}};
    }
    const std::vector<int64_t> want = serial_cuthill_mckee(adj);
    const std::vector<int64_t> got =
        allgatherv(graph::detail::level_order(MPI_COMM_WORLD, local_rows(adj, MPI_COMM_WORLD)), MPI_COMM_WORLD);
    EXPECT_EQ(got, want) << pairs;
  }
}

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
  // Digits' kNN graph in its level order: a rank's halo is the levels at its range's ends,
  // far below the rows in file order (which link each rank to the others' rows of every
  // class); PT-Scotch's part boundaries are smaller still.
  if (r.renumbered()) {
    EXPECT_EQ(r.partitioner, graph::kLevelsPartitioner);
    EXPECT_LT(2 * halo_values(r.B), halo_values(g.A));
    // B's rows are the vertices in the serial Cuthill–McKee order: B's global row p is the
    // vertex at level position p (so the propagation needs no further local ordering).
    const std::vector<int64_t> pos = serial_cuthill_mckee(gather_pattern(g.A));
    const std::vector<int> order = allgatherv(moved, MPI_COMM_WORLD);  // A's vertex of each B row
    for (size_t p = 0; p < order.size(); ++p)
      EXPECT_EQ(pos[static_cast<size_t>(order[p])], static_cast<int64_t>(p)) << p;
    PetscOptionsSetValue(nullptr, "-loctest_mat_partitioning_type", "ptscotch");
    const graph::Renumbering s = graph::renumber_for_locality(g.A, "loctest_");
    PetscOptionsClearValue(nullptr, "-loctest_mat_partitioning_type");
    EXPECT_EQ(s.partitioner, "ptscotch");
    EXPECT_LT(2 * halo_values(s.B), halo_values(g.A));
  }
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
  // Two fits of one data set (a sweep, a rerun) must give the same bits: the level order
  // depends on the graph only, and PT-Scotch's random stream is reset before every
  // partitioning, so the same graph gets the same parts.
  for (const char* type : {"levels", "ptscotch"})
  for (const char* file : {"iris.csv", "wine.csv", "digits.csv"}) {
    PetscOptionsSetValue(nullptr, "-lp_mat_partitioning_type", type);
    test::Problem pr = test::load_problem(file, 3, true);
    const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
    std::vector<int> index(static_cast<size_t>(X.n_local));
    std::iota(index.begin(), index.end(), static_cast<int>(X.row_start));
    const std::vector<int> first = graph::to_renumbered(graph::renumber_for_locality(g.A, "lp_"), index);
    for (int again = 0; again < 4; ++again)
      EXPECT_EQ(graph::to_renumbered(graph::renumber_for_locality(g.A, "lp_"), index), first) << file << " " << type;
    PetscOptionsClearValue(nullptr, "-lp_mat_partitioning_type");
  }
}
