#pragma once
/// \file output.hpp
/// Writing results without ever leaving a partial file behind.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::io {

/// The bytes free for an unprivileged writer on the file system that would hold `path`
/// (statvfs of its directory: f_bavail × f_frsize), or -1 when it cannot be told. Local.
int64_t free_bytes(const std::string& path);

/// Refuses, before anything is written, an output of `bytes` bytes that cannot fit on its
/// file system (a device or FIFO, and a file system that reports no free count, pass). Rank 0
/// checks; collective over comm. A disk quota is not seen here: the writers also check every
/// write's byte count and the file's size before renaming it.
/// \throws ssdr::Error (collectively), e.g. "cannot write 'e.npy': it needs 14.2 MiB and its
/// file system has 3.1 MiB free".
void require_free_space(const std::string& path, int64_t bytes, MPI_Comm comm);

/// The problem with an MPI-IO write, or "" when all `asked_bytes` arrived: its error code,
/// or fewer bytes than asked in its status (ROMIO and OMPIO may report MPI_SUCCESS for a
/// write cut short by a full disk or a quota). Local.
std::string mpi_write_problem(int rc, MPI_Status& st, int64_t asked_bytes, const std::string& path);

/// The problem with a written file `file` (e.g. a temporary name of `path`), or "" when it
/// holds exactly `expected_size` bytes: a write cut short and not reported never becomes
/// `path`. Local.
std::string size_problem(const std::string& file, int64_t expected_size, const std::string& path);

/// Registers a temporary file for remove_temporary_files() while the guard lives (an
/// AtomicFile and the collective writers use it; every rank that knows the name registers
/// it). At most 32 names of up to PATH_MAX bytes are held; others are not registered. Local.
class TemporaryFileGuard {
 public:
  /// Registers `path` (nothing for "").
  explicit TemporaryFileGuard(const std::string& path);
  ~TemporaryFileGuard();
  TemporaryFileGuard(const TemporaryFileGuard&) = delete;
  TemporaryFileGuard& operator=(const TemporaryFileGuard&) = delete;
  /// Stops tracking the name (after its rename). Idempotent.
  void release();

 private:
  int slot_ = -1;
};

/// Removes every temporary file registered by a live TemporaryFileGuard of this process.
/// Async-signal-safe (unlink(2) only): the command line's SIGTERM/SIGINT/SIGHUP handler calls
/// it, so a rank terminated while it writes (mpiexec stopping the job after another rank
/// died, scancel) leaves no "<path>.tmp.<pid>" behind. SIGKILL cannot be caught. Local.
void remove_temporary_files() noexcept;

