// kNN graph stage benchmark (Google Benchmark under MPI).
//
//   mpiexec -n P bench_knn [--sizes=20000,70000] [--data=DIR] [--approx-sizes=280000]
//                          [--approx-data=DIR2] [--k=8] [--rho=R] [--delta=D] [--shared-group=G]
//                          [--fetch-budget-mib=B] [--verbose]
//                          [benchmark flags]   (--verbose: the searches' progress lines)
//
// DIR holds Fashion-MNIST's IDX files (train-images-idx3-ubyte[.gz], then t10k-…); the
// first n images (d = 784, pixels 0..255 as doubles) are block-distributed over the ranks
// (read here with zlib so the benchmark does not depend on src/io). If DIR is missing,
// uniform random data of the same shape is used instead. --approx-sizes are run with the
// approximate backend only, reading DIR2 (e.g. jobs/make_fashion_1m.sh --variants 4).
//
// Reported per benchmark (rank 0, wall time = max over ranks, one iteration):
//   Sgemm/2000x2000x784   one plain sgemm per rank, all ranks at once: the per-core rate
//                         that bounds the exact search (bound_s = n²d / (P · rate))
//   KnnSearch/n           ssdr::graph::knn_search (exact: half ring, sgemm filter, exact
//                         re-ranking); GFLOP/s counts n²·d flops (each unordered pair once)
//   KnnNNDescent/n        ssdr::graph::nndescent_search (approximate), with recall@k
//                         estimated by knn_recall on 1000 rows
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
#include "ssdr/core/progress.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/nndescent.hpp"

