// Names and ids in the writers (issue 47): csv_field quotes as RFC 4180 asks, and the label
// writers of `ssdr convert` (write_hdf5 and write_labels with class names) keep the names, so
// the readers give back the same class_names and codes on any rank count.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <tuple>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/io/output.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

TEST(OutputNames, CsvFieldQuotesOnlyWhatRfc4180Needs) {
  EXPECT_EQ(io::csv_field("setosa"), "setosa");
  EXPECT_EQ(io::csv_field(""), "");
  EXPECT_EQ(io::csv_field(" spaced "), " spaced ");
  EXPECT_EQ(io::csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(io::csv_field("5\" disk"), "\"5\"\" disk\"");
  EXPECT_EQ(io::csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(io::csv_field("cr\r"), "\"cr\r\"");
}

/// n rows of 2 values over MPI_COMM_WORLD (block layout) and their class codes: row i has
/// code i % 4 − 1 (−1 unlabeled, then 0, 1, 2).
struct Rows {
  DistMatrix X;
  std::vector<int> labels;
};
Rows make_rows(int64_t n) {
  Rows r;
  r.X = make_dist(MPI_COMM_WORLD, n, 2);
  for (int64_t i = 0; i < r.X.n_local; ++i) {
    const int64_t g = r.X.row_start + i;
    r.X(i, 0) = static_cast<double>(g);
    r.X(i, 1) = 0.5 * static_cast<double>(g);
    r.labels.push_back(static_cast<int>(g % 4) - 1);
  }
  return r;
}

/// Writes `rows` with `names` as convert does (HDF5, and NPY with its labels file), reads
/// each back (with `type`, the --label-type the input was read with) and checks the class
/// names, the integer/name kind and every row's code.
void expect_round_trip(const Rows& rows, const std::vector<std::string>& names, bool strings,
                       io::LabelOptions::Type type = io::LabelOptions::Type::automatic) {
  test::TempDir dir("onames");
  const std::string h5 = dir.file("x.h5"), xn = dir.file("x.npy"), yn = dir.file("y.npy");
  io::write_hdf5(h5, rows.X, "/X", &rows.labels, "/y", &names, strings);
  io::write_embedding(rows.X, xn);
  io::write_labels(rows.labels, yn, MPI_COMM_WORLD, true, &names, strings);
  io::ReadOptions hdf5, npy;
  hdf5.label.type = npy.label.type = type;
  npy.labels = yn;
  for (const auto& [path, format, options] :
       {std::tuple{h5, io::Format::hdf5, hdf5}, std::tuple{xn, io::Format::npy, npy}}) {
    SCOPED_TRACE(path);
    const io::Dataset back = io::read_dataset(path, format, MPI_COMM_WORLD, options);
    EXPECT_EQ(back.class_names, names);
    EXPECT_EQ(back.integer_labels, !strings);
    EXPECT_EQ(back.labels, rows.labels);
    EXPECT_EQ(back.X.v, rows.X.v);
  }
}

TEST(OutputNames, ConvertKeepsClassNamesWithCommasQuotesAndLineBreaks) {
  expect_round_trip(make_rows(23), {"a,b", "q\"x", "two\nlines"}, true);
}

TEST(OutputNames, ConvertKeepsIntegerClassesAsTheirIntegers) {
  // Classes −5, 10, 20 (not the codes 0, 1, 2): sorted by value as the readers sort them.
  expect_round_trip(make_rows(23), {"-5", "10", "20"}, false);
}

TEST(OutputNames, ConvertKeepsNamesThatLookLikeIntegersAsNames) {
  // Classes read as names (--label-type string) sort by their bytes: "10" before "9". They
  // are written as strings, and read back as names with the same --label-type.
  expect_round_trip(make_rows(23), {"10", "20", "9"}, true, io::LabelOptions::Type::string);
}

}  // namespace
