#pragma once
/// \file dense.hpp
/// The two dense containers every module shares.
///
/// - ssdr::Dense: a small matrix replicated on every rank (d×d scatter matrices, d×m
///   projections), column-major so it goes straight to BLAS/LAPACK.
/// - ssdr::DistMatrix: an n×cols matrix distributed by samples (rows). Rank r holds the
///   contiguous block of global rows [row_start, row_start + n_local), stored row-major; in
///   LAPACK terms the local block is the cols×n_local column-major matrix X_localᵀ (so the
///   paper's X = [x_1 … x_n] ∈ R^{d×n} is exactly the concatenation of the local blocks).
///   No rank ever holds more than its block.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace ssdr {

/// Contiguous block distribution of n items over the ranks of a communicator, the same
/// rule as PetscSplitOwnership: the first (n mod p) ranks get one item more.
struct Layout {
  int64_t n_global = 0;
  int64_t start = 0;
  int64_t n_local = 0;
};

/// Block layout of n items over `comm`. Not collective (pure arithmetic on rank and size).
Layout block_layout(int64_t n, MPI_Comm comm);
/// Layout given the local count on every rank. Collective (MPI_Exscan + MPI_Allreduce).
Layout layout_from_local(int64_t n_local, MPI_Comm comm);

/// Every rank's first global row and row count (MPI_Allgather of two integers), for
/// finding the owner of a global row in any (even uneven) row layout. Collective.
void gather_layout(MPI_Comm comm, int64_t row_start, int64_t n_local, std::vector<int64_t>& starts,
                   std::vector<int64_t>& counts);

/// Replicated column-major dense matrix (rows×cols), the same on every rank that holds it.
struct Dense {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> v;  ///< column-major, v[i + j*rows]

  Dense() = default;
  Dense(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& operator()(int64_t i, int64_t j) { return v[static_cast<size_t>(i + j * rows)]; }
  double operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i + j * rows)]; }
  double* data() { return v.data(); }
  const double* data() const { return v.data(); }
  double* col(int64_t j) { return v.data() + j * rows; }
  const double* col(int64_t j) const { return v.data() + j * rows; }
  static Dense identity(int64_t n);
};

/// Sample-distributed dense matrix (n_global×cols, rows distributed, row-major locally) with
/// elements of type T: DistMatrix (double) for everything computed, DistMatrixF (float) for
/// preprocessed rows kept in single precision (--precision single: half the bytes of the
/// largest array of a fit; every computation reads them as the doubles they round to).
template <typename T>
struct DistMatrixT {
  MPI_Comm comm = MPI_COMM_WORLD;
  int64_t n_global = 0;   ///< n: total rows (samples)
  int64_t row_start = 0;  ///< first global row held here
  int64_t n_local = 0;    ///< rows held here
  int64_t cols = 0;       ///< d (or m, or c+1)
  std::vector<T> v;       ///< row-major local block, v[i*cols + j]

