#include "ssdr/core/lapack.hpp"

#include <algorithm>
#include <string>

#include "ssdr/core/error.hpp"

extern "C" {
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*,
            const double*, const int*, const double*, const int*, const double*, double*,
            const int*);
void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*,
            const float*, const int*, const float*, const int*, const float*, float*,
            const int*);
void dsyrk_(const char*, const char*, const int*, const int*, const double*, const double*,
            const int*, const double*, double*, const int*);
void dtrsm_(const char*, const char*, const char*, const char*, const int*, const int*,
            const double*, const double*, const int*, double*, const int*);
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*,
             const int*, int*, const int*, int*);
void dsygvd_(const int*, const char*, const char*, const int*, double*, const int*, double*,
             const int*, double*, double*, const int*, int*, const int*, int*);
void dgesdd_(const char*, const int*, const int*, double*, const int*, double*, double*,
             const int*, double*, const int*, double*, const int*, int*, int*);
void dgeqrf_(const int*, const int*, double*, const int*, double*, double*, const int*, int*);
void dorgqr_(const int*, const int*, const int*, double*, const int*, const double*, double*,
             const int*, int*);
void dpotrf_(const char*, const int*, double*, const int*, int*);
void dposv_(const char*, const int*, const int*, double*, const int*, double*, const int*,
            int*);
}

namespace ssdr::blas {

void gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  const int LDA = static_cast<int>(std::max<int64_t>(lda, 1)),
            LDB = static_cast<int>(std::max<int64_t>(ldb, 1)),
            LDC = static_cast<int>(std::max<int64_t>(ldc, 1));
  dgemm_(&transa, &transb, &M, &N, &K, &alpha, a, &LDA, b, &LDB, &beta, c, &LDC);
}

void gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  const int LDA = static_cast<int>(std::max<int64_t>(lda, 1)),
            LDB = static_cast<int>(std::max<int64_t>(ldb, 1)),
            LDC = static_cast<int>(std::max<int64_t>(ldc, 1));
  sgemm_(&transa, &transb, &M, &N, &K, &alpha, a, &LDA, b, &LDB, &beta, c, &LDC);
}

void syrk(char uplo, char trans, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, double beta, double* c, int64_t ldc) {
  if (n == 0) return;
  const int N = static_cast<int>(n), K = static_cast<int>(k);
  const int LDA = static_cast<int>(std::max<int64_t>(lda, 1)),
            LDC = static_cast<int>(std::max<int64_t>(ldc, 1));
  dsyrk_(&uplo, &trans, &N, &K, &alpha, a, &LDA, &beta, c, &LDC);
}

void trsm(char side, char uplo, char transa, char diag, int64_t m, int64_t n, double alpha,
          const double* a, int64_t lda, double* b, int64_t ldb) {
  if (m == 0 || n == 0) return;
  const int M = static_cast<int>(m), N = static_cast<int>(n), LDA = static_cast<int>(lda),
            LDB = static_cast<int>(ldb);
  dtrsm_(&side, &uplo, &transa, &diag, &M, &N, &alpha, a, &LDA, b, &LDB);
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

static void check_info(int info, const char* routine) {
  SSDR_CHECK(info == 0, std::string("LAPACK ") + routine + " failed (info " +
                            std::to_string(info) + ")");
}

void syev(int64_t n, double* a, int64_t lda, double* w) {
  if (n == 0) return;
  const int N = static_cast<int>(n), LDA = static_cast<int>(lda);
  int info = 0, lwork = -1, liwork = -1, iwq = 0;
  double wq = 0;
  dsyevd_("V", "L", &N, a, &LDA, w, &wq, &lwork, &iwq, &liwork, &info);
  lwork = static_cast<int>(wq) + 1;
  liwork = iwq + 1;
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  dsyevd_("V", "L", &N, a, &LDA, w, work.data(), &lwork, iwork.data(), &liwork, &info);
  check_info(info, "dsyevd");
}

void sygv(int64_t n, double* a, int64_t lda, double* b, int64_t ldb, double* w) {
  if (n == 0) return;
  const int one = 1, N = static_cast<int>(n), LDA = static_cast<int>(lda),
            LDB = static_cast<int>(ldb);
  int info = 0, lwork = -1, liwork = -1, iwq = 0;
  double wq = 0;
  dsygvd_(&one, "V", "L", &N, a, &LDA, b, &LDB, w, &wq, &lwork, &iwq, &liwork, &info);
  lwork = static_cast<int>(wq) + 1;
  liwork = iwq + 1;
  std::vector<double> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  dsygvd_(&one, "V", "L", &N, a, &LDA, b, &LDB, w, work.data(), &lwork, iwork.data(), &liwork,
          &info);
  check_info(info, "dsygvd");
}

void gesvd(int64_t m, int64_t n, double* a, int64_t lda, double* s, double* u, int64_t ldu,
           double* vt, int64_t ldvt) {
  const int M = static_cast<int>(m), N = static_cast<int>(n), LDA = static_cast<int>(lda),
            LDU = static_cast<int>(ldu), LDVT = static_cast<int>(ldvt);
  const int mn = static_cast<int>(std::min(m, n));
  std::vector<int> iwork(static_cast<size_t>(8 * mn));
  int info = 0, lwork = -1;
  double wq = 0;
  dgesdd_("S", &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, &wq, &lwork, iwork.data(), &info);
  lwork = static_cast<int>(wq) + 1;
  std::vector<double> work(static_cast<size_t>(lwork));
  dgesdd_("S", &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work.data(), &lwork, iwork.data(),
          &info);
  check_info(info, "dgesdd");
}

namespace {

/// QR of the m×k matrix in a's first k columns, then the first q (k ≤ q ≤ m) columns of
/// its Q written over a (dgeqrf + dorgqr with workspace queries).
void qr_q(int64_t m, int64_t k, int64_t q, double* a, int64_t lda) {
  const int M = static_cast<int>(m), K = static_cast<int>(k), Q = static_cast<int>(q),
            LDA = static_cast<int>(lda);
  std::vector<double> tau(static_cast<size_t>(k));
  int info = 0, lwork = -1;
  double wq = 0;
  dgeqrf_(&M, &K, a, &LDA, tau.data(), &wq, &lwork, &info);
  lwork = std::max(static_cast<int>(wq), Q) + 1;
  std::vector<double> work(static_cast<size_t>(lwork));
  dgeqrf_(&M, &K, a, &LDA, tau.data(), work.data(), &lwork, &info);
  check_info(info, "dgeqrf");
  lwork = -1;
  dorgqr_(&M, &Q, &K, a, &LDA, tau.data(), &wq, &lwork, &info);
  lwork = std::max(static_cast<int>(wq), Q) + 1;
  work.resize(static_cast<size_t>(lwork));
  dorgqr_(&M, &Q, &K, a, &LDA, tau.data(), work.data(), &lwork, &info);
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
  const int N = static_cast<int>(n), LDA = static_cast<int>(lda);
  int info = 0;
  dpotrf_("L", &N, a, &LDA, &info);
  return info == 0;
}

void posv(int64_t n, int64_t nrhs, double* a, int64_t lda, double* b, int64_t ldb) {
  const int N = static_cast<int>(n), NR = static_cast<int>(nrhs), LDA = static_cast<int>(lda),
            LDB = static_cast<int>(ldb);
  int info = 0;
  dposv_("L", &N, &NR, a, &LDA, b, &LDB, &info);
  check_info(info, "dposv");
}

}  // namespace ssdr::lapack
