// Tests of model files (save/load round trip, error cases) and of project().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/model/model.hpp"
#include "ssdr/model/projector.hpp"
#include "support.hpp"

using namespace ssdr;
using ::testing::HasSubstr;

namespace {

/// test::TempDir named for this file.
struct ModelTempDir : test::TempDir {
  ModelTempDir() : test::TempDir("model") {}
};

std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

Dense filled(int64_t r, int64_t c, double base) {
  Dense A(r, c);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) A(i, j) = base + 0.1 * static_cast<double>(i) - 0.37 * static_cast<double>(j * j) + 1.0 / 3.0;
  return A;
}

/// A model with PCA (d_input 5 → d' 3 → m 2) and all preprocessing vectors set.
model::Model example_model() {
  model::Model m;
  m.method = "soda";
  m.ssdr_version = "0.1.0";
  m.parameters_json = "{\"k\": 10, \"beta\": 0.5, \"text\": \"with \\\"quotes\\\" and \\u00e9\"}";
  m.d_input = 5;
  m.classes = 3;
  m.shift = {1.0, -2.0, 0.5, 0.0, 1e-300};
  m.scale = {2.0, 0.5, 1.0 / 3.0, 1.0, 4.0};
  m.mean = {0.25, -0.125, 3.0, -1.0, 0.0};
  m.basis = filled(5, 3, 0.5);
  m.W = filled(3, 2, -1.0);
  m.normalization = methods::Normalization::unit;  // not the default (metric), so a round trip shows it
  return m;
}

/// The bytes of the normalization record at the end of a version-3 file (int32).
constexpr size_t kNormalizationBytes = 4;
/// The bytes of an empty labeled-samples record at the end of a version-5 payload: a Dense
/// 0×0 (rows, cols, vector length: 3 × 8) and an empty int32 vector (its length, 8).
constexpr size_t kEmptyLabeledBytes = 32;

void expect_models_equal(const model::Model& a, const model::Model& b) {
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.ssdr_version, b.ssdr_version);
  EXPECT_EQ(a.parameters_json, b.parameters_json);
  EXPECT_EQ(a.d_input, b.d_input);
  EXPECT_EQ(a.classes, b.classes);
  EXPECT_EQ(a.shift, b.shift);
  EXPECT_EQ(a.scale, b.scale);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.basis.rows, b.basis.rows);
  EXPECT_EQ(a.basis.cols, b.basis.cols);
  EXPECT_EQ(a.basis.v, b.basis.v);
  EXPECT_EQ(a.W.rows, b.W.rows);
  EXPECT_EQ(a.W.cols, b.W.cols);
  EXPECT_EQ(a.W.v, b.W.v);
  EXPECT_EQ(a.normalization, b.normalization);
  EXPECT_EQ(a.labeled_embedding.rows, b.labeled_embedding.rows);
  EXPECT_EQ(a.labeled_embedding.cols, b.labeled_embedding.cols);
  EXPECT_EQ(a.labeled_embedding.v, b.labeled_embedding.v);
  EXPECT_EQ(a.labeled_labels, b.labeled_labels);
}

/// Every rank's message must contain `expected`.
void expect_load_error(const std::string& path, const std::string& expected) {
  try {
    model::load(path);
    ADD_FAILURE() << "no ssdr::Error for " << path;
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(expected));
  }
}

}  // namespace

TEST(ModelFile, SaveThenLoadRoundTripsEveryFieldExactly) {
  ModelTempDir dir;
  const std::string p = dir.file("m" + std::to_string(test::rank()) + ".ssdr");
  const model::Model m = example_model();
  model::save(m, p);
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp." + std::to_string(::getpid())));
  const std::string bytes = read_bytes(p);
  EXPECT_EQ(bytes.substr(0, std::strlen(model::kMagic)), model::kMagic);
  expect_models_equal(model::load(p), m);
}

TEST(ModelFile, RoundTripsAModelWithoutPcaOrPreprocessing) {
  ModelTempDir dir;
  const std::string p = dir.file("m" + std::to_string(test::rank()) + ".ssdr");
  model::Model m;
  m.method = "lda";
  m.d_input = 4;
  m.classes = 2;
  m.W = filled(4, 1, 2.0);
  model::save(m, p);
  const model::Model back = model::load(p);
  expect_models_equal(back, m);
  EXPECT_EQ(back.basis.rows, 0);
  EXPECT_TRUE(back.shift.empty());
}

