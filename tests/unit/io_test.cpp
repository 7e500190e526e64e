// Tests of the data set readers (CSV, LIBSVM, IDX), the atomic file and the embedding writer.
// Every test runs at any rank count; files written for a test live in a temporary directory
// that rank 0 creates (unique per test and per run) and removes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/io/output.hpp"
#include "support.hpp"

using namespace ssdr;
using ::testing::HasSubstr;

namespace {

/// test::TempDir that also writes files.
class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("io") {}
  /// Rank 0 writes `text` to `name` (gzip-compressed when gz); then every rank continues.
  std::string write(const std::string& name, const std::string& text, bool gz = false) const {
    const std::string p = file(name);
    if (test::rank() == 0) write_bytes(p, text, gz);
    MPI_Barrier(MPI_COMM_WORLD);
    return p;
  }
  static void write_bytes(const std::string& p, const std::string& bytes, bool gz) {
    if (gz) {
      gzFile f = gzopen(p.c_str(), "wb");
      ASSERT_NE(f, nullptr);
      if (!bytes.empty()) gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream out(p, std::ios::binary);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
  }
};

/// Runs `f`, which must throw ssdr::Error (on this rank) with `expected` in its message.
void expect_error(const std::function<void()>& f, const std::string& expected) {
  try {
    f();
    ADD_FAILURE() << "no ssdr::Error thrown; expected one containing: " << expected;
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(expected));
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "message is not one line";
  }
}

/// The message must be identical on every rank (compared with rank 0's).
void expect_same_everywhere(const std::string& msg) {
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root(static_cast<size_t>(len), '\0');
  if (test::rank() == 0) root = msg;
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  EXPECT_EQ(msg, root);
}

void expect_read_error(const std::string& path, io::Format format, const std::string& expected) {
  std::string msg;
  try {
    io::read_dataset(path, format, MPI_COMM_WORLD);
    ADD_FAILURE() << "no ssdr::Error thrown for " << path << "; expected: " << expected;
  } catch (const Error& e) {
    msg = e.what();
    EXPECT_THAT(msg, HasSubstr(expected));
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line";
  }
  expect_same_everywhere(msg);
}

/// Rank 0 writes `text` to `name` in `dir`; reading it as `format` must then fail on every
/// rank with `before + path + after` in the message.
void expect_file_error(const TempDir& dir, const std::string& name, const std::string& text, io::Format format,
                       const std::string& after, const std::string& before = "") {
  const std::string p = dir.write(name, text);
  expect_read_error(p, format, before + p + after);
}


/// Checks that X has the block layout of n×d over MPI_COMM_WORLD.
void expect_block_layout(const DistMatrix& X, int64_t n, int64_t d) {
  const Layout l = block_layout(n, MPI_COMM_WORLD);
  EXPECT_EQ(X.n_global, n);
  EXPECT_EQ(X.cols, d);
  EXPECT_EQ(X.row_start, l.start);
  EXPECT_EQ(X.n_local, l.n_local);
  EXPECT_EQ(static_cast<int64_t>(X.v.size()), l.n_local * d);
}

