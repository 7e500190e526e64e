// Atomic output files and the embedding writer (CSV or NPY), streamed through rank 0.
#include "ssdr/io/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <csignal>

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hdf5_internal.hpp"
#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::io {

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char ch : field) {
    if (ch == '"') quoted.push_back('"');
    quoted.push_back(ch);
  }
  quoted.push_back('"');
  return quoted;
}

namespace {

/// The NPY v1.0 header for a C-order float64 n×m array, padded so that the data starts at a
/// multiple of 64 bytes.
std::string npy_header(int64_t n, int64_t m, const char* descr = "<f8", bool one_d = false) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(n) + (one_d ? ",), }" : ", " + std::to_string(m) + "), }");
  const size_t prefix = 10;  // magic (6) + version (2) + header length (2)
  size_t total = prefix + dict.size() + 1;
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::string h("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<uint16_t>(dict.size());
  h.push_back(static_cast<char>(len & 0xff));
  h.push_back(static_cast<char>(len >> 8));
  return h + dict;
}

bool little_endian() {
  const uint16_t one = 1;
  unsigned char b = 0;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

/// Writes `rows` rows of width `cols` (row-major) to f as CSV or raw little-endian doubles.
void write_rows(std::FILE* f, const double* v, int64_t rows, int64_t cols, bool npy) {
  if (rows == 0 || cols == 0) {
    if (!npy)
      for (int64_t i = 0; i < rows; ++i) std::fputc('\n', f);
    return;
  }
  if (npy) {
    if (little_endian()) {
      std::fwrite(v, sizeof(double), static_cast<size_t>(rows * cols), f);
    } else {
      for (int64_t k = 0; k < rows * cols; ++k) {
        unsigned char b[8];
        std::memcpy(b, v + k, 8);
        std::reverse(b, b + 8);
        std::fwrite(b, 1, 8, f);
      }
    }
    return;
  }
  std::string line;
  char num[40];
  for (int64_t i = 0; i < rows; ++i) {
    line.clear();
    for (int64_t j = 0; j < cols; ++j) {
      const int len = std::snprintf(num, sizeof num, "%.17g", v[i * cols + j]);
      if (j > 0) line.push_back(',');
      line.append(num, static_cast<size_t>(len));
    }
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), f);
  }
}

/// True when every name is a decimal integer (as the readers name integer classes; true for
/// no names); their values in `values` when given. Local.
bool integer_names(const std::vector<std::string>& names, std::vector<int64_t>* values = nullptr) {
  if (values != nullptr) values->clear();
  for (const std::string& s : names) {
    int64_t v = 0;
    const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size()) return false;
    if (values != nullptr) values->push_back(v);
  }
  return true;
}

/// The directory part of a path ("." for a bare name).
std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

/// Flushes a directory's entries (the rename just made) to disk. Best effort: some file
/// systems refuse fsync on a directory, and the data itself was synced before the rename.
void sync_directory(const std::string& path) {
  const int fd = ::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// The temporary files to remove on SIGTERM: fixed storage, so that the signal handler only
// reads memory and calls unlink(2).
constexpr int kTempSlots = 32;
char g_temp_names[kTempSlots][PATH_MAX];
volatile std::sig_atomic_t g_temp_used[kTempSlots];

/// A byte count for people: "812 bytes", "23.5 KiB", "14.2 MiB", "3.1 GiB".
std::string mib(int64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  else if (b < 1048576.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else if (b < 1073741824.0)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / 1073741824.0);
  return buf;
}

}  // namespace

TemporaryFileGuard::TemporaryFileGuard(const std::string& path) {
  if (path.empty() || path.size() >= PATH_MAX) return;
  for (int k = 0; k < kTempSlots; ++k) {
    if (g_temp_used[k] != 0) continue;
    std::memcpy(g_temp_names[k], path.c_str(), path.size() + 1);
    g_temp_used[k] = 1;  // published after the name is complete
    slot_ = k;
    return;
  }
}

TemporaryFileGuard::~TemporaryFileGuard() { release(); }

void TemporaryFileGuard::release() {
  if (slot_ >= 0) g_temp_used[slot_] = 0;
  slot_ = -1;
}

void remove_temporary_files() noexcept {
  for (int k = 0; k < kTempSlots; ++k)
    if (g_temp_used[k] != 0) ::unlink(g_temp_names[k]);
}

int64_t free_bytes(const std::string& path) {
  struct statvfs vfs {};
  if (::statvfs(dir_of(path).c_str(), &vfs) != 0 || vfs.f_frsize == 0) return -1;
  return static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
}

