#include "ssdr/core/petsc.hpp"

#include "ssdr/core/error.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <strings.h>

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

namespace {

/// The raw text of -<prefix>name (empty when given without a value); false when not given.
bool petsc_option_text(const std::string& prefix, const char* name, std::string& text) {
  char buf[4096] = {0};
  PetscBool set = PETSC_FALSE;
  SSDR_PETSC(PetscOptionsGetString(nullptr, prefix.empty() ? nullptr : prefix.c_str(), name, buf, sizeof buf, &set));
  text = buf;
  return set == PETSC_TRUE;
}

[[noreturn]] void bad_petsc_option(const std::string& prefix, const char* name, const std::string& text,
                                   const char* expected) {
  throw Error("-" + prefix + std::string(name + 1) + " expects " + expected + ", got '" + text + "'", __FILE__,
              __LINE__, true);
}

}  // namespace

bool petsc_option_real(const std::string& prefix, const char* name, double& value) {
  std::string text;
  if (!petsc_option_text(prefix, name, text)) return false;
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (text.empty() || end == s || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    bad_petsc_option(prefix, name, text, "a finite number (such as 1e-4)");
  value = v;
  return true;
}

bool petsc_option_int(const std::string& prefix, const char* name, int64_t& value) {
  std::string text;
  if (!petsc_option_text(prefix, name, text)) return false;
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (text.empty() || end == s || *end != '\0' || errno == ERANGE) bad_petsc_option(prefix, name, text, "an integer");
  value = static_cast<int64_t>(v);
  return true;
}

bool petsc_option_bool(const std::string& prefix, const char* name, bool& value) {
  std::string text;
  if (!petsc_option_text(prefix, name, text)) return false;
  const char* s = text.c_str();
  if (text.empty() || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on") || text == "1") {
    value = true;
  } else if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off") || text == "0") {
    value = false;
  } else {
    bad_petsc_option(prefix, name, text, "true or false (also yes/no, on/off, 1/0)");
  }
  return true;
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