std::string read_file_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// An IDX file: big-endian magic and dims, then the bytes.
std::string idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                      const std::vector<unsigned char>& data) {
  std::string s;
  auto be = [&](uint32_t v) {
    for (int k = 3; k >= 0; --k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  };
  be(magic);
  for (uint32_t d : dims) be(d);
  s.append(reinterpret_cast<const char*>(data.data()), data.size());
  return s;
}

/// n images of rows×cols pixels; pixel (i, k) = (7*i + k) mod 256.
std::vector<unsigned char> pixels(int n, int d, int base = 0) {
  std::vector<unsigned char> p(static_cast<size_t>(n * d));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < d; ++k) p[static_cast<size_t>(i * d + k)] = static_cast<unsigned char>((7 * (i + base) + k) % 256);
  return p;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// CSV
// ------------------------------------------------------------------------------------------

TEST(CsvReader, ReadsIrisWithRowsDistributedInBlocks) {
  const io::Dataset ds = io::read_dataset(test::data_path("iris.csv"), io::Format::csv, MPI_COMM_WORLD);
  expect_block_layout(ds.X, 150, 4);
  EXPECT_EQ(ds.classes, 3);
  ASSERT_EQ(test::all_labels(ds).size(), 150u);
  EXPECT_EQ(test::all_labels(ds).front(), 0);
  EXPECT_EQ(test::all_labels(ds).back(), 2);
  EXPECT_EQ(ds.source, test::data_path("iris.csv"));
  // First line "0,5.1,3.5,1.4,0.2"; last line "2,5.9,3.0,5.1,1.8".
  if (ds.X.row_start == 0 && ds.X.n_local > 0) {
    EXPECT_EQ(ds.X(0, 0), 5.1);
    EXPECT_EQ(ds.X(0, 1), 3.5);
    EXPECT_EQ(ds.X(0, 2), 1.4);
    EXPECT_EQ(ds.X(0, 3), 0.2);
  }
  if (ds.X.row_start + ds.X.n_local == 150 && ds.X.n_local > 0) {
    const int64_t last = ds.X.n_local - 1;
    EXPECT_EQ(ds.X(last, 0), 5.9);
    EXPECT_EQ(ds.X(last, 1), 3.0);
    EXPECT_EQ(ds.X(last, 2), 5.1);
    EXPECT_EQ(ds.X(last, 3), 1.8);
  }
}

TEST(CsvReader, MatchesASerialReferenceExactlyForIrisWineDigitsAndBreastCancer) {
  struct Case {
    const char* name;
    int64_t n, d;
    int classes;
  };
  for (const Case& c : {Case{"iris.csv", 150, 4, 3}, Case{"wine.csv", 178, 13, 3},
                        Case{"digits.csv", 1797, 64, 10}, Case{"breast_cancer.csv", 569, 30, 2}}) {
    SCOPED_TRACE(c.name);
    const io::Dataset ds = io::read_dataset(test::data_path(c.name), io::Format::automatic, MPI_COMM_WORLD);
    expect_block_layout(ds.X, c.n, c.d);
    EXPECT_EQ(ds.classes, c.classes);
    Dense ref;
    std::vector<int> ref_labels;
    test::load_csv_replicated(c.name, ref, ref_labels);
    EXPECT_EQ(test::all_labels(ds), ref_labels);
    EXPECT_EQ(test::max_abs_diff(allgather(ds.X), ref), 0.0);
  }
}

TEST(CsvReader, AcceptsCrlfLineEndingsBlanksAroundValuesAndTrailingBlankLines) {
  TempDir dir;
  const std::string p = dir.write("crlf.csv", "1,0.5,-2e3\r\n0, 1.25 ,+3\r\n2,7,8\r\n\r\n\n");
  const io::Dataset ds = io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD);
  expect_block_layout(ds.X, 3, 2);
  EXPECT_EQ(test::all_labels(ds), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(ds.classes, 3);
  Dense A = allgather(ds.X);
  EXPECT_EQ(A(0, 0), 0.5);
  EXPECT_EQ(A(0, 1), -2000.0);
  EXPECT_EQ(A(1, 0), 1.25);
  EXPECT_EQ(A(1, 1), 3.0);
  EXPECT_EQ(A(2, 1), 8.0);
}

TEST(CsvReader, ReadsAFileWithoutFinalNewlineOrWithAByteOrderMark) {
  TempDir dir;
  const std::string p = dir.write("nonl.csv", "\xEF\xBB\xBF" "0,1,2\n1,3,4");
  const io::Dataset ds = io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD);
  Dense A = allgather(ds.X);
  ASSERT_EQ(A.rows, 2);
  EXPECT_EQ(A(1, 1), 4.0);
  EXPECT_EQ(ds.classes, 2);
}