void require_free_space(const std::string& path, int64_t bytes, MPI_Comm comm) {
  std::string msg;
  if (comm_rank(comm) == 0) {
    struct stat st {};
    const bool special = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
    const int64_t avail = special ? -1 : free_bytes(path);
    if (avail >= 0 && avail < bytes)
      msg = "cannot write '" + path + "': it needs " + mib(bytes) + " and its file system has " + mib(avail) +
            " free";
  }
  SSDR_CHECK_COLLECTIVE(comm, msg.empty(), msg);
}

AtomicFile::AtomicFile(const std::string& path, bool binary) : path_(path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) SSDR_THROW("cannot write '" + path + "': it is a directory, expected a file name");
    // A device or FIFO: write into it (O_NONBLOCK so a FIFO without a reader fails now
    // instead of hanging; blocking again for the writes).
    errno = 0;
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd < 0) SSDR_THROW("cannot open '" + path + "' for writing: " + detail::errno_text(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    f_ = ::fdopen(fd, binary ? "wb" : "w");
    if (f_ == nullptr) {
      ::close(fd);
      SSDR_THROW("cannot open '" + path + "' for writing: " + detail::errno_text(errno));
    }
    in_place_ = true;
    return;
  }
  tmp_ = path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  errno = 0;
  f_ = std::fopen(tmp_.c_str(), binary ? "wb" : "w");
  if (f_ == nullptr) SSDR_THROW("cannot create '" + path + "': " + detail::errno_text(errno));
  guard_ = std::make_unique<TemporaryFileGuard>(tmp_);
}

AtomicFile::~AtomicFile() {
  if (f_ != nullptr) std::fclose(f_);
  f_ = nullptr;
  if (!done_ && !in_place_) ::unlink(tmp_.c_str());
}

void AtomicFile::commit() {
  SSDR_CHECK(!done_ && f_ != nullptr, "'" + path_ + "' was already committed");
  errno = 0;
  // fsync: a file system may report a full disk or an exceeded quota only when the data
  // reaches it (NFS, Lustre), and the rename below must never publish a file whose blocks
  // are not yet on disk.
  const bool write_failed =
      std::fflush(f_) != 0 || std::ferror(f_) != 0 || (!in_place_ && ::fsync(::fileno(f_)) != 0);
  const int write_errno = errno;
  const int close_rc = std::fclose(f_);
  const int close_errno = errno;
  f_ = nullptr;
  if (in_place_) {
    done_ = true;
    if (write_failed || close_rc != 0)
      SSDR_THROW("cannot write '" + path_ + "': " + detail::errno_text(write_failed ? write_errno : close_errno));
    return;
  }
  if (write_failed || close_rc != 0) {
    ::unlink(tmp_.c_str());
    done_ = true;
    SSDR_THROW("cannot write '" + path_ + "': " + detail::errno_text(write_failed ? write_errno : close_errno));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    done_ = true;
    SSDR_THROW("cannot rename '" + tmp_ + "' to '" + path_ + "': " + detail::errno_text(err));
  }
  guard_.reset();
  done_ = true;
  sync_directory(path_);
}

namespace {

/// A key identifying the file a path names: "dev:ino" when it exists, else the resolved
/// directory plus the name (so "x.csv" and "./x.csv" match before either exists).
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    return "inode:" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  char buf[PATH_MAX];
  const std::string dir = dir_of(path);
  const std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  if (::realpath(dir.c_str(), buf) != nullptr) return "path:" + std::string(buf) + "/" + name;
  return "path:" + path;
}

std::string check_outputs_local(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  std::vector<std::pair<std::string, const NamedPath*>> seen;
  for (const NamedPath& in : inputs)
    if (!in.path.empty()) seen.emplace_back(file_identity(in.path), &in);
  const size_t n_inputs = seen.size();
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;
    const std::string& p = out.path;
    if (p.back() == '/') return out.option + " " + p + ": expected a file name, not a directory";
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      return out.option + " " + p + ": is a directory, expected a file name";
    // A character device (/dev/null) is written in place and shares nothing: any number of
    // outputs may name it.
    if (::stat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) continue;
    const std::string dir = dir_of(p);
    if (::access(dir.c_str(), W_OK) != 0)
      return out.option + " " + p + ": directory '" + dir + "' does not exist or is not writable";
    const std::string id = file_identity(p);
    for (size_t k = 0; k < seen.size(); ++k)
      if (seen[k].first == id)
        return out.option + " " + p + " is the same file as " + seen[k].second->option + " " +
               seen[k].second->path +
               (k < n_inputs ? ": an output never replaces an input" : ": two outputs cannot share a file");
    seen.emplace_back(id, &out);
  }
  return "";
}

}  // namespace

void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string msg;
  if (rank == 0) msg = check_outputs_local(outputs, inputs);
  SSDR_CHECK_COLLECTIVE(comm, msg.empty(), msg);
}

