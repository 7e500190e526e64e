// Model files (magic + version + Boost binary archive + row section): writing, reading and
// the older format versions. The projection of samples is projector.cpp's.
//
// File layout (version 6): the 10 bytes of kMagic, the format version as a 4-byte
// little-endian integer, the length H of the archive (8 bytes LE), a
// boost::archive::binary_oarchive holding the replicated part of the Model (method … basis,
// W, the kernel map — for an exact map only its sizes n, d', r —, the normalization of W's
// columns, the labeled samples), the FNV-1a 64 checksum (LE) of every byte before it; then
// the exact map's row section, n rows of d' + r + 1 doubles (z_i, M's row i, a_i; none
// without an exact map) at offset 30 + H + 8(d' + r + 1)·i, and its checksum
// Σ_i FNV-1a 64(i as 8 LE bytes ‖ row i) mod 2^64 (LE), a sum any rank count computes alike.
// The file is exactly 30 + H + 8(d' + r + 1)n + 8 bytes long.
//
// Older versions: magic, version, then the archive up to the end of the file: the version-1
// fields (method … basis, W), from version 2 on the kernel feature map (type, degree, σ²,
// exact flag, Zt, M, a — for an exact map all n samples), from version 3 on the normalization
// of W's columns (int32: 0 unit, 1 metric), from version 5 on the labeled samples
// (labeled_embedding as a Dense m × n_labeled, labeled_labels as int32 with a length); from
// version 4 on, the last 8 bytes are the FNV-1a 64 checksum (little-endian) of everything
// before them. A version-1 file is read as a model without a kernel; version-1 and -2 files
// are read with normalization metric (what produced them); files before version 5 have no
// labeled samples; an exact map read from a file before version 6 is distributed on load.
#include "ssdr/model/model.hpp"

#include "model_internal.hpp"

#include <sys/stat.h>

#include <boost/archive/archive_exception.hpp>
#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>

#include <cmath>
#include <boost/serialization/array_wrapper.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <streambuf>
#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/io/output.hpp"

namespace {

/// Upper bound on the element count of any vector or string being loaded (the archive's
/// size in bytes), so a corrupt length field fails instead of allocating gigabytes.
thread_local uint64_t g_load_limit = std::numeric_limits<uint64_t>::max();

struct CorruptLength {};

/// Format version of the archive being read or written (set by header_bytes/from_bytes).
thread_local uint32_t g_format_version = static_cast<uint32_t>(ssdr::model::kFormatVersion);

/// A length-prefixed contiguous container (std::vector<T> or std::string); on loading a
/// length beyond what the file can hold is corruption, not an allocation.
template <class Archive, class Container>
void serialize_contiguous(Archive& ar, Container& v) {
  uint64_t n = v.size();
  ar & n;
  if constexpr (Archive::is_loading::value) {
    if (n > g_load_limit) throw CorruptLength{};
    v.resize(static_cast<size_t>(n));
  }
  if (n > 0) ar & boost::serialization::make_array(v.data(), static_cast<size_t>(n));
}

}  // namespace