TEST(CsvReader, ReadsGzipCompressedFilesTransparently) {
  TempDir dir;
  std::ifstream in(test::data_path("iris.csv"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string p = dir.write("iris.csv.gz", text.str(), true);
  EXPECT_EQ(io::detect_format(p), io::Format::csv);
  const io::Dataset gz = io::read_dataset(p, io::Format::automatic, MPI_COMM_WORLD);
  const io::Dataset plain = io::read_dataset(test::data_path("iris.csv"), io::Format::csv, MPI_COMM_WORLD);
  EXPECT_EQ(gz.labels, plain.labels);
  EXPECT_EQ(gz.X.v, plain.X.v);
}

TEST(CsvReader, RejectsAGzipStreamThatEndsEarly) {
  TempDir dir;
  const std::string full = dir.write("full.csv.gz", read_file_bytes(test::data_path("digits.csv")), true);
  std::string gz = read_file_bytes(full);
  gz.resize(gz.size() / 2);
  const std::string p = dir.write("cut.csv.gz", gz);
  expect_read_error(p, io::Format::csv, "'" + p + "': truncated gzip file (unexpected end of data)");
}

TEST(CsvReader, StreamsFilesLongerThanOneChunkToTheOwningRanks) {
  TempDir dir;
  const int64_t n = 10007, d = 3;
  std::string text;
  if (test::rank() == 0) {
    for (int64_t i = 0; i < n; ++i)
      text += std::to_string(i % 5) + "," + std::to_string(i) + "," + std::to_string(-i) + ".5," +
              std::to_string(i % 17) + "\n";
  }
  const std::string p = dir.write("long.csv", text);
  const io::Dataset ds = io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD);
  expect_block_layout(ds.X, n, d);
  EXPECT_EQ(ds.classes, 5);
  for (int64_t i = 0; i < ds.X.n_local; ++i) {
    const int64_t g = ds.X.row_start + i;
    ASSERT_EQ(ds.X(i, 0), static_cast<double>(g)) << "row " << g;
    ASSERT_EQ(ds.X(i, 1), g == 0 ? 0.5 : -static_cast<double>(g) - 0.5) << "row " << g;
    ASSERT_EQ(ds.X(i, 2), static_cast<double>(g % 17)) << "row " << g;
  }
  const std::vector<int> all = test::all_labels(ds);
  for (int64_t g = 0; g < n; ++g) ASSERT_EQ(all[static_cast<size_t>(g)], g % 5);
}

TEST(CsvReader, RejectsARaggedRowNamingFileAndLine) {
  TempDir dir;
  expect_file_error(dir, "ragged.csv", "0,1,2,3,4\n1,1,2,3,4\n1,1,2,3\n",
                    io::Format::csv, ":3: expected 5 fields (label + 4 values), found 4");
}

TEST(CsvReader, RejectsAValueThatIsNotANumber) {
  TempDir dir;
  expect_file_error(dir, "abc.csv", "0,1,2\n\n1,abc,2\n", io::Format::csv, ":3: value 'abc' is not a number");
  expect_file_error(dir, "empty_field.csv", "0,1,2\n1,,2\n", io::Format::csv, ":2: value '' is not a number");
  expect_file_error(dir, "trailing.csv", "0,1,2\n1,2x,2\n", io::Format::csv, ":2: value '2x' is not a number");
}

TEST(CsvReader, RejectsNanAndInfValuesNamingTheColumn) {
  TempDir dir;
  expect_file_error(dir, "nan.csv", "0,1,2,3\n1,1,2,nan\n", io::Format::csv, ":2: NaN/Inf value in column 4");
  expect_file_error(dir, "inf.csv", "0,1,2,3\n1,-inf,2,3\n", io::Format::csv, ":2: NaN/Inf value in column 2");
  expect_file_error(dir, "overflow.csv", "0,1,2,3\n1,1,1e999,3\n", io::Format::csv, ":2: NaN/Inf value in column 3");
  // Finite, but its square overflows the fit's sums (kMaxAbsValue = 2^448).
  expect_file_error(dir, "huge.csv", "0,1,2,3\n1,1,-1e308,3\n", io::Format::csv,
                    ":2: value in column 3 = -1e+308; expected |x| <= 7.3e+134");
}

TEST(CsvReader, RejectsFractionalLabelsAndANameAmongIntegers) {
  // -1 and a name alone are labels now (unlabeled; a class name): see Labels.* in
  // parallel_io_test.cpp. A fraction is never a class, a name among integers is a mistake.
  TempDir dir;
  expect_read_error(dir.write("frac.csv", "0,1\n1.5,2\n"), io::Format::csv, ":2: label '1.5' is a fractional number");
  expect_read_error(dir.write("word.csv", "0,1\nsetosa,1\n1,1\n"), io::Format::csv,
                    ":2: label 'setosa' is a name among 2 integer labels");
}

TEST(CsvReader, RejectsEmptyFilesAndFilesWithOnlyLabels) {
  TempDir dir;
  expect_file_error(dir, "empty.csv", "", io::Format::csv, ": empty file (no samples)");
  expect_file_error(dir, "blank.csv", "\n  \n\r\n", io::Format::csv, ": empty file (no samples)");
  expect_file_error(dir, "labels_only.csv", "0\n1\n", io::Format::csv, ":1: expected a label and at least one value");
}

TEST(CsvReader, ReadsValuesWithoutALabelColumnPlainOrGzippedWithNoLabels) {
  // --no-labels: every field is a value; the data set has no labels and no classes. The
  // same matrix as iris with its label column, by byte ranges and through rank 0 (gzip).
  TempDir dir;
  std::ifstream in(test::data_path("iris.csv"));
  std::string line, values;
  while (std::getline(in, line)) values += line.substr(line.find(',') + 1) + "\n";
  const io::Dataset labeled = io::read_dataset(test::data_path("iris.csv"), io::Format::csv, MPI_COMM_WORLD);
  io::ReadOptions no_labels;
  no_labels.no_labels = true;
  for (const bool gz : {false, true}) {
    const std::string p = dir.write(gz ? "values.csv.gz" : "values.csv", values, gz);
    const io::Dataset ds = io::read_dataset(p, io::Format::automatic, MPI_COMM_WORLD, no_labels);
    expect_block_layout(ds.X, 150, 4);
    EXPECT_FALSE(ds.labeled()) << (gz ? "gzip" : "plain");
    EXPECT_EQ(ds.classes, 0);
    EXPECT_EQ(ds.X.v, labeled.X.v);
  }
  // One value per line is a matrix of one column; a bad value names its column from 1.
  const std::string one = dir.write("one.csv", "1.5\n2\n");
  EXPECT_EQ(io::read_dataset(one, io::Format::csv, MPI_COMM_WORLD, no_labels).X.cols, 1);
  const std::string bad = dir.write("bad.csv", "1,2\n3,x\n");
  try {
    io::read_dataset(bad, io::Format::csv, MPI_COMM_WORLD, no_labels);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(bad + ":2: value 'x' is not a number"));
  }
  // Without the option, a file of values names its first value as a bad label and says why.
  expect_read_error(dir.file("values.csv"), io::Format::csv,
                    "label '5.1' is a fractional number; expected an integer class, a name or an unlabeled marker ('', '?', 'NA', '-1'; --label-type string reads it as a name); column 1 was taken as the label: --label-column names the label column, --no-labels reads data without one");
  // Other formats keep their labels where they are: the option is refused.
  try {
    io::read_dataset(test::data_path("iris.libsvm"), io::Format::automatic, MPI_COMM_WORLD, no_labels);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("--no-labels: only for CSV data"));
  }
}

