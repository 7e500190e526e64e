#pragma once
/// \file dataset.hpp
/// Reading labeled data sets into a sample-distributed matrix.
#include <mpi.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/sparse.hpp"

namespace ssdr::io {

/// On-disk formats. `automatic` guesses from the path: a directory or a name containing
/// "idx3-ubyte" → idx; ".libsvm", ".svm", ".svmlight" (optionally + ".gz") → libsvm; ".npy"
/// → npy; ".h5", ".hdf5" → hdf5; else csv.
enum class Format { automatic, csv, libsvm, idx, npy, hdf5 };

/// Parses "csv", "libsvm", "idx", "npy", "hdf5" or "auto". \throws ssdr::Error naming the
/// bad value.
Format parse_format(const std::string& name);
/// The name of a format ("csv", ..., "auto").
const char* format_name(Format format);
/// True when `path` ends in `ext` ignoring ASCII case (".H5" is ".h5").
bool has_extension(const std::string& path, const std::string& ext);
/// The format `automatic` resolves to for `path`. Not collective.
Format detect_format(const std::string& path);

/// A labeled data set: X is n×d distributed by rows in the block layout of `comm` (rank r
/// holds rows [X.row_start, X.row_start + X.n_local)); the labels live with the rows (X's
/// n_local rows' labels on each rank): no rank holds all n labels.
struct Dataset {
  /// n×d raw feature values, rows in file order. When the data were kept sparse (`sparse`),
  /// X has its shape and layout (n_global, row_start, n_local, cols) but no values (v
  /// empty): the values are in Xs.
  DistMatrix X;
  /// The same rows in CSR form when `sparse` (ReadOptions::sparse), else empty.
  SparseRows Xs;
  bool sparse = false;
  /// The rows in the file's own element type when read with ReadOptions::native_types and
  /// the file holds uint8 or float32 values (`typed`); X then has its shape and layout but no
  /// values, as with `sparse`.
  TypedRows rows;
  bool typed = false;
  /// The labels of X's local rows (n_local): class codes 0..c−1 (the index into
  /// class_names), −1 for an unlabeled row (an unlabeled marker in the file); empty without
  /// labels.
  std::vector<int> labels;
  int classes = 0;          ///< c = class_names.size() (the same on every rank)
  /// The classes' names, the same on every rank, sorted as Python's `classes_` (np.unique):
  /// integers by value ("2" before "10"), names byte-wise (UTF-8 code points). Code k is
  /// class_names[k].
  std::vector<std::string> class_names;
  /// Whether every class name is an integer (the labels were read as integers).
  bool integer_labels = true;
  /// The local rows' ids from the CSV column LabelOptions::id_column (n_local, the text as
  /// written, moved with the rows); empty without an id column. The outputs' `id` column.
  std::vector<std::string> ids;
  /// Whether the data set has labels (the same on every rank, unlike labels.empty(), which is
  /// also true on a rank without rows).
  bool labeled() const { return classes > 0; }
  std::string source;       ///< the path as given
};

/// The bytes of one row of a dense `ds` as it stores them: cols elements of the file's type
/// (Dataset::typed) or of double. Local.
size_t row_bytes(const Dataset& ds);
/// The first byte of ds's local rows (row_bytes each, row-major). Local.
const unsigned char* row_data(const Dataset& ds);
/// A data set over `comm` with layout `l` (ds.X.cols columns) whose rows are `bytes`
/// (l.n_local·row_bytes(ds), as row_data gives them): typed in ds's type when ds is typed,
/// else doubles; classes, class names and source as ds's; no labels or ids. Local.
Dataset dataset_of_rows(const Dataset& ds, MPI_Comm comm, int64_t n_global, int64_t start, int64_t count,
                        std::vector<unsigned char> bytes);

/// Whether a LIBSVM file is kept sparse (Dataset::Xs) or densified (Dataset::X).
/// automatic: sparse when the dense n×d matrix would take more than kSparseDenseBytes
/// and at most a fraction kSparseMaxDensity of its entries are stored.
enum class Sparsity { dense, automatic, sparse };
/// Parses "no", "auto", "yes" (--sparse). \throws ssdr::Error naming the bad value.
Sparsity parse_sparsity(const std::string& name);
inline constexpr double kSparseDenseBytes = 1073741824.0;  ///< 1 GiB of n·d doubles
inline constexpr double kSparseMaxDensity = 0.1;

/// How labels are read from a data file (every format): which CSV column, whether the first
/// line is a header, which field values mark an unlabeled row, and whether labels are
/// integers or names.
struct LabelOptions {
  /// --header (CSV/TSV): automatic (the first line is a header when one of its value fields
  /// is not a number), yes, no.
  enum class Header { automatic, yes, no } header = Header::automatic;
  /// --label-column (CSV/TSV): a header name, or a 1-based column number; empty: column 1.
  std::string column;
  /// --unlabeled-marker (every format): the label field values of unlabeled rows, compared
  /// after trimming blanks. Default: the empty field, "?", "NA" and "-1" (also the integer
  /// −1 of an NPY/HDF5/IDX label array).
  std::vector<std::string> unlabeled_markers = {"", "?", "NA", "-1"};
  /// --id-column (CSV/TSV): a column of row ids (a header name or a 1-based number) that is
  /// not a feature; the outputs' `id` column shows them (else the 0-based row index). Empty:
  /// none. At most kMaxIdBytes bytes each.
  std::string id_column;
  /// --label-type: automatic (integers when every label is an integer, names when none is;
  /// a mix is refused), integer (a name is refused) or string (every label is a name).
  enum class Type { automatic, integer, string } type = Type::automatic;
};

/// The longest row id of an --id-column, in bytes (ids are moved with their rows in fixed-width
/// records of the longest id present).
inline constexpr size_t kMaxIdBytes = 256;

/// Parses --header: "auto", "yes" or "no". \throws ssdr::Error naming the bad value.
LabelOptions::Header parse_header(const std::string& name);
/// Parses --label-type: "auto", "integer" or "string". \throws ssdr::Error naming the bad value.
LabelOptions::Type parse_label_type(const std::string& name);

/// Where the binary formats keep their labels and matrix.
struct ReadOptions {
  std::string hdf5_data = "/X";    ///< --hdf5-data: the n×d data set (any numeric type)
  std::string hdf5_labels = "/y";  ///< --hdf5-labels: the n labels (any integer type)
  std::string labels;              ///< --labels: NPY file of n integer labels (npy data)
  bool labels_required = true;     ///< false: a file without labels reads with labels empty
  /// --no-labels (CSV only): the lines hold the values alone, no label column; the data set
  /// has no labels (labels empty, classes 0). Refused for the other formats.
  bool no_labels = false;
  /// --sparse (LIBSVM only; the other formats are dense): dense (default, also for the
  /// commands that cannot take sparse data), automatic or sparse. Sparse data read from a
  /// gzip stream are refused (decompress it: only plain files are read by byte ranges).
  Sparsity sparse = Sparsity::dense;
  /// Keep uint8 rows (IDX images; NPY '|u1', HDF5 8-bit unsigned) and float32 rows (NPY '<f4',
  /// HDF5 32-bit float) in their own type (Dataset::rows): 1/8 and 1/2 of the memory of
  /// doubles. For the commands whose fit reads rows through TypedRows (fit, evaluate,
  /// experiment); the others read doubles.
  bool native_types = false;
  /// How labels are read (header, label column, unlabeled markers, integer or names).
  LabelOptions label;
};

/// Reads a data set. Collective over `comm`.
///
/// - csv (also TSV: tab-separated when the first line has a tab and no comma): an optional
///   header line (options.label.header); the label in column options.label.column (by
///   header name or 1-based number; column 1 by default), the other fields the d values;
///   every line must have the same number of fields; values finite.
/// - Labels (every format): a label equal to one of options.label.unlabeled_markers marks an
///   unlabeled row (label −1); the others are integers or names (options.label.type), coded
///   0..c−1 in the order of Dataset::class_names, agreed over comm (an MPI_Allgatherv of the
///   ranks' distinct labels: O(c), never O(n)).
/// - libsvm/SVMlight: `label idx:val ...`, 1-based strictly increasing indices, zeros
///   omitted; d = the largest index seen; may be gzip-compressed (".gz"). Kept sparse
///   (Dataset::Xs, rows in the block layout like X, explicit zeros dropped) as
///   options.sparse says; d must then be below 2³¹.
/// - idx: `--data DIR` (reads DIR/train-images-idx3-ubyte[.gz] then DIR/t10k-images-…, each
///   with its labels file, e.g. Fashion-MNIST: 60 000 + 10 000 = 70 000 samples, d = 784,
///   pixel values 0..255 as doubles) or one `*-images-idx3-ubyte[.gz]` file (labels from
///   the matching `*-labels-idx1-ubyte[.gz]`).
///
/// - npy: NumPy `.npy`, a C-order n×d array of any real or integer type (f4, f8, i1..i8,
///   u1..u8, either byte order); labels from `options.labels`, a 1-D `.npy` of integers (−1: unlabeled)
///   or of strings ('<U…' or '|S…': class names; "" unlabeled).
/// - hdf5: the data set `options.hdf5_data` (n×d, any numeric type) and the labels
///   `options.hdf5_labels` (n, any integer type; −1: unlabeled).
///
/// Every rank reads its own part: plain CSV/LIBSVM by byte ranges (MPI-IO; each rank parses
/// the lines that start in its 1/P of the bytes, then rows move once to their block owner),
/// NPY at its rows' byte offset (collective MPI-IO), HDF5 its hyperslab (collective), IDX at
/// its offset. Gzip-compressed text cannot be split: it streams through rank 0 in chunks of
/// rows sent to their owners. No rank ever buffers the whole file or holds more than twice
/// its block of rows.
///
/// \throws ssdr::Error on every rank (collectively) with a one-line message naming the
///   file and line for: missing/unreadable file, ragged CSV row, unparsable number,
///   NaN/Inf, a name among integer labels (or a name with label.type integer), a header
///   alone, a label column that does not exist, bad libsvm index, truncated or wrong-magic IDX,
///   an empty file, an NPY/HDF5 array that is not 2-D or not numeric, labels missing (when
///   required), of the wrong count or not integers, a NaN/Inf value in a binary file.
Dataset read_dataset(const std::string& path, Format format, MPI_Comm comm, const ReadOptions& options = {});

/// The non-blank lines of a text file of one item per line, each coded as one byte: this
/// rank's share of them, read in parallel by byte ranges as CSV is (rank r parses the lines
/// that start in its 1/P of the bytes; no rank reads or holds the whole file).
struct LineCodes {
  std::vector<char> codes;  ///< one code per owned non-blank line, in file order
  int64_t first = 0;        ///< the item index (0-based, blank lines skipped) of codes[0]
  int64_t total = 0;        ///< non-blank lines in the whole file (the same on every rank)
};

/// Reads `path` as LineCodes: `code(line)` (the line without its end and surrounding blanks)
/// returns the line's code, or 0 for a line it refuses. Collective over comm.
/// \throws ssdr::Error (collectively) on a missing, unreadable or irregular file, naming it,
///   and on the file's first refused line as "path:LINE: expected <expected>, found 'text'".
LineCodes read_line_codes(const std::string& path, const std::string& expected,
                          const std::function<char(std::string_view line)>& code, MPI_Comm comm);

/// Rows [row_start, row_start + rows_local) of the 2-D numeric HDF5 data set `name` of `path`
/// (any stored integer or floating type), read collectively with the MPI-IO driver and
/// converted to int64 (`integer`: into *i64; a value that does not fit is an HDF5 read error)
/// or to double (into *f64). `rows_global` and `cols` receive the data set's shape.
/// Collective over comm; every rank passes its own range.
/// \throws ssdr::Error (collectively) naming the file and the data set when the file is not
/// HDF5, the data set is missing or not 2-D, or a rank's range lies outside it.
void read_hdf5_rows(const std::string& path, const std::string& name, int64_t row_start, int64_t rows_local,
                    bool integer, std::vector<int64_t>* i64, std::vector<double>* f64, int64_t& rows_global,
                    int64_t& cols, MPI_Comm comm);

}  // namespace ssdr::io
