// Label propagation against its memory bound, all measured in one run (issue 35).
//
//   mpiexec -n P bench_propagation [--graph=G.h5 --n=N] [--n=N --d=4 --blobs=10 --k=8]
//                                  [--classes=10] [--labeled=20] [--reps=20] [--triad-mib=256]
//                                  [--gmres] [--runs=3] [--no-reorder] [PETSc options, e.g. -log_view]
//
// The graph: the kNN lists of `ssdr fit --graph-out G.h5` (N rows; heat weights, eq. (42)),
// else N points of `blobs` Gaussian blobs in d dimensions (row i: blob i mod blobs, its
// coordinates from a generator seeded by i, so the same data on any rank count) searched by
// NN-descent. Labels: the first `labeled` rows of each class (class = row mod classes) are
// labeled, the rest unlabeled. Reported (rank 0, one JSON object per line, times = max over
// ranks after a barrier):
//   triad          a = b + s·c on three arrays of triad-mib MiB per rank, all ranks at once:
//                  the streaming bandwidth (24 bytes per element, STREAM's count), summed over ranks
//   vector_product MatMult(A, x): one column, seconds (best of reps)
//   block_product  MatMult(MAIJ(A, c), X): the n×c block of the class columns in one pass
//                  (the block CG's width: the outlier column is derived), seconds (best of
//                  reps); bytes = the compulsory traffic 12·nnz + 4·n (AIJ values, 32-bit
//                  column indices, row offsets) + 16·n·c (block read once, result written
//                  once) + 8·ghosts·c (the halo's values), and its rate against the triad's
//   matmatmult     MatMatMult(A, MATDENSE n×c) for comparison (PETSc's other block product)
//   partitioned    the block product on the graph as the fit multiplies it: renumbered by
//                  graph::renumber_for_locality (-lp_mat_partitioning_type; levels by
//                  default, which leaves each rank's rows in the Cuthill–McKee level order),
//                  bytes with its halo; block_product_s: the block CG's product
//                  (propagation/block_product.hpp: MAIJ's kernel on the diagonal block, the
//                  off-diagonal block on its non-empty rows only), maij_matmult_s: PETSc's
//                  MatMult on the MPIMAIJ (the off-diagonal block over every row),
//                  single_product_s: the mixed-precision block CG's inner product
//                  (detail::SingleBlockProduct: float values and blocks)
//   partitioned + local RCM   the same after graph::rcm_reorder inside each rank (what the
//                  block CG multiplies by default; -lp_reorder false: the level order)
//   propagation    ssdr::propagation::propagate on the partitioned graph as the fit runs it
//                  (block CG with the local RCM; --no-reorder: without),
//                  seconds, the iterations per column, and seconds / ((max iterations + 1) ×
//                  the block product it runs: single_product_s by default, block_product_s
//                  with -lp_mixed_precision false); inner: the mixed-precision inner solve
//                  (-lp_mixed_inner: chebyshev, the default, or cg; "double" without mixed
//                  precision); vector_bytes_per_iteration: the bytes an iteration moves
//                  besides the product's (the block CG's other passes: 11 streams of n×c
//                  values, 4 bytes each in mixed precision, 8 in double, + 34 bytes per row;
//                  a Chebyshev step: 3 streams + 5 bytes per row); traffic_floor: 1 + their
//                  time at the memory's rate (the triad's with its write-allocate reads:
//                  32 bytes per element) / the product's, the least that ratio can be with
//                  these passes (the product as measured, the passes at the streaming
//                  bound, nothing else; blocks that fit the caches can beat it), and
//                  over_traffic_floor: the ratio / that floor
//   gmres          (--gmres) the same with -lp_ksp_type gmres (one KSPSolve per column), both
//                  solvers run `runs` times alternating which goes first; the minimum and
//                  median times, the speed-ups, and the max |F_cg − F_gmres|
// The propagation line reports the block CG's fastest run.
#include <petscmat.h>
#include <petscsys.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/runtime.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "ssdr/graph/locality.hpp"
#include "ssdr/propagation/label_propagation.hpp"
#include "propagation/block_product.hpp"

