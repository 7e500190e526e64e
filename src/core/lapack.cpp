#include "ssdr/core/lapack.hpp"

// BLAS and LAPACK through PETSc's prototypes (petscblaslapack.h): the integer type
// (PetscBLASInt: 32 bits, or 64 with a 64-bit-integer BLAS), the name mangling (trailing
// underscore, capitals, a symbol suffix such as 64_) and the precision prefix are the ones
// PETSc was configured with for the BLAS/LAPACK it links, which is the one ssdr links too.
// PETSc's header declares only the routines PETSc itself calls; the others ssdr needs
// (sgemm, dsyevd, dsygvd, dgesdd, dposv) are declared below with the same integer type and
// mangling. Every int64_t size is converted with blas_int, which refuses a value the
// BLAS integer cannot hold instead of letting it wrap.
#include <petscsys.h>
#include <petscblaslapack.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ssdr/core/error.hpp"

static_assert(std::is_same<PetscScalar, double>::value,
              "ssdr needs PETSc configured with real double-precision scalars (the default)");

#if defined(PETSC_BLASLAPACK_CAPS)
#define SSDR_BLASLAPACK(lower, UPPER) PETSC_PASTE2(UPPER, PETSC_BLASLAPACK_SUFFIX_)
#else
#define SSDR_BLASLAPACK(lower, UPPER) PETSC_PASTE2(lower, PETSC_BLASLAPACK_SUFFIX_)
#endif
#define SSDR_sgemm SSDR_BLASLAPACK(sgemm, SGEMM)
#define SSDR_ssyrk SSDR_BLASLAPACK(ssyrk, SSYRK)
#define SSDR_dsyevd SSDR_BLASLAPACK(dsyevd, DSYEVD)
#define SSDR_dsygvd SSDR_BLASLAPACK(dsygvd, DSYGVD)
#define SSDR_dsyevr SSDR_BLASLAPACK(dsyevr, DSYEVR)
#define SSDR_dgesdd SSDR_BLASLAPACK(dgesdd, DGESDD)
#define SSDR_dposv SSDR_BLASLAPACK(dposv, DPOSV)

extern "C" {
void SSDR_ssyrk(const char*, const char*, const PetscBLASInt*, const PetscBLASInt*, const float*, const float*,
                const PetscBLASInt*, const float*, float*, const PetscBLASInt*);
void SSDR_sgemm(const char*, const char*, const PetscBLASInt*, const PetscBLASInt*, const PetscBLASInt*,
                const float*, const float*, const PetscBLASInt*, const float*, const PetscBLASInt*, const float*,
                float*, const PetscBLASInt*);
void SSDR_dsyevd(const char*, const char*, const PetscBLASInt*, double*, const PetscBLASInt*, double*, double*,
                 const PetscBLASInt*, PetscBLASInt*, const PetscBLASInt*, PetscBLASInt*);
void SSDR_dsyevr(const char*, const char*, const char*, const PetscBLASInt*, double*, const PetscBLASInt*,
                 const double*, const double*, const PetscBLASInt*, const PetscBLASInt*, const double*, PetscBLASInt*,
                 double*, double*, const PetscBLASInt*, PetscBLASInt*, double*, const PetscBLASInt*, PetscBLASInt*,
                 const PetscBLASInt*, PetscBLASInt*);
void SSDR_dsygvd(const PetscBLASInt*, const char*, const char*, const PetscBLASInt*, double*, const PetscBLASInt*,
                 double*, const PetscBLASInt*, double*, double*, const PetscBLASInt*, PetscBLASInt*,
                 const PetscBLASInt*, PetscBLASInt*);
void SSDR_dgesdd(const char*, const PetscBLASInt*, const PetscBLASInt*, double*, const PetscBLASInt*, double*,
                 double*, const PetscBLASInt*, double*, const PetscBLASInt*, double*, const PetscBLASInt*,
                 PetscBLASInt*, PetscBLASInt*);
void SSDR_dposv(const char*, const PetscBLASInt*, const PetscBLASInt*, double*, const PetscBLASInt*, double*,
                const PetscBLASInt*, PetscBLASInt*);
}