namespace boost::serialization {

template <class Archive>
void serialize(Archive& ar, ssdr::Dense& D, const unsigned int /*version*/) {
  ar & D.rows & D.cols;
  serialize_contiguous(ar, D.v);
  if constexpr (Archive::is_loading::value) {
    if (D.rows < 0 || D.cols < 0 || static_cast<uint64_t>(D.rows) * static_cast<uint64_t>(D.cols) != D.v.size())
      throw CorruptLength{};
  }
}

template <class Archive>
void serialize(Archive& ar, ssdr::kernels::FeatureMap& f, const unsigned int /*version*/) {
  int32_t type = static_cast<int32_t>(f.type);
  ar & type;
  if constexpr (Archive::is_loading::value) {
    if (type < 0 || type > static_cast<int32_t>(ssdr::kernels::KernelType::rbf)) throw CorruptLength{};
    f.type = static_cast<ssdr::kernels::KernelType>(type);
  }
  uint8_t exact = f.exact ? 1 : 0;
  ar & f.degree & f.sigma2 & exact;
  f.exact = exact != 0;
  if (g_format_version >= 6 && f.exact) {
    // The rows (Zt's columns, M's rows, a) are in the file's row section.
    int64_t n = f.z_global, d = f.Zt.rows, r = f.M.cols;
    ar & n & d & r;
    if constexpr (Archive::is_loading::value) {
      if (n < 0 || d < 0 || r < 0 || r > n) throw CorruptLength{};
      f.Zt = ssdr::Dense(d, 0);
      f.M = ssdr::Dense(0, r);
      f.a.clear();
      f.z_global = n;
      f.z_start = 0;
      f.comm = MPI_COMM_SELF;
    }
    return;
  }
  ar & f.Zt & f.M;
  serialize_contiguous(ar, f.a);
  if constexpr (Archive::is_loading::value) {
    f.z_global = f.Zt.cols;
    f.z_start = 0;
    f.comm = MPI_COMM_SELF;
  }
}

template <class Archive>
void serialize(Archive& ar, ssdr::model::Model& m, const unsigned int /*version*/) {
  serialize_contiguous(ar, m.method);
  serialize_contiguous(ar, m.ssdr_version);
  serialize_contiguous(ar, m.parameters_json);
  ar & m.d_input & m.classes;
  serialize_contiguous(ar, m.shift);
  serialize_contiguous(ar, m.scale);
  serialize_contiguous(ar, m.mean);
  ar & m.basis & m.W;
  if (g_format_version >= 2) ar & m.kernel;
  if (g_format_version >= 3) {
    int32_t normalization = static_cast<int32_t>(m.normalization);
    ar & normalization;
    if constexpr (Archive::is_loading::value) {
      if (normalization < 0 || normalization > static_cast<int32_t>(ssdr::Normalization::metric))
        throw CorruptLength{};
      m.normalization = static_cast<ssdr::Normalization>(normalization);
    }
  } else if constexpr (Archive::is_loading::value) {
    m.normalization = ssdr::Normalization::metric;
  }
  if (g_format_version >= 5) {
    ar & m.labeled_embedding;
    std::vector<int32_t> labels(m.labeled_labels.begin(), m.labeled_labels.end());
    serialize_contiguous(ar, labels);
    if constexpr (Archive::is_loading::value) m.labeled_labels.assign(labels.begin(), labels.end());
  }
}

}  // namespace boost::serialization

namespace ssdr::model {

namespace {

constexpr size_t kMagicLen = 10;  // std::strlen(kMagic)

std::string corrupt(const std::string& path) { return "'" + path + "': truncated or corrupt model file"; }

/// Name of the first non-finite entry among the model's numbers, or "".
std::string non_finite(const Model& m) {
  auto bad = [](const std::vector<double>& v) {
    for (double x : v)
      if (!std::isfinite(x)) return true;
    return false;
  };
  const std::pair<const char*, const std::vector<double>*> all[] = {
      {"shift", &m.shift}, {"scale", &m.scale}, {"mean", &m.mean}, {"PCA basis", &m.basis.v}, {"W", &m.W.v},
      {"kernel landmarks", &m.kernel.Zt.v}, {"kernel map", &m.kernel.M.v}, {"kernel centering", &m.kernel.a},
      {"labeled embeddings", &m.labeled_embedding.v}};
  for (const auto& [name, v] : all)
    if (bad(*v)) return name;
  return "";
}

void put_u64(std::string& out, uint64_t v) {
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= uint64_t{static_cast<unsigned char>(p[k])} << (8 * k);
  return v;
}

constexpr size_t kHeadLen = 10 + 4 + 8;  // magic, version, archive length

/// The replicated part of the file: magic, version, H, the archive, its checksum (30 + H
/// bytes).
std::string header_bytes(const Model& m) {
  std::ostringstream as(std::ios::binary);
  g_format_version = static_cast<uint32_t>(kFormatVersion);
  {
    boost::archive::binary_oarchive ar(as);
    Model copy = m;  // serialize() takes a non-const reference
    ar << copy;
  }
  const std::string archive = as.str();
  std::string bytes(kMagic);
  const uint32_t v = static_cast<uint32_t>(kFormatVersion);
  for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  put_u64(bytes, archive.size());
  bytes += archive;
  put_u64(bytes, fnv1a64(bytes.data(), bytes.size()));
  return bytes;
}

/// Doubles per row of the row section (d' + r + 1 for an exact map, else 0) and its rows.
int64_t row_width(const Model& m) {
  return !m.kernel.empty() && m.kernel.exact ? m.kernel.input_dim() + m.kernel.dim() + 1 : 0;
}
int64_t section_rows(const Model& m) { return row_width(m) > 0 ? m.kernel.z_global : 0; }

/// FNV-1a 64 of the global row index (8 LE bytes) followed by the row's w doubles.
uint64_t row_hash(int64_t i, const double* row, int64_t w) {
  std::string idx;
  put_u64(idx, static_cast<uint64_t>(i));
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const char* p, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      h ^= static_cast<unsigned char>(p[k]);
      h *= 1099511628211ull;
    }
  };
  mix(idx.data(), idx.size());
  mix(reinterpret_cast<const char*>(row), static_cast<size_t>(w) * sizeof(double));
  return h;
}