namespace {

int g_rank = 0, g_size = 1;

double now_synced() {
  MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime();
}

double max_over_ranks(double t) {
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

/// Best (smallest) max-over-ranks time of `reps` calls of f.
template <class F>
double best_of(int reps, F&& f) {
  double best = INFINITY;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_synced();
    f();
    best = std::min(best, max_over_ranks(MPI_Wtime() - t0));
  }
  return best;
}

/// Ghost rows of a product with M summed over the ranks: the columns of its off-diagonal
/// part (none on one rank, where M is SEQAIJ). Collective.
double ghost_rows(Mat M) {
  PetscInt ghosts = 0;
  PetscBool mpi = PETSC_FALSE;
  PetscObjectTypeCompare(reinterpret_cast<PetscObject>(M), MATMPIAIJ, &mpi);
  if (mpi) {
    Mat Ad = nullptr, Ao = nullptr;
    const PetscInt* garray = nullptr;
    MatMPIAIJGetSeqAIJ(M, &Ad, &Ao, &garray);
    MatGetSize(Ao, nullptr, &ghosts);
  }
  double total = static_cast<double>(ghosts);
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

/// STREAM triad on every rank at once: aggregate bytes per second (24 bytes per element).
double triad_rate(double mib, int reps) {
  const size_t n = static_cast<size_t>(mib * 1024 * 1024 / 8);
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  const double s = 3.0;
  const double t = best_of(reps, [&] {
    double* __restrict pa = a.data();
    const double* __restrict pb = b.data();
    const double* __restrict pc = c.data();
    for (size_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
  });
  volatile double sink = a[n / 2];
  (void)sink;
  return 24.0 * static_cast<double>(n) * g_size / t;
}

}  // namespace

int main(int argc, char** argv) {
  ssdr::initialize(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  std::string graph_file;
  int64_t n = 200000;
  int d = 4, blobs = 10, k = 8, classes = 10, labeled = 20, reps = 20, runs = 3;
  double triad_mib = 256;
  bool gmres = false, reorder = true;
  for (int a = 1; a < argc; ++a) {
    const std::string s = argv[a];
    auto val = [&](const char* key) { return s.substr(std::string(key).size()); };
    if (s.rfind("--graph=", 0) == 0) graph_file = val("--graph=");
    else if (s.rfind("--n=", 0) == 0) n = std::stoll(val("--n="));
    else if (s.rfind("--d=", 0) == 0) d = std::stoi(val("--d="));
    else if (s.rfind("--blobs=", 0) == 0) blobs = std::stoi(val("--blobs="));
    else if (s.rfind("--k=", 0) == 0) k = std::stoi(val("--k="));
    else if (s.rfind("--classes=", 0) == 0) classes = std::stoi(val("--classes="));
    else if (s.rfind("--labeled=", 0) == 0) labeled = std::stoi(val("--labeled="));
    else if (s.rfind("--reps=", 0) == 0) reps = std::stoi(val("--reps="));
    else if (s.rfind("--triad-mib=", 0) == 0) triad_mib = std::stod(val("--triad-mib="));
    else if (s == "--gmres") gmres = true;
    else if (s == "--no-reorder") reorder = false;
    else if (s.rfind("--runs=", 0) == 0) runs = std::stoi(val("--runs="));
  }
  int rc = 0;
  try {
    ssdr::set_quiet(true);
    // Rows: the block layout of n.
    ssdr::DistMatrix X = ssdr::make_dist(MPI_COMM_WORLD, n, graph_file.empty() ? d : 1);
    ssdr::graph::GraphOptions go;
    go.k = k;
    go.knn_recall_sample = 0;
    ssdr::graph::Graph g;
    const double tg0 = now_synced();
    if (!graph_file.empty()) {
      const ssdr::graph::KnnLists lists = ssdr::graph::read_knn_lists(graph_file, n, X.row_start, X.n_local, MPI_COMM_WORLD);
      go.k = std::min(k, lists.k);
      const ssdr::graph::KnnLists use = ssdr::graph::truncate(lists, go.k);
      go.knn_method = ssdr::graph::KnnMethod::exact;
      g = ssdr::graph::build_knn_graph(X, go, &use);
    } else {
      for (int64_t i = 0; i < X.n_local; ++i) {
        const int64_t gi = X.row_start + i;
        std::mt19937_64 rng(static_cast<uint64_t>(gi) * 0x9E3779B97F4A7C15ULL + 1);
        std::normal_distribution<double> N(0.0, 1.0);
        const int blob = static_cast<int>(gi % blobs);
        for (int t = 0; t < d; ++t) X(i, t) = N(rng) + 6.0 * ((blob >> (t % 4)) & 1) + 2.0 * blob * (t == 0);
      }
      go.knn_method = ssdr::graph::KnnMethod::nndescent;
      g = ssdr::graph::build_knn_graph(X, go);
    }
    const double t_graph = max_over_ranks(MPI_Wtime() - tg0);
    Mat A = g.A;
    const int m = classes;  // the block CG's width: the c class columns
    std::vector<int> labels(static_cast<size_t>(X.n_local), -1);
    for (int64_t i = 0; i < X.n_local; ++i) {
      const int64_t gi = X.row_start + i;
      if (gi / classes < labeled) labels[static_cast<size_t>(i)] = static_cast<int>(gi % classes);
    }
    MatInfo info;
    MatGetInfo(A, MAT_GLOBAL_SUM, &info);
    const double nnz = info.nz_used;
    const double ghosts_total = ghost_rows(A);

    const double triad = triad_rate(triad_mib, 10);

    ssdr::Owned<Vec> x, y;
    MatCreateVecs(A, x.out(), y.out());
    VecSet(x, 1.0);
    const double t_vec = best_of(reps, [&] { MatMult(A, x, y); });

    ssdr::Owned<Mat> Am;
    MatCreateMAIJ(A, m, Am.out());
    ssdr::Owned<Vec> xb, yb;
    MatCreateVecs(Am, xb.out(), yb.out());
    VecSet(xb, 1.0);
    const double t_block = best_of(reps, [&] { MatMult(Am, xb, yb); });
    const double bytes = 12.0 * nnz + 4.0 * static_cast<double>(n) + 16.0 * static_cast<double>(n) * m +
                         8.0 * ghosts_total * m;

    PetscInt nl = 0;
    MatGetLocalSize(A, &nl, nullptr);
    ssdr::Owned<Mat> Bd, Cd;
    MatCreateDense(MPI_COMM_WORLD, nl, PETSC_DECIDE, n, m, nullptr, Bd.out());
    MatSetRandom(Bd, nullptr);
    MatMatMult(A, Bd, MAT_INITIAL_MATRIX, PETSC_DEFAULT, Cd.out());
    const double t_mmm = best_of(reps, [&] {
      Mat c = Cd.get();
      MatMatMult(A, Bd, MAT_REUSE_MATRIX, PETSC_DEFAULT, &c);
    });

    // The graph as the fit multiplies it (methods::graph_and_propagation): partitioned by
    // graph::renumber_for_locality (-lp_mat_partitioning_type, levels by default: each rank's
    // rows in the Cuthill–McKee level order), then renumbered inside each rank by reverse
    // Cuthill–McKee (graph::rcm_reorder; -lp_reorder false skips it). Both orders measured.
    // One graph-times-block product on B, best of `reps`: ghost rows, bytes moved (the
    // file-order count less the ghost rows B no longer gathers), seconds of the block CG's
    // product and of MatMult on B's MAIJ form.
    struct Product {
      double ghosts, bytes, seconds, maij, single;
    };
    ssdr::Owned<Vec> xp, yp;  // the block vectors: the partitioned and reordered graphs share the layout
    auto product = [&](Mat B) {
      Product r;
      r.ghosts = ghost_rows(B);
      r.bytes = bytes - 8.0 * (ghosts_total - r.ghosts) * m;
      ssdr::Owned<Mat> Bm;
      MatCreateMAIJ(B, m, Bm.out());
      if (!xp) {
        MatCreateVecs(Bm, xp.out(), yp.out());
        VecSet(xp, 1.0);
      }
      r.maij = best_of(reps, [&] { MatMult(Bm, xp, yp); });
      // The block CG's product: MAIJ's kernels, the off-diagonal block on its rows only.
      ssdr::propagation::detail::BlockProduct bp(B, m);
      r.seconds = best_of(reps, [&] { bp.apply(xp, yp); });
      // The mixed-precision block CG's inner product: float values and blocks.
      PetscInt nl = 0;
      MatGetLocalSize(B, &nl, nullptr);
      std::vector<float> xf(static_cast<size_t>(nl) * static_cast<size_t>(m), 1.0f), yf(xf.size());
      // As the block CG runs it: rows scaled by 1/degree (D_S⁻¹ up to α), subnormals flushed.
      std::vector<double> w;
      for (double d : ssdr::graph::degrees(B)) w.push_back(d > 0 ? 1.0 / d : 0.0);
      ssdr::propagation::detail::SingleBlockProduct sp(B, m, w.data());
      r.single = best_of(reps, [&] {
        ssdr::propagation::detail::FlushSubnormals ftz;
        sp.apply(xf.data(), yf.data());
      });
      return r;
    };
    const double tp0 = now_synced();
    const ssdr::graph::Renumbering ren = ssdr::graph::renumber_for_locality(A, "lp_");
    const double t_partition = max_over_ranks(MPI_Wtime() - tp0);
    Mat Ap = ren.B;
    const Product pp = product(Ap);
    const double ghosts_p_total = pp.ghosts, bytes_p = pp.bytes, t_block_p = pp.seconds;
    const double tr0 = now_synced();
    const ssdr::graph::Reordered re = ssdr::graph::rcm_reorder(Ap);
    const double t_reorder = max_over_ranks(MPI_Wtime() - tr0);
    const Product pr = product(re.B);
    const double ghosts_r_total = pr.ghosts, bytes_r = pr.bytes, t_block_r = pr.seconds;

    ssdr::propagation::PropagationOptions po;
    po.reorder = reorder;  // as the fit: the local RCM on the partitioned graph (--no-reorder: none)
    const std::vector<int> labels_p = ssdr::graph::to_renumbered(ren, labels);
    // The block product the block CG runs per iteration.
    // (The mixed-precision default's is the single-precision product.)
    PetscBool mixed = PETSC_TRUE;
    PetscOptionsGetBool(nullptr, "lp_", "-mixed_precision", &mixed, nullptr);
    char inner_type[16] = "chebyshev";  // the mixed-precision inner solve (-lp_mixed_inner)
    PetscOptionsGetString(nullptr, "lp_", "-mixed_inner", inner_type, sizeof inner_type, nullptr);
    const bool chebyshev = mixed && std::string(inner_type) == "chebyshev";
    const double t_block_cg = po.reorder ? (mixed ? pr.single : t_block_r) : (mixed ? pp.single : t_block_p);
    // `runs` propagations by each solver, alternating which goes first (a busy machine's
    // load drifts): the minimum and the median of each.
    ssdr::propagation::PropagationResult cg, gm;
    std::vector<double> tc, tg;
    auto run_cg = [&] { tc.push_back(best_of(1, [&] { cg = ssdr::propagation::propagate(Ap, labels_p, classes, po); })); };
    auto run_gm = [&] {
      PetscOptionsSetValue(nullptr, "-lp_ksp_type", "gmres");
      tg.push_back(best_of(1, [&] { gm = ssdr::propagation::propagate(Ap, labels_p, classes, po); }));
      PetscOptionsClearValue(nullptr, "-lp_ksp_type");
    };
    for (int r = 0; r < (gmres ? runs : 1); ++r) {
      if (r % 2 == 1 && gmres) run_gm();
      run_cg();
      if (r % 2 == 0 && gmres) run_gm();
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    const double t_cg = *std::min_element(tc.begin(), tc.end());
    const int max_it = *std::max_element(cg.iterations.begin(), cg.iterations.end());

    if (g_rank == 0) {
      std::printf("{\"what\": \"graph\", \"n\": %lld, \"nnz\": %.0f, \"ghosts\": %.0f, \"columns\": %d, \"ranks\": %d, "
                  "\"build_s\": %.3f, \"source\": \"%s\"}\n",
                  static_cast<long long>(n), nnz, ghosts_total, m, g_size, t_graph,
                  graph_file.empty() ? "blobs+nndescent" : graph_file.c_str());
      std::printf("{\"what\": \"triad\", \"GB_per_s\": %.2f}\n", triad / 1e9);
      std::printf("{\"what\": \"vector_product\", \"s\": %.3e, \"per_column_of_block_s\": %.3e}\n", t_vec, t_block / m);
      std::printf("{\"what\": \"block_product\", \"s\": %.3e, \"bytes\": %.4e, \"GB_per_s\": %.2f, "
                  "\"of_triad\": %.2f, \"vs_%d_vector_products\": %.2f}\n",
                  t_block, bytes, bytes / t_block / 1e9, bytes / t_block / triad, m, t_block / (m * t_vec));
      std::printf("{\"what\": \"matmatmult_dense\", \"s\": %.3e, \"vs_block_product\": %.2f}\n", t_mmm, t_mmm / t_block);
      std::printf("{\"what\": \"partitioned\", \"partitioner\": \"%s\", \"level_ordered\": %s, "
                  "\"partition_s\": %.3f, \"ghosts\": %.0f, \"block_product_s\": %.3e, \"bytes\": %.4e, "
                  "\"GB_per_s\": %.2f, \"of_triad\": %.2f, \"maij_matmult_s\": %.3e, \"single_product_s\": %.3e}\n",
                  ren.partitioner.empty() ? "none" : ren.partitioner.c_str(), ren.partitioner == ssdr::graph::kLevelsPartitioner ? "true" : "false",
                  t_partition, ghosts_p_total, t_block_p, bytes_p, bytes_p / t_block_p / 1e9, bytes_p / t_block_p / triad,
                  pp.maij, pp.single);
      std::printf("{\"what\": \"partitioned + local RCM\", \"reorder_s\": %.3f, \"ghosts\": %.0f, "
                  "\"block_product_s\": %.3e, \"bytes\": %.4e, \"GB_per_s\": %.2f, \"of_triad\": %.2f, "
                  "\"maij_matmult_s\": %.3e, \"single_product_s\": %.3e}\n",
                  t_reorder, ghosts_r_total, t_block_r, bytes_r, bytes_r / t_block_r / 1e9, bytes_r / t_block_r / triad,
                  pr.maij, pr.single);
      // The block CG's passes over the block besides the product, per iteration (label_propagation.cpp,
      // cg_columns): 11 streams of n×c values (γ: p, q; r's update: r, p, q read, r written; x and
      // p: x, p, r read, x, p written), in float by default, and 34 bytes per row of the rows'
      // flags, scales and weights. At the triad's rate they take vector_bytes / triad: the
      // propagation cannot come below (1 + their time / the product's) × (iterations + 1)
      // products, its traffic floor, however well these passes run (a floor from memory: blocks
      // that fit the caches, as Fashion-MNIST's 70 000 rows do, can pass below it). Their time
      // at the memory's rate: the triad counts 24 bytes per element as STREAM does, but its
      // store to a also reads a's line first (write-allocate), 32 bytes in all, while every
      // write of these passes goes to a line the pass has just read.
      // The Chebyshev inner solve (the mixed-precision default) has one pass per iteration, the
      // product's (SingleBlockProduct::chebyshev_step): besides the product's bytes it reads z
      // and e_{j−1} and writes e_{j+1} over e_{j−1} (3 streams), and 5 bytes per row (σ, the
      // known flag); e_j's own row is the block the product reads. (Where a Chebyshev step fails
      // to halve a residual the float block CG finishes, and its passes are the 11 streams.)
      const double value_bytes = mixed ? 4.0 : 8.0;
      const double vector_bytes =
          chebyshev ? 3.0 * value_bytes * static_cast<double>(n) * m + 5.0 * static_cast<double>(n)
                    : 11.0 * value_bytes * static_cast<double>(n) * m + 34.0 * static_cast<double>(n);
      const double floor_ratio = 1.0 + vector_bytes / (triad * 32.0 / 24.0) / t_block_cg;
      const double ratio = t_cg / ((max_it + 1) * t_block_cg);
      std::printf("{\"what\": \"propagation\", \"solver\": \"%s\", \"inner\": \"%s\", \"s\": %.3f, \"max_iterations\": %d, "
                  "\"over_iterations_x_block_product\": %.2f, \"vector_bytes_per_iteration\": %.4e, "
                  "\"traffic_floor\": %.2f, \"over_traffic_floor\": %.2f, \"iterations\": [",
                  cg.solver.c_str(), mixed ? inner_type : "double", t_cg, max_it, ratio, vector_bytes, floor_ratio,
                  ratio / floor_ratio);
      for (size_t c = 0; c < cg.iterations.size(); ++c) std::printf("%s%d", c ? ", " : "", cg.iterations[c]);
      std::printf("]}\n");
      std::fflush(stdout);
    }
    if (gmres) {
      double diff = 0;
      for (size_t e = 0; e < gm.F.v.size(); ++e) diff = std::max(diff, std::abs(gm.F.v[e] - cg.F.v[e]));
      diff = max_over_ranks(diff);
      int total = 0;
      for (int it : gm.iterations) total += it;
      const double t_gm = *std::min_element(tg.begin(), tg.end());
      if (g_rank == 0) {
        std::printf("{\"what\": \"gmres\", \"solver\": \"%s\", \"s\": %.3f, \"median_s\": %.3f, "
                    "\"block_cg_median_s\": %.3f, \"runs\": %d, \"total_iterations\": %d, "
                    "\"speedup_of_block_cg\": %.2f, \"speedup_medians\": %.2f, \"max_abs_diff_F\": %.3e}\n",
                    gm.solver.c_str(), t_gm, median(tg), median(tc), runs, total, t_gm / t_cg,
                    median(tg) / median(tc), diff);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_propagation: %s\n", e.what());
    rc = 1;
  }
  ssdr::finalize();
  return rc;
}