TEST(CsvReader, ReportsAMissingFileOrADirectory) {
  TempDir dir;
  const std::string p = dir.file("missing.csv");
  expect_read_error(p, io::Format::csv, "cannot open '" + p + "': No such file or directory");
  expect_read_error(dir.path(), io::Format::csv, "'" + dir.path() + "': Is a directory");
}

// ------------------------------------------------------------------------------------------
// LIBSVM
// ------------------------------------------------------------------------------------------

TEST(LibsvmReader, GivesTheSameMatrixAndLabelsAsTheCsvReader) {
  for (const char* name : {"iris", "wine"}) {
    SCOPED_TRACE(name);
    const io::Dataset a = io::read_dataset(test::data_path(std::string(name) + ".csv"), io::Format::automatic, MPI_COMM_WORLD);
    const io::Dataset b = io::read_dataset(test::data_path(std::string(name) + ".libsvm"), io::Format::automatic, MPI_COMM_WORLD);
    EXPECT_EQ(a.X.n_global, b.X.n_global);
    EXPECT_EQ(a.X.cols, b.X.cols);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.classes, b.classes);
    EXPECT_EQ(test::max_abs_diff(allgather(a.X), allgather(b.X)), 0.0);
  }
}

TEST(LibsvmReader, FillsOmittedFeaturesWithZerosAndTakesDFromTheLargestIndex) {
  TempDir dir;
  const std::string p =
      dir.write("sparse.svm", "1 2:3.5\n0 1:1 5:-2 # comment\r\n2\n+1 qid:3 3:0.25\n\n");
  EXPECT_EQ(io::detect_format(p), io::Format::libsvm);
  const io::Dataset ds = io::read_dataset(p, io::Format::automatic, MPI_COMM_WORLD);
  expect_block_layout(ds.X, 4, 5);
  EXPECT_EQ(test::all_labels(ds), (std::vector<int>{1, 0, 2, 1}));
  EXPECT_EQ(ds.classes, 3);
  const Dense A = allgather(ds.X);
  Dense E(4, 5);
  E(0, 1) = 3.5;
  E(1, 0) = 1;
  E(1, 4) = -2;
  E(3, 2) = 0.25;
  EXPECT_EQ(test::max_abs_diff(A, E), 0.0);
}