TEST(ModelFile, LoadCollectiveGivesEveryRankTheSameModel) {
  ModelTempDir dir;
  const std::string p = dir.file("shared.ssdr");
  if (test::rank() == 0) model::save(example_model(), p);
  MPI_Barrier(MPI_COMM_WORLD);
  expect_models_equal(model::load_collective(p, MPI_COMM_WORLD), example_model());
}

TEST(ModelFile, LoadCollectiveRaisesAMissingFileOnEveryRank) {
  ModelTempDir dir;
  const std::string p = dir.file("missing.ssdr");
  try {
    model::load_collective(p, MPI_COMM_WORLD);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open '" + p + "': No such file or directory");
  }
}

TEST(ModelFile, RejectsAFileWithTheWrongMagic) {
  ModelTempDir dir;
  const std::string p = dir.file("data" + std::to_string(test::rank()) + ".csv");
  write_bytes(p, "0,1.5,2.5\n1,3,4\n");
  expect_load_error(p, "'" + p + "' is not an ssdr model file");
  const std::string q = dir.file("empty" + std::to_string(test::rank()) + ".ssdr");
  write_bytes(q, "");
  expect_load_error(q, "'" + q + "' is not an ssdr model file");
}

TEST(ModelFile, RejectsANewerFormatVersion) {
  ModelTempDir dir;
  const std::string p = dir.file("m" + std::to_string(test::rank()) + ".ssdr");
  model::save(example_model(), p);
  std::string bytes = read_bytes(p);
  const size_t at = std::strlen(model::kMagic);
  bytes[at] = static_cast<char>(model::kFormatVersion + 1);  // little-endian version
  write_bytes(p, bytes);
  expect_load_error(p, "'" + p + "': model format version " + std::to_string(model::kFormatVersion + 1) +
                           " is newer than this ssdr supports (" + std::to_string(model::kFormatVersion) + ")");
}

TEST(ModelFile, RejectsEveryTruncationOfAValidFile) {
  ModelTempDir dir;
  const std::string p = dir.file("m" + std::to_string(test::rank()) + ".ssdr");
  model::save(example_model(), p);
  const std::string bytes = read_bytes(p);
  const std::string q = dir.file("cut" + std::to_string(test::rank()) + ".ssdr");
  for (size_t len = std::strlen(model::kMagic); len < bytes.size(); ++len) {
    write_bytes(q, bytes.substr(0, len));
    try {
      model::load(q);
      ADD_FAILURE() << "no error for a file cut at " << len << " of " << bytes.size() << " bytes";
    } catch (const Error& e) {
      ASSERT_THAT(std::string(e.what()), HasSubstr("'" + q + "': truncated or corrupt model file")) << "cut at " << len;
    }
  }
}

uint64_t fnv1a64(const std::string& bytes, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(bytes[i]);
    h *= 1099511628211ull;
  }
  return h;
}

void put_u64_at(std::string& bytes, size_t at, uint64_t h) {
  for (int k = 0; k < 8; ++k) bytes[at + k] = static_cast<char>((h >> (8 * k)) & 0xff);
}

/// The length H of a format-6 file's archive (the 8 bytes after magic and version).
uint64_t archive_length(const std::string& bytes) {
  uint64_t h = 0;
  for (int k = 0; k < 8; ++k) h |= uint64_t{static_cast<unsigned char>(bytes[std::strlen(model::kMagic) + 4 + k])} << (8 * k);
  return h;
}

/// Rewrites the checksum of a model file's replicated part — format 6: the 8 bytes after the
/// archive; formats 4, 5: the last 8 bytes — so a test can reach the parser with
/// deliberately corrupted fields.
std::string reseal(std::string bytes) {
  const size_t mlen = std::strlen(model::kMagic);
  const size_t n = static_cast<unsigned char>(bytes[mlen]) >= 6 ? mlen + 12 + archive_length(bytes) : bytes.size() - 8;
  if (n > bytes.size() - 8) return bytes;  // a corrupted archive length: nothing to reseal
  put_u64_at(bytes, n, fnv1a64(bytes, n));
  return bytes;
}

