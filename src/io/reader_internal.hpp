#pragma once
/// \file reader_internal.hpp
/// Private to src/io (not installed): what the data set readers share. A reader raises a
/// LocalFailure (fail) inside a phase; attempt() turns it into a message that the caller
/// makes collective with SSDR_CHECK_COLLECTIVE.
///
/// - dataset.cpp: read_dataset, format names and detection;
/// - text_reader.cpp: the two passes over a text file (CSV and LIBSVM) through rank 0;
/// - csv_reader.cpp, libsvm_reader.cpp: one line of each text format, and its reader by byte
///   ranges over the machinery of text_range_reader.cpp (text_range_internal.hpp);
/// - idx_reader.cpp: IDX files, read by every rank;
/// - reader_internal.cpp: file checks and memory limits.
#include <mpi.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/values.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::io::detail {

// ---------------------------------------------------------------------------------------
// Small helpers (reader_internal.cpp)
// ---------------------------------------------------------------------------------------

bool ends_with(const std::string& s, const std::string& suffix);
bool is_directory(const std::string& path);
bool file_exists(const std::string& path);
/// "cannot open 'path': <strerror of stat>" (No such file, Too many levels of symbolic links...).
std::string open_failure(const std::string& path);
std::string errno_text(int err);

/// Local failure inside a phase; converted into a collective ssdr::Error by the caller.
struct LocalFailure {
  std::string message;
};

[[noreturn]] void fail(std::string message);

/// Fails unless `path` is a regular file: a FIFO without a writer would block forever, and a
/// device such as /dev/zero never ends. stat() itself never blocks.
void require_regular(const std::string& path);

/// Fails unless `path` names an existing regular file: a directory, a device or FIFO, a
/// missing file or a symlink loop each get their message (see require_regular, open_failure).
void require_data_file(const std::string& path);

/// Size in bytes of a regular file (−1 when unknown).
int64_t file_size(const std::string& path);

/// Fails when an n×d dense double matrix split over `ranks` ranks, `per_node` of them on
/// this host, would not fit this host's memory. `what` names the file, line and value that
/// set the size.
void require_dense_fits(int64_t n, int64_t d, int ranks, int per_node, const std::string& what,
                        size_t element_bytes = 8);

/// ds.X as the shape and block layout of n×d rows without values, and ds.rows the same
/// layout holding (zeroed) elements of `type`; ds.typed set. Not collective.
void make_typed(Dataset& ds, int64_t n, int64_t d, ElementType type, MPI_Comm comm);

/// Ranks of comm on this host (MPI_COMM_TYPE_SHARED). Collective.
int ranks_on_host(MPI_Comm comm);

/// First row and row count of `rank` in the block layout of n rows over `size` ranks (the
/// layout of make_dist).
void owner_range(int64_t n, int size, int rank, int64_t& start, int64_t& count);

/// An MPI file handle that closes itself.
class MpiFile {
 public:
  MpiFile() = default;
  ~MpiFile() {
    if (fh_ != MPI_FILE_NULL) MPI_File_close(&fh_);
  }
  MpiFile(const MpiFile&) = delete;
  MpiFile& operator=(const MpiFile&) = delete;
  /// Collective open for reading; returns MPI's error code.
  int open(MPI_Comm comm, const std::string& path) {
    return MPI_File_open(comm, path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh_);
  }
  MPI_File get() const { return fh_; }

 private:
  MPI_File fh_ = MPI_FILE_NULL;
};

/// MPI's text for an error code (MPI-IO returns codes: files use MPI_ERRORS_RETURN).
std::string mpi_error_text(int code);

/// True when the file starts with the gzip magic bytes 1f 8b. Local.
bool is_gzip(const std::string& path);

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

/// Runs `body` on rank 0 of comm only and raises its LocalFailure on every rank (attempt, then
/// SSDR_CHECK_COLLECTIVE): the readers' "rank 0 validates the file, every rank agrees" step.
/// Whatever `body` computes stays on rank 0; the caller broadcasts it. Collective.
/// \throws ssdr::Error (collectively) with body's message.
template <class F>
void attempt_on_root(MPI_Comm comm, F&& body) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string message;
  bool ok = true;
  if (rank == 0) ok = attempt(std::forward<F>(body), message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
}

// ---------------------------------------------------------------------------------------
// Reading files
// ---------------------------------------------------------------------------------------

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

/// The longest CSV record that continues past a line break inside quotes: longer, it is a
/// stray or unclosed quote, refused before the rest of the file is read into one record.
inline constexpr size_t kMaxQuotedRecordBytes = size_t{64} << 20;