TEST(LibsvmReader, ReadsGzipCompressedFiles) {
  TempDir dir;
  std::ifstream in(test::data_path("wine.libsvm"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string p = dir.write("wine.libsvm.gz", text.str(), true);
  EXPECT_EQ(io::detect_format(p), io::Format::libsvm);
  const io::Dataset gz = io::read_dataset(p, io::Format::automatic, MPI_COMM_WORLD);
  const io::Dataset plain = io::read_dataset(test::data_path("wine.csv"), io::Format::csv, MPI_COMM_WORLD);
  EXPECT_EQ(gz.labels, plain.labels);
  EXPECT_EQ(gz.X.v, plain.X.v);
}

TEST(LibsvmReader, RejectsIndicesThatAreNotStrictlyIncreasing) {
  TempDir dir;
  expect_file_error(dir, "order.libsvm", "0 1:1 2:2\n1 3:1 2:2\n",
                    io::Format::libsvm, ":2: feature indices must be strictly increasing (2 after 3)");
  expect_file_error(dir, "dup.libsvm", "0 1:1 1:2\n",
                    io::Format::libsvm, ":1: feature indices must be strictly increasing (1 after 1)");
}

TEST(LibsvmReader, RejectsIndicesBelowOneAndMalformedPairs) {
  TempDir dir;
  expect_file_error(dir, "zero.libsvm", "0 1:1\n1 0:2\n",
                    io::Format::libsvm, ":2: feature index '0' is not an integer >= 1");
  expect_file_error(dir, "pair.libsvm", "0 1:1 7\n", io::Format::libsvm, ":1: expected 'index:value', found '7'");
  expect_file_error(dir, "val.libsvm", "0 1:1\n0 1:x\n", io::Format::libsvm, ":2: value 'x' is not a number");
  expect_file_error(dir, "nan.libsvm", "0 1:1 4:nan\n", io::Format::libsvm, ":1: NaN/Inf value in feature 4");
}

TEST(LibsvmReader, RejectsANameAmongIntegerLabelsAndEmptyFiles) {
  TempDir dir;
  expect_read_error(dir.write("neg.libsvm", "1 1:1\nx 1:2\n2 1:3\n"), io::Format::libsvm,
                    ":2: label 'x' is a name among 2 integer labels");
  expect_file_error(dir, "empty.libsvm", "\n", io::Format::libsvm, ": empty file (no samples)");
  expect_file_error(dir, "nofeat.libsvm", "1\n0\n", io::Format::libsvm, ": no feature values in any line");
}

// ------------------------------------------------------------------------------------------
// IDX
// ------------------------------------------------------------------------------------------

TEST(IdxReader, ReadsAnImagesFileWithItsLabelsFilePlainOrGzipped) {
  for (bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "plain");
    TempDir dir;
    const std::string ext = gz ? ".gz" : "";
    const int n = 7, rows = 2, cols = 3;
    const std::vector<unsigned char> lab = {3, 0, 1, 2, 3, 1, 0};
    const std::string img = dir.write("train-images-idx3-ubyte" + ext,
                                      idx_bytes(0x803, {n, rows, cols}, pixels(n, rows * cols)), gz);
    dir.write("train-labels-idx1-ubyte" + ext, idx_bytes(0x801, {n}, lab), gz);
    EXPECT_EQ(io::detect_format(img), io::Format::idx);
    const io::Dataset ds = io::read_dataset(img, io::Format::automatic, MPI_COMM_WORLD);
    expect_block_layout(ds.X, n, rows * cols);
    EXPECT_EQ(test::all_labels(ds), std::vector<int>(lab.begin(), lab.end()));
    EXPECT_EQ(ds.classes, 4);
    for (int64_t i = 0; i < ds.X.n_local; ++i)
      for (int64_t k = 0; k < 6; ++k)
        EXPECT_EQ(ds.X(i, k), static_cast<double>((7 * (ds.X.row_start + i) + k) % 256));
  }
}

TEST(IdxReader, ReadsADirectoryAsTrainingThenTestSamples) {
  TempDir dir;
  const int n1 = 5, n2 = 4, d = 4;
  dir.write("train-images-idx3-ubyte.gz", idx_bytes(0x803, {n1, 2, 2}, pixels(n1, d)), true);
  dir.write("train-labels-idx1-ubyte.gz", idx_bytes(0x801, {n1}, {0, 1, 2, 0, 1}), true);
  dir.write("t10k-images-idx3-ubyte", idx_bytes(0x803, {n2, 2, 2}, pixels(n2, d, n1)));
  dir.write("t10k-labels-idx1-ubyte", idx_bytes(0x801, {n2}, {5, 4, 3, 2}));
  EXPECT_EQ(io::detect_format(dir.path()), io::Format::idx);
  const io::Dataset ds = io::read_dataset(dir.path(), io::Format::automatic, MPI_COMM_WORLD);
  expect_block_layout(ds.X, n1 + n2, d);
  EXPECT_EQ(test::all_labels(ds), (std::vector<int>{0, 1, 2, 0, 1, 5, 4, 3, 2}));
  EXPECT_EQ(ds.classes, 6);
  for (int64_t i = 0; i < ds.X.n_local; ++i)
    for (int64_t k = 0; k < d; ++k)
      EXPECT_EQ(ds.X(i, k), static_cast<double>((7 * (ds.X.row_start + i) + k) % 256));
  // Kept as bytes (fit, evaluate, experiment): the same pixels, 1/8 of the memory, the
  // rows of both files in the same block layout.
  io::ReadOptions nt;
  nt.native_types = true;
  const io::Dataset t = io::read_dataset(dir.path(), io::Format::automatic, MPI_COMM_WORLD, nt);
  ASSERT_TRUE(t.typed);
  EXPECT_EQ(t.rows.type, ElementType::u8);
  EXPECT_EQ(t.rows.row_start, ds.X.row_start);
  ASSERT_EQ(t.rows.bytes.size(), static_cast<size_t>(ds.X.n_local * d));
  for (int64_t i = 0; i < t.rows.n_local; ++i)
    for (int64_t k = 0; k < d; ++k)
      EXPECT_EQ(t.rows.bytes[static_cast<size_t>(i * d + k)], (7 * (t.rows.row_start + i) + k) % 256);
}

TEST(IdxReader, RejectsAFileWithTheWrongMagicNumber) {
  TempDir dir;
  const std::string img = dir.write("x-images-idx3-ubyte", idx_bytes(0x801, {3}, {1, 2, 3}));
  dir.write("x-labels-idx1-ubyte", idx_bytes(0x801, {3}, {1, 2, 3}));
  expect_read_error(img, io::Format::idx, "'" + img + "': not an IDX image file (magic 0x00000801, expected 0x00000803");
  const std::string img2 = dir.write("y-images-idx3-ubyte", idx_bytes(0x803, {3, 1, 1}, {1, 2, 3}));
  const std::string lab2 = dir.write("y-labels-idx1-ubyte", idx_bytes(0x803, {3}, {1, 2, 3}));
  expect_read_error(img2, io::Format::idx, "'" + lab2 + "': not an IDX label file (magic 0x00000803");
}

TEST(IdxReader, RejectsTruncatedImagesAndLabels) {
  TempDir dir;
  for (bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "plain");
    const std::string ext = gz ? ".gz" : "";
    std::string bytes = idx_bytes(0x803, {9, 2, 2}, pixels(9, 4));
    bytes.resize(bytes.size() - 6);  // the last image and a half are missing
    const std::string prefix = gz ? "agz" : "a";
    const std::string img = dir.write(prefix + "-images-idx3-ubyte" + ext, bytes, gz);
    dir.write(prefix + "-labels-idx1-ubyte" + ext, idx_bytes(0x801, {9}, std::vector<unsigned char>(9, 1)), gz);
    expect_read_error(img, io::Format::idx, "'" + img + "': truncated (expected 9 images");
  }
  const std::string img = dir.write("b-images-idx3-ubyte", idx_bytes(0x803, {4, 1, 2}, pixels(4, 2)));
  const std::string lab = dir.write("b-labels-idx1-ubyte", idx_bytes(0x801, {4}, {1, 2}));
  expect_read_error(img, io::Format::idx, "'" + lab + "': truncated (expected 4 labels, found 2)");
  const std::string hdr = dir.write("c-images-idx3-ubyte", std::string("\0\0\x08", 3));
  dir.write("c-labels-idx1-ubyte", idx_bytes(0x801, {1}, {1}));
  expect_read_error(hdr, io::Format::idx, "'" + hdr + "': truncated IDX file (no header)");
}

