// Distributed NN-descent (W. Dong, M. Charikar, K. Li, "Efficient k-nearest neighbor graph
// construction for generic similarity measures", WWW 2011: Algorithm 2, NN-descent with
// local join, incremental search (new/old flags), sampling (ρ) and early termination (δ)).
//
// Ownership: rank r owns the lists of its rows (K = max(k, kBuildMin) entries during the build,
// cut to k at the end). One round:
//   1. sample: each row v takes up to ρK of its entries flagged new (marking them old) and its
//      old entries; the reverse entries (v in the list of u) go to u's owner (MPI_Alltoallv, in
//      pieces of kReverseChunk source rows), which keeps a uniform sample of ρK new and ρK old
//      per row by bottom-k hashing (the sample does not depend on the arrival order). The
//      random choices come from (seed, round, global row).
//   2. local join, in fetch blocks (all local rows when the other ranks' rows fit in
//      B_f (options.fetch_budget_bytes), else fewer): the candidate set C_v = N_v ∪ O_v of every row of the block
//      with new candidates; the remote rows that the block needs are fetched once (ids by
//      MPI_Alltoallv to their owners, rows with their current k-th distances and norms back),
//      except those of the ranks on the same node, read in place (share_rows: an MPI-3
//      shared-memory window holds every rank's float rows, norms and current k-th distances);
//      per row the dot products of the pairs (a ∈ N, b ∈ N, a < b) and (a ∈ N, b ∈ O), read in
//      place from the rows (join_dots, 4×4 or 2×4 register tiles), give their distances; a pair is
//      proposed to a's list if it does not lose to a's k-th distance (and to b's likewise), the
//      proposals of every kChunk rows go to the lists' owners (Alltoallv) and are applied.
//      Each list after the round is the K best (order (distance, global index)) of its
//      entries before it and of every pair the round computed for it: the order of visits
//      and updates, and so the rank count and the fetch blocks, do not matter.
//   3. stop when fewer than δ·n·K entries entered the lists in the round (and are still
//      there at its end), or after max_iterations.
// The same seed gives the same lists on any rank count and fetch budget B_f: every random
// choice is a function of (seed, round, global row), the float rows are centered by a μ
// summed in global order (or not at all when that μ is negligible, Build::center_rows), a
// pair's float distance does not depend on where it is computed, and the lists after a
// round do not depend on the order (above).
// The first round has N_v = K random rows (distinct, ≠ v) and v itself joins them (the
// distances of the initial entries). Build distances are single-precision GEMM values on the
// centered rows (the search only needs their order); at the end every entry's distance is
// recomputed exactly in double as Σ_t (x_t − y_t)² in index order (knn_search's bits, the same
// from both ends of an edge) and the lists are re-sorted by (dist2, global index) and cut to k.
// Each phase is a method of the class Build below: initialization (its constructor),
// exchange (step 1), local_join and update (step 2, per join chunk), exact_lists (the end);
// nndescent_search checks the options and runs the rounds.
//
// Memory per rank (bytes; n_l local rows, K = 12, ρ = 1): X's block, plus its float copy only
// when that is at most B_f (otherwise rows are converted to float as they are gathered, with
// a cache of converted rows of at most B_f/4), the join order 8·n_l (24·n_l while it is
// built), the lists 13·K·n_l, the candidate sets 8·(2K + 2K)·n_l in flat arrays, the
// reverse sampling 8·K·n_l during the sampling step, the fetched rows of one local-join chunk
// and their reply (each at most B_f, blocks shrink to keep them so), the proposals of
// one join chunk: about 0.65 KB per row plus 3·B_f.
#include "ssdr/graph/nndescent.hpp"

#include "knn_internal.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <sys/statvfs.h>
#include <string>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::graph {

