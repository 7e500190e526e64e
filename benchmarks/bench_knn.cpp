// kNN graph stage benchmark (Google Benchmark under MPI).
//
//   mpiexec -n P bench_knn [--sizes=10000,20000] [--data=DIR] [--k=8] [benchmark flags]
//
// DIR holds Fashion-MNIST's IDX gz files (train-images-idx3-ubyte.gz, then t10k-…); the
// first n images (d = 784, pixels 0..255 as doubles) are block-distributed over the ranks
// (read here with zlib so the benchmark does not depend on src/io). If DIR is missing,
// uniform random data of the same shape is used instead.
//
// Reported per benchmark (rank 0, wall time = max over ranks, one iteration):
//   Dgemm/2000x2000x784   one plain dgemm per rank: the machine's per-core BLAS rate
//   TiledGemmOnly/n       the distance GEMMs of knn_search alone (same tile shapes, no
//                         selection): what the ring would cost if selection were free
//   KnnSearch/n           ssdr::graph::knn_search (ring, GEMM, selection, exact re-check)
//   KnnGraph/n            ssdr::graph::build_knn_graph (search + symmetrize + σ + MPIAIJ)
// GFLOP/s counts 2·n²·d flops (all n² pairs) for the kNN rows, 2·m·n·k for the dgemm;
// GFLOPs_per_rank divides by the rank count.
#include <benchmark/benchmark.h>
#include <petscsys.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/graph/knn.hpp"

namespace {

int g_rank = 0, g_size = 1;
std::string g_data = "/usr/share/datasets/fashion-mnist";
int g_k = 8;

uint32_t be32(const unsigned char* b) {
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
}

/// Appends rows [from, to) of a gz IDX image file (global row numbering starts at `base`)
/// to X's local block. Returns the file's row count, or -1 when unreadable.
int64_t read_idx_rows(const std::string& path, int64_t base, int64_t from, int64_t to,
                      std::vector<double>& out, int64_t& d) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return -1;
  unsigned char h[16];
  if (gzread(f, h, 16) != 16 || be32(h) != 0x00000803) {
    gzclose(f);
    return -1;
  }
  const int64_t count = be32(h + 4);
  d = int64_t(be32(h + 8)) * be32(h + 12);
  std::vector<unsigned char> row(static_cast<size_t>(d));
  const int64_t last = std::min(count, to - base);
  for (int64_t i = 0; i < last; ++i) {
    if (gzread(f, row.data(), static_cast<unsigned>(d)) != d) break;
    if (base + i >= from)
      for (int64_t t = 0; t < d; ++t) out.push_back(row[t]);
  }
  gzclose(f);
  return count;
}

/// The first n samples, block-distributed.
ssdr::DistMatrix load(int64_t n) {
  static std::vector<std::pair<int64_t, ssdr::DistMatrix>> cache;
  for (auto& c : cache)
    if (c.first == n) return c.second;
  ssdr::Layout l = ssdr::block_layout(n, MPI_COMM_WORLD);
  std::vector<double> v;
  int64_t d = 784;
  int64_t c1 = read_idx_rows(g_data + "/train-images-idx3-ubyte.gz", 0, l.start,
                             l.start + l.n_local, v, d);
  if (c1 > 0 && l.start + l.n_local > c1)
    read_idx_rows(g_data + "/t10k-images-idx3-ubyte.gz", c1, l.start, l.start + l.n_local, v, d);
  int ok = static_cast<int64_t>(v.size()) == l.n_local * d, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  ssdr::DistMatrix X = ssdr::make_dist(MPI_COMM_WORLD, n, d);
  if (all_ok) {
    X.v = std::move(v);
  } else {
    if (g_rank == 0) std::fprintf(stderr, "bench_knn: %s unreadable, using random data\n", g_data.c_str());
    std::mt19937_64 gen(1234 + g_rank);
    std::uniform_real_distribution<double> u(0, 255);
    for (double& x : X.v) x = u(gen);
  }
  cache.emplace_back(n, X);
  return X;
}

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// CPU seconds summed over the ranks of the last timed() call (process CPU time: on a
/// shared machine the wall time includes waiting for a core, the CPU time does not).
double g_cpu_sum = 0;

/// Times fn() once on all ranks: wall time = max over ranks.
template <class F>
double timed(F&& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime(), c0 = cpu_seconds();
  fn();
  double t = MPI_Wtime() - t0, c = cpu_seconds() - c0, tmax = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&c, &g_cpu_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return tmax;
}

