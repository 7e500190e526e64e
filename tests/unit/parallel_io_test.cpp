// Tests of the parallel readers and writers: plain CSV/LIBSVM by byte ranges (MPI-IO), NPY
// at each rank's offset, HDF5 hyperslabs, and the parallel NPY/HDF5 writers. Each is
// compared bit for bit with a serial reader (the rank-0 stream, or a read on MPI_COMM_SELF)
// at every rank count, and its errors must name the same (first) bad line on every count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "io/npy_internal.hpp"
#include "io/reader_internal.hpp"
#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/io/output.hpp"
#include "support.hpp"

using namespace ssdr;
using ::testing::HasSubstr;

namespace {

class Dir : public test::TempDir {
 public:
  Dir() : test::TempDir("pio") {}
  /// Rank 0 writes `bytes` to `name`; then every rank continues.
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string p = file(name);
    if (test::rank() == 0) {
      std::ofstream out(p, std::ios::binary);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return p;
  }
};

std::string file_text(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The error message of f() (which must throw ssdr::Error), checked to be one line and the
/// same on every rank.
std::string error_of(const std::function<void()>& f) {
  std::string msg;
  try {
    f();
    ADD_FAILURE() << "no ssdr::Error thrown";
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root(static_cast<size_t>(len), '\0');
  if (test::rank() == 0) root = msg;
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  EXPECT_EQ(msg, root) << "the message differs between ranks";
  return msg;
}

/// Both readers of a text file agree exactly: matrix, labels, classes, layout.
void expect_same_as_streamed(const std::string& p, io::Format f) {
  SCOPED_TRACE(p);
  const io::Dataset a = io::detail::read_text_ranges(p, f, MPI_COMM_WORLD);
  const io::Dataset b = io::detail::read_text_streamed(p, f, MPI_COMM_WORLD);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.classes, b.classes);
  EXPECT_EQ(a.X.n_global, b.X.n_global);
  EXPECT_EQ(a.X.cols, b.X.cols);
  EXPECT_EQ(a.X.row_start, b.X.row_start);
  EXPECT_EQ(a.X.v, b.X.v);  // bit for bit (== on doubles: no NaN can be read)
}

/// An NPY v1.0 file: header for `descr` and `shape` ("(3, 2)"), then the raw bytes.
std::string npy(const std::string& descr, const std::string& shape, const std::string& raw,
                const std::string& fortran = "False") {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string h("\x93NUMPY\x01\x00", 8);
  h.push_back(static_cast<char>(dict.size() & 0xff));
  h.push_back(static_cast<char>(dict.size() >> 8));
  return h + dict + raw;
}

template <class T>
std::string raw_bytes(const std::vector<T>& v, bool big_endian = false) {
  std::string s(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  if (big_endian)
    for (size_t k = 0; k < v.size(); ++k) std::reverse(s.begin() + k * sizeof(T), s.begin() + (k + 1) * sizeof(T));
  return s;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Text by byte ranges
// ------------------------------------------------------------------------------------------

TEST(ByteRangeReader, GivesTheStreamedReadersMatrixAndLabelsForEveryTestDataSet) {
  for (const char* name : {"iris.csv", "wine.csv", "digits.csv", "breast_cancer.csv"})
    expect_same_as_streamed(test::data_path(name), io::Format::csv);
  for (const char* name : {"iris.libsvm", "wine.libsvm"}) expect_same_as_streamed(test::data_path(name), io::Format::libsvm);
}

TEST(ByteRangeReader, HandlesLinesLongerThanARanksShareBlankLinesCrlfAndAByteOrderMark) {
  Dir dir;
  // Three lines of ~2000 bytes each: with 4 ranks some byte ranges hold no line start.
  std::string wide;
  for (int i = 0; i < 3; ++i) {
    wide += std::to_string(i);
    for (int j = 0; j < 400; ++j) wide += "," + std::to_string(i * 1000 + j) + ".25";
    wide += "\n";
  }
  expect_same_as_streamed(dir.write("wide.csv", wide), io::Format::csv);
  // Blank and whitespace-only lines, CRLF, a BOM and no final newline, at every boundary.
  std::string mixed = "\xEF\xBB\xBF";
  for (int i = 0; i < 60; ++i) {
    mixed += std::to_string(i % 3) + ", " + std::to_string(i) + " ,-" + std::to_string(i) + "e-3" + (i % 2 ? "\r\n" : "\n");
    if (i % 7 == 0) mixed += "\n";
    if (i % 11 == 0) mixed += "  \t \r\n";
  }
  mixed += "1,5,6";
  expect_same_as_streamed(dir.write("mixed.csv", mixed), io::Format::csv);
  std::string sparse;
  for (int i = 0; i < 40; ++i) sparse += std::to_string(i % 4) + " " + std::to_string(1 + i % 9) + ":" + std::to_string(i) + ".5 # c\n\n";
  expect_same_as_streamed(dir.write("s.libsvm", sparse), io::Format::libsvm);
  // One line only.
  expect_same_as_streamed(dir.write("one.csv", "0,1,2,3\n"), io::Format::csv);
}

TEST(ByteRangeReader, NamesTheFirstBadLineOfTheFileOnEveryRankCount) {
  Dir dir;
  std::string text;
  for (int i = 1; i <= 400; ++i) {
    if (i == 250)
      text += "1,2\n";  // ragged
    else if (i == 390)
      text += "1,nan,3\n";
    else
      text += std::to_string(i % 2) + "," + std::to_string(i) + ",7\n";
  }
  const std::string p = dir.write("bad.csv", text);
  EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD); }),
              HasSubstr(p + ":250: expected 3 fields (label + 2 values), found 2"));
  // A name among integer labels (an unknown missing-value marker): the line of its first
  // occurrence, whichever rank holds it.
  std::string labels;
  for (int i = 1; i <= 300; ++i) labels += std::string(i == 123 || i == 280 ? "N/A" : i % 2 ? "0" : "1") + ",1\n";
  const std::string q = dir.write("label.csv", labels);
  EXPECT_THAT(error_of([&] { io::read_dataset(q, io::Format::csv, MPI_COMM_WORLD); }),
              HasSubstr(q + ":123: label 'N/A' is a name among 298 integer labels"));
  // LIBSVM: d from the largest index of any rank's lines.
  std::string sv;
  for (int i = 1; i <= 200; ++i) sv += "0 " + std::to_string(i == 170 ? 77 : 1) + ":1\n";
  const io::Dataset s = io::read_dataset(dir.write("d.libsvm", sv), io::Format::libsvm, MPI_COMM_WORLD);
  EXPECT_EQ(s.X.cols, 77);
}