/// Splits a (possibly gzip-compressed) text file into lines, without the line terminator
/// ("\n" or "\r\n"; a UTF-8 byte order mark removed from line 1). Lines may be arbitrarily
/// long. With `records` (CSV/TSV), a line break inside double quotes does not end a line: a
/// record of RFC 4180 text spanning several lines comes whole, its inner line breaks kept.
class LineReader {
 public:
  explicit LineReader(const std::string& path, bool records = false) : buf_(1 << 20), records_(records) {
    file_.open(path);
  }

  /// Next line (record) in `line` (valid until the next call); false at the end of the file.
  bool next(std::string_view& line) {
    if (!physical(line)) return false;
    first_line_ = line_no_;
    if (records_ && (std::count(line.begin(), line.end(), '"') & 1) != 0) {
      joined_.assign(line.data(), line.size());
      std::string_view more;
      int parity = 1;
      while (parity != 0 && physical(more)) {
        joined_.push_back('\n');
        joined_.append(more.data(), more.size());
        if (joined_.size() > kMaxQuotedRecordBytes)
          fail(file_.path() + ":" + std::to_string(first_line_) + ": a quoted field runs on for more than " +
               std::to_string(kMaxQuotedRecordBytes >> 20) + " MiB (to line " + std::to_string(line_no_) +
               "); expected its closing double quote (a stray or unclosed quote?)");
        parity ^= static_cast<int>(std::count(more.begin(), more.end(), '"') & 1);
      }
      line = joined_;  // a quote never closed: the record runs to the end, and its parse says so
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (first_line_ == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // UTF-8 BOM
    return true;
  }
  /// The 1-based line number of the last line read (of a record: its last line).
  int64_t line_no() const { return line_no_; }
  /// The 1-based line number where the last line (record) returned by next() starts.
  int64_t first_line() const { return first_line_; }

 private:
  /// The next physical line, without its '\n' (a '\r' before it kept).
  bool physical(std::string_view& line) {
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
            line = std::string_view(start, len);
          } else {
            carry_.append(start, len);
            line = carry_;
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
    line = carry_;
    return true;
  }
  GzFile file_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  bool records_ = false;
  std::string carry_, joined_;
  int64_t line_no_ = 0, first_line_ = 0;
};

// ---------------------------------------------------------------------------------------
// Tokens (inline: called for every value of a file)
// ---------------------------------------------------------------------------------------

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline bool is_blank(std::string_view s) { return trim(s).empty(); }

/// Shortens a token for an error message.
inline std::string shown(std::string_view tok) {
  if (tok.size() > 40) return std::string(tok.substr(0, 37)) + "...";
  return std::string(tok);
}

/// Where a token came from, for messages: "file:line".
struct Where {
  const std::string* path;
  int64_t line;
  std::string str() const { return *path + ":" + std::to_string(line); }
};

/// Parses one finite double within ±kMaxAbsValue (surrounding blanks and a leading '+'
/// allowed). `what` and `pos` describe the position for the message ("column 4", "feature 12").
inline double parse_value(std::string_view tok, const Where& at, const char* what, int64_t pos) {
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
  if (std::fabs(v) > kMaxAbsValue) fail(at.str() + ": value in " + what + " " + std::to_string(pos) + " = " + value_problem(v));
  return v;
}

/// Whether `tok` (blanks around it and a leading '+' allowed) is one finite number as a whole
/// ("0.25", "1e-3", "7"; not "inf", "nan" or a number out of double's range). Local.
inline bool is_finite_number(std::string_view tok) {
  std::string_view t = trim(tok);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  double v = 0.0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  return !t.empty() && res.ptr == t.data() + t.size() && res.ec == std::errc() && std::isfinite(v);
}

/// The offset of the first byte of `s` that is not valid UTF-8 (overlong forms and
/// surrogates included), or npos. Local.
size_t utf8_error(std::string_view s);  // labels.cpp

/// Parses an integer label ("3", "+3", "-2" or "3.0"); false when `t` is not one.
bool parse_integer_label(std::string_view t, int64_t& value);  // labels.cpp

/// Codes the labels of one data file as they are read, then agrees on the classes over the
/// communicator: each rank codes the label tokens of its rows with local codes (code()),
/// finish() gathers every rank's distinct labels (O(c)), sorts them as Python's classes_ and
/// gives each local code its global one (global()). Unlabeled markers code as −1.
class LabelCoder {
 public:
  explicit LabelCoder(const LabelOptions& options);
  /// The local code of a label field (−1 for an empty field or an unlabeled marker). With
  /// Type::integer a name fails, naming `at` and the field; so does a name with a NUL byte,
  /// invalid UTF-8, or a non-finite number ("inf", "nan"). Local.
  int code(std::string_view token, const Where& at);
  /// The local code of an integer label of a binary file (−1 when its decimal text is an
  /// unlabeled marker). `row` (0-based sample index) is kept for messages. Local.
  int code_integer(int64_t value, int64_t row);
  /// Agrees the classes over comm: names sorted (integers by value, names byte-wise), each
  /// local code mapped to its class. `what` names the file (or "file:line" prefix source)
  /// for the messages. Collective.
  /// \throws ssdr::Error (collectively) when integers and names are mixed (naming the first
  ///   line of the rarer kind), or with Type::integer and a name.
  void finish(MPI_Comm comm, const std::string& what);
  /// The class of a local code (−1 stays −1). Valid after finish().
  int global(int local) const {
    if (local >= static_cast<int>(remap_.size())) fail("a label appeared that the first pass did not see (file changed while reading?)");
    return local < 0 ? -1 : remap_[static_cast<size_t>(local)];
  }
  /// Maps local codes to classes in place. Valid after finish().
  void to_global(std::vector<int>& labels) const {
    for (int& v : labels) v = global(v);
  }
  const std::vector<std::string>& names() const { return names_; }
  bool integers() const { return integers_; }

 private:
  struct Key {
    bool integer = false;
    int64_t value = 0;
    std::string text;
  };
  int add(Key key);
  LabelOptions options_;
  std::vector<int64_t> integer_markers_;
  std::unordered_map<int64_t, int> by_value_;
  std::unordered_map<std::string, int> by_text_;
  std::vector<Key> keys_;
  // The first line (or row) of an integer and of a name, for the mixed-labels message.
  int64_t first_integer_ = -1, first_name_ = -1, integer_rows_ = 0, name_rows_ = 0;
  std::string first_integer_token_, first_name_token_;
  bool rows_are_lines_ = true;
  // Rows each unlabeled marker made unlabeled (the last entry: empty fields), for the note.
  std::vector<int64_t> marker_rows_;
  std::vector<int> remap_;
  std::vector<std::string> names_;
  bool integers_ = true;
};

// ---------------------------------------------------------------------------------------
// Readers
// ---------------------------------------------------------------------------------------

/// How the fields of a CSV/TSV line are laid out, decided from the first non-blank line and
/// the LabelOptions (csv_layout).
struct CsvLayout {
  int64_t fields = 0;        ///< fields per line
  int64_t label_column = 0;  ///< 0-based; −1: no label column (--no-labels)
  int64_t id_column = -1;    ///< 0-based column of row ids (--id-column), −1: none
  int64_t header_line = 0;   ///< the 1-based line number of the header (skipped); 0: none
  char delimiter = ',';
  /// The label column is column 1 because no --label-column was given (said in messages).
  bool label_default = false;
  /// id_column is a header's unnamed first column (R's and pandas' row names), not --id-column.
  bool row_names = false;
  /// The number of values d.
  int64_t values() const { return fields - (label_column >= 0 ? 1 : 0) - (id_column >= 0 ? 1 : 0); }
};

/// Splits one CSV/TSV record (RFC 4180) into its fields: a field may be quoted, and a quoted
/// field may hold the delimiter, line breaks and doubled quotes ("" is one quote); blanks
/// around a quoted field are dropped. `out` receives views into `rec` or, for a field with
/// doubled quotes, into `scratch` (valid until the next call with the same scratch). Local;
/// fails naming `at` and the field: a quote that is never closed, text after a closing quote,
/// a quote inside an unquoted field.
void split_record(std::string_view rec, char delimiter, const Where& at, std::vector<std::string_view>& out,
                  std::string& scratch);  // csv_reader.cpp

/// Finds the '\n' that ends a CSV record in text[from, to): the first one outside double
/// quotes, `parity` being the quote parity at `from` (0: outside, 1: inside a quoted field),
/// updated over the bytes scanned. Sets `nl` to its offset and returns true; returns false
/// (parity updated over all of [from, to)) when none is found. Exact for RFC 4180 text: a
/// quote inside a quoted field comes in pairs. Local.
bool ends_record(std::string_view text, size_t from, size_t to, int& parity, size_t& nl);  // csv_reader.cpp

/// The layout of a CSV/TSV file from its first non-blank record `first` (line `at`): the
/// delimiter (a tab in a .tsv file or when the record has more tabs than commas outside
/// quotes, else a comma), whether it is a
/// header, the label and id columns. A column spec "#k" is column number k; a plain number k
/// is the header's column named k when the header has one, else column number k; any other
/// spec is a header name. Local; fails naming the file, line and option (a label column not
/// in the header, a header-less file with a named label column, duplicate header names, fewer
/// than two fields). `note`, when given, receives a line for the user when the header decision
/// was not obvious (left untouched otherwise).
CsvLayout csv_layout(std::string_view first, const Where& at, const LabelOptions& options, bool labeled,
                     std::string* note = nullptr);  // csv_reader.cpp

/// Parses one CSV line laid out as `layout`. Values go to `row` when it is not null. Returns
/// the label's local code from `coder` (−1 unlabeled, or without a label column).
int parse_csv_line(std::string_view line, const CsvLayout& layout, const Where& at, double* row,
                   LabelCoder& coder, std::string* id = nullptr);  // csv_reader.cpp

/// Parses one LIBSVM line. Returns the label's local code from `coder` (−1: unlabeled, or
/// no coder given); `max_index` is raised to the largest index.
/// When `row` is given (width d), the values are stored at index-1 (indices > d fail).
/// When `cols` and `vals` are given, the non-zero values are appended with their 0-based
/// column (indices > d fail). `nnz`, when given, is raised by the count of non-zero values.
int parse_libsvm_line(std::string_view line, const Where& at, int64_t& max_index, double* row, int64_t d,
                      LabelCoder* coder, std::vector<int32_t>* cols = nullptr, std::vector<double>* vals = nullptr,
                      int64_t* nnz = nullptr);  // libsvm_reader.cpp

/// CSV or LIBSVM: a plain file by byte ranges, a gzip stream through rank 0
/// (text_range_reader.cpp). `labeled` false (CSV only): no label column, the data set has
/// no labels (classes 0). Collective over `comm`.
/// `sparse` (LIBSVM only): keep the rows in CSR form (Dataset::Xs) as ReadOptions::sparse
/// says; a gzip stream with Sparsity::sparse is refused.
/// `label`: how labels are read (LabelOptions).
Dataset read_text(const std::string& path, Format format, MPI_Comm comm, bool labeled = true,
                  Sparsity sparse = Sparsity::dense, const LabelOptions& label = {});

/// CSV or LIBSVM streamed through rank 0 (text_reader.cpp; gzip files). Collective.
Dataset read_text_streamed(const std::string& path, Format format, MPI_Comm comm, bool labeled = true,
                           const LabelOptions& label = {});

/// A plain CSV or LIBSVM file, each rank reading its own byte range with MPI-IO
/// (text_range_reader.cpp). Collective over `comm`.
Dataset read_text_ranges(const std::string& path, Format format, MPI_Comm comm, bool labeled = true,
                         Sparsity sparse = Sparsity::dense, const LabelOptions& label = {});

/// Codes integer labels read from a binary file (NPY, HDF5, IDX; this rank's rows) with
/// `label`'s markers and agrees the classes over comm: ds.labels, ds.classes,
/// ds.class_names set. Collective. \throws ssdr::Error (collectively) as LabelCoder::finish.
void code_integer_labels(Dataset& ds, const std::vector<int64_t>& raw, const LabelOptions& label,
                         const std::string& what, MPI_Comm comm);  // labels.cpp

/// Sets ds.class_names, ds.classes and ds.integer_labels from a finished coder (no classes
/// when it coded nothing). Local.
void set_class_names(Dataset& ds, const LabelCoder& coder);  // labels.cpp

/// Sets ds.labels (this rank's codes mapped to classes), ds.classes, ds.class_names and
/// ds.integer_labels from a finished coder. Local.
void set_classes(Dataset& ds, const LabelCoder& coder, std::vector<int> local_codes);  // labels.cpp

/// NPY (npy_reader.cpp): X an n×d C-order array of any real or integer type, labels from
/// `labels_path` (a 1-D integer array of n) when not empty. Collective over `comm`.
Dataset read_npy(const std::string& path, const std::string& labels_path, bool labels_required, MPI_Comm comm,
                 bool native_types = false, const LabelOptions& label = {});

/// HDF5 (hdf5_reader.cpp): datasets `data_name` (n×d, any numeric type) and `labels_name`
/// (n integers), each rank reading its hyperslab collectively. Collective over `comm`.
Dataset read_hdf5(const std::string& path, const std::string& data_name, const std::string& labels_name,
                  bool labels_required, MPI_Comm comm, bool native_types = false, const LabelOptions& label = {});

/// IDX (idx_reader.cpp). Collective over `comm`.
Dataset read_idx(const std::string& path, MPI_Comm comm, bool native_types = false, const LabelOptions& label = {});

}  // namespace ssdr::io::detail