/// GFLOPs: wall-clock rate of all ranks; GFLOPs_per_rank: that / ranks; GFLOPs_per_cpu_s:
/// flops per CPU-second (the per-core rate, insensitive to other load on the machine).
void set_flops(benchmark::State& state, double flops, double seconds) {
  state.SetIterationTime(seconds);
  state.counters["GFLOPs"] = flops / seconds * 1e-9;
  state.counters["GFLOPs_per_rank"] = flops / seconds * 1e-9 / g_size;
  state.counters["GFLOPs_per_cpu_s"] = flops / g_cpu_sum * 1e-9;
  state.counters["ranks"] = g_size;
}

void BM_Dgemm(benchmark::State& state) {
  const int64_t m = 2000, n = 2000, k = 784;
  std::vector<double> A(m * k, 1.0), B(k * n, 0.5), C(m * n);
  for (auto _ : state) {
    const double t = timed([&] {
      ssdr::blas::gemm('T', 'N', m, n, k, 1.0, A.data(), k, B.data(), k, 0.0, C.data(), m);
    });
    set_flops(state, 2.0 * m * n * k * g_size, t);
  }
}

void BM_TiledGemmOnly(benchmark::State& state) {
  const int64_t n = state.range(0);
  ssdr::DistMatrix X = load(n);
  const int64_t d = X.cols, nl = X.n_local, ti = 256, tj = 512;
  std::vector<double> G(ti * tj);
  for (auto _ : state) {
    const double t = timed([&] {
      // nl × n pairs: the own block against itself, once per ring step (as many flops).
      for (int step = 0; step < g_size; ++step)
        for (int64_t i0 = 0; i0 < nl; i0 += ti)
          for (int64_t j0 = 0; j0 < n / g_size; j0 += tj) {
            const int64_t a = std::min(ti, nl - i0), b = std::min(tj, std::min(nl, n / g_size) - j0);
            if (b <= 0) continue;
            ssdr::blas::gemm('T', 'N', b, a, d, 1.0, X.v.data() + j0 * d, d,
                             X.v.data() + i0 * d, d, 0.0, G.data(), b);
          }
    });
    set_flops(state, 2.0 * n * n * d, t);
  }
}

void BM_KnnSearch(benchmark::State& state) {
  const int64_t n = state.range(0);
  ssdr::DistMatrix X = load(n);
  for (auto _ : state) {
    const double t = timed([&] { benchmark::DoNotOptimize(ssdr::graph::knn_search(X, g_k)); });
    set_flops(state, 2.0 * n * n * X.cols, t);
  }
}

void BM_KnnGraph(benchmark::State& state) {
  const int64_t n = state.range(0);
  ssdr::DistMatrix X = load(n);
  for (auto _ : state) {
    ssdr::graph::Graph g;
    ssdr::graph::GraphOptions opt;
    opt.k = g_k;
    const double t = timed([&] { g = ssdr::graph::build_knn_graph(X, opt); });
    set_flops(state, 2.0 * n * n * X.cols, t);
    state.counters["edges"] = static_cast<double>(g.edges);
    state.counters["sigma"] = g.sigma;
  }
}

/// Ranks other than 0 run the same benchmarks (they are collective) but print nothing.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (PetscInitialize(&argc, &argv, nullptr, nullptr) != 0) return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  std::vector<int64_t> sizes = {10000, 20000};
  for (int a = 1; a < argc; ++a) {
    std::string s = argv[a];
    if (s.rfind("--sizes=", 0) == 0) {
      sizes.clear();
      std::stringstream ss(s.substr(8));
      std::string tok;
      while (std::getline(ss, tok, ',')) sizes.push_back(std::stoll(tok));
    } else if (s.rfind("--data=", 0) == 0) {
      g_data = s.substr(7);
    } else if (s.rfind("--k=", 0) == 0) {
      g_k = std::stoi(s.substr(4));
    }
  }
  auto common = [](benchmark::internal::Benchmark* b) {
    b->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
  };
  common(benchmark::RegisterBenchmark("Dgemm/2000x2000x784", BM_Dgemm));
  for (int64_t n : sizes) {
    common(benchmark::RegisterBenchmark("TiledGemmOnly", BM_TiledGemmOnly)->Arg(n));
    common(benchmark::RegisterBenchmark("KnnSearch", BM_KnnSearch)->Arg(n));
    common(benchmark::RegisterBenchmark("KnnGraph", BM_KnnGraph)->Arg(n));
  }
  if (g_rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  PetscFinalize();
  return 0;
}
