// The HDF5 writers: distributed rows to one file with the MPI-IO driver (write_hdf5_rows:
// room reserved, each data set agreed, the close given room), a matrix with its labels
// (write_hdf5), the embedding with its labels, ids and class names, and the reading of a
// root attribute. Committed by the layer of output.cpp.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "hdf5_internal.hpp"
#include "output_internal.hpp"

namespace ssdr::io {

using detail::commit_shared;
using detail::first_row;
using detail::integer_names;
using detail::is_special;
using detail::shared_temp_name;
using detail::SpaceReserve;

void write_hdf5_rows(const std::string& path, int64_t rows_local, const std::vector<Hdf5RowBlock>& blocks,
                     MPI_Comm comm, const std::vector<std::pair<std::string, std::string>>& attributes) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // HDF5 cannot stream into a device or FIFO, and renaming over one would replace it.
  int special = rank == 0 && is_special(path) ? 1 : 0;
  MPI_Bcast(&special, 1, MPI_INT, 0, comm);
  SSDR_CHECK_COLLECTIVE(comm, special == 0,
                        "cannot write HDF5 to '" + path + "': it is a device or FIFO (HDF5 needs a regular file; "
                        "use .npy or .csv to stream)");
  const int64_t start = first_row(rows_local, comm);
  int64_t n = 0;
  MPI_Allreduce(&rows_local, &n, 1, MPI_INT64_T, MPI_SUM, comm);
  auto element_bytes = [](const Hdf5RowBlock& b) -> int64_t {
    return b.type == Hdf5RowBlock::Type::str ? std::max<int64_t>(b.str_bytes, 1)
                                             : b.type == Hdf5RowBlock::Type::i32 ? 4 : 8;
  };
  int64_t data_bytes = 0;
  for (const Hdf5RowBlock& b : blocks) data_bytes += n * std::max<int64_t>(b.cols, 1) * element_bytes(b);
  const int64_t metadata_reserve = int64_t{1} << 20;
  require_free_space(path, data_bytes + 2 * metadata_reserve, comm);
  const std::string tmp = shared_temp_name(path, comm);
  TemporaryFileGuard guard(tmp);
  // HDF5 1.10 cannot survive a file whose close fails: a metadata flush that meets a full
  // disk (or a quota) leaves a half-closed file that crashes the library at MPI_Finalize.
  // Rank 0 therefore first takes the whole file's size on disk (a full disk, a quota or a
  // file-size limit refuses here, before HDF5 opens anything), then keeps 1 MiB of it beside
  // the file (far more than the metadata of a few data sets) and frees it just before the
  // close, so the close's flush has room even if the raw data filled the disk.
  SpaceReserve reserve(tmp + ".reserve", data_bytes + metadata_reserve, metadata_reserve, rank == 0);
  SSDR_CHECK_COLLECTIVE(comm, reserve.problem().empty(), "cannot write '" + path + "': " + reserve.problem());
  bool ok = true;
  std::string message;
  {
    detail::Hid file(detail::open_parallel(tmp, comm, true), H5Fclose);
    SSDR_CHECK_COLLECTIVE(comm, file.ok(), "cannot create '" + path + "' (HDF5)");
    auto write_set = [&](const std::string& set, hid_t mem_type, hid_t file_type, int rank_dims, const hsize_t* dims,
                         const hsize_t* offset, const hsize_t* count, const void* data) {
      // Intermediate groups ("/data/X") are created as needed.
      detail::Hid lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
      H5Pset_create_intermediate_group(lcpl.get(), 1);
      detail::Hid space(H5Screate_simple(rank_dims, dims, nullptr), H5Sclose);
      detail::Hid dset(H5Dcreate2(file.get(), set.c_str(), file_type, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Dclose);
      if (!dset.ok()) return false;
      detail::Hid fspace(H5Dget_space(dset.get()), H5Sclose);
      bool empty = false;
      for (int k = 0; k < rank_dims; ++k) empty = empty || count[k] == 0;
      if (empty)
        H5Sselect_none(fspace.get());
      else
        H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, offset, nullptr, count, nullptr);
      detail::Hid mspace(H5Screate_simple(rank_dims, count, nullptr), H5Sclose);
      if (empty) H5Sselect_none(mspace.get());
      detail::Hid dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
      H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE);
      return H5Dwrite(dset.get(), mem_type, mspace.get(), fspace.get(), dxpl.get(), data) >= 0;
    };
    // Each data set's result is agreed before the next collective call: a write that failed
    // on one rank only (its part met the quota) must not leave the others in the next
    // data set's collective write.
    auto agreed = [&](bool mine) {
      int v = mine ? 1 : 0, all = 0;
      MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, comm);
      return all != 0;
    };
    for (const Hdf5RowBlock& b : blocks) {
      if (!ok) break;
      const int rank_dims = b.cols > 0 ? 2 : 1;
      const hsize_t dims[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(b.cols)};
      const hsize_t offset[2] = {static_cast<hsize_t>(start), 0};
      const hsize_t count[2] = {static_cast<hsize_t>(rows_local), static_cast<hsize_t>(b.cols)};
      if (b.type == Hdf5RowBlock::Type::str) {  // fixed-length UTF-8, NUL-terminated, in memory as in the file
        detail::Hid text(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(text.get(), static_cast<size_t>(std::max<int64_t>(b.str_bytes, 1)));
        H5Tset_strpad(text.get(), H5T_STR_NULLTERM);
        H5Tset_cset(text.get(), H5T_CSET_UTF8);
        ok = agreed(write_set(b.name, text.get(), text.get(), rank_dims, dims, offset, count, b.data));
        continue;
      }
      const hid_t mem = b.type == Hdf5RowBlock::Type::f64   ? H5T_NATIVE_DOUBLE
                        : b.type == Hdf5RowBlock::Type::i64 ? H5T_NATIVE_INT64
                                                            : H5T_NATIVE_INT;
      const hid_t stored = b.type == Hdf5RowBlock::Type::f64   ? H5T_IEEE_F64LE
                           : b.type == Hdf5RowBlock::Type::i64 ? H5T_STD_I64LE
                                                               : H5T_STD_I32LE;
      ok = agreed(write_set(b.name, mem, stored, rank_dims, dims, offset, count, b.data));
    }
    // Root attributes: metadata, created collectively with the same values on every rank.
    for (const auto& [name, text] : attributes) {
      if (!ok) break;
      detail::Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(type.get(), std::max<size_t>(text.size(), 1));
      H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
      detail::Hid space(H5Screate(H5S_SCALAR), H5Sclose);
      detail::Hid attr(H5Acreate2(file.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                       H5Aclose);
      ok = agreed(attr.ok() && H5Awrite(attr.get(), type.get(), text.empty() ? "" : text.data()) >= 0);
    }
    if (!ok) message = "cannot write '" + path + "' (HDF5 write error: disk full or quota exceeded?)";
    reserve.release();
    MPI_Barrier(comm);  // the room is free before any rank flushes metadata
    if (H5Fclose(file.release()) < 0 && ok) {  // collective; the metadata reaches the file here
      ok = false;
      message = "cannot write '" + path + "': HDF5 could not close the file (disk full or quota exceeded?)";
    }
  }
  commit_shared(tmp, path, ok, message, comm);
}