namespace {

using detail::exact_dist2;
using detail::k_message;

constexpr int kBuildMin = 12;      ///< list length during the build (K = max(k, 12): recall 0.98 at k = 8 on Fashion-MNIST; 10 gave 0.97 and more rounds)
constexpr double kInPlaceMeanFraction = 0.01;  ///< float rows with ‖μ‖² at most this fraction of their spread are not centered (Build::center_rows)
constexpr int64_t kChunk = 4096;   ///< rows per local-join chunk (proposal exchange) at most (1024 cost 20 % of the time at 70k rows)
constexpr int64_t kReverseChunk = 65536;  ///< source rows per reverse-candidate exchange (bounds its buffers)
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
constexpr uint8_t kEntered = 2;  ///< Lists::fresh of an entry that entered in the current round (also new)

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A small deterministic generator for one (seed, round, row, purpose).
struct Rng {
  uint64_t s;
  Rng(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
      : s(splitmix(splitmix(splitmix(seed ^ 0x5851F42D4C957F2Dull) ^ a) ^ b) ^ c) {}
  uint64_t next() { return s = splitmix(s); }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
};

/// Keeps a random subset of `cap` elements of v (partial Fisher–Yates), order then sorted.
void sample_to(std::vector<int64_t>& v, int64_t cap, Rng& rng) {
  const int64_t m = static_cast<int64_t>(v.size());
  if (m > cap) {
    for (int64_t i = 0; i < cap; ++i) std::swap(v[static_cast<size_t>(i)], v[static_cast<size_t>(i + rng.below(m - i))]);
    v.resize(static_cast<size_t>(cap));
  }
  std::sort(v.begin(), v.end());
}

/// Eight floats in one vector register (AVX: ymm; the baseline clone splits it in two xmm).
typedef float V8 __attribute__((vector_size(32)));

// By reference, not by value: a V8 passed in registers would have a different ABI in the two
// clones (-Wpsabi); both helpers are inlined.
__attribute__((always_inline)) inline void load8(V8& v, const float* p) { std::memcpy(&v, p, sizeof v); }

__attribute__((always_inline)) inline float sum8(const V8& v) { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }

/// The body of join_dots with register tiles of TA × 4 rows (below). Inlined into each
/// target's function.
template <int TA>
[[gnu::always_inline]] inline void join_dots_tiles(const float* const* rows, int64_t nn, int64_t nc, int64_t d,
                                                   float* G) {
  const int64_t d8 = d - d % 8;
  for (int64_t a = 0; a < nn; a += TA) {
    const int64_t na = std::min<int64_t>(TA, nn - a);
    const float* xs[TA];
    for (int p = 0; p < TA; ++p) xs[p] = rows[a + std::min<int64_t>(p, na - 1)];
    for (int64_t b = a + 1; b < nc; b += 4) {
      const int64_t nb = std::min<int64_t>(4, nc - b);
      const float* ys[4];
      for (int q = 0; q < 4; ++q) ys[q] = rows[b + std::min<int64_t>(q, nb - 1)];
      V8 s[TA][4] = {};
      for (int64_t t = 0; t < d8; t += 8) {
        V8 u[TA];
        for (int p = 0; p < TA; ++p) load8(u[p], xs[p] + t);
        for (int q = 0; q < 4; ++q) {
          V8 w;
          load8(w, ys[q] + t);
          for (int p = 0; p < TA; ++p) s[p][q] += u[p] * w;
        }
      }
      float r[TA][4];
      for (int p = 0; p < TA; ++p)
        for (int q = 0; q < 4; ++q) r[p][q] = sum8(s[p][q]);
      for (int64_t t = d8; t < d; ++t)
        for (int q = 0; q < 4; ++q)
          for (int p = 0; p < TA; ++p) r[p][q] += xs[p][t] * ys[q][t];
      for (int64_t p = 0; p < na; ++p)
        for (int64_t q = 0; q < nb; ++q) G[(a + p) * nc + b + q] = r[p][q];
    }
  }
}

}  // namespace

namespace detail {

/// 2 × 4 tiles: 8 accumulators fit AVX's 16 vector registers. The "fma" clone (AVX and FMA:
/// 8-wide float registers need no AVX2) is chosen on every x86-64 CPU that has FMA, Intel or
/// AMD ("arch=haswell" would match Intel Haswell only).
__attribute__((target_clones("fma", "default"))) void join_dots_2x4(const float* const* rows, int64_t nn,
                                                                  int64_t nc, int64_t d, float* G) {
  join_dots_tiles<2>(rows, nn, nc, d, G);
}

/// 4 × 4 tiles where AVX-512 gives 32 vector registers (16 accumulators): a third fewer row
/// loads per multiply-add than 2 × 4. The same 8-wide FMA arithmetic per pair (and the same
/// tail) as the "fma" clone of join_dots_2x4, so the same bits (tested).
__attribute__((target("avx512f,avx512vl,fma"))) void join_dots_4x4(const float* const* rows, int64_t nn,
                                                                  int64_t nc, int64_t d, float* G) {
  join_dots_tiles<4>(rows, nn, nc, d, G);
}

namespace {
int g_last_shared_ranks = 0;  ///< set by each Build (share_rows), read by tests
int g_last_rows = 0;          ///< set by each Build (center_rows), read by tests: 0 converted, 1 copied, 2 in place
bool g_last_centered = true;  ///< set by each Build (center_rows), read by tests
}  // namespace

int nndescent_last_shared_ranks() { return g_last_shared_ranks; }
int nndescent_last_rows() { return g_last_rows; }
bool nndescent_last_centered() { return g_last_centered; }

bool join_dots_has_4x4() {
  static const bool wide = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                           __builtin_cpu_supports("fma");
  return wide;
}

// With u = 2⁻²⁴ and ẽ = ‖ã − b̃‖²: the dot product errs by at most γ_d·Σ|ã_t b̃_t| ≤
// γ_d(‖ã‖² + ‖b̃‖²)/2, doubled in 2·ã·b̃; the norms' rounding to float and the two roundings of
// the sum add at most 4u(‖ã‖² + ‖b̃‖²); the centering's rounding (u + 2⁻⁵³ per entry) moves
// ‖ã − b̃‖ by at most u'(‖a‖ + ‖b‖), so |ẽ − e| ≤ 4.1u'(‖ã‖² + ‖b̃‖²); the max(0, ·) only
// brings d̃ closer to e ≥ 0. Together γ_{d+12}(‖ã‖² + ‖b̃‖²) = γ·s. The other row's norm:
// ‖b̃‖ ≤ ‖ã‖ + √ẽ gives ‖b̃‖² ≤ 2‖ã‖² + 2ẽ, and ẽ ≤ d̃ + γs, so s ≤ 3‖ã‖² + 2d̃ + 2γs and
// δ = γs ≤ γ(3‖ã‖² + 2d̃)/(1 − 2γ), with ‖ã‖² ≤ ñ_a(1 + 2u) (ñ_a: ‖ã‖² rounded to float).
// Underflow (products below 2⁻¹²⁶) adds at most 2⁻¹⁴⁹ per operation: (4d + 8)·2⁻¹⁴⁹.
double float_distance_bound(float own_norm, float dist, int64_t d) {
  constexpr double uf = 0x1p-24;
  const double g = static_cast<double>(d + 12) * uf / (1.0 - static_cast<double>(d + 12) * uf);
  const double na = static_cast<double>(own_norm) * (1.0 + 2.0 * uf);
  const double dt = std::max(0.0, static_cast<double>(dist));
  return g * (3.0 * na + 2.0 * dt) / (1.0 - 2.0 * g) + static_cast<double>(4 * d + 8) * 0x1p-149;
}

}  // namespace detail

namespace {

/// The local join's dot products straight from the rows (no gathered copy, no GEMM packing:
/// those were a third of the build at 70 000 rows on 2 ranks): G[a·nc + b] = rows[a]·rows[b]
/// for every a < nn and b > a (entries with b ≤ a are left undefined), rows[q] pointing to d
/// floats. Register tiles of 4 × 4 rows with AVX-512, else 2 × 4 (detail::join_dots_4x4,
/// join_dots_2x4); the summation order is fixed by d alone (8 lanes, then their fixed sum),
/// so a pair's value does not depend on the group or tile it is computed in. The FMA versions
/// and the baseline one (no FMA) may differ in the last bits: the build's order, not the
/// final lists' distances, which are recomputed exactly. Local.
void join_dots(const float* const* rows, int64_t nn, int64_t nc, int64_t d, float* G) {
  if (detail::join_dots_has_4x4()) detail::join_dots_4x4(rows, nn, nc, d, G);
  else detail::join_dots_2x4(rows, nn, nc, d, G);
}

/// The staging and receive buffers of one kind of exchange. A caller that keeps one across
/// rounds allocates no large block per round; the buffers are freed with it.
template <class T>
struct Exchange {
  std::vector<T> send, recv;
};

/// MPI_Alltoallv of trivially copyable records, bucketed by destination rank; the records
/// received, in rank order, are x.recv (returned). On one rank they are copied once, without
/// MPI. Collective over comm.
template <class T>
const std::vector<T>& alltoallv_records(const std::vector<std::vector<T>>& out, MPI_Comm comm, Exchange<T>& x,
                                        std::vector<int>* from = nullptr) {
  const int size = static_cast<int>(out.size());
  std::vector<T>& send = x.send;
  std::vector<T>& recv = x.recv;
  if (size == 1) {
    recv.assign(out[0].begin(), out[0].end());
    if (from) from->assign(recv.size(), 0);
    return recv;
  }
  MPI_Datatype type;
  MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &type);
  MPI_Type_commit(&type);
  std::vector<int> sc(static_cast<size_t>(size)), rc(static_cast<size_t>(size)), sd(static_cast<size_t>(size) + 1, 0),
      rd(static_cast<size_t>(size) + 1, 0);
  for (int r = 0; r < size; ++r) sc[static_cast<size_t>(r)] = static_cast<int>(out[static_cast<size_t>(r)].size());
  MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm);
  for (int r = 0; r < size; ++r) {
    sd[static_cast<size_t>(r) + 1] = sd[static_cast<size_t>(r)] + sc[static_cast<size_t>(r)];
    rd[static_cast<size_t>(r) + 1] = rd[static_cast<size_t>(r)] + rc[static_cast<size_t>(r)];
  }
  send.resize(static_cast<size_t>(sd[static_cast<size_t>(size)]));
  recv.resize(static_cast<size_t>(rd[static_cast<size_t>(size)]));
  for (int r = 0; r < size; ++r)
    std::copy(out[static_cast<size_t>(r)].begin(), out[static_cast<size_t>(r)].end(), send.begin() + sd[static_cast<size_t>(r)]);
  MPI_Alltoallv(send.data(), sc.data(), sd.data(), type, recv.data(), rc.data(), rd.data(), type, comm);
  MPI_Type_free(&type);
  if (from) {
    from->assign(recv.size(), 0);
    for (int r = 0; r < size; ++r)
      for (int q = rd[static_cast<size_t>(r)]; q < rd[static_cast<size_t>(r) + 1]; ++q) (*from)[static_cast<size_t>(q)] = r;
  }
  return recv;
}



/// MPI_Alltoallv of records already in one buffer in destination-rank order (sc[r] records
/// for rank r); the records received, in source-rank order, go to recv, their counts per
/// source to rc. No staging copy. Collective over comm.
template <class T>
void alltoallv_flat(const T* send, const std::vector<int>& sc, MPI_Comm comm, std::vector<T>& recv, std::vector<int>& rc) {
  const int size = static_cast<int>(sc.size());
  rc.assign(static_cast<size_t>(size), 0);
  if (size == 1) {
    recv.assign(send, send + sc[0]);
    rc[0] = sc[0];
    return;
  }
  MPI_Datatype type;
  MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &type);
  MPI_Type_commit(&type);
  MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm);
  std::vector<int> sd(static_cast<size_t>(size) + 1, 0), rd(static_cast<size_t>(size) + 1, 0);
  for (int r = 0; r < size; ++r) {
    sd[static_cast<size_t>(r) + 1] = sd[static_cast<size_t>(r)] + sc[static_cast<size_t>(r)];
    rd[static_cast<size_t>(r) + 1] = rd[static_cast<size_t>(r)] + rc[static_cast<size_t>(r)];
  }
  recv.resize(static_cast<size_t>(rd[static_cast<size_t>(size)]));
  MPI_Alltoallv(send, sc.data(), sd.data(), type, recv.data(), rc.data(), rd.data(), type, comm);
  MPI_Type_free(&type);
}


/// A reverse candidate: `source` has `target` in its list; flagged new when source ≥ 0, old as
/// ~source (16 bytes: the reverse exchange is the round's largest).
struct Reverse {
  int64_t target, source;
};
struct Proposal {
  int64_t target, candidate;
  float dist;
  int32_t pad;
};

/// The lists of the local rows during the build.
struct Lists {
  int K = 0;
  std::vector<float> d;
  std::vector<int64_t> j;
  std::vector<uint8_t> fresh;  ///< 0: old; 1: new (not yet joined); kEntered: new, entered this round
  /// Each row's k-th distance as the ranks sharing its rows read it (in the shared window),
  /// or null. Written with relaxed atomic stores: a reader may see any value the list had
  /// in this round or before, never one below its k-th distance at the round's end.
  float* shared_worst = nullptr;

  float worst(int64_t v) const { return d[static_cast<size_t>(v * K + K - 1)]; }
  /// Inserts (dist, c) into row v's sorted list unless c is there or it does not beat the
  /// last entry (order (dist, index)). Returns true when the list changed.
  bool insert(int64_t v, float dist, int64_t c) {
    float* bd = d.data() + v * K;
    int64_t* bj = j.data() + v * K;
    uint8_t* bf = fresh.data() + v * K;
    if (!(dist < bd[K - 1] || (dist == bd[K - 1] && c < bj[K - 1]))) return false;
    for (int q = 0; q < K; ++q)
      if (bj[q] == c) return false;
    int pos = K - 1;
    while (pos > 0 && (dist < bd[pos - 1] || (dist == bd[pos - 1] && c < bj[pos - 1]))) {
      bd[pos] = bd[pos - 1];
      bj[pos] = bj[pos - 1];
      bf[pos] = bf[pos - 1];
      --pos;
    }
    bd[pos] = dist;
    bj[pos] = c;
    bf[pos] = kEntered;
    if (shared_worst) __atomic_store(shared_worst + v, bd + K - 1, __ATOMIC_RELAXED);
    return true;
  }
};

