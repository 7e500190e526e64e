// The graph times a block of interlaced columns (block_product.hpp).
#include "block_product.hpp"

#include <petscvec.h>

#include <string>

#include "ssdr/core/error.hpp"
#include "width_dispatch.hpp"

namespace ssdr::propagation::detail {

namespace {

// The row loops below vectorize across a row's W values (GCC's SLP on the unrolled column
// loop), never across entries: GCC's loop vectorizer would otherwise vectorize the entry
// loop of the float kernel with emulated gathers (insertps per value), twice as slow as
// PETSc's scalar double kernel on Fashion-MNIST's graph.
#if defined(__GNUC__) && !defined(__clang__)
#define SSDR_ROW_LOOP __attribute__((optimize("no-tree-loop-vectorize")))
#else
#define SSDR_ROW_LOOP
#endif

#if defined(__GNUC__)
#define SSDR_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define SSDR_ALWAYS_INLINE inline
#endif

/// sum[c] = Σ_{t0 ≤ t < t1} vals[t]·x[cols[t]·m + c] for c < m, each from 0 in entry order:
/// the one sum every row kernel here forms (PETSc's SEQMAIJ order). Inlined into the row
/// loops (a call per row would keep the sums in memory). Local.
template <int W, class T, class Index>
SSDR_ROW_LOOP SSDR_ALWAYS_INLINE void row_sums(Index t0, Index t1, const Index* cols, const T* vals, const T* x,
                                               int64_t m, T* sum) {
  for (int64_t c = 0; c < m; ++c) sum[c] = 0;
  for (Index t = t0; t < t1; ++t) {
    const T v = vals[t];
    const T* xt = x + static_cast<int64_t>(cols[t]) * m;
    for (int64_t c = 0; c < m; ++c) sum[c] += v * xt[c];
  }
}

/// q_r += Σ_t a_t g_{j_t} for the listed rows r = rows[k], whose entries are
/// offsets[k]..offsets[k+1] of cols/vals, W values per row: each row's sums start at 0 and run
/// over its entries in order, then are added to q (MatMultAdd of PETSc's SEQMAIJ kernels).
/// T: double (BlockProduct) or float (SingleBlockProduct), the sums' type too.
/// W = 0: m at run time, the same order.
template <int W, class T>
SSDR_ROW_LOOP void add_rows(const std::vector<PetscInt>& rows, const std::vector<PetscInt>& offsets,
              const std::vector<PetscInt>& cols, const std::vector<T>& vals, const T* g, T* q, int m_runtime) {
  const int64_t m = W > 0 ? W : m_runtime;
  std::vector<T> buffer(W > 0 ? 0 : static_cast<size_t>(m));
  for (size_t k = 0; k < rows.size(); ++k) {
    T fixed[W > 0 ? W : 1];
    T* sum = W > 0 ? fixed : buffer.data();
    row_sums<W>(offsets[k], offsets[k + 1], cols.data(), vals.data(), g, m, sum);
    T* y = q + static_cast<int64_t>(rows[k]) * m;
    for (int64_t c = 0; c < m; ++c) y[c] += sum[c];
  }
}

/// q_i = Σ_t a_t p_{j_t} over every row i < n of the CSR block (ia, ja, a), W floats per
/// row, each row's sums from 0 in entry order (SingleBlockProduct's diagonal block).
/// W = 0: m at run time, the same order.
template <int W>
SSDR_ROW_LOOP void csr_rows(PetscInt n, const PetscInt* ia, const PetscInt* ja, const float* a, const float* p, float* q,
              int m_runtime) {
  const int64_t m = W > 0 ? W : m_runtime;
  std::vector<float> buffer(W > 0 ? 0 : static_cast<size_t>(m));
  for (PetscInt i = 0; i < n; ++i) {
    float fixed[W > 0 ? W : 1];
    float* sum = W > 0 ? fixed : buffer.data();
    row_sums<W>(ia[i], ia[i + 1], ja, a, p, m, sum);
    float* y = q + static_cast<int64_t>(i) * m;
    for (int64_t c = 0; c < m; ++c) y[c] = sum[c];
  }
}

/// The off-diagonal block Ao's non-empty rows, copied with values of type T. Not collective.
template <class T>
void copy_nonempty_rows(Mat Ao, std::vector<PetscInt>& rows, std::vector<PetscInt>& offsets,
                        std::vector<PetscInt>& cols, std::vector<T>& vals) {
  PetscInt no = 0;
  const PetscInt *ia = nullptr, *ja = nullptr;
  PetscBool done = PETSC_FALSE;
  SSDR_PETSC(MatGetRowIJ(Ao, 0, PETSC_FALSE, PETSC_FALSE, &no, &ia, &ja, &done));
  SSDR_REQUIRE(done, "BlockProduct: the graph's row structure is not available");
  const PetscScalar* a = nullptr;
  PetscErrorCode ierr = MatSeqAIJGetArrayRead(Ao, &a);
  if (!ierr) {
    offsets.push_back(0);
    for (PetscInt r = 0; r < no; ++r) {
      if (ia[r + 1] == ia[r]) continue;
      rows.push_back(r);
      for (PetscInt t = ia[r]; t < ia[r + 1]; ++t) {
        cols.push_back(ja[t]);
        vals.push_back(static_cast<T>(a[t]));
      }
      offsets.push_back(static_cast<PetscInt>(cols.size()));
    }
    ierr = MatSeqAIJRestoreArrayRead(Ao, &a);
  }
  MatRestoreRowIJ(Ao, 0, PETSC_FALSE, PETSC_FALSE, &no, &ia, &ja, &done);
  SSDR_PETSC(ierr);
}

/// Checks a block product's arguments (m ≥ 1, A SEQAIJ or MPIAIJ) and takes a reference to
/// A into `own`, released with the product (or a throw). Returns whether A is MPIAIJ. Not
/// collective. \throws ssdr::Error naming `who`.
bool take_aij(Mat A, int m, const std::string& who, Owned<Mat>& own) {
  SSDR_REQUIRE(m >= 1, who + ": the block's width must be positive, got " + std::to_string(m));
  PetscBool mpi = PETSC_FALSE, seq = PETSC_FALSE;
  SSDR_PETSC(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(A), MATMPIAIJ, &mpi));
  SSDR_PETSC(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(A), MATSEQAIJ, &seq));
  SSDR_REQUIRE(mpi || seq, who + ": the graph must be an AIJ matrix (seqaij or mpiaij)");
  PetscInt rows = 0, cols = 0;
  SSDR_PETSC(MatGetLocalSize(A, &rows, &cols));
  SSDR_REQUIRE(rows == cols, who + ": the graph's local rows and columns must match (" + std::to_string(rows) +
                                 " rows, " + std::to_string(cols) + " columns)");
  SSDR_PETSC(PetscObjectReference(reinterpret_cast<PetscObject>(A)));
  own = Owned<Mat>(A);
  return mpi == PETSC_TRUE;
}

}  // namespace