/// A format-5 file with the contents of a format-6 file of a model without an exact kernel
/// map (the archives are the same): magic, version 5, the archive, its checksum.
std::string as_format5(const std::string& v6) {
  const size_t mlen = std::strlen(model::kMagic);
  std::string b = v6.substr(0, mlen) + std::string("\x05\0\0\0", 4) + v6.substr(mlen + 12, archive_length(v6)) +
                  std::string(8, '\0');
  put_u64_at(b, b.size() - 8, fnv1a64(b, b.size() - 8));
  return b;
}

TEST(ModelFile, RejectsEveryFlippedByteByItsChecksum) {
  ModelTempDir dir;
  const std::string p = dir.file("m" + std::to_string(test::rank()) + ".ssdr");
  model::save(example_model(), p);
  const std::string good = read_bytes(p);
  const std::string q = dir.file("flip" + std::to_string(test::rank()) + ".ssdr");
  for (size_t at = std::strlen(model::kMagic) + 4; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    write_bytes(q, bad);
    try {
      model::load(q);
      ADD_FAILURE() << "a flipped byte at " << at << " of " << good.size() << " loaded";
    } catch (const Error& e) {
      ASSERT_THAT(std::string(e.what()), HasSubstr("truncated or corrupt model file")) << "byte " << at;
    }
  }
}

TEST(ModelFile, RefusesToSaveOrLoadNaNInW) {
  ModelTempDir dir;
  const std::string p = dir.file("nan" + std::to_string(test::rank()) + ".ssdr");
  model::Model m = example_model();
  m.W.v[0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(model::save(m, p), Error);
  // A file whose W holds NaN under a valid checksum: find W's first entry by its bits.
  model::Model ok = example_model();
  model::save(ok, p);
  std::string bytes = read_bytes(p);
  const double w0 = ok.W.v[0];
  std::string needle(reinterpret_cast<const char*>(&w0), sizeof w0);
  const size_t at = bytes.rfind(needle);
  ASSERT_NE(at, std::string::npos);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  bytes.replace(at, sizeof nan, std::string(reinterpret_cast<const char*>(&nan), sizeof nan));
  write_bytes(p, reseal(bytes));
  try {
    model::load(p);
    ADD_FAILURE() << "a model with NaN in W loaded";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("NaN or Inf in"));
  }
}

TEST(ModelFile, RejectsCorruptLengthFieldsWithoutHugeAllocations) {
  ModelTempDir dir;
  const std::string p = dir.file("m" + std::to_string(test::rank()) + ".ssdr");
  model::save(example_model(), p);
  const std::string good = read_bytes(p);
  // Overwrite 8 bytes at every position after the header with 0x7f...: any length field hit
  // becomes enormous; the loader must fail cleanly (or load something consistent).
  for (size_t at = std::strlen(model::kMagic) + 4; at + 16 <= good.size(); at += 3) {
    std::string bad = good;
    for (size_t k = 0; k < 8; ++k) bad[at + k] = '\x7f';
    write_bytes(p, reseal(bad));  // past the checksum, into the parser's own bounds checks
    try {
      const model::Model m = model::load(p);
      EXPECT_EQ(m.basis.v.size(), static_cast<size_t>(m.basis.rows * m.basis.cols));
    } catch (const Error& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr("truncated or corrupt model file"));
    }
  }
}

TEST(ModelFile, ReportsASaveIntoAMissingDirectory) {
  ModelTempDir dir;
  const std::string p = dir.file("no/such/m.ssdr");
  try {
    model::save(example_model(), p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("'" + p + "'"));
  }
}

TEST(ModelProjection, CombinedProjectionIsBasisTimesW) {
  const model::Model m = example_model();
  const Dense C = model::combined_projection(m);
  ASSERT_EQ(C.rows, 5);
  ASSERT_EQ(C.cols, 2);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 3; ++k) s += m.basis(i, k) * m.W(k, j);
      EXPECT_NEAR(C(i, j), s, 1e-14);
    }
  model::Model no_pca = m;
  no_pca.basis = Dense();
  no_pca.W = filled(5, 2, 0.0);
  EXPECT_EQ(model::combined_projection(no_pca).v, no_pca.W.v);
}