/// The local rows [j0, j0 + b) of the exact map (local indices) as section rows.
void pack_rows(const kernels::FeatureMap& f, int64_t j0, int64_t b, std::vector<double>& out) {
  const int64_t d = f.input_dim(), r = f.dim(), w = d + r + 1;
  out.resize(static_cast<size_t>(b * w));
  for (int64_t j = 0; j < b; ++j) {
    double* row = out.data() + j * w;
    std::copy_n(f.Zt.col(j0 + j), d, row);
    for (int64_t k = 0; k < r; ++k) row[d + k] = f.M(j0 + j, k);
    row[d + r] = f.a[static_cast<size_t>(j0 + j)];
  }
}

/// Why the labeled samples do not fit the model (m rows, one label per column, labels in
/// 0..classes−1), or "".
std::string labeled_inconsistency(const Model& m) {
  const Dense& L = m.labeled_embedding;
  const int64_t l = static_cast<int64_t>(m.labeled_labels.size());
  if (L.cols != l)
    return "the labeled embeddings have " + std::to_string(L.cols) + " samples but " + std::to_string(l) + " labels";
  if (l > 0 && L.rows != m.W.cols)
    return "the labeled embeddings have " + std::to_string(L.rows) + " dimensions, W has " + std::to_string(m.W.cols) +
           " columns";
  for (int label : m.labeled_labels)
    if (label < 0 || label >= m.classes)
      return "a labeled sample's label " + std::to_string(label) + " is not one of the " + std::to_string(m.classes) +
             " classes";
  return "";
}


}  // namespace

std::string detail::inconsistency(const Model& m) {
  const std::string d = std::to_string(m.d_input);
  if (m.d_input < 0 || m.classes < 0) return "negative d_input or classes";
  if (const std::string why = labeled_inconsistency(m); !why.empty()) return why;
  const std::pair<const char*, const std::vector<double>*> vecs[] = {
      {"shift", &m.shift}, {"scale", &m.scale}, {"mean", &m.mean}};
  for (const auto& [name, v] : vecs)
    if (!v->empty() && static_cast<int64_t>(v->size()) != m.d_input)
      return std::string(name) + " has " + std::to_string(v->size()) + " entries, d_input is " + d;
  if (m.basis.rows > 0 && m.basis.rows != m.d_input)
    return "the PCA basis has " + std::to_string(m.basis.rows) + " rows, d_input is " + d;
  if (!m.kernel.empty()) {
    const auto& k = m.kernel;
    const int64_t dp = m.basis.rows > 0 ? m.basis.cols : m.d_input;
    if (k.Zt.rows != dp)
      return "the kernel landmarks have " + std::to_string(k.Zt.rows) + " features, d' is " + std::to_string(dp);
    if (k.exact && (k.z_start < 0 || k.z_start + k.Zt.cols > k.z_global))
      return "the exact kernel map holds the samples from " + std::to_string(k.z_start) + " to " +
             std::to_string(k.z_start + k.Zt.cols) + " of " + std::to_string(k.z_global);
    if (k.M.rows != k.Zt.cols || static_cast<int64_t>(k.a.size()) != k.Zt.cols)
      return "the kernel map has " + std::to_string(k.M.rows) + " rows and " + std::to_string(k.a.size()) +
             " centering terms for " + std::to_string(k.Zt.cols) + " landmarks";
    if (k.type == kernels::KernelType::rbf && !(k.sigma2 > 0 && std::isfinite(k.sigma2)))
      return "the RBF kernel's sigma^2 is not a positive finite number";
    if (k.type == kernels::KernelType::polynomial && !(k.degree > 0 && k.degree <= kernels::kMaxPolynomialDegree))
      return "the polynomial kernel's degree is not in (0, " + std::to_string(static_cast<int>(kernels::kMaxPolynomialDegree)) + "]";
    if (m.W.rows != k.M.cols)
      return "the kernel map has " + std::to_string(k.M.cols) + " features but W has " + std::to_string(m.W.rows) +
             " rows";
    return "";
  }
  if (m.basis.rows > 0) {
    if (m.basis.cols != m.W.rows)
      return "the PCA basis has " + std::to_string(m.basis.cols) + " columns but W has " +
             std::to_string(m.W.rows) + " rows";
    return "";
  }
  if (m.W.rows != m.d_input && !(m.W.rows == 0 && m.W.cols == 0))
    return "W has " + std::to_string(m.W.rows) + " rows, d_input is " + d;
  return "";
}