BlockProduct::BlockProduct(Mat A, int m) : m_(m) {
  const bool mpi = take_aij(A, m, "BlockProduct", A_);
  SSDR_PETSC(MatGetLocalSize(A, &n_, nullptr));
  Mat Ad = A, Ao = nullptr;
  const PetscInt* garray = nullptr;
  if (mpi) SSDR_PETSC(MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, &garray));
  SSDR_PETSC(MatCreateMAIJ(Ad, m, diag_.out()));
  SSDR_PETSC(VecCreateSeqWithArray(PETSC_COMM_SELF, m, n_ * m, nullptr, x_local_.out()));
  SSDR_PETSC(VecCreateSeqWithArray(PETSC_COMM_SELF, m, n_ * m, nullptr, y_local_.out()));
  if (Ao == nullptr) return;
  PetscInt ghosts = 0;
  SSDR_PETSC(MatGetSize(Ao, nullptr, &ghosts));
  // The off-diagonal block's non-empty rows, copied (its entries are few where the partition
  // is good, and the copy frees this object from holding Ao's arrays open).
  copy_nonempty_rows(Ao, rows_, offsets_, cols_, vals_);
  // The halo: whole rows (m values) of P at the ghost columns' global rows (garray), into
  // ghost_ in Ao's compressed column order.
  ghost_.assign(static_cast<size_t>(ghosts) * static_cast<size_t>(m), 0.0);
  SSDR_PETSC(VecCreateSeqWithArray(PETSC_COMM_SELF, m, ghosts * m, ghost_.data(), ghost_vec_.out()));
  IS from = nullptr;
  SSDR_PETSC(ISCreateBlock(PETSC_COMM_SELF, m, ghosts, garray, PETSC_COPY_VALUES, &from));
  Owned<Vec> p = block();
  PetscErrorCode ierr = VecScatterCreate(p, from, ghost_vec_, nullptr, &halo_);
  ISDestroy(&from);
  SSDR_PETSC(ierr);
  MPI_Comm comm = MPI_COMM_NULL;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  SSDR_PETSC(VecCreateMPIWithArray(comm, m, n_ * m, PETSC_DETERMINE, nullptr, p_global_.out()));
}