TEST(ModelProjection, ProjectEqualsTheHandComputedProductOnEveryRank) {
  const model::Model m = example_model();
  const int64_t n = 2501;  // more rows than one block of the implementation on one rank
  DistMatrix X = make_dist(MPI_COMM_WORLD, n, 5);
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t j = 0; j < 5; ++j)
      X(i, j) = std::sin(static_cast<double>((X.row_start + i) * 5 + j)) * 10.0;
  const DistMatrix Y = model::project(m, X);
  EXPECT_EQ(Y.n_global, n);
  EXPECT_EQ(Y.row_start, X.row_start);
  EXPECT_EQ(Y.n_local, X.n_local);
  ASSERT_EQ(Y.cols, 2);
  for (int64_t i = 0; i < X.n_local; ++i) {
    double z[5], t[3] = {0, 0, 0};
    for (int64_t j = 0; j < 5; ++j)
      z[j] = (X(i, j) - m.shift[static_cast<size_t>(j)]) * m.scale[static_cast<size_t>(j)] - m.mean[static_cast<size_t>(j)];
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t j = 0; j < 5; ++j) t[k] += z[j] * m.basis(j, k);
    for (int64_t c = 0; c < 2; ++c) {
      double y = 0;
      for (int64_t k = 0; k < 3; ++k) y += t[k] * m.W(k, c);
      ASSERT_NEAR(Y(i, c), y, 1e-11 * (1 + std::abs(y))) << "row " << X.row_start + i;
    }
  }
}

TEST(ModelProjection, ProjectWithoutPcaOrPreprocessingIsXTimesW) {
  model::Model m;
  m.d_input = 3;
  m.W = Dense(3, 2);
  m.W(0, 0) = 1; m.W(1, 0) = 2; m.W(2, 0) = -1; m.W(0, 1) = 0.5; m.W(2, 1) = 3;
  DistMatrix X = make_dist(MPI_COMM_WORLD, 7, 3);
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t j = 0; j < 3; ++j) X(i, j) = static_cast<double>((X.row_start + i) * 3 + j);
  const Dense Y = allgather(model::project(m, X));
  for (int64_t i = 0; i < 7; ++i) {
    EXPECT_DOUBLE_EQ(Y(i, 0), 3.0 * i + (3.0 * i + 1) * 2 - (3.0 * i + 2));
    EXPECT_DOUBLE_EQ(Y(i, 1), 0.5 * 3.0 * i + 3 * (3.0 * i + 2));
  }
}

TEST(ModelProjection, RejectsDataWithTheWrongNumberOfFeatures) {
  const model::Model m = example_model();
  const DistMatrix X = make_dist(MPI_COMM_WORLD, 4, 6);
  try {
    model::project(m, X);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the data has 6 features but the model expects 5");
  }
}

