// SL-LDA (sllda-zhao2014) and its LNP graph against the paper's identities and a serial dense
// reference written here from the paper's definitions (brute-force kNN, a brute-force QP
// over all supports for eq. (2), Table 1's normalization, eq. (5), (11)–(13), (15), (19)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "graph/knn_internal.hpp"
#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/graph/lnp.hpp"
#include "ssdr/graph/nndescent.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/propagation/label_propagation.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

using test::local_part;
using test::max_abs;
using test::Problem;  // X standardized

Problem load(const std::string& name, int p) { return test::load_problem(name, p, true); }

// ---- serial dense reference -------------------------------------------------------------

/// k nearest neighbors of row i by brute force, ordered by (Σ_t (x_t − y_t)², index).
std::vector<int64_t> ref_knn(const Dense& X, int64_t i, int k) {
  std::vector<std::pair<double, int64_t>> all;
  for (int64_t j = 0; j < X.rows; ++j) {
    if (j == i) continue;
    double s = 0;
    for (int64_t t = 0; t < X.cols; ++t) s += (X(i, t) - X(j, t)) * (X(i, t) - X(j, t));
    all.emplace_back(s, j);
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> out;
  for (int m = 0; m < k; ++m) out.push_back(all[static_cast<size_t>(m)].second);
  return out;
}

/// min wᵀCw on the simplex by enumerating every support S: w_S = C_S⁻¹1 / 1ᵀC_S⁻¹1; the
/// feasible (w_S ≥ 0) candidate of least objective is the unique minimizer.
std::vector<double> ref_simplex_qp(const Dense& C) {
  const int k = static_cast<int>(C.rows);
  std::vector<double> best;
  double best_obj = std::numeric_limits<double>::infinity();
  for (int mask = 1; mask < (1 << k); ++mask) {
    std::vector<int> S;
    for (int j = 0; j < k; ++j)
      if (mask & (1 << j)) S.push_back(j);
    const int64_t s = static_cast<int64_t>(S.size());
    Dense CS(s, s);
    std::vector<double> y(static_cast<size_t>(s), 1.0);
    for (int64_t a = 0; a < s; ++a)
      for (int64_t b = 0; b < s; ++b) CS(a, b) = C(S[static_cast<size_t>(a)], S[static_cast<size_t>(b)]);
    lapack::posv(s, 1, CS.data(), s, y.data(), s);
    const double sum = std::accumulate(y.begin(), y.end(), 0.0);
    std::vector<double> w(static_cast<size_t>(k), 0.0);
    bool feasible = sum > 0;
    for (int64_t a = 0; a < s; ++a) {
      w[static_cast<size_t>(S[static_cast<size_t>(a)])] = y[static_cast<size_t>(a)] / sum;
      feasible = feasible && y[static_cast<size_t>(a)] / sum >= 0;
    }
    if (!feasible) continue;
    double obj = 0;
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) obj += w[static_cast<size_t>(a)] * C(a, b) * w[static_cast<size_t>(b)];
    if (obj < best_obj) {
      best_obj = obj;
      best = w;
    }
  }
  return best;
}

/// Neighbors and eq. (2) weights of every sample (r = 1e-3·tr(G)/k).
struct RefWeights {
  std::vector<std::vector<int64_t>> index;
  std::vector<std::vector<double>> weight;
};

/// The weights of eq. (2) on given neighbours: nb[i] the k neighbours of sample i.
RefWeights ref_weights_on(const Dense& X, const std::vector<std::vector<int64_t>>& lists) {
  RefWeights r;
  for (int64_t i = 0; i < X.rows; ++i) {
    const std::vector<int64_t>& nb = lists[static_cast<size_t>(i)];
    const int k = static_cast<int>(nb.size());
    Dense C(k, k);
    double tr = 0;
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) {
        double s = 0;
        for (int64_t t = 0; t < X.cols; ++t)
          s += (X(i, t) - X(nb[static_cast<size_t>(a)], t)) * (X(i, t) - X(nb[static_cast<size_t>(b)], t));
        C(a, b) = s;
      }
    for (int a = 0; a < k; ++a) tr += C(a, a);
    for (int a = 0; a < k; ++a) C(a, a) += 1e-3 * tr / k;
    r.index.push_back(nb);
    r.weight.push_back(ref_simplex_qp(C));
  }
  return r;
}

