#pragma once
/// \file hdf5_internal.hpp
/// Private to src/io: HDF5 handles that close themselves and the parallel file open shared
/// by the HDF5 reader and writer.
#include <hdf5.h>
#include <mpi.h>

#include <string>

namespace ssdr::io::detail {

/// An HDF5 identifier with its close function; ok() is false for a failed call (id < 0).
class Hid {
 public:
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Hid() {
    if (id_ >= 0) close_(id_);
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  bool ok() const { return id_ >= 0; }
  hid_t get() const { return id_; }
  /// Hands the identifier over (to close it by hand and check the result).
  hid_t release() {
    const hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

/// Turns off HDF5's automatic error stack printing (ssdr reports one line itself). Local.
void quiet_hdf5();

/// Opens (read-only) or creates (fails if it exists) `path` with the MPI-IO driver over
/// `comm`. Collective. Returns a negative id on failure.
hid_t open_parallel(const std::string& path, MPI_Comm comm, bool create);

}  // namespace ssdr::io::detail