TEST(IdxReader, RejectsAGzipStreamThatEndsEarly) {
  TempDir dir;
  const std::string full = dir.write("full.gz", idx_bytes(0x803, {300, 4, 4}, pixels(300, 16)), true);
  std::string gz = read_file_bytes(full);
  gz.resize(gz.size() / 2);
  const std::string img = dir.write("d-images-idx3-ubyte.gz", gz);
  dir.write("d-labels-idx1-ubyte.gz", idx_bytes(0x801, {300}, std::vector<unsigned char>(300, 0)), true);
  expect_read_error(img, io::Format::idx, "'" + img + "': truncated");
}

TEST(IdxReader, RejectsALabelCountDifferentFromTheImageCount) {
  TempDir dir;
  const std::string img = dir.write("train-images-idx3-ubyte", idx_bytes(0x803, {5, 1, 2}, pixels(5, 2)));
  const std::string lab = dir.write("train-labels-idx1-ubyte", idx_bytes(0x801, {4}, {0, 1, 0, 1}));
  expect_read_error(dir.path(), io::Format::idx,
                    "'" + lab + "' has 4 labels but '" + img + "' has 5 images");
}

TEST(IdxReader, ReportsMissingImageOrLabelFiles) {
  TempDir dir;
  expect_read_error(dir.path(), io::Format::idx,
                    "cannot open '" + dir.path() + "/train-images-idx3-ubyte[.gz]': No such file or directory");
  const std::string img = dir.write("z-images-idx3-ubyte", idx_bytes(0x803, {1, 1, 1}, {1}));
  expect_read_error(img, io::Format::idx, "cannot open '" + dir.path() + "/z-labels-idx1-ubyte'");
}

// Manual check on the real data (not run by default; about 70 000 × 784 doubles in total):
//   ssdr_tests --gtest_also_run_disabled_tests --gtest_filter='IdxReader.DISABLED_*'
TEST(IdxReader, DISABLED_ReadsFashionMnistFromItsDirectory) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " not installed";
  const double t0 = MPI_Wtime();
  const io::Dataset ds = io::read_dataset(dir, io::Format::automatic, MPI_COMM_WORLD);
  const double t = MPI_Wtime() - t0;
  expect_block_layout(ds.X, 70000, 784);
  EXPECT_EQ(ds.classes, 10);
  double mx = 0;
  for (double v : ds.X.v) mx = std::max(mx, v);
  double gmax = 0;
  MPI_Allreduce(&mx, &gmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(gmax, 255.0);
  EXPECT_LT(t, 30.0);
  if (test::rank() == 0) std::printf("fashion-mnist read in %.2f s\n", t);
}

// ------------------------------------------------------------------------------------------
// Format names
// ------------------------------------------------------------------------------------------

TEST(DatasetFormat, ParsesTheFormatNamesAndRejectsOthers) {
  EXPECT_EQ(io::parse_format("csv"), io::Format::csv);
  EXPECT_EQ(io::parse_format("libsvm"), io::Format::libsvm);
  EXPECT_EQ(io::parse_format("idx"), io::Format::idx);
  EXPECT_EQ(io::parse_format("npy"), io::Format::npy);
  EXPECT_EQ(io::parse_format("hdf5"), io::Format::hdf5);
  EXPECT_EQ(io::parse_format("auto"), io::Format::automatic);
  expect_error([] { io::parse_format("parquet"); },
               "unknown data format 'parquet' (expected csv, libsvm, idx, npy, hdf5 or auto)");
}