/// The weights of eq. (2) on the brute-force k nearest neighbours.
RefWeights ref_weights(const Dense& X, int k) {
  std::vector<std::vector<int64_t>> lists;
  for (int64_t i = 0; i < X.rows; ++i) lists.push_back(ref_knn(X, i, k));
  return ref_weights_on(X, lists);
}

/// Table 1: W̃ = D^{-1/2} (W+Wᵀ)/2 D^{-1/2}, dense n×n.
Dense ref_lnp_graph(const RefWeights& r, int64_t n) {
  Dense W(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (size_t m = 0; m < r.index[static_cast<size_t>(i)].size(); ++m) {
      const int64_t j = r.index[static_cast<size_t>(i)][m];
      const double w = r.weight[static_cast<size_t>(i)][m];
      W(i, j) += 0.5 * w;
      W(j, i) += 0.5 * w;
    }
  std::vector<double> D(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) D[static_cast<size_t>(i)] += W(i, j);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) W(i, j) /= std::sqrt(D[static_cast<size_t>(i)] * D[static_cast<size_t>(j)]);
  return W;
}

/// A distributed PETSc matrix as a dense replicated n×n (tests only).
Dense to_dense(Mat A) {
  PetscInt n = 0, start = 0, end = 0;
  MatGetSize(A, &n, nullptr);
  MatGetOwnershipRange(A, &start, &end);
  Dense D(n, n);
  for (PetscInt i = start; i < end; ++i) {
    PetscInt nz = 0;
    const PetscInt* c = nullptr;
    const PetscScalar* v = nullptr;
    MatGetRow(A, i, &nz, &c, &v);
    for (PetscInt t = 0; t < nz; ++t) D(i, c[t]) = v[t];
    MatRestoreRow(A, i, &nz, &c, &v);
  }
  allreduce_sum(D, MPI_COMM_WORLD);
  return D;
}

/// The full serial SL-LDA reference: graph, eq. (5), (11)–(13), GEVD (15) with
/// α = 1e-3·tr(S̃t)/d; V B-orthonormal (dsygvd), the m largest; also V_WLS of eq. (19).
struct RefSlLda {
  Dense V, Vwls;
  std::vector<double> lambda;
  double alpha = 0, n_tilde = 0;
};

RefSlLda ref_sl_lda(const Problem& pr, int k) {
  const int64_t n = pr.X.rows, d = pr.X.cols;
  const int c = pr.classes;
  Dense A = ref_lnp_graph(ref_weights(pr.X, k), n);
  Dense F = ref::propagate(A, pr.semi, c, 0.99);
  Dense Sw, Sb, St;
  ref::scatter(pr.X, F, c, Sw, Sb, St);
  RefSlLda r;
  double tr = 0;
  for (int64_t i = 0; i < d; ++i) tr += St(i, i);
  r.alpha = 1e-3 * tr / static_cast<double>(d);
  Dense B = St;
  for (int64_t i = 0; i < d; ++i) B(i, i) += r.alpha;
  Dense Bc = B, Ac = Sb;
  std::vector<double> w(static_cast<size_t>(d));
  lapack::sygv(d, Ac.data(), d, Bc.data(), d, w.data());
  r.V = Dense(d, c - 1);
  for (int j = 0; j < c - 1; ++j) {
    r.lambda.push_back(w[static_cast<size_t>(d - 1 - j)]);
    for (int64_t i = 0; i < d; ++i) r.V(i, j) = Ac(i, d - 1 - j);
  }
  // V_WLS = (S̃t + αI)⁻¹ H̃b, H̃b column i = √ñ_i (x̃_i − x̃) (paper: X L_s Tᵀ), in the paper's
  // normalization (unnormalized St and α·ñ, whose ratio is ssdr's).
  std::vector<double> nk(static_cast<size_t>(c), 0.0), mean(static_cast<size_t>(d), 0.0);
  Dense means(d, c);
  for (int i = 0; i < c; ++i)
    for (int64_t j = 0; j < n; ++j) {
      nk[static_cast<size_t>(i)] += F(j, i);
      for (int64_t t = 0; t < d; ++t) means(t, i) += F(j, i) * pr.X(j, t);
    }
  for (int i = 0; i < c; ++i) r.n_tilde += nk[static_cast<size_t>(i)];
  for (int i = 0; i < c; ++i)
    for (int64_t t = 0; t < d; ++t) {
      mean[static_cast<size_t>(t)] += means(t, i) / r.n_tilde;
      means(t, i) /= nk[static_cast<size_t>(i)];
    }
  Dense H(d, c), Bp = B;
  for (int i = 0; i < c; ++i)
    for (int64_t t = 0; t < d; ++t)
      H(t, i) = std::sqrt(nk[static_cast<size_t>(i)]) * (means(t, i) - mean[static_cast<size_t>(t)]);
  for (double& v : Bp.v) v *= r.n_tilde;  // paper's S̃t + αI = ñ (ssdr's)
  lapack::posv(d, c, Bp.data(), d, H.data(), d);
  r.Vwls = H;
  return r;
}