namespace {

/// Parses file contents; `path` is only used in messages.
/// A read-only stream buffer over bytes owned by someone else (no copy). Local.
class BytesView : public std::streambuf {
 public:
  BytesView(const char* data, size_t size) {
    char* p = const_cast<char*>(data);  // get area only: never written through
    setg(p, p, p + size);
  }
};

Model from_bytes(const std::string& bytes, const std::string& path) {
  const size_t mlen = std::strlen(kMagic);
  if (bytes.size() < mlen || bytes.compare(0, mlen, kMagic) != 0)
    SSDR_THROW("'" + path + "' is not an ssdr model file");
  if (bytes.size() < mlen + 4) SSDR_THROW(corrupt(path));
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + mlen);
  const uint32_t version = uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) |
                           (uint32_t{p[3]} << 24);
  if (version > static_cast<uint32_t>(kFormatVersion))
    SSDR_THROW("'" + path + "': model format version " + std::to_string(version) +
               " is newer than this ssdr supports (" + std::to_string(kFormatVersion) + ")");
  if (version < 1) SSDR_THROW(corrupt(path));
  size_t payload_begin = mlen + 4, payload_end = bytes.size();
  if (version >= 6) {
    // Only the replicated part: magic, version, H, the archive, its checksum.
    if (bytes.size() < kHeadLen + 8) SSDR_THROW(corrupt(path));
    const uint64_t h = get_u64(bytes.data() + mlen + 4);
    if (h != bytes.size() - kHeadLen - 8) SSDR_THROW(corrupt(path));
    payload_begin = kHeadLen;
    payload_end = bytes.size() - 8;
    if (get_u64(bytes.data() + payload_end) != fnv1a64(bytes.data(), payload_end))
      SSDR_THROW(corrupt(path) + " (checksum mismatch: the file was changed or damaged)");
  } else if (version >= 4) {
    if (bytes.size() < mlen + 4 + 8) SSDR_THROW(corrupt(path));
    payload_end = bytes.size() - 8;
    uint64_t stored = 0;
    for (int k = 0; k < 8; ++k) stored |= uint64_t{static_cast<unsigned char>(bytes[payload_end + k])} << (8 * k);
    if (stored != fnv1a64(bytes.data(), payload_end))
      SSDR_THROW(corrupt(path) + " (checksum mismatch: the file was changed or damaged)");
  }
  Model m;
  g_load_limit = bytes.size();
  g_format_version = version;
  try {
    // The archive reads the payload in place: an istringstream of it would hold two more
    // copies of the file (the substring and the stream's own buffer), three in all beside the
    // model: 1.2 GB per rank for a d = 10⁶, d' = 50 basis.
    BytesView view(bytes.data() + payload_begin, payload_end - payload_begin);
    std::istream is(&view);
    boost::archive::binary_iarchive ar(is);
    ar >> m;
    // The archive must end where the payload ends: a version-4 file relabeled as version 3
    // (which has no checksum) keeps its 8 checksum bytes here and is refused.
    if (is.peek() != std::char_traits<char>::eof()) throw CorruptLength();
  } catch (const boost::archive::archive_exception&) {
    g_load_limit = std::numeric_limits<uint64_t>::max();
    SSDR_THROW(corrupt(path));
  } catch (const CorruptLength&) {
    g_load_limit = std::numeric_limits<uint64_t>::max();
    SSDR_THROW(corrupt(path));
  } catch (const std::exception&) {
    g_load_limit = std::numeric_limits<uint64_t>::max();
    SSDR_THROW(corrupt(path));
  }
  g_load_limit = std::numeric_limits<uint64_t>::max();
  m.format_version = static_cast<int>(version);
  const std::string why = detail::inconsistency(m);
  if (!why.empty()) SSDR_THROW(corrupt(path) + " (" + why + ")");
  const std::string nf = non_finite(m);
  if (!nf.empty()) SSDR_THROW(corrupt(path) + " (NaN or Inf in " + nf + ")");
  return m;
}

}  // namespace

namespace {

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

/// Rows of the row section per MPI-IO call (at most 128 MiB, under MPI's int counts).
int64_t io_chunk_rows(int64_t w) { return std::max<int64_t>(1, (int64_t{1} << 24) / std::max<int64_t>(w, 1)); }

/// Why `m` cannot be written, or "".
std::string unsavable(const Model& m, const std::string& path) {
  const std::string why = detail::inconsistency(m);
  if (!why.empty()) return "cannot save an inconsistent model to '" + path + "': " + why;
  const std::string nf = non_finite(m);
  if (!nf.empty()) return "cannot save a model with NaN or Inf in " + nf + " to '" + path + "'";
  return "";
}

}  // namespace

