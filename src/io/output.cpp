// The atomic-commit and space-reservation layer of every writer: temporary names and their
// removal on a signal, AtomicFile (one rank), the shared temporary name and commit of the
// collective writers, room checked and reserved before a write, the outputs checked before
// any computation; and write_embedding / write_labels choosing the writer by format. The
// writers are one file per format (output_internal.hpp): output_npy.cpp, output_hdf5.cpp,
// output_csv.cpp.
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
#include <memory>
#include <string>
#include <vector>

#include "output_internal.hpp"
#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::io {

namespace {

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

namespace detail {

std::string shared_temp_name(const std::string& path, MPI_Comm comm) {
  long pid = static_cast<long>(::getpid());
  MPI_Bcast(&pid, 1, MPI_LONG, 0, comm);
  return path + ".tmp." + std::to_string(pid);
}

void commit_shared(const std::string& tmp, const std::string& path, bool ok, std::string message, MPI_Comm comm,
                   int64_t expected_size) {
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

SpaceReserve::SpaceReserve(const std::string& path, int64_t probe_bytes, int64_t keep_bytes, bool owner)
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

void SpaceReserve::release() {
  if (held_) ::unlink(path_.c_str());
  held_ = false;
  guard_.release();
}

bool is_special(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int64_t first_row(int64_t rows_local, MPI_Comm comm) {
  int64_t before = 0;
  MPI_Exscan(&rows_local, &before, 1, MPI_INT64_T, MPI_SUM, comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank == 0 ? 0 : before;
}

bool integer_names(const std::vector<std::string>& names, std::vector<int64_t>* values) {
  if (values != nullptr) values->clear();
  for (const std::string& s : names) {
    int64_t v = 0;
    const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size()) return false;
    if (values != nullptr) values->push_back(v);
  }
  return true;
}

}  // namespace detail

void write_embedding(const DistMatrix& Y, const std::string& path, const std::string& dataset,
                     const TableColumns& table) {
  if (has_extension(path, ".h5") || has_extension(path, ".hdf5")) {
    detail::write_hdf5_embedding(Y, path, dataset, table);
    return;
  }
  if (has_extension(path, ".npy") && !detail::is_special(path)) {
    detail::write_npy_parallel(Y, path);
    return;
  }
  write_embedding_streamed(Y, path, table);
}

void write_embedding_streamed(const DistMatrix& Y, const std::string& path, const TableColumns& table) {
  if (has_extension(path, ".npy"))
    detail::write_npy_streamed(Y, path);
  else
    detail::write_csv_table(Y, path, table);
}

void write_labels(const std::vector<int>& labels, const std::string& path, MPI_Comm comm, bool npy,
                  const std::vector<std::string>* names, bool as_strings) {
  if (npy)
    detail::write_npy_labels(labels, path, comm, names, as_strings);
  else
    detail::write_text_labels(labels, path, comm, names);
}

}  // namespace ssdr::io