BlockProduct::~BlockProduct() { VecScatterDestroy(&halo_); }

Owned<Vec> BlockProduct::block() const {
  MPI_Comm comm = MPI_COMM_NULL;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A_.get()), &comm));
  Owned<Vec> v;
  SSDR_PETSC(VecCreate(comm, v.out()));
  SSDR_PETSC(VecSetSizes(v, n_ * m_, PETSC_DETERMINE));
  SSDR_PETSC(VecSetBlockSize(v, m_));
  SSDR_PETSC(VecSetType(v, VECSTANDARD));
  return v;
}

void BlockProduct::apply(Vec p, Vec q) {
  const PetscScalar* pa = nullptr;
  PetscScalar* qa = nullptr;
  SSDR_PETSC(VecGetArrayRead(p, &pa));
  PetscErrorCode ierr = VecGetArray(q, &qa);
  if (!ierr) {
    try {
      apply(pa, qa);
    } catch (...) {
      VecRestoreArray(q, &qa);
      VecRestoreArrayRead(p, &pa);
      throw;
    }
    ierr = VecRestoreArray(q, &qa);
  }
  VecRestoreArrayRead(p, &pa);
  SSDR_PETSC(ierr);
}

void BlockProduct::apply(const double* pa, double* qa) {
  // As MatMult_MPIMAIJ_dof: the halo travels while the diagonal block is multiplied.
  PetscErrorCode ierr = 0;
  if (halo_ != nullptr) {
    ierr = VecPlaceArray(p_global_, pa);
    if (!ierr) ierr = VecScatterBegin(halo_, p_global_, ghost_vec_, INSERT_VALUES, SCATTER_FORWARD);
  }
  if (!ierr) ierr = VecPlaceArray(x_local_, pa);
  if (!ierr) ierr = VecPlaceArray(y_local_, qa);
  if (!ierr) ierr = MatMult(diag_, x_local_, y_local_);
  VecResetArray(x_local_);
  VecResetArray(y_local_);
  if (halo_ != nullptr) {
    if (!ierr) ierr = VecScatterEnd(halo_, p_global_, ghost_vec_, INSERT_VALUES, SCATTER_FORWARD);
    VecResetArray(p_global_);
  }
  SSDR_PETSC(ierr);
  if (!rows_.empty())
    with_width(m_, [&](auto width) {
      add_rows<decltype(width)::value, double>(rows_, offsets_, cols_, vals_, ghost_.data(), qa, m_);
    });
}

SingleBlockProduct::SingleBlockProduct(Mat A, int m, const double* w) : m_(m) {
  const bool mpi = take_aij(A, m, "SingleBlockProduct", A_);
  SSDR_PETSC(MatGetLocalSize(A, &n_, nullptr));
  Mat Ao = nullptr;
  const PetscInt* garray = nullptr;
  Ad_ = A;
  if (mpi) SSDR_PETSC(MatMPIAIJGetSeqAIJ(A, &Ad_, &Ao, &garray));
  PetscInt nd = 0;
  SSDR_PETSC(MatGetRowIJ(Ad_, 0, PETSC_FALSE, PETSC_FALSE, &nd, &ia_, &ja_, &row_ij_));
  try {
    SSDR_REQUIRE(row_ij_ && nd == n_, "SingleBlockProduct: the graph's row structure is not available");
    build(A, Ao, garray, m, w);
  } catch (...) {
    release();
    throw;
  }
}