/// One MPI-3 shared-memory window (MPI_Win_allocate_shared) over the ranks of a node: each
/// rank contributes a segment, and reads the others' in place. open() and close() are
/// collective over the node's ranks (the `node` communicator); the rest is local.
class SharedSegments {
 public:
  SharedSegments() = default;
  SharedSegments(const SharedSegments&) = delete;
  SharedSegments& operator=(const SharedSegments&) = delete;
  // Unwinding from an error on this rank alone, the node's other ranks may never reach
  // MPI_Win_free: the window is then left to MPI_Finalize (or the process's end).
  ~SharedSegments() {
    if (std::uncaught_exceptions() == 0) close();
  }

  /// Opens the window over `node` (null: this rank is alone in it) when it has two or more
  /// ranks, one of them has something to share (`share`), and /dev/shm (Open MPI's backing
  /// directory) has 1.25 times the bytes of every window the machine opens at once free (a
  /// full tmpfs faults, SIGBUS, instead of failing): `whole` holds all the ranks of the
  /// machine (node may be one of its groups), and every rank of `whole` calls open at once.
  /// This rank's segment has `bytes` bytes. Returns it (null for 0 bytes), or null when not
  /// opened: is_open() tells. `comm_rank` and `comm_size` are this rank's in the build's
  /// communicator, whose ranks segment() and shares() take.
  char* open(MPI_Comm node, MPI_Comm whole, int comm_rank, int comm_size, int64_t bytes, bool share) {
    seg.assign(static_cast<size_t>(comm_size), nullptr);
    flag.assign(static_cast<size_t>(comm_size), 0);
    if (whole == MPI_COMM_NULL) return nullptr;  // alone on the machine (node is null too)
    bytes = (bytes + 63) / 64 * 64;  // every segment aligned for any type, should they be contiguous
    int nsize = 1;
    if (node != MPI_COMM_NULL) MPI_Comm_size(node, &nsize);
    int64_t group[2] = {bytes, share ? 1 : 0};
    if (node != MPI_COMM_NULL) MPI_Allreduce(MPI_IN_PLACE, group, 2, MPI_INT64_T, MPI_SUM, node);
    int64_t total = nsize > 1 && group[1] > 0 ? bytes : 0;  // what this rank adds to /dev/shm
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT64_T, MPI_SUM, whole);
    int room = 1, wrank = 0;
    MPI_Comm_rank(whole, &wrank);
    if (wrank == 0 && total > 0) {
      struct statvfs fs {};
      room = statvfs("/dev/shm", &fs) == 0 &&
             static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) >= 1.25 * static_cast<double>(total);
    }
    MPI_Bcast(&room, 1, MPI_INT, 0, whole);
    if (!room || nsize < 2 || group[1] == 0) return nullptr;
    comm = node;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each segment placed near its rank
    char* base = nullptr;
    MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, node, &base, &win);
    MPI_Info_free(&info);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    std::vector<int> ranks(static_cast<size_t>(nsize)), shares(static_cast<size_t>(nsize));
    const int mine = share ? 1 : 0;
    MPI_Allgather(&comm_rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, node);
    MPI_Allgather(&mine, 1, MPI_INT, shares.data(), 1, MPI_INT, node);
    for (int q = 0; q < nsize; ++q) {
      MPI_Aint size = 0;
      int unit = 0;
      char* p = nullptr;
      MPI_Win_shared_query(win, q, &size, &unit, &p);
      seg[static_cast<size_t>(ranks[static_cast<size_t>(q)])] = p;
      flag[static_cast<size_t>(ranks[static_cast<size_t>(q)])] = shares[static_cast<size_t>(q)];
    }
    return base;
  }
  /// Makes every rank's writes to its segment so far visible to the node's ranks before any
  /// reads on (the unified memory model's idiom: sync, barrier, sync). Collective over the node.
  void publish() const {
    if (win == MPI_WIN_NULL) return;
    MPI_Win_sync(win);
    MPI_Barrier(comm);
    MPI_Win_sync(win);
  }
  /// Frees the window; the segments are gone. Collective over the node; nothing when not open.
  void close() {
    if (win == MPI_WIN_NULL) return;
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    std::fill(seg.begin(), seg.end(), nullptr);
    std::fill(flag.begin(), flag.end(), 0);
  }
  bool is_open() const { return win != MPI_WIN_NULL; }
  /// Rank r's segment (r a rank of the build's communicator), or null: not on this node,
  /// or the window is not open. Local.
  char* segment(int r) const { return seg.empty() ? nullptr : seg[static_cast<size_t>(r)]; }
  /// Whether rank r opened the window with share = true. Local.
  bool shares(int r) const { return !flag.empty() && flag[static_cast<size_t>(r)] != 0; }

 private:
  MPI_Comm comm = MPI_COMM_NULL;  ///< the node's ranks (not owned)
  MPI_Win win = MPI_WIN_NULL;
  std::vector<char*> seg;
  std::vector<int> flag;
};

/// One NN-descent build over the rows of X: the rank's lists, its candidate sets, the
/// exchange buffers and the cache of converted rows, kept across rounds, with one method per
/// phase of Dong et al.'s Algorithm 2. nndescent_search runs them in this order: the
/// constructor (initialization: centering, random lists, block sizes); per round, from the
/// second on, exchange() (sampling and reverse candidates); per round, join_round(), the
/// local joins of every fetch block, each join chunk's proposals applied by update();
/// release_candidates() after the last round; then exact_lists(). Every method is collective
/// over X.comm unless its comment says local; the ranks call them in the same order with
/// the same arguments (every size below is a function of n, d and the rank count).
class Build {
 public:
  /// Initialization: checks nothing (nndescent_search has checked k and the options);
  /// centers the rows (μ over all ranks), keeps their float copy when it is at most B_f,
  /// their float squared norms, empty lists of K entries, round 1's candidates (K random
  /// distinct rows ≠ v per row v), the fetch and join block sizes, the join order and the
  /// cache of converted rows. Collective.
  Build(const RowsView& rows, int k, const NNDescentOptions& opts)
      : X(rows), options(opts), comm(rows.comm), n(rows.n_global), nl(rows.n_local), d(rows.cols), r0(rows.row_start) {
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    std::vector<int64_t> counts;
    gather_layout(comm, X.row_start, nl, starts, counts);
    ends.resize(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) ends[static_cast<size_t>(r)] = starts[static_cast<size_t>(r)] + counts[static_cast<size_t>(r)];
    K = static_cast<int>(std::min<int64_t>(std::max(k, kBuildMin), n - 1));
    cap = std::max<int64_t>(1, static_cast<int64_t>(std::lround(options.rho * K)));
    budget = options.fetch_budget_bytes;
    split_node();
    center_rows();
    initial_lists();
    plan_blocks();
  }

  /// Exchange (rounds ≥ 2): each row's new candidates N and old candidates O for this
  /// round's local join, from its own list (forward: up to cap = ρK new entries, sampled and
  /// then marked old, and all old ones) and from the lists that hold it (reverse: sent to
  /// its owner, a uniform sample of cap new and cap old kept per row). Collective.
  void exchange(int round) {
    sample_forward(round);
    exchange_reverse(round);
    merge_candidates();
  }

  /// Local join and update of one round over every fetch block: the remote rows a block
  /// needs are fetched once, then each join chunk's proposals are computed (local_join) and
  /// applied to the lists (update). Adds this rank's list changes to `changed` and its
  /// distances computed to `computed`. Collective.
  void join_round(int round, int64_t& changed, int64_t& computed) {
    for (int64_t fb = 0; fb < nfetch; ++fb) {
      const int64_t f0 = std::min(nl, fb * fetch_rows), f1 = std::min(nl, f0 + fetch_rows);
      fetch_block(f0, f1);
      for (int64_t jc = 0; jc < joins_per_fetch; ++jc) {
        const int64_t v0 = std::min(f1, f0 + jc * join_rows), v1 = std::min(f1, v0 + join_rows);
        computed += local_join(round, v0, v1);
        update();
      }
    }
    changed += entered();
  }

  /// Frees the shared window and the node's communicators (collective over the node's ranks;
  /// skipped when unwinding from an error).
  ~Build() {
    // The windows first (members are destroyed after this body); MPI_Comm_free is
    // collective too: skipped when unwinding from an error on this rank alone.
    if (std::uncaught_exceptions() == 0) {
      rows_window.close();
      if (node_comm != MPI_COMM_NULL) MPI_Comm_free(&node_comm);
      if (node_whole != MPI_COMM_NULL) MPI_Comm_free(&node_whole);
    }
  }
  Build(const Build&) = delete;
  Build& operator=(const Build&) = delete;

