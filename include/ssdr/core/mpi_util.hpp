#pragma once
/// \file mpi_util.hpp
/// Small MPI helpers shared by every module: the MPI datatype of a C++ type and the
/// gathering of variable-length per-rank vectors on every rank.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ssdr {

/// This rank's number in comm and comm's size. Not collective.
inline int comm_rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
inline int comm_size(MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  return p;
}

/// FNV-1a 64 of a byte range (any flipped byte changes it). Local.
uint64_t fnv1a64(const char* data, size_t n);

/// `text` of rank `root` on every rank of comm (its length, then its bytes). Collective over comm.
std::string bcast_string(const std::string& text, int root, MPI_Comm comm);

/// The MPI datatype of T (double, int, int64_t, char). Not collective.
template <class T>
MPI_Datatype mpi_datatype();
template <>
inline MPI_Datatype mpi_datatype<double>() { return MPI_DOUBLE; }
template <>
inline MPI_Datatype mpi_datatype<int>() { return MPI_INT; }
template <>
inline MPI_Datatype mpi_datatype<int64_t>() { return MPI_INT64_T; }
template <>
inline MPI_Datatype mpi_datatype<char>() { return MPI_CHAR; }

/// Element counts and offsets of every rank's block in an MPI_Allgatherv (rank order).
struct GatherCounts {
  std::vector<int> counts;  ///< one per rank of the communicator
  std::vector<int> displs;  ///< exclusive prefix sums of counts
  int total = 0;            ///< sum of counts
};

/// Every rank's `local_count` (elements it contributes) with the offsets of its block when
/// the blocks are concatenated in rank order. Collective over comm (one MPI_Allgather of
/// an int64). \throws ssdr::Error (collectively: every rank sees the same counts) when a
/// count is negative or the total exceeds INT_MAX, MPI's limit for counts.
GatherCounts allgather_counts(int64_t local_count, MPI_Comm comm);

/// The concatenation, in rank order, of every rank's `count` elements at `local`, on every
/// rank (replicated; total = Σ counts). For a per-row vector of a DistMatrix's local rows
/// this is the vector in global row order. Collective over comm (MPI_Allgather of the
/// counts, then MPI_Allgatherv). `layout` (optional) gets the counts and offsets.
/// \throws ssdr::Error (collectively) as allgather_counts.
template <class T>
std::vector<T> allgatherv(const T* local, int64_t count, MPI_Comm comm, GatherCounts* layout = nullptr) {
  GatherCounts g = allgather_counts(count, comm);
  std::vector<T> all(static_cast<size_t>(g.total));
  MPI_Allgatherv(local, static_cast<int>(count), mpi_datatype<T>(), all.data(), g.counts.data(), g.displs.data(),
                 mpi_datatype<T>(), comm);
  if (layout) *layout = std::move(g);
  return all;
}

/// allgatherv of the whole of `local` (local.size() elements on this rank).
template <class T>
std::vector<T> allgatherv(const std::vector<T>& local, MPI_Comm comm, GatherCounts* layout = nullptr) {
  return allgatherv(local.data(), static_cast<int64_t>(local.size()), comm, layout);
}

/// Moves per-row items between two row layouts of the same n rows: this rank holds the items
/// of global rows [from_start, from_start + from_count) at `from` (`bytes` bytes each) and
/// receives those of [to_start, to_start + to_count) into `to` (to_count·bytes bytes). The
/// source ranges must tile [0, n) in rank order (any balance); the target ranges may cover a
/// row several times (each group of a split communicator receiving every row). One MPI_Alltoallv of a
/// contiguous datatype of `bytes` bytes (at most 2^31 − 1 items per pair of ranks). Collective
/// over comm. O(from_count + to_count + P) memory: nothing of size n.
/// \throws ssdr::Error (collectively) when a block between two ranks exceeds MPI's int count.
void redistribute_rows(const void* from, int64_t from_start, int64_t from_count, void* to, int64_t to_start,
                       int64_t to_count, size_t bytes, MPI_Comm comm);

/// redistribute_rows for a vector of items (this rank's rows from `from_start` on): the items
/// of rows [to_start, to_start + to_n). Collective over c.
template <class T>
std::vector<T> redistribute_rows(const std::vector<T>& from, int64_t from_start, int64_t to_start, int64_t to_n, MPI_Comm c) {
  std::vector<T> to(static_cast<size_t>(to_n));
  redistribute_rows(from.data(), from_start, static_cast<int64_t>(from.size()), to.data(), to_start, to_n, sizeof(T), c);
  return to;
}

/// The memory a rank may plan for: 50 % of MemAvailable (/proc/meminfo) divided by the ranks
/// of `comm` on its host, the minimum over all hosts (bytes; infinity when unknown).
/// Collective over comm.
double memory_limit_per_rank(MPI_Comm comm);


/// Hands every row of a row-distributed n×w matrix (this rank: the rows [row_start,
/// row_start + n_local), row-major at `local`; any row layout) to `visit(first, rows, data)`
/// on every rank of comm, in the fixed blocks of `block` consecutive global rows
/// [k·block, min((k+1)·block, n)), k = 0, 1, … in increasing order: the same blocks in the
/// same order whatever the row layout or the rank count, so sums taken block by block in
/// this order are reproducible bit for bit. `data` holds the block's rows (row-major
/// rows×w) until visit returns. Each block is assembled by an MPI_Iallgatherv of its owners'
/// pieces (a block may straddle ranks), and the next block's transfer is posted before the
/// current block is visited, so communication overlaps the work (two blocks of block·w
/// doubles in flight). visit must not throw (the other ranks would wait for this one).
/// Collective over comm. \throws ssdr::Error (collectively: checked on the replicated
/// arguments) when block < 1 or block·w ≥ 2^31.
void for_each_row_block(const double* local, int64_t row_start, int64_t n_local, int64_t n, int64_t w,
                        int64_t block, MPI_Comm comm,
                        const std::function<void(int64_t first, int64_t rows, const double* data)>& visit);

}  // namespace ssdr