void SingleBlockProduct::build(Mat A, Mat Ao, const PetscInt* garray, int m, const double* w) {
  auto scale = [&](PetscInt i) { return w != nullptr ? w[i] : 1.0; };
  {
    const PetscScalar* a = nullptr;
    SSDR_PETSC(MatSeqAIJGetArrayRead(Ad_, &a));
    vals_.resize(static_cast<size_t>(ia_[n_]));
    for (PetscInt i = 0; i < n_; ++i)
      for (PetscInt t = ia_[i]; t < ia_[i + 1]; ++t) vals_[static_cast<size_t>(t)] = static_cast<float>(scale(i) * a[t]);
    SSDR_PETSC(MatSeqAIJRestoreArrayRead(Ad_, &a));
  }
  if (Ao == nullptr) return;
  PetscInt ghosts = 0;
  SSDR_PETSC(MatGetSize(Ao, nullptr, &ghosts));
  // The halo as a star forest: root r is local row r, leaf g the ghost row garray[g]; a
  // broadcast moves whole rows (unit: m floats).
  MPI_Comm comm = MPI_COMM_NULL;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  PetscLayout rows = nullptr;
  SSDR_PETSC(MatGetLayouts(A, &rows, nullptr));
  SSDR_PETSC(PetscSFCreate(comm, &halo_));
  SSDR_PETSC(PetscSFSetGraphLayout(halo_, rows, ghosts, nullptr, PETSC_OWN_POINTER, garray));
  SSDR_PETSC(PetscSFSetUp(halo_));
  SSDR_REQUIRE(MPI_Type_contiguous(m, MPI_FLOAT, &unit_) == MPI_SUCCESS && MPI_Type_commit(&unit_) == MPI_SUCCESS,
               "SingleBlockProduct: MPI could not make a datatype of " + std::to_string(m) + " floats");
  std::vector<double> off;
  copy_nonempty_rows(Ao, rows_, offsets_, cols_, off);
  off_vals_.resize(off.size());
  for (size_t k = 0; k < rows_.size(); ++k)
    for (PetscInt t = offsets_[k]; t < offsets_[k + 1]; ++t)
      off_vals_[static_cast<size_t>(t)] = static_cast<float>(scale(rows_[k]) * off[static_cast<size_t>(t)]);
  ghost_.assign(static_cast<size_t>(ghosts) * static_cast<size_t>(m), 0.0f);
  pending_.assign(rows_.size() * static_cast<size_t>(m), 0.0f);
}

SingleBlockProduct::~SingleBlockProduct() { release(); }

void SingleBlockProduct::release() {
  if (row_ij_) {
    PetscInt nd = 0;
    MatRestoreRowIJ(Ad_, 0, PETSC_FALSE, PETSC_FALSE, &nd, &ia_, &ja_, &row_ij_);
    row_ij_ = PETSC_FALSE;
  }
  PetscSFDestroy(&halo_);
  if (unit_ != MPI_DATATYPE_NULL) MPI_Type_free(&unit_);
}

void SingleBlockProduct::apply(const float* p, float* q) {
  if (halo_ != nullptr) SSDR_PETSC(PetscSFBcastBegin(halo_, unit_, p, ghost_.data(), MPI_REPLACE));
  with_width(m_, [&](auto width) { csr_rows<decltype(width)::value>(n_, ia_, ja_, vals_.data(), p, q, m_); });
  if (halo_ == nullptr) return;
  SSDR_PETSC(PetscSFBcastEnd(halo_, unit_, p, ghost_.data(), MPI_REPLACE));
  if (!rows_.empty())
    with_width(m_, [&](auto width) {
      add_rows<decltype(width)::value, float>(rows_, offsets_, cols_, off_vals_, ghost_.data(), q, m_);
    });
}