  /// Frees the candidate sets, the fetched rows, the float copy, the shared window and the
  /// row cache (the build is over; exact_lists reads the rows in double). Collective over the
  /// node's ranks (the window).
  void release_candidates() {
    // The shared float rows are freed (collective over the node: its ranks all call this).
    L.shared_worst = nullptr;
    std::fill(peer_rows.begin(), peer_rows.end(), nullptr);
    std::fill(peer_nrm.begin(), peer_nrm.end(), nullptr);
    std::fill(peer_worst.begin(), peer_worst.end(), nullptr);
    rows_window.close();
    std::vector<int64_t>().swap(Nb);
    std::vector<int64_t>().swap(Ob);
    std::vector<float>().swap(fetched);
    std::vector<float>().swap(reply);
    // exact_lists reads X in double: the float copy and the row cache are not needed.
    std::vector<float>().swap(xf);
    xs = nullptr;
    std::vector<float>().swap(cache);
    cache_rows = 0;
  }

  /// The final lists: every entry's exact distance (remote rows fetched in double, in chunks
  /// of final_rows rows), re-sorted by (dist2, index) and cut to k. Collective.
  KnnLists exact_lists(int k);

  /// K, the list length during the build. Local.
  int list_length() const { return K; }

 private:
  void center_rows();
  void split_node();
  float* share_rows(bool keep);
  void initial_lists();
  void plan_blocks();
  void sample_forward(int round);
  void exchange_reverse(int round);
  void merge_candidates();
  void fetch_block(int64_t f0, int64_t f1);
  void request_rows(std::vector<int64_t>& need);
  template <class T>
  void send_replies(const std::vector<T>& reply, int64_t width, std::vector<T>& got);
  void gather(int64_t g, float* scratch, const float*& row, float& norm, float& thr);
  int64_t local_join(int round, int64_t v0, int64_t v1);
  void update();
  int64_t entered();

  /// The rank that owns global row g. Local.
  int owner(int64_t g) const { return static_cast<int>(std::upper_bound(ends.begin(), ends.end(), g) - ends.begin()); }
  /// Row v's new (N) and old (O) candidate slots. Local.
  int64_t* Nrow(int64_t v) { return Nb.data() + v * SN; }
  int64_t* Orow(int64_t v) { return Ob.data() + v * SO; }
  /// Whether this rank reads rank r's float rows in place (the shared window). Local.
  bool shared(int r) const { return peer_rows[static_cast<size_t>(r)] != nullptr; }
  /// Row li's centered float values into y (d floats). Local.
  void to_float(int64_t li, float* y) const {
    if (xs) std::copy_n(xs + li * d, d, y);
    else center(li, y);
  }
  /// Row li centered in double and rounded to float (detail::center_to_float), from either
  /// storage: float rows give the bits of their double copy. Local.
  void center(int64_t li, float* y) const {
    if (X.single()) detail::center_to_float(X.floats()->row(li), mu.data(), d, y);
    else detail::center_to_float(X.doubles().row(li), mu.data(), d, y);
  }
  /// Row li as doubles: in place, or converted (exactly) into scratch (d doubles). Local.
  const double* drow(int64_t li, double* scratch) const {
    if (!X.single()) return X.doubles().row(li);
    X.tile(li, 1, scratch);
    return scratch;
  }

  const RowsView X;  ///< the rows, double or float (--precision)
  const NNDescentOptions& options;
  MPI_Comm comm;
  const int64_t n, nl, d, r0;
  int size = 1, rank = 0;
  std::vector<int64_t> starts, ends;  ///< each rank's first global row, and one past its last
  int K = 0;                  ///< list length during the build, max(k, kBuildMin) (at most n − 1)
  int64_t cap = 1;            ///< ρK, the sampled candidates of each kind per row
  double budget = 0;          ///< B_f

  std::vector<double> mu;  ///< the column means: the build's rows are centered
  std::vector<float> xf;   ///< the rank's centered float rows (nl×d) when not in the shared window
  const float* xs = nullptr;  ///< the rank's centered float rows (in xf, the window, or X itself when μ = 0), or null (more than B_f)
  std::vector<float> nrm;  ///< each local row's float squared norm
  // Rows read in place (share_rows): the ranks of this node (or group) in one MPI-3
  // shared-memory window, each rank's segment [norms, k-th distances, float rows]; per rank
  // of comm, pointers into its segment (null: not sharing, or no float copy to share).
  MPI_Comm node_comm = MPI_COMM_NULL;  ///< this node's ranks (or group), null when alone
  MPI_Comm node_whole = MPI_COMM_NULL;  ///< all the ranks of this machine (node_comm's before shared_group splits them), null when alone
  SharedSegments rows_window;          ///< the build's float rows, norms and k-th distances
  std::vector<const float*> peer_rows, peer_nrm, peer_worst;
  Lists L;

  // Per-row candidate sets of the current round in flat arrays of fixed stride (no
  // vector per row: a million rows' small vectors cost more than the lists): N (new) holds
  // up to SN ids, O (old) up to SO; the reverse samples are written after the forward ones.
  int64_t SN = 0, SO = 0;
  std::vector<int64_t> Nb, Ob;
  std::vector<uint16_t> Nc, Oc;
  std::vector<uint16_t> nf, of;  ///< the round's forward new and old candidates per row (exchange)
  std::vector<uint16_t> rn, ro;  ///< the round's reverse new and old candidates per row, after them

  int64_t fetch_rows = 1, nfetch = 0, join_rows = 1, joins_per_fetch = 0, final_rows = 1, final_chunks = 0;
  int64_t w = 0;  ///< floats per fetched row: d values, the k-th distance, the squared norm
  std::vector<int64_t> join_order;
  int64_t cache_rows = 0;
  std::vector<float> cache;
  // Per slot: the local row it holds (−1: none) and the last join group that used it (a slot
  // in use by the current group is never overwritten: the group's row pointers stay valid).
  std::vector<int64_t> cache_tag, cache_group;
  int64_t group = 0;

  std::vector<float> B, G, fetched;     // one row's converted candidate rows (no float copy), its dots, a block's rows
  std::vector<int64_t> C;               // one row's candidates: N, then O
  std::vector<const float*> P;          // their float rows
  std::vector<float> cn, ct;            // their squared norms and k-th distances
  // Exchange buffers kept across rounds and chunks (outer vectors cleared, capacities kept):
  // reallocating them every round cost page faults and zeroing in the profile.
  std::vector<Reverse> rev_send, rev;  // reverse candidates, in destination order, and received
  std::vector<int> rev_sc, rev_rc, rev_at;
  // Row fetches without staging copies: counts per rank (ids, then floats), the ids asked of
  // this rank, the reply, and the fetched rows (d values and the k-th distance per row).
  std::vector<int> sc, rc, rcw, got_counts;
  std::vector<int64_t> asked;
  std::vector<float> reply;
  std::vector<std::vector<Proposal>> prop;
  Exchange<Proposal> prop_x;
  std::vector<int64_t> fetched_ids;  ///< the global rows of `fetched`, sorted
};

