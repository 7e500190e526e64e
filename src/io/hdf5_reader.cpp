// HDF5: the file is opened collectively with the MPI-IO driver; each rank selects its own
// hyperslab of rows of the data set and all ranks read collectively; HDF5 converts any
// stored numeric type (uint8 images, float32, float64, ...) to double. Labels are a 1-D (or
// n×1) integer data set read on every rank (replicated, as every reader keeps them).
#include <hdf5.h>

#include "hdf5_internal.hpp"
#include "npy_internal.hpp"
#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"

namespace ssdr::io::detail {

namespace {

/// The extent of a data set's dataspace (empty when not a simple dataspace).
std::vector<int64_t> extent(hid_t dset) {
  Hid space(H5Dget_space(dset), H5Sclose);
  const int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0) return {};
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<int64_t>(dims.begin(), dims.end());
}

H5T_class_t type_class(hid_t dset) {
  Hid type(H5Dget_type(dset), H5Tclose);
  return type.ok() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
}

/// The element type a data set's values keep exactly when read natively: uint8 for 8-bit
/// unsigned integers, float32 for 32-bit floats, float64 otherwise. Local.
ElementType native_type(hid_t dset) {
  Hid type(H5Dget_type(dset), H5Tclose);
  if (!type.ok()) return ElementType::f64;
  const H5T_class_t cls = H5Tget_class(type.get());
  const size_t size = H5Tget_size(type.get());
  if (cls == H5T_INTEGER && size == 1 && H5Tget_sign(type.get()) == H5T_SGN_NONE) return ElementType::u8;
  if (cls == H5T_FLOAT && size == 4) return ElementType::f32;
  return ElementType::f64;
}

}  // namespace

hid_t open_parallel(const std::string& path, MPI_Comm comm, bool create) {
  quiet_hdf5();
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL);
  return create ? H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get())
                : H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
}