/// A file written under a temporary name in the same directory ("<path>.tmp.<pid>") and
/// renamed to `path` by commit(). If commit() is never called (an exception unwinds), the
/// destructor removes the temporary file, so no partial output is ever visible. An existing
/// target that is not a regular file (a device such as /dev/null, a FIFO) is written in
/// place instead: renaming over it would replace the device with a regular file (a FIFO
/// without a reader is refused at once, never waited on). commit() checks that every byte
/// reached the file (fflush, fsync, fclose), then renames and syncs the directory, so after a
/// crash the name holds either the old file or the whole new one. The temporary name is
/// registered for remove_temporary_files(). Local (one rank writes).
class AtomicFile {
 public:
  /// \throws ssdr::Error naming `path` when the temporary file cannot be created.
  explicit AtomicFile(const std::string& path, bool binary = false);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// The stream to write to (the temporary file, or the device written in place).
  std::FILE* get() { return f_; }
  /// The temporary name ("" when a device is written in place).
  const std::string& temp_path() const { return tmp_; }
  /// Flushes, closes and renames. \throws ssdr::Error when writing or renaming failed.
  void commit();

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  bool done_ = false;
  bool in_place_ = false;  ///< an existing device or FIFO, written directly
  std::unique_ptr<TemporaryFileGuard> guard_;
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

/// `field` as one CSV field (RFC 4180): unchanged unless it holds a comma, a double quote, a
/// CR or an LF; then enclosed in double quotes, each double quote doubled (`a,"b` becomes
/// `"a,""b"`). Every CSV writer puts ids, class names and column names through it. Local.
std::string csv_field(const std::string& field);

/// What a CSV table of rows shows beside Y's values: a header line `id[,label],c1,...,cm`
/// where id is each row's sample index (0-based, in the data file's order), the label
/// column (named `label_column`) holds each row's class name ("" for a row without one) and
/// the value columns are named `columns` (default y1..ym). Every id, class name and column
/// name is written as csv_field() quotes it.
struct TableColumns {
  std::vector<std::string> columns;                  ///< m names; empty: y1..ym
  const std::vector<int>* labels = nullptr;          ///< the local rows' class codes (−1: none); null: no label column
  const std::vector<std::string>* names = nullptr;   ///< class names of the codes (null: the codes as numbers)
  std::string label_column = "label";
  /// The local rows' sample indices (n_local); null: the rows are samples row_start.. in order.
  const std::vector<int64_t>* ids = nullptr;
  /// The local rows' ids as text (the data's --id-column, n_local); null: the indices above.
  const std::vector<std::string>* id_names = nullptr;
};

/// Writes the n×m embedding Y (rows distributed, in file order) to `path`:
/// - ".h5"/".hdf5" → HDF5 data set /embedding (n×m float64), written collectively, each
///   rank its own hyperslab (write_hdf5); with table.labels also /labels (n int32 class
///   codes, −1 none) and the root attribute class_names (a JSON array of the names); with
///   table.ids also /ids (n int64: each row's 0-based index in the data file), and with
///   table.id_names /id_names (n fixed-length UTF-8 strings, the --id-column texts);
/// - ".npy" → NumPy float64 little-endian n×m (C order), written collectively with MPI-IO,
///   each rank at its rows' byte offset;
/// - anything else (and a device or FIFO) → write_embedding_streamed: CSV with a header
///   (TableColumns).
/// Atomic (a temporary name + rename; nothing is left on failure). Collective over Y.comm.
/// \throws ssdr::Error on every rank when the file cannot be written.
/// `dataset` is the HDF5 data set's name (soft labels: "/soft_labels").
void write_embedding(const DistMatrix& Y, const std::string& path, const std::string& dataset = "/embedding",
                     const TableColumns& table = {});

/// CSV (comma-separated, a header line as `table` says, 17 significant digits) or NPY (no
/// header) streamed through rank 0: rank 0 receives the blocks one rank at a time, so it
/// never holds more than one rank's block. Atomic. Collective over Y.comm.
void write_embedding_streamed(const DistMatrix& Y, const std::string& path, const TableColumns& table = {});

/// Writes the labels of every rank's rows (this rank: `labels`, its rows' labels; the ranks'
/// blocks in rank order make the n labels in row order): a 1-D int64 NPY file when `npy`
/// (predict: a name ending in ".npy"; convert: always), else text with one label per line. Streamed through rank 0, which receives
/// one rank's block at a time (never all n), atomically (a temporary name + rename).
/// Collective over comm (the outcome is raised on every rank).
/// With `names` (the class names of the codes), text holds names (each as csv_field() quotes
/// it, so a name with a line break stays on its line; an unlabeled row is an empty line) and
/// an NPY file their integers when every name is one (−1: unlabeled), else fixed-width UTF-32
/// strings ('<U…', "" unlabeled); `strings` writes them as strings even when every name is an
/// integer (classes that were read as names, e.g. with --label-type string). (A CSV table
/// with ids is write_embedding_streamed's, with a matrix of no columns.)
void write_labels(const std::vector<int>& labels, const std::string& path, MPI_Comm comm, bool npy,
                  const std::vector<std::string>* names = nullptr, bool strings = false);

/// One data set of write_hdf5_rows: this rank's rows of an n × cols array (cols = 0: a 1-D
/// array of n values), row-major, `type` values each.
struct Hdf5RowBlock {
  /// The element type, in memory and in the file (little-endian).
  /// str: fixed-length UTF-8 strings of `str_bytes` bytes each, NUL-terminated (h5py reads
  /// them as bytes; a string of str_bytes − 1 bytes fits whole).
  enum class Type { f64, i64, i32, str };
  std::string name;  ///< data set path, e.g. "/knn/index" (intermediate groups are created)
  Type type = Type::f64;
  int64_t cols = 0;
  const void* data = nullptr;  ///< rows_local × max(cols, 1) values (str: each str_bytes chars, NUL-padded)
  int64_t str_bytes = 0;       ///< Type::str only: bytes per string, ≥ 1 and the same on every rank
};

/// Writes data sets whose rows are distributed alike (rank r holds rows_local consecutive
/// rows after those of ranks < r) to one HDF5 file with the MPI-IO driver, each rank its own
/// hyperslab. Atomic and checked like every writer: the room is checked and reserved first,
/// each data set's result is agreed over comm, the file is renamed into place only when
/// every write and the close succeeded; otherwise the previous file stays and no temporary
/// is left. Collective over comm.
/// `attributes` (name, text): string attributes of the root group "/", the same on every rank
/// (e.g. a graph file's provenance).
/// \throws ssdr::Error (collectively) naming `path`.
void write_hdf5_rows(const std::string& path, int64_t rows_local, const std::vector<Hdf5RowBlock>& blocks,
                     MPI_Comm comm, const std::vector<std::pair<std::string, std::string>>& attributes = {});

/// The string attribute `name` of the root group of the HDF5 file `path`, read on rank 0 and
/// broadcast; "" when the file has no such attribute. Collective over comm.
/// \throws ssdr::Error (collectively) naming `path` when the file cannot be opened as HDF5.
std::string read_hdf5_root_attribute(const std::string& path, const std::string& name, MPI_Comm comm);

/// Writes X (n×d, rows distributed) as the HDF5 data set `name` (float64) and, when given,
/// the labels of X's local rows (n_local codes on each rank, −1 unlabeled) as the data set
/// `labels_name`, collectively with the MPI-IO driver; each rank writes its own rows.
/// Intermediate groups are created. Atomic.
/// The labels are written as the reader reads them back to the same classes: without
/// `names`, the codes (int32); with `names` (the classes' names of the codes, the same on
/// every rank) that are all integers, those integers (int32, or int64 when one does not fit;
/// −1 unlabeled); with other names, or with `strings` (classes read as names, e.g. with
/// --label-type string), the names as fixed-length UTF-8 strings ("" unlabeled).
/// Collective over X.comm. \throws ssdr::Error on every rank naming `path`.
void write_hdf5(const std::string& path, const DistMatrix& X, const std::string& name,
                const std::vector<int>* labels = nullptr, const std::string& labels_name = "/y",
                const std::vector<std::string>* names = nullptr, bool strings = false);

}  // namespace ssdr::io