methods::FitResult fit(const char* method, const Problem& pr, const methods::MethodOptions& o) {
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const std::vector<int> labels = local_part(pr.semi, X);
  methods::TrainingData data{X, labels, pr.classes};
  methods::Timings t;
  return methods::find_method(method).fit(data, o, t);
}

/// A's rows on comm, rank r holding about (r + 1)/(1 + 2 + … + P) of them: the ranks have
/// different numbers of chunks. Local copy.
DistMatrix distribute_unevenly(const Dense& A, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int64_t n = A.rows, total = int64_t{size} * (size + 1) / 2;
  auto start = [&](int r) { return n * (int64_t{r} * (r + 1) / 2) / total; };
  DistMatrix D;
  D.comm = comm;
  D.n_global = n;
  D.row_start = start(rank);
  D.n_local = start(rank + 1) - D.row_start;
  D.cols = A.cols;
  D.v.resize(static_cast<size_t>(D.n_local * D.cols));
  for (int64_t i = 0; i < D.n_local; ++i)
    for (int64_t j = 0; j < A.cols; ++j) D(i, j) = A(D.row_start + i, j);
  return D;
}

}  // namespace

// ---- NNLS and the reconstruction weights of eq. (2) -------------------------------------

TEST(Lnp, NnlsSatisfiesTheKktConditionsOfRandomProblems) {
  // x ≥ 0, gradient g = Aᵀ(Ax − b) ≥ 0, and g_j = 0 wherever x_j > 0 (complementarity).
  std::mt19937_64 rng(3);
  std::normal_distribution<double> N(0.0, 1.0);
  int with_active = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t m = 3 + trial % 9, n = 1 + trial % 8;
    Dense A(m, n);
    std::vector<double> b(static_cast<size_t>(m));
    for (double& v : A.v) v = N(rng);
    for (double& v : b) v = N(rng);
    const std::vector<double> x = graph::nnls(A, b);
    std::vector<double> r(b);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) r[static_cast<size_t>(i)] -= A(i, j) * x[static_cast<size_t>(j)];
    bool active = false;
    for (int64_t j = 0; j < n; ++j) {
      double g = 0;
      for (int64_t i = 0; i < m; ++i) g -= A(i, j) * r[static_cast<size_t>(i)];
      ASSERT_GE(x[static_cast<size_t>(j)], 0.0);
      EXPECT_GT(g, -1e-12) << "trial " << trial;
      if (x[static_cast<size_t>(j)] > 0)
        EXPECT_LT(std::abs(g), 1e-12) << "trial " << trial;
      else
        active = true;
    }
    with_active += active;
  }
  EXPECT_GT(with_active, 50);  // the active-set logic is exercised
}