TEST(ByteRangeReader, RejectsAnEmptyOrBlankFile) {
  Dir dir;
  for (const char* text : {"", "\n\n  \n"}) {
    const std::string p = dir.write("e.csv", text);
    EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD); }),
                HasSubstr(p + ": empty file (no samples)"));
  }
}

// ------------------------------------------------------------------------------------------
// Labels as users write them (header, label column, names, unlabeled markers)
// ------------------------------------------------------------------------------------------

namespace {

/// Every rank's labels gathered in row order (a test's view of the whole file).
std::vector<int> all_labels(const io::Dataset& ds) {
  return allgatherv(ds.labels, MPI_COMM_WORLD);
}

}  // namespace

TEST(Labels, AHeaderNamedLabelColumnNamesAndMarkersReadAsPythonsClassesWouldOnAnyRankCount) {
  Dir dir;
  // 40 rows: label column last, named; names; empty, ?, NA and -1 mark unlabeled rows.
  const char* names[] = {"virginica", "setosa", "", "versicolor", "?", "setosa", "NA", "-1"};
  std::string text = "a,b,species\n";
  std::vector<int> expected;
  for (int i = 0; i < 40; ++i) {
    const std::string name = names[i % 8];
    text += std::to_string(i) + "," + std::to_string(2 * i) + ".5," + name + "\n";
    // np.unique order: setosa 0, versicolor 1, virginica 2; the markers -1.
    expected.push_back(name == "setosa" ? 0 : name == "versicolor" ? 1 : name == "virginica" ? 2 : -1);
  }
  const std::string p = dir.write("named.csv", text);
  io::ReadOptions o;
  o.label.column = "species";
  for (bool streamed : {false, true}) {
    SCOPED_TRACE(streamed ? "streamed" : "byte ranges");
    const io::Dataset ds = streamed ? io::detail::read_text_streamed(p, io::Format::csv, MPI_COMM_WORLD, true, o.label)
                                    : io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o);
    EXPECT_EQ(ds.class_names, (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
    EXPECT_EQ(ds.classes, 3);
    EXPECT_FALSE(ds.integer_labels);
    EXPECT_EQ(ds.X.n_global, 40);
    EXPECT_EQ(ds.X.cols, 2);
    EXPECT_EQ(all_labels(ds), expected);
    // The values are the other columns, in order.
    for (int64_t i = 0; i < ds.X.n_local; ++i) {
      EXPECT_EQ(ds.X.row(i)[0], static_cast<double>(ds.X.row_start + i));
      EXPECT_EQ(ds.X.row(i)[1], 2.0 * static_cast<double>(ds.X.row_start + i) + 0.5);
    }
  }
  // The same file by column number, and a tab-separated copy, give the same labels.
  o.label.column = "3";
  EXPECT_EQ(all_labels(io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o)), expected);
  std::string tsv = text;
  std::replace(tsv.begin(), tsv.end(), ',', '\t');
  EXPECT_EQ(all_labels(io::read_dataset(dir.write("named.tsv", tsv), io::Format::csv, MPI_COMM_WORLD, o)), expected);
}

