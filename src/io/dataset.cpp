// Reading labeled data sets (CSV, LIBSVM/SVMlight, IDX) into a row-distributed DistMatrix.
//
// Text formats: rank 0 streams the file twice through zlib (which reads plain files
// transparently). Pass 1 validates every line and collects the labels, n and d; pass 2
// parses chunks of rows and sends each piece to the rank that owns it. Every error is raised
// collectively so that all ranks throw the same one-line message.
//
// IDX: every rank reads the headers and labels and then its own row range straight from the
// image file(s) (gzseek skips forward through compressed files).
#include "ssdr/io/dataset.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ssdr/core/error.hpp"

namespace ssdr::io {

namespace {

// ---------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

std::string errno_text(int err) { return err != 0 ? std::strerror(err) : "unknown error"; }

/// Local failure inside a phase; converted into a collective ssdr::Error by the caller.
struct LocalFailure {
  std::string message;
};

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

/// Size in bytes of a regular file (−1 when unknown).
int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : -1;
}

/// Fails when an n×d dense double matrix split over `ranks` ranks, `per_node` of them on
/// this host, would not fit this host's memory. `what` names the file, line and value that
/// set the size.
void require_dense_fits(int64_t n, int64_t d, int ranks, int per_node, const std::string& what) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const double host = static_cast<double>(pages) * static_cast<double>(page);
  const double per_rank = std::ceil(static_cast<double>(n) / ranks) * static_cast<double>(d) * 8.0;
  if (per_rank * per_node > host) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%lld x %lld doubles need %.3g GiB per rank, %.3g GiB for the %d rank(s) on this host (%.3g GiB)",
                  static_cast<long long>(n), static_cast<long long>(d), per_rank / 1073741824.0,
                  per_rank * per_node / 1073741824.0, per_node, host / 1073741824.0);
    fail(what + ": " + buf);
  }
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

/// A zlib file handle that closes itself.
class GzFile {
 public:
  GzFile() = default;
  ~GzFile() { close(); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  /// Opens `path` for reading or records the reason in a LocalFailure.
  void open(const std::string& path) {
    close();
    path_ = path;
    if (is_directory(path)) fail("cannot read '" + path + "': Is a directory");
    require_regular(path);
    errno = 0;
    f_ = gzopen(path.c_str(), "rb");
    if (f_ == nullptr) fail("cannot open '" + path + "': " + errno_text(errno));
    gzbuffer(f_, 1 << 18);
  }
  void close() {
    if (f_ != nullptr) gzclose(f_);
    f_ = nullptr;
  }
  /// Reads up to `len` bytes; returns the count (0 at end of file). Read errors fail.
  size_t read(void* buf, size_t len) {
    size_t total = 0;
    auto* p = static_cast<unsigned char*>(buf);
    while (total < len) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(len - total, 1u << 30));
      const int got = gzread(f_, p + total, chunk);
      if (got < 0) fail("cannot read '" + path_ + "': " + error_text());
      if (got == 0) {
        // zlib reports a truncated gzip stream as an error after the data it could decode.
        int code = Z_OK;
        gzerror(f_, &code);
        if (code == Z_BUF_ERROR) fail("'" + path_ + "': truncated gzip file (unexpected end of data)");
        if (code != Z_OK) fail("cannot read '" + path_ + "': " + error_text());
        break;
      }
      total += static_cast<size_t>(got);
    }
    return total;
  }
  /// Skips forward to absolute uncompressed offset `off`. Returns false when the file ends.
  bool seek(int64_t off) {
    const z_off_t r = gzseek(f_, static_cast<z_off_t>(off), SEEK_SET);
    return r == static_cast<z_off_t>(off);
  }
  std::string error_text() {
    int code = Z_OK;
    const char* msg = gzerror(f_, &code);
    if (code == Z_ERRNO) return errno_text(errno);
    return msg != nullptr && *msg != '\0' ? msg : "read error";
  }
  const std::string& path() const { return path_; }

 private:
  gzFile f_ = nullptr;
  std::string path_;
};

