// Model files (magic + version + Boost binary archive) and the projection of raw samples.
//
// File layout: the 10 bytes of kMagic, the format version as a 4-byte little-endian
// integer, then a boost::archive::binary_oarchive holding the Model: the version-1 fields
// (method … basis, W), then from version 2 on the kernel feature map (type, degree, σ²,
// exact flag, Zt, M, a), then from version 3 on the normalization of W's columns (int32:
// 0 unit, 1 metric), then from version 5 on the labeled samples (labeled_embedding as a
// Dense m × n_labeled, labeled_labels as int32 with a length); from version 4 on, the last 8
// bytes are the FNV-1a 64 checksum (little-endian) of everything before them, checked on
// load. A version-1 file is read as a model without a kernel; version-1 and -2 files are read
// with normalization metric (what produced them); files before version 5 have no labeled
// samples.
#include "ssdr/model/model.hpp"

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
#include <sstream>
#include <streambuf>
#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/io/output.hpp"

namespace {

/// Upper bound on the element count of any vector or string being loaded (the archive's
/// size in bytes), so a corrupt length field fails instead of allocating gigabytes.
thread_local uint64_t g_load_limit = std::numeric_limits<uint64_t>::max();

struct CorruptLength {};

/// Format version of the archive being read or written (set by to_bytes/from_bytes).
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
  ar & f.Zt & f.M;
  serialize_contiguous(ar, f.a);
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
      if (normalization < 0 || normalization > static_cast<int32_t>(ssdr::methods::Normalization::metric))
        throw CorruptLength{};
      m.normalization = static_cast<ssdr::methods::Normalization>(normalization);
    }
  } else if constexpr (Archive::is_loading::value) {
    m.normalization = ssdr::methods::Normalization::metric;
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

/// FNV-1a 64 of a byte range (the format-4 checksum: any flipped byte changes it).
uint64_t fnv1a64(const char* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

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

/// The complete file contents for `m`.
std::string to_bytes(const Model& m) {
  std::ostringstream os(std::ios::binary);
  os.write(kMagic, static_cast<std::streamsize>(std::strlen(kMagic)));
  const uint32_t v = static_cast<uint32_t>(kFormatVersion);
  const unsigned char ver[4] = {static_cast<unsigned char>(v & 0xff), static_cast<unsigned char>((v >> 8) & 0xff),
                                static_cast<unsigned char>((v >> 16) & 0xff),
                                static_cast<unsigned char>((v >> 24) & 0xff)};
  os.write(reinterpret_cast<const char*>(ver), 4);
  g_format_version = v;
  {
    boost::archive::binary_oarchive ar(os);
    Model copy = m;  // serialize() takes a non-const reference
    ar << copy;
  }
  // Format 4: FNV-1a 64 of everything before it, little-endian, as the last 8 bytes.
  std::string bytes = os.str();
  const uint64_t h = fnv1a64(bytes.data(), bytes.size());
  for (int k = 0; k < 8; ++k) bytes.push_back(static_cast<char>((h >> (8 * k)) & 0xff));
  return bytes;
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

/// Why the shapes of `m` do not fit together, or "" when they do.
std::string inconsistency(const Model& m) {
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
  size_t payload_end = bytes.size();
  if (version >= 4) {
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
    BytesView view(bytes.data() + mlen + 4, payload_end - mlen - 4);
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
  const std::string why = inconsistency(m);
  if (!why.empty()) SSDR_THROW(corrupt(path) + " (" + why + ")");
  const std::string nf = non_finite(m);
  if (!nf.empty()) SSDR_THROW(corrupt(path) + " (NaN or Inf in " + nf + ")");
  return m;
}

}  // namespace

void save(const Model& m, const std::string& path) {
  const std::string why = inconsistency(m);
  SSDR_CHECK(why.empty(), "cannot save an inconsistent model to '" + path + "': " + why);
  const std::string nf = non_finite(m);
  SSDR_CHECK(nf.empty(), "cannot save a model with NaN or Inf in " + nf + " to '" + path + "'");
  const std::string bytes = to_bytes(m);
  io::AtomicFile f(path, true);
  if (std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
    SSDR_THROW("cannot write '" + path + "': " + std::strerror(errno));
  f.commit();
}

namespace {

/// The whole file, or an ssdr::Error naming it. Local.
std::string read_model_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    SSDR_THROW("cannot read '" + path + "': not a regular file; expected a model file from ssdr fit --model");
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    SSDR_THROW("cannot open '" + path + "': " + (errno ? std::strerror(errno) : "unknown error"));
  std::string bytes;
  char buf[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, got);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) SSDR_THROW("cannot read '" + path + "': " + (err ? std::strerror(err) : "read error"));
  return bytes;
}

}  // namespace

Model load(const std::string& path) { return from_bytes(read_model_file(path), path); }

Model load_collective(const std::string& path, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string bytes, message;
  bool ok = true;
  Model mine;
  if (rank == 0) {
    try {
      // The file's own bytes go to the other ranks (its format version included), once
      // rank 0 has checked them.
      bytes = read_model_file(path);
      mine = from_bytes(bytes, path);
    } catch (const Error& e) {
      ok = false;
      message = e.what();
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  uint64_t len = bytes.size();
  MPI_Bcast(&len, 1, MPI_UINT64_T, 0, comm);
  bytes.resize(static_cast<size_t>(len));
  const uint64_t step = uint64_t{1} << 30;
  for (uint64_t off = 0; off < len; off += step)
    MPI_Bcast(bytes.data() + off, static_cast<int>(std::min(step, len - off)), MPI_CHAR, 0, comm);
  if (rank == 0) return mine;
  return from_bytes(bytes, path);
}

Dense combined_projection(const Model& m) {
  SSDR_CHECK(m.kernel.empty(), "model: a kernel model has no linear projection matrix");
  if (m.basis.rows == 0) return m.W;
  SSDR_CHECK(m.basis.cols == m.W.rows,
             "model: PCA basis is " + std::to_string(m.basis.rows) + "x" +
                 std::to_string(m.basis.cols) + " but W has " + std::to_string(m.W.rows) +
                 " rows");
  Dense C(m.basis.rows, m.W.cols);
  if (m.basis.cols > 0)
    blas::gemm('N', 'N', m.basis.rows, m.W.cols, m.basis.cols, 1.0, m.basis.data(),
               m.basis.rows, m.W.data(), m.W.rows, 0.0, C.data(), C.rows);
  return C;
}

Projector::Projector(const Model& m) : m_(m) {
  const std::string why = inconsistency(m);
  SSDR_CHECK(why.empty(), "model: " + why);
  dp_ = m.basis.rows > 0 ? m.basis.cols : m.d_input;  // data::output_dim of the model's map
  r_ = m.kernel.empty() ? dp_ : m.kernel.dim();
  SSDR_CHECK(m.W.rows == r_ || (m.W.rows == 0 && m.W.cols == 0),
             "model: W has " + std::to_string(m.W.rows) + " rows, expected " + std::to_string(r_));
}

void Projector::from_raw(const double* x, int64_t b, double* y) {
  if (!pre_copied_) {
    // The map's copy is made by the first raw tile only: preprocessed rows (the fit's
    // embedding, sparse rows) never need it, and the d×d' basis can be the largest object.
    pre_.shift = m_.shift;
    pre_.scale = m_.scale;
    pre_.mean = m_.mean;
    pre_.basis = m_.basis;
    pre_copied_ = true;
  }
  P_.resize(static_cast<size_t>(kTile * dp_));
  data::apply_tile(pre_, x, b, m_.d_input, P_.data(), Z_, T_);
  tail(b, y);
}

void Projector::from_preprocessed(const double* xp, int64_t b, double* y) {
  SSDR_CHECK(b >= 0 && b <= kTile, "Projector: " + std::to_string(b) + " rows, at most " + std::to_string(kTile));
  P_.resize(static_cast<size_t>(kTile * dp_));
  std::copy_n(xp, b * dp_, P_.data());
  tail(b, y);
}

void Projector::tail(int64_t b, double* y) {
  const int64_t out = out_dim();
  if (b == 0 || out == 0) return;
  // Zero rows past b: every GEMM below has the fixed shape of a full tile.
  std::fill(P_.begin() + b * dp_, P_.end(), 0.0);
  const double* features = P_.data();
  if (!m_.kernel.empty()) {
    Phi_.assign(static_cast<size_t>(kTile * r_), 0.0);
    kernels::apply_rows(m_.kernel, P_.data(), kTile, Phi_.data());
    features = Phi_.data();
  }
  Y_.resize(static_cast<size_t>(kTile * out));
  // Row-major Y tile (kTile×m) is column-major Yᵀ (m×kTile) = Wᵀ (m×r) · Φᵀ (r×kTile).
  if (r_ > 0) blas::gemm('T', 'N', out, kTile, r_, 1.0, m_.W.data(), m_.W.rows, features, r_, 0.0, Y_.data(), out);
  else std::fill(Y_.begin(), Y_.end(), 0.0);
  std::copy_n(Y_.data(), b * out, y);
}

namespace {

void check_input_width(const Model& m, int64_t d) {
  SSDR_CHECK(d == m.d_input, "the data has " + std::to_string(d) + " features but the model expects " +
                                 std::to_string(m.d_input));
}

}  // namespace

DistMatrix project(const Model& m, const DistMatrix& X) {
  check_input_width(m, X.cols);
  Projector p(m);
  DistMatrix Y = make_dist_like(X, p.out_dim());
  for (int64_t i0 = 0; i0 < X.n_local; i0 += Projector::kTile)
    p.from_raw(X.row(i0), std::min(Projector::kTile, X.n_local - i0), Y.row(i0));
  return Y;
}

DistMatrix project(const Model& m, const SparseRows& X) {
  check_input_width(m, X.cols);
  SSDR_REQUIRE(m.basis.rows > 0, "the model has no PCA basis (it was fitted with --no-pca on dense data); sparse "
                                 "rows are mapped through one: read the data dense (--sparse no)");
  data::Preprocessor pre;
  pre.shift = m.shift;
  pre.scale = m.scale;
  pre.mean = m.mean;
  pre.basis = m.basis;
  const DistMatrix Xp = data::apply(pre, X, std::vector<char>(static_cast<size_t>(X.n_local), 1));
  pre = data::Preprocessor();  // the copy of the basis goes before the embedding is formed
  return project_preprocessed(m, Xp);
}

DistMatrix project_preprocessed(const Model& m, const DistMatrix& Xp) {
  Projector p(m);
  SSDR_CHECK(Xp.cols == p.preprocessed_dim(), "project_preprocessed: the rows have " + std::to_string(Xp.cols) +
                                                  " features, the model's preprocessing gives " +
                                                  std::to_string(p.preprocessed_dim()));
  DistMatrix Y = make_dist_like(Xp, p.out_dim());
  for (int64_t i0 = 0; i0 < Xp.n_local; i0 += Projector::kTile)
    p.from_preprocessed(Xp.row(i0), std::min(Projector::kTile, Xp.n_local - i0), Y.row(i0));
  return Y;
}

}  // namespace ssdr::model