namespace {

int g_rank = 0, g_size = 1;
std::string g_data = "/usr/share/datasets/fashion-mnist";
int g_k = 8;
ssdr::graph::NNDescentOptions g_nnd;  ///< --rho=, --delta=, --fetch-budget-mib= (B_f), --shared-group= override the defaults

uint32_t be32(const unsigned char* b) {
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
}

/// Appends rows [from, to) of a gz IDX image file (global row numbering starts at `base`)
/// to X's local block. Returns the file's row count, or -1 when unreadable.
int64_t read_idx_rows(const std::string& path, int64_t base, int64_t from, int64_t to,
                      std::vector<double>& out, int64_t& d) {
  gzFile f = gzopen((path + ".gz").c_str(), "rb");  // zlib reads plain files too
  if (!f) f = gzopen(path.c_str(), "rb");
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
std::string g_approx_data;

ssdr::DistMatrix load(int64_t n, const std::string& dir) {
  static std::vector<std::pair<int64_t, ssdr::DistMatrix>> cache;
  for (auto& c : cache)
    if (c.first == n) return c.second;
  ssdr::Layout l = ssdr::block_layout(n, MPI_COMM_WORLD);
  std::vector<double> v;
  int64_t d = 784;
  int64_t c1 = read_idx_rows(dir + "/train-images-idx3-ubyte", 0, l.start, l.start + l.n_local, v, d);
  if (c1 > 0 && l.start + l.n_local > c1)
    read_idx_rows(dir + "/t10k-images-idx3-ubyte", c1, l.start, l.start + l.n_local, v, d);
  int ok = static_cast<int64_t>(v.size()) == l.n_local * d, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  ssdr::DistMatrix X = ssdr::make_dist(MPI_COMM_WORLD, n, d);
  if (all_ok) {
    X.v = std::move(v);
  } else {
    if (g_rank == 0) std::fprintf(stderr, "bench_knn: %s unreadable, using random data\n", dir.c_str());
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

double g_sgemm_rate = 0;  ///< flop/s per rank, measured by BM_Sgemm (run first)

/// The machine's sgemm rate per rank (flop/s): the median of calls of a 2000×2000×784 sgemm
/// (the search's inner dimension) repeated for at least 1.5 s. Single calls (0.1-0.2 s) varied
/// from 60 to 91 GFLOP/s/core on this VM within one afternoon; a median over 1.5 s, taken
/// right before and right after each timed search, keeps the bound from riding on one sample.
double sgemm_rate() {
  const int64_t m = 2000, n = 2000, k = 784;
  std::vector<float> A(m * k, 1.0f), B(k * n, 0.5f), C(m * n);
  ssdr::blas::gemm('T', 'N', m, n, k, 1.0f, A.data(), k, B.data(), k, 0.0f, C.data(), m);  // warm-up
  std::vector<double> ts;
  double total = 0;
  while (total < 1.5 || ts.size() < 7) {
    ts.push_back(timed([&] { ssdr::blas::gemm('T', 'N', m, n, k, 1.0f, A.data(), k, B.data(), k, 0.0f, C.data(), m); }));
    total += ts.back();
  }
  std::sort(ts.begin(), ts.end());
  return 2.0 * m * n * k / ts[ts.size() / 2];
}

void BM_Sgemm(benchmark::State& state) {
  for (auto _ : state) {
    g_sgemm_rate = sgemm_rate();
    const double flops = 2.0 * 2000 * 2000 * 784;
    set_flops(state, flops * g_size, flops / g_sgemm_rate);
  }
}

void BM_KnnSearch(benchmark::State& state) {
  const int64_t n = state.range(0);
  ssdr::DistMatrix X = load(n, g_data);
  for (auto _ : state) {
    // The sgemm rate measured again right before and right after the search, and the bound
    // taken from their mean time: this VM's rate drifts by ±10 % within seconds, and one
    // side alone moved the ratio by as much between back-to-back runs of the same search.
    const double before = sgemm_rate();
    const double t = timed([&] { benchmark::DoNotOptimize(ssdr::graph::knn_search(X, g_k)); });
    const double after = sgemm_rate();
    g_sgemm_rate = 2.0 / (1.0 / before + 1.0 / after);
    state.counters["sgemm_before_GF"] = before * 1e-9;
    state.counters["sgemm_after_GF"] = after * 1e-9;
    const double flops = static_cast<double>(n) * n * X.cols;  // each unordered pair once: 2d flops
    set_flops(state, flops, t);
    if (g_sgemm_rate > 0) {
      state.counters["bound_s"] = flops / (g_size * g_sgemm_rate);
      state.counters["over_bound"] = t / (flops / (g_size * g_sgemm_rate));
    }
    state.counters["recall"] = 1.0;
  }
}

void BM_KnnNNDescent(benchmark::State& state) {
  const int64_t n = state.range(0);
  ssdr::DistMatrix X = load(n, state.range(1) ? g_approx_data : g_data);
  for (auto _ : state) {
    ssdr::graph::KnnLists L;
    const double t = timed([&] { L = ssdr::graph::nndescent_search(X, g_k, g_nnd); });
    state.SetIterationTime(t);
    state.counters["ranks"] = g_size;
    state.counters["recall"] = ssdr::graph::knn_recall(X, L, 1000, 1);
    state.counters["us_per_sample"] = t / static_cast<double>(n) * 1e6;
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
  std::vector<int64_t> sizes = {20000, 70000}, approx_sizes;
  auto parse_sizes = [](const std::string& list) {
    std::vector<int64_t> v;
    std::stringstream ss(list);
    std::string tok;
    while (std::getline(ss, tok, ',')) v.push_back(std::stoll(tok));
    return v;
  };
  bool verbose = false;
  for (int a = 1; a < argc; ++a) {
    std::string s = argv[a];
    if (s.rfind("--sizes=", 0) == 0) {
      sizes = parse_sizes(s.substr(8));
    } else if (s.rfind("--approx-sizes=", 0) == 0) {
      approx_sizes = parse_sizes(s.substr(15));
    } else if (s.rfind("--approx-data=", 0) == 0) {
      g_approx_data = s.substr(14);
    } else if (s.rfind("--data=", 0) == 0) {
      g_data = s.substr(7);
    } else if (s.rfind("--rho=", 0) == 0) {
      g_nnd.rho = std::stod(s.substr(6));
    } else if (s.rfind("--delta=", 0) == 0) {
      g_nnd.delta = std::stod(s.substr(8));
    } else if (s.rfind("--fetch-budget-mib=", 0) == 0) {
      g_nnd.fetch_budget_bytes = std::stod(s.substr(19)) * (1 << 20);
    } else if (s.rfind("--shared-group=", 0) == 0) {
      g_nnd.shared_group = std::stoi(s.substr(15));  // 1: no rank reads another's rows in place
    } else if (s.rfind("--k=", 0) == 0) {
      g_k = std::stoi(s.substr(4));
    } else if (s == "--verbose") {
      verbose = true;  // the searches' own progress (NN-descent's rounds)
    }
  }
  auto common = [](benchmark::internal::Benchmark* b) {
    b->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
  };
  ssdr::set_quiet(!verbose);
  common(benchmark::RegisterBenchmark("Sgemm/2000x2000x784", BM_Sgemm));
  for (int64_t n : sizes) {
    common(benchmark::RegisterBenchmark("KnnSearch", BM_KnnSearch)->Arg(n));
    common(benchmark::RegisterBenchmark("KnnNNDescent", BM_KnnNNDescent)->Args({n, 0}));
  }
  for (int64_t n : approx_sizes)
    common(benchmark::RegisterBenchmark("KnnNNDescent", BM_KnnNNDescent)->Args({n, 1}));
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
