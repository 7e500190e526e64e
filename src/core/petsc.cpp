#include "ssdr/core/petsc.hpp"

#include "ssdr/core/error.hpp"

namespace ssdr {

Owned<Mat> to_petsc_dense(const Dense& A, MPI_Comm comm) {
  const Layout l = block_layout(A.rows, comm);
  Owned<Mat> M;
  SSDR_PETSC(MatCreateDense(comm, static_cast<PetscInt>(l.n_local), PETSC_DECIDE,
                            static_cast<PetscInt>(A.rows), static_cast<PetscInt>(A.cols), nullptr,
                            M.out()));
  PetscScalar* a = nullptr;
  SSDR_PETSC(MatDenseGetArray(M, &a));
  PetscInt lda = 0;
  SSDR_PETSC(MatDenseGetLDA(M, &lda));
  for (int64_t j = 0; j < A.cols; ++j)
    for (int64_t i = 0; i < l.n_local; ++i) a[i + j * lda] = A(l.start + i, j);
  SSDR_PETSC(MatDenseRestoreArray(M, &a));
  SSDR_PETSC(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
  return M;
}

Owned<Vec> column_to_vec(const DistMatrix& X, int64_t j) {
  Owned<Vec> v;
  SSDR_PETSC(VecCreateMPI(X.comm, static_cast<PetscInt>(X.n_local),
                          static_cast<PetscInt>(X.n_global), v.out()));
  PetscScalar* a = nullptr;
  SSDR_PETSC(VecGetArray(v, &a));
  for (int64_t i = 0; i < X.n_local; ++i) a[i] = X(i, j);
  SSDR_PETSC(VecRestoreArray(v, &a));
  return v;
}

void vec_to_column(Vec v, DistMatrix& X, int64_t j) {
  const PetscScalar* a = nullptr;
  SSDR_PETSC(VecGetArrayRead(v, &a));
  for (int64_t i = 0; i < X.n_local; ++i) X(i, j) = a[i];
  SSDR_PETSC(VecRestoreArrayRead(v, &a));
}

std::vector<double> vec_local(Vec v) {
  PetscInt n = 0;
  SSDR_PETSC(VecGetLocalSize(v, &n));
  const PetscScalar* a = nullptr;
  SSDR_PETSC(VecGetArrayRead(v, &a));
  std::vector<double> out(a, a + n);
  SSDR_PETSC(VecRestoreArrayRead(v, &a));
  return out;
}

std::vector<double> vec_allgather(Vec v) {
  VecScatter ctx = nullptr;
  Vec all = nullptr;
  SSDR_PETSC(VecScatterCreateToAll(v, &ctx, &all));
  SSDR_PETSC(VecScatterBegin(ctx, v, all, INSERT_VALUES, SCATTER_FORWARD));
  SSDR_PETSC(VecScatterEnd(ctx, v, all, INSERT_VALUES, SCATTER_FORWARD));
  std::vector<double> out = vec_local(all);  // the sequential copy: every entry
  VecScatterDestroy(&ctx);
  VecDestroy(&all);
  return out;
}

PetscInt scalapack_local_size(int64_t n, MPI_Comm comm) {
  int p = 1, rank = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &rank);
  if (p == 1) return static_cast<PetscInt>(n);
  for (int64_t b = (n + p - 1) / p; b * (p - 1) <= n; ++b) {
    const int64_t r = n - b * (p - 1);
    if (r >= 0 && r <= b) return static_cast<PetscInt>(rank == p - 1 ? r : b);
  }
  return -1;
}

std::string requested_eps_type(const std::string& prefix, const char* fallback) {
  char buf[256] = {0};
  PetscBool set = PETSC_FALSE;
  SSDR_PETSC(PetscOptionsGetString(nullptr, prefix.empty() ? nullptr : prefix.c_str(), "-eps_type", buf,
                                   sizeof buf, &set));
  return set ? std::string(buf) : std::string(fallback);
}

DenseEpsChoice choose_dense_eps_type(int64_t n, const std::string& prefix, MPI_Comm comm) {
  int ok_local = scalapack_local_size(n, comm) >= 0 ? 1 : 0, ok = 0;
  MPI_Allreduce(&ok_local, &ok, 1, MPI_INT, MPI_MIN, comm);
  DenseEpsChoice c;
  c.scalapack_ok = ok != 0;
  c.default_type = c.scalapack_ok ? EPSSCALAPACK : EPSLAPACK;
  c.requested = requested_eps_type(prefix, c.default_type);
  c.type = c.requested == EPSSCALAPACK && !c.scalapack_ok ? std::string(EPSLAPACK) : c.requested;
  PetscBool set = PETSC_FALSE;
  SSDR_PETSC(PetscOptionsHasName(nullptr, prefix.empty() ? nullptr : prefix.c_str(), "-eps_type", &set));
  c.given = set == PETSC_TRUE;
  c.replicated = !c.given && n <= kReplicatedEigenMax;
  return c;
}

}  // namespace ssdr