TEST(Labels, AnIdColumnIsNoFeatureAndItsIdsMoveWithTheirRows) {
  Dir dir;
  // id first (names of varying length), then two values, then the label; 37 rows so the
  // byte ranges and the block layout differ on 2-4 ranks.
  std::string text = "name,u,v,kind\n";
  std::vector<std::string> want;
  for (int i = 0; i < 37; ++i) {
    want.push_back("row-" + std::string(static_cast<size_t>(i % 5), 'x') + std::to_string(i));
    text += want.back() + "," + std::to_string(i) + "," + std::to_string(-i) + "," + (i % 3 ? "a" : "b") + "\n";
  }
  io::ReadOptions o;
  o.label.column = "kind";
  o.label.id_column = "name";
  const io::Dataset ds = io::read_dataset(dir.write("ids.csv", text), io::Format::csv, MPI_COMM_WORLD, o);
  EXPECT_EQ(ds.X.cols, 2);
  EXPECT_EQ(static_cast<int64_t>(ds.ids.size()), ds.X.n_local);
  std::vector<char> mine;
  for (const std::string& id : ds.ids) {
    mine.insert(mine.end(), id.begin(), id.end());
    mine.push_back('\n');
  }
  std::string all;
  for (char ch : allgatherv(mine, MPI_COMM_WORLD)) all.push_back(ch);
  std::string expected;
  for (const std::string& id : want) expected += id + "\n";
  EXPECT_EQ(all, expected);
  for (int64_t i = 0; i < ds.X.n_local; ++i) EXPECT_EQ(ds.X.row(i)[1], -static_cast<double>(ds.X.row_start + i));
  EXPECT_EQ(ds.class_names, (std::vector<std::string>{"a", "b"}));
  // The same column as the labels: refused, naming both options.
  o.label.id_column = "4";
  EXPECT_THAT(error_of([&] { io::read_dataset(dir.file("ids.csv"), io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr("--id-column 4 and --label-column kind name the same column"));
}

TEST(Labels, IntegerLabelsAreCodedInOrderOfValueWithGapsClosed) {
  Dir dir;
  // Labels 10, 2, 7 and -1 (unlabeled): classes "2", "7", "10" (by value, not as text).
  const int raw[] = {10, 2, -1, 7, 2, 10};
  std::string text;
  std::vector<int> expected;
  for (int i = 0; i < 30; ++i) {
    const int v = raw[i % 6];
    text += std::to_string(v) + "," + std::to_string(i) + "\n";
    expected.push_back(v == 2 ? 0 : v == 7 ? 1 : v == 10 ? 2 : -1);
  }
  const io::Dataset ds = io::read_dataset(dir.write("int.csv", text), io::Format::csv, MPI_COMM_WORLD);
  EXPECT_EQ(ds.class_names, (std::vector<std::string>{"2", "7", "10"}));
  EXPECT_TRUE(ds.integer_labels);
  EXPECT_EQ(all_labels(ds), expected);
  // LIBSVM: the same markers ('?' here, and a line without a label field).
  std::string sv;
  for (int i = 0; i < 24; ++i) sv += std::string(i % 4 == 0 ? "?" : i % 4 == 1 ? "" : i % 4 == 2 ? "3" : "5") + " 1:" + std::to_string(i) + "\n";
  const io::Dataset s = io::read_dataset(dir.write("m.libsvm", sv), io::Format::libsvm, MPI_COMM_WORLD);
  std::vector<int> want;
  for (int i = 0; i < 24; ++i) want.push_back(i % 4 < 2 ? -1 : i % 4 == 2 ? 0 : 1);
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"3", "5"}));
  EXPECT_EQ(all_labels(s), want);
}

TEST(Labels, NpyStringAndFloatLabelArraysGiveNamesAndNanIsUnlabeled) {
  Dir dir;
  std::vector<double> x(12, 1.0);
  const std::string p = dir.write("x.npy", npy("<f8", "(6, 2)", raw_bytes(x)));
  // '<U3' (UTF-32): "b", "a", "", "b", "é", "a"; '' is unlabeled.
  std::vector<uint32_t> u = {'b', 0, 0, 'a', 0, 0, 0, 0, 0, 'b', 0, 0, 0xE9, 0, 0, 'a', 0, 0};
  io::ReadOptions o;
  o.labels = dir.write("yu.npy", npy("<U3", "(6,)", raw_bytes(u)));
  const io::Dataset a = io::read_dataset(p, io::Format::npy, MPI_COMM_WORLD, o);
  EXPECT_EQ(a.class_names, (std::vector<std::string>{"a", "b", "\xC3\xA9"}));  // code point order
  EXPECT_EQ(all_labels(a), (std::vector<int>{1, 0, -1, 1, 2, 0}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  o.labels = dir.write("yf.npy", npy("<f8", "(6,)", raw_bytes(std::vector<double>{4, nan, 4, 1, -1, 1})));
  const io::Dataset b = io::read_dataset(p, io::Format::npy, MPI_COMM_WORLD, o);
  EXPECT_EQ(b.class_names, (std::vector<std::string>{"1", "4"}));
  EXPECT_EQ(all_labels(b), (std::vector<int>{1, -1, 1, 0, -1, 0}));
}

TEST(Labels, BadLabelFilesNameTheFileLineAndWhatWasExpected) {
  Dir dir;
  const std::string hdr = dir.write("hdr.csv", "x,y,label\n");
  io::ReadOptions o;
  EXPECT_THAT(error_of([&] { io::read_dataset(hdr, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(hdr + ": a header line alone (line 1), no samples"));
  const std::string p = dir.write("h.csv", "x,y,species\n1,2,a\n3,4,b\n5,6,7\n");
  o.label.column = "kind";
  EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr("--label-column kind: no such column in the header of " + p + ":1 ('x', 'y', 'species')"));
  o.label.column = "4";
  EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr("--label-column 4: " + p + ":1 has 3 fields"));
  o.label.column = "species";
  o.label.type = io::LabelOptions::Type::integer;
  EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(p + ":2: label 'a' is not an integer (--label-type integer)"));
  o.label.type = io::LabelOptions::Type::automatic;
  EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(p + ":4: label '7' is an integer among 2 names"));
  o.label.type = io::LabelOptions::Type::string;  // every label a name: "7" too
  EXPECT_EQ(io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o).class_names,
            (std::vector<std::string>{"7", "a", "b"}));
  // A value file read with a label column: a fractional "label" is refused, not a class.
  const std::string v = dir.write("v.csv", "0.5,1\n0.25,2\n");
  EXPECT_THAT(error_of([&] { io::read_dataset(v, io::Format::csv, MPI_COMM_WORLD); }),
              HasSubstr(v + ":1: label '0.5' is a fractional number"));
}