TEST(Lnp, ReconstructionWeightsLieOnTheSimplexAndSolveTheQpOfEq2) {
  const int k = 8;
  Problem pr = load("wine.csv", 3);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const auto rw = graph::reconstruction_weights(X, k);
  ASSERT_EQ(rw.n_local, X.n_local);
  const RefWeights ref = ref_weights(pr.X, k);
  double worst_sum = 0, worst_diff = 0, lowest = 1;
  int zeros = 0, index_mismatch = 0;
  for (int64_t i = 0; i < rw.n_local; ++i) {
    const size_t gi = static_cast<size_t>(X.row_start + i);
    double s = 0;
    for (int m = 0; m < k; ++m) {
      const double w = rw.weight[static_cast<size_t>(i * k + m)];
      s += w;
      lowest = std::min(lowest, w);
      zeros += w == 0;
      index_mismatch += rw.index[static_cast<size_t>(i * k + m)] != ref.index[gi][static_cast<size_t>(m)];
      worst_diff = std::max(worst_diff, std::abs(w - ref.weight[gi][static_cast<size_t>(m)]));
    }
    worst_sum = std::max(worst_sum, std::abs(s - 1.0));
  }
  double red[3] = {worst_sum, worst_diff, -lowest};
  MPI_Allreduce(MPI_IN_PLACE, red, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int cnt[2] = {zeros, index_mismatch};
  MPI_Allreduce(MPI_IN_PLACE, cnt, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_LT(red[0], 1e-12);   // Σ_j w_ij = 1
  EXPECT_LE(red[2], 0.0);     // w ≥ 0 exactly
  EXPECT_EQ(cnt[1], 0);       // same neighbors as brute force
  EXPECT_LT(red[1], 1e-12);   // same weights as the brute-force QP over all supports
  EXPECT_GT(cnt[0], 100);     // many constraints w_ij ≥ 0 are active (not an unconstrained LLE)
}

TEST(Lnp, ReconstructionWeightsAreTheSameBitsForAnyChunkOfRowsAndAnyRankCount) {
  // The remote neighbour rows are fetched a chunk of local rows at a time; a row's weights
  // depend on its neighbours' rows only, so every chunk size, layout and rank count gives the
  // bits of one rank holding every row in one chunk.
  const int k = 8;
  Problem pr = load("wine.csv", 3);
  const DistMatrix S = ref::distribute(pr.X, MPI_COMM_SELF);
  const auto serial = graph::detail::reconstruction_weights(S, graph::knn_search(S, k), 1e-3, S.n_local);
  for (const bool uneven : {false, true}) {
    const DistMatrix X = uneven ? distribute_unevenly(pr.X, MPI_COMM_WORLD) : ref::distribute(pr.X, MPI_COMM_WORLD);
    const graph::KnnLists lists = graph::knn_search(X, k);
    auto expect_serial_bits = [&](const graph::ReconstructionWeights& rw, const std::string& what) {
      ASSERT_EQ(rw.n_local, X.n_local) << what;
      ASSERT_EQ(rw.weight.size(), static_cast<size_t>(X.n_local * k)) << what;
      const size_t at = static_cast<size_t>(X.row_start * k);
      EXPECT_TRUE(std::equal(rw.index.begin(), rw.index.end(), serial.index.begin() + static_cast<std::ptrdiff_t>(at)))
          << what;
      EXPECT_EQ(std::memcmp(rw.weight.data(), serial.weight.data() + at, rw.weight.size() * sizeof(double)), 0) << what;
      for (size_t e = 0; e < rw.weight.size(); ++e)
        if (rw.weight[e] != serial.weight[at + e]) {
          ADD_FAILURE() << what << ": weight " << e << " is " << rw.weight[e] << ", serially " << serial.weight[at + e];
          break;
        }
      int worst = rw.max_nnls_iterations;
      MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_EQ(worst, serial.max_nnls_iterations) << what;
    };
    const std::string layout = uneven ? "uneven layout" : "even layout";
    for (const int64_t chunk : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{50}, int64_t{1} << 40})
      expect_serial_bits(graph::detail::reconstruction_weights(X, lists, 1e-3, chunk),
                         layout + ", chunks of " + std::to_string(chunk) + " rows");
    // Chunk sizes that differ between ranks: rank 0 fetches row by row, the others at once.
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    expect_serial_bits(graph::detail::reconstruction_weights(X, lists, 1e-3, rank == 0 ? 1 : int64_t{1} << 62),
                       layout + ", chunks of 1 row on rank 0 only");
    // The public entry: a budget below one row (chunks of 1), the default, an unbounded one.
    expect_serial_bits(graph::reconstruction_weights(X, lists, 1e-3, 1e-6), layout + ", 1e-6 MiB");
    expect_serial_bits(graph::reconstruction_weights(X, lists), layout + ", the default budget");
    expect_serial_bits(graph::reconstruction_weights(X, lists, 1e-3, std::numeric_limits<double>::infinity()),
                       layout + ", an infinite budget");
    EXPECT_THROW(graph::reconstruction_weights(X, lists, 1e-3, 0.0), Error);
    EXPECT_THROW(graph::detail::reconstruction_weights(X, lists, 1e-3, 0), Error);
  }
}

TEST(Lnp, ReconstructionChunksKeepTheirFetchesWithinTheMemoryBudget) {
  // 160 MiB for 2 ranks of Fashion rows (d = 784, k = 8): 2·c·8·784·8 bytes ≤ 160 MiB.
  EXPECT_EQ(graph::detail::reconstruction_chunk_rows(8, 784, 2, 160), 1671);
  for (const int ranks : {1, 2, 3, 64})
    for (const double mib : {1.0, 160.0, 8192.0}) {
      const int64_t c = graph::detail::reconstruction_chunk_rows(8, 784, ranks, mib);
      // Within the budget, unless that holds less than one row (64 ranks, 1 MiB): then 1 row.
      const double one_row = static_cast<double>(ranks) * 8 * 784 * 8;
      if (one_row <= mib * (1 << 20)) EXPECT_LE(c * one_row, mib * (1 << 20));
      else EXPECT_EQ(c, 1);
      EXPECT_GT(static_cast<double>(ranks) * (c + 1) * 8 * 784 * 8, mib * (1 << 20));
    }
  EXPECT_EQ(graph::detail::reconstruction_chunk_rows(8, 784, 2, 1e-6), 1);  // at least one row
  // An infinite budget: as many rows as keep one exchange's counts, (ranks − 1)·c·k·d
  // doubles, within half of MPI's int range.
  for (const int ranks : {1, 2, 64}) {
    const int64_t c = graph::detail::reconstruction_chunk_rows(8, 784, ranks, std::numeric_limits<double>::infinity());
    const int64_t per = int64_t{std::max(ranks - 1, 1)} * 8 * 784;
    EXPECT_LE(c * per, std::numeric_limits<int>::max() / 2);
    EXPECT_GT((c + 1) * per, std::numeric_limits<int>::max() / 2);
  }
}

TEST(Lnp, ReconstructionWeightsFailOnEveryRankWhenOneRankFailsMidwayThroughItsChunks) {
  // wine with its last row repeated: the last two rows are each other's neighbour at distance
  // 0, so with r = 0 their G has a zero row and column (not positive definite). They live on
  // the last rank, which stops there while the other ranks fetch through their chunks.
  Problem pr = load("wine.csv", 3);
  Dense A(pr.X.rows + 1, pr.X.cols);
  for (int64_t j = 0; j < A.cols; ++j) {
    for (int64_t i = 0; i < pr.X.rows; ++i) A(i, j) = pr.X(i, j);
    A(pr.X.rows, j) = pr.X(pr.X.rows - 1, j);
  }
  for (const bool uneven : {false, true}) {
    const DistMatrix X = uneven ? distribute_unevenly(A, MPI_COMM_WORLD) : ref::distribute(A, MPI_COMM_WORLD);
    const graph::KnnLists lists = graph::knn_search(X, 8);
    for (const int64_t chunk : {int64_t{1}, int64_t{3}, int64_t{1} << 40}) {
      EXPECT_THROW(graph::detail::reconstruction_weights(X, lists, 0.0, chunk), Error) << chunk;
      EXPECT_NO_THROW(graph::detail::reconstruction_weights(X, lists, 1e-3, chunk)) << chunk;  // r > 0: fine
    }
  }
}

TEST(Lnp, GraphIsSymmetricNormalizedAndEqualToTheDenseReference) {
  const int k = 8;
  Problem pr = load("iris.csv", 3);  // iris has duplicate samples: zero columns of G
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  graph::LnpOptions go;
  go.k = k;
  auto g = graph::build_lnp_graph(X, go);
  const Dense W = to_dense(g.W);
  const int64_t n = W.rows;
  ASSERT_EQ(n, pr.X.rows);
  double asym = 0, diag = 0, lowest = 0;
  for (int64_t i = 0; i < n; ++i) {
    diag = std::max(diag, std::abs(W(i, i)));
    for (int64_t j = 0; j < n; ++j) {
      asym = std::max(asym, std::abs(W(i, j) - W(j, i)));
      lowest = std::min(lowest, W(i, j));
    }
  }
  // Exactly symmetric, and flagged so: the propagation takes its block CG only on such a
  // graph (SL-LDA's ran one GMRES solve per column while D^{-1/2}WD^{-1/2} differed from its
  // transpose in the last bit).
  EXPECT_EQ(asym, 0.0);
  PetscBool set = PETSC_FALSE, sym = PETSC_FALSE;
  ASSERT_EQ(MatIsSymmetricKnown(g.W, &set, &sym), 0);
  EXPECT_TRUE(set && sym);
  EXPECT_EQ(diag, 0.0);
  EXPECT_GE(lowest, 0.0);
  // D^{1/2}1 is the eigenvector of eigenvalue 1 of D^{-1/2} W D^{-1/2}; and D_ii ≥ 1/2.
  std::vector<double> deg(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < static_cast<int64_t>(g.degree.size()); ++i) deg[static_cast<size_t>(X.row_start + i)] = g.degree[static_cast<size_t>(i)];
  MPI_Allreduce(MPI_IN_PLACE, deg.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double eig = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_GE(deg[static_cast<size_t>(i)], 0.5 - 1e-15);
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += W(i, j) * std::sqrt(deg[static_cast<size_t>(j)]);
    eig = std::max(eig, std::abs(s - std::sqrt(deg[static_cast<size_t>(i)])));
  }
  EXPECT_LT(eig, 1e-13);
  const Dense R = ref_lnp_graph(ref_weights(pr.X, k), n);
  EXPECT_LT(test::max_abs_diff(W, R), 1e-12);
  int64_t edges = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) edges += R(i, j) > 0;
  EXPECT_EQ(g.edges, edges);
}