/// Splits a (possibly gzip-compressed) text file into lines, without the line terminator
/// ("\n" or "\r\n"). Lines may be arbitrarily long.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : buf_(1 << 20) { file_.open(path); }

  /// Next line in `line` (valid until the next call); false at the end of the file.
  bool next(std::string_view& line) {
    carry_.clear();
    for (;;) {
      if (pos_ < end_) {
        const char* start = buf_.data() + pos_;
        const void* nl = std::memchr(start, '\n', end_ - pos_);
        if (nl != nullptr) {
          const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - start);
          pos_ += len + 1;
          ++line_no_;
          if (carry_.empty()) {
            line = strip_cr(std::string_view(start, len));
          } else {
            carry_.append(start, len);
            line = strip_cr(carry_);
          }
          return true;
        }
        carry_.append(start, end_ - pos_);
        pos_ = end_;
      }
      if (eof_) break;
      end_ = file_.read(buf_.data(), buf_.size());
      pos_ = 0;
      if (end_ == 0) eof_ = true;
    }
    if (carry_.empty()) return false;
    ++line_no_;
    line = strip_cr(carry_);
    return true;
  }
  int64_t line_no() const { return line_no_; }

 private:
  std::string_view strip_cr(std::string_view s) const {
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (line_no_ == 1 && s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);  // UTF-8 BOM
    return s;
  }
  GzFile file_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  std::string carry_;
  int64_t line_no_ = 0;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_blank(std::string_view s) { return trim(s).empty(); }

/// Shortens a token for an error message.
std::string shown(std::string_view tok) {
  if (tok.size() > 40) return std::string(tok.substr(0, 37)) + "...";
  return std::string(tok);
}

/// Where a token came from, for messages: "file:line".
struct Where {
  const std::string* path;
  int64_t line;
  std::string str() const { return *path + ":" + std::to_string(line); }
};

/// Parses one finite double (surrounding blanks and a leading '+' allowed).
/// `what` and `pos` describe the position for the NaN/Inf message ("column 4", "feature 12").
double parse_value(std::string_view tok, const Where& at, const char* what, int64_t pos) {
  std::string_view t = trim(tok);
  std::string_view num = t;
  if (!num.empty() && num.front() == '+') num.remove_prefix(1);
  double v = 0.0;
  const auto res = std::from_chars(num.data(), num.data() + num.size(), v);
  if (num.empty() || res.ptr != num.data() + num.size() ||
      (res.ec != std::errc() && res.ec != std::errc::result_out_of_range))
    fail(at.str() + ": value '" + shown(t) + "' is not a number");
  if (res.ec == std::errc::result_out_of_range) {
    // Underflow becomes a tiny number or zero (harmless); overflow is an infinity.
    v = std::strtod(std::string(num).c_str(), nullptr);
  }
  if (!std::isfinite(v)) fail(at.str() + ": NaN/Inf value in " + what + " " + std::to_string(pos));
  return v;
}

/// Parses a class label: an integer ≥ 0 ("3", "+3" or "3.0").
int parse_label(std::string_view tok, const Where& at) {
  std::string_view t = trim(tok);
  std::string_view num = t;
  if (!num.empty() && num.front() == '+') num.remove_prefix(1);
  double v = 0.0;
  const auto res = std::from_chars(num.data(), num.data() + num.size(), v);
  const bool ok = !num.empty() && res.ec == std::errc() && res.ptr == num.data() + num.size() &&
                  std::isfinite(v) && v >= 0.0 && v == std::floor(v) &&
                  v < static_cast<double>(std::numeric_limits<int>::max());
  if (!ok) fail("labels must be integers >= 0 (" + at.str() + ": '" + shown(t) + "')");
  return static_cast<int>(v);
}

/// Counts the comma-separated fields of a line.
int64_t count_fields(std::string_view line) {
  return 1 + static_cast<int64_t>(std::count(line.begin(), line.end(), ','));
}

/// Parses one CSV line with `fields` fields (label + fields-1 values). Values go to `row`
/// when it is not null.
int parse_csv_line(std::string_view line, int64_t fields, const Where& at, double* row) {
  const int64_t found = count_fields(line);
  if (found != fields)
    fail(at.str() + ": expected " + std::to_string(fields) + " fields (label + " +
         std::to_string(fields - 1) + " values), found " + std::to_string(found));
  size_t comma = line.find(',');
  const int label = parse_label(line.substr(0, comma), at);
  int64_t j = 0;
  while (comma != std::string_view::npos) {
    const size_t start = comma + 1;
    comma = line.find(',', start);
    const std::string_view tok =
        line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const double v = parse_value(tok, at, "column", j + 2);
    if (row != nullptr) row[j] = v;
    ++j;
  }
  return label;
}

