#pragma once
/// \file lapack.hpp
/// Thin C++ wrappers over the Fortran BLAS/LAPACK symbols (OpenBLAS through Debian's
/// libblas.so.3/liblapack.so.3 alternatives), declared by PETSc's petscblaslapack.h (its
/// PetscBLASInt and name mangling). Column-major, Fortran conventions; every wrapper is
/// local (not collective). Sizes and leading dimensions are int64_t: one that is negative or
/// does not fit PetscBLASInt (2³¹ − 1 with a 32-bit-integer BLAS) throws ssdr::Error naming
/// the routine and the argument instead of wrapping around.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace ssdr::blas {

/// C = alpha·op(A)·op(B) + beta·C (dgemm).
void gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc);
/// C = alpha·op(A)·op(B) + beta·C in single precision (sgemm): the kNN search's candidate
/// filter, whose rounding it bounds and re-checks in double.
void gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc);
/// C = alpha·op(A)·op(A)ᵀ + beta·C, upper or lower triangle (dsyrk); trans='N': A is n×k.
void syrk(char uplo, char trans, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, double beta, double* c, int64_t ldc);
/// The same in single precision (ssyrk): the PCA covariance's exact Gram of integer rows,
/// whose every product and sum float holds exactly (data/preprocess.cpp). Not counted in
/// work_counters (a benchmark's bound prices double-precision work).
void syrk(char uplo, char trans, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, float beta, float* c, int64_t ldc);
/// Triangular solve with multiple right-hand sides (dtrsm): B ← alpha·op(A)⁻¹B (side 'L')
/// or B ← alpha·B·op(A)⁻¹ (side 'R'); B is m×n.
void trsm(char side, char uplo, char transa, char diag, int64_t m, int64_t n, double alpha,
          const double* a, int64_t lda, double* b, int64_t ldb);
/// Copies the `uplo` triangle of the n×n matrix c into the other one.
void symmetrize(char uplo, int64_t n, double* c, int64_t ldc);

}  // namespace ssdr::blas

namespace ssdr::lapack {

/// What this process asked of BLAS and LAPACK since the last reset: dense eigen-solves by
/// (order n, eigenvectors k), and the floating-point operations of dgemm (2mnk), dsyrk
/// (n²k), dtrsm, dpotrf and dposv. Benchmarks read them to state a computation's bound (jobs/bench_sweep.sh); the
/// counting costs one map update per eigen-solve. Local (per process).
struct WorkCounters {
  std::map<std::pair<int64_t, int64_t>, int64_t> eigen;  ///< (n, k) → calls (dsyevr, dsyevd: k = n)
  double gemm_flops = 0;
  double syrk_flops = 0;
  /// Triangular solves and Cholesky factorizations: dtrsm (m²n on the left, mn² on the
  /// right), dpotrf (n³/3), dposv (n³/3 + 2n²·nrhs).
  double solve_flops = 0;
};
/// The counters of this process (reset_work_counters zeroes them). Local.
WorkCounters& work_counters();
void reset_work_counters();

/// All eigenvalues (ascending) and eigenvectors of the symmetric n×n matrix a (overwritten
/// by the eigenvectors, column-major). dsyevd. Throws ssdr::Error when LAPACK fails.
void syev(int64_t n, double* a, int64_t lda, double* w);
/// The eigenpairs il..iu (1-based, of the eigenvalues in ascending order) of the symmetric
/// n×n matrix a (its lower triangle; destroyed): values ascending in w (iu − il + 1 of them), vectors
/// in the columns of z (n × (iu − il + 1), leading dimension ldz). dsyevr (MRRR), which
/// computes only the vectors asked for. Local. \throws ssdr::Error when LAPACK fails.
void syevr(int64_t n, double* a, int64_t lda, int64_t il, int64_t iu, double* w, double* z, int64_t ldz);
/// Generalized symmetric-definite problem A x = λ B x (dsygvd, itype 1); b must be SPD.
/// Eigenvalues ascending in w, eigenvectors (B-orthonormal) in a.
void sygv(int64_t n, double* a, int64_t lda, double* b, int64_t ldb, double* w);
/// Thin SVD of the m×n matrix a (dgesdd, jobz='S'); u is m×min, vt is min×n.
void gesvd(int64_t m, int64_t n, double* a, int64_t lda, double* s, double* u, int64_t ldu,
           double* vt, int64_t ldvt);
/// Thin QR: a (m×n, m ≥ n) is replaced by Q with orthonormal columns (dgeqrf + dorgqr).
void orthonormalize(int64_t m, int64_t n, double* a, int64_t lda);
/// Full QR of the m×k matrix A held in the first k columns of a (m×m, column-major, lda ≥ m,
/// k ≤ m; the other m − k columns are overwritten): a is replaced by the orthogonal
/// Q = [Q_1 Q_2] (m×m) of A = Q_1 R, so Q_2 (the last m − k columns) is an orthonormal basis
/// of the orthogonal complement of range(A) when A has full column rank (dgeqrf + dorgqr).
/// Local. \throws ssdr::Error when LAPACK reports an error.
void full_qr(int64_t m, int64_t k, double* a, int64_t lda);
/// Cholesky factorization of the SPD n×n matrix a (lower). Returns false when not SPD.
bool potrf(int64_t n, double* a, int64_t lda);
/// Solves A X = B with the symmetric positive definite A (dposv); A, B overwritten.
void posv(int64_t n, int64_t nrhs, double* a, int64_t lda, double* b, int64_t ldb);

}  // namespace ssdr::lapack
