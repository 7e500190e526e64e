// Atomic output files and the embedding writer (CSV or NPY), streamed through rank 0.
#include "ssdr/io/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hdf5_internal.hpp"
#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::io {

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

}  // namespace

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
}

AtomicFile::~AtomicFile() {
  if (f_ != nullptr) std::fclose(f_);
  f_ = nullptr;
  if (!done_ && !in_place_) ::unlink(tmp_.c_str());
}

void AtomicFile::commit() {
  SSDR_CHECK(!done_ && f_ != nullptr, "'" + path_ + "' was already committed");
  errno = 0;
  const bool write_failed = std::fflush(f_) != 0 || std::ferror(f_) != 0;
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
  done_ = true;
}

namespace {

/// The directory part of a path ("." for a bare name).
std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

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
/// lowest failing rank's message (or the rename's) is raised on every rank. Collective.
void commit_shared(const std::string& tmp, const std::string& path, bool ok, std::string message, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int mine = ok ? 1 : 0, all = 1;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  if (rank == 0) {
    if (all == 0) {
      ::unlink(tmp.c_str());
    } else if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      ok = false;
      message = "cannot rename '" + tmp + "' to '" + path + "': " + detail::errno_text(err);
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
}

/// True when `path` names an existing device or FIFO (written in place, through rank 0).
bool is_special(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/// First global row of this rank's block (the layout need not be balanced). Collective.
int64_t first_row(const DistMatrix& Y) {
  int64_t mine = Y.n_local, before = 0;
  MPI_Exscan(&mine, &before, 1, MPI_INT64_T, MPI_SUM, Y.comm);
  int rank = 0;
  MPI_Comm_rank(Y.comm, &rank);
  return rank == 0 ? 0 : before;
}

/// Writes Y as NPY with collective MPI-IO: rank 0 the header, every rank its rows at its
/// byte offset. Atomic (shared temporary name + rename). Collective over Y.comm.
void write_npy_parallel(const DistMatrix& Y, const std::string& path) {
  MPI_Comm comm = Y.comm;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string tmp = shared_temp_name(path, comm);
  const int64_t start = first_row(Y);
  int64_t n = 0;
  MPI_Allreduce(&Y.n_local, &n, 1, MPI_INT64_T, MPI_SUM, comm);
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(comm, tmp.c_str(), MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  SSDR_CHECK_COLLECTIVE(comm, rc == MPI_SUCCESS, "cannot create '" + path + "': " + detail::mpi_error_text(rc));
  const std::string h = npy_header(n, Y.cols);
  bool ok = true;
  std::string message;
  if (rank == 0) {
    MPI_Status st;
    rc = MPI_File_write_at(fh, 0, h.data(), static_cast<int>(h.size()), MPI_CHAR, &st);
    if (rc != MPI_SUCCESS) {
      ok = false;
      message = "cannot write '" + path + "': " + detail::mpi_error_text(rc);
    }
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
    if (ok && rc != MPI_SUCCESS) {
      ok = false;
      message = "cannot write '" + path + "': " + detail::mpi_error_text(rc);
    }
  }
  rc = MPI_File_close(&fh);
  if (ok && rc != MPI_SUCCESS) {
    ok = false;
    message = "cannot write '" + path + "': " + detail::mpi_error_text(rc);
  }
  commit_shared(tmp, path, ok, message, comm);  // any rank's failure removes the file
}

}  // namespace

void write_hdf5(const std::string& path, const DistMatrix& X, const std::string& name, const std::vector<int>* labels,
                const std::string& labels_name) {
  MPI_Comm comm = X.comm;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // HDF5 cannot stream into a device or FIFO, and renaming over one would replace it.
  int special = rank == 0 && is_special(path) ? 1 : 0;
  MPI_Bcast(&special, 1, MPI_INT, 0, comm);
  SSDR_CHECK_COLLECTIVE(comm, special == 0,
                        "cannot write HDF5 to '" + path + "': it is a device or FIFO (HDF5 needs a regular file; "
                        "use .npy or .csv to stream)");
  const std::string tmp = shared_temp_name(path, comm);
  const int64_t start = first_row(X);
  int64_t n = 0;
  MPI_Allreduce(&X.n_local, &n, 1, MPI_INT64_T, MPI_SUM, comm);
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
    const hsize_t dims[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(X.cols)};
    const hsize_t offset[2] = {static_cast<hsize_t>(start), 0};
    const hsize_t count[2] = {static_cast<hsize_t>(X.n_local), static_cast<hsize_t>(X.cols)};
    ok = write_set(name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, 2, dims, offset, count, X.v.data());
    if (ok && labels != nullptr) {
      // Replicated labels: each rank writes the labels of its own rows.
      const hsize_t ldims[1] = {static_cast<hsize_t>(n)}, loff[1] = {static_cast<hsize_t>(start)},
                    lcount[1] = {static_cast<hsize_t>(X.n_local)};
      ok = write_set(labels_name, H5T_NATIVE_INT, H5T_STD_I32LE, 1, ldims, loff, lcount,
                     labels->data() + start);
    }
    if (!ok) message = "cannot write '" + path + "' (HDF5 write error)";
  }  // the file closes (collectively) before the rename
  commit_shared(tmp, path, ok, message, comm);
}

void write_labels_npy(const std::vector<int>& labels, const std::string& path, MPI_Comm comm) {
  on_root(comm, [&] {
    AtomicFile f(path, true);
    const std::string h = npy_header(static_cast<int64_t>(labels.size()), 0, "<i8", true);
    std::fwrite(h.data(), 1, h.size(), f.get());
    for (int label : labels) {
      const int64_t v = label;
      unsigned char b[8];
      for (int k = 0; k < 8; ++k) b[k] = static_cast<unsigned char>((static_cast<uint64_t>(v) >> (8 * k)) & 0xff);
      std::fwrite(b, 1, 8, f.get());
    }
    f.commit();
  });
}

void write_embedding(const DistMatrix& Y, const std::string& path, const std::string& dataset) {
  if (has_extension(path, ".h5") || has_extension(path, ".hdf5")) {
    write_hdf5(path, Y, dataset);
    return;
  }
  if (has_extension(path, ".npy") && !is_special(path)) {
    write_npy_parallel(Y, path);
    return;
  }
  write_embedding_streamed(Y, path);
}

void write_embedding_streamed(const DistMatrix& Y, const std::string& path) {
  MPI_Comm comm = Y.comm;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool npy = has_extension(path, ".npy");
  const int64_t cols = Y.cols;

  // Every rank's row count, known on rank 0 (the layout need not be balanced).
  std::vector<int64_t> counts(static_cast<size_t>(size), 0);
  int64_t mine = Y.n_local;
  MPI_Gather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, 0, comm);

  std::unique_ptr<AtomicFile> out;
  std::string message;
  bool ok = true;
  if (rank == 0) {
    try {
      out = std::make_unique<AtomicFile>(path, npy);
      int64_t n = 0;
      for (int64_t c : counts) n += c;
      if (npy) {
        const std::string h = npy_header(n, cols);
        std::fwrite(h.data(), 1, h.size(), out->get());
      }
    } catch (const Error& e) {
      ok = false;
      message = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);

  // Messages of at most ~2^26 doubles: the same split on the sending and receiving side.
  const int64_t rows_per_msg = std::max<int64_t>(1, (int64_t{1} << 26) / std::max<int64_t>(cols, 1));
  if (rank == 0) {
    write_rows(out->get(), Y.v.data(), Y.n_local, cols, npy);
    std::vector<double> buf;
    for (int r = 1; r < size; ++r) {
      const int64_t rows = counts[static_cast<size_t>(r)];
      for (int64_t i = 0; i < rows; i += rows_per_msg) {
        const int64_t k = std::min(rows_per_msg, rows - i);
        buf.resize(static_cast<size_t>(k * cols));
        if (k * cols > 0)
          MPI_Recv(buf.data(), static_cast<int>(k * cols), MPI_DOUBLE, r, 7, comm,
                   MPI_STATUS_IGNORE);
        write_rows(out->get(), buf.data(), k, cols, npy);
      }
    }
    try {
      out->commit();
    } catch (const Error& e) {
      ok = false;
      message = e.what();
    }
    out.reset();
  } else {
    for (int64_t i = 0; i < Y.n_local; i += rows_per_msg) {
      const int64_t k = std::min(rows_per_msg, Y.n_local - i);
      if (k * cols > 0)
        MPI_Send(Y.v.data() + i * cols, static_cast<int>(k * cols), MPI_DOUBLE, 0, 7, comm);
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
}

}  // namespace ssdr::io
