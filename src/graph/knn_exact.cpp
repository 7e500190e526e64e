// Exact distributed k-nearest-neighbour search (knn_search) and the sampled recall of
// approximate lists (knn_recall).
//
// Work: each unordered pair of rows is looked at once (n²/2 pairs, n²·d flops of GEMM).
//   - Within a rank's own block only the upper triangle of square tiles (I ≤ J) is computed;
//     one tile updates the lists of its rows and of its columns. The block is visited in a
//     locality order (locality_order: its tiles are the leaves of a random-projection tree),
//     diagonal tiles first, so each list meets most of its neighbours in its first tile and
//     the later tiles flag few candidates; the float rows return to the data's order before
//     the ring.
//   - Across ranks, a half ring: at step s = 1..h (h = ⌊P/2⌋) rank r hosts the block that
//     originated at rank r − s, together with that block's partial lists, and updates both its
//     own rows' lists and the visitor's from the same GEMM tiles. For even P the last step
//     would meet every pair of blocks twice (r hosts r + P/2 and r + P/2 hosts r), so each of
//     the two takes half: the lower rank its whole block against the visitor's first half, the
//     upper rank its second half against the whole visitor. After step h the travelling lists
//     go home (rank r − h) and are merged with the home rank's own lists.
//   - The next visiting block is transferred while the current one is processed (MPI_Isend/
//     Irecv of double rows); the travelling lists (k entries per row: 16k bytes against 8d of
//     data) follow once the step's updates are done.
//   Memory per rank: its block (double and Real copies), two visiting double blocks and one
//   Real copy, the visitor's lists, one tile of G, and while step 0 runs the locality order
//   (8 bytes per row; 17 more while it is built or applied).
//
// Candidate filter in single precision, exact ranking in double. The rows are centered by a
// column mean μ (any vector works: distances do not change) and scaled by a power of two 2^-e
// (exact) so their largest entry lies in [1/2, 1): no overflow or premature underflow in
// float. G = X̃_tile·Ỹ_tileᵀ by sgemm on the rows rounded to float; approx = ‖x‖² + ‖y‖² − 2g
// with the norms of the centered rows in double. Rounding analysis (u = 2^-24, ε = 2^-53,
// Higham, Accuracy and Stability, §3.1; any summation order, FMA included):
//   |x̃_t − x_t| ≤ u|x_t| + η (η: the filter precision's smallest normal, 2^-126 for float,
//     in scaled units: underflow, even with flush-to-zero)
//   |fl(x̃ᵀỹ) − xᵀy| ≤ (2u + u² + γ_d(1+u)²)‖x‖‖y‖ + 3dη,  γ_d = du/(1 − du) ≤ 1.01du
//   |approx − ‖x − y‖²| ≤ 2|fl(x̃ᵀỹ) − xᵀy| + 1.01dε(‖x‖² + ‖y‖²) + 3ε(‖x‖² + ‖y‖² + 2|xᵀy|)
//   |exact − ‖x − y‖²| ≤ 1.01(d + 2)ε·‖x − y‖² ≤ 2.02(d + 2)ε(‖x‖² + ‖y‖²)
//     (+ (d + 2)·2^-1074 in the data's units where squares underflow: see TileKernel's err_abs)
//   (and centering the double rows moves ‖x − y‖² by at most 6ε(‖x‖² + ‖y‖²)); with
//   ‖x‖‖y‖ ≤ (‖x‖² + ‖y‖²)/2:
//   |approx − exact·4^-e| ≤ c·(‖x‖² + ‖y‖²) + 6dη   (scaled units; the lists keep the
//   data's units and are compared as dist2·4^-e, exact), c = 1.1(d + 2)u + 4(d + 4)ε (+ 15ε),
// and the code uses 1.25·c for margin (filter_slack). A pair can enter row i's list only if
// approx − err ≤ the row's current k-th exact distance; every candidate is re-ranked by its
// exact distance Σ_t (x_t − y_t)² on the original double rows in index order t = 0..d−1 (the
// same bits from both endpoints) under the total order (dist2, global index). The lists are
// therefore exactly those of a brute-force search, for any partition, tile size or filter
// precision (tests: f32 vs f64 filter vs brute force on 1–4 ranks).
//
// Prefilter: before the passes, one vectorized sweep of each tile (sweep_tile; the GEMM
// writes −2g, exact) flags the rows and columns that may hold a candidate, in Real arithmetic
// with a margin that makes the flags a superset of the passes' double test (see mark()); the
// passes then visit only flagged rows and columns, with the same double test as before.
//
// Second filter (as before): when a row has more than k candidates in a tile, the k-th
// smallest approximation T bounds its final k-th exact distance by T + err, so candidates
// with approx > T + 2·err are skipped without an exact distance.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "knn_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::graph {

namespace detail {

namespace {
/// exact_dist2's sum for rows of type S (double or float), each difference taken in double:
/// float rows give the bits of their double copy. Inlined into each clone below.
template <class S>
[[gnu::always_inline]] inline double exact_dist2_impl(const S* x, const S* y, int64_t d) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t t = 0;
  for (; t + 8 <= d; t += 8)
    for (int l = 0; l < 8; ++l) {
      const double diff = static_cast<double>(x[t + l]) - static_cast<double>(y[t + l]);
      s[l] += diff * diff;
    }
  for (int l = 0; t + l < d; ++l) {
    const double diff = static_cast<double>(x[t + l]) - static_cast<double>(y[t + l]);
    s[l] += diff * diff;
  }
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}
}  // namespace

__attribute__((target_clones("avx2", "default"))) double exact_dist2(const double* x,
                                                                     const double* y, int64_t d) {
  return exact_dist2_impl(x, y, d);
}

__attribute__((target_clones("avx2", "default"))) double exact_dist2(const float* x,
                                                                     const float* y, int64_t d) {
  return exact_dist2_impl(x, y, d);
}

__attribute__((target_clones("avx2", "default"))) void center_to_float(const double* x,
                                                                        const double* mu,
                                                                        int64_t d, float* y) {
  for (int64_t t = 0; t < d; ++t) y[t] = static_cast<float>(x[t] - mu[t]);
}