TEST(Lnp, GraphOnNnDescentListsIsTheDenseReferenceOnThoseLists) {
  // --knn-method nndescent: the LNP graph is built on NN-descent's lists (the same on any rank
  // count for one seed), with eq. (2)'s weights on them; automatic is exact at this size.
  const int k = 8;
  Problem pr = load("breast_cancer.csv", 2);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  graph::LnpOptions go;
  go.k = k;
  go.knn_method = graph::KnnMethod::nndescent;
  go.knn_seed = 5;
  const graph::LnpGraph g = graph::build_lnp_graph(X, go);
  graph::NNDescentOptions no;
  no.seed = 5;
  const graph::KnnLists lists = graph::nndescent_search(X, k, no);
  const std::vector<int64_t> all = allgatherv(lists.index, MPI_COMM_WORLD);
  const int64_t n = pr.X.rows;
  ASSERT_EQ(static_cast<int64_t>(all.size()), n * k);
  std::vector<std::vector<int64_t>> nb(static_cast<size_t>(n));
  int64_t found = 0;  // NN-descent's recall against the brute-force lists
  for (int64_t i = 0; i < n; ++i) {
    nb[static_cast<size_t>(i)].assign(all.begin() + i * k, all.begin() + (i + 1) * k);
    const std::vector<int64_t> exact = ref_knn(pr.X, i, k);
    for (int64_t j : nb[static_cast<size_t>(i)]) found += std::count(exact.begin(), exact.end(), j);
  }
  EXPECT_GT(static_cast<double>(found) / static_cast<double>(n * k), 0.95);
  EXPECT_EQ(g.knn_method, graph::KnnMethod::nndescent);
  EXPECT_GT(g.knn_recall, 0.95);  // estimated on 1000 rows: every one of the 569
  EXPECT_EQ(g.knn_recall, static_cast<double>(found) / static_cast<double>(n * k));
  const Dense W = to_dense(g.W);
  const Dense R = ref_lnp_graph(ref_weights_on(pr.X, nb), n);
  EXPECT_LT(test::max_abs_diff(W, R), 1e-12);
  // The exact backend (automatic at 569 rows) is the brute-force reference's graph.
  go.knn_method = graph::KnnMethod::automatic;
  const Dense E = to_dense(graph::build_lnp_graph(X, go).W);
  EXPECT_LT(test::max_abs_diff(E, ref_lnp_graph(ref_weights(pr.X, k), n)), 1e-12);
  // Lists that do not match the rows' layout are refused on every rank.
  graph::KnnLists wrong = lists;
  wrong.n_local += 1;
  EXPECT_THROW(graph::reconstruction_weights(X, wrong), Error);
}