/// Next whitespace-delimited token of `s` starting at `pos` (empty at the end).
std::string_view next_token(std::string_view s, size_t& pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  const size_t start = pos;
  while (pos < s.size() && !is_space(s[pos])) ++pos;
  return s.substr(start, pos - start);
}

/// Parses one LIBSVM line. Returns the label; `max_index` is raised to the largest index.
/// When `row` is given (width d), the values are stored at index-1 (indices > d fail).
int parse_libsvm_line(std::string_view line, const Where& at, int64_t& max_index, double* row,
                      int64_t d) {
  const size_t hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  size_t pos = 0;
  const int label = parse_label(next_token(line, pos), at);
  int64_t prev = 0;
  for (;;) {
    const std::string_view tok = next_token(line, pos);
    if (tok.empty()) break;
    const size_t colon = tok.find(':');
    if (colon == std::string_view::npos)
      fail(at.str() + ": expected 'index:value', found '" + shown(tok) + "'");
    const std::string_view key = tok.substr(0, colon);
    if (key == "qid") continue;  // SVMlight query ids carry no feature
    int64_t idx = 0;
    const auto res = std::from_chars(key.data(), key.data() + key.size(), idx);
    if (key.empty() || res.ec != std::errc() || res.ptr != key.data() + key.size() || idx < 1)
      fail(at.str() + ": feature index '" + shown(key) + "' is not an integer >= 1");
    if (idx <= prev)
      fail(at.str() + ": feature indices must be strictly increasing (" + std::to_string(idx) +
           " after " + std::to_string(prev) + ")");
    prev = idx;
    const double v = parse_value(tok.substr(colon + 1), at, "feature", idx);
    if (row != nullptr) {
      if (idx > d) fail(at.str() + ": feature index " + std::to_string(idx) + " exceeds " +
                        std::to_string(d) + " (file changed while reading?)");
      row[idx - 1] = v;
    }
  }
  max_index = std::max(max_index, prev);
  return label;
}

/// First row and row count of `rank` in the block layout of n rows over `size` ranks.
void owner_range(int64_t n, int size, int rank, int64_t& start, int64_t& count) {
  const int64_t base = n / size, extra = n % size;
  count = base + (rank < extra ? 1 : 0);
  start = rank * base + std::min<int64_t>(rank, extra);
}

/// Runs `body` and turns a LocalFailure into (false, message).
template <class F>
bool attempt(F&& body, std::string& message) {
  try {
    body();
    return true;
  } catch (const LocalFailure& f) {
    message = f.message;
  } catch (const std::bad_alloc&) {
    message = "out of memory";
  }
  return false;
}

// ---------------------------------------------------------------------------------------
// Text formats
// ---------------------------------------------------------------------------------------