namespace ssdr {
namespace {

/// `value` as the BLAS/LAPACK integer (PetscBLASIntCast with ssdr's error): a size or
/// leading dimension that is negative or past PetscBLASInt's range (2³¹ − 1 with the usual
/// 32-bit BLAS) would wrap around, so it is refused naming the routine and the argument.
/// Local. \throws ssdr::Error.
PetscBLASInt blas_int(int64_t value, const char* routine, const char* what) {
  constexpr int64_t max = std::numeric_limits<PetscBLASInt>::max();
  SSDR_CHECK(value >= 0, std::string(routine) + ": " + what + " = " + std::to_string(value) + " is negative");
  SSDR_CHECK(value <= max, std::string(routine) + ": " + what + " = " + std::to_string(value) +
                               " does not fit the BLAS/LAPACK integer (PetscBLASInt, at most " +
                               std::to_string(max) + "): the problem is too large for this BLAS");
  return static_cast<PetscBLASInt>(value);
}

/// A leading dimension: at least 1, as the reference BLAS requires even for empty matrices.
PetscBLASInt blas_ld(int64_t value, const char* routine, const char* what) {
  return blas_int(std::max<int64_t>(value, 1), routine, what);
}

/// The workspace size a LAPACK query returned (a double), at least `minimum`, plus one.
PetscBLASInt workspace(double query, int64_t minimum, const char* routine) {
  SSDR_CHECK(std::isfinite(query) && query >= 0 && query < 9.0e18,
             std::string(routine) + ": the workspace query returned " + std::to_string(query));
  return blas_int(std::max(static_cast<int64_t>(std::ceil(query)), minimum) + 1, routine, "workspace size");
}

}  // namespace
}  // namespace ssdr

namespace ssdr::lapack {
WorkCounters& work_counters() {
  static WorkCounters c;
  return c;
}
void reset_work_counters() { work_counters() = WorkCounters(); }
}  // namespace ssdr::lapack

namespace ssdr::blas {

void gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  lapack::work_counters().gemm_flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const char* r = "dgemm";
  const PetscBLASInt M = blas_int(m, r, "m"), N = blas_int(n, r, "n"), K = blas_int(k, r, "k"),
                     LDA = blas_ld(lda, r, "lda"), LDB = blas_ld(ldb, r, "ldb"), LDC = blas_ld(ldc, r, "ldc");
  BLASgemm_(&transa, &transb, &M, &N, &K, &alpha, a, &LDA, b, &LDB, &beta, c, &LDC);
}

void gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  const char* r = "sgemm";
  const PetscBLASInt M = blas_int(m, r, "m"), N = blas_int(n, r, "n"), K = blas_int(k, r, "k"),
                     LDA = blas_ld(lda, r, "lda"), LDB = blas_ld(ldb, r, "ldb"), LDC = blas_ld(ldc, r, "ldc");
  SSDR_sgemm(&transa, &transb, &M, &N, &K, &alpha, a, &LDA, b, &LDB, &beta, c, &LDC);
}

void syrk(char uplo, char trans, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, double beta, double* c, int64_t ldc) {
  if (n == 0) return;
  lapack::work_counters().syrk_flops += static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(k);
  const char* r = "dsyrk";
  const PetscBLASInt N = blas_int(n, r, "n"), K = blas_int(k, r, "k"), LDA = blas_ld(lda, r, "lda"),
                     LDC = blas_ld(ldc, r, "ldc");
  BLASsyrk_(&uplo, &trans, &N, &K, &alpha, a, &LDA, &beta, c, &LDC);
}

void syrk(char uplo, char trans, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, float beta, float* c, int64_t ldc) {
  if (n == 0) return;
  const char* r = "ssyrk";
  const PetscBLASInt N = blas_int(n, r, "n"), K = blas_int(k, r, "k"), LDA = blas_ld(lda, r, "lda"),
                     LDC = blas_ld(ldc, r, "ldc");
  SSDR_ssyrk(&uplo, &trans, &N, &K, &alpha, a, &LDA, &beta, c, &LDC);
}

void trsm(char side, char uplo, char transa, char diag, int64_t m, int64_t n, double alpha,
          const double* a, int64_t lda, double* b, int64_t ldb) {
  if (m == 0 || n == 0) return;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  lapack::work_counters().solve_flops += side == 'L' || side == 'l' ? dm * dm * dn : dm * dn * dn;
  const char* r = "dtrsm";
  const PetscBLASInt M = blas_int(m, r, "m"), N = blas_int(n, r, "n"), LDA = blas_int(lda, r, "lda"),
                     LDB = blas_int(ldb, r, "ldb");
  BLAStrsm_(&side, &uplo, &transa, &diag, &M, &N, &alpha, a, &LDA, b, &LDB);
}