// ---- SL-LDA -------------------------------------------------------------------------------

TEST(SlLda, AgreesWithTheSerialDenseReference) {
  for (const char* name : {"iris.csv", "wine.csv"}) {
    Problem pr = load(name, 3);
    methods::MethodOptions o;
    o.propagation.rtol = 1e-12;
    auto out = fit("sl-lda", pr, o);
    methods::MethodOptions om = o;
    om.normalization = methods::Normalization::metric;
    om.normalization_given = true;
    auto metric = fit("sl-lda", pr, om);
    const RefSlLda r = ref_sl_lda(pr, 8);
    ASSERT_EQ(out.W.cols, pr.classes - 1) << name;
    EXPECT_NEAR(out.info["alpha"].get<double>(), r.alpha, 1e-10 * r.alpha) << name;
    const auto lambda = out.info["eigenvalues"].get<std::vector<double>>();
    for (int j = 0; j < pr.classes - 1; ++j)
      EXPECT_NEAR(lambda[static_cast<size_t>(j)], r.lambda[static_cast<size_t>(j)], 1e-10 * r.lambda[0]) << name;
    // Default: the eigenvectors scaled to unit length; metric: B-orthonormal. Equal up to sign.
    EXPECT_EQ(out.info["normalization"], "unit") << name;
    EXPECT_LT(test::max_unit_norm_error(out.W), 1e-12) << name;
    EXPECT_LT(test::max_diff_up_to_column_sign(ref::unit_columns(r.V), out.W), 1e-9) << name;
    EXPECT_EQ(metric.info["normalization"], "metric") << name;
    EXPECT_LT(test::max_diff_up_to_column_sign(r.V, metric.W), 1e-9 * max_abs(r.V)) << name;
  }
}