TEST(ModelFile, RefusesToSaveAModelWhoseShapesDoNotFit) {
  ModelTempDir dir;
  const std::string p = dir.file("bad" + std::to_string(test::rank()) + ".ssdr");
  model::Model m = example_model();
  m.mean.pop_back();
  try {
    model::save(m, p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot save an inconsistent model to '" + p + "': mean has 4 entries, d_input is 5");
  }
  EXPECT_FALSE(std::filesystem::exists(p));
}

namespace {

/// example_model() with a Nyström-shaped RBF kernel map (d' = 3 → 4 landmarks → r = 2).
model::Model example_kernel_model() {
  model::Model m = example_model();
  m.kernel.type = kernels::KernelType::rbf;
  m.kernel.degree = 3;
  m.kernel.sigma2 = 2.5;
  m.kernel.exact = false;
  m.kernel.Zt = filled(3, 4, 0.25);
  m.kernel.M = filled(4, 2, -0.5);
  m.kernel.a = {0.1, 0.2, 0.3, 0.4};
  m.W = filled(2, 2, 1.5);
  return m;
}

}  // namespace

TEST(ModelFile, RoundTripsAKernelFeatureMapExactlyInTheCurrentFormatVersion) {
  ModelTempDir dir;
  const std::string p = dir.file("k" + std::to_string(test::rank()) + ".ssdr");
  const model::Model m = example_kernel_model();
  model::save(m, p);
  const std::string bytes = read_bytes(p);
  EXPECT_EQ(bytes[std::strlen(model::kMagic)], static_cast<char>(model::kFormatVersion));
  const model::Model back = model::load(p);
  expect_models_equal(back, m);
  EXPECT_EQ(back.kernel.type, kernels::KernelType::rbf);
  EXPECT_EQ(back.kernel.sigma2, 2.5);
  EXPECT_FALSE(back.kernel.exact);
  EXPECT_EQ(back.kernel.Zt.rows, 3);
  EXPECT_EQ(back.kernel.Zt.v, m.kernel.Zt.v);
  EXPECT_EQ(back.kernel.M.v, m.kernel.M.v);
  EXPECT_EQ(back.kernel.a, m.kernel.a);
}

TEST(ModelFile, ReadsFormatVersionOneFilesAsModelsWithoutAKernel) {
  // A version-1 file is a version-3 file of a kernel-less model without the trailing
  // normalization record (int32, 4 bytes) and kernel record (int32 type, degree, σ², uint8
  // exact, two empty Dense of 24 bytes each, an empty vector of 8 bytes = 77 bytes, and the
  // 5 bytes of Boost's class record of the first FeatureMap = 82 bytes; the archive must end
  // exactly there) and with version 1 in the header. Its normalization reads as metric (what produced it).
  ModelTempDir dir;
  const std::string p = dir.file("v1_" + std::to_string(test::rank()) + ".ssdr");
  model::save(example_model(), p);
  std::string bytes = as_format5(read_bytes(p));
  bytes[std::strlen(model::kMagic)] = '\x01';
  // Drop the format-4 checksum (8 bytes), the (empty) labeled samples, the normalization and
  // the kernel record.
  write_bytes(p, bytes.substr(0, bytes.size() - 8 - kEmptyLabeledBytes - kNormalizationBytes - 82));
  const model::Model back = model::load(p);
  model::Model expected = example_model();
  expected.normalization = methods::Normalization::metric;
  expect_models_equal(back, expected);
  EXPECT_TRUE(back.kernel.empty());
  // The same bytes labeled version 2 are missing the kernel record.
  bytes = read_bytes(p);
  bytes[std::strlen(model::kMagic)] = '\x02';
  write_bytes(p, bytes);
  expect_load_error(p, "truncated or corrupt model file");
}

TEST(ModelFile, RefusesACurrentFileRelabeledAsAnOlderFormatWithoutAChecksum) {
  // Format 3 has no checksum: relabeling a format-4 file as 3 must not switch the check off.
  // Its payload then ends with the 8 checksum bytes, which no format-3 archive has.
  ModelTempDir dir;
  const std::string p = dir.file("relabel_" + std::to_string(test::rank()) + ".ssdr");
  model::save(example_kernel_model(), p);
  std::string bytes = read_bytes(p);
  bytes[std::strlen(model::kMagic)] = '\x03';
  write_bytes(p, bytes);
  expect_load_error(p, "truncated or corrupt model file");
}

TEST(ModelFile, ReadsFormatVersionTwoFilesWithTheMetricNormalization) {
  // A version-2 file is a version-3 file without the trailing normalization record; the
  // ssdr versions that wrote version 2 scaled generalized eigenvectors by wᵀBw = 1 only,
  // so such a model loads with normalization metric (and its kernel map intact).
  ModelTempDir dir;
  const std::string p = dir.file("v2_" + std::to_string(test::rank()) + ".ssdr");
  const model::Model m = example_kernel_model();
  ASSERT_EQ(m.normalization, methods::Normalization::unit);
  model::save(m, p);
  std::string bytes = as_format5(read_bytes(p));
  bytes[std::strlen(model::kMagic)] = '\x02';
  // Drop the format-4 checksum (8 bytes), the (empty) labeled samples, then the
  // normalization record.
  write_bytes(p, bytes.substr(0, bytes.size() - 8 - kEmptyLabeledBytes - kNormalizationBytes));
  const model::Model back = model::load(p);
  model::Model expected = m;
  expected.normalization = methods::Normalization::metric;
  expect_models_equal(back, expected);
  EXPECT_EQ(back.kernel.Zt.v, m.kernel.Zt.v);
  EXPECT_EQ(back.kernel.a, m.kernel.a);
  // The same bytes labeled version 3 are missing the normalization record.
  bytes = read_bytes(p);
  bytes[std::strlen(model::kMagic)] = '\x03';
  write_bytes(p, bytes);
  expect_load_error(p, "truncated or corrupt model file");
}

TEST(ModelFile, RoundTripsEitherNormalizationAndRejectsAnUnknownOne) {
  ModelTempDir dir;
  const std::string p = dir.file("n" + std::to_string(test::rank()) + ".ssdr");
  for (const auto n : {methods::Normalization::unit, methods::Normalization::metric}) {
    model::Model m = example_model();
    m.normalization = n;
    model::save(m, p);
    EXPECT_EQ(model::load(p).normalization, n);
    expect_models_equal(model::load_collective(p, MPI_COMM_WORLD), m);
  }
  // The record is the file's last int32 (little-endian); 2 is no Normalization.
  std::string bytes = read_bytes(p);
  bytes[bytes.size() - kNormalizationBytes] = '\x02';
  write_bytes(p, bytes);
  expect_load_error(p, "truncated or corrupt model file");
}

TEST(ModelFile, RefusesAKernelModelWhoseMapDoesNotFitW) {
  ModelTempDir dir;
  const std::string p = dir.file("bad_k" + std::to_string(test::rank()) + ".ssdr");
  model::Model m = example_kernel_model();
  m.W = filled(3, 2, 0.0);  // the map has 2 features
  try {
    model::save(m, p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("the kernel map has 2 features but W has 3 rows"));
  }
}

TEST(ModelProjection, KernelProjectionIsWTransposeTimesTheCenteredRbfFeatures) {
  const model::Model m = example_kernel_model();
  DistMatrix X = make_dist(MPI_COMM_WORLD, 9, 5);
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t j = 0; j < 5; ++j) X(i, j) = std::cos(static_cast<double>((X.row_start + i) * 5 + j));
  const DistMatrix Y = model::project(m, X);
  ASSERT_EQ(Y.cols, 2);
  const auto& k = m.kernel;
  for (int64_t i = 0; i < X.n_local; ++i) {
    double z[5], t[3] = {0, 0, 0}, g[4], phi[2] = {0, 0};
    for (int64_t j = 0; j < 5; ++j)
      z[j] = (X(i, j) - m.shift[static_cast<size_t>(j)]) * m.scale[static_cast<size_t>(j)] - m.mean[static_cast<size_t>(j)];
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t j = 0; j < 5; ++j) t[c] += z[j] * m.basis(j, c);
    for (int64_t l = 0; l < 4; ++l) {
      double d2 = 0;
      for (int64_t c = 0; c < 3; ++c) d2 += (t[c] - k.Zt(c, l)) * (t[c] - k.Zt(c, l));
      g[l] = std::exp(-d2 / k.sigma2) - k.a[static_cast<size_t>(l)];
    }
    for (int64_t f = 0; f < 2; ++f)
      for (int64_t l = 0; l < 4; ++l) phi[f] += k.M(l, f) * g[l];
    for (int64_t c = 0; c < 2; ++c) {
      const double y = phi[0] * m.W(0, c) + phi[1] * m.W(1, c);
      EXPECT_NEAR(Y(i, c), y, 1e-12 * (1 + std::abs(y))) << "row " << X.row_start + i;
    }
  }
}

