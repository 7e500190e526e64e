#pragma once
/// \file output_internal.hpp
/// Private to src/io (not installed): what the writers share. The atomic-commit and
/// space-reservation layer is output.cpp (with the dispatch of write_embedding and
/// write_labels by format); each format's writer is a file of its own: output_npy.cpp,
/// output_hdf5.cpp, output_csv.cpp.
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/io/output.hpp"

namespace ssdr::io::detail {

// ---------------------------------------------------------------------------------------
// The commit layer (output.cpp)
// ---------------------------------------------------------------------------------------

/// A temporary name beside `path` chosen on rank 0 ("<path>.tmp.<pid of rank 0>") and known
/// to every rank. Collective.
std::string shared_temp_name(const std::string& path, MPI_Comm comm);

/// Rank 0 renames `tmp` to `path`, or removes it when any rank's `ok` is false; then the
/// lowest failing rank's message (or the rename's) is raised on every rank. With
/// `expected_size` >= 0, rank 0 first checks that the file holds exactly that many bytes (a
/// write that stopped short on a full disk or at a quota never becomes `path`). Collective.
void commit_shared(const std::string& tmp, const std::string& path, bool ok, std::string message, MPI_Comm comm,
                   int64_t expected_size = -1);

/// Space held on disk in a file of its own until release(): room kept for a later write that
/// must not fail. The owner first allocates `probe_bytes` (fallocate(2): the blocks are
/// really taken, so a full disk, a quota or a file-size limit refuses here, before anything is
/// written), then shrinks the file to the `keep_bytes` it holds on to, handing the rest back
/// for the write it was probed for. Only the owning rank acts; problem() says why the room
/// could not be had ("" when held or not owned).
class SpaceReserve {
 public:
  /// On the owner: creates `path`, takes `probe_bytes` and keeps `keep_bytes` of them. Local.
  SpaceReserve(const std::string& path, int64_t probe_bytes, int64_t keep_bytes, bool owner);
  ~SpaceReserve() { release(); }
  SpaceReserve(const SpaceReserve&) = delete;
  SpaceReserve& operator=(const SpaceReserve&) = delete;
  /// Why the room could not be had ("" when held, or not the owner).
  const std::string& problem() const { return problem_; }
  /// Removes the file and gives its room back (before the write it was kept for). Idempotent.
  void release();