void symmetrize(char uplo, int64_t n, double* c, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = j + 1; i < n; ++i) {
      if (uplo == 'U' || uplo == 'u')
        c[i + j * ldc] = c[j + i * ldc];
      else
        c[j + i * ldc] = c[i + j * ldc];
    }
}

}  // namespace ssdr::blas

namespace ssdr::lapack {

static void check_info(PetscBLASInt info, const char* routine) {
  SSDR_CHECK(info == 0, std::string("LAPACK ") + routine + " failed (info " +
                            std::to_string(info) + ")");
}

void syev(int64_t n, double* a, int64_t lda, double* w) {
  if (n == 0) return;
  ++work_counters().eigen[{n, n}];
  const char* r = "dsyevd";
  const PetscBLASInt N = blas_int(n, r, "n"), LDA = blas_int(lda, r, "lda");
  PetscBLASInt info = 0, lwork = -1, liwork = -1, iwq = 0;
  double wq = 0;
  SSDR_dsyevd("V", "L", &N, a, &LDA, w, &wq, &lwork, &iwq, &liwork, &info);
  check_info(info, r);
  lwork = workspace(wq, 0, r);
  liwork = workspace(static_cast<double>(iwq), 0, r);
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<PetscBLASInt> iwork(static_cast<size_t>(liwork));
  SSDR_dsyevd("V", "L", &N, a, &LDA, w, work.data(), &lwork, iwork.data(), &liwork, &info);
  check_info(info, r);
}

void syevr(int64_t n, double* a, int64_t lda, int64_t il, int64_t iu, double* w, double* z, int64_t ldz) {
  if (n == 0 || iu < il) return;
  ++work_counters().eigen[{n, iu - il + 1}];
  const char* r = "dsyevr";
  SSDR_CHECK(il >= 1 && iu <= n, std::string(r) + ": eigenvalue indices " + std::to_string(il) + ".." +
                                     std::to_string(iu) + " outside 1.." + std::to_string(n));
  const PetscBLASInt N = blas_int(n, r, "n"), LDA = blas_ld(lda, r, "lda"), LDZ = blas_ld(ldz, r, "ldz"),
                     IL = blas_int(il, r, "il"), IU = blas_int(iu, r, "iu");
  const double vl = 0, vu = 0, abstol = 0;  // index range; abstol 0: LAPACK's default accuracy
  PetscBLASInt found = 0, info = 0, lwork = -1, liwork = -1, iwq = 0;
  std::vector<PetscBLASInt> isuppz(static_cast<size_t>(2 * std::max<int64_t>(n, 1)));
  double wq = 0;
  // dsyevr writes up to n eigenvalues into its W even for an index range: its own buffer of n,
  // the iu − il + 1 selected ones copied out (the caller's w holds only those).
  std::vector<double> all(static_cast<size_t>(n));
  SSDR_dsyevr("V", "I", "L", &N, a, &LDA, &vl, &vu, &IL, &IU, &abstol, &found, all.data(), z, &LDZ, isuppz.data(), &wq,
              &lwork, &iwq, &liwork, &info);
  check_info(info, r);
  lwork = workspace(wq, 26 * n, r);
  liwork = workspace(static_cast<double>(iwq), 10 * n, r);
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<PetscBLASInt> iwork(static_cast<size_t>(liwork));
  SSDR_dsyevr("V", "I", "L", &N, a, &LDA, &vl, &vu, &IL, &IU, &abstol, &found, all.data(), z, &LDZ, isuppz.data(),
              work.data(), &lwork, iwork.data(), &liwork, &info);
  check_info(info, r);
  SSDR_CHECK(found == IU - IL + 1, std::string(r) + ": found " + std::to_string(found) + " of " +
                                        std::to_string(iu - il + 1) + " eigenpairs");
  std::copy_n(all.data(), found, w);
}

void sygv(int64_t n, double* a, int64_t lda, double* b, int64_t ldb, double* w) {
  if (n == 0) return;
  const char* r = "dsygvd";
  const PetscBLASInt one = 1, N = blas_int(n, r, "n"), LDA = blas_int(lda, r, "lda"), LDB = blas_int(ldb, r, "ldb");
  PetscBLASInt info = 0, lwork = -1, liwork = -1, iwq = 0;
  double wq = 0;
  SSDR_dsygvd(&one, "V", "L", &N, a, &LDA, b, &LDB, w, &wq, &lwork, &iwq, &liwork, &info);
  check_info(info, r);
  lwork = workspace(wq, 0, r);
  liwork = workspace(static_cast<double>(iwq), 0, r);
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<PetscBLASInt> iwork(static_cast<size_t>(liwork));
  SSDR_dsygvd(&one, "V", "L", &N, a, &LDA, b, &LDB, w, work.data(), &lwork, iwork.data(), &liwork, &info);
  check_info(info, r);
}

void gesvd(int64_t m, int64_t n, double* a, int64_t lda, double* s, double* u, int64_t ldu,
           double* vt, int64_t ldvt) {
  const char* r = "dgesdd";
  const PetscBLASInt M = blas_int(m, r, "m"), N = blas_int(n, r, "n"), LDA = blas_int(lda, r, "lda"),
                     LDU = blas_int(ldu, r, "ldu"), LDVT = blas_int(ldvt, r, "ldvt");
  std::vector<PetscBLASInt> iwork(static_cast<size_t>(blas_int(8 * std::min(m, n), r, "iwork size")));
  PetscBLASInt info = 0, lwork = -1;
  double wq = 0;
  SSDR_dgesdd("S", &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, &wq, &lwork, iwork.data(), &info);
  check_info(info, r);
  lwork = workspace(wq, 0, r);
  std::vector<double> work(static_cast<size_t>(lwork));
  SSDR_dgesdd("S", &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work.data(), &lwork, iwork.data(), &info);
  check_info(info, r);
}

namespace {

/// QR of the m×k matrix in a's first k columns, then the first q (k ≤ q ≤ m) columns of
/// its Q written over a (dgeqrf + dorgqr with workspace queries).
void qr_q(int64_t m, int64_t k, int64_t q, double* a, int64_t lda) {
  const PetscBLASInt M = blas_int(m, "dgeqrf", "m"), K = blas_int(k, "dgeqrf", "n"), Q = blas_int(q, "dorgqr", "n"),
                     LDA = blas_int(lda, "dgeqrf", "lda");
  std::vector<double> tau(static_cast<size_t>(k));
  PetscBLASInt info = 0, lwork = -1;
  double wq = 0;
  LAPACKgeqrf_(&M, &K, a, &LDA, tau.data(), &wq, &lwork, &info);
  check_info(info, "dgeqrf");
  lwork = workspace(wq, q, "dgeqrf");
  std::vector<double> work(static_cast<size_t>(lwork));
  LAPACKgeqrf_(&M, &K, a, &LDA, tau.data(), work.data(), &lwork, &info);
  check_info(info, "dgeqrf");
  lwork = -1;
  LAPACKorgqr_(&M, &Q, &K, a, &LDA, tau.data(), &wq, &lwork, &info);
  check_info(info, "dorgqr");
  lwork = workspace(wq, q, "dorgqr");
  work.resize(static_cast<size_t>(lwork));
  LAPACKorgqr_(&M, &Q, &K, a, &LDA, tau.data(), work.data(), &lwork, &info);
  check_info(info, "dorgqr");
}

}  // namespace

void orthonormalize(int64_t m, int64_t n, double* a, int64_t lda) {
  if (n == 0) return;
  qr_q(m, n, n, a, lda);
}

void full_qr(int64_t m, int64_t k, double* a, int64_t lda) {
  if (m == 0) return;
  qr_q(m, k, m, a, lda);
}

bool potrf(int64_t n, double* a, int64_t lda) {
  work_counters().solve_flops += static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 3.0;
  const PetscBLASInt N = blas_int(n, "dpotrf", "n"), LDA = blas_int(lda, "dpotrf", "lda");
  PetscBLASInt info = 0;
  LAPACKpotrf_("L", &N, a, &LDA, &info);
  return info == 0;
}

void posv(int64_t n, int64_t nrhs, double* a, int64_t lda, double* b, int64_t ldb) {
  const double dn = static_cast<double>(n);
  work_counters().solve_flops += dn * dn * dn / 3.0 + 2.0 * dn * dn * static_cast<double>(nrhs);
  const char* r = "dposv";
  const PetscBLASInt N = blas_int(n, r, "n"), NR = blas_int(nrhs, r, "nrhs"), LDA = blas_int(lda, r, "lda"),
                     LDB = blas_int(ldb, r, "ldb");
  PetscBLASInt info = 0;
  SSDR_dposv("L", &N, &NR, a, &LDA, b, &LDB, &info);
  check_info(info, r);
}

}  // namespace ssdr::lapack