  /// Row i of the local block (cols values). Local.
  T* row(int64_t i) { return v.data() + i * cols; }
  const T* row(int64_t i) const { return v.data() + i * cols; }
  T& operator()(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
  T operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
  /// The row distribution (n, first global row, local rows). Local.
  Layout layout() const { return Layout{n_global, row_start, n_local}; }
};
/// The distributed matrix of doubles: every computed result, and the rows by default.
using DistMatrix = DistMatrixT<double>;
/// The distributed matrix of floats: preprocessed rows under --precision single.
using DistMatrixF = DistMatrixT<float>;

/// An n×cols DistMatrixT<T> with layout l over comm and no values allocated (v empty: the
/// caller fills l.n_local·cols). Local.
template <typename T>
DistMatrixT<T> dist_layout(MPI_Comm comm, const Layout& l, int64_t cols) {
  DistMatrixT<T> Y;
  Y.comm = comm;
  Y.n_global = l.n_global;
  Y.row_start = l.start;
  Y.n_local = l.n_local;
  Y.cols = cols;
  return Y;
}

/// X with every value rounded to the nearest float (IEEE round-to-nearest-even; values
/// beyond float's range become ±inf), same layout. Local. Frees nothing: the caller drops X.
DistMatrixF to_single(const DistMatrix& X);
/// X's values as doubles (exact), same layout. Local.
DistMatrix to_double(const DistMatrixF& X);

/// A read-only view of preprocessed rows (n×cols, distributed by samples) in the precision
/// they are stored in: what a method learns from (methods::TrainingData). Built implicitly
/// from a DistMatrix or a DistMatrixF, which must outlive the view (a temporary passed to a
/// function taking a view is fine; a view kept beyond the expression, as TrainingData keeps
/// one, must not be built from a temporary).
/// The code that reads the rows in bulk (kNN searches, scatter matrices, embeddings) reads
/// either storage through single()/floats() or tile(); the rest calls doubles(), which for
/// float rows makes their double copy once, shared by every copy of the view until
/// release() – the same values, so the same results, at the double copy's memory (a method
/// that reads them so holds 12 bytes per value instead of 8).
class RowsView {
 public:
  /// A view of X's double rows (implicit: a DistMatrix goes wherever rows are read). Local.
  RowsView(const DistMatrix& X);  // NOLINT(google-explicit-constructor)
  /// A view of X's float rows. Local.
  RowsView(const DistMatrixF& X);  // NOLINT(google-explicit-constructor)
  MPI_Comm comm = MPI_COMM_WORLD;
  int64_t n_global = 0, row_start = 0, n_local = 0, cols = 0;  ///< the viewed matrix's layout and d
  /// The row distribution (n, first global row, local rows). Local.
  Layout layout() const { return Layout{n_global, row_start, n_local}; }
  /// True when the rows are stored as floats. Local.
  bool single() const { return f_ != nullptr; }
  /// The float rows (single() only; nullptr otherwise). Local.
  const DistMatrixF* floats() const { return f_; }
  /// The rows as doubles: the viewed DistMatrix, or the float rows' double copy, made on the
  /// first call of any copy of this view (Local; its memory is n_local·cols doubles).
  /// \throws nothing beyond bad_alloc.
  const DistMatrix& doubles() const;
  /// True when float rows have their double copy now. Local.
  bool widened() const { return copy_ && copy_->rows; }
  /// Frees the double copy of float rows (for every copy of this view; a later doubles() makes
  /// it again). References doubles() returned become invalid. Local.
  void release() const {
    if (copy_) copy_->rows.reset();
  }
  /// Local rows [i0, i0 + b) as doubles into out (b×cols, row-major; exact). Local.
  void tile(int64_t i0, int64_t b, double* out) const;
  /// The bytes the rows take on this rank (4 or 8 per value), without a double copy. Local.
  double memory_bytes() const;

 private:
  struct Copy {
    std::unique_ptr<DistMatrix> rows;
  };
  const DistMatrix* d_ = nullptr;
  const DistMatrixF* f_ = nullptr;
  std::shared_ptr<Copy> copy_;  ///< float rows: the double copy's slot, one for all copies
};

/// The element types a data set's rows are kept in (the file's own: IDX and uint8 images
/// stay bytes, float32 embeddings stay floats).
enum class ElementType : uint8_t { f64, f32, u8 };
/// "float64", "float32", "uint8". Local.
const char* to_string(ElementType t);
/// Bytes per element. Local.
size_t element_size(ElementType t);

/// An n×cols matrix distributed by samples exactly as DistMatrix (the same layout fields),
/// but stored row-major in its own element type: uint8 and float32 data take 1/8 and 1/2 of
/// the memory of doubles. Every consumer reads a row as doubles through row(), which converts
/// it (exactly: every uint8 and float32 value is a double) into a caller's scratch of `cols`
/// doubles, so what is computed from the rows has the bits of the same computation on their
/// double copy.
struct TypedRows {
  MPI_Comm comm = MPI_COMM_WORLD;
  int64_t n_global = 0;
  int64_t row_start = 0;
  int64_t n_local = 0;
  int64_t cols = 0;
  ElementType type = ElementType::f64;
  std::vector<unsigned char> bytes;  ///< n_local·cols elements of `type`, row-major