 private:
  std::string path_, problem_;
  TemporaryFileGuard guard_;
  bool held_ = false;
};

/// True when `path` names an existing device or FIFO (written in place, through rank 0).
bool is_special(const std::string& path);

/// First global row of this rank's `rows_local` rows, the ranks holding consecutive blocks in
/// rank order (the layout need not be balanced). Collective.
int64_t first_row(int64_t rows_local, MPI_Comm comm);
inline int64_t first_row(const DistMatrix& Y) { return first_row(Y.n_local, Y.comm); }

/// True when every name is a decimal integer (as the readers name integer classes; true for
/// no names); their values in `values` when given. Local.
bool integer_names(const std::vector<std::string>& names, std::vector<int64_t>* values = nullptr);

/// Writes every rank's rows (this rank: `rows` rows of `width` T's at `local`; the ranks'
/// blocks in rank order) to `path` through rank 0, which receives one piece of at most
/// `per_msg` rows at a time (never more than that of another rank's block): rank 0 opens an
/// AtomicFile (binary or text), writes `header(n)` for the n rows in all, then
/// `put(file, piece, k)` for every piece in row order (false: a write failed, errno says
/// why), and commits only if every put succeeded. Collective over comm; a failure is raised
/// on every rank.
template <class T>
void stream_rows_through_root(const T* local, int64_t rows, int64_t width, int64_t per_msg, int tag,
                              const std::string& path, bool binary, const std::function<std::string(int64_t)>& header,
                              const std::function<bool(std::FILE*, const T*, int64_t)>& put, MPI_Comm comm) {
  const int rank = comm_rank(comm), size = comm_size(comm);
  // Every rank's row count, known on rank 0 (the layout need not be balanced).
  std::vector<int64_t> counts(static_cast<size_t>(size), 0);
  MPI_Gather(&rows, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, 0, comm);
  std::unique_ptr<AtomicFile> out;
  std::string message;
  bool ok = true;
  if (rank == 0) {
    try {
      out = std::make_unique<AtomicFile>(path, binary);
      int64_t n = 0;
      for (int64_t c : counts) n += c;
      const std::string h = header(n);
      std::fwrite(h.data(), 1, h.size(), out->get());
    } catch (const Error& e) {
      ok = false;
      message = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  auto write = [&](const T* v, int64_t k) {
    if (ok && !put(out->get(), v, k)) {
      ok = false;
      message = "cannot write '" + path + "': " + std::strerror(errno);
    }
  };
  if (rank == 0) {
    for (int64_t i = 0; i < rows; i += per_msg) write(local + i * width, std::min(per_msg, rows - i));
    std::vector<T> buf;
    for (int r = 1; r < size; ++r) {
      const int64_t theirs = counts[static_cast<size_t>(r)];
      for (int64_t i = 0; i < theirs; i += per_msg) {
        const int64_t k = std::min(per_msg, theirs - i);
        buf.resize(static_cast<size_t>(k * width));
        if (k * width > 0) MPI_Recv(buf.data(), static_cast<int>(k * width), mpi_datatype<T>(), r, tag, comm, MPI_STATUS_IGNORE);
        write(buf.data(), k);
      }
    }
    if (ok) {
      try {
        out->commit();
      } catch (const Error& e) {
        ok = false;
        message = e.what();
      }
    }
    out.reset();
  } else {
    for (int64_t i = 0; i < rows; i += per_msg) {
      const int64_t k = std::min(per_msg, rows - i);
      if (k * width > 0) MPI_Send(local + i * width, static_cast<int>(k * width), mpi_datatype<T>(), 0, tag, comm);
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
}

// ---------------------------------------------------------------------------------------
// The writers, one file per format
// ---------------------------------------------------------------------------------------

/// Writes Y as NPY with collective MPI-IO: rank 0 the header, every rank its rows at its
/// byte offset. Atomic (shared temporary name + rename). Collective over Y.comm.
void write_npy_parallel(const DistMatrix& Y, const std::string& path);  // output_npy.cpp

/// Writes Y as NPY (float64, no header line of names) streamed through rank 0, for a device
/// or FIFO. Atomic. Collective over Y.comm.
void write_npy_streamed(const DistMatrix& Y, const std::string& path);  // output_npy.cpp

/// write_labels to a 1-D NPY file: int64 (the codes, or the names' integers when every name
/// is one; −1 unlabeled), else fixed-width UTF-32 strings ('<U…', "" unlabeled); `strings`
/// writes names as strings even when every name is an integer. Streamed through rank 0,
/// atomic. Collective over comm.
void write_npy_labels(const std::vector<int>& labels, const std::string& path, MPI_Comm comm,
                      const std::vector<std::string>* names, bool strings);  // output_npy.cpp

/// write_embedding to HDF5 (".h5"/".hdf5"): the data set `dataset`, and with the table's
/// labels, ids or id names also /labels (with the root attribute class_names), /ids and
/// /id_names. Collective over Y.comm.
void write_hdf5_embedding(const DistMatrix& Y, const std::string& path, const std::string& dataset,
                          const TableColumns& table);  // output_hdf5.cpp

/// write_embedding_streamed to CSV: a header line and one record per row (id, label, values)
/// as `table` says, formatted on rank 0 from fixed-width records. Atomic. Collective over Y.comm.
void write_csv_table(const DistMatrix& Y, const std::string& path, const TableColumns& table);  // output_csv.cpp

/// write_labels as text: one label per line (its class name from `names` as csv_field()
/// quotes it, or its code; an empty line when unlabeled). Streamed through rank 0, atomic.
/// Collective over comm.
void write_text_labels(const std::vector<int>& labels, const std::string& path, MPI_Comm comm,
                       const std::vector<std::string>* names);  // output_csv.cpp

}  // namespace ssdr::io::detail