/// Initialization, part 1: μ, the float copy (when it fits B_f) and the squared norms.
void Build::center_rows() {
  // The build's distances are float dot products of the centered rows. The centering μ is
  // the mean of S = min(n, 1024) rows at the global indices ⌊i·n/S⌋, i = 0 … S − 1, gathered
  // in global order and summed in that order on every rank: the same bits on any rank count
  // (the float distances, and so the lists, depend on them; a sum over the ranks' blocks
  // would not be). Centering by any fixed vector leaves the distances unchanged; a sample
  // mean keeps the float values as small as the full mean does (S·d doubles gathered).
  mu.assign(static_cast<size_t>(d), 0.0);
  // At most 2^20 doubles in all (8 MiB on every rank): fewer rows when d > 1024.
  const int64_t S = std::min<int64_t>(n, std::max<int64_t>(1, std::min<int64_t>(1024, (int64_t{1} << 20) / std::max<int64_t>(d, 1))));
  std::vector<double> mine;
  for (int64_t i = 0; i < S; ++i) {
    const int64_t g = i * n / S;
    if (g < r0 || g >= r0 + nl) continue;
    mine.resize(mine.size() + static_cast<size_t>(d));
    X.tile(g - r0, 1, mine.data() + mine.size() - static_cast<size_t>(d));
  }
  const std::vector<double> sample = allgatherv(mine, comm);
  for (int64_t i = 0; i < S; ++i)  // ranks hold ascending ranges: rank order is global order
    for (int64_t t = 0; t < d; ++t) mu[static_cast<size_t>(t)] += sample[static_cast<size_t>(i * d + t)];
  for (double& m : mu) m /= static_cast<double>(S);
  // Rows whose sample mean is small against their spread (PCA scores: centered by
  // construction; a 1 024-row sample mean of centered rows has ‖μ‖² ≈ spread/1 024) are not
  // centered: μ = 0. Float rows (--precision single) are then the build's rows as they are:
  // a rank whose float copy would exceed B_f reads them in place instead of converting each
  // row it gathers (a quarter of a 3·10⁵-row build's time was that conversion). Not
  // centering raises the float distances' rounding by the factor (‖μ‖² + spread)/spread ≤
  // 1.01. Decided from the gathered sample alone, whatever the storage: the same μ on every
  // rank, for any budget, rank count and precision (the lists depend on μ, and float rows
  // give the lists of their double copy).
  bool in_place = false, centered = true;
  if (S > 0) {
    double m2 = 0, spread = 0;
    for (int64_t t = 0; t < d; ++t) m2 += mu[static_cast<size_t>(t)] * mu[static_cast<size_t>(t)];
    for (int64_t i = 0; i < S; ++i)
      for (int64_t t = 0; t < d; ++t) {
        const double e = sample[static_cast<size_t>(i * d + t)] - mu[static_cast<size_t>(t)];
        spread += e * e;
      }
    spread /= static_cast<double>(S);
    if (m2 <= kInPlaceMeanFraction * spread) {
      std::fill(mu.begin(), mu.end(), 0.0);
      centered = false;
      in_place = X.single();
    }
  }
  // A float copy of the block only when it costs at most B_f (half the block again
  // otherwise: at 10⁶ rows it would break the memory target); without it a row is converted
  // when it is gathered for a join (unless the cache of converted rows below holds it) or
  // sent to another rank: the same float values either way (the join order, below, may
  // differ).
  nrm.assign(static_cast<size_t>(nl), 0.0f);
  const bool keep = static_cast<double>(nl) * static_cast<double>(d) * sizeof(float) <= budget;
  float* dst = share_rows(keep);  // the window's rows, or null
  if (keep) {
    if (!dst) {
      xf.resize(static_cast<size_t>(nl * d));
      dst = xf.data();
    }
    for (int64_t i = 0; i < nl; ++i) center(i, dst + i * d);
    xs = dst;
  } else if (in_place && nl > 0) {
    xs = X.floats()->row(0);  // center() with μ = 0 gives these bits: no copy
  }
  detail::g_last_rows = keep ? 1 : xs ? 2 : 0;
  detail::g_last_centered = centered;
  auto norm2 = [this](const float* y) {
    double s = 0;
    for (int64_t t = 0; t < d; ++t) s += static_cast<double>(y[t]) * y[t];
    return static_cast<float>(s);
  };
  std::vector<float> y(xs ? 0 : static_cast<size_t>(d));
  for (int64_t i = 0; i < nl; ++i) {
    const float* row = y.data();  // the float copy is read in place when there is one
    if (!xs) center(i, y.data());
    else row = xs + i * d;
    nrm[static_cast<size_t>(i)] = norm2(row);
  }
  if (rows_window.is_open()) {
    // This rank's segment: its norms and k-th distances (+∞: empty lists) before its rows,
    // complete before any rank of the node reads them.
    float* seg = reinterpret_cast<float*>(rows_window.segment(rank));  // null when n_l = 0
    if (seg) {
      std::copy(nrm.begin(), nrm.end(), seg);
      std::fill(seg + nl, seg + 2 * nl, kInfF);
      L.shared_worst = seg + nl;
    }
    rows_window.publish();
  }
}

/// Initialization, part 1a: node_whole, the ranks of this machine (MPI_COMM_TYPE_SHARED), and
/// node_comm, the same ranks or their groups of options.shared_group consecutive ones; each
/// null when this rank is alone in it. Collective.
void Build::split_node() {
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_whole);
  int nr = 0, nsize = 1;
  MPI_Comm_rank(node_whole, &nr);
  MPI_Comm_size(node_whole, &nsize);
  if (nsize == 1) {
    MPI_Comm_free(&node_whole);  // alone on this machine: nothing to share
    return;
  }
  MPI_Comm_split(node_whole, options.shared_group >= 1 ? nr / options.shared_group : 0, nr, &node_comm);
  MPI_Comm_size(node_comm, &nsize);
  if (nsize == 1) MPI_Comm_free(&node_comm);
}

/// Initialization, part 1b: the ranks of node_comm open rows_window, each rank a segment of
/// 2·n_l + (keep ? n_l·d : 0) floats: its rows' norms, their k-th distances (kept current by
/// Lists::insert), and its float rows when it keeps a float copy. The other ranks of the node
/// then read those rows in place instead of fetching them every round (at 100 000 rows on 2
/// ranks the fetch copied the other rank's 157 MB of rows twice per round and faulted their
/// pages in: 6.3–6.4 s against 7.1–8.2 s, alternating). Not on one rank, nor when no rank of the node keeps a
/// float copy, nor without room in /dev/shm (SharedSegments::open). Returns this rank's rows
/// in the window (keep), else null. Collective.
float* Build::share_rows(bool keep) {
  peer_rows.assign(static_cast<size_t>(size), nullptr);
  peer_nrm.assign(static_cast<size_t>(size), nullptr);
  peer_worst.assign(static_cast<size_t>(size), nullptr);
  detail::g_last_shared_ranks = 0;
  const int64_t floats = 2 * nl + (keep ? nl * d : 0);
  float* base = reinterpret_cast<float*>(rows_window.open(node_comm, node_whole, rank, size, floats * 4, keep && nl > 0));
  if (!rows_window.is_open()) return nullptr;
  for (int r = 0; r < size; ++r) {
    // Only the rows of sharing ranks are read in place (gather), with their norms and k-th
    // distances; the others' are fetched with their rows.
    if (r == rank || !rows_window.shares(r)) continue;
    const float* seg = reinterpret_cast<const float*>(rows_window.segment(r));
    const int64_t nr = ends[static_cast<size_t>(r)] - starts[static_cast<size_t>(r)];
    peer_nrm[static_cast<size_t>(r)] = seg;
    peer_worst[static_cast<size_t>(r)] = seg + nr;
    peer_rows[static_cast<size_t>(r)] = seg + 2 * nr;
    ++detail::g_last_shared_ranks;
  }
  return keep && base ? base + 2 * nl : nullptr;
}

/// Initialization, part 2: empty lists and round 1's candidates N: K random distinct rows ≠ v.
void Build::initial_lists() {
  L.K = K;
  L.d.assign(static_cast<size_t>(nl * K), kInfF);
  L.j.assign(static_cast<size_t>(nl * K), kNone);
  L.fresh.assign(static_cast<size_t>(nl * K), 0);

  SN = std::max<int64_t>(K, 2 * cap);
  SO = K + cap;
  Nb.resize(static_cast<size_t>(nl * SN));
  Ob.resize(static_cast<size_t>(nl * SO));
  Nc.assign(static_cast<size_t>(nl), 0);
  Oc.assign(static_cast<size_t>(nl), 0);
  for (int64_t v = 0; v < nl; ++v) {
    const int64_t gv = r0 + v;
    Rng rng(options.seed, 0, static_cast<uint64_t>(gv), 0);
    int64_t* sv = Nrow(v);
    int64_t m = 0;
    while (m < K) {
      const int64_t c = rng.below(n);
      if (c != gv && std::find(sv, sv + m, c) == sv + m) sv[m++] = c;
    }
    std::sort(sv, sv + m);
    Nc[static_cast<size_t>(v)] = static_cast<uint16_t>(m);
  }
}

