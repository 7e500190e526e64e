// Reading labeled data sets (CSV, LIBSVM/SVMlight, IDX) into a row-distributed DistMatrix:
// format names, detection from the path, and dispatch to the readers, one file per format
// (text_reader.cpp with csv_reader.cpp and libsvm_reader.cpp, idx_reader.cpp; see
// reader_internal.hpp).
#include "ssdr/io/dataset.hpp"

#include <cctype>
#include <cstring>
#include <string>

#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"

namespace ssdr::io {

using detail::ends_with;
using detail::is_directory;
using detail::read_idx;
using detail::read_text;

Format parse_format(const std::string& name) {
  if (name == "csv") return Format::csv;
  if (name == "libsvm" || name == "svmlight") return Format::libsvm;
  if (name == "idx") return Format::idx;
  if (name == "npy") return Format::npy;
  if (name == "hdf5" || name == "h5") return Format::hdf5;
  if (name == "auto" || name == "automatic") return Format::automatic;
  throw Error("--format: unknown data format '" + name + "' (expected csv, libsvm, idx, npy, hdf5 or auto)", __FILE__, __LINE__,
              true);
}

size_t row_bytes(const Dataset& ds) {
  return static_cast<size_t>(ds.X.cols) * (ds.typed ? element_size(ds.rows.type) : sizeof(double));
}

const unsigned char* row_data(const Dataset& ds) {
  return ds.typed ? ds.rows.bytes.data() : reinterpret_cast<const unsigned char*>(ds.X.v.data());
}

Dataset dataset_of_rows(const Dataset& ds, MPI_Comm comm, int64_t n_global, int64_t start, int64_t count,
                        std::vector<unsigned char> bytes) {
  const int64_t d = ds.X.cols;
  SSDR_REQUIRE(bytes.size() == static_cast<size_t>(count) * row_bytes(ds),
               "dataset_of_rows: " + std::to_string(bytes.size()) + " bytes for " + std::to_string(count) + " rows of " +
                   std::to_string(row_bytes(ds)) + " (internal)");
  Dataset t;
  t.X = dist_layout<double>(comm, Layout{n_global, start, count}, d);
  if (ds.typed) {
    t.typed = true;
    t.rows.comm = comm;
    t.rows.n_global = n_global;
    t.rows.row_start = start;
    t.rows.n_local = count;
    t.rows.cols = d;
    t.rows.type = ds.rows.type;
    t.rows.bytes = std::move(bytes);
  } else {
    t.X.v.resize(static_cast<size_t>(count * d));
    if (count > 0) std::memcpy(t.X.v.data(), bytes.data(), bytes.size());
  }
  t.classes = ds.classes;
  t.class_names = ds.class_names;
  t.integer_labels = ds.integer_labels;
  t.source = ds.source;
  return t;
}

Sparsity parse_sparsity(const std::string& name) {
  if (name == "no") return Sparsity::dense;
  if (name == "auto") return Sparsity::automatic;
  if (name == "yes") return Sparsity::sparse;
  throw Error("--sparse: expected yes, no or auto, got '" + name + "'", __FILE__, __LINE__, true);
}

bool has_extension(const std::string& path, const std::string& ext) {
  if (path.size() < ext.size()) return false;
  for (size_t k = 0; k < ext.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(path[path.size() - ext.size() + k])) !=
        std::tolower(static_cast<unsigned char>(ext[k])))
      return false;
  return true;
}

const char* format_name(Format f) {
  switch (f) {
    case Format::csv: return "csv";
    case Format::libsvm: return "libsvm";
    case Format::idx: return "idx";
    case Format::npy: return "npy";
    case Format::hdf5: return "hdf5";
    default: return "auto";
  }
}

Format detect_format(const std::string& path) {
  if (is_directory(path)) return Format::idx;
  if (path.find("idx3-ubyte") != std::string::npos) return Format::idx;
  if (has_extension(path, ".npy")) return Format::npy;
  if (has_extension(path, ".h5") || has_extension(path, ".hdf5")) return Format::hdf5;
  std::string p = path;
  if (ends_with(p, ".gz")) p = p.substr(0, p.size() - 3);
  for (const char* ext : {".libsvm", ".svm", ".svmlight"})
    if (ends_with(p, ext)) return Format::libsvm;
  return Format::csv;
}

Dataset read_dataset(const std::string& path, Format format, MPI_Comm comm, const ReadOptions& options) {
  if (format == Format::automatic) format = detect_format(path);
  // An option of another format is an error, not silently unused (a --labels file given with
  // CSV data would otherwise never be read).
  if (!options.labels.empty() && format != Format::npy)
    throw Error("--labels " + options.labels + ": only NPY data take a labels file; '" + path +
                    "' is read as " + format_name(format) + " (its labels are in the file)",
                __FILE__, __LINE__, true);
  if ((options.hdf5_data != "/X" || options.hdf5_labels != "/y") && format != Format::hdf5)
    throw Error("--hdf5-data/--hdf5-labels: only for HDF5 data; '" + path + "' is read as " + format_name(format),
                __FILE__, __LINE__, true);
  if (options.no_labels && format != Format::csv)
    throw Error(std::string("--no-labels: only for CSV data (NPY and HDF5 data are read without labels when they have "
                            "none); '") + path + "' is read as " + format_name(format),
                __FILE__, __LINE__, true);
  if (options.sparse == Sparsity::sparse && format != Format::libsvm)
    throw Error(std::string("--sparse yes: only LIBSVM data are read sparse; '") + path + "' is read as " +
                    format_name(format),
                __FILE__, __LINE__, true);
  const LabelOptions::Header header = options.label.header;
  if ((header != LabelOptions::Header::automatic || !options.label.column.empty() || !options.label.id_column.empty()) &&
      format != Format::csv)
    throw Error(std::string("--header/--label-column/--id-column: only for CSV/TSV data; '") + path + "' is read as " +
                    format_name(format),
                __FILE__, __LINE__, true);
  if (format == Format::idx) return read_idx(path, comm, options.native_types, options.label);
  if (format == Format::npy)
    return detail::read_npy(path, options.labels, options.labels_required, comm, options.native_types, options.label);
  if (format == Format::hdf5)
    return detail::read_hdf5(path, options.hdf5_data, options.hdf5_labels, options.labels_required, comm,
                             options.native_types, options.label);
  return read_text(path, format, comm, !options.no_labels, format == Format::libsvm ? options.sparse : Sparsity::dense,
                   options.label);
}

}  // namespace ssdr::io