void write_text_atomic(const std::string& path, const std::string& text) {
  int initialized = 0, rank = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  AtomicFile f(path);
  if (!text.empty()) std::fwrite(text.data(), 1, text.size(), f.get());
  f.commit();
}

namespace {

/// A temporary name beside `path` chosen on rank 0 ("<path>.tmp.<pid of rank 0>") and known
/// to every rank. Collective.
std::string shared_temp_name(const std::string& path, MPI_Comm comm) {
  long pid = static_cast<long>(::getpid());
  MPI_Bcast(&pid, 1, MPI_LONG, 0, comm);
  return path + ".tmp." + std::to_string(pid);
}

/// Rank 0 renames `tmp` to `path`, or removes it when any rank's `ok` is false; then the
/// lowest failing rank's message (or the rename's) is raised on every rank. With
/// `expected_size` >= 0, rank 0 first checks that the file holds exactly that many bytes (a
/// write that stopped short on a full disk or at a quota never becomes `path`). Collective.
void commit_shared(const std::string& tmp, const std::string& path, bool ok, std::string message, MPI_Comm comm,
                   int64_t expected_size = -1) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int mine = ok ? 1 : 0, all = 1;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  if (rank == 0) {
    const std::string short_file = all != 0 && expected_size >= 0 ? size_problem(tmp, expected_size, path) : "";
    if (!short_file.empty()) {
      all = 0;
      ok = false;
      message = short_file;
    }
    if (all == 0) {
      ::unlink(tmp.c_str());
    } else if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      ok = false;
      message = "cannot rename '" + tmp + "' to '" + path + "': " + detail::errno_text(err);
    } else {
      sync_directory(path);
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
}

}  // namespace

std::string size_problem(const std::string& file, int64_t expected_size, const std::string& path) {
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && st.st_size == expected_size) return "";
  return "cannot write '" + path + "': the file holds " + std::to_string(static_cast<int64_t>(st.st_size)) + " of its " +
         std::to_string(expected_size) + " bytes (disk full or quota exceeded?)";
}

std::string mpi_write_problem(int rc, MPI_Status& st, int64_t asked_bytes, const std::string& path) {
  if (rc != MPI_SUCCESS) return "cannot write '" + path + "': " + detail::mpi_error_text(rc);
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  if (count == MPI_UNDEFINED || static_cast<int64_t>(count) != asked_bytes)
    return "cannot write '" + path + "': " + std::to_string(count == MPI_UNDEFINED ? -1 : count) + " of " +
           std::to_string(asked_bytes) + " bytes written (disk full or quota exceeded?)";
  return "";
}

namespace {

/// Space held on disk in a file of its own until release(): room kept for a later write that
/// must not fail. The owner first allocates `probe_bytes` (fallocate(2): the blocks are
/// really taken, so a full disk, a quota or a file-size limit refuses here, before anything is
/// written), then shrinks the file to the `keep_bytes` it holds on to, handing the rest back
/// for the write it was probed for. Only the owning rank acts; problem() says why the room
/// could not be had ("" when held or not owned).
class SpaceReserve {
 public:
  SpaceReserve(const std::string& path, int64_t probe_bytes, int64_t keep_bytes, bool owner)
      : path_(path), guard_(owner ? path : "") {
    if (!owner) return;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
      problem_ = "cannot create '" + path + "': " + detail::errno_text(errno);
      return;
    }
    held_ = true;
    // fallocate(2), not posix_fallocate: on a file system without it (NFS, older Lustre)
    // glibc's emulation writes every block of the probe, which for a large output would cost
    // as much as the write itself. There only the kept room is probed (by posix_fallocate,
    // small), and the writes' own checks catch a full disk.
    int rc = ::fallocate(fd, 0, 0, static_cast<off_t>(probe_bytes)) == 0 ? 0 : errno;
    if (rc == EOPNOTSUPP || rc == ENOSYS) rc = ::posix_fallocate(fd, 0, static_cast<off_t>(keep_bytes));
    if (rc != 0)
      problem_ = "no room for its " + mib(probe_bytes) + " (" + detail::errno_text(rc) + ")";
    else if (::ftruncate(fd, static_cast<off_t>(keep_bytes)) != 0)
      problem_ = "cannot hold " + mib(keep_bytes) + " for its metadata (" + detail::errno_text(errno) + ")";
    ::close(fd);
    if (!problem_.empty()) release();
  }
  ~SpaceReserve() { release(); }
  SpaceReserve(const SpaceReserve&) = delete;
  SpaceReserve& operator=(const SpaceReserve&) = delete;
  const std::string& problem() const { return problem_; }
  void release() {
    if (held_) ::unlink(path_.c_str());
    held_ = false;
    guard_.release();
  }

 private:
  std::string path_, problem_;
  TemporaryFileGuard guard_;
  bool held_ = false;
};

