// Helpers shared by the data set readers (see reader_internal.hpp).
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>

#include "reader_internal.hpp"

namespace ssdr::io::detail {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string open_failure(const std::string& path) {
  struct stat st {};
  const int err = ::stat(path.c_str(), &st) == 0 ? 0 : errno;
  return "cannot open '" + path + "': " + (err != 0 ? errno_text(err) : std::string("not a readable file"));
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

std::string errno_text(int err) { return err != 0 ? std::strerror(err) : "unknown error"; }

[[noreturn]] void fail(std::string message) { throw LocalFailure{std::move(message)}; }

/// Fails unless `path` is a regular file: a FIFO without a writer would block forever, and a
/// device such as /dev/zero never ends. stat() itself never blocks.
void require_regular(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // the open that follows names the error
  if (S_ISDIR(st.st_mode)) fail("cannot read '" + path + "': Is a directory");
  if (!S_ISREG(st.st_mode))
    fail("cannot read '" + path + "': not a regular file (a device, FIFO or socket); expected a data file");
}

void require_data_file(const std::string& path) {
  if (is_directory(path)) fail("cannot read '" + path + "': Is a directory");
  require_regular(path);
  if (!file_exists(path)) fail(open_failure(path));
}

/// Size in bytes of a regular file (−1 when unknown).
int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : -1;
}

/// Fails when an n×d dense double matrix split over `ranks` ranks, `per_node` of them on
/// this host, would not fit this host's memory. `what` names the file, line and value that
/// set the size.
void make_typed(Dataset& ds, int64_t n, int64_t d, ElementType type, MPI_Comm comm) {
  ds.X = make_dist(comm, n, 0);  // shape and layout only
  ds.X.cols = d;
  ds.typed = true;
  TypedRows& r = ds.rows;
  r.comm = comm;
  r.n_global = n;
  r.row_start = ds.X.row_start;
  r.n_local = ds.X.n_local;
  r.cols = d;
  r.type = type;
  r.bytes.assign(static_cast<size_t>(r.n_local * d) * element_size(type), 0);
}

void require_dense_fits(int64_t n, int64_t d, int ranks, int per_node, const std::string& what,
                        size_t element_bytes) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const double host = static_cast<double>(pages) * static_cast<double>(page);
  const double per_rank = std::ceil(static_cast<double>(n) / ranks) * static_cast<double>(d) *
                          static_cast<double>(element_bytes);
  if (per_rank * per_node > host) {
    char buf[160];
    std::snprintf(buf, sizeof buf, element_bytes == 8 ? "%lld x %lld doubles need" : "%lld x %lld values need %.3g GiB per rank, %.3g GiB for the %d rank(s) on this host (%.3g GiB)",
                  static_cast<long long>(n), static_cast<long long>(d), per_rank / 1073741824.0,
                  per_rank * per_node / 1073741824.0, per_node, host / 1073741824.0);
    fail(what + ": " + buf);
  }
}

void owner_range(int64_t n, int size, int rank, int64_t& start, int64_t& count) {
  const int64_t base = n / size, extra = n % size;
  count = base + (rank < extra ? 1 : 0);
  start = rank * base + std::min<int64_t>(rank, extra);
}

std::string mpi_error_text(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  // Open MPI: "MPI_ERR_NO_SUCH_FILE: no such file or directory" -> "No such file or directory",
  // as strerror words it.
  std::string text(buf, static_cast<size_t>(len));
  const size_t colon = text.find(": ");
  if (text.rfind("MPI_ERR", 0) == 0 && colon != std::string::npos && colon + 2 < text.size()) {
    text = text.substr(colon + 2);
    text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  }
  return text;
}

bool is_gzip(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char b[2] = {0, 0};
  const size_t got = std::fread(b, 1, 2, f);
  std::fclose(f);
  return got == 2 && b[0] == 0x1f && b[1] == 0x8b;
}

/// Ranks of comm on this host (MPI_COMM_TYPE_SHARED). Collective.
int ranks_on_host(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int k = 1;
  MPI_Comm_size(node, &k);
  MPI_Comm_free(&node);
  return k;
}

}  // namespace ssdr::io::detail