namespace {

/// example_model() with four labeled samples embedded in its m = 2 dimensions.
model::Model example_labeled_model() {
  model::Model m = example_model();
  m.labeled_embedding = filled(2, 4, 0.75);  // column j: the j-th labeled sample
  m.labeled_labels = {0, 2, 1, 2};
  return m;
}

}  // namespace

TEST(ModelFile, RoundTripsTheLabeledSamplesExactly) {
  ModelTempDir dir;
  const std::string p = dir.file("l" + std::to_string(test::rank()) + ".ssdr");
  const model::Model m = example_labeled_model();
  model::save(m, p);
  EXPECT_EQ(read_bytes(p)[std::strlen(model::kMagic)], static_cast<char>(model::kFormatVersion));
  const model::Model back = model::load(p);
  expect_models_equal(back, m);
  EXPECT_EQ(back.format_version, model::kFormatVersion);
  EXPECT_GE(model::kFormatVersion, model::kFirstVersionWithLabeled);
  expect_models_equal(model::load_collective(p, MPI_COMM_WORLD), m);
}

TEST(ModelFile, RefusesLabeledSamplesThatDoNotFitTheModel) {
  ModelTempDir dir;
  const std::string p = dir.file("bad_l" + std::to_string(test::rank()) + ".ssdr");
  auto refused = [&](const model::Model& m, const std::string& why) {
    try {
      model::save(m, p);
      ADD_FAILURE() << "saved a model with " << why;
    } catch (const Error& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr(why));
    }
  };
  model::Model m = example_labeled_model();
  m.labeled_labels.pop_back();
  refused(m, "the labeled embeddings have 4 samples but 3 labels");
  m = example_labeled_model();
  m.labeled_embedding = filled(3, 4, 0.0);
  refused(m, "the labeled embeddings have 3 dimensions, W has 2 columns");
  m = example_labeled_model();
  m.labeled_labels[1] = 3;
  refused(m, "a labeled sample's label 3 is not one of the 3 classes");
  m = example_labeled_model();
  m.labeled_embedding.v[5] = std::numeric_limits<double>::infinity();
  refused(m, "NaN or Inf in labeled embeddings");
}

