#pragma once
/// \file ordered_sum.hpp
/// Sums over samples whose bits do not depend on the number of ranks or the row layout.
///
/// An MPI_Allreduce of per-rank partial sums adds the same terms in an order that changes
/// with the partition, so a mean or a covariance differs in its last bits between 1 and 4
/// ranks. That alone would be harmless, but the data then feed discrete decisions (which of
/// two equidistant points is a nearest neighbour, on data with exact distance ties such as
/// integer-valued features), and a last-bit difference there becomes a different graph.
/// ordered_row_sum fixes the order: the n rows, in global order, are cut into chunks of
/// `chunk_rows` rows (the boundaries depend on n only); each chunk's partial is computed by
/// one rank from one contiguous block holding exactly that chunk's rows (a chunk that
/// straddles two ranks has its rows sent to the owner of its first row), and the partials
/// are added in the pairwise tree fixed by the number of chunks: node (l, i) is the sum of
/// nodes (l−1, 2i) and (l−1, 2i+1), a last node without sibling moves up unchanged.
#include <mpi.h>

#include <cstdint>
#include <algorithm>
#include <functional>
#include <vector>

namespace ssdr {

/// Writes the `width` values of local row i (0 ≤ i < n_local) to out.
using RowFill = std::function<void(int64_t i, double* out)>;
/// Writes the partial (`length` values) of a chunk of `rows` consecutive rows held
/// row-major in `block` (rows × width) to out, overwriting it. Must be deterministic: the
/// same block gives the same bits.
using ChunkPartial = std::function<void(const double* block, int64_t rows, double* out)>;

/// Σ over chunks of partial(chunk) (`length` values, the same bits on every rank and for
/// any rank count and row layout). Rank r contributes its n_local rows (global rows
/// [Σ_{q<r} n_q, …)), produced by fill; the layout may be uneven and ranks may hold none.
/// Memory: chunk_rows·width + (2·log₂(chunks) + 2)·length doubles per rank; communication:
/// fewer than chunk_rows rows per rank boundary plus O(log chunks) messages of `length`
/// doubles per rank and one broadcast. Collective over comm (every rank must call it with
/// the same width, length and chunk_rows). n = 0 gives zeros.
/// \throws ssdr::Error when width, length or chunk_rows is not positive.
std::vector<double> ordered_row_sum(MPI_Comm comm, int64_t n_local, int64_t width, int64_t length,
                                    const RowFill& fill, const ChunkPartial& partial,
                                    int64_t chunk_rows = 256);

/// Σ over all ranks' local values v (one per local row, in global row order), added in the
/// fixed order of ordered_row_sum. Collective over comm.
double ordered_sum(MPI_Comm comm, const std::vector<double>& v);

/// Column sums Σ_i c_i (c_i ∈ ℝʷ the contribution of global row i) with bits that do not
/// depend on the partition: the n rows are cut into chunks of B(n) = max(64, ⌈n/256⌉) rows
/// (boundaries depend on n only), each chunk summed sequentially in row order, the chunk
/// sums then added in chunk order. A chunk that straddles ranks is continued: the rank
/// holding its first rows sends its running sum (w doubles) to the next rank with rows,
/// which folds its own rows onto it, exactly as one rank would. Per call: at most one
/// message to each neighbour and one MPI_Allgatherv of ≤ 256·w doubles in all (the
/// completed chunks' sums). The guarantee of ordered_row_sum (the same bits on any rank
/// count and layout) with two collectives fewer per call and the row callback inlined, so
/// a pass over the block computes its contributions as it updates the rows.
class ChunkedColumnSums {
 public:
  /// Sums of `width` values per row over the n_local rows this rank holds (global rows
  /// [Σ_{q<r} n_q, …), any layout, ranks may hold none). Collective over comm (one
  /// Allgather). \throws ssdr::Error when width is not positive.
  ChunkedColumnSums(MPI_Comm comm, int64_t n_local, int width);

  /// Σ over all ranks' rows of row(i, c) (i a local row, in increasing order within each
  /// chunk; c: w doubles the functor overwrites with row i's contribution; the functor may
  /// update row i of the caller's arrays, it is called once per local row). Collective over
  /// comm; every rank gets the same bits. W: the width known at compile time (W = width, or
  /// 0 for any): the running sums and the row's contribution then live in locals the
  /// compiler can keep in registers, instead of a round trip through memory per row and value
  /// (which cost a pass over 10⁶ rows about as much as its own loads). GCC 12 does not for
  /// 2 × 10 sums behind a large functor (the block CG's residual pass): that pass uses
  /// fold_ranges with SIMD accumulators. The same additions in the same order either way:
  /// the same bits. \throws ssdr::Error when W ≠ 0 and W ≠ width.
  template <int W = 0, class RowFn>
  const std::vector<double>& sum(RowFn&& row) {
    static_assert(W >= 0, "ChunkedColumnSums::sum: W is a width or 0");
    if (W != 0 && W != w_) throw_width_mismatch(W);
    double* c = c_.data();
    const int w = w_;
    // Local rows [i0, i1) folded onto acc in order.
    return fold_ranges([&](int64_t i0, int64_t i1, double* __restrict acc) {
      if constexpr (W > 0) {
        double a[W], cw[W];
        for (int k = 0; k < W; ++k) a[k] = acc[k];
        for (int64_t i = i0; i < i1; ++i) {
          row(i, cw);
          for (int k = 0; k < W; ++k) a[k] += cw[k];
        }
        for (int k = 0; k < W; ++k) acc[k] = a[k];
      } else {
        for (int64_t i = i0; i < i1; ++i) {
          row(i, c);
          for (int k = 0; k < w; ++k) acc[k] += c[k];
        }
      }
    });
  }

