// The NPY writers: the embedding with collective MPI-IO (every rank its rows at its byte
// offset) or streamed through rank 0 (a device or FIFO), and labels (int64 or '<U…' strings)
// streamed through rank 0. Committed by the layer of output.cpp.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "output_internal.hpp"
#include "reader_internal.hpp"

namespace ssdr::io::detail {

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

/// Writes `rows` rows of width `cols` (row-major) to f as raw little-endian doubles.
void write_npy_rows(std::FILE* f, const double* v, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return;
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
}

/// Appends `s` (UTF-8) to `text` as `width` little-endian UTF-32 code points, NUL-padded.
void append_utf32(std::string& text, const std::string& s, size_t width) {
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
}

}  // namespace

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

void write_npy_streamed(const DistMatrix& Y, const std::string& path) {
  const int64_t cols = Y.cols;
  // Messages of at most ~2^26 doubles: the same split on the sending and receiving side.
  const int64_t rows_per_msg = std::max<int64_t>(1, (int64_t{1} << 26) / std::max<int64_t>(cols, 1));
  stream_rows_through_root<double>(
      Y.v.data(), Y.n_local, cols, rows_per_msg, 7, path, true, [&](int64_t n) { return npy_header(n, cols); },
      [&](std::FILE* f, const double* v, int64_t k) {
        write_npy_rows(f, v, k, cols);
        return true;  // write_npy_rows' errors surface at the commit (the stream's error flag)
      },
      Y.comm);
}

void write_npy_labels(const std::vector<int>& labels, const std::string& path, MPI_Comm comm,
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
    if (v < 0) return !strings ? "-1" : "";
    return names != nullptr && v < static_cast<int>(names->size()) ? (*names)[static_cast<size_t>(v)] : std::to_string(v);
  };
  stream_rows_through_root<int>(
      labels.data(), static_cast<int64_t>(labels.size()), 1, int64_t{1} << 24, 8, path, true,
      [&](int64_t n) { return npy_header(n, 0, descr.c_str(), true); },
      [&](std::FILE* f, const int* v, int64_t k) {
        std::string text;
        for (int64_t i = 0; i < k; ++i) {
          if (strings) {
            append_utf32(text, name_of(v[i]), width);
          } else {
            const int64_t value = names != nullptr && v[i] >= 0 ? std::stoll(name_of(v[i])) : v[i];
            const uint64_t x = static_cast<uint64_t>(value);
            for (int b = 0; b < 8; ++b) text.push_back(static_cast<char>((x >> (8 * b)) & 0xff));
          }
        }
        return std::fwrite(text.data(), 1, text.size(), f) == text.size();
      },
      comm);
}

}  // namespace ssdr::io::detail