__attribute__((target_clones("avx2", "default"))) void center_to_float(const float* x,
                                                                        const double* mu,
                                                                        int64_t d, float* y) {
  for (int64_t t = 0; t < d; ++t) y[t] = static_cast<float>(static_cast<double>(x[t]) - mu[t]);
}

namespace {

/// Rows per tile side. A 256×256 float tile of G (256 KiB) stays in L2 while both passes scan
/// it; the GEMM's inner dimension is d, large enough for the BLAS to run near its peak.
constexpr int64_t kTile = 256;

/// (d2, j) comes before (bd, bj) in the lists' total order.
inline bool before(double d2, int64_t j, double bd, int64_t bj) {
  return d2 < bd || (d2 == bd && j < bj);
}

/// Inserts (d2, j) into a sorted list of k entries unless it does not beat the k-th entry or j
/// is already listed (a pair met from both of its ends).
inline void insert_unique(double* bd, int64_t* bi, int k, double d2, int64_t j) {
  if (!before(d2, j, bd[k - 1], bi[k - 1])) return;
  int pos = k - 1;
  while (pos > 0 && before(d2, j, bd[pos - 1], bi[pos - 1])) --pos;
  if (pos > 0 && bd[pos - 1] == d2 && bi[pos - 1] == j) return;
  for (int q = k - 1; q > pos; --q) {
    bd[q] = bd[q - 1];
    bi[q] = bi[q - 1];
  }
  bd[pos] = d2;
  bi[pos] = j;
}

/// The flag integer of a Real sweep: as wide as Real, so compare masks fill whole lanes.
template <class Real>
using Flag = typename std::conditional<sizeof(Real) == 4, int32_t, int64_t>::type;

/// One sweep over a tile of G (column-major tj×ti, G[j + i·tj] = −2·ỹ_jᵀx̃_i): row i is
/// flagged when some j has fl(ny_j + G) ≤ rthr_i, column j when some i has fl(nx_i + G) ≤
/// cthr_j. Plain adds and compares: the flags do not depend on the vector width, which the
/// clones below choose at run time (AVX2 where the CPU has it, the build's baseline otherwise).
template <class Real>
[[gnu::always_inline]] inline void sweep_tile_impl(const Real* G, int64_t ti, int64_t tj,
                                                   const Real* nx, const Real* ny, const Real* rthr,
                                                   const Real* cthr, Flag<Real>* rhit,
                                                   Flag<Real>* chit) {
  for (int64_t j = 0; j < tj; ++j) chit[j] = 0;
  for (int64_t i = 0; i < ti; ++i) {
    const Real* g = G + i * tj;
    const Real r = rthr[i], a = nx[i];
    Flag<Real> any = 0;
    for (int64_t j = 0; j < tj; ++j) {
      const Real v = g[j];
      any |= static_cast<Flag<Real>>(ny[j] + v <= r);
      chit[j] |= static_cast<Flag<Real>>(a + v <= cthr[j]);
    }
    rhit[i] = any;
  }
}

__attribute__((target_clones("avx2", "default"))) void sweep_tile(
    const float* G, int64_t ti, int64_t tj, const float* nx, const float* ny, const float* rthr,
    const float* cthr, int32_t* rhit, int32_t* chit) {
  sweep_tile_impl<float>(G, ti, tj, nx, ny, rthr, cthr, rhit, chit);
}

__attribute__((target_clones("avx2", "default"))) void sweep_tile(
    const double* G, int64_t ti, int64_t tj, const double* nx, const double* ny,
    const double* rthr, const double* cthr, int64_t* rhit, int64_t* chit) {
  sweep_tile_impl<double>(G, ti, tj, nx, ny, rthr, cthr, rhit, chit);
}

/// One side of a tile pass: rows (original doubles for the exact distance, centered and
/// scaled Real copies for the GEMM, their squared norms) and the lists they update.
template <class Real>
struct Block {
  const double* x = nullptr;      ///< n×d original rows (exact distances), or null: x32
  const Real* xf = nullptr;       ///< n×d centered, scaled rows (GEMM)
  const double* norm2 = nullptr;  ///< n squared norms of the centered, scaled rows
  int64_t n = 0;
  int64_t gstart = 0;               ///< global index of row 0 (when gindex is null)
  const int64_t* gindex = nullptr;  ///< global index per data row (a sample), or null
  double* d2 = nullptr;             ///< n·k list distances, or null: lists not updated
  int64_t* idx = nullptr;           ///< n·k list indices
  /// Row i of xf and norm2 is row perm[i] of x, d2, idx and the global numbering (a locality
  /// order, see locality_order), or null: row i.
  const int64_t* perm = nullptr;
  int64_t at(int64_t i) const { return perm ? perm[i] : i; }
  int64_t global(int64_t i) const { return gindex ? gindex[at(i)] : gstart + at(i); }
  const double* row(int64_t i) const { return x + at(i) * xd; }
  const float* row32(int64_t i) const { return x32 + at(i) * xd; }
  /// The exact squared distance of row i and row j of B (both blocks in one storage; float
  /// rows as the doubles they round to: exact_dist2's bits on their double copy). Local.
  double dist2_to(int64_t i, const Block& B, int64_t j) const {
    return x ? exact_dist2(row(i), B.row(j), xd) : exact_dist2(row32(i), B.row32(j), xd);
  }
  double* list_d2(int64_t i, int k) const { return d2 + at(i) * k; }
  int64_t* list_idx(int64_t i, int k) const { return idx + at(i) * k; }
  int64_t xd = 0;  ///< d: the row length of x
  const float* x32 = nullptr;  ///< the original rows when they are floats (--precision single)
};

/// The tile passes shared by the search and the recall estimate.
template <class Real>
class TileKernel {
 public:
  /// The GEMM works on rows scaled by 2^scale_exp, the lists hold exact distances in the data's
  /// units, so a list distance is compared as dist2·4^scale_exp (exact but for underflow; by
  /// ldexp when 4^scale_exp itself is not a normal double, |scale_exp| > 511). With η the
  /// filter's underflow unit (Real's smallest normal, scaled units), the absolute allowance
  /// err_abs is 6·d·η (the filter's underflow), DBL_MIN (the scaled list distance's underflow) and
  /// (d + 2)·2^-1074·4^scale_exp: exact_dist2's squares that underflow, each off by at most
  /// half the smallest subnormal, in scaled units (negligible unless the data's spread is
  /// below about 2^-480, where it lets every pair through: exact, only slower).
  TileKernel(int k, int64_t d, double slack, int scale_exp)
      : k_(k), d_(d), slack_(slack),
        err_abs_(6.0 * static_cast<double>(d) * static_cast<double>(std::numeric_limits<Real>::min()) +
                 std::numeric_limits<double>::min() +
                 std::ldexp(static_cast<double>(d + 2), 2 * scale_exp - 1074)),
        s2_(std::ldexp(1.0, 2 * scale_exp)), s2_normal_(std::isnormal(s2_)), scale_exp_(scale_exp),
        G_(static_cast<size_t>(kTile * kTile)), cand_(static_cast<size_t>(kTile)),
        cand_approx_(static_cast<size_t>(kTile)), scratch_(static_cast<size_t>(kTile)),
        nxR_(static_cast<size_t>(kTile)), nyR_(static_cast<size_t>(kTile)),
        row_thr_(static_cast<size_t>(kTile)), col_thr_(static_cast<size_t>(kTile)),
        row_hit_(static_cast<size_t>(kTile)), col_hit_(static_cast<size_t>(kTile)) {}