Dataset read_text(const std::string& path, Format format, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool csv = format == Format::csv;

  // Pass 1 (rank 0): validate every line, collect labels, n and d.
  std::vector<int> labels;
  int64_t dims[2] = {0, 0};  // n, d
  std::string message;
  bool ok = true;
  const int per_node = ranks_on_host(comm);
  if (rank == 0) {
    ok = attempt(
        [&] {
          require_regular(path);
          LineReader in(path);
          std::string_view line;
          int64_t fields = -1, max_index = 0, max_index_line = 0, max_label_line = 0;
          int max_label = -1;
          while (in.next(line)) {
            if (is_blank(line)) continue;
            const Where at{&path, in.line_no()};
            if (csv) {
              if (fields < 0) {
                fields = count_fields(line);
                if (fields < 2)
                  fail(at.str() + ": expected a label and at least one value, found 1 field");
              }
              labels.push_back(parse_csv_line(line, fields, at, nullptr));
            } else {
              const int64_t before = max_index;
              labels.push_back(parse_libsvm_line(line, at, max_index, nullptr, 0));
              if (max_index > before) max_index_line = at.line;
            }
            if (labels.back() > max_label) {
              max_label = labels.back();
              max_label_line = at.line;
            }
          }
          if (labels.empty()) fail(path + ": empty file (no samples)");
          dims[0] = static_cast<int64_t>(labels.size());
          dims[1] = csv ? fields - 1 : max_index;
          if (dims[1] < 1) fail(path + ": no feature values in any line");
          // Classes are 0..c−1 and every class needs samples: a label ≥ n cannot be one
          // (and would size per-class arrays from a few bytes of input).
          if (max_label >= dims[0])
            fail(path + ":" + std::to_string(max_label_line) + ": label " + std::to_string(max_label) +
                 " is not a class: labels must be 0..c-1 with c at most the number of samples (" +
                 std::to_string(dims[0]) + ")");
          require_dense_fits(dims[0], dims[1], size, per_node,
                             csv ? path : path + ":" + std::to_string(max_index_line) + ": feature index " +
                                              std::to_string(max_index));
        },
        message);
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  MPI_Bcast(dims, 2, MPI_INT64_T, 0, comm);
  const int64_t n = dims[0], d = dims[1];
  labels.resize(static_cast<size_t>(n));
  MPI_Bcast(labels.data(), static_cast<int>(n), MPI_INT, 0, comm);

  Dataset ds;
  ds.source = path;
  ds.labels = std::move(labels);
  ds.classes = *std::max_element(ds.labels.begin(), ds.labels.end()) + 1;
  ds.X = make_dist(comm, n, d);

  // Pass 2: chunks of rows parsed on rank 0 and sent to their owners.
  const int64_t chunk_rows =
      std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(d, 1), 1, 4096);
  std::vector<double> chunk;
  std::unique_ptr<LineReader> in;
  if (rank == 0) {
    ok = attempt([&] { in = std::make_unique<LineReader>(path); }, message);
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  const int64_t my_start = ds.X.row_start, my_end = ds.X.row_start + ds.X.n_local;
  for (int64_t a = 0; a < n; a += chunk_rows) {
    const int64_t b = std::min(n, a + chunk_rows);
    if (rank == 0) {
      ok = attempt(
          [&] {
            chunk.assign(static_cast<size_t>((b - a) * d), 0.0);
            std::string_view line;
            int64_t max_index = 0;
            for (int64_t i = a; i < b;) {
              if (!in->next(line)) fail(path + ": file ended early (changed while reading?)");
              if (is_blank(line)) continue;
              const Where at{&path, in->line_no()};
              double* row = chunk.data() + (i - a) * d;
              const int label = csv ? parse_csv_line(line, d + 1, at, row)
                                    : parse_libsvm_line(line, at, max_index, row, d);
              if (label != ds.labels[static_cast<size_t>(i)])
                fail(at.str() + ": file changed while reading");
              ++i;
            }
          },
          message);
    }
    SSDR_CHECK_COLLECTIVE(comm, ok, message);
    if (rank == 0) {
      for (int r = 0; r < size; ++r) {
        int64_t s = 0, c = 0;
        owner_range(n, size, r, s, c);
        const int64_t lo = std::max(a, s), hi = std::min(b, s + c);
        if (lo >= hi) continue;
        const double* src = chunk.data() + (lo - a) * d;
        if (r == 0)
          std::copy(src, src + (hi - lo) * d, ds.X.row(lo - s));
        else
          MPI_Send(src, static_cast<int>((hi - lo) * d), MPI_DOUBLE, r, 0, comm);
      }
    } else {
      const int64_t lo = std::max(a, my_start), hi = std::min(b, my_end);
      if (lo < hi)
        MPI_Recv(ds.X.row(lo - my_start), static_cast<int>((hi - lo) * d), MPI_DOUBLE, 0, 0, comm,
                 MPI_STATUS_IGNORE);
    }
  }
  return ds;
}

// ---------------------------------------------------------------------------------------
// IDX
// ---------------------------------------------------------------------------------------

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

/// One images file with its labels file.
struct IdxPart {
  std::string images, labels;
  int64_t n = 0, d = 0;
  int64_t offset = 0;  ///< first global row
};

/// `base` or `base.gz`, whichever exists (base when neither does, for the message).
std::string existing(const std::string& base) {
  if (file_exists(base)) return base;
  if (file_exists(base + ".gz")) return base + ".gz";
  return std::string();
}

/// The labels file that goes with an images file name.
std::string labels_for(const std::string& images) {
  std::string l = images;
  const std::string key = "images-idx3-ubyte";
  const size_t p = l.rfind(key);
  if (p == std::string::npos) fail("'" + images + "': cannot derive the labels file name (expected '*-images-idx3-ubyte[.gz]')");
  l.replace(p, key.size(), "labels-idx1-ubyte");
  if (file_exists(l)) return l;
  std::string alt = ends_with(l, ".gz") ? l.substr(0, l.size() - 3) : l + ".gz";
  if (file_exists(alt)) return alt;
  fail("cannot open '" + l + "' (labels for '" + images + "'): No such file or directory");
}

std::vector<IdxPart> idx_parts(const std::string& path) {
  std::vector<IdxPart> parts;
  if (is_directory(path)) {
    const std::string dir = ends_with(path, "/") ? path : path + "/";
    for (const char* prefix : {"train", "t10k"}) {
      const std::string base = dir + prefix + "-images-idx3-ubyte";
      const std::string img = existing(base);
      if (img.empty()) {
        if (std::string(prefix) == "t10k" && !parts.empty()) continue;  // test part optional
        fail("cannot open '" + base + "[.gz]': No such file or directory");
      }
      parts.push_back(IdxPart{img, labels_for(img)});
    }
  } else {
    if (!file_exists(path)) fail("cannot open '" + path + "': No such file or directory");
    parts.push_back(IdxPart{path, labels_for(path)});
  }
  return parts;
}

/// Reads and checks the images header of `part` (n, d).
void read_images_header(IdxPart& part) {
  GzFile f;
  f.open(part.images);
  unsigned char h[16];
  const size_t got = f.read(h, 4);
  if (got < 4) fail("'" + part.images + "': truncated IDX file (no header)");
  const uint32_t magic = be32(h);
  if (magic != 0x00000803u)
    fail("'" + part.images + "': not an IDX image file (magic " + hex32(magic) +
         ", expected 0x00000803 for unsigned bytes, 3 dimensions)");
  if (f.read(h + 4, 12) < 12) fail("'" + part.images + "': truncated IDX header");
  part.n = be32(h + 4);
  part.d = static_cast<int64_t>(be32(h + 8)) * be32(h + 12);
  if (part.n == 0) fail("'" + part.images + "': no images (empty file)");
  if (part.d == 0) fail("'" + part.images + "': images of size 0");
  const int64_t bytes = file_size(part.images);
  if (!ends_with(part.images, ".gz") && bytes >= 0 && bytes < 16 + part.n * part.d)
    fail("'" + part.images + "': truncated (expected " + std::to_string(part.n) + " images of " +
         std::to_string(part.d) + " pixels as the header claims, " + std::to_string(16 + part.n * part.d) +
         " bytes, but the file has " + std::to_string(bytes) + ")");
}

/// Reads all labels of `part` and appends them to `labels`.
void read_idx_labels(const IdxPart& part, std::vector<int>& labels) {
  GzFile f;
  f.open(part.labels);
  unsigned char h[8];
  if (f.read(h, 8) < 8) fail("'" + part.labels + "': truncated IDX file (no header)");
  const uint32_t magic = be32(h);
  if (magic != 0x00000801u)
    fail("'" + part.labels + "': not an IDX label file (magic " + hex32(magic) +
         ", expected 0x00000801)");
  const int64_t count = be32(h + 4);
  const int64_t bytes = file_size(part.labels);
  if (!ends_with(part.labels, ".gz") && bytes >= 0 && bytes < 8 + count)
    fail("'" + part.labels + "': truncated (expected " + std::to_string(count) + " labels, found " +
         std::to_string(std::max<int64_t>(bytes - 8, 0)) + ")");
  if (count != part.n)
    fail("'" + part.labels + "' has " + std::to_string(count) + " labels but '" + part.images +
         "' has " + std::to_string(part.n) + " images");
  std::vector<unsigned char> raw(static_cast<size_t>(count));
  const size_t got = f.read(raw.data(), raw.size());
  if (static_cast<int64_t>(got) < count)
    fail("'" + part.labels + "': truncated (expected " + std::to_string(count) +
         " labels, found " + std::to_string(got) + ")");
  labels.insert(labels.end(), raw.begin(), raw.end());
}

Dataset read_idx(const std::string& path, MPI_Comm comm) {
  std::vector<IdxPart> parts;
  std::vector<int> labels;
  std::string message;
  int64_t n = 0, d = 0;
  int size = 1;
  MPI_Comm_size(comm, &size);
  const int per_node = ranks_on_host(comm);
  bool ok = attempt(
      [&] {
        parts = idx_parts(path);
        for (IdxPart& p : parts) {
          read_images_header(p);
          if (d == 0) d = p.d;
          if (p.d != d)
            fail("'" + p.images + "': images have " + std::to_string(p.d) + " pixels, expected " +
                 std::to_string(d) + " as in '" + parts.front().images + "'");
          p.offset = n;
          n += p.n;
          require_dense_fits(n, d, size, per_node, "'" + p.images + "'");
          read_idx_labels(p, labels);
        }
        const int max_label = *std::max_element(labels.begin(), labels.end());
        if (max_label >= n)
          fail("'" + parts.back().labels + "': label " + std::to_string(max_label) +
               " is not a class: labels must be 0..c-1 with c at most the number of samples");
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);

  Dataset ds;
  ds.source = path;
  ds.labels = std::move(labels);
  ds.classes = *std::max_element(ds.labels.begin(), ds.labels.end()) + 1;
  ds.X = make_dist(comm, n, d);

  ok = attempt(
      [&] {
        const int64_t my_start = ds.X.row_start, my_end = ds.X.row_start + ds.X.n_local;
        std::vector<unsigned char> buf;
        for (const IdxPart& p : parts) {
          const int64_t lo = std::max(my_start, p.offset), hi = std::min(my_end, p.offset + p.n);
          if (lo >= hi) continue;
          GzFile f;
          f.open(p.images);
          const int64_t first = lo - p.offset;
          if (!f.seek(16 + first * d))
            fail("'" + p.images + "': truncated (expected " + std::to_string(p.n) +
                 " images, file ends before image " + std::to_string(first + 1) + ")");
          const int64_t block = std::max<int64_t>(1, (int64_t{1} << 24) / d);
          for (int64_t i = lo; i < hi; i += block) {
            const int64_t rows = std::min(block, hi - i);
            buf.resize(static_cast<size_t>(rows * d));
            const size_t got = f.read(buf.data(), buf.size());
            if (got < buf.size())
              fail("'" + p.images + "': truncated (expected " + std::to_string(p.n) +
                   " images, file ends in image " +
                   std::to_string(i - p.offset + static_cast<int64_t>(got) / d + 1) + ")");
            double* dst = ds.X.row(i - my_start);
            for (size_t k = 0; k < buf.size(); ++k) dst[k] = static_cast<double>(buf[k]);
          }
        }
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  return ds;
}

}  // namespace

Format parse_format(const std::string& name) {
  if (name == "csv") return Format::csv;
  if (name == "libsvm" || name == "svmlight") return Format::libsvm;
  if (name == "idx") return Format::idx;
  if (name == "auto" || name == "automatic") return Format::automatic;
  throw Error("--format: unknown data format '" + name + "' (expected csv, libsvm, idx or auto)", __FILE__, __LINE__,
              true);
}

Format detect_format(const std::string& path) {
  if (is_directory(path)) return Format::idx;
  if (path.find("idx3-ubyte") != std::string::npos) return Format::idx;
  std::string p = path;
  if (ends_with(p, ".gz")) p = p.substr(0, p.size() - 3);
  for (const char* ext : {".libsvm", ".svm", ".svmlight"})
    if (ends_with(p, ext)) return Format::libsvm;
  return Format::csv;
}

Dataset read_dataset(const std::string& path, Format format, MPI_Comm comm) {
  if (format == Format::automatic) format = detect_format(path);
  if (format == Format::idx) return read_idx(path, comm);
  return read_text(path, format, comm);
}

}  // namespace ssdr::io
