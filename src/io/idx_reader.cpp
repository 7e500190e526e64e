// IDX: every rank reads the headers, then its own rows' labels and images straight from the
// files (gzseek skips forward through compressed files): nothing of size n on any rank.
#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"

namespace ssdr::io::detail {

namespace {

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

/// Checks the labels header of `part` (magic, count = the images' count).
void check_idx_labels(const IdxPart& part) {
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
}

/// Reads the labels of the part's global rows [lo, hi) into out[0, hi − lo).
void read_idx_labels(const IdxPart& part, int64_t lo, int64_t hi, int* out) {
  GzFile f;
  f.open(part.labels);
  const int64_t first = lo - part.offset;
  std::vector<unsigned char> raw(static_cast<size_t>(hi - lo));
  if (!f.seek(8 + first) || f.read(raw.data(), raw.size()) < raw.size())
    fail("'" + part.labels + "': truncated (expected " + std::to_string(part.n) + " labels)");
  std::copy(raw.begin(), raw.end(), out);
}

}  // namespace

Dataset read_idx(const std::string& path, MPI_Comm comm, bool native_types, const LabelOptions& label) {
  std::vector<IdxPart> parts;
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
          require_dense_fits(n, d, size, per_node, "'" + p.images + "'", native_types ? 1 : 8);
          check_idx_labels(p);
        }
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);

  Dataset ds;
  ds.source = path;
  if (native_types) make_typed(ds, n, d, ElementType::u8, comm);  // the pixels as bytes
  else ds.X = make_dist(comm, n, d);
  std::vector<int> raw_labels(static_cast<size_t>(ds.X.n_local), 0);
  ok = attempt(
      [&] {
        const int64_t my_start = ds.X.row_start, my_end = ds.X.row_start + ds.X.n_local;
        for (const IdxPart& p : parts) {
          const int64_t lo = std::max(my_start, p.offset), hi = std::min(my_end, p.offset + p.n);
          if (lo >= hi) continue;
          read_idx_labels(p, lo, hi, raw_labels.data() + (lo - my_start));
        }
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  // The label bytes as integer classes, agreed over the ranks (Fashion-MNIST: 0..9 as they are).
  code_integer_labels(ds, std::vector<int64_t>(raw_labels.begin(), raw_labels.end()), label,
                      parts.front().labels, comm);

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
            if (native_types) {
              std::copy(buf.begin(), buf.end(), ds.rows.bytes.begin() + (i - my_start) * d);
            } else {
              double* dst = ds.X.row(i - my_start);
              for (size_t k = 0; k < buf.size(); ++k) dst[k] = static_cast<double>(buf[k]);
            }
          }
        }
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  return ds;
}

}  // namespace ssdr::io::detail