  /// Every pair (i, j), i ∈ [a0, a1) of A, j ∈ [b0, b1) of B, self pairs (same global index)
  /// excluded. `same`: A and B are one block and the ranges are equal; only tiles I ≤ J are
  /// computed (the pairs of a diagonal tile all appear as rows). Calls tick() per row tile.
  template <class Tick>
  void pairs(const Block<Real>& A, int64_t a0, int64_t a1, const Block<Real>& B, int64_t b0,
             int64_t b1, bool same, Tick tick) {
    if (same) {
      // The diagonal tiles first: with a locality order (its leaves are tiles) they hold many
      // of each row's neighbours, so every list starts the other tiles with a near-final
      // threshold and most of those tiles then flag no row or column.
      for (int64_t i0 = a0; i0 < a1; i0 += kTile) tile(A, i0, std::min(kTile, a1 - i0), B, i0, std::min(kTile, b1 - i0), true);
      for (int64_t i0 = a0; i0 < a1; i0 += kTile) {
        for (int64_t j0 = i0 + kTile; j0 < b1; j0 += kTile)
          tile(A, i0, std::min(kTile, a1 - i0), B, j0, std::min(kTile, b1 - j0), false);
        tick();
      }
      return;
    }
    for (int64_t i0 = a0; i0 < a1; i0 += kTile) {
      for (int64_t j0 = b0; j0 < b1; j0 += kTile)
        tile(A, i0, std::min(kTile, a1 - i0), B, j0, std::min(kTile, b1 - j0), false);
      tick();
    }
  }

 private:
  /// One tile: rows [i0, i0 + ti) of A against rows [j0, j0 + tj) of B. `diagonal`: the same
  /// rows of one block (its pairs all appear as rows; the columns' lists are not updated).
  void tile(const Block<Real>& A, int64_t i0, int64_t ti, const Block<Real>& B, int64_t j0, int64_t tj,
            bool diagonal) {
    // Column-major G (tj×ti): G[j + i·tj] = −2·ỹ_{j0+j}·x̃_{i0+i} (alpha = −2: exact, a
    // power of two). Row-major blocks are column-major d×rows matrices, so G = −2·Ỹᵀ·X̃
    // with leading dimension d.
    if (d_ > 0)
      blas::gemm('T', 'N', tj, ti, d_, Real(-2), B.xf + j0 * d_, d_, A.xf + i0 * d_, d_, Real(0),
                 G_.data(), tj);
    else
      std::fill(G_.begin(), G_.begin() + ti * tj, Real(0));
    double na_max = 0, nb_max = 0;
    for (int64_t i = 0; i < ti; ++i) na_max = std::max(na_max, A.norm2[i0 + i]);
    for (int64_t j = 0; j < tj; ++j) nb_max = std::max(nb_max, B.norm2[j0 + j]);
    const bool rows = A.d2 != nullptr, cols = B.d2 != nullptr && !diagonal;
    if (!rows && !cols) return;
    mark(A, i0, ti, B, j0, tj, na_max, nb_max, rows, cols);
    if (rows) pass<true>(A, i0, ti, B, j0, tj, nb_max);
    if (cols) pass<false>(A, i0, ti, B, j0, tj, na_max);
  }