  /// sum()'s result with the caller's own loop over the rows: ranges(i0, i1, acc) adds the
  /// contributions of local rows i0 ≤ i < i1, in increasing i, onto acc (w doubles, the running
  /// sums): acc[k] ← acc[k] + c_ik, one addition per row and value (a row whose terms are
  /// +0 may be skipped where the sums cannot be −0, as sums of terms ≥ +0 cannot: −0 + +0
  /// gives +0). It is called once per piece of a chunk, and every
  /// local row lies in exactly one range. For loops that hold the running sums in registers
  /// themselves (SIMD accumulators), which a per-row functor cannot. Collective over comm;
  /// every rank gets the same bits, and the same as sum() with the same contributions.
  template <class RangeFn>
  const std::vector<double>& fold_ranges(RangeFn&& ranges) {
    const int w = w_;
    double* acc = acc_.data();
    auto fold = [&](int64_t g0, int64_t g1) { ranges(g0 - start_, g1 - start_, acc); };
    const bool has_rows = end_ > start_;
    const bool carry_in = has_rows && start_ % B_ != 0;
    const bool carry_out = has_rows && end_ % B_ != 0 && end_ < n_;
    const int64_t head_end = carry_in ? std::min(end_, (start_ / B_ + 1) * B_) : start_;
    const bool head_completes = carry_in && (head_end % B_ == 0 || head_end == n_);
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (carry_in && !head_completes) {
      // The whole range lies inside one chunk that neither starts nor ends here.
      MPI_Recv(acc, w, MPI_DOUBLE, prev_, kTag, comm_, MPI_STATUS_IGNORE);
      fold(start_, end_);
      MPI_Send(acc, w, MPI_DOUBLE, next_, kTag, comm_);
    } else if (has_rows) {
      if (carry_in) MPI_Irecv(carry_.data(), w, MPI_DOUBLE, prev_, kTag, comm_, &reqs[0]);
      size_t slot = head_completes ? 1 : 0;  // the head chunk, completed here, comes first
      for (int64_t g0 = head_end; g0 < end_;) {
        const int64_t g1 = std::min({end_, (g0 / B_ + 1) * B_, n_});
        std::fill(acc, acc + w, 0.0);
        fold(g0, g1);
        if (g1 % B_ == 0 || g1 == n_) {
          std::copy(acc, acc + w, mine_.begin() + static_cast<std::ptrdiff_t>(slot * static_cast<size_t>(w)));
          ++slot;
        } else {  // the last chunk continues on the next rank
          std::copy(acc, acc + w, out_.begin());
          MPI_Isend(out_.data(), w, MPI_DOUBLE, next_, kTag, comm_, &reqs[1]);
        }
        g0 = g1;
      }
      if (carry_in) {
        MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
        std::copy(carry_.begin(), carry_.end(), acc);
        fold(start_, head_end);
        std::copy(acc, acc + w, mine_.begin());
      }
      (void)carry_out;
      MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    }
    MPI_Allgatherv(mine_.data(), static_cast<int>(mine_.size()), MPI_DOUBLE, all_.data(), chunk_counts_.data(),
                   displs_.data(), MPI_DOUBLE, comm_);
    std::fill(result_.begin(), result_.end(), 0.0);
    for (int64_t t = 0; t < chunks_; ++t)
      for (int k = 0; k < w; ++k) result_[static_cast<size_t>(k)] += all_[static_cast<size_t>(t * w + k)];
    return result_;
  }

 private:
  /// Chunks whose last row lies in [a, b).
  int64_t completed(int64_t a, int64_t b) const;
  [[noreturn]] void throw_width_mismatch(int W) const;
  static constexpr int kTag = 3535;
  MPI_Comm comm_;
  int w_ = 0, rank_ = 0, prev_ = -1, next_ = -1;
  int64_t n_ = 0, start_ = 0, end_ = 0, B_ = 64, chunks_ = 0;
  std::vector<int> chunk_counts_, displs_;
  std::vector<double> mine_, all_, result_, acc_, carry_, out_, c_;
};

}  // namespace ssdr