std::string read_hdf5_root_attribute(const std::string& path, const std::string& name, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string text, problem;
  if (rank == 0) {
    detail::Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) {
      problem = "cannot open '" + path + "' as HDF5";
    } else if (H5Aexists(file.get(), name.c_str()) > 0) {
      detail::Hid attr(H5Aopen(file.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
      detail::Hid type(attr.ok() ? H5Aget_type(attr.get()) : -1, H5Tclose);
      if (!type.ok() || H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0) {
        problem = path + ": attribute " + name + " is not a fixed-length string";
      } else {
        std::string buffer(H5Tget_size(type.get()), '\0');
        if (H5Aread(attr.get(), type.get(), buffer.data()) < 0)
          problem = path + ": cannot read attribute " + name;
        else
          text = buffer.substr(0, buffer.find('\0'));
      }
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, problem.empty(), problem);
  return bcast_string(text, 0, comm);
}

void write_hdf5(const std::string& path, const DistMatrix& X, const std::string& name, const std::vector<int>* labels,
                const std::string& labels_name, const std::vector<std::string>* names, bool strings) {
  std::vector<Hdf5RowBlock> blocks = {{name, Hdf5RowBlock::Type::f64, X.cols, X.v.data()}};
  // The labels live with the rows: each rank writes its own rows' labels, as the reader reads
  // them back to the same classes (names as names, integer classes as their integers).
  std::vector<int64_t> values, as_integers;
  std::vector<int32_t> as_int32;
  std::vector<char> as_text;
  if (labels != nullptr) {
    const size_t n_local = labels->size();
    if (names == nullptr) {
      blocks.push_back({labels_name, Hdf5RowBlock::Type::i32, 0, labels->data()});
    } else if (!strings && integer_names(*names, &values)) {
      bool fits = true;
      for (int64_t v : values) fits = fits && v >= INT32_MIN && v <= INT32_MAX;
      for (size_t i = 0; i < n_local; ++i) {
        const int code = (*labels)[i];
        as_integers.push_back(code >= 0 && static_cast<size_t>(code) < values.size() ? values[static_cast<size_t>(code)] : -1);
      }
      if (fits) {
        as_int32.assign(as_integers.begin(), as_integers.end());
        blocks.push_back({labels_name, Hdf5RowBlock::Type::i32, 0, as_int32.data()});
      } else {
        blocks.push_back({labels_name, Hdf5RowBlock::Type::i64, 0, as_integers.data()});
      }
    } else {
      size_t width = 1;  // the longest name and its NUL: the same on every rank (names are replicated)
      for (const std::string& s : *names) width = std::max(width, s.size() + 1);
      as_text.assign(n_local * width, '\0');
      for (size_t i = 0; i < n_local; ++i) {
        const int code = (*labels)[i];
        if (code < 0 || static_cast<size_t>(code) >= names->size()) continue;  // "": unlabeled
        const std::string& s = (*names)[static_cast<size_t>(code)];
        std::copy(s.begin(), s.end(), as_text.begin() + static_cast<std::ptrdiff_t>(i * width));
      }
      Hdf5RowBlock b{labels_name, Hdf5RowBlock::Type::str, 0, as_text.data()};
      b.str_bytes = static_cast<int64_t>(width);
      blocks.push_back(b);
    }
  }
  write_hdf5_rows(path, X.n_local, blocks, X.comm);
}

namespace detail {

void write_hdf5_embedding(const DistMatrix& Y, const std::string& path, const std::string& dataset,
                          const TableColumns& table) {
  if (table.labels == nullptr && table.ids == nullptr && table.id_names == nullptr) {
    write_hdf5(path, Y, dataset);
    return;
  }
  // The rows' class codes beside them (/labels, -1: none) and the classes' names as the
  // file's attribute class_names (a JSON array; code k is its k-th name).
  std::string names = "[";
  if (table.names != nullptr)
    for (size_t k = 0; k < table.names->size(); ++k) {
      names += k > 0 ? ",\"" : "\"";
      for (char ch : (*table.names)[k]) {
        if (ch == '"' || ch == '\\') names.push_back('\\');
        if (static_cast<unsigned char>(ch) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(ch)));
          names += esc;
          continue;
        }
        names.push_back(ch);
      }
      names.push_back('"');
    }
  names += "]";
  std::vector<Hdf5RowBlock> blocks = {{dataset, Hdf5RowBlock::Type::f64, Y.cols, Y.v.data()}};
  if (table.labels != nullptr) blocks.push_back({"/labels", Hdf5RowBlock::Type::i32, 0, table.labels->data()});
  // Rows that are not the data's rows 0..n−1 in order (the soft labels' transductive rows)
  // carry their index in the data file, and the --id-column texts when there are some.
  std::vector<char> id_text;
  if (table.ids != nullptr) blocks.push_back({"/ids", Hdf5RowBlock::Type::i64, 0, table.ids->data()});
  if (table.id_names != nullptr) {
    int64_t width = 1;
    for (const std::string& t : *table.id_names) width = std::max<int64_t>(width, static_cast<int64_t>(t.size()) + 1);
    MPI_Allreduce(MPI_IN_PLACE, &width, 1, MPI_INT64_T, MPI_MAX, Y.comm);
    id_text.assign(table.id_names->size() * static_cast<size_t>(width), '\0');
    for (size_t i = 0; i < table.id_names->size(); ++i)
      std::copy((*table.id_names)[i].begin(), (*table.id_names)[i].end(),
                id_text.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(width)));
    Hdf5RowBlock b{"/id_names", Hdf5RowBlock::Type::str, 0, id_text.data()};
    b.str_bytes = width;
    blocks.push_back(b);
  }
  std::vector<std::pair<std::string, std::string>> attributes;
  if (table.labels != nullptr) attributes.emplace_back("class_names", names);
  write_hdf5_rows(path, Y.n_local, blocks, Y.comm, attributes);
}

}  // namespace detail

}  // namespace ssdr::io