  /// Flags the rows (row_hit_) and columns (col_hit_) of the tile that may hold a candidate,
  /// in one sweep of G in Real arithmetic (vectorized; see sweep_tile). A flag is a superset
  /// of the passes' own test: with u the unit roundoff of Real, the sweep's fl(ny_R + g)
  /// differs from the passes' double fl(fl(nx + ny) + g) − nx by at most 3u(ny + |g|) + 2ε(nx +
  /// ny + |g|), and |g| = 2|fl(x̃ᵀỹ)| ≤ 2.01(nx + ny)/2 (Cauchy–Schwarz, the rounding of a dot
  /// product of d ≤ 10⁶ terms); the margin 16u(nx + ny_max + |t|) (+ underflow) covers both,
  /// t the shifted threshold, whose own rounding it also covers. Thresholds only fall while a
  /// tile is processed, so flags taken before the row pass stay supersets for the column pass, which,
  /// like the row pass, applies its exact test with the current threshold: the candidates, and
  /// the lists, are those of the unflagged passes.
  void mark(const Block<Real>& A, int64_t i0, int64_t ti, const Block<Real>& B, int64_t j0,
            int64_t tj, double na_max, double nb_max, bool rows, bool cols) {
    const double u = std::numeric_limits<Real>::epsilon() / 2;
    const double tiny = 4.0 * static_cast<double>(std::numeric_limits<Real>::min());
    const Real never = -std::numeric_limits<Real>::infinity();
    auto upper = [&](double thr, double norm, double other_max) {
      if (!(thr < std::numeric_limits<double>::infinity())) return std::numeric_limits<Real>::infinity();
      const double t = thr - norm;
      const double v = t + (16.0 * u * (norm + other_max + std::fabs(t)) + tiny);
      Real r = static_cast<Real>(v);
      if (static_cast<double>(r) < v) r = std::nextafter(r, std::numeric_limits<Real>::infinity());
      return r;
    };
    // One side of the tile (its rows: A's, its columns: B's): the norms in Real, the thresholds.
    auto side = [&](const Block<Real>& S, int64_t s0, int64_t ts, double other_max, bool on, Real* norm_r,
                    Real* thr) {
      for (int64_t i = 0; i < ts; ++i) {
        const int64_t l = s0 + i;
        const double n = S.norm2[l];
        norm_r[i] = static_cast<Real>(n);
        thr[i] = on ? upper(threshold(S.list_d2(l, k_), n, other_max), n, other_max) : never;
      }
    };
    side(A, i0, ti, nb_max, rows, nxR_.data(), row_thr_.data());
    side(B, j0, tj, na_max, cols, nyR_.data(), col_thr_.data());
    sweep_tile(G_.data(), ti, tj, nxR_.data(), nyR_.data(), row_thr_.data(), col_thr_.data(),
               row_hit_.data(), col_hit_.data());
  }

  /// The rounding allowance of the approximate distance from a row of norm² `norm` to one of
  /// norm² ≤ other_max (filter_slack and err_abs, see the analysis at the top of the file).
  double error(double norm, double other_max) const { return slack_ * (norm + other_max) + err_abs_; }
  /// The test's bound for a list d2 (k entries, ascending): its k-th distance, scaled as G.
  double threshold(const double* d2, double norm, double other_max) const {
    const double kth = d2[k_ - 1];
    return (s2_normal_ ? kth * s2_ : std::ldexp(kth, 2 * scale_exp_)) + error(norm, other_max);
  }

  /// The flagged rows (kRows: of A, against the tile's columns) or columns (of B, against its
  /// rows) of the tile: each candidate re-ranked exactly and entered into that side's list
  /// and, when the other side keeps lists, into the other side's list too. Both orientations
  /// add the same operands (commutative, so the same bits) and call exact_dist2(A row, B row).
  template <bool kRows>
  void pass(const Block<Real>& A, int64_t i0, int64_t ti, const Block<Real>& B, int64_t j0, int64_t tj,
            double other_max) {
    const int k = k_;
    const Block<Real>& own = kRows ? A : B;
    const Block<Real>& oth = kRows ? B : A;
    const int64_t o0 = kRows ? i0 : j0, to = kRows ? ti : tj, p0 = kRows ? j0 : i0, tp = kRows ? tj : ti;
    const int64_t step_o = kRows ? tj : 1, step_p = kRows ? 1 : tj;  // G[o·step_o + p·step_p]
    const auto& hit = kRows ? row_hit_ : col_hit_;
    const double* np = oth.norm2 + p0;
    for (int64_t o = 0; o < to; ++o) {
      if (hit[static_cast<size_t>(o)] == 0) continue;
      const int64_t lo = o0 + o, go = own.global(lo);
      double* bd = own.list_d2(lo, k);
      int64_t* bi = own.list_idx(lo, k);
      const double no = own.norm2[lo];
      const double err = error(no, other_max);
      const Real* g = G_.data() + o * step_o;
      double thr = threshold(bd, no, other_max);
      int64_t m = 0;
      for (int64_t p = 0; p < tp; ++p) {
        const double approx = no + np[p] + static_cast<double>(g[p * step_p]);
        if (approx <= thr && oth.global(p0 + p) != go) {
          cand_[static_cast<size_t>(m)] = p;
          cand_approx_[static_cast<size_t>(m)] = approx;
          ++m;
        }
      }
      if (m > k) thr = std::min(thr, kth(m) + 2.0 * err);
      for (int64_t c = 0; c < m; ++c) {
        if (cand_approx_[static_cast<size_t>(c)] > std::min(thr, threshold(bd, no, other_max))) continue;
        const int64_t lp = p0 + cand_[static_cast<size_t>(c)], gp = oth.global(lp);
        const double e = kRows ? A.dist2_to(lo, B, lp) : A.dist2_to(lp, B, lo);
        insert_unique(bd, bi, k, e, gp);
        if (oth.d2) insert_unique(oth.list_d2(lp, k), oth.list_idx(lp, k), k, e, go);
      }
    }
  }

  /// The k-th smallest of the m > k candidate approximations.
  double kth(int64_t m) {
    std::copy(cand_approx_.begin(), cand_approx_.begin() + m, scratch_.begin());
    std::nth_element(scratch_.begin(), scratch_.begin() + (k_ - 1), scratch_.begin() + m);
    return scratch_[static_cast<size_t>(k_ - 1)];
  }