void quiet_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Dataset read_hdf5(const std::string& path, const std::string& data_name, const std::string& labels_name,
                  bool labels_required, MPI_Comm comm, bool native_types, const LabelOptions& label) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  attempt_on_root(comm, [&] {
    require_data_file(path);
    if (H5Fis_hdf5(path.c_str()) <= 0) fail(path + ": not an HDF5 file");
  });
  Hid file(open_parallel(path, comm, false), H5Fclose);
  SSDR_CHECK_COLLECTIVE(comm, file.ok(), "cannot open '" + path + "' as HDF5 (truncated or damaged file?)");

  // The data set: n×d, numeric.
  Hid data(H5Dopen2(file.get(), data_name.c_str(), H5P_DEFAULT), H5Dclose);
  SSDR_CHECK_COLLECTIVE(comm, data.ok(),
                        H5Lexists(file.get(), data_name.c_str(), H5P_DEFAULT) > 0
                            ? path + ": '" + data_name + "' is not a data set (a group?); name the n x d data set with --hdf5-data"
                            : path + ": no data set '" + data_name + "' (name it with --hdf5-data, e.g. /X)");
  const std::vector<int64_t> dims = extent(data.get());
  SSDR_CHECK_COLLECTIVE(comm, dims.size() == 2,
                        path + ":" + data_name + ": expected a 2-D data set (n samples x d features), found " +
                            std::to_string(dims.size()) + " dimension(s)");
  const H5T_class_t cls = type_class(data.get());
  SSDR_CHECK_COLLECTIVE(comm, cls == H5T_INTEGER || cls == H5T_FLOAT,
                        path + ":" + data_name + ": expected a numeric (integer or floating-point) data set");
  const int64_t n = dims[0], d = dims[1];
  SSDR_CHECK_COLLECTIVE(comm, n >= 1 && d >= 1, path + ":" + data_name + ": empty data set (no samples)");
  const ElementType keep = native_types ? native_type(data.get()) : ElementType::f64;
  {
    const int per_node = ranks_on_host(comm);
    std::string message;
    const bool ok = attempt([&] { require_dense_fits(n, d, size, per_node, path + ":" + data_name, element_size(keep)); },
                            message);
    SSDR_CHECK_COLLECTIVE(comm, ok, message);
  }

  Dataset ds;
  ds.source = path;
  if (keep != ElementType::f64) make_typed(ds, n, d, keep, comm);
  else ds.X = make_dist(comm, n, d);
  {
    Hid fspace(H5Dget_space(data.get()), H5Sclose);
    const hsize_t start[2] = {static_cast<hsize_t>(ds.X.row_start), 0};
    const hsize_t count[2] = {static_cast<hsize_t>(ds.X.n_local), static_cast<hsize_t>(d)};
    if (ds.X.n_local > 0)
      H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    else
      H5Sselect_none(fspace.get());
    Hid mspace(H5Screate_simple(2, count, nullptr), H5Sclose);
    if (ds.X.n_local == 0) H5Sselect_none(mspace.get());
    Hid dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
    H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE);
    const herr_t rc =
        keep == ElementType::f64
            ? H5Dread(data.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), dxpl.get(), ds.X.v.data())
            : H5Dread(data.get(), keep == ElementType::u8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT, mspace.get(),
                      fspace.get(), dxpl.get(), ds.rows.bytes.data());
    SSDR_CHECK_COLLECTIVE(comm, rc >= 0, "cannot read " + path + ":" + data_name + " (HDF5 read error)");
  }
  if (ds.typed) check_values(ds.rows, path + ":" + data_name);
  else check_values(ds.X, path + ":" + data_name);

  // Labels: a 1-D (or n×1) integer data set of n values in 0..n−1.
  const htri_t has_labels = H5Lexists(file.get(), labels_name.c_str(), H5P_DEFAULT);
  if (has_labels <= 0) {
    SSDR_CHECK_COLLECTIVE(comm, !labels_required,
                          path + ": no labels data set '" + labels_name + "' (name it with --hdf5-labels, e.g. /y)");
    return ds;
  }
  Hid lab(H5Dopen2(file.get(), labels_name.c_str(), H5P_DEFAULT), H5Dclose);
  SSDR_CHECK_COLLECTIVE(comm, lab.ok(), path + ": '" + labels_name + "' is not a data set");
  const std::vector<int64_t> ldims = extent(lab.get());
  const bool shape_ok = (ldims.size() == 1 && ldims[0] == n) || (ldims.size() == 2 && ldims[0] == n && ldims[1] == 1);
  SSDR_CHECK_COLLECTIVE(comm, shape_ok,
                        path + ":" + labels_name + ": expected " + std::to_string(n) + " labels (one per row of " +
                            data_name + ")");
  const H5T_class_t label_class = type_class(lab.get());
  SSDR_CHECK_COLLECTIVE(comm, label_class == H5T_INTEGER || label_class == H5T_STRING,
                        path + ":" + labels_name + ": labels must have an integer or a string type");
  // Each rank reads its own rows' labels (a hyperslab): nothing of size n on any rank.
  const int64_t n_local = ds.X.n_local;
  Hid fspace(H5Dget_space(lab.get()), H5Sclose);
  const hsize_t start[2] = {static_cast<hsize_t>(ds.X.row_start), 0};
  const hsize_t count[2] = {static_cast<hsize_t>(n_local), 1};
  const int rank_of = static_cast<int>(ldims.size());
  if (n_local > 0) H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
  else H5Sselect_none(fspace.get());
  Hid mspace(H5Screate_simple(rank_of, count, nullptr), H5Sclose);
  if (n_local == 0) H5Sselect_none(mspace.get());
  Hid dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE);
  const std::string what = path + ":" + labels_name;
  if (label_class == H5T_INTEGER) {
    std::vector<long long> raw(static_cast<size_t>(n_local));
    const herr_t rc = H5Dread(lab.get(), H5T_NATIVE_LLONG, mspace.get(), fspace.get(), dxpl.get(), raw.data());
    SSDR_CHECK_COLLECTIVE(comm, rc >= 0, "cannot read " + what + " (HDF5 read error)");
    code_integer_labels(ds, std::vector<int64_t>(raw.begin(), raw.end()), label, what, comm);
    return ds;
  }
  // Names (h5py's variable-length strings, or fixed-length ones), coded as a CSV field is.
  Hid ftype(H5Dget_type(lab.get()), H5Tclose);
  const bool variable = H5Tis_variable_str(ftype.get()) > 0;
  Hid mtype(H5Tcopy(H5T_C_S1), H5Tclose);
  const size_t width = variable ? 0 : H5Tget_size(ftype.get());
  H5Tset_size(mtype.get(), variable ? H5T_VARIABLE : width);
  H5Tset_cset(mtype.get(), H5Tget_cset(ftype.get()));
  std::vector<std::string> names(static_cast<size_t>(n_local));
  herr_t rc = 0;
  if (variable) {
    std::vector<char*> ptrs(static_cast<size_t>(n_local), nullptr);
    rc = H5Dread(lab.get(), mtype.get(), mspace.get(), fspace.get(), dxpl.get(), ptrs.data());
    if (rc >= 0) {
      for (int64_t i = 0; i < n_local; ++i)
        if (ptrs[static_cast<size_t>(i)] != nullptr) names[static_cast<size_t>(i)] = ptrs[static_cast<size_t>(i)];
      H5Dvlen_reclaim(mtype.get(), mspace.get(), H5P_DEFAULT, ptrs.data());
    }
  } else {
    std::vector<char> buf(static_cast<size_t>(n_local) * width + 1, '\0');
    rc = H5Dread(lab.get(), mtype.get(), mspace.get(), fspace.get(), dxpl.get(), buf.data());
    for (int64_t i = 0; rc >= 0 && i < n_local; ++i) {
      const char* e = buf.data() + static_cast<size_t>(i) * width;
      names[static_cast<size_t>(i)] = std::string(e, strnlen(e, width));
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, rc >= 0, "cannot read " + what + " (HDF5 read error)");
  LabelCoder coder(label);
  std::vector<int> codes(static_cast<size_t>(n_local), -1);
  std::string message;
  const std::string where_path = what + ": label";
  const bool ok = attempt(
      [&] {
        for (int64_t i = 0; i < n_local; ++i) {
          const std::string bad = utf8_problem(names[static_cast<size_t>(i)]);
          if (!bad.empty())
            fail(what + ": label " + std::to_string(ds.X.row_start + i + 1) + " is not valid UTF-8 (" + bad +
                 "); expected UTF-8 text");
          codes[static_cast<size_t>(i)] = coder.code(names[static_cast<size_t>(i)], Where{&where_path, ds.X.row_start + i + 1});
        }
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  coder.finish(comm, what);
  set_classes(ds, coder, std::move(codes));
  return ds;
}

}  // namespace ssdr::io::detail

namespace ssdr::io {

void read_hdf5_rows(const std::string& path, const std::string& name, int64_t row_start, int64_t rows_local,
                    bool integer, std::vector<int64_t>* i64, std::vector<double>* f64, int64_t& rows_global,
                    int64_t& cols, MPI_Comm comm) {
  using detail::Hid;
  detail::attempt_on_root(comm, [&] {
    detail::require_data_file(path);
    if (H5Fis_hdf5(path.c_str()) <= 0) detail::fail(path + ": not an HDF5 file");
  });
  Hid file(detail::open_parallel(path, comm, false), H5Fclose);
  SSDR_CHECK_COLLECTIVE(comm, file.ok(), "cannot open '" + path + "' as HDF5 (truncated or damaged file?)");
  Hid data(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  SSDR_CHECK_COLLECTIVE(comm, data.ok(), path + ": no data set '" + name + "'");
  const std::vector<int64_t> dims = detail::extent(data.get());
  SSDR_CHECK_COLLECTIVE(comm, dims.size() == 2,
                        path + ":" + name + ": expected a 2-D data set, found " + std::to_string(dims.size()) +
                            " dimension(s)");
  const H5T_class_t cls = detail::type_class(data.get());
  SSDR_CHECK_COLLECTIVE(comm, cls == H5T_INTEGER || (!integer && cls == H5T_FLOAT),
                        path + ":" + name + (integer ? ": expected an integer data set" : ": expected a numeric data set"));
  rows_global = dims[0];
  cols = dims[1];
  SSDR_CHECK_COLLECTIVE(comm, row_start >= 0 && rows_local >= 0 && row_start + rows_local <= rows_global,
                        path + ":" + name + ": " + std::to_string(rows_global) + " rows, fewer than the " +
                            std::to_string(row_start + rows_local) + " expected");
  const size_t count_values = static_cast<size_t>(rows_local * cols);
  if (integer) i64->assign(count_values, 0);
  else f64->assign(count_values, 0.0);
  Hid fspace(H5Dget_space(data.get()), H5Sclose);
  const hsize_t start[2] = {static_cast<hsize_t>(row_start), 0};
  const hsize_t count[2] = {static_cast<hsize_t>(rows_local), static_cast<hsize_t>(cols)};
  const bool empty = rows_local == 0 || cols == 0;
  if (empty) H5Sselect_none(fspace.get());
  else H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
  Hid mspace(H5Screate_simple(2, count, nullptr), H5Sclose);
  if (empty) H5Sselect_none(mspace.get());
  Hid dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE);
  const herr_t rc = integer ? H5Dread(data.get(), H5T_NATIVE_INT64, mspace.get(), fspace.get(), dxpl.get(), i64->data())
                            : H5Dread(data.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), dxpl.get(), f64->data());
  SSDR_CHECK_COLLECTIVE(comm, rc >= 0, "cannot read " + path + ":" + name + " (HDF5 read error)");
}

}  // namespace ssdr::io

