#pragma once
/// \file sparse.hpp
/// ssdr::SparseRows: an n×d sparse matrix distributed by samples (rows) like a DistMatrix,
/// each rank holding its block of rows in compressed sparse row (CSR) form. This is how
/// high-dimensional sparse data (LIBSVM text, bag-of-words, d = 10⁵–10⁶) stay sparse up to
/// the truncated SVD that reduces them (data::fit_preprocessor on SparseRows): memory
/// 12 bytes per stored value plus 8 per row, never n·d.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr {

/// Rank r holds global rows [row_start, row_start + n_local) of the n_global × cols matrix:
/// local row i has its values val[row_ptr[i] .. row_ptr[i+1]) in the columns col[...]
/// (0-based, strictly increasing within a row). Column indices are 32-bit (PETSc's index
/// type here): cols < 2³¹.
struct SparseRows {
  MPI_Comm comm = MPI_COMM_WORLD;
  int64_t n_global = 0;
  int64_t row_start = 0;
  int64_t n_local = 0;
  int64_t cols = 0;                ///< d
  std::vector<int64_t> row_ptr;    ///< n_local + 1 offsets into col and val (row_ptr[0] = 0)
  std::vector<int32_t> col;        ///< column of each stored value
  std::vector<double> val;         ///< the stored values (explicit zeros are dropped by the reader)

  /// The values stored on this rank. Local.
  int64_t nnz_local() const { return row_ptr.empty() ? 0 : row_ptr.back(); }
  /// The row distribution (n, first global row, local rows). Local.
  Layout layout() const { return Layout{n_global, row_start, n_local}; }
};

}  // namespace ssdr