  int k_;
  int64_t d_;
  double slack_, err_abs_, s2_;
  bool s2_normal_;
  int scale_exp_;
  std::vector<Real> G_;
  std::vector<int64_t> cand_;
  std::vector<double> cand_approx_, scratch_;
  // mark(): the tile's norms and prefilter thresholds in Real, and its flags.
  std::vector<Real> nxR_, nyR_, row_thr_, col_thr_;
  std::vector<Flag<Real>> row_hit_;  ///< 0: the row has no candidate in the tile
  std::vector<Flag<Real>> col_hit_;  ///< 0: the column has no candidate in the tile
};

/// Centering and scaling shared by every block of one search: x ↦ (x − μ)·2^-e.
struct Shift {
  std::vector<double> mu;
  int exponent = 0;  ///< −e: the rows are scaled by 2^exponent
};

/// μ = column mean of X and the power of two that brings max |x − μ| into [1/2, 1), for
/// either filter precision (a double GEMM on rows near 1e162 overflows as surely as a float
/// one near 1e20). Collective.
Shift make_shift(const RowsView& X) {
  const int64_t d = X.cols;
  Shift s;
  s.mu.assign(static_cast<size_t>(d), 0.0);
  const DistMatrixF* f = X.floats();
  const DistMatrix* x = f ? nullptr : &X.doubles();
  auto value = [&](int64_t i, int64_t t) { return f ? static_cast<double>((*f)(i, t)) : (*x)(i, t); };
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t t = 0; t < d; ++t) s.mu[static_cast<size_t>(t)] += value(i, t);
  if (d > 0) MPI_Allreduce(MPI_IN_PLACE, s.mu.data(), static_cast<int>(d), MPI_DOUBLE, MPI_SUM, X.comm);
  for (double& m : s.mu) m /= static_cast<double>(std::max<int64_t>(X.n_global, 1));
  {
    double amax = 0;
    for (int64_t i = 0; i < X.n_local; ++i)
      for (int64_t t = 0; t < d; ++t) amax = std::max(amax, std::fabs(value(i, t) - s.mu[static_cast<size_t>(t)]));
    MPI_Allreduce(MPI_IN_PLACE, &amax, 1, MPI_DOUBLE, MPI_MAX, X.comm);
    if (amax > 0 && std::isfinite(amax)) {
      int e = 0;
      std::frexp(amax, &e);  // amax = f·2^e, f ∈ [1/2, 1)
      s.exponent = -e;
    }
  }
  return s;
}

/// Centered, scaled Real copy of n rows and their squared norms (double).
template <class Real, class S>
void prepare(const S* x, int64_t n, int64_t d, const Shift& s, std::vector<Real>& xf,
             std::vector<double>& norm2) {
  xf.resize(static_cast<size_t>(n * d));
  norm2.resize(static_cast<size_t>(n));
  const double scale = std::ldexp(1.0, s.exponent);
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0;
    for (int64_t t = 0; t < d; ++t) {
      const double c = (static_cast<double>(x[i * d + t]) - s.mu[static_cast<size_t>(t)]) * scale;
      xf[static_cast<size_t>(i * d + t)] = static_cast<Real>(c);
      acc += c * c;
    }
    norm2[static_cast<size_t>(i)] = acc;
  }
}

/// Reorders n rows of d values and their norms in place: row i becomes old row perm[i]
/// (inverse: row perm[i] becomes old row i). One row of scratch, cycle by cycle.
template <class Real>
void permute_rows(Real* xf, double* norm2, int64_t n, int64_t d, const std::vector<int64_t>& perm, bool inverse) {
  std::vector<int64_t> src(perm);
  if (inverse)
    for (int64_t i = 0; i < n; ++i) src[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
  std::vector<char> done(static_cast<size_t>(n), 0);
  std::vector<Real> tmp(static_cast<size_t>(d));
  const size_t bytes = static_cast<size_t>(d) * sizeof(Real);
  for (int64_t s = 0; s < n; ++s) {
    if (done[static_cast<size_t>(s)]) continue;
    if (bytes) std::memcpy(tmp.data(), xf + s * d, bytes);
    const double ts = norm2[s];
    int64_t j = s;
    for (;;) {
      done[static_cast<size_t>(j)] = 1;
      const int64_t from = src[static_cast<size_t>(j)];
      if (from == s) {
        if (bytes) std::memcpy(xf + j * d, tmp.data(), bytes);
        norm2[j] = ts;
        break;
      }
      if (bytes) std::memcpy(xf + j * d, xf + from * d, bytes);
      norm2[j] = norm2[from];
      j = from;
    }
  }
}

/// MPI datatype of `count` contiguous elements of `base` (so message counts are rows).
struct RowType {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  RowType(int64_t count, MPI_Datatype base) {
    MPI_Type_contiguous(static_cast<int>(std::max<int64_t>(count, 1)), base, &t);
    MPI_Type_commit(&t);
  }
  ~RowType() {
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  }
  RowType(const RowType&) = delete;
  RowType& operator=(const RowType&) = delete;
};

/// Merges two sorted lists of one row into `out` (k entries): the union under the total order,
/// an index listed in both kept once (same exact distance bits from either side).
void merge_lists(int k, const double* ad, const int64_t* ai, const double* bd, const int64_t* bi,
                 double* od, int64_t* oi) {
  int a = 0, b = 0, m = 0;
  while (m < k && (a < k || b < k)) {
    const bool take_a = b >= k || (a < k && !before(bd[b], bi[b], ad[a], ai[a]));
    const double dv = take_a ? ad[a] : bd[b];
    const int64_t iv = take_a ? ai[a] : bi[b];
    take_a ? ++a : ++b;
    if (m > 0 && oi[m - 1] == iv && od[m - 1] == dv) continue;
    od[m] = dv;
    oi[m] = iv;
    ++m;
  }
  // Fewer than k distinct entries (only placeholders left): the rest are placeholders too.
  for (; m < k; ++m) {
    od[m] = std::numeric_limits<double>::infinity();
    oi[m] = std::numeric_limits<int64_t>::max();
  }
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

}  // namespace

// locality_order (declared in knn_internal.hpp): the leaves, left to right, of a random-projection tree
// (Dasgupta & Freund 2008; PyNNDescent starts from such trees). Each node splits its rows by
// their projection onto x_a − x_b for two of its rows a ≠ b (ties by row number), at a size
// that is a multiple of `leaf`, so every leaf of ≤ leaf rows is one tile of the search. Rows in
// one leaf are often neighbours: processed first, the diagonal tiles give most lists a
// near-final threshold, so later tiles flag few rows and columns (Fashion-MNIST, 20 000 rows
// on 2 ranks, k = 8: 140 000 instead of 367 000 exact re-ranks per rank in the own block,
// whose passes took 0.17 instead of 0.38 s). It changes only the visiting order, never the
// lists. Deterministic (fixed seed); O(n·d·log(n/leaf)): about 0.04 s for 10 000 rows of 784.
template <class S, class Real>
std::vector<int64_t> locality_order(const S* xf, int64_t n, int64_t d, int64_t leaf) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  std::vector<double> proj(static_cast<size_t>(n));
  std::vector<Real> w(static_cast<size_t>(d));
  std::mt19937_64 gen(0x6b6e6e5f6f726465ULL);
  std::vector<std::pair<int64_t, int64_t>> todo{{0, n}};
  while (!todo.empty()) {
    const auto [lo, hi] = todo.back();
    todo.pop_back();
    const int64_t len = hi - lo;
    if (len <= leaf) continue;
    const int64_t a = perm[static_cast<size_t>(lo + static_cast<int64_t>(gen() % static_cast<uint64_t>(len)))];
    int64_t b = perm[static_cast<size_t>(lo + static_cast<int64_t>(gen() % static_cast<uint64_t>(len - 1)))];
    if (b == a) b = perm[static_cast<size_t>(hi - 1)];
    for (int64_t t = 0; t < d; ++t)
      w[static_cast<size_t>(t)] = static_cast<Real>(xf[a * d + t]) - static_cast<Real>(xf[b * d + t]);
    for (int64_t q = lo; q < hi; ++q) {
      const int64_t r = perm[static_cast<size_t>(q)];
      const S* x = xf + r * d;
      Real acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t t = 0;
      for (; t + 8 <= d; t += 8)
        for (int l = 0; l < 8; ++l) acc[l] += static_cast<Real>(x[t + l]) * w[static_cast<size_t>(t + l)];
      for (int l = 0; t + l < d; ++l) acc[l] += static_cast<Real>(x[t + l]) * w[static_cast<size_t>(t + l)];
      const double v = static_cast<double>(((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])));
      proj[static_cast<size_t>(r)] = std::isnan(v) ? 0.0 : v;  // a strict weak order for nth_element
    }
    const int64_t half = std::clamp(((len / 2 + leaf / 2) / leaf) * leaf, leaf, len - 1);
    std::nth_element(perm.begin() + lo, perm.begin() + lo + half, perm.begin() + hi, [&](int64_t p, int64_t q) {
      const double u = proj[static_cast<size_t>(p)], v = proj[static_cast<size_t>(q)];
      return u < v || (u == v && p < q);
    });
    todo.push_back({lo, lo + half});
    todo.push_back({lo + half, hi});
  }
  return perm;
}