  /// Local row i as doubles: a pointer into the storage (float64) or into `scratch` (cols
  /// doubles), filled by exact conversion. Local.
  const double* row(int64_t i, double* scratch) const;
  /// Rows [i0, i0 + b) as doubles into out (b×cols, row-major). Local.
  void rows(int64_t i0, int64_t b, double* out) const;
  Layout layout() const { return Layout{n_global, row_start, n_local}; }
  /// The bytes the rows take on this rank.
  double memory_bytes() const { return static_cast<double>(bytes.size()); }
};

/// Zero n×cols DistMatrix with the block layout over `comm`. Not collective.
DistMatrix make_dist(MPI_Comm comm, int64_t n_global, int64_t cols);
/// Zero DistMatrix with `n_local` rows here. Collective (computes the layout).
DistMatrix make_dist_local(MPI_Comm comm, int64_t n_local, int64_t cols);
/// Zero DistMatrix with X's row layout (same comm, n_global, row_start, n_local: rows
/// distributed exactly as X's) and `cols` columns, i.e. n_global×cols. Not collective (the
/// layout is copied, not recomputed). \throws ssdr::Error when cols < 0.
DistMatrix make_dist_like(const DistMatrix& X, int64_t cols);

/// The rows of X whose local flag keep[i] is non-zero, in their global order, as a new
/// DistMatrix that keeps them on the rank that holds them (no data moves; its layout is
/// generally not balanced). keep.size() must be X.n_local. Collective over X.comm.
/// \throws ssdr::Error when keep has the wrong length (on that rank).
DistMatrix select_rows(const DistMatrix& X, const std::vector<char>& keep);

/// select_rows of rows in either precision, as doubles (exact). Collective over X.comm.
/// \throws ssdr::Error when keep has the wrong length (on that rank).
DistMatrix select_rows(const RowsView& X, const std::vector<char>& keep);

/// Y = X · W for a sample-distributed X (n×d) and a replicated W (d×m): local GEMMs of one
/// fixed shape (tiles of 64 rows), no communication, so each row of Y has the same bits for
/// any rank count. Result n×m with X's layout. Not collective.
/// \throws ssdr::Error when X.cols != W.rows.
DistMatrix multiply(const DistMatrix& X, const Dense& W);

/// Aᵀ B (p×q, replicated) for two sample-distributed matrices with the same row layout
/// (n×p and n×q): local GEMM plus MPI_Allreduce. Collective over A.comm.
/// \throws ssdr::Error (collectively) when the local row counts differ.
Dense transpose_multiply(const DistMatrix& A, const DistMatrix& B);

/// Gathers a DistMatrix on every rank as a Dense (n×cols). Only for small matrices (tests,
/// n·cols doubles on every rank). Collective.
Dense allgather(const DistMatrix& X);

/// Sum over ranks of a Dense in place (MPI_Allreduce, MPI_SUM). Collective.
void allreduce_sum(Dense& A, MPI_Comm comm);

/// The sign convention for eigenvectors and other basis vectors whose sign is arbitrary:
/// −1.0 when the entry of largest magnitude among x[0], x[stride], …, x[(n−1)·stride] is
/// negative, else +1.0 (also for n = 0 or a zero vector). On exact ties in |x_i| the first
/// such index decides (strict >), and a NaN is never preferred to an earlier entry, so the
/// result is a pure function of the values: the same on every rank for replicated data.
/// Multiplying by the result only flips signs (exact). Local (not collective).
double largest_magnitude_sign(const double* x, int64_t n, int64_t stride = 1);

/// Flips each column of the replicated A (rows×cols) so that its entry of largest magnitude
/// (the first one on exact ties, see largest_magnitude_sign) is positive. Local.
void canonicalize_signs(Dense& A);

}  // namespace ssdr