// ------------------------------------------------------------------------------------------
// RFC 4180: quoted fields as R, pandas and spreadsheets write them
// ------------------------------------------------------------------------------------------

namespace {

/// A field quoted as RFC 4180 writes it: inner quotes doubled.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    out.push_back(ch);
    if (ch == '"') out.push_back('"');
  }
  return out + "\"";
}

}  // namespace

TEST(Rfc4180, QuotedFieldsWithDelimitersQuotesAndLineBreaksReadAlikeOnEveryRankCountAndBothReaders) {
  Dir dir;
  // Names with a comma, a doubled quote, LF and CRLF line breaks; long ones, so that on 2-4
  // ranks byte-range boundaries fall inside quoted fields (and inside a record's later lines).
  const std::vector<std::string> names = {"bus, \"double\" deck", std::string("car\nwith\n") + std::string(300, 'x'),
                                          "van\r\nline two", "plain"};
  for (const std::string eol : {"\n", "\r\n"}) {
    SCOPED_TRACE(eol == "\n" ? "LF" : "CRLF and a BOM");
    std::string text = (eol == "\n" ? "" : "\xEF\xBB\xBF") + std::string("\"x, first\",\"y \"\"2\"\"\",label") + eol;
    std::vector<int> want;
    for (int i = 0; i < 45; ++i) {
      const int k = i % 5;  // class 4: unlabeled (an empty quoted field, or an empty field)
      // A quoted number is a number; blanks around a quoted field are dropped.
      text += (i % 2 ? quoted(std::to_string(i) + ".5") : std::to_string(i) + ".5") + "," + std::to_string(-i) + ", " +
              (k < 4 ? quoted(names[static_cast<size_t>(k)]) : i % 2 ? "\"\"" : "") + " " + eol;
      // Sorted byte-wise as Python's classes_: "bus..." 0, "car..." 1, "plain" 2, "van..." 3.
      want.push_back(k == 0 ? 0 : k == 1 ? 1 : k == 2 ? 3 : k == 3 ? 2 : -1);
    }
    const std::string p = dir.write("q.csv", text);
    io::ReadOptions o;
    o.label.column = "label";
    for (bool streamed : {false, true}) {
      SCOPED_TRACE(streamed ? "streamed" : "byte ranges");
      const io::Dataset ds = streamed ? io::detail::read_text_streamed(p, io::Format::csv, MPI_COMM_WORLD, true, o.label)
                                      : io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o);
      EXPECT_EQ(ds.class_names, (std::vector<std::string>{names[0], names[1], names[3], names[2]}));
      EXPECT_EQ(ds.X.n_global, 45);
      EXPECT_EQ(ds.X.cols, 2);
      EXPECT_EQ(all_labels(ds), want);
      for (int64_t i = 0; i < ds.X.n_local; ++i) {
        EXPECT_EQ(ds.X.row(i)[0], static_cast<double>(ds.X.row_start + i) + 0.5);
        EXPECT_EQ(ds.X.row(i)[1], -static_cast<double>(ds.X.row_start + i));
      }
    }
  }
}