/// Initialization, part 3: the block sizes, the join order, the row cache, the buffers.
void Build::plan_blocks() {
  // The local join works in fetch blocks: the remote rows a block needs (at most SN + SO per
  // row, never more than the other ranks' rows; d + 2 floats each) are fetched once, at most
  // B_f bytes (the fetched rows and their reply both live during a block). When all
  // the other ranks' rows fit, one block holds every local row and each remote row travels
  // once per round (at 70 000 rows on 2 ranks, blocks of 4 096 rows had fetched most of the
  // other rank's rows nine times). Within a block, proposals are exchanged every join_rows
  // rows (their buffers stay bounded). Functions of n, d and the rank count: every rank agrees.
  int64_t nl_max = nl;
  MPI_Allreduce(MPI_IN_PLACE, &nl_max, 1, MPI_INT64_T, MPI_MAX, comm);
  fetch_rows = std::max<int64_t>(1, nl_max);
  {
    const double row_bytes = static_cast<double>(d + 2) * sizeof(float);
    const double others = static_cast<double>(n - n / size);
    auto fetch_bytes = [&](int64_t rows) { return std::min(static_cast<double>(rows * (SN + SO)), others) * row_bytes; };
    if (fetch_bytes(fetch_rows) > budget)
      fetch_rows = std::max<int64_t>(256, static_cast<int64_t>(budget / (static_cast<double>(SN + SO) * row_bytes)));
  }
  nfetch = (nl_max + fetch_rows - 1) / fetch_rows;
  join_rows = std::min(kChunk, fetch_rows);
  joins_per_fetch = (fetch_rows + join_rows - 1) / join_rows;
  // The final exact distances fetch at most K double rows per local row, in chunks of
  // final_rows rows: join_rows, or as many rows as B_f holds K double rows for when that is
  // more (fewer chunks fetch the same remote row fewer times: at 300 000 rows on 2 ranks
  // with B_f = 1 GiB, 2.7 s against 3.6 s).
  {
    // Clamped in double (B_f may be infinite), and so that one chunk's double rows, from
    // every other rank, stay within an int count of MPI_Alltoallv.
    const double per_row = static_cast<double>(K) * static_cast<double>(std::max<int64_t>(d, 1));
    double rows = std::max(static_cast<double>(join_rows), budget / (per_row * 8.0));
    rows = std::min(rows, static_cast<double>(std::numeric_limits<int>::max() / 2) / (per_row * std::max(size - 1, 1)));
    rows = std::min(rows, static_cast<double>(std::max<int64_t>(1, nl_max)));
    final_rows = std::max<int64_t>(1, static_cast<int64_t>(rows));
  }
  final_chunks = (nl_max + final_rows - 1) / final_rows;
  w = d + 2;

  // The joins and the final exact distances visit the rows in a locality order
  // (locality_order, the exact search's random-projection tree with its leaves of 256 rows,
  // here on the rank's float copy or its rows as stored): once the lists are near their
  // neighbours, consecutive rows' candidates overlap, so their rows are still in the cache
  // when the next row gathers them, a fetch block asks for fewer distinct remote rows, and
  // a small cache of converted rows (without the float copy: at most a quarter of B_f,
  // direct-mapped by local row) serves most local gathers. A cached row holds the same
  // float values as a fresh conversion, and the visiting order does not change the lists
  // (step 2 above). 280 000 rows on 2 ranks, no float copy: 41.4 s with neither, 38.7–39.1 s
  // with the order alone, 33.8–36.9 s with both (a 13 300-row cache; in a run with a
  // 16 384-row one, 67 % of the local gathers came from it and the remote rows fetched per
  // round fell by up to 45 %). With the float copy the rows were visited in index order
  // before: 300 000 rows, B_f = 1 GiB, alternating: 31.2 and 32.9 s against 41.7 and 34.6 s
  // (the same lists; the exact distances 2.0–2.3 s against 3.0–3.2 s).
  // With the float copy, the order of that copy, else of the rows as stored: the order never
  // changes the lists (step 2 above).
  join_order = xs            ? detail::locality_order(xs, nl, d, 256)
               : X.single() ? detail::locality_order<float, double>(X.floats()->v.data(), nl, d, 256)
                            : detail::locality_order(X.doubles().v.data(), nl, d, 256);
  // Clamped in double before the conversion (B_f may be any finite or infinite value ≥ 1 MiB).
  cache_rows =
      !xs && nl > 0 && d > 0
          ? static_cast<int64_t>(std::min(static_cast<double>(nl), std::floor(budget / 4 / (4.0 * static_cast<double>(d) + 16.0))))
          : 0;
  cache.resize(static_cast<size_t>(cache_rows * d));
  cache_tag.assign(static_cast<size_t>(cache_rows), -1);
  cache_group.assign(static_cast<size_t>(cache_rows), -1);

  rev_sc.resize(static_cast<size_t>(size));
  rev_at.resize(static_cast<size_t>(size));
  sc.resize(static_cast<size_t>(size));
  rcw.resize(static_cast<size_t>(size));
  prop.resize(static_cast<size_t>(size));
}

/// Exchange, part 1 (local): forward candidates, up to cap of v's new entries (sampled by
/// (seed, round, v), then marked old) and all its old ones, each sorted.
void Build::sample_forward(int round) {
  std::vector<int64_t> fresh_pos;
  nf.assign(static_cast<size_t>(nl), 0);
  of.assign(static_cast<size_t>(nl), 0);
  for (int64_t v = 0; v < nl; ++v) {
    int64_t* nv = Nrow(v);
    int64_t* ov = Orow(v);
    int64_t nn = 0, no = 0;
    fresh_pos.clear();
    for (int q = 0; q < K; ++q) {
      const size_t e = static_cast<size_t>(v * K + q);
      if (L.j[e] == kNone) continue;
      if (L.fresh[e]) fresh_pos.push_back(q);
      else ov[no++] = L.j[e];
    }
    Rng rng(options.seed, static_cast<uint64_t>(round), static_cast<uint64_t>(r0 + v), 1);
    sample_to(fresh_pos, cap, rng);
    for (int64_t q : fresh_pos) {
      const size_t e = static_cast<size_t>(v * K + q);
      L.fresh[e] = 0;
      nv[nn++] = L.j[e];
    }
    std::sort(nv, nv + nn);
    std::sort(ov, ov + no);
    Nc[static_cast<size_t>(v)] = nf[static_cast<size_t>(v)] = static_cast<uint16_t>(nn);
    Oc[static_cast<size_t>(v)] = of[static_cast<size_t>(v)] = static_cast<uint16_t>(no);
  }
}

/// Exchange, part 2: reverse candidates. u gets v when v has u in its forward N (new) or O
/// (old); each row keeps a uniform sample of cap of each kind, the cap with the smallest hash
/// of (seed, round, target, source, kind) (bottom-k sampling: the sample does not depend on
/// the order the candidates arrive in), written after its forward candidates. They are
/// exchanged kReverseChunk source rows at a time. Collective.
void Build::exchange_reverse(int round) {
  std::vector<uint32_t> pn(static_cast<size_t>(nl * cap)), po(static_cast<size_t>(nl * cap));
  rn.assign(static_cast<size_t>(nl), 0);
  ro.assign(static_cast<size_t>(nl), 0);
  auto priority = [&](int64_t target, int64_t source, int kind) {
    return static_cast<uint32_t>(splitmix(splitmix(options.seed ^ (static_cast<uint64_t>(round) << 40) ^ 0xA24BAED4963EE407ull) ^
                                          (static_cast<uint64_t>(target) * 2 + static_cast<uint64_t>(kind))) ^
                                 splitmix(static_cast<uint64_t>(source)));
  };
  // Offers source as a reverse candidate of local row t into slots [base, base + cap) of
  // row (kept: the cap smallest (priority, source)).
  auto offer = [&](int64_t* row, int64_t base, uint32_t* pr, uint16_t& count, uint32_t h, int64_t source) {
    if (count < cap) {
      row[base + count] = source;
      pr[count] = h;
      ++count;
      return;
    }
    int64_t worst = 0;
    for (int64_t q = 1; q < cap; ++q)
      if (pr[q] > pr[worst] || (pr[q] == pr[worst] && row[base + q] > row[base + worst])) worst = q;
    if (h < pr[worst] || (h == pr[worst] && source < row[base + worst])) {
      row[base + worst] = source;
      pr[worst] = h;
    }
  };
  int64_t rchunks = (nl + kReverseChunk - 1) / kReverseChunk;
  MPI_Allreduce(MPI_IN_PLACE, &rchunks, 1, MPI_INT64_T, MPI_MAX, comm);
  for (int64_t rc0 = 0; rc0 < rchunks; ++rc0) {
    const int64_t v0 = std::min(nl, rc0 * kReverseChunk), v1 = std::min(nl, v0 + kReverseChunk);
    std::fill(rev_sc.begin(), rev_sc.end(), 0);
    for (int64_t v = v0; v < v1; ++v) {
      for (int64_t q = 0; q < nf[static_cast<size_t>(v)]; ++q) ++rev_sc[static_cast<size_t>(owner(Nrow(v)[q]))];
      for (int64_t q = 0; q < of[static_cast<size_t>(v)]; ++q) ++rev_sc[static_cast<size_t>(owner(Orow(v)[q]))];
    }
    int64_t total = 0;
    for (int r = 0; r < size; ++r) {
      rev_at[static_cast<size_t>(r)] = static_cast<int>(total);
      total += rev_sc[static_cast<size_t>(r)];
    }
    rev_send.resize(static_cast<size_t>(total));
    for (int64_t v = v0; v < v1; ++v) {
      for (int64_t q = 0; q < nf[static_cast<size_t>(v)]; ++q) {
        const int64_t c = Nrow(v)[q];
        rev_send[static_cast<size_t>(rev_at[static_cast<size_t>(owner(c))]++)] = Reverse{c, r0 + v};
      }
      for (int64_t q = 0; q < of[static_cast<size_t>(v)]; ++q) {
        const int64_t c = Orow(v)[q];
        rev_send[static_cast<size_t>(rev_at[static_cast<size_t>(owner(c))]++)] = Reverse{c, ~(r0 + v)};
      }
    }
    alltoallv_flat(rev_send.data(), rev_sc, comm, rev, rev_rc);
    for (const Reverse& r : rev) {
      const int64_t t = r.target - r0;
      const size_t ts = static_cast<size_t>(t);
      if (r.source >= 0)
        offer(Nrow(t), nf[ts], pn.data() + t * cap, rn[ts], priority(r.target, r.source, 1), r.source);
      else
        offer(Orow(t), of[ts], po.data() + t * cap, ro[ts], priority(r.target, ~r.source, 0), ~r.source);
    }
  }
}