void save(const Model& m, const std::string& path) {
  const std::string why = unsavable(m, path);
  SSDR_CHECK(why.empty(), why);
  SSDR_CHECK(row_width(m) == 0 || m.kernel.Zt.cols == m.kernel.z_global,
             "cannot save '" + path + "' on one rank: the exact kernel map is distributed; use save_collective");
  save_collective(m, path, MPI_COMM_SELF);
}

void save_collective(const Model& m, const std::string& path, MPI_Comm comm) {
  const int rank = comm_rank(comm);
  std::string msg = unsavable(m, path);
  // The rows this rank writes: its share of a map distributed over comm, or all of a map
  // held whole (rank 0).
  const int64_t w = row_width(m), n = section_rows(m);
  int64_t first = 0, count = 0;
  if (msg.empty() && w > 0) {
    const kernels::FeatureMap& f = m.kernel;
    int same = MPI_UNEQUAL;
    MPI_Comm_compare(f.comm, comm, &same);
    if (f.Zt.cols == f.z_global) {
      count = rank == 0 ? n : 0;
    } else if (same == MPI_IDENT || same == MPI_CONGRUENT) {
      first = f.z_start;
      count = f.Zt.cols;
    } else {
      msg = "cannot save '" + path + "': the exact kernel map is distributed over other ranks than the ones saving it";
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, msg.empty(), msg);
  // The row section's checksum: a sum of per-row hashes, the same whoever holds which row.
  uint64_t row_sum = 0;
  std::vector<double> buf;
  const int64_t chunk = io_chunk_rows(w);
  for (int64_t j0 = 0; j0 < count; j0 += chunk) {
    const int64_t b = std::min(chunk, count - j0);
    pack_rows(m.kernel, first - m.kernel.z_start + j0, b, buf);
    for (int64_t j = 0; j < b; ++j) row_sum += row_hash(first + j0 + j, buf.data() + j * w, w);
  }
  MPI_Allreduce(MPI_IN_PLACE, &row_sum, 1, MPI_UINT64_T, MPI_SUM, comm);
  std::string trailer;
  put_u64(trailer, row_sum);

  // Rank 0: the replicated part; then, when the file system has room for the whole file, the
  // temporary file (or the device written in place).
  std::string head, temp;
  std::unique_ptr<io::AtomicFile> file;
  int in_place = 0;
  bool ok = true;
  if (rank == 0) {
    try {
      head = header_bytes(m);
    } catch (const std::exception& e) {
      ok = false;
      msg = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, msg);
  uint64_t head_len = head.size();
  MPI_Bcast(&head_len, 1, MPI_UINT64_T, 0, comm);
  const int64_t file_size = static_cast<int64_t>(head_len) + n * w * 8 + static_cast<int64_t>(trailer.size());
  io::require_free_space(path, file_size, comm);
  if (rank == 0) {
    try {
      file = std::make_unique<io::AtomicFile>(path, true);
      temp = file->temp_path();
      in_place = temp.empty() ? 1 : 0;
    } catch (const std::exception& e) {
      ok = false;
      msg = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, msg);
  MPI_Bcast(&in_place, 1, MPI_INT, 0, comm);

  if (in_place) {
    // A device or FIFO: rank 0 writes it front to back, the rows reaching it block by block.
    auto put = [&](const char* p, size_t len) {
      if (ok && std::fwrite(p, 1, len, file->get()) != len) {
        ok = false;
        msg = "cannot write '" + path + "': " + std::strerror(errno);
      }
    };
    if (rank == 0) put(head.data(), head.size());
    std::vector<double> mine;
    pack_rows(m.kernel, first - m.kernel.z_start, count, mine);  // empty without rows
    for_each_row_block(mine.data(), first, count, n, w, std::max<int64_t>(1, chunk / 64), comm,
                       [&](int64_t, int64_t rows, const double* data) {
                         if (rank == 0) put(reinterpret_cast<const char*>(data), static_cast<size_t>(rows * w) * 8);
                       });
    if (rank == 0) put(trailer.data(), trailer.size());
  } else {
    uint64_t tlen = temp.size();
    MPI_Bcast(&tlen, 1, MPI_UINT64_T, 0, comm);
    temp.resize(static_cast<size_t>(tlen));
    MPI_Bcast(temp.data(), static_cast<int>(tlen), MPI_CHAR, 0, comm);
    // Every rank registers the temporary name: a rank terminated mid-write removes it.
    io::TemporaryFileGuard guard(rank == 0 ? std::string() : temp);
    MPI_File fh = MPI_FILE_NULL;
    int rc = MPI_File_open(comm, temp.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    SSDR_CHECK_COLLECTIVE(comm, rc == MPI_SUCCESS, "cannot write '" + path + "': " + mpi_error_text(rc));
    // Every write's byte count is checked: MPI-IO may report success for a write cut short by
    // a full disk or a quota.
    auto note = [&](const std::string& problem) {
      if (!problem.empty() && ok) {
        ok = false;
        msg = problem;
      }
    };
    MPI_Status st;
    const MPI_Offset base = static_cast<MPI_Offset>(head_len);
    if (rank == 0) {
      rc = MPI_File_write_at(fh, 0, head.data(), static_cast<int>(head.size()), MPI_BYTE, &st);
      note(io::mpi_write_problem(rc, st, static_cast<int64_t>(head.size()), path));
    }
    int64_t rounds = (count + chunk - 1) / chunk;
    MPI_Allreduce(MPI_IN_PLACE, &rounds, 1, MPI_INT64_T, MPI_MAX, comm);
    for (int64_t k = 0; k < rounds; ++k) {
      const int64_t j0 = std::min(count, k * chunk), b = std::min(chunk, count - j0);
      pack_rows(m.kernel, first - m.kernel.z_start + j0, b, buf);
      rc = MPI_File_write_at_all(fh, base + static_cast<MPI_Offset>((first + j0) * w) * 8, buf.data(),
                                 static_cast<int>(b * w), MPI_DOUBLE, &st);
      note(io::mpi_write_problem(rc, st, b * w * 8, path));
    }
    if (rank == 0) {
      rc = MPI_File_write_at(fh, base + static_cast<MPI_Offset>(n * w) * 8, trailer.data(), 8, MPI_BYTE, &st);
      note(io::mpi_write_problem(rc, st, 8, path));
    }
    rc = MPI_File_sync(fh);  // collective: the rows on disk before the rename
    if (rc != MPI_SUCCESS) note("cannot write '" + path + "': " + mpi_error_text(rc));
    rc = MPI_File_close(&fh);
    if (rc != MPI_SUCCESS) note("cannot write '" + path + "': " + mpi_error_text(rc));
    // A file short of its size (a write cut short and not reported) never becomes `path`.
    if (rank == 0 && ok) note(io::size_problem(temp, file_size, path));
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, msg);  // rank 0's AtomicFile removes the temporary file
  if (rank == 0) {
    try {
      file->commit();  // closes rank 0's (empty) stream and renames the complete file
    } catch (const std::exception& e) {
      ok = false;
      msg = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, msg);
}

namespace {

void check_regular(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    SSDR_THROW("cannot read '" + path + "': not a regular file; expected a model file from ssdr fit --model");
}

/// What rank 0 reads before anyone parses: from a version-6 file its replicated part (30 + H
/// bytes), the file's size and the row checksum; from an older file (or anything that is no
/// version-6 file) the whole file. Local. \throws ssdr::Error naming the path.
struct Head {
  std::string bytes;
  uint64_t file_size = 0;
  uint64_t row_sum = 0;
};
Head read_head(const std::string& path) {
  check_regular(path);
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    SSDR_THROW("cannot open '" + path + "': " + (errno ? std::strerror(errno) : "unknown error"));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  Head h;
  auto read = [&](size_t want) {  // appends up to `want` bytes (SIZE_MAX: to the end)
    char buf[1 << 16];
    while (want > 0) {
      const size_t got = std::fread(buf, 1, std::min(want, sizeof buf), f);
      if (got == 0) break;
      h.bytes.append(buf, got);
      want -= got;
    }
    if (std::ferror(f)) SSDR_THROW("cannot read '" + path + "': " + (errno ? std::strerror(errno) : "read error"));
  };
  read(kHeadLen);
  const size_t mlen = std::strlen(kMagic);
  const bool v6 = h.bytes.size() == kHeadLen && h.bytes.compare(0, mlen, kMagic) == 0 &&
                  static_cast<unsigned char>(h.bytes[mlen]) >= 6;
  struct stat st {};
  if (::fstat(::fileno(f), &st) == 0) h.file_size = static_cast<uint64_t>(st.st_size);
  if (!v6) {
    read(SIZE_MAX);
    return h;
  }
  const uint64_t H = get_u64(h.bytes.data() + mlen + 4);
  if (H > h.file_size) SSDR_THROW(corrupt(path));
  read(static_cast<size_t>(H) + 8);
  const uint64_t end = h.file_size;
  if (end >= h.bytes.size() + 8 && std::fseek(f, static_cast<long>(end - 8), SEEK_SET) == 0) {
    char t[8];
    if (std::fread(t, 1, 8, f) == 8) h.row_sum = get_u64(t);
  }
  return h;
}

/// Reads this rank's block-layout share of the exact map's rows into m.kernel (distributed
/// over comm afterwards). Collective. \throws ssdr::Error (collective) naming the path on a
/// read failure, a row checksum mismatch or a NaN/Inf row.
void read_rows(Model& m, const std::string& path, uint64_t head_len, uint64_t row_sum, MPI_Comm comm) {
  kernels::FeatureMap& f = m.kernel;
  const int64_t w = row_width(m), n = section_rows(m), d = f.input_dim(), r = f.dim();
  const Layout l = block_layout(n, comm);
  f.Zt = Dense(d, l.n_local);
  f.M = Dense(l.n_local, r);
  f.a.assign(static_cast<size_t>(l.n_local), 0.0);
  f.z_start = l.start;
  f.comm = comm;
  MPI_File fh = MPI_FILE_NULL;
  const int rc = MPI_File_open(comm, path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  SSDR_CHECK_COLLECTIVE(comm, rc == MPI_SUCCESS, "cannot open '" + path + "': " + mpi_error_text(rc));
  std::string msg;
  const int64_t chunk = io_chunk_rows(w);
  int64_t rounds = (l.n_local + chunk - 1) / chunk;
  MPI_Allreduce(MPI_IN_PLACE, &rounds, 1, MPI_INT64_T, MPI_MAX, comm);
  std::vector<double> buf;
  uint64_t sum = 0;
  bool finite = true;
  for (int64_t k = 0; k < rounds; ++k) {
    const int64_t j0 = std::min(l.n_local, k * chunk), b = std::min(chunk, l.n_local - j0);
    buf.assign(static_cast<size_t>(b * w), 0.0);
    MPI_Status status;
    const int e = MPI_File_read_at_all(fh, static_cast<MPI_Offset>(head_len) + static_cast<MPI_Offset>((l.start + j0) * w) * 8,
                                       buf.data(), static_cast<int>(b * w), MPI_DOUBLE, &status);
    int got = 0;
    MPI_Get_count(&status, MPI_DOUBLE, &got);
    if ((e != MPI_SUCCESS || got != b * w) && msg.empty())
      msg = e != MPI_SUCCESS ? "cannot read '" + path + "': " + mpi_error_text(e) : corrupt(path);
    for (int64_t j = 0; j < b; ++j) {
      const double* row = buf.data() + j * w;
      sum += row_hash(l.start + j0 + j, row, w);
      for (int64_t t = 0; t < w; ++t) finite = finite && std::isfinite(row[t]);
      std::copy_n(row, d, f.Zt.col(j0 + j));
      for (int64_t c = 0; c < r; ++c) f.M(j0 + j, c) = row[d + c];
      f.a[static_cast<size_t>(j0 + j)] = row[d + r];
    }
  }
  MPI_File_close(&fh);
  SSDR_CHECK_COLLECTIVE(comm, msg.empty(), msg);
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_UINT64_T, MPI_SUM, comm);
  SSDR_CHECK_COLLECTIVE(comm, sum == row_sum, corrupt(path) + " (checksum mismatch: the file was changed or damaged)");
  SSDR_CHECK_COLLECTIVE(comm, finite, corrupt(path) + " (NaN or Inf in the kernel map)");
}

}  // namespace

Model load(const std::string& path) { return load_collective(path, MPI_COMM_SELF); }

Model load_collective(const std::string& path, MPI_Comm comm) {
  const int rank = comm_rank(comm);
  Head head;
  std::string message;
  bool ok = true;
  Model mine;
  if (rank == 0) {
    try {
      // The file's own bytes (the replicated part) go to the other ranks, its format
      // version included, once rank 0 has checked them.
      head = read_head(path);
      mine = from_bytes(head.bytes, path);
      if (mine.format_version >= 6) {
        const uint64_t expected = head.bytes.size() + static_cast<uint64_t>(section_rows(mine) * row_width(mine)) * 8 + 8;
        if (head.file_size != expected) SSDR_THROW(corrupt(path));
        if (row_width(mine) == 0 && head.row_sum != 0)
          SSDR_THROW(corrupt(path) + " (checksum mismatch: the file was changed or damaged)");
      }
    } catch (const Error& e) {
      ok = false;
      message = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  std::string& bytes = head.bytes;
  uint64_t meta[2] = {bytes.size(), head.row_sum};
  MPI_Bcast(meta, 2, MPI_UINT64_T, 0, comm);
  Model m;
  if (comm_size(comm) == 1) {
    m = std::move(mine);
  } else {
    const uint64_t len = meta[0];
    bytes.resize(static_cast<size_t>(len));
    const uint64_t step = uint64_t{1} << 30;
    for (uint64_t off = 0; off < len; off += step)
      MPI_Bcast(bytes.data() + off, static_cast<int>(std::min(step, len - off)), MPI_CHAR, 0, comm);
    m = rank == 0 ? std::move(mine) : from_bytes(bytes, path);
  }
  if (row_width(m) > 0) {
    if (m.format_version >= 6) read_rows(m, path, meta[0], meta[1], comm);
    else kernels::distribute(m.kernel, comm);  // older files hold all n samples
  }
  return m;
}

std::string to_bytes(const Model& m) {
  const std::string why = unsavable(m, "bytes");
  SSDR_CHECK(why.empty(), why);
  SSDR_CHECK(row_width(m) == 0 || m.kernel.Zt.cols == m.kernel.z_global,
             "to_bytes: the exact kernel map is distributed over " + std::to_string(comm_size(m.kernel.comm)) +
                 " ranks; write it collectively (save) instead");
  std::string out = header_bytes(m);
  const int64_t w = row_width(m), n = section_rows(m);
  out.reserve(out.size() + static_cast<size_t>(n * w) * 8 + 8);
  uint64_t row_sum = 0;
  std::vector<double> row;
  for (int64_t j = 0; j < n; ++j) {
    pack_rows(m.kernel, j, 1, row);
    row_sum += row_hash(j, row.data(), w);
    out.append(reinterpret_cast<const char*>(row.data()), static_cast<size_t>(w) * 8);  // as the file: native doubles
  }
  put_u64(out, row_sum);
  return out;
}

Model from_bytes_collective(const std::string& bytes, const std::string& what, MPI_Comm comm) {
  // Every rank parses its own copy; the verdict is agreed, and the copies must be one.
  const uint64_t h = fnv1a64(bytes.data(), bytes.size());
  uint64_t root = h;
  MPI_Bcast(&root, 1, MPI_UINT64_T, 0, comm);
  SSDR_CHECK_COLLECTIVE(comm, root == h, what + ": the ranks hold different model bytes; expected the same on every rank");
  Model m;
  std::string msg;
  try {
    const size_t mlen = std::strlen(kMagic);
    const bool v6 = bytes.size() >= kHeadLen + 8 && bytes.compare(0, mlen, kMagic) == 0 &&
                    static_cast<unsigned char>(bytes[mlen]) >= 6;
    if (!v6) {
      m = from_bytes(bytes, what);  // older formats: the whole file is the archive
      if (row_width(m) > 0) kernels::distribute(m.kernel, comm);
    } else {
      const uint64_t H = get_u64(bytes.data() + mlen + 4);
      if (H > bytes.size() - kHeadLen - 8) SSDR_THROW(corrupt(what));
      const size_t head = static_cast<size_t>(kHeadLen + H + 8);
      m = from_bytes(bytes.substr(0, head), what);
      const int64_t w = row_width(m), n = section_rows(m);
      if (bytes.size() != head + static_cast<size_t>(n * w) * 8 + 8) SSDR_THROW(corrupt(what));
      uint64_t sum = 0;
      bool finite = true;
      const Layout l = block_layout(n, comm);
      kernels::FeatureMap& f = m.kernel;
      const int64_t d = f.input_dim(), r = f.dim();
      if (w > 0) {
        f.Zt = Dense(d, l.n_local);
        f.M = Dense(l.n_local, r);
        f.a.assign(static_cast<size_t>(l.n_local), 0.0);
        f.z_start = l.start;
        f.comm = comm;
      }
      std::vector<double> row(static_cast<size_t>(w));
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(row.data(), bytes.data() + head + static_cast<size_t>(j * w) * 8, static_cast<size_t>(w) * 8);
        sum += row_hash(j, row.data(), w);
        for (double v : row) finite = finite && std::isfinite(v);
        if (j < l.start || j >= l.start + l.n_local) continue;
        const int64_t k = j - l.start;
        std::copy_n(row.data(), d, f.Zt.col(k));
        for (int64_t c = 0; c < r; ++c) f.M(k, c) = row[static_cast<size_t>(d + c)];
        f.a[static_cast<size_t>(k)] = row[static_cast<size_t>(d + r)];
      }
      if (sum != get_u64(bytes.data() + bytes.size() - 8))
        SSDR_THROW(corrupt(what) + " (checksum mismatch: the bytes were changed or damaged)");
      if (!finite) SSDR_THROW(corrupt(what) + " (NaN or Inf in the kernel map)");
    }
  } catch (const Error& e) {
    msg = e.what();
  }
  SSDR_CHECK_COLLECTIVE(comm, msg.empty(), msg);
  return m;
}

}  // namespace ssdr::model