template std::vector<int64_t> locality_order<float, float>(const float*, int64_t, int64_t, int64_t);
template std::vector<int64_t> locality_order<double, double>(const double*, int64_t, int64_t, int64_t);
template std::vector<int64_t> locality_order<float, double>(const float*, int64_t, int64_t, int64_t);

template <class Real>
double filter_slack(int64_t d) {
  const double u = std::is_same<Real, float>::value ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  const double eps = std::ldexp(1.0, -53);
  const double dd = static_cast<double>(d);
  return 1.25 * (1.1 * (dd + 2) * u + 4.0 * (dd + 4) * eps + 15.0 * eps);
}

/// exact_knn on rows stored as S (double, or float under --precision single: the ring then
/// carries floats, half the bytes, and the lists are those of the rows' double copy).
template <class Real, class S>
KnnLists exact_knn_rows(const DistMatrixT<S>& X, int k) {
  MPI_Comm comm = X.comm;
  const int64_t n = X.n_global;
  SSDR_CHECK_COLLECTIVE(comm, k >= 1 && static_cast<int64_t>(k) < n, k_message(k, n));
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int64_t d = X.cols, nl = X.n_local;
  SSDR_CHECK_COLLECTIVE(comm, static_cast<int64_t>(X.v.size()) == nl * d,
                        "knn_search: local block has " + std::to_string(X.v.size()) + " values for " +
                            std::to_string(nl) + "×" + std::to_string(d));
  std::vector<int64_t> starts, counts;
  gather_layout(comm, X.row_start, nl, starts, counts);
  int64_t max_rows = 0;
  for (int64_t c : counts) max_rows = std::max(max_rows, c);

  const Shift shift = make_shift(X);
  TileKernel<Real> kernel(k, d, filter_slack<Real>(d), shift.exponent);

  KnnLists out;
  out.k = k;
  out.n_global = n;
  out.row_start = X.row_start;
  out.n_local = nl;
  out.dist2.assign(static_cast<size_t>(nl * k), kInf);
  out.index.assign(static_cast<size_t>(nl * k), kNone);

  std::vector<Real> own_f;
  std::vector<double> own_n2;
  prepare(X.v.data(), nl, d, shift, own_f, own_n2);
  Block<Real> own;
  auto set_rows = [](Block<Real>& b, const S* x) {
    if constexpr (std::is_same<S, float>::value) b.x32 = x;
    else b.x = x;
  };
  set_rows(own, X.v.data());
  own.xf = own_f.data();
  own.norm2 = own_n2.data();
  own.n = nl;
  own.gstart = X.row_start;
  own.d2 = out.dist2.data();
  own.idx = out.index.data();
  own.xd = d;
  // Step 0 visits the own rows in a locality order (the rows of a tile are often neighbours)
  // with the diagonal tiles first; the later steps split the own block by its row order
  // (even P), so the float rows go back to the data's order after step 0.
  std::vector<int64_t> order;
  if (nl > kTile) {
    order = locality_order(own_f.data(), nl, d, kTile);
    permute_rows(own_f.data(), own_n2.data(), nl, d, order, false);
    own.perm = order.data();
  }

  // Steps and their tile rows, for the progress line.
  const int h = size / 2;
  auto tiles = [](int64_t rows) { return (rows + kTile - 1) / kTile; };
  long total = static_cast<long>(tiles(nl));
  for (int s = 1; s <= h; ++s) total += static_cast<long>(tiles(nl));
  Progress progress("kNN search", std::max<long>(total, 1));
  long done = 0;
  auto tick = [&] { progress.update(++done); };

  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  RowType data_type(d, std::is_same<S, float>::value ? MPI_FLOAT : MPI_DOUBLE), d2_type(k, MPI_DOUBLE),
      idx_type(k, MPI_INT64_T);
  std::vector<S> buf_a, buf_b;  // visiting blocks: current and incoming
  std::vector<double> vis_d2, vis_d2_next;
  std::vector<int64_t> vis_idx, vis_idx_next;
  if (h > 0) {  // reserved once: the ring never reallocates a buffer under an Isend
    buf_a.reserve(static_cast<size_t>(max_rows * d));
    buf_b.reserve(static_cast<size_t>(max_rows * d));
    vis_d2.reserve(static_cast<size_t>(max_rows * k));
    vis_d2_next.reserve(static_cast<size_t>(max_rows * k));
    vis_idx.reserve(static_cast<size_t>(max_rows * k));
    vis_idx_next.reserve(static_cast<size_t>(max_rows * k));
  }
  std::vector<S>* cur = &buf_a;
  std::vector<S>* next = &buf_b;

  // Step 1's block travels while step 0 (the own triangle) runs.
  MPI_Request dreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int next_owner = (rank + size - 1) % size;
  auto post_data = [&](const S* send, int64_t send_rows, int owner) {
    next->resize(static_cast<size_t>(counts[owner] * d));
    if (d == 0) return;
    MPI_Irecv(next->data(), static_cast<int>(counts[owner]), data_type.t, left, 1, comm, &dreq[0]);
    MPI_Isend(send, static_cast<int>(send_rows), data_type.t, right, 1, comm, &dreq[1]);
  };
  if (h > 0) post_data(X.v.data(), nl, next_owner);

  kernel.pairs(own, 0, nl, own, 0, nl, true, tick);  // step 0
  if (own.perm != nullptr && h > 0) {
    permute_rows(own_f.data(), own_n2.data(), nl, d, order, true);
    own.perm = nullptr;
  }

  if (h > 0) {
    // The own lists start their journey as they are now (tight thresholds from step 0).
    std::vector<double> home_d2 = out.dist2;
    std::vector<int64_t> home_idx = out.index;
    MPI_Request lreq[4];
    auto pass_lists = [&](const double* sd, const int64_t* si, int64_t send_rows, int owner) {
      vis_d2_next.resize(static_cast<size_t>(counts[owner] * k));
      vis_idx_next.resize(static_cast<size_t>(counts[owner] * k));
      MPI_Irecv(vis_d2_next.data(), static_cast<int>(counts[owner]), d2_type.t, left, 2, comm, &lreq[0]);
      MPI_Irecv(vis_idx_next.data(), static_cast<int>(counts[owner]), idx_type.t, left, 3, comm, &lreq[1]);
      MPI_Isend(sd, static_cast<int>(send_rows), d2_type.t, right, 2, comm, &lreq[2]);
      MPI_Isend(si, static_cast<int>(send_rows), idx_type.t, right, 3, comm, &lreq[3]);
      MPI_Waitall(4, lreq, MPI_STATUSES_IGNORE);
      std::swap(vis_d2, vis_d2_next);
      std::swap(vis_idx, vis_idx_next);
    };
    pass_lists(home_d2.data(), home_idx.data(), nl, next_owner);
    MPI_Waitall(2, dreq, MPI_STATUSES_IGNORE);
    std::swap(cur, next);
    int owner = next_owner;

    std::vector<Real> vis_f;
    std::vector<double> vis_n2;
    for (int s = 1; s <= h; ++s) {
      const int64_t vn = counts[owner];
      prepare(cur->data(), vn, d, shift, vis_f, vis_n2);
      if (s < h) {  // the next visitor travels while this one is processed
        next_owner = (rank + size - s - 1) % size;
        post_data(cur->data(), vn, next_owner);
      }
      Block<Real> vis;
      set_rows(vis, cur->data());
      vis.xf = vis_f.data();
      vis.norm2 = vis_n2.data();
      vis.n = vn;
      vis.gstart = starts[owner];
      vis.d2 = vis_d2.data();
      vis.idx = vis_idx.data();
      vis.xd = d;
      if (2 * s == size) {  // both ends of each pair meet here: each takes half
        if (rank < h)
          kernel.pairs(own, 0, nl, vis, 0, vn / 2, false, tick);
        else
          kernel.pairs(own, nl / 2, nl, vis, 0, vn, false, tick);
      } else {
        kernel.pairs(own, 0, nl, vis, 0, vn, false, tick);
      }
      if (s < h) {
        pass_lists(vis_d2.data(), vis_idx.data(), vn, next_owner);
        MPI_Waitall(2, dreq, MPI_STATUSES_IGNORE);
        std::swap(cur, next);
        owner = next_owner;
      }
    }
    // Home: the visitor's lists go back to their rank (r − h); ours come from r + h.
    const int home = (rank + size - h) % size, away = (rank + h) % size;
    home_d2.resize(static_cast<size_t>(nl * k));
    home_idx.resize(static_cast<size_t>(nl * k));
    MPI_Request hreq[4];
    MPI_Irecv(home_d2.data(), static_cast<int>(nl), d2_type.t, away, 4, comm, &hreq[0]);
    MPI_Irecv(home_idx.data(), static_cast<int>(nl), idx_type.t, away, 5, comm, &hreq[1]);
    MPI_Isend(vis_d2.data(), static_cast<int>(counts[home]), d2_type.t, home, 4, comm, &hreq[2]);
    MPI_Isend(vis_idx.data(), static_cast<int>(counts[home]), idx_type.t, home, 5, comm, &hreq[3]);
    MPI_Waitall(4, hreq, MPI_STATUSES_IGNORE);
    std::vector<double> md(static_cast<size_t>(k));
    std::vector<int64_t> mi(static_cast<size_t>(k));
    for (int64_t i = 0; i < nl; ++i) {
      merge_lists(k, out.dist2.data() + i * k, out.index.data() + i * k, home_d2.data() + i * k,
                  home_idx.data() + i * k, md.data(), mi.data());
      std::copy(md.begin(), md.end(), out.dist2.begin() + i * k);
      std::copy(mi.begin(), mi.end(), out.index.begin() + i * k);
    }
  }
  return out;
}

