#include "ssdr/graph/laplacian.hpp"

#include "ssdr/core/error.hpp"

namespace ssdr::graph {

std::vector<double> degrees(Mat A) {
  Owned<Vec> ones, deg;
  SSDR_PETSC(MatCreateVecs(A, ones.out(), deg.out()));
  SSDR_PETSC(VecSet(ones, 1.0));
  SSDR_PETSC(MatMult(A, ones, deg));
  return vec_local(deg);
}

Owned<Mat> diagonal_plus_scaled(Mat A, const std::vector<double>& a, const std::vector<double>& s) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  PetscInt n_local = 0, n_global = 0, start = 0, end = 0, cstart = 0, cend = 0;
  SSDR_PETSC(MatGetLocalSize(A, &n_local, nullptr));
  SSDR_PETSC(MatGetSize(A, &n_global, nullptr));
  SSDR_PETSC(MatGetOwnershipRange(A, &start, &end));
  SSDR_PETSC(MatGetOwnershipRangeColumn(A, &cstart, &cend));
  SSDR_CHECK(static_cast<PetscInt>(a.size()) == n_local && static_cast<PetscInt>(s.size()) == n_local,
             "diagonal_plus_scaled: a and s need one entry per local row (" + std::to_string(n_local) + ")");
  std::vector<PetscInt> d_nnz(static_cast<size_t>(n_local)), o_nnz(static_cast<size_t>(n_local));
  std::vector<std::vector<PetscInt>> cols(static_cast<size_t>(n_local));
  std::vector<std::vector<PetscScalar>> vals(static_cast<size_t>(n_local));
  for (PetscInt i = 0; i < n_local; ++i) {
    const size_t li = static_cast<size_t>(i);
    PetscInt nz = 0;
    const PetscInt* c = nullptr;
    const PetscScalar* v = nullptr;
    SSDR_PETSC(MatGetRow(A, start + i, &nz, &c, &v));
    bool diag = false;
    for (PetscInt t = 0; t < nz; ++t) {
      const bool on_diag = c[t] == start + i;
      cols[li].push_back(c[t]);
      vals[li].push_back((on_diag ? a[li] : 0.0) + s[li] * v[t]);
      diag = diag || on_diag;
    }
    SSDR_PETSC(MatRestoreRow(A, start + i, &nz, &c, &v));
    if (!diag) {
      cols[li].push_back(start + i);
      vals[li].push_back(a[li]);
    }
    for (PetscInt col : cols[li]) ++((col >= cstart && col < cend) ? d_nnz : o_nnz)[li];
  }
  Owned<Mat> M;
  SSDR_PETSC(MatCreateAIJ(comm, n_local, n_local, n_global, n_global, 0, d_nnz.data(), 0, o_nnz.data(), M.out()));
  for (PetscInt i = 0; i < n_local; ++i) {
    const PetscInt row = start + i;
    const size_t li = static_cast<size_t>(i);
    SSDR_PETSC(MatSetValues(M, 1, &row, static_cast<PetscInt>(cols[li].size()), cols[li].data(), vals[li].data(),
                            INSERT_VALUES));
  }
  SSDR_PETSC(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
  return M;
}

Reordered rcm_reorder(Mat A) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  PetscInt lo = 0, hi = 0;
  SSDR_PETSC(MatGetOwnershipRange(A, &lo, &hi));
  const PetscInt n_local = hi - lo;
  // π on each rank from its own diagonal block (the edges among its rows): no rank sees more
  // than its rows' edges; the rows stay on their rank (the partition is graph::
  // renumber_for_locality's).
  Reordered out;
  out.rows.resize(static_cast<size_t>(n_local));
  {
    Mat Ad = nullptr;
    SSDR_PETSC(MatGetDiagonalBlock(A, &Ad));
    IS rperm = nullptr, cperm = nullptr;
    SSDR_PETSC(MatGetOrdering(Ad, MATORDERINGRCM, &rperm, &cperm));
    const PetscInt* idx = nullptr;
    SSDR_PETSC(ISGetIndices(rperm, &idx));
    for (PetscInt i = 0; i < n_local; ++i) out.rows[static_cast<size_t>(i)] = lo + idx[i];
    SSDR_PETSC(ISRestoreIndices(rperm, &idx));
    SSDR_PETSC(ISDestroy(&rperm));
    SSDR_PETSC(ISDestroy(&cperm));
  }
  IS is = nullptr;
  SSDR_PETSC(ISCreateGeneral(comm, n_local, out.rows.data(), PETSC_USE_POINTER, &is));
  const PetscErrorCode ierr = MatCreateSubMatrix(A, is, is, MAT_INITIAL_MATRIX, out.B.out());
  ISDestroy(&is);
  SSDR_PETSC(ierr);
  PetscBool set = PETSC_FALSE, sym = PETSC_FALSE;
  SSDR_PETSC(MatIsSymmetricKnown(A, &set, &sym));
  if (set && sym) SSDR_PETSC(MatSetOption(out.B, MAT_SYMMETRIC, PETSC_TRUE));
  return out;
}

Owned<Mat> laplacian(Mat A) {
  std::vector<double> d = degrees(A);
  return diagonal_plus_scaled(A, d, std::vector<double>(d.size(), -1.0));
}

}  // namespace ssdr::graph