/// True when `path` names an existing device or FIFO (written in place, through rank 0).
bool is_special(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/// First global row of this rank's `rows_local` rows, the ranks holding consecutive blocks in
/// rank order (the layout need not be balanced). Collective.
int64_t first_row(int64_t rows_local, MPI_Comm comm) {
  int64_t before = 0;
  MPI_Exscan(&rows_local, &before, 1, MPI_INT64_T, MPI_SUM, comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank == 0 ? 0 : before;
}
int64_t first_row(const DistMatrix& Y) { return first_row(Y.n_local, Y.comm); }

/// Writes Y as NPY with collective MPI-IO: rank 0 the header, every rank its rows at its
/// byte offset. Atomic (shared temporary name + rename). Collective over Y.comm.
void write_npy_parallel(const DistMatrix& Y, const std::string& path) {
  MPI_Comm comm = Y.comm;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int64_t start = first_row(Y);
  int64_t n = 0;
  MPI_Allreduce(&Y.n_local, &n, 1, MPI_INT64_T, MPI_SUM, comm);
  const std::string h = npy_header(n, Y.cols);
  const int64_t file_size = static_cast<int64_t>(h.size()) + n * Y.cols * 8;
  require_free_space(path, file_size, comm);
  const std::string tmp = shared_temp_name(path, comm);
  TemporaryFileGuard guard(tmp);
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(comm, tmp.c_str(), MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  SSDR_CHECK_COLLECTIVE(comm, rc == MPI_SUCCESS, "cannot create '" + path + "': " + detail::mpi_error_text(rc));
  std::string message;
  auto note = [&](const std::string& problem) {
    if (message.empty()) message = problem;
  };
  if (rank == 0) {
    MPI_Status st;
    rc = MPI_File_write_at(fh, 0, h.data(), static_cast<int>(h.size()), MPI_CHAR, &st);
    note(mpi_write_problem(rc, st, static_cast<int64_t>(h.size()), path));
  }
  // Little-endian doubles; chunks of at most 2^27 values, the same count of collective calls
  // on every rank.
  const int64_t total = Y.n_local * Y.cols, chunk = int64_t{1} << 27;
  int64_t rounds = (total + chunk - 1) / chunk, max_rounds = 0;
  MPI_Allreduce(&rounds, &max_rounds, 1, MPI_INT64_T, MPI_MAX, comm);
  std::vector<double> swapped;
  for (int64_t k = 0; k < max_rounds; ++k) {
    const int64_t a = std::min(total, k * chunk), b = std::min(total, a + chunk);
    const double* src = Y.v.data() + a;
    if (!little_endian()) {
      swapped.assign(src, src + (b - a));
      for (double& x : swapped) {
        unsigned char bytes[8];
        std::memcpy(bytes, &x, 8);
        std::reverse(bytes, bytes + 8);
        std::memcpy(&x, bytes, 8);
      }
      src = swapped.data();
    }
    MPI_Status st;
    rc = MPI_File_write_at_all(fh, static_cast<MPI_Offset>(h.size()) + (start * Y.cols + a) * 8,
                               const_cast<double*>(src), static_cast<int>(b - a), MPI_DOUBLE, &st);
    note(mpi_write_problem(rc, st, (b - a) * 8, path));
  }
  rc = MPI_File_sync(fh);  // collective: the data on disk before the rename
  if (rc != MPI_SUCCESS) note("cannot write '" + path + "': " + detail::mpi_error_text(rc));
  rc = MPI_File_close(&fh);
  if (rc != MPI_SUCCESS) note("cannot write '" + path + "': " + detail::mpi_error_text(rc));
  // Any rank's failure, or a file short of its size, removes the file.
  commit_shared(tmp, path, message.empty(), message, comm, file_size);
}

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

}  // namespace

void write_hdf5_rows(const std::string& path, int64_t rows_local, const std::vector<Hdf5RowBlock>& blocks,
                     MPI_Comm comm, const std::vector<std::pair<std::string, std::string>>& attributes) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // HDF5 cannot stream into a device or FIFO, and renaming over one would replace it.
  int special = rank == 0 && is_special(path) ? 1 : 0;
  MPI_Bcast(&special, 1, MPI_INT, 0, comm);
  SSDR_CHECK_COLLECTIVE(comm, special == 0,
                        "cannot write HDF5 to '" + path + "': it is a device or FIFO (HDF5 needs a regular file; "
                        "use .npy or .csv to stream)");
  const int64_t start = first_row(rows_local, comm);
  int64_t n = 0;
  MPI_Allreduce(&rows_local, &n, 1, MPI_INT64_T, MPI_SUM, comm);
  auto element_bytes = [](const Hdf5RowBlock& b) -> int64_t {
    return b.type == Hdf5RowBlock::Type::str ? std::max<int64_t>(b.str_bytes, 1)
                                             : b.type == Hdf5RowBlock::Type::i32 ? 4 : 8;
  };
  int64_t data_bytes = 0;
  for (const Hdf5RowBlock& b : blocks) data_bytes += n * std::max<int64_t>(b.cols, 1) * element_bytes(b);
  const int64_t metadata_reserve = int64_t{1} << 20;
  require_free_space(path, data_bytes + 2 * metadata_reserve, comm);
  const std::string tmp = shared_temp_name(path, comm);
  TemporaryFileGuard guard(tmp);
  // HDF5 1.10 cannot survive a file whose close fails: a metadata flush that meets a full
  // disk (or a quota) leaves a half-closed file that crashes the library at MPI_Finalize.
  // Rank 0 therefore first takes the whole file's size on disk (a full disk, a quota or a
  // file-size limit refuses here, before HDF5 opens anything), then keeps 1 MiB of it beside
  // the file (far more than the metadata of a few data sets) and frees it just before the
  // close, so the close's flush has room even if the raw data filled the disk.
  SpaceReserve reserve(tmp + ".reserve", data_bytes + metadata_reserve, metadata_reserve, rank == 0);
  SSDR_CHECK_COLLECTIVE(comm, reserve.problem().empty(), "cannot write '" + path + "': " + reserve.problem());
  bool ok = true;
  std::string message;
  {
    detail::Hid file(detail::open_parallel(tmp, comm, true), H5Fclose);
    SSDR_CHECK_COLLECTIVE(comm, file.ok(), "cannot create '" + path + "' (HDF5)");
    auto write_set = [&](const std::string& set, hid_t mem_type, hid_t file_type, int rank_dims, const hsize_t* dims,
                         const hsize_t* offset, const hsize_t* count, const void* data) {
      // Intermediate groups ("/data/X") are created as needed.
      detail::Hid lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
      H5Pset_create_intermediate_group(lcpl.get(), 1);
      detail::Hid space(H5Screate_simple(rank_dims, dims, nullptr), H5Sclose);
      detail::Hid dset(H5Dcreate2(file.get(), set.c_str(), file_type, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Dclose);
      if (!dset.ok()) return false;
      detail::Hid fspace(H5Dget_space(dset.get()), H5Sclose);
      bool empty = false;
      for (int k = 0; k < rank_dims; ++k) empty = empty || count[k] == 0;
      if (empty)
        H5Sselect_none(fspace.get());
      else
        H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, offset, nullptr, count, nullptr);
      detail::Hid mspace(H5Screate_simple(rank_dims, count, nullptr), H5Sclose);
      if (empty) H5Sselect_none(mspace.get());
      detail::Hid dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
      H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE);
      return H5Dwrite(dset.get(), mem_type, mspace.get(), fspace.get(), dxpl.get(), data) >= 0;
    };
    // Each data set's result is agreed before the next collective call: a write that failed
    // on one rank only (its part met the quota) must not leave the others in the next
    // data set's collective write.
    auto agreed = [&](bool mine) {
      int v = mine ? 1 : 0, all = 0;
      MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, comm);
      return all != 0;
    };
    for (const Hdf5RowBlock& b : blocks) {
      if (!ok) break;
      const int rank_dims = b.cols > 0 ? 2 : 1;
      const hsize_t dims[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(b.cols)};
      const hsize_t offset[2] = {static_cast<hsize_t>(start), 0};
      const hsize_t count[2] = {static_cast<hsize_t>(rows_local), static_cast<hsize_t>(b.cols)};
      if (b.type == Hdf5RowBlock::Type::str) {  // fixed-length UTF-8, NUL-terminated, in memory as in the file
        detail::Hid text(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(text.get(), static_cast<size_t>(std::max<int64_t>(b.str_bytes, 1)));
        H5Tset_strpad(text.get(), H5T_STR_NULLTERM);
        H5Tset_cset(text.get(), H5T_CSET_UTF8);
        ok = agreed(write_set(b.name, text.get(), text.get(), rank_dims, dims, offset, count, b.data));
        continue;
      }
      const hid_t mem = b.type == Hdf5RowBlock::Type::f64   ? H5T_NATIVE_DOUBLE
                        : b.type == Hdf5RowBlock::Type::i64 ? H5T_NATIVE_INT64
                                                            : H5T_NATIVE_INT;
      const hid_t stored = b.type == Hdf5RowBlock::Type::f64   ? H5T_IEEE_F64LE
                           : b.type == Hdf5RowBlock::Type::i64 ? H5T_STD_I64LE
                                                               : H5T_STD_I32LE;
      ok = agreed(write_set(b.name, mem, stored, rank_dims, dims, offset, count, b.data));
    }
    // Root attributes: metadata, created collectively with the same values on every rank.
    for (const auto& [name, text] : attributes) {
      if (!ok) break;
      detail::Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(type.get(), std::max<size_t>(text.size(), 1));
      H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
      detail::Hid space(H5Screate(H5S_SCALAR), H5Sclose);
      detail::Hid attr(H5Acreate2(file.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose);
      ok = agreed(attr.ok() && H5Awrite(attr.get(), type.get(), text.empty() ? "" : text.data()) >= 0);
    }
    if (!ok) message = "cannot write '" + path + "' (HDF5 write error: disk full or quota exceeded?)";
    reserve.release();
    MPI_Barrier(comm);  // the room is free before any rank flushes metadata
    if (H5Fclose(file.release()) < 0 && ok) {  // collective; the metadata reaches the file here
      ok = false;
      message = "cannot write '" + path + "': HDF5 could not close the file (disk full or quota exceeded?)";
    }
  }
  commit_shared(tmp, path, ok, message, comm);
}

std::string read_hdf5_root_attribute(const std::string& path, const std::string& name, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string text, problem;
  if (rank == 0) {
    detail::Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) {
      problem = "cannot open '" + path + "' as HDF5";
    } else if (H5Aexists(file.get(), name.c_str()) > 0) {
      detail::Hid attr(H5Aopen(file.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
      detail::Hid type(attr.ok() ? H5Aget_type(attr.get()) : -1, H5Tclose);
      if (!type.ok() || H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0) {
        problem = path + ": attribute " + name + " is not a fixed-length string";
      } else {
        std::string buffer(H5Tget_size(type.get()), '\0');
        if (H5Aread(attr.get(), type.get(), buffer.data()) < 0)
          problem = path + ": cannot read attribute " + name;
        else
          text = buffer.substr(0, buffer.find('\0'));
      }
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, problem.empty(), problem);
  return bcast_string(text, 0, comm);
}

void write_hdf5(const std::string& path, const DistMatrix& X, const std::string& name, const std::vector<int>* labels,
                const std::string& labels_name, const std::vector<std::string>* names, bool strings) {
  std::vector<Hdf5RowBlock> blocks = {{name, Hdf5RowBlock::Type::f64, X.cols, X.v.data()}};
  // The labels live with the rows: each rank writes its own rows' labels, as the reader reads
  // them back to the same classes (names as names, integer classes as their integers).
  std::vector<int64_t> values, as_integers;
  std::vector<int32_t> as_int32;
  std::vector<char> as_text;
  if (labels != nullptr) {
    const size_t n_local = labels->size();
    if (names == nullptr) {
      blocks.push_back({labels_name, Hdf5RowBlock::Type::i32, 0, labels->data()});
    } else if (!strings && integer_names(*names, &values)) {
      bool fits = true;
      for (int64_t v : values) fits = fits && v >= INT32_MIN && v <= INT32_MAX;
      for (size_t i = 0; i < n_local; ++i) {
        const int code = (*labels)[i];
        as_integers.push_back(code >= 0 && static_cast<size_t>(code) < values.size() ? values[static_cast<size_t>(code)] : -1);
      }
      if (fits) {
        as_int32.assign(as_integers.begin(), as_integers.end());
        blocks.push_back({labels_name, Hdf5RowBlock::Type::i32, 0, as_int32.data()});
      } else {
        blocks.push_back({labels_name, Hdf5RowBlock::Type::i64, 0, as_integers.data()});
      }
    } else {
      size_t width = 1;  // the longest name and its NUL: the same on every rank (names are replicated)
      for (const std::string& s : *names) width = std::max(width, s.size() + 1);
      as_text.assign(n_local * width, '\0');
      for (size_t i = 0; i < n_local; ++i) {
        const int code = (*labels)[i];
        if (code < 0 || static_cast<size_t>(code) >= names->size()) continue;  // "": unlabeled
        const std::string& s = (*names)[static_cast<size_t>(code)];
        std::copy(s.begin(), s.end(), as_text.begin() + static_cast<std::ptrdiff_t>(i * width));
      }
      Hdf5RowBlock b{labels_name, Hdf5RowBlock::Type::str, 0, as_text.data()};
      b.str_bytes = static_cast<int64_t>(width);
      blocks.push_back(b);
    }
  }
  write_hdf5_rows(path, X.n_local, blocks, X.comm);
}

void write_labels(const std::vector<int>& labels, const std::string& path, MPI_Comm comm, bool npy,
                  const std::vector<std::string>* names, bool as_strings) {
  // Names that are all integers go to NPY as their integers; other names as '<U w' strings.
  const bool integers = names == nullptr || (!as_strings && integer_names(*names));  // no names: the codes
  size_t width = 1;
  if (names != nullptr)
    for (const std::string& s : *names) {
      size_t points = 0;  // UTF-8 code points
      for (unsigned char ch : s) points += (ch & 0xC0) != 0x80;
      width = std::max(width, points);
    }
  const bool strings = names != nullptr && !integers;
  const std::string descr = strings ? "<U" + std::to_string(width) : "<i8";
  const auto name_of = [&](int v) -> std::string {
    if (v < 0) return npy && !strings ? "-1" : "";
    return names != nullptr && v < static_cast<int>(names->size()) ? (*names)[static_cast<size_t>(v)] : std::to_string(v);
  };
  stream_rows_through_root<int>(
      labels.data(), static_cast<int64_t>(labels.size()), 1, int64_t{1} << 24, 8, path, npy,
      [&](int64_t n) { return npy ? npy_header(n, 0, descr.c_str(), true) : std::string(); },
      [&](std::FILE* f, const int* v, int64_t k) {
        std::string text;
        for (int64_t i = 0; i < k; ++i) {
          if (npy && strings) {
            const std::string s = name_of(v[i]);
            std::vector<uint32_t> points;
            for (size_t p = 0; p < s.size();) {  // UTF-8 to code points
              const unsigned char b = static_cast<unsigned char>(s[p]);
              const int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
              uint32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
              for (int q = 1; q < len && p + static_cast<size_t>(q) < s.size(); ++q)
                c = (c << 6) | (static_cast<unsigned char>(s[p + static_cast<size_t>(q)]) & 0x3F);
              points.push_back(c);
              p += static_cast<size_t>(len);
            }
            points.resize(width, 0);
            for (uint32_t c : points)
              for (int b = 0; b < 4; ++b) text.push_back(static_cast<char>((c >> (8 * b)) & 0xff));
          } else if (npy) {
            const int64_t value = names != nullptr && v[i] >= 0 ? std::stoll(name_of(v[i])) : v[i];
            const uint64_t x = static_cast<uint64_t>(value);
            for (int b = 0; b < 8; ++b) text.push_back(static_cast<char>((x >> (8 * b)) & 0xff));
          } else {
            text += csv_field(name_of(v[i]));  // one name per line, even with a line break in it
            text.push_back('\n');
          }
        }
        return std::fwrite(text.data(), 1, text.size(), f) == text.size();
      },
      comm);
}

void write_embedding(const DistMatrix& Y, const std::string& path, const std::string& dataset,
                     const TableColumns& table) {
  if (has_extension(path, ".h5") || has_extension(path, ".hdf5")) {
    if (table.labels == nullptr && table.ids == nullptr && table.id_names == nullptr) {
      write_hdf5(path, Y, dataset);
      return;
    }
    // The rows' class codes beside them (/labels, -1: none) and the classes' names as the
    // file's attribute class_names (a JSON array; code k is its k-th name).
    std::string names = "[";
    if (table.names != nullptr)
      for (size_t k = 0; k < table.names->size(); ++k) {
        names += k > 0 ? ",\"" : "\"";
        for (char ch : (*table.names)[k]) {
          if (ch == '"' || ch == '\\') names.push_back('\\');
          if (static_cast<unsigned char>(ch) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(ch)));
            names += esc;
            continue;
          }
          names.push_back(ch);
        }
        names.push_back('"');
      }
    names += "]";
    std::vector<Hdf5RowBlock> blocks = {{dataset, Hdf5RowBlock::Type::f64, Y.cols, Y.v.data()}};
    if (table.labels != nullptr) blocks.push_back({"/labels", Hdf5RowBlock::Type::i32, 0, table.labels->data()});
    // Rows that are not the data's rows 0..n−1 in order (the soft labels' transductive rows)
    // carry their index in the data file, and the --id-column texts when there are some.
    std::vector<char> id_text;
    if (table.ids != nullptr) blocks.push_back({"/ids", Hdf5RowBlock::Type::i64, 0, table.ids->data()});
    if (table.id_names != nullptr) {
      int64_t width = 1;
      for (const std::string& t : *table.id_names) width = std::max<int64_t>(width, static_cast<int64_t>(t.size()) + 1);
      MPI_Allreduce(MPI_IN_PLACE, &width, 1, MPI_INT64_T, MPI_MAX, Y.comm);
      id_text.assign(table.id_names->size() * static_cast<size_t>(width), '\0');
      for (size_t i = 0; i < table.id_names->size(); ++i)
        std::copy((*table.id_names)[i].begin(), (*table.id_names)[i].end(),
                  id_text.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(width)));
      Hdf5RowBlock b{"/id_names", Hdf5RowBlock::Type::str, 0, id_text.data()};
      b.str_bytes = width;
      blocks.push_back(b);
    }
    std::vector<std::pair<std::string, std::string>> attributes;
    if (table.labels != nullptr) attributes.emplace_back("class_names", names);
    write_hdf5_rows(path, Y.n_local, blocks, Y.comm, attributes);
    return;
  }
  if (has_extension(path, ".npy") && !is_special(path)) {
    write_npy_parallel(Y, path);
    return;
  }
  write_embedding_streamed(Y, path, table);
}

