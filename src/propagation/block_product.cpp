// The graph times a block of interlaced columns (block_product.hpp).
#include "block_product.hpp"

#include <petscvec.h>

#include <string>

#include "ssdr/core/error.hpp"
#include "width_dispatch.hpp"

namespace ssdr::propagation::detail {

namespace {

/// q_r += Σ_t a_t g_{j_t} for the listed rows r = rows[k], whose entries are
/// offsets[k]..offsets[k+1] of cols/vals, W values per row: each row's sums start at 0 and run
/// over its entries in order, then are added to q (MatMultAdd of PETSc's SEQMAIJ kernels).
/// W = 0: m at run time, the same order.
template <int W>
void add_rows(const std::vector<PetscInt>& rows, const std::vector<PetscInt>& offsets,
              const std::vector<PetscInt>& cols, const std::vector<PetscScalar>& vals, const double* g, double* q,
              int m_runtime) {
  const int64_t m = W > 0 ? W : m_runtime;
  std::vector<double> buffer(W > 0 ? 0 : static_cast<size_t>(m));
  for (size_t k = 0; k < rows.size(); ++k) {
    double fixed[W > 0 ? W : 1];
    double* sum = W > 0 ? fixed : buffer.data();
    for (int64_t c = 0; c < m; ++c) sum[c] = 0.0;
    for (PetscInt t = offsets[k]; t < offsets[k + 1]; ++t) {
      const double v = vals[static_cast<size_t>(t)];
      const double* x = g + static_cast<int64_t>(cols[static_cast<size_t>(t)]) * m;
      for (int64_t c = 0; c < m; ++c) sum[c] += v * x[c];
    }
    double* y = q + static_cast<int64_t>(rows[k]) * m;
    for (int64_t c = 0; c < m; ++c) y[c] += sum[c];
  }
}

}  // namespace

BlockProduct::BlockProduct(Mat A, int m) : m_(m) {
  SSDR_REQUIRE(m >= 1, "BlockProduct: the block's width must be positive, got " + std::to_string(m));
  PetscBool mpi = PETSC_FALSE, seq = PETSC_FALSE;
  SSDR_PETSC(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(A), MATMPIAIJ, &mpi));
  SSDR_PETSC(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(A), MATSEQAIJ, &seq));
  SSDR_REQUIRE(mpi || seq, "BlockProduct: the graph must be an AIJ matrix (seqaij or mpiaij)");
  SSDR_PETSC(PetscObjectReference(reinterpret_cast<PetscObject>(A)));
  A_ = Owned<Mat>(A);  // the reference just taken, released with this object (or a throw)
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
  PetscInt no = 0;
  const PetscInt *ia = nullptr, *ja = nullptr;
  PetscBool done = PETSC_FALSE;
  SSDR_PETSC(MatGetRowIJ(Ao, 0, PETSC_FALSE, PETSC_FALSE, &no, &ia, &ja, &done));
  SSDR_REQUIRE(done, "BlockProduct: the graph's row structure is not available");
  const PetscScalar* a = nullptr;
  PetscErrorCode ierr = MatSeqAIJGetArrayRead(Ao, &a);
  if (!ierr) {
    offsets_.push_back(0);
    for (PetscInt r = 0; r < no; ++r) {
      if (ia[r + 1] == ia[r]) continue;
      rows_.push_back(r);
      for (PetscInt t = ia[r]; t < ia[r + 1]; ++t) {
        cols_.push_back(ja[t]);
        vals_.push_back(a[t]);
      }
      offsets_.push_back(static_cast<PetscInt>(cols_.size()));
    }
    ierr = MatSeqAIJRestoreArrayRead(Ao, &a);
  }
  MatRestoreRowIJ(Ao, 0, PETSC_FALSE, PETSC_FALSE, &no, &ia, &ja, &done);
  SSDR_PETSC(ierr);
  // The halo: whole rows (m values) of P at the ghost columns' global rows (garray), into
  // ghost_ in Ao's compressed column order.
  ghost_.assign(static_cast<size_t>(ghosts) * static_cast<size_t>(m), 0.0);
  SSDR_PETSC(VecCreateSeqWithArray(PETSC_COMM_SELF, m, ghosts * m, ghost_.data(), ghost_vec_.out()));
  IS from = nullptr;
  SSDR_PETSC(ISCreateBlock(PETSC_COMM_SELF, m, ghosts, garray, PETSC_COPY_VALUES, &from));
  Owned<Vec> p = block();
  ierr = VecScatterCreate(p, from, ghost_vec_, nullptr, &halo_);
  ISDestroy(&from);
  SSDR_PETSC(ierr);
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
  // As MatMult_MPIMAIJ_dof: the halo travels while the diagonal block is multiplied.
  if (halo_ != nullptr) SSDR_PETSC(VecScatterBegin(halo_, p, ghost_vec_, INSERT_VALUES, SCATTER_FORWARD));
  const PetscScalar* pa = nullptr;
  PetscScalar* qa = nullptr;
  SSDR_PETSC(VecGetArrayRead(p, &pa));
  SSDR_PETSC(VecGetArray(q, &qa));
  PetscErrorCode ierr = VecPlaceArray(x_local_, const_cast<PetscScalar*>(pa));
  if (!ierr) ierr = VecPlaceArray(y_local_, qa);
  if (!ierr) ierr = MatMult(diag_, x_local_, y_local_);
  VecResetArray(x_local_);
  VecResetArray(y_local_);
  VecRestoreArrayRead(p, &pa);
  if (!ierr && halo_ != nullptr) ierr = VecScatterEnd(halo_, p, ghost_vec_, INSERT_VALUES, SCATTER_FORWARD);
  if (!ierr && !rows_.empty())
    with_width(m_, [&](auto width) {
      add_rows<decltype(width)::value>(rows_, offsets_, cols_, vals_, ghost_.data(), qa, m_);
    });
  VecRestoreArray(q, &qa);
  SSDR_PETSC(ierr);
}

}  // namespace ssdr::propagation::detail
