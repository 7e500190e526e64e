// Reading labeled data sets (CSV, LIBSVM/SVMlight, IDX) into a row-distributed DistMatrix:
// format names, detection from the path, and dispatch to the readers, one file per format
// (text_reader.cpp with csv_reader.cpp and libsvm_reader.cpp, idx_reader.cpp; see
// reader_internal.hpp).
#include "ssdr/io/dataset.hpp"

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

Format detect_format(const std::string& path) {
  if (is_directory(path)) return Format::idx;
  if (path.find("idx3-ubyte") != std::string::npos) return Format::idx;
  if (ends_with(path, ".npy")) return Format::npy;
  if (ends_with(path, ".h5") || ends_with(path, ".hdf5")) return Format::hdf5;
  std::string p = path;
  if (ends_with(p, ".gz")) p = p.substr(0, p.size() - 3);
  for (const char* ext : {".libsvm", ".svm", ".svmlight"})
    if (ends_with(p, ext)) return Format::libsvm;
  return Format::csv;
}

Dataset read_dataset(const std::string& path, Format format, MPI_Comm comm, const ReadOptions& options) {
  if (format == Format::automatic) format = detect_format(path);
  if (format == Format::idx) return read_idx(path, comm);
  if (format == Format::npy) return detail::read_npy(path, options.labels, options.labels_required, comm);
  if (format == Format::hdf5)
    return detail::read_hdf5(path, options.hdf5_data, options.hdf5_labels, options.labels_required, comm);
  return read_text(path, format, comm);
}

}  // namespace ssdr::io
