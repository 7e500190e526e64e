#pragma once
/// \file npy_internal.hpp
/// Private to src/io: the NPY header and element conversion shared by the NPY reader and
/// its tests (npy_reader.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::io::detail {

/// What an NPY header says about the array that follows it.
struct NpyHeader {
  int64_t data_offset = 0;      ///< bytes before the first element
  char kind = 'f';              ///< 'f' real, 'i' signed, 'u' unsigned integer; 'S' bytes, 'U' UTF-32 (labels only)
  int item_size = 8;            ///< bytes per element (f: 4, 8; i/u: 1, 2, 4, 8)
  bool swap = false;            ///< big-endian elements
  std::vector<int64_t> shape;   ///< C order
};

/// Reads and checks the header of an NPY file (format versions 1–3; C order; a simple real
/// or integer dtype; the file long enough for its shape). Local.
/// \throws LocalFailure naming the file and what was expected.
NpyHeader read_npy_header(const std::string& path);

/// Empty when `text` is valid UTF-8 (no overlong forms, surrogates or code points above
/// U+10FFFF), else what is wrong and where ("byte 0xff at offset 3"): the readers refuse a
/// string label that is not UTF-8 naming the file and the label, before it reaches a report
/// (JSON) or a model. Local.
std::string utf8_problem(const std::string& text);

/// Converts `count` raw elements described by `h` to doubles (64-bit integers above 2^53
/// round to the nearest double). Local.
void to_double(const unsigned char* src, int64_t count, const NpyHeader& h, double* dst);

/// Reads the labels of ds's rows [row_start, row_start + n_local) of the n labels of a 1-D
/// (or n×1) NPY file (each rank its own rows' labels, collective MPI-IO): integers (−1 or the
/// integer unlabeled markers: unlabeled), floats holding integers (NaN: unlabeled) or strings
/// ('<U…', '|S…': names; "" unlabeled), coded with `label` and agreed over comm
/// (ds.labels, ds.classes, ds.class_names). Collective over comm.
/// \throws ssdr::Error (collectively) naming the file and the first bad sample.
void read_npy_labels(const std::string& path, Dataset& ds, const LabelOptions& label, MPI_Comm comm);

}  // namespace ssdr::io::detail