TEST(SlLda, WeightedLeastSquaresAgreesWithTheDenseNormalEquations) {
  Problem pr = load("wine.csv", 3);
  methods::MethodOptions o;
  o.propagation.rtol = 1e-12;
  auto out = fit("sl-lda-wls", pr, o);
  const RefSlLda r = ref_sl_lda(pr, 8);
  // W (principal form of V_WLS, m = c−1 columns) spans V_WLS: W Wᵀ = V_WLS V_WLSᵀ.
  const Dense P = ref::projector(r.Vwls);
  EXPECT_LT(test::max_abs_diff(ref::projector(out.W), P), 1e-8 * max_abs(P));
  const auto sigma = out.info["singular_values"].get<std::vector<double>>();
  ASSERT_EQ(sigma.size(), 3u);
  EXPECT_LT(sigma[2], 1e-6 * sigma[0]);  // rank(V_WLS) = c − 1 (H̃b's columns are dependent)
}

TEST(SlLda, EigenvalueScaledGevdEqualsNTildeTimesTheLeastSquaresProjector) {
  // V Λ Vᵀ = ñ V_WLS V_WLSᵀ holds exactly for m ≥ rank(S̃b) = c − 1 (every non-zero
  // eigenpair kept) and the same relative α, for the B-orthonormal V (--normalize metric,
  // asked for explicitly here); Theorem 3 as printed (V Vᵀ = V_WLS V_WLSᵀ, any scale) does
  // not hold for it.
  for (const char* name : {"iris.csv", "wine.csv"}) {
    Problem pr = load(name, 3);
    methods::MethodOptions o;
    o.propagation.rtol = 1e-12;
    o.normalization = methods::Normalization::metric;
    o.normalization_given = true;
    auto wls = fit("sl-lda-wls", pr, o);
    auto plain = fit("sl-lda", pr, o);
    o.own["eigenvalue_scaling"] = true;
    auto scaled = fit("sl-lda", pr, o);
    const double n_tilde = wls.info["n_tilde"].get<double>();
    EXPECT_NEAR(scaled.info["n_tilde"].get<double>(), n_tilde, 1e-10 * n_tilde);
    Dense Pw = ref::projector(wls.W);
    for (double& v : Pw.v) v *= n_tilde;
    const Dense Ps = ref::projector(scaled.W);
    EXPECT_LT(test::max_abs_diff(Ps, Pw), 1e-8 * max_abs(Pw)) << name;
    // The unscaled projector is not a multiple of the least-squares one: best scalar fit
    // s = <P, Pw>/<Pw, Pw> still leaves a relative difference above 1 %.
    const Dense P = ref::projector(plain.W);
    double pp = 0, pw = 0, ww = 0;
    for (size_t i = 0; i < P.v.size(); ++i) {
      pp += P.v[i] * P.v[i];
      pw += P.v[i] * Pw.v[i];
      ww += Pw.v[i] * Pw.v[i];
    }
    const double s = pw / ww;
    double res = 0;
    for (size_t i = 0; i < P.v.size(); ++i) res += (P.v[i] - s * Pw.v[i]) * (P.v[i] - s * Pw.v[i]);
    EXPECT_GT(std::sqrt(res / pp), 1e-2) << name;
  }
}