TEST(ModelFile, ReadsFormatVersionFourFilesWithoutLabeledSamples) {
  // A version-4 file is a version-5 file without the trailing labeled-samples record (its
  // own checksum over its own bytes); it loads with format_version 4 and no labeled
  // samples, on one rank and collectively.
  ModelTempDir dir;
  const std::string p = dir.file("v4_" + std::to_string(test::rank()) + ".ssdr");
  model::save(example_model(), p);
  std::string bytes = as_format5(read_bytes(p));
  bytes[std::strlen(model::kMagic)] = '\x04';
  bytes = bytes.substr(0, bytes.size() - 8 - kEmptyLabeledBytes) + std::string(8, '\0');
  write_bytes(p, reseal(bytes));
  const model::Model back = model::load(p);
  expect_models_equal(back, example_model());
  EXPECT_EQ(back.format_version, 4);
  EXPECT_TRUE(back.labeled_labels.empty());
  EXPECT_EQ(back.labeled_embedding.cols, 0);
  // load_collective hands the file's own bytes to every rank: the version survives.
  const std::string q = dir.file("v4_shared.ssdr");
  if (test::rank() == 0) write_bytes(q, reseal(bytes));
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(model::load_collective(q, MPI_COMM_WORLD).format_version, 4);
  // A version-5 file with labeled samples relabeled as 4 keeps bytes past a version-4
  // archive: refused, not read as something else.
  model::save(example_labeled_model(), p);
  bytes = as_format5(read_bytes(p));
  bytes[std::strlen(model::kMagic)] = '\x04';
  write_bytes(p, reseal(bytes));
  expect_load_error(p, "truncated or corrupt model file");
}

TEST(ModelFile, ReadsTheVersionFourFileTheLastVersionFourSsdrWrote) {
  // tests/data/iris_lda_v4.model: `ssdr fit --method lda --data iris.csv --labeled-per-class 3
  // --seed 1 --model ...` by the ssdr before format 5 (commit 69c5a7d).
  const model::Model m = model::load(test::data_path("iris_lda_v4.model"));
  EXPECT_EQ(m.format_version, 4);
  EXPECT_EQ(m.method, "lda");
  EXPECT_EQ(m.d_input, 4);
  EXPECT_EQ(m.classes, 3);
  EXPECT_EQ(m.W.cols, 2);
  EXPECT_TRUE(m.labeled_labels.empty());
  EXPECT_EQ(m.labeled_embedding.cols, 0);
}
