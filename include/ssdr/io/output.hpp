#pragma once
/// \file output.hpp
/// Writing results without ever leaving a partial file behind.
#include <cstdio>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::io {

/// A file written under a temporary name in the same directory ("<path>.tmp.<pid>") and
/// renamed to `path` by commit(). If commit() is never called (an exception unwinds), the
/// destructor removes the temporary file, so no partial output is ever visible. An existing
/// target that is not a regular file (a device such as /dev/null, a FIFO) is written in
/// place instead: renaming over it would replace the device with a regular file (a FIFO
/// without a reader is refused at once, never waited on). Local (one rank writes).
class AtomicFile {
 public:
  /// \throws ssdr::Error naming `path` when the temporary file cannot be created.
  explicit AtomicFile(const std::string& path, bool binary = false);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  std::FILE* get() { return f_; }
  const std::string& temp_path() const { return tmp_; }
  /// Flushes, closes and renames. \throws ssdr::Error when writing or renaming failed.
  void commit();

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  bool done_ = false;
  bool in_place_ = false;  ///< an existing device or FIFO, written directly
};

/// A named path from the command line or a job file, e.g. {"--model", "soda.model"}.
struct NamedPath {
  std::string option;
  std::string path;
};

/// Checks, before any computation, that every output can be written and destroys nothing:
/// its directory exists and is writable, it does not end in '/' and is not a directory, and
/// it is not the same file as an input or as another output (compared by device and inode
/// where the file exists, by resolved directory and name otherwise). Empty paths are
/// skipped. Rank 0 checks; collective over comm.
/// \throws ssdr::Error (collectively) naming both options and paths, e.g.
/// "--embedding x.csv is the same file as --data x.csv: an output never replaces an input".
void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs, MPI_Comm comm);

/// Writes a whole text file atomically from rank 0 only (other ranks do nothing). Local.
void write_text_atomic(const std::string& path, const std::string& text);

/// Writes the n×m embedding Y (rows distributed, in file order) to `path`:
/// - ".h5"/".hdf5" → HDF5 data set /embedding (n×m float64), written collectively, each
///   rank its own hyperslab (write_hdf5);
/// - ".npy" → NumPy float64 little-endian n×m (C order), written collectively with MPI-IO,
///   each rank at its rows' byte offset;
/// - anything else (and a device or FIFO) → write_embedding_streamed.
/// Atomic (a temporary name + rename; nothing is left on failure). Collective over Y.comm.
/// \throws ssdr::Error on every rank when the file cannot be written.
/// `dataset` is the HDF5 data set's name (soft labels: "/soft_labels").
void write_embedding(const DistMatrix& Y, const std::string& path, const std::string& dataset = "/embedding");

/// CSV (comma-separated, no header, 17 significant digits) or NPY streamed through rank 0:
/// rank 0 receives the blocks one rank at a time, so it never holds more than one rank's
/// block. Atomic. Collective over Y.comm.
void write_embedding_streamed(const DistMatrix& Y, const std::string& path);

/// Writes the n replicated labels as a 1-D int64 NPY file from rank 0, atomically.
/// Collective over comm (the outcome is raised on every rank).
void write_labels_npy(const std::vector<int>& labels, const std::string& path, MPI_Comm comm);

/// Writes X (n×d, rows distributed) as the HDF5 data set `name` (float64) and, when given,
/// the replicated n labels as the data set `labels_name` (int32), collectively with the
/// MPI-IO driver; each rank writes its own rows. Intermediate groups are created. Atomic.
/// Collective over X.comm. \throws ssdr::Error on every rank naming `path`.
void write_hdf5(const std::string& path, const DistMatrix& X, const std::string& name,
                const std::vector<int>* labels = nullptr, const std::string& labels_name = "/y");

}  // namespace ssdr::io