/// Exchange, part 3 (local): N = forward ∪ reverse new; O = (forward ∪ reverse old) minus N;
/// both sorted.
void Build::merge_candidates() {
  for (int64_t v = 0; v < nl; ++v) {
    const size_t vs = static_cast<size_t>(v);
    int64_t* nv = Nrow(v);
    int64_t* ov = Orow(v);
    std::sort(nv, nv + nf[vs] + rn[vs]);
    const int64_t nn = std::unique(nv, nv + nf[vs] + rn[vs]) - nv;
    std::sort(ov, ov + of[vs] + ro[vs]);
    int64_t no = std::unique(ov, ov + of[vs] + ro[vs]) - ov;
    no = std::remove_if(ov, ov + no, [&](int64_t c) { return std::binary_search(nv, nv + nn, c); }) - ov;
    Nc[vs] = static_cast<uint16_t>(nn);
    Oc[vs] = static_cast<uint16_t>(no);
  }
}

/// A row fetch, first half: sorts `need` (global rows of other ranks) and drops repeats,
/// then sends each id to its owner. The ids asked of this rank arrive in `asked` (in rank
/// order; rc[r] from rank r). Collective.
void Build::request_rows(std::vector<int64_t>& need) {
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  // `need` is sorted and owners hold ascending ranges: it is the request buffer itself.
  std::fill(sc.begin(), sc.end(), 0);
  for (int64_t c : need) ++sc[static_cast<size_t>(owner(c))];
  alltoallv_flat(need.data(), sc, comm, asked, rc);
}

/// A row fetch, second half: `reply` (width values per row of `asked`, in that order) goes
/// back to the ranks that asked; the rows of `need` arrive in `got`, width values each, in
/// the order of `need`. Collective.
template <class T>
void Build::send_replies(const std::vector<T>& reply, int64_t width, std::vector<T>& got) {
  for (int r = 0; r < size; ++r) rcw[static_cast<size_t>(r)] = rc[static_cast<size_t>(r)] * static_cast<int>(width);
  alltoallv_flat(reply.data(), rcw, comm, got, got_counts);
}

/// Local join, part 1: the remote rows that the rows at join positions [f0, f1) need (the
/// candidates of every row with new ones) fetched once from their owners into `fetched`
/// (w floats each: centered float values, k-th distance, squared norm), their global
/// indices, sorted, into fetched_ids. Collective.
void Build::fetch_block(int64_t f0, int64_t f1) {
  // Remote rows this block needs.
  std::vector<int64_t> need;
  for (int64_t pos = f0; pos < f1; ++pos) {
    const int64_t v = join_order[static_cast<size_t>(pos)];
    if (Nc[static_cast<size_t>(v)] == 0) continue;  // no join for v (its old rows are not needed)
    for (const int64_t* c = Nrow(v); c != Nrow(v) + Nc[static_cast<size_t>(v)]; ++c)
      if ((*c < r0 || *c >= r0 + nl) && !shared(owner(*c))) need.push_back(*c);
    for (const int64_t* c = Orow(v); c != Orow(v) + Oc[static_cast<size_t>(v)]; ++c)
      if ((*c < r0 || *c >= r0 + nl) && !shared(owner(*c))) need.push_back(*c);
  }
  request_rows(need);
  // Replies: per asked row, its centered float values, its k-th distance and its squared
  // norm (d + 2 floats), in the order asked; they arrive in the order of `need`.
  reply.resize(static_cast<size_t>(static_cast<int64_t>(asked.size()) * w));
  for (size_t q = 0; q < asked.size(); ++q) {
    const int64_t li = asked[q] - r0;
    float* o = reply.data() + static_cast<int64_t>(q) * w;
    to_float(li, o);
    o[d] = L.worst(li);
    o[d + 1] = nrm[static_cast<size_t>(li)];
  }
  send_replies(reply, w, fetched);
  fetched_ids.swap(need);
}

/// Row g's centered float values (a pointer to them: into the float copy, the fetched rows,
/// the row cache, or, without the copy, converted into scratch), its squared norm and its
/// k-th distance. Local.
void Build::gather(int64_t g, float* scratch, const float*& row, float& norm, float& thr) {
  if (g >= r0 && g < r0 + nl) {
    if (!xs) {
      const int64_t li = g - r0;
      const size_t slot = cache_rows > 0 ? static_cast<size_t>(li % cache_rows) : 0;
      if (cache_rows > 0 && cache_tag[slot] == li) {
        row = cache.data() + static_cast<int64_t>(slot) * d;
        cache_group[slot] = group;
      } else if (cache_rows > 0 && cache_group[slot] != group) {
        float* dst = cache.data() + static_cast<int64_t>(slot) * d;
        center(li, dst);
        cache_tag[slot] = li;
        cache_group[slot] = group;
        row = dst;
      } else {
        center(li, scratch);
        row = scratch;
      }
    } else {
      row = xs + (g - r0) * d;
    }
    norm = nrm[static_cast<size_t>(g - r0)];
    thr = L.worst(g - r0);
  } else if (const int r = owner(g); shared(r)) {
    const size_t i = static_cast<size_t>(g - starts[static_cast<size_t>(r)]);
    row = peer_rows[static_cast<size_t>(r)] + static_cast<int64_t>(i) * d;
    norm = peer_nrm[static_cast<size_t>(r)][i];
    __atomic_load(peer_worst[static_cast<size_t>(r)] + i, &thr, __ATOMIC_RELAXED);  // any value of this round or before
  } else {
    const size_t q = static_cast<size_t>(std::lower_bound(fetched_ids.begin(), fetched_ids.end(), g) - fetched_ids.begin());
    row = fetched.data() + static_cast<int64_t>(q) * w;
    thr = row[d];
    norm = row[d + 1];
  }
}

/// Local join, part 2 (local): for the rows at join positions [v0, v1) of the current fetch
/// block, the candidate set C_v = N_v ∪ O_v (round 1: v itself first, for the initial
/// entries' own distances), the float distances of the pairs (a ∈ N, b ∈ N, a < b) and
/// (a ∈ N, b ∈ O) from join_dots, and a proposal to a's owner when the pair beats a's k-th
/// distance (to b's likewise), bucketed by owner in `prop`. Returns the distances computed.
int64_t Build::local_join(int round, int64_t v0, int64_t v1) {
  int64_t computed = 0;
  for (auto& b : prop) b.clear();
  for (int64_t pos = v0; pos < v1; ++pos) {
    const int64_t v = join_order[static_cast<size_t>(pos)];
    const int64_t* nv = Nrow(v);
    const int64_t* ov = Orow(v);
    if (Nc[static_cast<size_t>(v)] == 0) continue;
    C.clear();
    if (round == 1) C.push_back(r0 + v);  // the initial entries' own distances
    C.insert(C.end(), nv, nv + Nc[static_cast<size_t>(v)]);
    const int64_t nn = static_cast<int64_t>(C.size());
    C.insert(C.end(), ov, ov + Oc[static_cast<size_t>(v)]);
    const int64_t nc = static_cast<int64_t>(C.size());
    if (!xs) B.resize(static_cast<size_t>(nc * d));
    P.resize(static_cast<size_t>(nc));
    cn.resize(static_cast<size_t>(nc));
    ct.resize(static_cast<size_t>(nc));
    ++group;
    for (int64_t q = 0; q < nc; ++q)
      gather(C[static_cast<size_t>(q)], B.data() + (xs ? 0 : q * d), P[static_cast<size_t>(q)],
             cn[static_cast<size_t>(q)], ct[static_cast<size_t>(q)]);
    // G[b + a·nc] = x_{C_a}·x_{C_b} for the nn new candidates a and every b > a.
    G.resize(static_cast<size_t>(nc * nn));
    join_dots(P.data(), nn, nc, d, G.data());
    for (int64_t a = 0; a < nn; ++a)
      for (int64_t b = a + 1; b < nc; ++b) {
        const float dist = std::max(0.0f, cn[static_cast<size_t>(a)] + cn[static_cast<size_t>(b)] - 2.0f * G[static_cast<size_t>(b + a * nc)]);
        ++computed;
        const int64_t ga = C[static_cast<size_t>(a)], gb = C[static_cast<size_t>(b)];
        if (ga == gb) continue;
        // ≤, not <: a pair at exactly the k-th distance may still enter by its smaller index
        // (Lists::insert decides). The threshold is the list's k-th distance at some moment
        // of the round, never below its k-th distance at the round's end, so no pair that
        // could enter is held back: the lists after the round are the K best of the lists
        // before it and every pair the round computed, whatever the order the rows are
        // visited and the proposals applied in (the rank count, the fetch blocks).
        if (dist <= ct[static_cast<size_t>(a)] || std::isinf(ct[static_cast<size_t>(a)]))
          prop[static_cast<size_t>(owner(ga))].push_back(Proposal{ga, gb, dist, 0});
        if (dist <= ct[static_cast<size_t>(b)] || std::isinf(ct[static_cast<size_t>(b)]))
          prop[static_cast<size_t>(owner(gb))].push_back(Proposal{gb, ga, dist, 0});
      }
  }
  return computed;
}