TEST(DatasetFormat, DetectsTheFormatFromThePath) {
  EXPECT_EQ(io::detect_format("a/b.csv"), io::Format::csv);
  EXPECT_EQ(io::detect_format("a/b.txt"), io::Format::csv);
  EXPECT_EQ(io::detect_format("b.libsvm"), io::Format::libsvm);
  EXPECT_EQ(io::detect_format("b.svmlight.gz"), io::Format::libsvm);
  EXPECT_EQ(io::detect_format("b.svm"), io::Format::libsvm);
  EXPECT_EQ(io::detect_format("x.npy"), io::Format::npy);
  EXPECT_EQ(io::detect_format("x.h5"), io::Format::hdf5);
  EXPECT_EQ(io::detect_format("x.hdf5"), io::Format::hdf5);
  EXPECT_EQ(io::detect_format("x/train-images-idx3-ubyte.gz"), io::Format::idx);
  EXPECT_EQ(io::detect_format(test::data_path("")), io::Format::idx);  // a directory
}

// ------------------------------------------------------------------------------------------
// AtomicFile
// ------------------------------------------------------------------------------------------

TEST(AtomicFile, LeavesNoFileWhenNotCommitted) {
  TempDir dir;
  const std::string p = dir.file("out" + std::to_string(test::rank()) + ".txt");
  std::string tmp;
  {
    io::AtomicFile f(p);
    tmp = f.temp_path();
    EXPECT_EQ(tmp, p + ".tmp." + std::to_string(::getpid()));
    std::fputs("partial", f.get());
    EXPECT_TRUE(std::filesystem::exists(tmp));
    EXPECT_FALSE(std::filesystem::exists(p));
  }
  EXPECT_FALSE(std::filesystem::exists(tmp));
  EXPECT_FALSE(std::filesystem::exists(p));
}

TEST(AtomicFile, CommitReplacesThePathWithTheCompleteContents) {
  TempDir dir;
  const std::string p = dir.file("out" + std::to_string(test::rank()) + ".txt");
  { std::ofstream(p) << "old"; }
  std::string tmp;
  {
    io::AtomicFile f(p);
    tmp = f.temp_path();
    std::fputs("new contents\n", f.get());
    std::ifstream in(p);
    std::string before;
    std::getline(in, before);
    EXPECT_EQ(before, "old");  // unchanged until commit
    f.commit();
  }
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "new contents");
  EXPECT_FALSE(std::filesystem::exists(tmp));
}

TEST(AtomicFile, ReportsAPathThatCannotBeCreated) {
  TempDir dir;
  const std::string p = dir.file("no/such/dir/out.txt");
  expect_error([&] { io::AtomicFile f(p); }, "cannot create '" + p + "': No such file or directory");
}

TEST(AtomicFile, ItsTemporaryFileIsRemovedByTheTerminationHandlerUntilItIsCommitted) {
  TempDir dir;
  const std::string p = dir.file("out" + std::to_string(test::rank()) + ".txt");
  {
    io::AtomicFile f(p);
    std::fputs("partial", f.get());
    std::fflush(f.get());
    ASSERT_TRUE(std::filesystem::exists(f.temp_path()));
    io::remove_temporary_files();  // what the SIGTERM handler does
    EXPECT_FALSE(std::filesystem::exists(f.temp_path()));
  }
  {
    io::AtomicFile f(p);
    std::fputs("whole", f.get());
    f.commit();
  }
  io::remove_temporary_files();  // a committed file is no longer temporary
  EXPECT_TRUE(std::filesystem::exists(p));
}

TEST(TemporaryFileGuard, RegistersANameOnlyWhileItLivesAndNeverTheEmptyName) {
  TempDir dir;
  const std::string a = dir.file("a" + std::to_string(test::rank()) + ".tmp.1");
  const std::string b = dir.file("b" + std::to_string(test::rank()) + ".tmp.1");
  auto touch = [](const std::string& p) { std::ofstream(p) << "x"; };
  touch(a);
  touch(b);
  {
    io::TemporaryFileGuard ga(a), none("");
    io::TemporaryFileGuard gb(b);
    gb.release();
    io::remove_temporary_files();
  }
  EXPECT_FALSE(std::filesystem::exists(a));
  EXPECT_TRUE(std::filesystem::exists(b));
  touch(a);
  io::remove_temporary_files();  // the guard of `a` is gone with its scope
  EXPECT_TRUE(std::filesystem::exists(a));
}

