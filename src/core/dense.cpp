#include "ssdr/core/dense.hpp"

#include <cstring>

#include <algorithm>
#include <cmath>
#include <string>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"

namespace ssdr {

Layout block_layout(int64_t n, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int64_t base = n / size, extra = n % size;
  Layout l;
  l.n_global = n;
  l.n_local = base + (rank < extra ? 1 : 0);
  l.start = rank * base + std::min<int64_t>(rank, extra);
  return l;
}

Layout layout_from_local(int64_t n_local, MPI_Comm comm) {
  Layout l;
  l.n_local = n_local;
  int64_t start = 0;
  MPI_Exscan(&n_local, &start, 1, MPI_INT64_T, MPI_SUM, comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  l.start = rank == 0 ? 0 : start;
  MPI_Allreduce(&n_local, &l.n_global, 1, MPI_INT64_T, MPI_SUM, comm);
  return l;
}

void gather_layout(MPI_Comm comm, int64_t row_start, int64_t n_local, std::vector<int64_t>& starts,
                   std::vector<int64_t>& counts) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int64_t mine[2] = {row_start, n_local};
  std::vector<int64_t> all(2 * static_cast<size_t>(size));
  MPI_Allgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, comm);
  starts.resize(static_cast<size_t>(size));
  counts.resize(static_cast<size_t>(size));
  for (size_t r = 0; r < static_cast<size_t>(size); ++r) {
    starts[r] = all[2 * r];
    counts[r] = all[2 * r + 1];
  }
}

Dense Dense::identity(int64_t n) {
  Dense I(n, n);
  for (int64_t i = 0; i < n; ++i) I(i, i) = 1.0;
  return I;
}

DistMatrix make_dist(MPI_Comm comm, int64_t n_global, int64_t cols) {
  const Layout l = block_layout(n_global, comm);
  DistMatrix X;
  X.comm = comm;
  X.n_global = n_global;
  X.row_start = l.start;
  X.n_local = l.n_local;
  X.cols = cols;
  X.v.assign(static_cast<size_t>(l.n_local * cols), 0.0);
  return X;
}

DistMatrix make_dist_local(MPI_Comm comm, int64_t n_local, int64_t cols) {
  const Layout l = layout_from_local(n_local, comm);
  DistMatrix X;
  X.comm = comm;
  X.n_global = l.n_global;
  X.row_start = l.start;
  X.n_local = n_local;
  X.cols = cols;
  X.v.assign(static_cast<size_t>(n_local * cols), 0.0);
  return X;
}

DistMatrix make_dist_like(const DistMatrix& X, int64_t cols) {
  SSDR_CHECK(cols >= 0, "make_dist_like: negative column count " + std::to_string(cols));
  DistMatrix Y;
  Y.comm = X.comm;
  Y.n_global = X.n_global;
  Y.row_start = X.row_start;
  Y.n_local = X.n_local;
  Y.cols = cols;
  Y.v.assign(static_cast<size_t>(X.n_local * cols), 0.0);
  return Y;
}

DistMatrix select_rows(const DistMatrix& X, const std::vector<char>& keep) { return select_rows(RowsView(X), keep); }

DistMatrix select_rows(const RowsView& X, const std::vector<char>& keep) {
  SSDR_CHECK(static_cast<int64_t>(keep.size()) == X.n_local,
             "select_rows: mask has " + std::to_string(keep.size()) + " entries for " +
                 std::to_string(X.n_local) + " local rows");
  int64_t count = 0;
  for (char k : keep) count += k ? 1 : 0;
  DistMatrix Y = make_dist_local(X.comm, count, X.cols);
  int64_t r = 0;
  for (int64_t i = 0; i < X.n_local; ++i)
    if (keep[static_cast<size_t>(i)]) X.tile(i, 1, Y.row(r++));
  return Y;
}

DistMatrixF to_single(const DistMatrix& X) {
  DistMatrixF Y = dist_layout<float>(X.comm, X.layout(), X.cols);
  Y.v.resize(X.v.size());
  for (size_t i = 0; i < X.v.size(); ++i) Y.v[i] = static_cast<float>(X.v[i]);
  return Y;
}

DistMatrix to_double(const DistMatrixF& X) {
  DistMatrix Y = dist_layout<double>(X.comm, X.layout(), X.cols);
  Y.v.assign(X.v.begin(), X.v.end());
  return Y;
}

RowsView::RowsView(const DistMatrix& X)
    : comm(X.comm), n_global(X.n_global), row_start(X.row_start), n_local(X.n_local), cols(X.cols), d_(&X) {}

RowsView::RowsView(const DistMatrixF& X)
    : comm(X.comm), n_global(X.n_global), row_start(X.row_start), n_local(X.n_local), cols(X.cols), f_(&X),
      copy_(std::make_shared<Copy>()) {}

const DistMatrix& RowsView::doubles() const {
  if (d_) return *d_;
  if (!copy_->rows) copy_->rows = std::make_unique<DistMatrix>(to_double(*f_));
  return *copy_->rows;
}

void RowsView::tile(int64_t i0, int64_t b, double* out) const {
  if (d_) {
    std::copy_n(d_->row(i0), b * cols, out);
  } else {
    const float* x = f_->row(i0);
    for (int64_t t = 0; t < b * cols; ++t) out[t] = static_cast<double>(x[t]);
  }
}