template <class Real>
KnnLists exact_knn(const RowsView& X, int k) {
  return X.single() ? exact_knn_rows<Real>(*X.floats(), k) : exact_knn_rows<Real>(X.doubles(), k);
}

template KnnLists exact_knn<float>(const RowsView&, int);
template KnnLists exact_knn<double>(const RowsView&, int);
template double filter_slack<float>(int64_t);
template double filter_slack<double>(int64_t);

}  // namespace detail

KnnLists knn_search(const RowsView& X, int k) { return detail::exact_knn<float>(X, k); }

double knn_recall(const RowsView& X, const KnnLists& lists, int64_t sample, uint64_t seed) {
  using namespace detail;
  MPI_Comm comm = X.comm;
  const int64_t n = X.n_global, nl = X.n_local, d = X.cols;
  const int k = lists.k;
  SSDR_CHECK_COLLECTIVE(comm, lists.row_start == X.row_start && lists.n_local == nl && lists.n_global == n &&
                                  k >= 1 && static_cast<int64_t>(lists.index.size()) == nl * k,
                        "knn_recall: the neighbour lists do not match the data's row layout");
  if (sample <= 0) return std::numeric_limits<double>::quiet_NaN();
  SSDR_CHECK_COLLECTIVE(comm, static_cast<int64_t>(k) < n, k_message(k, n));
  const int64_t S = std::min(sample, n);

  // The sampled global rows (Floyd's algorithm: S distinct of n, the same on every rank).
  std::vector<int64_t> rows;
  {
    std::mt19937_64 gen(seed);
    std::vector<int64_t> chosen;
    chosen.reserve(static_cast<size_t>(S));
    std::vector<char> taken;
    const bool dense = n <= 50'000'000;
    if (dense) taken.assign(static_cast<size_t>(n), 0);
    for (int64_t j = n - S; j < n; ++j) {
      const int64_t t = std::uniform_int_distribution<int64_t>(0, j)(gen);
      const bool have = dense ? taken[static_cast<size_t>(t)] != 0
                              : std::find(chosen.begin(), chosen.end(), t) != chosen.end();
      const int64_t pick = have ? j : t;
      chosen.push_back(pick);
      if (dense) taken[static_cast<size_t>(pick)] = 1;
    }
    std::sort(chosen.begin(), chosen.end());
    rows = std::move(chosen);
  }
  // Every rank gets the sampled rows (in the order of `rows`: owners hold ascending ranges).
  std::vector<double> mine;
  for (int64_t g : rows) {
    const int64_t li = g - X.row_start;
    if (li >= 0 && li < nl) {
      mine.resize(mine.size() + static_cast<size_t>(d));
      X.tile(li, 1, mine.data() + mine.size() - static_cast<size_t>(d));
    }
  }
  const std::vector<double> Q = allgatherv(mine, comm);

  const Shift shift = make_shift(X);
  TileKernel<float> kernel(k, d, filter_slack<float>(d), shift.exponent);
  std::vector<float> qf, xf;
  std::vector<double> qn, xn;
  prepare(Q.data(), S, d, shift, qf, qn);
  std::vector<double> pd(static_cast<size_t>(S * k), kInf);
  std::vector<int64_t> pi(static_cast<size_t>(S * k), kNone);
  Block<float> A{Q.data(), qf.data(), qn.data(), S, 0, rows.data(), pd.data(), pi.data(), nullptr, d};
  // The block in chunks of rows (a float copy of one chunk, not of the block: the lists are
  // exact whatever the chunking, since every candidate is re-ranked in double).
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 23) / std::max<int64_t>(d, 1) / kTile) * kTile;
  std::vector<double> xc;  // float rows: the chunk's doubles
  for (int64_t c0 = 0; c0 < nl; c0 += chunk) {
    const int64_t cn = std::min(chunk, nl - c0);
    const double* x = nullptr;
    if (X.single()) {
      xc.resize(static_cast<size_t>(cn * d));
      X.tile(c0, cn, xc.data());
      x = xc.data();
    } else {
      x = X.doubles().row(c0);
    }
    prepare(x, cn, d, shift, xf, xn);
    Block<float> B{x, xf.data(), xn.data(), cn, X.row_start + c0, nullptr, nullptr, nullptr, nullptr, d};
    kernel.pairs(A, 0, S, B, 0, cn, false, [] {});
  }

  // Merge the partial lists of all ranks (a fixed rank order: deterministic).
  std::vector<double> all_d = allgatherv(pd, comm);
  std::vector<int64_t> all_i = allgatherv(pi, comm);
  std::vector<double> md(static_cast<size_t>(k)), td(static_cast<size_t>(k));
  std::vector<int64_t> mi(static_cast<size_t>(k)), ti(static_cast<size_t>(k));
  int64_t hits = 0;
  int size = 1;
  MPI_Comm_size(comm, &size);
  for (int64_t q = 0; q < S; ++q) {
    const int64_t li = rows[static_cast<size_t>(q)] - X.row_start;
    if (li < 0 || li >= nl) continue;
    std::copy(all_d.begin() + q * k, all_d.begin() + (q + 1) * k, md.begin());
    std::copy(all_i.begin() + q * k, all_i.begin() + (q + 1) * k, mi.begin());
    for (int r = 1; r < size; ++r) {
      const int64_t off = (static_cast<int64_t>(r) * S + q) * k;
      merge_lists(k, md.data(), mi.data(), all_d.data() + off, all_i.data() + off, td.data(), ti.data());
      md.swap(td);
      mi.swap(ti);
    }
    const int64_t* approx = lists.index.data() + li * k;
    for (int m = 0; m < k; ++m)
      if (std::find(approx, approx + k, mi[static_cast<size_t>(m)]) != approx + k) ++hits;
  }
  MPI_Allreduce(MPI_IN_PLACE, &hits, 1, MPI_INT64_T, MPI_SUM, comm);
  return static_cast<double>(hits) / (static_cast<double>(S) * k);
}

}  // namespace ssdr::graph