/// Update: the proposals of one join chunk sent to the lists' owners and inserted (entries
/// that enter are flagged kEntered until the round's end). Collective.
void Build::update() {
  for (const Proposal& p : alltoallv_records(prop, comm, prop_x)) L.insert(p.target - r0, p.dist, p.candidate);
}

/// The round's list changes: the entries that entered this round and are still in their
/// list (a count that does not depend on the order the proposals were applied in, unlike the
/// number of insertions), flagged new from here on. Local.
int64_t Build::entered() {
  int64_t changed = 0;
  for (uint8_t& f : L.fresh)
    if (f == kEntered) {
      ++changed;
      f = 1;
    }
  return changed;
}

KnnLists Build::exact_lists(int k) {
  KnnLists out;
  out.k = k;
  out.n_global = n;
  out.row_start = r0;
  out.n_local = nl;
  out.index.assign(static_cast<size_t>(nl * k), kNone);
  out.dist2.assign(static_cast<size_t>(nl * k), std::numeric_limits<double>::infinity());
  std::vector<std::pair<double, int64_t>> row;
  std::vector<double> dreply, dgot;
  std::vector<double> xs(static_cast<size_t>(d)), ys(static_cast<size_t>(d));  // float rows as doubles
  // Only the entries that can be among the k best need their exact distance (and, remote, their
  // row): with δ = detail::float_distance_bound (the list's float distance d̃ is within δ of
  // the exact e), hi = d̃ + δ ≥ e ≥ d̃ − δ = lo and T = the k-th smallest hi bounds k of the
  // exact distances. The double sums s of exact_dist2 carry |s − e| ≤ γ'e + η with γ' =
  // γ_{d+6} in double (each term: the difference, its square, its addition; the 8 lanes' fixed
  // sum: 3 more) and η = 8d·DBL_MIN for underflow. An entry with lo > (1 + 4γ')T + 4η (4, not
  // 3: the rounding of hi, lo and this limit in double) has s above those k entries' s,
  // strictly: it is not among the k best, nor tied with them, and the lists are those of
  // computing every entry.
  constexpr double ud = 0x1p-53;
  const double gd = static_cast<double>(d + 6) * ud / (1.0 - static_cast<double>(d + 6) * ud);
  const double eta = 8.0 * static_cast<double>(std::max<int64_t>(d, 1)) * std::numeric_limits<double>::min();
  std::vector<char> keep(static_cast<size_t>(nl * K), 1);
  std::vector<double> his(static_cast<size_t>(K)), deltas(static_cast<size_t>(K));
  for (int64_t v = 0; v < nl; ++v) {
    int valid = 0;
    for (int q = 0; q < K; ++q) {
      const size_t e = static_cast<size_t>(v * K + q);
      deltas[static_cast<size_t>(q)] = detail::float_distance_bound(nrm[static_cast<size_t>(v)], L.d[e], d);
      if (L.j[e] != kNone) his[static_cast<size_t>(valid++)] = static_cast<double>(L.d[e]) + deltas[static_cast<size_t>(q)];
    }
    if (valid <= k) continue;
    std::nth_element(his.begin(), his.begin() + (k - 1), his.begin() + valid);
    const double limit = (1.0 + 4.0 * gd) * his[static_cast<size_t>(k - 1)] + 4.0 * eta;
    for (int q = 0; q < K; ++q) {
      const size_t e = static_cast<size_t>(v * K + q);
      if (L.j[e] != kNone && static_cast<double>(L.d[e]) - deltas[static_cast<size_t>(q)] > limit) keep[e] = 0;
    }
  }
  for (int64_t ch = 0; ch < final_chunks; ++ch) {
    const int64_t v0 = std::min(nl, ch * final_rows), v1 = std::min(nl, v0 + final_rows);
    std::vector<int64_t> need;
    for (int64_t pos = v0; pos < v1; ++pos)
      for (int q = 0; q < K; ++q) {
        const size_t e = static_cast<size_t>(join_order[static_cast<size_t>(pos)] * K + q);
        const int64_t c = L.j[e];
        if (c != kNone && keep[e] && (c < r0 || c >= r0 + nl)) need.push_back(c);
      }
    request_rows(need);
    dreply.resize(static_cast<size_t>(static_cast<int64_t>(asked.size()) * d));
    for (size_t q = 0; q < asked.size(); ++q) X.tile(asked[q] - r0, 1, dreply.data() + static_cast<int64_t>(q) * d);
    send_replies(dreply, d, dgot);
    const std::vector<double>& got = dgot;
    for (int64_t pos = v0; pos < v1; ++pos) {
      const int64_t v = join_order[static_cast<size_t>(pos)];
      row.clear();
      const double* xv = drow(v, xs.data());
      for (int q = 0; q < K; ++q) {
        const int64_t c = L.j[static_cast<size_t>(v * K + q)];
        if (c == kNone || !keep[static_cast<size_t>(v * K + q)]) continue;
        const double* y;
        if (c >= r0 && c < r0 + nl) y = drow(c - r0, ys.data());
        else y = got.data() + (std::lower_bound(need.begin(), need.end(), c) - need.begin()) * d;
        row.emplace_back(exact_dist2(xv, y, d), c);
      }
      std::sort(row.begin(), row.end());
      SSDR_CHECK(static_cast<int64_t>(row.size()) >= k, "nndescent_search: a row has fewer than k neighbours");
      for (int q = 0; q < k; ++q) {
        out.dist2[static_cast<size_t>(v * k + q)] = row[static_cast<size_t>(q)].first;
        out.index[static_cast<size_t>(v * k + q)] = row[static_cast<size_t>(q)].second;
      }
    }
  }
  return out;
}

}  // namespace

KnnLists nndescent_search(const RowsView& X, int k, const NNDescentOptions& options) {
  MPI_Comm comm = X.comm;
  const int64_t n = X.n_global;
  SSDR_CHECK_COLLECTIVE(comm, k >= 1 && static_cast<int64_t>(k) < n, k_message(k, n));
  SSDR_CHECK_COLLECTIVE(comm, options.rho > 0 && options.rho <= 1,
                        "--nndescent-rho " + std::to_string(options.rho) + " must lie in (0, 1]");
  SSDR_CHECK_COLLECTIVE(comm, options.delta >= 0 && options.delta < 1,
                        "--nndescent-delta " + std::to_string(options.delta) + " must lie in [0, 1)");
  SSDR_CHECK_COLLECTIVE(comm, options.max_iterations >= 1,
                        "--nndescent-iterations " + std::to_string(options.max_iterations) + " must be at least 1");
  SSDR_CHECK_COLLECTIVE(comm, options.shared_group >= 0,
                        "NN-descent shared_group " + std::to_string(options.shared_group) +
                            " must be 0 (the node's ranks share rows) or a group size >= 1");
  SSDR_CHECK_COLLECTIVE(comm, options.fetch_budget_bytes >= double(1 << 20),
                        "NN-descent fetch budget " + std::to_string(options.fetch_budget_bytes) +
                            " bytes must be at least 1 MiB");
  Build build(X, k, options);
  const double t_start = MPI_Wtime();
  for (int round = 1; round <= options.max_iterations; ++round) {
    if (round > 1) build.exchange(round);
    int64_t changed = 0, computed = 0;
    build.join_round(round, changed, computed);
    MPI_Allreduce(MPI_IN_PLACE, &changed, 1, MPI_INT64_T, MPI_SUM, comm);
    MPI_Allreduce(MPI_IN_PLACE, &computed, 1, MPI_INT64_T, MPI_SUM, comm);
    char b[200];
    std::snprintf(b, sizeof b, "NN-descent round %d: %lld list updates, %.3g distances, %.1f s", round,
                  static_cast<long long>(changed), static_cast<double>(computed), MPI_Wtime() - t_start);
    say(b);
    // 3. Early termination (δ).
    if (round > 1 && static_cast<double>(changed) < options.delta * static_cast<double>(n) * build.list_length()) break;
  }
  build.release_candidates();
  const double t_exact = MPI_Wtime();
  KnnLists lists = build.exact_lists(k);
  char b[120];
  std::snprintf(b, sizeof b, "NN-descent exact distances of the lists: %.1f s", MPI_Wtime() - t_exact);
  say(b);
  return lists;
}

}  // namespace ssdr::graph