double RowsView::memory_bytes() const {
  return d_ ? 8.0 * static_cast<double>(d_->v.size()) : 4.0 * static_cast<double>(f_->v.size());
}

DistMatrix multiply(const DistMatrix& X, const Dense& W) {
  SSDR_CHECK_SHAPE("multiply: W", W.rows, W.cols, X.cols, W.cols);
  DistMatrix Y = make_dist_like(X, W.cols);
  if (X.n_local == 0 || W.cols == 0 || X.cols == 0) return Y;
  // Row-major Y (n_local×m) is column-major Yᵀ (m×n_local) = Wᵀ (m×d) · Xᵀ (d×n_local).
  // Every GEMM has the same shape (m×kTile×d; the last tile is zero-padded), so a row's
  // result never depends on how many rows this rank holds (BLAS libraries switch kernels
  // with the matrix size): the same bits on any rank count.
  constexpr int64_t kTile = 64;
  const int64_t d = X.cols, m = W.cols;
  const int64_t full = X.n_local / kTile * kTile;
  if (full > 0)
    for (int64_t i0 = 0; i0 < full; i0 += kTile)
      blas::gemm('T', 'N', m, kTile, d, 1.0, W.data(), W.rows, X.v.data() + i0 * d, d, 0.0,
                 Y.v.data() + i0 * m, m);
  if (full < X.n_local) {
    const int64_t rest = X.n_local - full;
    std::vector<double> xin(static_cast<size_t>(kTile * d), 0.0), yout(static_cast<size_t>(kTile * m));
    std::copy_n(X.v.data() + full * d, rest * d, xin.data());
    blas::gemm('T', 'N', m, kTile, d, 1.0, W.data(), W.rows, xin.data(), d, 0.0, yout.data(), m);
    std::copy_n(yout.data(), rest * m, Y.v.data() + full * m);
  }
  return Y;
}

Dense transpose_multiply(const DistMatrix& A, const DistMatrix& B) {
  SSDR_CHECK_COLLECTIVE(A.comm, A.n_local == B.n_local,
                        shape_message("transpose_multiply: local rows of B", B.n_local, B.cols, A.n_local, B.cols));
  Dense G(A.cols, B.cols);
  // Local blocks are row-major n_local×p, i.e. column-major p×n_local: G = A_locᵀ B_loc.
  if (A.n_local > 0 && A.cols > 0 && B.cols > 0)
    blas::gemm('N', 'T', A.cols, B.cols, A.n_local, 1.0, A.v.data(), A.cols, B.v.data(), B.cols, 0.0, G.data(),
               G.rows);
  allreduce_sum(G, A.comm);
  return G;
}

Dense allgather(const DistMatrix& X) {
  const std::vector<double> rowmajor = allgatherv(X.v.data(), X.n_local * X.cols, X.comm);
  Dense A(X.n_global, X.cols);
  for (int64_t i = 0; i < X.n_global; ++i)
    for (int64_t j = 0; j < X.cols; ++j) A(i, j) = rowmajor[static_cast<size_t>(i * X.cols + j)];
  return A;
}

void allreduce_sum(Dense& A, MPI_Comm comm) {
  if (!A.v.empty())
    MPI_Allreduce(MPI_IN_PLACE, A.v.data(), static_cast<int>(A.v.size()), MPI_DOUBLE, MPI_SUM,
                  comm);
}

double largest_magnitude_sign(const double* x, int64_t n, int64_t stride) {
  if (n <= 0) return 1.0;
  int64_t imax = 0;
  for (int64_t i = 1; i < n; ++i)
    if (std::abs(x[i * stride]) > std::abs(x[imax * stride])) imax = i;
  return x[imax * stride] < 0 ? -1.0 : 1.0;
}

void canonicalize_signs(Dense& A) {
  for (int64_t j = 0; j < A.cols; ++j)
    if (largest_magnitude_sign(A.col(j), A.rows) < 0)
      for (int64_t i = 0; i < A.rows; ++i) A(i, j) = -A(i, j);
}

const char* to_string(ElementType t) {
  switch (t) {
    case ElementType::f64: return "float64";
    case ElementType::f32: return "float32";
    case ElementType::u8: return "uint8";
  }
  return "?";
}

size_t element_size(ElementType t) {
  switch (t) {
    case ElementType::f64: return 8;
    case ElementType::f32: return 4;
    case ElementType::u8: return 1;
  }
  return 8;
}

const double* TypedRows::row(int64_t i, double* scratch) const {
  if (type == ElementType::f64) return reinterpret_cast<const double*>(bytes.data()) + i * cols;
  rows(i, 1, scratch);
  return scratch;
}

void TypedRows::rows(int64_t i0, int64_t b, double* out) const {
  const size_t first = static_cast<size_t>(i0 * cols), count = static_cast<size_t>(b * cols);
  switch (type) {
    case ElementType::f64:
      std::memcpy(out, bytes.data() + first * 8, count * 8);
      break;
    case ElementType::f32: {
      const float* p = reinterpret_cast<const float*>(bytes.data()) + first;
      for (size_t k = 0; k < count; ++k) out[k] = static_cast<double>(p[k]);
      break;
    }
    case ElementType::u8: {
      const unsigned char* p = bytes.data() + first;
      for (size_t k = 0; k < count; ++k) out[k] = static_cast<double>(p[k]);
      break;
    }
  }
}

}  // namespace ssdr