void write_embedding_streamed(const DistMatrix& Y, const std::string& path, const TableColumns& table) {
  const bool npy = has_extension(path, ".npy");
  const int64_t cols = Y.cols;
  if (npy) {
    // Messages of at most ~2^26 doubles: the same split on the sending and receiving side.
    const int64_t rows_per_msg = std::max<int64_t>(1, (int64_t{1} << 26) / std::max<int64_t>(cols, 1));
    stream_rows_through_root<double>(
        Y.v.data(), Y.n_local, cols, rows_per_msg, 7, path, true, [&](int64_t n) { return npy_header(n, cols); },
        [&](std::FILE* f, const double* v, int64_t k) {
          write_rows(f, v, k, cols, true);
          return true;  // write_rows' errors surface at the commit (the stream's error flag)
        },
        Y.comm);
    return;
  }
  // CSV: each row as a record (its id as text, its label code, its values), formatted on
  // rank 0: ids are the data's --id-column texts or the rows' sample indices.
  SSDR_CHECK(table.columns.empty() || static_cast<int64_t>(table.columns.size()) == cols,
             "write_embedding: " + std::to_string(table.columns.size()) + " column names for " + std::to_string(cols) +
                 " columns");
  const bool with_label = table.labels != nullptr;
  const int64_t start = first_row(Y);
  std::vector<std::string> texts(static_cast<size_t>(Y.n_local));
  int64_t id_width = 1;
  for (int64_t i = 0; i < Y.n_local; ++i) {
    std::string& t = texts[static_cast<size_t>(i)];
    t = table.id_names != nullptr ? csv_field((*table.id_names)[static_cast<size_t>(i)])
        : std::to_string(table.ids != nullptr ? (*table.ids)[static_cast<size_t>(i)] : start + i);
    id_width = std::max<int64_t>(id_width, static_cast<int64_t>(t.size()));
  }
  MPI_Allreduce(MPI_IN_PLACE, &id_width, 1, MPI_INT64_T, MPI_MAX, Y.comm);
  const int64_t width = id_width + 4 + 8 * cols;  // bytes per record
  std::vector<char> records(static_cast<size_t>(Y.n_local * width), '\0');
  for (int64_t i = 0; i < Y.n_local; ++i) {
    char* r = records.data() + i * width;
    const std::string& t = texts[static_cast<size_t>(i)];
    std::copy(t.begin(), t.end(), r);
    const int32_t code = with_label ? (*table.labels)[static_cast<size_t>(i)] : -1;
    std::memcpy(r + id_width, &code, 4);
    if (cols > 0) std::memcpy(r + id_width + 4, Y.row(i), static_cast<size_t>(8 * cols));
  }
  texts = {};
  std::string header = "id";
  if (with_label) header += "," + csv_field(table.label_column);
  for (int64_t j = 0; j < cols; ++j)
    header += "," + (table.columns.empty() ? "y" + std::to_string(j + 1) : csv_field(table.columns[static_cast<size_t>(j)]));
  header += "\n";
  // The class names as fields, quoted once here rather than per row.
  std::vector<std::string> label_text;
  if (with_label && table.names != nullptr)
    for (const std::string& name : *table.names) label_text.push_back(csv_field(name));
  const int64_t rows_per_msg = std::max<int64_t>(1, (int64_t{1} << 29) / width);
  stream_rows_through_root<char>(
      records.data(), Y.n_local, width, rows_per_msg, 7, path, false, [&](int64_t) { return header; },
      [&](std::FILE* f, const char* v, int64_t k) {
        std::string line;
        char num[40];
        for (int64_t i = 0; i < k; ++i) {
          const char* r = v + i * width;
          line.assign(r, strnlen(r, static_cast<size_t>(id_width)));
          if (with_label) {
            int32_t code = -1;
            std::memcpy(&code, r + id_width, 4);
            line.push_back(',');
            if (code >= 0)
              line += code < static_cast<int32_t>(label_text.size()) ? label_text[static_cast<size_t>(code)]
                                                                       : std::to_string(code);
          }
          for (int64_t j = 0; j < cols; ++j) {
            double x = 0;
            std::memcpy(&x, r + id_width + 4 + 8 * j, 8);
            const int len = std::snprintf(num, sizeof num, "%.17g", x);
            line.push_back(',');
            line.append(num, static_cast<size_t>(len));
          }
          line.push_back('\n');
          if (std::fwrite(line.data(), 1, line.size(), f) != line.size()) return false;
        }
        return true;
      },
      Y.comm);
}

}  // namespace ssdr::io