TEST(SlLda, EigenvalueScalingImpliesTheMetricNormalizationAndRejectsAnExplicitUnit) {
  // --eigenvalue-scaling without --normalize scales the B-orthonormal V (the documented
  // least-squares embedding), whatever the unit default says; --normalize unit with it is
  // an error naming both options.
  Problem pr = load("iris.csv", 3);
  methods::MethodOptions o;
  o.propagation.rtol = 1e-12;
  o.own["eigenvalue_scaling"] = true;
  auto implied = fit("sl-lda", pr, o);
  methods::MethodOptions om = o;
  om.normalization = methods::Normalization::metric;
  om.normalization_given = true;
  auto explicit_metric = fit("sl-lda", pr, om);
  EXPECT_EQ(implied.info["normalization"], "metric");
  EXPECT_EQ(implied.normalization, methods::Normalization::metric);
  EXPECT_EQ(test::max_abs_diff(implied.W, explicit_metric.W), 0.0);
  methods::MethodOptions ou = o;
  ou.normalization = methods::Normalization::unit;
  ou.normalization_given = true;
  try {
    fit("sl-lda", pr, ou);
    ADD_FAILURE() << "no ssdr::Error for --eigenvalue-scaling --normalize unit";
  } catch (const ssdr::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--eigenvalue-scaling"), std::string::npos) << what;
    EXPECT_NE(what.find("--normalize"), std::string::npos) << what;
    EXPECT_TRUE(e.collective());
  }
}

TEST(SlLda, GivesTheSameEmbeddingAndAccuracyOnOneRankAsOnAllRanks) {
  const data::SplitSpec spec = test::transductive_split(3, 0.8, 5);
  for (const char* method : {"sl-lda", "sl-lda-wls"}) {
    driver::FitConfig cfg;
    cfg.method = method;
    cfg.preprocess.scaling = data::Scaling::standardize;
    const test::SerialAndDistributed r = test::fit_serial_and_distributed("wine.csv", spec, cfg);
    EXPECT_EQ(r.dist.accuracy.unlabeled, r.serial_accuracy.unlabeled) << method;
    EXPECT_EQ(r.dist.accuracy.unseen, r.serial_accuracy.unseen) << method;
    EXPECT_LT(test::max_diff_up_to_column_sign(r.Y_dist, r.Y_serial), 1e-6 * max_abs(r.Y_serial)) << method;
    EXPECT_GT(r.dist.accuracy.unlabeled, 0.85) << method;
  }
}