TEST(Rfc4180, MalformedQuotingNamesTheRecordsFirstLineOnEveryRankCount) {
  Dir dir;
  // A quote inside an unquoted field (record 201), text after a closing quote (record 151), and
  // a quote never closed (the last record): each refused at its record's first line, the
  // file's first bad one, though a stray quote shifts the quote parity of every later byte.
  const auto file = [](int bad_line, const std::string& bad) {
    std::string text = "a,b,label\n";
    for (int i = 2; i <= 300; ++i)
      text += i == bad_line ? bad + "\n" : std::to_string(i) + ",\"" + std::to_string(i) + "\",\"k\n" + std::to_string(i % 2) + "\"\n";
    return text;
  };
  // Each good record spans two lines: record i starts at line 2i − 2 (line 2 is record 2).
  io::ReadOptions o;
  o.label.column = "label";
  const std::string a = dir.write("a.csv", file(201, "1,5\",x"));
  EXPECT_THAT(error_of([&] { io::read_dataset(a, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(a + ":400: field 2 ('5\"') has a double quote inside an unquoted field"));
  const std::string b = dir.write("b.csv", file(151, "1,\"5\"x,y"));
  EXPECT_THAT(error_of([&] { io::read_dataset(b, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(b + ":300: field 2 has text after its closing double quote"));
  const std::string c = dir.write("c.csv", file(300, "1,2,\"never closed"));
  EXPECT_THAT(error_of([&] { io::read_dataset(c, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(c + ":598: field 3 opens a double quote that is never closed"));
}

TEST(Labels, NamesThatCouldLieAreRefusedWithTheFileAndLine) {
  Dir dir;
  io::ReadOptions o;
  o.label.column = "label";
  const auto with_label = [&](const std::string& name, const std::string& label) {
    return dir.write(name, "a,b,label\n1,2,x\n3,4," + label + "\n5,6,y\n");
  };
  for (const char* word : {"inf", "-Infinity", "NaN"}) {
    const std::string p = with_label("inf.csv", word);
    EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o); }),
                HasSubstr(p + ":3: label '" + std::string(word) + "' is not a finite number"));
  }
  const std::string nul = with_label("nul.csv", std::string("y\0z", 3));
  EXPECT_THAT(error_of([&] { io::read_dataset(nul, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(nul + ":3: label has a NUL byte (byte 2 of the field)"));
  const std::string utf = with_label("utf.csv", "caf\xC3");
  EXPECT_THAT(error_of([&] { io::read_dataset(utf, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(utf + ":3: label is not valid UTF-8 (byte 4 of the field)"));
  const std::string dup = dir.write("dup.csv", "label,b,label\n1,2,x\n3,4,y\n");
  EXPECT_THAT(error_of([&] { io::read_dataset(dup, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(dup + ":1: the header names column 1 and column 3 both 'label'; expected unique column names"));
  o.label.column = "Label";
  const std::string p = with_label("case.csv", "y");
  EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr("--label-column Label: no such column in the header of " + p + ":1; names match case: did you mean 'label'?"));
  // Forgetting --label-column: the message says column 1 was taken as the label.
  const std::string last = dir.write("last.csv", "a,b,label\n1,2,\n3,4,x\n");
  EXPECT_THAT(error_of([&] { io::read_dataset(last, io::Format::csv, MPI_COMM_WORLD); }),
              HasSubstr(last + ":2: value '' is not a number (column 1 was taken as the label; --label-column"));
  // A headerless first row with a missing value is data, not a header.
  const std::string miss = dir.write("miss.csv", "0,?,1\n1,2,3\n");
  EXPECT_THAT(error_of([&] { io::read_dataset(miss, io::Format::csv, MPI_COMM_WORLD); }),
              HasSubstr(miss + ":1: value '?' is not a number"));
}

TEST(Labels, AnEmptyLabelIsAlwaysUnlabeledAndAHeaderNameComesBeforeAColumnNumber) {
  Dir dir;
  // Markers given replace the defaults, but an empty (or blank, or "") field stays unlabeled.
  const std::string p = dir.write("m.csv", "5,4,label\n1,2,a\n3,4,\n5,6,unk\n7,8, \"\" \n9,0,NA\n");
  io::ReadOptions o;
  o.label.column = "label";
  o.label.unlabeled_markers = {"unk"};
  io::Dataset ds = io::read_dataset(p, io::Format::csv, MPI_COMM_WORLD, o);
  EXPECT_EQ(ds.class_names, (std::vector<std::string>{"NA", "a"}));
  EXPECT_EQ(all_labels(ds), (std::vector<int>{1, -1, -1, -1, 0}));
  // "--label-column 5" is the header's column named 5 (column 1); "#3" is column number 3.
  const std::string h = dir.write("h.csv", "5,4,3\n7,1,2\n8,3,4\n");
  o = io::ReadOptions();
  o.label.column = "5";
  o.label.header = io::LabelOptions::Header::yes;
  ds = io::read_dataset(h, io::Format::csv, MPI_COMM_WORLD, o);
  EXPECT_EQ(ds.class_names, (std::vector<std::string>{"7", "8"}));
  o.label.column = "#1";
  EXPECT_EQ(io::read_dataset(h, io::Format::csv, MPI_COMM_WORLD, o).class_names, (std::vector<std::string>{"7", "8"}));
  o.label.column = "#3";
  EXPECT_EQ(io::read_dataset(h, io::Format::csv, MPI_COMM_WORLD, o).class_names, (std::vector<std::string>{"2", "4"}));
  // Without --header, a first line of numbers that has the spec in another column is refused.
  const std::string amb = dir.write("amb.csv", "2,1,3\n0,1,2\n1,3,4\n");
  o.label.header = io::LabelOptions::Header::automatic;
  o.label.column = "1";
  EXPECT_THAT(error_of([&] { io::read_dataset(amb, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr("--label-column 1 is ambiguous: " + amb + ":1 is all numbers"));
  o.label.column = "#1";
  EXPECT_EQ(io::read_dataset(amb, io::Format::csv, MPI_COMM_WORLD, o).X.n_global, 3);
  // R's write.csv and pandas' to_csv: the row names under an empty header name are ids.
  const std::string r = dir.write("r.csv", "\"\",\"a\",\"label\"\n\"r1\",1.5,\"x\"\n\"r2\",2.5,NA\n\"r3\",3.5,\"y\"\n");
  o = io::ReadOptions();
  o.label.column = "label";
  ds = io::read_dataset(r, io::Format::csv, MPI_COMM_WORLD, o);
  EXPECT_EQ(ds.X.cols, 1);
  EXPECT_EQ(allgatherv(ds.X.v, MPI_COMM_WORLD), (std::vector<double>{1.5, 2.5, 3.5}));
  EXPECT_EQ(all_labels(ds), (std::vector<int>{0, -1, 1}));
  std::string mine;
  for (const std::string& id : ds.ids) mine += id + ";";
  const std::vector<char> all = allgatherv(std::vector<char>(mine.begin(), mine.end()), MPI_COMM_WORLD);
  EXPECT_EQ(std::string(all.begin(), all.end()), "r1;r2;r3;");
}

TEST(Labels, HeaderlessNumbersNeverBecomeAHeaderAndRowNamesNeverBecomeLabelsOrFeatures) {
  Dir dir;
  io::ReadOptions o;
  // 0/1 data with --label-column 1: a line with duplicate fields is never a header of numbers.
  const std::string bin = dir.write("bin.csv", "0,1,0,1\n1,0,1,1\n0,0,0,1\n");
  o.label.column = "1";
  EXPECT_EQ(io::read_dataset(bin, io::Format::csv, MPI_COMM_WORLD, o).X.n_global, 3);
  // A column number past the last column is refused, even when a value of line 1 equals it.
  const std::string oor = dir.write("oor.csv", "0.5,7,1.5,0\n0.1,1,0.2,1\n0.4,0,0.6,0\n");
  o.label.column = "7";
  EXPECT_THAT(error_of([&] { io::read_dataset(oor, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr("--label-column 7: " + oor + ":1 has 4 fields"));
  // An empty first value of a headerless first row is a missing value, not a header.
  const std::string em = dir.write("em.csv", ",3.5,0\n5.1,3.5,0\n4.9,3.0,1\n");
  o.label.column = "3";
  EXPECT_THAT(error_of([&] { io::read_dataset(em, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr(em + ":1: value '' is not a number"));
  // pandas' to_csv with its index and no --label-column: the unnamed column is no label.
  const std::string idx = dir.write("idx.csv", ",label,a\n0,0,5.1\n1,1,4.9\n2,0,4.7\n");
  o = io::ReadOptions();
  EXPECT_THAT(error_of([&] { io::read_dataset(idx, io::Format::csv, MPI_COMM_WORLD, o); }),
              HasSubstr("column 1, the default label column, has no name in the header"));
  // --label-type string: "Inf" names a class.
  const std::string inf = dir.write("inf.csv", "label,a\nInf,1\nx,2\n");
  o.label.column = "label";
  o.label.type = io::LabelOptions::Type::string;
  EXPECT_EQ(io::read_dataset(inf, io::Format::csv, MPI_COMM_WORLD, o).class_names,
            (std::vector<std::string>{"Inf", "x"}));
  // A tab-separated header whose names hold commas (pandas does not quote them).
  const std::string tsv = dir.write("t.tsv", "a\tb,c\tlabel\n1\t2\tx\n3\t4\ty\n");
  o.label.type = io::LabelOptions::Type::automatic;
  const io::Dataset t = io::read_dataset(tsv, io::Format::csv, MPI_COMM_WORLD, o);
  EXPECT_EQ(t.X.cols, 2);
  EXPECT_EQ(t.class_names, (std::vector<std::string>{"x", "y"}));
}

TEST(Labels, GzippedRowNamesAreSkippedAsTheirPlainFileReadsThem) {
  Dir dir;
  const std::string text = "\"\",\"a\",\"label\"\n\"1\",1.5,\"x\"\n\"2\",2.5,\"y\"\n\"3\",3.5,\"x\"\n";
  const std::string plain = dir.write("r.csv", text);
  const std::string gz = plain + ".gz";
  if (test::rank() == 0) {
    gzFile f = gzopen(gz.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  io::ReadOptions o;
  o.label.column = "label";
  const io::Dataset a = io::read_dataset(plain, io::Format::csv, MPI_COMM_WORLD, o);
  const io::Dataset b = io::read_dataset(gz, io::Format::csv, MPI_COMM_WORLD, o);
  EXPECT_EQ(a.X.cols, 1);
  EXPECT_EQ(b.X.cols, 1);
  EXPECT_EQ(a.X.v, b.X.v);
  EXPECT_EQ(all_labels(a), all_labels(b));
  EXPECT_EQ(a.class_names, b.class_names);
}

// ------------------------------------------------------------------------------------------
// NPY
// ------------------------------------------------------------------------------------------

TEST(NpyReader, ReadsEveryRealAndIntegerTypeInEitherByteOrderAsTheSameMatrix) {
  Dir dir;
  const int64_t n = 7, d = 3;
  std::vector<double> ref(static_cast<size_t>(n * d));
  for (size_t k = 0; k < ref.size(); ++k) ref[k] = static_cast<double>((k * 37) % 200);
  std::vector<int64_t> labels = {0, 1, 2, 0, 1, 2, 2};
  const std::string y = dir.write("y.npy", npy("<i8", "(7,)", raw_bytes(labels)));
  std::vector<float> f(ref.begin(), ref.end());
  std::vector<unsigned char> u8(ref.begin(), ref.end());
  std::vector<int32_t> i4(ref.begin(), ref.end());
  std::vector<uint16_t> u2(ref.begin(), ref.end());
  const std::vector<std::pair<std::string, std::string>> files = {
      {"f8.npy", npy("<f8", "(7, 3)", raw_bytes(ref))},
      {"f8be.npy", npy(">f8", "(7, 3)", raw_bytes(ref, true))},
      {"f4.npy", npy("<f4", "(7, 3)", raw_bytes(f))},
      {"u1.npy", npy("|u1", "(7, 3)", raw_bytes(u8))},
      {"i4be.npy", npy(">i4", "(7, 3)", raw_bytes(i4, true))},
      {"u2.npy", npy("<u2", "(7, 3)", raw_bytes(u2))}};
  for (const auto& [name, bytes] : files) {
    SCOPED_TRACE(name);
    io::ReadOptions o;
    o.labels = y;
    const io::Dataset ds = io::read_dataset(dir.write(name, bytes), io::Format::automatic, MPI_COMM_WORLD, o);
    const Dense A = allgather(ds.X);
    ASSERT_EQ(A.rows, n);
    ASSERT_EQ(A.cols, d);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j) EXPECT_EQ(A(i, j), ref[static_cast<size_t>(i * d + j)]);
    EXPECT_EQ(test::all_labels(ds), (std::vector<int>{0, 1, 2, 0, 1, 2, 2}));
    EXPECT_EQ(ds.classes, 3);
    // In their own type (fit, evaluate, experiment): '|u1' and '<f4' stay bytes and floats,
    // the same values; the other types are read as doubles.
    o.native_types = true;
    const io::Dataset nt = io::read_dataset(dir.file(name), io::Format::automatic, MPI_COMM_WORLD, o);
    const bool keeps = name == "u1.npy" || name == "f4.npy";
    EXPECT_EQ(nt.typed, keeps);
    if (keeps) {
      EXPECT_EQ(nt.rows.type, name == "u1.npy" ? ElementType::u8 : ElementType::f32);
      EXPECT_EQ(nt.rows.bytes.size(), static_cast<size_t>(nt.rows.n_local * d) * element_size(nt.rows.type));
      EXPECT_TRUE(nt.X.v.empty());
      std::vector<double> row(static_cast<size_t>(d));
      for (int64_t i = 0; i < nt.rows.n_local; ++i) {
        nt.rows.rows(i, 1, row.data());
        for (int64_t j = 0; j < d; ++j) EXPECT_EQ(row[static_cast<size_t>(j)], A(nt.rows.row_start + i, j));
      }
    }
  }
}

TEST(DatasetOptions, RefuseTheOptionsOfAnotherFormat) {
  io::ReadOptions labels;
  labels.labels = "y.npy";
  EXPECT_THAT(error_of([&] { io::read_dataset(test::data_path("iris.csv"), io::Format::automatic, MPI_COMM_WORLD, labels); }),
              HasSubstr("--labels y.npy: only NPY data take a labels file"));
  io::ReadOptions h5;
  h5.hdf5_data = "/data";
  EXPECT_THAT(error_of([&] { io::read_dataset(test::data_path("iris.csv"), io::Format::automatic, MPI_COMM_WORLD, h5); }),
              HasSubstr("--hdf5-data/--hdf5-labels: only for HDF5 data"));
}

TEST(NpyReader, RejectsWhatItCannotReadWithTheFileAndTheReason) {
  Dir dir;
  std::vector<double> v(6, 1.0);
  std::vector<int64_t> labels = {0, 1, 0};
  const std::string y = dir.write("y.npy", npy("<i8", "(3,)", raw_bytes(labels)));
  const std::string y2 = dir.write("y2.npy", npy("<i8", "(2,)", raw_bytes(std::vector<int64_t>{0, 1})));
  const std::string yf = dir.write("yf.npy", npy("<f8", "(3,)", raw_bytes(std::vector<double>{0, 1.5, 0})));
  std::vector<double> nan = v, huge = v;
  nan[4] = std::numeric_limits<double>::quiet_NaN();
  huge[3] = 1e308;  // finite, but its square is not: beyond kMaxAbsValue
  struct Case {
    std::string name, bytes, labels, expected;
  };
  const std::vector<Case> cases = {
      {"fortran.npy", npy("<f8", "(3, 2)", raw_bytes(v), "True"), y, "Fortran-order NPY array is not supported"},
      {"three.npy", npy("<f8", "(1, 3, 2)", raw_bytes(v)), y, "expected a 2-D array"},
      {"short.npy", npy("<f8", "(3, 2)", raw_bytes(v).substr(0, 40)), y, "truncated NPY file"},
      {"nan.npy", npy("<f8", "(3, 2)", raw_bytes(nan)), y, "nan.npy[2, 0] (sample, feature; 0-based) = NaN"},
      {"huge.npy", npy("<f8", "(3, 2)", raw_bytes(huge)), y, "huge.npy[1, 1] (sample, feature; 0-based) = 1e+308; expected |x| <= 7.3e+134"},
      {"complex.npy", npy("<c16", "(3, 2)", raw_bytes(v)), y, "NPY dtype '<c16' is not supported"},
      {"count.npy", npy("<f8", "(3, 2)", raw_bytes(v)), y2, "2 labels for 3 samples"},
      {"float.npy", npy("<f8", "(3, 2)", raw_bytes(v)), yf, "label 1.5 of sample 1 is not an integer"},
      {"nolabels.npy", npy("<f8", "(3, 2)", raw_bytes(v)), "", "an NPY file holds no labels; give --labels"},
      {"notnpy.npy", "0,1,2\n", y, "not an NPY file"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = dir.write(c.name, c.bytes);
    io::ReadOptions o;
    o.labels = c.labels;
    EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::npy, MPI_COMM_WORLD, o); }), HasSubstr(c.expected));
  }
  // Without labels where they are not required (transform): the matrix alone.
  io::ReadOptions o;
  o.labels_required = false;
  const io::Dataset ds = io::read_dataset(dir.write("x.npy", npy("<f8", "(3, 2)", raw_bytes(v))), io::Format::npy,
                                          MPI_COMM_WORLD, o);
  EXPECT_FALSE(ds.labeled());
  EXPECT_EQ(ds.X.n_global, 3);
}

// ------------------------------------------------------------------------------------------
// HDF5 and the parallel writers
// ------------------------------------------------------------------------------------------

TEST(Hdf5, WritesAndReadsBackDigitsBitForBitOnAnyRankCount) {
  Dir dir;
  const io::Dataset ds = io::read_dataset(test::data_path("digits.csv"), io::Format::csv, MPI_COMM_WORLD);
  const std::string p = dir.file("digits.h5");
  io::write_hdf5(p, ds.X, "/data/X", &ds.labels, "/data/y");
  io::ReadOptions o;
  o.hdf5_data = "/data/X";
  o.hdf5_labels = "/data/y";
  const io::Dataset back = io::read_dataset(p, io::Format::automatic, MPI_COMM_WORLD, o);
  EXPECT_EQ(back.X.v, ds.X.v);
  EXPECT_EQ(back.labels, ds.labels);
  EXPECT_EQ(back.classes, 10);
  // One rank alone reads the whole file the same (the serial reference).
  const io::Dataset one = io::read_dataset(p, io::Format::hdf5, MPI_COMM_SELF, o);
  EXPECT_EQ(allgather(ds.X).v, allgather(one.X).v);
  EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::hdf5, MPI_COMM_WORLD); }),
              HasSubstr(p + ": no data set '/X' (name it with --hdf5-data"));
}

TEST(Hdf5, ConvertsUint8ImagesAndInt16LabelsWrittenByAnotherProgram) {
  Dir dir;
  const std::string p = dir.file("img.h5");
  const int n = 9, d = 4;
  std::vector<unsigned char> px(static_cast<size_t>(n * d));
  for (size_t k = 0; k < px.size(); ++k) px[k] = static_cast<unsigned char>(250 - 3 * k);
  std::vector<int16_t> lab = {0, 1, 2, 3, 0, 1, 2, 3, 3};
  if (test::rank() == 0) {  // a serial writer, as h5py would make it
    const hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {n, d}, ldims[1] = {n};
    const hid_t s = H5Screate_simple(2, dims, nullptr), ls = H5Screate_simple(1, ldims, nullptr);
    const hid_t x = H5Dcreate2(f, "images", H5T_STD_U8LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t y = H5Dcreate2(f, "labels", H5T_STD_I16LE, ls, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(x, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, px.data());
    H5Dwrite(y, H5T_NATIVE_SHORT, H5S_ALL, H5S_ALL, H5P_DEFAULT, lab.data());
    const hid_t fl = H5Dcreate2(f, "float_labels", H5T_IEEE_F32LE, ls, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(fl);
    H5Dclose(x);
    H5Dclose(y);
    H5Sclose(s);
    H5Sclose(ls);
    H5Fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  io::ReadOptions o;
  o.hdf5_data = "/images";
  o.hdf5_labels = "/labels";
  const io::Dataset ds = io::read_dataset(p, io::Format::hdf5, MPI_COMM_WORLD, o);
  const Dense A = allgather(ds.X);
  ASSERT_EQ(A.rows, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) EXPECT_EQ(A(i, j), static_cast<double>(px[static_cast<size_t>(i * d + j)]));
  EXPECT_EQ(test::all_labels(ds), std::vector<int>(lab.begin(), lab.end()));
  EXPECT_EQ(ds.classes, 4);
  {  // the 8-bit pixels kept as bytes
    io::ReadOptions nt = o;
    nt.native_types = true;
    const io::Dataset t = io::read_dataset(p, io::Format::hdf5, MPI_COMM_WORLD, nt);
    ASSERT_TRUE(t.typed);
    EXPECT_EQ(t.rows.type, ElementType::u8);
    for (int64_t i = 0; i < t.rows.n_local; ++i)
      for (int j = 0; j < d; ++j)
        EXPECT_EQ(t.rows.bytes[static_cast<size_t>(i * d + j)], px[static_cast<size_t>((t.rows.row_start + i) * d + j)]);
  }
  o.hdf5_labels = "/float_labels";
  EXPECT_THAT(error_of([&] { io::read_dataset(p, io::Format::hdf5, MPI_COMM_WORLD, o); }),
              HasSubstr(p + ":/float_labels: labels must have an integer or a string type"));
}

TEST(ParallelWriters, NpyAndHdf5EmbeddingsHoldTheRowsOfAnUnbalancedLayoutInGlobalOrder) {
  Dir dir;
  // Rank r holds r rows (rank 0 none): offsets come from the ranks' counts, not the block layout.
  DistMatrix Y = make_dist_local(MPI_COMM_WORLD, test::rank(), 3);
  for (int64_t i = 0; i < Y.n_local; ++i)
    for (int64_t j = 0; j < 3; ++j) Y(i, j) = (static_cast<double>(Y.row_start + i) + 1.0) / 3.0 * (j + 1);
  const Dense ref = allgather(Y);
  if (ref.rows == 0) return;  // one rank: nothing to write
  const std::string h5 = dir.file("e.h5"), np = dir.file("e.npy");
  io::write_embedding(Y, h5);
  io::write_embedding(Y, np);
  io::ReadOptions o;
  o.hdf5_data = "/embedding";
  o.labels_required = false;
  EXPECT_EQ(allgather(io::read_dataset(h5, io::Format::hdf5, MPI_COMM_WORLD, o).X).v, ref.v);
  io::ReadOptions plain;  // --hdf5-data is refused for NPY data
  plain.labels_required = false;
  EXPECT_EQ(allgather(io::read_dataset(np, io::Format::npy, MPI_COMM_WORLD, plain).X).v, ref.v);
  // The NPY file is byte for byte what the serial (rank-0 stream) writer makes.
  const std::string serial = dir.file("s.npy");
  io::write_embedding_streamed(Y, serial);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(file_text(np), file_text(serial));
}