TEST(RequireFreeSpace, RefusesOnEveryRankAnOutputLargerThanItsFileSystemAndPassesDevices) {
  TempDir dir;
  const std::string p = dir.file("huge.npy");
  const int64_t avail = io::free_bytes(p);
  ASSERT_GE(avail, 0);
  EXPECT_NO_THROW(io::require_free_space(p, 1, MPI_COMM_WORLD));
  // More than the file system has free (an exabyte more): refused on every rank, naming it.
  expect_error([&] { io::require_free_space(p, avail + (int64_t{1} << 60), MPI_COMM_WORLD); },
               "cannot write '" + p + "': it needs ");
  EXPECT_NO_THROW(io::require_free_space("/dev/null", int64_t{1} << 62, MPI_COMM_WORLD));
  EXPECT_FALSE(std::filesystem::exists(p));
}

TEST(AtomicFile, WriteTextAtomicWritesFromRankZeroOnly) {
  TempDir dir;
  const std::string p = dir.file("text.json");
  io::write_text_atomic(p, "{\"a\": 1}\n");
  MPI_Barrier(MPI_COMM_WORLD);
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "{\"a\": 1}\n");
}

// ------------------------------------------------------------------------------------------
// Embedding output
// ------------------------------------------------------------------------------------------

namespace {

/// Y with an unbalanced layout (rank r holds r+1 rows... or r rows when `with_empty`),
/// entry (g, j) = (g + 1) / 3 · (j + 1) + 1e-300 · j, row g global.
DistMatrix embedding_fixture(int64_t m, bool with_empty) {
  const int64_t local = with_empty ? test::rank() : test::rank() + 1;
  DistMatrix Y = make_dist_local(MPI_COMM_WORLD, local, m);
  for (int64_t i = 0; i < Y.n_local; ++i)
    for (int64_t j = 0; j < m; ++j)
      Y(i, j) = (static_cast<double>(Y.row_start + i) + 1.0) / 3.0 * static_cast<double>(j + 1) -
                (j == 2 ? 1e-300 : 0.0);
  return Y;
}

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(EmbeddingWriter, WritesCsvInGlobalRowOrderThatReadsBackExactly) {
  TempDir dir;
  for (bool with_empty : {false, true}) {
    const DistMatrix Y = embedding_fixture(3, with_empty);
    const std::string p = dir.file(with_empty ? "y0.csv" : "y.csv");
    io::write_embedding(Y, p);
    MPI_Barrier(MPI_COMM_WORLD);
    const Dense ref = allgather(Y);
    std::ifstream in(p);
    std::string line;
    // The header names the id and the m columns.
    std::string header = "id";
    for (int64_t j = 0; j < ref.cols; ++j) header += ",y" + std::to_string(j + 1);
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line, header);
    int64_t i = 0;
    while (std::getline(in, line)) {
      ASSERT_LT(i, ref.rows);
      std::stringstream ss(line);
      std::string tok;
      ASSERT_TRUE(std::getline(ss, tok, ','));
      EXPECT_EQ(tok, std::to_string(i));  // the sample's index
      int64_t j = 0;
      while (std::getline(ss, tok, ',')) {
        ASSERT_LT(j, ref.cols);
        EXPECT_EQ(std::strtod(tok.c_str(), nullptr), ref(i, j)) << "row " << i << " col " << j;
        ++j;
      }
      EXPECT_EQ(j, ref.cols);
      ++i;
    }
    EXPECT_EQ(i, ref.rows);
    EXPECT_FALSE(std::filesystem::exists(p + ".tmp." + std::to_string(::getpid())));
  }
}

TEST(EmbeddingWriter, WritesNpyWithAPaddedHeaderAndExactValues) {
  TempDir dir;
  const DistMatrix Y = embedding_fixture(3, false);
  const std::string p = dir.file("y.npy");
  io::write_embedding(Y, p);
  MPI_Barrier(MPI_COMM_WORLD);
  const Dense ref = allgather(Y);
  const std::string bytes = read_all(p);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  const std::string header = bytes.substr(10, hlen);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_THAT(header, HasSubstr("'descr': '<f8'"));
  EXPECT_THAT(header, HasSubstr("'fortran_order': False"));
  EXPECT_THAT(header, HasSubstr("'shape': (" + std::to_string(ref.rows) + ", 3)"));
  ASSERT_EQ(bytes.size(), 10 + hlen + static_cast<size_t>(ref.rows * 3) * 8);
  for (int64_t i = 0; i < ref.rows; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      double v = 0;
      std::memcpy(&v, bytes.data() + 10 + hlen + (i * 3 + j) * 8, 8);
      EXPECT_EQ(v, ref(i, j)) << "row " << i << " col " << j;
    }
}

TEST(EmbeddingWriter, ThrowsOnEveryRankWhenTheDirectoryDoesNotExist) {
  TempDir dir;
  const DistMatrix Y = embedding_fixture(2, false);
  for (const char* name : {"missing/y.csv", "missing/y.npy"}) {
    const std::string p = dir.file(name);
    std::string msg;
    try {
      io::write_embedding(Y, p);
      ADD_FAILURE() << "no error for " << p;
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_THAT(msg, HasSubstr("cannot create '" + p + "': No such file or directory"));
    expect_same_everywhere(msg);
  }
}
