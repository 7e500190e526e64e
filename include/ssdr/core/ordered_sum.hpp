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

}  // namespace ssdr
