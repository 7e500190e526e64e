// NPY (NumPy's array file): rank 0 reads the header (format versions 1.0, 2.0 and 3.0), then
// every rank reads its own rows at its byte offset with collective MPI-IO and converts them
// to double. Any little- or big-endian real or integer type; C order only.
#include <functional>

#include "npy_internal.hpp"
#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"

namespace ssdr::io::detail {

namespace {

/// The value of key `key` in the header dict (the text after "'key':"), trimmed.
std::string dict_value(const std::string& dict, const std::string& key, const std::string& path) {
  const std::string k = "'" + key + "'";
  size_t p = dict.find(k);
  if (p == std::string::npos) fail(path + ": NPY header has no '" + key + "' entry");
  p = dict.find(':', p + k.size());
  if (p == std::string::npos) fail(path + ": malformed NPY header (no ':' after '" + key + "')");
  ++p;
  while (p < dict.size() && dict[p] == ' ') ++p;
  size_t q = p;
  if (q < dict.size() && (dict[q] == '(' || dict[q] == '\'')) {
    const char close = dict[q] == '(' ? ')' : '\'';
    q = dict.find(close, q + 1);
    if (q == std::string::npos) fail(path + ": malformed NPY header (unterminated '" + key + "')");
    ++q;
  } else {
    while (q < dict.size() && dict[q] != ',' && dict[q] != '}') ++q;
  }
  return dict.substr(p, q - p);
}

}  // namespace

NpyHeader read_npy_header(const std::string& path) {
  GzFile f;  // zlib reads plain files; only the header is read this way
  f.open(path);
  unsigned char pre[12];
  if (f.read(pre, 10) < 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0)
    fail(path + ": not an NPY file (expected the magic string \\x93NUMPY)");
  if (is_gzip(path)) fail(path + ": a gzip-compressed NPY file cannot be read in parallel; decompress it first");
  const int major = pre[6];
  int64_t header_len = 0, prefix = 10;
  if (major == 1) {
    header_len = pre[8] | (pre[9] << 8);
  } else if (major == 2 || major == 3) {
    if (f.read(pre + 10, 2) < 2) fail(path + ": truncated NPY header");
    header_len = static_cast<int64_t>(pre[8]) | (static_cast<int64_t>(pre[9]) << 8) |
                 (static_cast<int64_t>(pre[10]) << 16) | (static_cast<int64_t>(pre[11]) << 24);
    prefix = 12;
  } else {
    fail(path + ": NPY format version " + std::to_string(major) + " is not supported (expected 1, 2 or 3)");
  }
  if (header_len > (1 << 20)) fail(path + ": NPY header of " + std::to_string(header_len) + " bytes (at most 1 MiB)");
  std::string dict(static_cast<size_t>(header_len), '\0');
  if (f.read(dict.data(), dict.size()) < dict.size()) fail(path + ": truncated NPY header");

  NpyHeader h;
  h.data_offset = prefix + header_len;
  if (dict.find("'descr': [") != std::string::npos)
    fail(path + ": a structured NPY dtype is not supported (expected a real or integer type: f4, f8, i1..i8, u1..u8)");
  const std::string descr = dict_value(dict, "descr", path);
  // '<f8', '|u1', '>i4', ...: byte order, kind, size.
  if (descr.size() < 5 || descr.front() != '\'' || descr.back() != '\'')
    fail(path + ": NPY dtype " + descr + " is not a simple numeric type (expected e.g. '<f8', '<f4', '|u1')");
  const char order = descr[1], kind = descr[2];
  int item = 0;
  const std::string size_text = descr.substr(3, descr.size() - 4);
  const auto res = std::from_chars(size_text.data(), size_text.data() + size_text.size(), item);
  // Strings (labels only): 'S' n bytes, 'U' n UTF-32 code points.
  const bool text = kind == 'U' || kind == 'S';
  const bool known_size = res.ec == std::errc() && res.ptr == size_text.data() + size_text.size() &&
                          (kind == 'f' ? (item == 4 || item == 8)
                           : text      ? (item >= 1 && item <= 4096)
                                       : (item == 1 || item == 2 || item == 4 || item == 8));
  if (kind == 'U') item *= 4;
  if ((order != '<' && order != '>' && order != '|' && order != '=') ||
      (kind != 'f' && kind != 'i' && kind != 'u' && !text) || !known_size)
    fail(path + ": NPY dtype " + descr +
         " is not supported (expected a real or integer type: f4, f8, i1..i8, u1..u8)");
  h.kind = kind;
  h.item_size = item;
  h.swap = item > 1 && order == '>' && kind != 'S';
  if (dict_value(dict, "fortran_order", path) != "False")
    fail(path + ": a Fortran-order NPY array is not supported (save it with numpy.ascontiguousarray)");
  const std::string shape = dict_value(dict, "shape", path);  // "(n, d)" or "(n,)"
  std::string inner = shape.size() >= 2 ? shape.substr(1, shape.size() - 2) : "";
  size_t pos = 0;
  while (pos < inner.size()) {
    while (pos < inner.size() && (inner[pos] == ' ' || inner[pos] == ',')) ++pos;
    if (pos >= inner.size()) break;
    int64_t v = 0;
    const auto r = std::from_chars(inner.data() + pos, inner.data() + inner.size(), v);
    if (r.ec != std::errc() || v < 0) fail(path + ": malformed NPY shape " + shape);
    h.shape.push_back(v);
    pos = static_cast<size_t>(r.ptr - inner.data());
  }
  const int64_t size = file_size(path);
  __int128 need = h.data_offset;
  __int128 count = 1;
  for (int64_t s : h.shape) {
    count *= s;
    if (count > (static_cast<__int128>(1) << 62)) fail(path + ": NPY shape " + shape + " is too large");
  }
  need += count * h.item_size;
  if (size >= 0 && need > size)
    fail(path + ": truncated NPY file (" + std::to_string(size) + " bytes; the header's shape " + shape + " needs " +
         std::to_string(static_cast<long long>(need)) + ")");
  return h;
}

void to_double(const unsigned char* src, int64_t count, const NpyHeader& h, double* dst) {
  for (int64_t k = 0; k < count; ++k) {
    unsigned char b[8];
    std::memcpy(b, src + k * h.item_size, static_cast<size_t>(h.item_size));
    if (h.swap) std::reverse(b, b + h.item_size);
    double v = 0.0;
    switch (h.kind) {
      case 'f':
        if (h.item_size == 4) {
          float x;
          std::memcpy(&x, b, 4);
          v = x;
        } else {
          std::memcpy(&v, b, 8);
        }
        break;
      case 'i':
        if (h.item_size == 1) { int8_t x; std::memcpy(&x, b, 1); v = x; }
        else if (h.item_size == 2) { int16_t x; std::memcpy(&x, b, 2); v = x; }
        else if (h.item_size == 4) { int32_t x; std::memcpy(&x, b, 4); v = x; }
        else { int64_t x; std::memcpy(&x, b, 8); v = static_cast<double>(x); }
        break;
      default:
        if (h.item_size == 1) v = b[0];
        else if (h.item_size == 2) { uint16_t x; std::memcpy(&x, b, 2); v = x; }
        else if (h.item_size == 4) { uint32_t x; std::memcpy(&x, b, 4); v = x; }
        else { uint64_t x; std::memcpy(&x, b, 8); v = static_cast<double>(x); }
    }
    dst[k] = v;
  }
}

namespace {

/// Reads `count` items at item index `first` of the array body with collective MPI-IO (every
/// rank of the file's communicator calls it, possibly with count 0) into doubles.
void read_items(MPI_File fh, const NpyHeader& h, int64_t first, int64_t count,
                const std::function<void(const unsigned char*, int64_t, int64_t)>& put, const std::string& path,
                MPI_Comm comm) {
  // Chunks of at most 2^27 items, the same number of rounds on every rank (collective reads).
  const int64_t chunk = int64_t{1} << 27;
  int64_t rounds = (count + chunk - 1) / chunk, max_rounds = 0;
  MPI_Allreduce(&rounds, &max_rounds, 1, MPI_INT64_T, MPI_MAX, comm);
  std::vector<unsigned char> raw;
  std::string message;
  bool ok = true;
  for (int64_t k = 0; k < max_rounds; ++k) {
    const int64_t a = std::min(count, k * chunk), b = std::min(count, a + chunk);
    raw.resize(static_cast<size_t>((b - a) * h.item_size));
    MPI_Status st;
    const int rc = MPI_File_read_at_all(fh, static_cast<MPI_Offset>(h.data_offset + (first + a) * h.item_size),
                                        raw.data(), static_cast<int>(raw.size()), MPI_BYTE, &st);
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (ok && rc != MPI_SUCCESS) {
      ok = false;
      message = "cannot read '" + path + "': " + mpi_error_text(rc);
    } else if (ok && got != static_cast<int>(raw.size())) {
      ok = false;
      message = path + ": file ended early (changed while reading?)";
    }
    if (ok) put(raw.data(), a, b - a);
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
}

/// Rank 0's header, as far as reading the elements needs it, on every rank. Collective.
void bcast_header(NpyHeader& h, MPI_Comm comm) {
  MPI_Bcast(&h.data_offset, 1, MPI_INT64_T, 0, comm);
  MPI_Bcast(&h.item_size, 1, MPI_INT, 0, comm);
  MPI_Bcast(&h.kind, 1, MPI_CHAR, 0, comm);
  int swap = h.swap ? 1 : 0;
  MPI_Bcast(&swap, 1, MPI_INT, 0, comm);
  h.swap = swap != 0;
}

/// Opens `path` collectively and reads `count` elements from element `first` (read_items).
void read_array(const std::string& path, const NpyHeader& h, int64_t first, int64_t count, double* out, MPI_Comm comm) {
  MpiFile fh;
  const int rc = fh.open(comm, path);
  SSDR_CHECK_COLLECTIVE(comm, rc == MPI_SUCCESS, "cannot open '" + path + "': " + mpi_error_text(rc));
  read_items(fh.get(), h, first, count,
             [&](const unsigned char* raw, int64_t a, int64_t n) { to_double(raw, n, h, out + a); }, path, comm);
}

/// The items as they are stored, in native byte order (uint8 and float32 rows kept in their
/// own type). Collective (MPI-IO).
void read_raw_items(const std::string& path, const NpyHeader& h, int64_t first, int64_t count, unsigned char* out,
                    MPI_Comm comm) {
  MpiFile fh;
  const int rc = fh.open(comm, path);
  SSDR_CHECK_COLLECTIVE(comm, rc == MPI_SUCCESS, "cannot open '" + path + "': " + mpi_error_text(rc));
  const int64_t size = h.item_size;
  read_items(fh.get(), h, first, count,
             [&](const unsigned char* raw, int64_t a, int64_t n) {
               std::memcpy(out + a * size, raw, static_cast<size_t>(n * size));
               if (h.swap && size > 1)
                 for (int64_t k = 0; k < n; ++k) std::reverse(out + (a + k) * size, out + (a + k + 1) * size);
             },
             path, comm);
}

}  // namespace

namespace {

/// Appends code point `c` to `out` in UTF-8.
void append_utf8(uint32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

std::string utf8_problem(const std::string& text) {
  const size_t at = utf8_error(text);  // the one validator of labels (labels.cpp)
  if (at == std::string_view::npos) return {};
  char where[48];
  std::snprintf(where, sizeof where, "byte 0x%02x at offset %zu", static_cast<unsigned char>(text[at]), at);
  return where;
}

void read_npy_labels(const std::string& path, Dataset& ds, const LabelOptions& label, MPI_Comm comm) {
  const int64_t n = ds.X.n_global, row_start = ds.X.row_start, n_local = ds.X.n_local;
  NpyHeader h;
  attempt_on_root(comm, [&] {
    require_regular(path);
    h = read_npy_header(path);
    const bool column = h.shape.size() == 2 && h.shape[1] == 1;
    if (h.shape.size() != 1 && !column)
      fail(path + ": labels must be a 1-D array of " + std::to_string(n) + " labels (integers or strings)");
    if (h.shape[0] != n)
      fail(path + ": " + std::to_string(h.shape[0]) + " labels for " + std::to_string(n) + " samples");
  });
  bcast_header(h, comm);
  // Each rank reads its own rows' labels: nothing of size n on any rank.
  LabelCoder coder(label);
  std::vector<int> codes(static_cast<size_t>(n_local), -1);
  std::string message;
  bool ok = true;
  if (h.kind == 'U' || h.kind == 'S') {
    // Names: each element a fixed-width string (NUL-padded), coded as a CSV field is.
    std::vector<unsigned char> raw(static_cast<size_t>(n_local * h.item_size));
    read_raw_items(path, h, row_start, n_local, raw.data(), comm);
    ok = attempt(
        [&] {
          std::string text;
          for (int64_t i = 0; i < n_local; ++i) {
            const unsigned char* e = raw.data() + i * h.item_size;
            text.clear();
            if (h.kind == 'S') {
              for (int k = 0; k < h.item_size && e[k] != 0; ++k) text.push_back(static_cast<char>(e[k]));
              const std::string bad = utf8_problem(text);
              if (!bad.empty())
                fail(path + ": label " + std::to_string(row_start + i + 1) + " is not valid UTF-8 (" + bad +
                     "); expected UTF-8 text");
            } else {
              for (int k = 0; k < h.item_size; k += 4) {
                const uint32_t c = h.swap ? (uint32_t{e[k]} << 24 | uint32_t{e[k + 1]} << 16 | uint32_t{e[k + 2]} << 8 | e[k + 3])
                                          : (uint32_t{e[k + 3]} << 24 | uint32_t{e[k + 2]} << 16 | uint32_t{e[k + 1]} << 8 | e[k]);
                if (c == 0) break;
                if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
                  fail(path + ": label " + std::to_string(row_start + i + 1) + " is not valid UTF-32 (code point " +
                       std::to_string(c) + "); expected Unicode text");
                append_utf8(c, text);
              }
            }
            // "line" = the sample's 1-based position, for messages ("labels.npy:label 7").
            const std::string where_path = path + ": label";
            codes[static_cast<size_t>(i)] = coder.code(text, Where{&where_path, row_start + i + 1});
          }
        },
        message);
  } else {
    std::vector<double> v(static_cast<size_t>(n_local));
    read_array(path, h, row_start, n_local, v.data(), comm);
    int64_t bad = -1;
    ok = attempt(
        [&] {
          for (int64_t i = 0; i < n_local && bad < 0; ++i) {
            const double x = v[static_cast<size_t>(i)];
            // NaN: unlabeled (pandas' missing value in a float array); else an integer.
            if (h.kind == 'f' && std::isnan(x)) continue;
            if (!(std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.0e15)) {
              bad = i;
              char num[40];
              std::snprintf(num, sizeof num, "%.17g", x);
              fail(path + ": label " + num + " of sample " + std::to_string(row_start + i) +
                   " is not an integer; expected integer classes, -1 or NaN for unlabeled, or strings");
            }
            codes[static_cast<size_t>(i)] = coder.code_integer(static_cast<int64_t>(x), row_start + i);
          }
        },
        message);
  }
  // The lowest failing rank's message: the first bad sample of the file.
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  coder.finish(comm, path);
  set_classes(ds, coder, std::move(codes));
}

Dataset read_npy(const std::string& path, const std::string& labels_path, bool labels_required, MPI_Comm comm,
                 bool native_types, const LabelOptions& label) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  NpyHeader h;
  int64_t dims[2] = {0, 0};
  const int per_node = ranks_on_host(comm);
  attempt_on_root(comm, [&] {
    if (labels_required && labels_path.empty())
      fail(path + ": an NPY file holds no labels; give --labels FILE.npy (a 1-D integer array of n labels)");
    require_data_file(path);
    h = read_npy_header(path);
    if (h.kind == 'U' || h.kind == 'S')
      fail(path + ": an array of strings holds no feature values; expected a real or integer type (f4, f8, i1..i8, u1..u8)");
    if (h.shape.size() != 2)
      fail(path + ": expected a 2-D array (n samples x d features), found " + std::to_string(h.shape.size()) +
           " dimension(s)");
    dims[0] = h.shape[0];
    dims[1] = h.shape[1];
    if (dims[0] < 1 || dims[1] < 1) fail(path + ": empty array (no samples)");
    const bool small = native_types && ((h.kind == 'u' && h.item_size == 1) || (h.kind == 'f' && h.item_size == 4));
    require_dense_fits(dims[0], dims[1], size, per_node, path, small ? static_cast<size_t>(h.item_size) : 8);
  });
  MPI_Bcast(dims, 2, MPI_INT64_T, 0, comm);
  bcast_header(h, comm);
  const int64_t n = dims[0], d = dims[1];

  Dataset ds;
  ds.source = path;
  if (native_types && h.kind == 'u' && h.item_size == 1) {
    make_typed(ds, n, d, ElementType::u8, comm);
    read_raw_items(path, h, ds.rows.row_start * d, ds.rows.n_local * d, ds.rows.bytes.data(), comm);
  } else if (native_types && h.kind == 'f' && h.item_size == 4) {
    make_typed(ds, n, d, ElementType::f32, comm);
    read_raw_items(path, h, ds.rows.row_start * d, ds.rows.n_local * d, ds.rows.bytes.data(), comm);
    check_values(ds.rows, path);
  } else {
    ds.X = make_dist(comm, n, d);
    read_array(path, h, ds.X.row_start * d, ds.X.n_local * d, ds.X.v.data(), comm);
    check_values(ds.X, path);
  }
  if (!labels_path.empty()) read_npy_labels(labels_path, ds, label, comm);
  return ds;
}

}  // namespace ssdr::io::detail