template <int W>
SSDR_ROW_LOOP void SingleBlockProduct::chebyshev_rows(const float* y, float* y_prev, const float* b,
                                                      const float* sigma, const char* skip, float c1, float c2) {
  const int64_t m = W > 0 ? W : m_;
  // The members in locals: the stores to y_prev could otherwise alias them.
  const PetscInt n = n_;
  const PetscInt* __restrict ia = ia_;
  const PetscInt* __restrict ja = ja_;
  const float* __restrict a = vals_.data();
  const PetscInt* __restrict off_rows = rows_.data();
  const size_t n_off = rows_.size();
  float* __restrict pending = pending_.data();
  std::vector<float> buffer(W > 0 ? 0 : static_cast<size_t>(m));
  // Row i's update from its sums q = (Â y)_i.
  auto update = [&](PetscInt i, const float* __restrict q) {
    const float* __restrict yi = y + static_cast<int64_t>(i) * m;
    const float* __restrict bi = b + static_cast<int64_t>(i) * m;
    float* __restrict pi = y_prev + static_cast<int64_t>(i) * m;
    const float si = sigma[i];
    int64_t c = 0;
#if defined(__SSE2__)
    // Four values per operation, the scalar loop's operations in its order (the same bits).
    const __m128 s4 = _mm_set1_ps(si), c14 = _mm_set1_ps(c1), c24 = _mm_set1_ps(c2);
    for (; c + 4 <= m; c += 4) {
      const __m128 yv = _mm_loadu_ps(yi + c);
      const __m128 mix = _mm_mul_ps(c14, _mm_sub_ps(yv, _mm_loadu_ps(pi + c)));
      const __m128 res = _mm_mul_ps(c24, _mm_sub_ps(_mm_loadu_ps(bi + c), _mm_sub_ps(_mm_mul_ps(s4, yv), _mm_loadu_ps(q + c))));
      _mm_storeu_ps(pi + c, _mm_add_ps(_mm_add_ps(yv, mix), res));
    }
#endif
    for (; c < m; ++c) pi[c] = yi[c] + c1 * (yi[c] - pi[c]) + c2 * (bi[c] - (si * yi[c] - q[c]));
  };
  size_t k = 0;
  PetscInt next_off = n_off > 0 ? off_rows[0] : n;
  for (PetscInt i = 0; i < n; ++i) {
    float fixed[W > 0 ? W : 1];
    float* sum = W > 0 ? fixed : buffer.data();
    row_sums<W>(ia[i], ia[i + 1], ja, a, y, m, sum);
    if (i == next_off) {  // finished once the halo is in
      for (int64_t c = 0; c < m; ++c) pending[k * static_cast<size_t>(m) + static_cast<size_t>(c)] = sum[c];
      ++k;
      next_off = k < n_off ? off_rows[k] : n;
      continue;
    }
    if (!skip[i]) update(i, sum);
  }
  if (halo_ == nullptr) return;
  SSDR_PETSC(PetscSFBcastEnd(halo_, unit_, y, ghost_.data(), MPI_REPLACE));
  // apply()'s add_rows: the ghost sums from 0, then added to the diagonal block's.
  for (size_t r = 0; r < n_off; ++r) {
    float fixed[W > 0 ? W : 1];
    float* o = W > 0 ? fixed : buffer.data();
    row_sums<W>(offsets_[r], offsets_[r + 1], cols_.data(), off_vals_.data(), ghost_.data(), m, o);
    float* q = pending + r * static_cast<size_t>(m);
    for (int64_t c = 0; c < m; ++c) q[c] += o[c];
    if (!skip[off_rows[r]]) update(off_rows[r], q);
  }
}

void SingleBlockProduct::chebyshev_step(const float* y, float* y_prev, const float* b, const float* sigma,
                                        const char* skip, float c1, float c2) {
  if (halo_ != nullptr) SSDR_PETSC(PetscSFBcastBegin(halo_, unit_, y, ghost_.data(), MPI_REPLACE));
  with_width(m_, [&](auto width) { chebyshev_rows<decltype(width)::value>(y, y_prev, b, sigma, skip, c1, c2); });
}

int chebyshev_solve(SingleBlockProduct& product, const std::vector<char>& known, const std::vector<float>& sigma,
                    int64_t m, const std::vector<float>& z, std::vector<float>& e, std::vector<float>& scratch,
                    double lo, double hi, int steps) {
  const int64_t n = static_cast<int64_t>(known.size());
  SSDR_REQUIRE(lo > 0 && hi > lo && steps >= 1 && z.size() == static_cast<size_t>(n * m) && e.size() == z.size() &&
                   scratch.size() == z.size() && sigma.size() == known.size(),
               "chebyshev_solve: expected 0 < lo < hi, steps ≥ 1 and blocks of n_local·m values");
  const double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo), sigma1 = theta / delta;
  // e_1 = z/θ into scratch (e_0 = 0 is e).
  const float inv_theta = static_cast<float>(1.0 / theta);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < m; ++k) {
      const size_t t = static_cast<size_t>(i * m + k);
      scratch[t] = known[static_cast<size_t>(i)] ? 0.0f : z[t] * inv_theta;
    }
  float* cur = scratch.data();
  float* prev = e.data();
  double rho = 1.0 / sigma1;
  for (int j = 1; j < steps; ++j) {
    const double rho_next = 1.0 / (2.0 * sigma1 - rho);
    const float c1 = static_cast<float>(rho_next * rho), c2 = static_cast<float>(2.0 * rho_next / delta);
    rho = rho_next;
    product.chebyshev_step(cur, prev, z.data(), sigma.data(), known.data(), c1, c2);
    std::swap(cur, prev);
  }
  if (cur != e.data()) e.swap(scratch);  // e_steps into e
  return steps - 1;
}

}  // namespace ssdr::propagation::detail
