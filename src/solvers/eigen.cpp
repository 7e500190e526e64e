// Symmetric (generalized) eigenproblems of small replicated matrices.
//
// Default: a replicated matrix of order d ≤ kReplicatedEigenMax (4096) is solved by LAPACK on
// every rank (dsyevr, only the nev eigenvectors asked for, or dsyevd's whole decomposition
// when nev > d/4, where it is faster; a generalized problem reduced to a
// standard one by B's Cholesky factor, as below): no communication, and the same bits on any
// rank count. Larger ones, or any -<prefix>eps_type the user sets, go through SLEPc.
//
// SLEPc's default EPS type: scalapack, which computes every eigenpair with the dense ScaLAPACK
// drivers and works for GHEP in parallel without factorizing B through PETSc. Its operators
// are built as MATSCALAPACK directly (see sym_eigen for why). PETSc 3.18 cannot lay out a
// MATSCALAPACK of order d on p ranks when d is tiny compared with p (roughly d < p(p−1), e.g.
// d = 5 on 4 ranks); such problems use the lapack type instead (also dense, all
// eigenpairs), even if scalapack was asked for.
// Any other EPS type can be selected through the options database with the caller's prefix
// (-<prefix>eps_type krylovschur ...): EPSSetFromOptions is called after every default is
// set. For a generalized problem solved by an iterative (non-dense) type, the default
// spectral transformation needs solves with B: A and B are then handed over as MATAIJ and
// the ST's KSP is preset to preonly + Cholesky (MUMPS), a default the options can override
// (-<prefix>st_ksp_type ..., -<prefix>st_pc_type ...).
#include "ssdr/solvers/eigen.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::solvers {
namespace {

/// EPS types that compute the whole spectrum from a dense copy (no ST solves needed).
bool is_dense_type(const std::string& type) {
  return type == EPSSCALAPACK || type == EPSLAPACK || type == EPSELPA || type == EPSELEMENTAL;
}

/// The replicated A as a MATSCALAPACK on comm (local size from ssdr::scalapack_local_size,
/// which must be ≥ 0). Every rank inserts its PETSc-owned rows; the matrix routes entries to
/// their 2-D block-cyclic owners at assembly. Collective.
Owned<Mat> to_scalapack(const Dense& A, MPI_Comm comm) {
  const PetscInt d = static_cast<PetscInt>(A.rows);
  const PetscInt n_local = scalapack_local_size(A.rows, comm);
  Owned<Mat> M;
  SSDR_PETSC(MatCreate(comm, M.out()));
  SSDR_PETSC(MatSetSizes(M, n_local, n_local, d, d));
  SSDR_PETSC(MatSetType(M, MATSCALAPACK));
  SSDR_PETSC(MatSetUp(M));
  PetscInt rs = 0, re = 0;
  SSDR_PETSC(MatGetOwnershipRange(M, &rs, &re));
  std::vector<PetscInt> rows, cols(static_cast<size_t>(d));
  std::iota(cols.begin(), cols.end(), PetscInt{0});
  std::vector<PetscScalar> vals;
  vals.reserve(static_cast<size_t>((re - rs) * d));
  for (PetscInt i = rs; i < re; ++i) {
    rows.push_back(i);
    for (PetscInt j = 0; j < d; ++j) vals.push_back(A(i, j));  // row-major block
  }
  SSDR_PETSC(MatSetValues(M, re - rs, rows.data(), d, cols.data(), vals.data(), INSERT_VALUES));
  SSDR_PETSC(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
  return M;
}

/// The replicated A as a PETSc matrix of type `mat_type` (MATDENSE, MATAIJ or MATSCALAPACK)
/// on comm, flagged symmetric. Collective.
Owned<Mat> to_petsc(const Dense& A, MPI_Comm comm, const std::string& mat_type) {
  Owned<Mat> S;
  if (mat_type == MATSCALAPACK) {
    S = to_scalapack(A, comm);
  } else if (mat_type == MATDENSE) {
    S = to_petsc_dense(A, comm);
  } else {
    Owned<Mat> M = to_petsc_dense(A, comm);
    SSDR_PETSC(MatConvert(M, mat_type.c_str(), MAT_INITIAL_MATRIX, S.out()));
  }
  SSDR_PETSC(MatSetOption(S, MAT_SYMMETRIC, PETSC_TRUE));
  return S;
}

/// Normalizes x (‖x‖₂ = 1, or xᵀBx = 1) and flips it so its entry of largest magnitude
/// (the first one on exact ties) is positive. Local, deterministic on replicated data.
void normalize_and_fix_sign(double* x, int64_t d, const Dense* B) {
  double nrm2 = 0;
  if (B) {
    std::vector<double> Bx(static_cast<size_t>(d), 0.0);
    blas::gemm('N', 'N', d, 1, d, 1.0, B->data(), d, x, d, 0.0, Bx.data(), d);
    for (int64_t i = 0; i < d; ++i) nrm2 += x[i] * Bx[static_cast<size_t>(i)];
  } else {
    for (int64_t i = 0; i < d; ++i) nrm2 += x[i] * x[i];
  }
  SSDR_CHECK(nrm2 > 0 && std::isfinite(nrm2), "sym_eigen: zero or non-finite eigenvector");
  // The sign is taken before scaling (scaling could turn a strict > between two magnitudes
  // into a tie); ±1 · (1/√nrm2) is exact, so x·scale has the bits of the unsplit version.
  const double scale = largest_magnitude_sign(x, d) * (1.0 / std::sqrt(nrm2));
  for (int64_t i = 0; i < d; ++i) x[i] *= scale;
}

/// Progress of an iterative eigen-solve (an EPS monitor): iterations, converged pairs of
/// nev and an ETA from the rate at which pairs converge; rate-limited like every progress
/// line. The dense types (scalapack, lapack, ...) solve in one call and report nothing.
struct EpsProgress {
  Progress progress;
  PetscInt nev;
};

PetscErrorCode eps_progress_monitor(EPS, PetscInt its, PetscInt nconv, PetscScalar*, PetscScalar*, PetscReal*,
                                    PetscInt, void* ctx) {
  auto* p = static_cast<EpsProgress*>(ctx);
  const PetscInt done = std::min(nconv, p->nev);
  // With k of nev pairs converged after `its` iterations, about its·nev/k in all.
  const long expected = done > 0 ? static_cast<long>(std::ceil(static_cast<double>(its) * p->nev / done)) : 0;
  p->progress.update(static_cast<long>(its), expected,
                     std::to_string(done) + " of " + std::to_string(p->nev) + " eigenpairs converged");
  return 0;
}

/// Beyond nev > d/kFullSpectrumFraction pairs, the whole decomposition by divide and conquer
/// (dsyevd) is faster than dsyevr's nev vectors: measured here (serial OpenBLAS, 2026-11-29)
/// at d = 784, dsyevd 0.099 s against dsyevr 0.071, 0.099, 0.163 and 0.116 s for 98, 196, 392
/// and 784 vectors; at d = 200 and 1000 the crossover is also near d/4.
constexpr int64_t kFullSpectrumFraction = 4;

/// The nev largest or smallest eigenpairs of the replicated symmetric A by LAPACK (dsyevr:
/// only those vectors are computed; dsyevd, all of them, when nev > d/4), in sym_eigen's order
/// (largest first, or smallest first) with the canonical sign. Every rank computes the same
/// bits from the same A, whatever the rank count. Local; a LAPACK failure is raised as
/// replicated (every rank fails alike).
EigenPairs replicated_eigenpairs(const Dense& A, int64_t nev, Which which) {
  const int64_t d = A.rows;
  Dense a = A, z(d, nev);
  std::vector<double> w(static_cast<size_t>(nev));
  const int64_t il = which == Which::largest ? d - nev + 1 : 1, iu = which == Which::largest ? d : nev;
  try {
    if (nev * kFullSpectrumFraction > d) {
      std::vector<double> all(static_cast<size_t>(d));
      lapack::syev(d, a.data(), d, all.data());  // ascending; a holds the vectors
      std::copy(all.begin() + (il - 1), all.begin() + iu, w.begin());
      std::copy(a.col(il - 1), a.col(il - 1) + d * nev, z.data());
    } else {
      lapack::syevr(d, a.data(), d, il, iu, w.data(), z.data(), d);
    }
  } catch (const Error& e) {
    throw Error(e.what(), e.file(), e.line(), true);
  }
  EigenPairs out;
  out.values.resize(static_cast<size_t>(nev));
  out.vectors = Dense(d, nev);
  for (int64_t k = 0; k < nev; ++k) {  // both return them ascending
    const int64_t src = which == Which::largest ? nev - 1 - k : k;
    out.values[static_cast<size_t>(k)] = w[static_cast<size_t>(src)];
    std::copy(z.col(src), z.col(src) + d, out.vectors.col(k));
    normalize_and_fix_sign(out.vectors.col(k), d, nullptr);
  }
  return out;
}

}  // namespace

EigenPairs solve_with_eps(const Dense& A, const Dense* B, int64_t nev, Which which,
                          const std::string& prefix, MPI_Comm comm) {
  SSDR_CHECK(A.rows == A.cols, "sym_eigen: A must be square, got " + std::to_string(A.rows) +
                                   "×" + std::to_string(A.cols));
  const int64_t d = A.rows;
  if (B) SSDR_CHECK_SHAPE("sym_eigen: B vs A", B->rows, B->cols, A.rows, A.cols);
  SSDR_CHECK(d >= 1 && nev >= 1 && nev <= d,
             "sym_eigen: nev = " + std::to_string(nev) + " must lie in [1, " +
                 std::to_string(d) + "]");

  const bool generalized = B != nullptr;
  // ScaLAPACK needs a layout PETSc 3.18 cannot build for tiny d on many ranks; those
  // problems (d < p(p−1) at worst) go to the equally dense, all-eigenpairs lapack type.
  const DenseEpsChoice choice = choose_dense_eps_type(d, prefix, comm);
  if (choice.replicated && !generalized) return replicated_eigenpairs(A, nev, which);
  const bool scalapack_ok = choice.scalapack_ok;
  const char* default_type = choice.default_type;
  const std::string& type = choice.type;
  const bool iterative_ghep = generalized && !is_dense_type(type);

  // Operators: the scalapack EPS converts them to MATSCALAPACK, and in PETSc/SLEPc 3.18
  // converting a MATDENSE there bumps the original's object state (MatDenseGetArray), which
  // EPSSolve then rejects ("Cannot retrieve original matrices (have been modified)"), so it
  // gets MATSCALAPACK directly. Iterative types solving a GHEP need a factorization of B
  // (MUMPS Cholesky), which wants MATAIJ. Everything else gets MATDENSE.
  const std::string mat_type =
      type == EPSSCALAPACK ? MATSCALAPACK : (iterative_ghep ? MATAIJ : MATDENSE);
  Owned<Mat> Am = to_petsc(A, comm, mat_type);
  Owned<Mat> Bm;
  if (generalized) Bm = to_petsc(*B, comm, mat_type);

  EpsProgress eps_progress{Progress("eigensolve -" + prefix + " (" + type + ", d = " + std::to_string(d) +
                                         ") iteration",
                                     0),
                            static_cast<PetscInt>(nev)};
  Owned<EPS> eps;
  SSDR_PETSC(EPSCreate(comm, eps.out()));
  SSDR_PETSC(EPSSetOperators(eps, Am, generalized ? Bm.get() : nullptr));
  SSDR_PETSC(EPSSetProblemType(eps, generalized ? EPS_GHEP : EPS_HEP));
  SSDR_PETSC(EPSSetDimensions(eps, static_cast<PetscInt>(nev), PETSC_DEFAULT, PETSC_DEFAULT));
  SSDR_PETSC(EPSSetWhichEigenpairs(
      eps, which == Which::largest ? EPS_LARGEST_REAL : EPS_SMALLEST_REAL));
  SSDR_PETSC(EPSSetType(eps, default_type));
  if (!prefix.empty()) SSDR_PETSC(EPSSetOptionsPrefix(eps, prefix.c_str()));
  if (iterative_ghep) {
    ST st = nullptr;
    KSP ksp = nullptr;
    PC pc = nullptr;
    SSDR_PETSC(EPSGetST(eps, &st));
    SSDR_PETSC(STGetKSP(st, &ksp));
    SSDR_PETSC(KSPSetType(ksp, KSPPREONLY));
    SSDR_PETSC(KSPGetPC(ksp, &pc));
    SSDR_PETSC(PCSetType(pc, PCCHOLESKY));
    SSDR_PETSC(PCFactorSetMatSolverType(pc, MATSOLVERMUMPS));
  }
  SSDR_PETSC_OPTIONS(EPSSetFromOptions(eps));
  if (type == EPSLAPACK && !scalapack_ok) SSDR_PETSC(EPSSetType(eps, EPSLAPACK));
  if (!is_dense_type(type)) SSDR_PETSC(EPSMonitorSet(eps, eps_progress_monitor, &eps_progress, nullptr));
  SSDR_PETSC(EPSSolve(eps));

  PetscInt nconv = 0;
  SSDR_PETSC(EPSGetConverged(eps, &nconv));
  SSDR_CHECK(nconv >= nev, "sym_eigen: the eigensolver (options prefix '" + prefix +
                               "') converged " + std::to_string(nconv) + " of " +
                               std::to_string(nev) + " requested eigenpairs");

  // Eigenvectors: one scatter-to-all built once and reused for every vector.
  std::vector<double> values(static_cast<size_t>(nev));
  Dense vecs(d, nev);
  Owned<Vec> x, all;
  SSDR_PETSC(MatCreateVecs(Am, x.out(), nullptr));
  VecScatter ctx = nullptr;
  SSDR_PETSC(VecScatterCreateToAll(x, &ctx, all.out()));
  struct ScatterGuard {
    VecScatter* c;
    ~ScatterGuard() { VecScatterDestroy(c); }
  } guard{&ctx};
  for (int64_t k = 0; k < nev; ++k) {
    PetscScalar kr = 0, ki = 0;
    SSDR_PETSC(EPSGetEigenpair(eps, static_cast<PetscInt>(k), &kr, &ki, x, nullptr));
    values[static_cast<size_t>(k)] = PetscRealPart(kr);
    SSDR_PETSC(VecScatterBegin(ctx, x, all, INSERT_VALUES, SCATTER_FORWARD));
    SSDR_PETSC(VecScatterEnd(ctx, x, all, INSERT_VALUES, SCATTER_FORWARD));
    const PetscScalar* a = nullptr;
    SSDR_PETSC(VecGetArrayRead(all, &a));
    std::copy(a, a + d, vecs.col(k));
    SSDR_PETSC(VecRestoreArrayRead(all, &a));
    normalize_and_fix_sign(vecs.col(k), d, B);
  }

  EigenPairs out;

  // SLEPc already sorts by `which`; a stable sort makes the contract explicit.
  std::vector<int64_t> order(static_cast<size_t>(nev));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    const double vi = values[static_cast<size_t>(i)], vj = values[static_cast<size_t>(j)];
    return which == Which::largest ? vi > vj : vi < vj;
  });
  out.values.resize(static_cast<size_t>(nev));
  out.vectors = Dense(d, nev);
  for (int64_t k = 0; k < nev; ++k) {
    const int64_t src = order[static_cast<size_t>(k)];
    out.values[static_cast<size_t>(k)] = values[static_cast<size_t>(src)];
    std::copy(vecs.col(src), vecs.col(src) + d, out.vectors.col(k));
  }
  return out;
}

EigenPairs sym_eigen(const Dense& A, const Dense* B, int64_t nev, Which which,
                     const std::string& prefix, MPI_Comm comm) {
  if (B == nullptr) return solve_with_eps(A, nullptr, nev, which, prefix, comm);
  SSDR_CHECK(A.rows == A.cols, "sym_eigen: A must be square, got " + std::to_string(A.rows) +
                                   "×" + std::to_string(A.cols));
  SSDR_CHECK_SHAPE("sym_eigen: B vs A", B->rows, B->cols, A.rows, A.cols);
  // The request as given (a scalapack request that cannot be laid out still takes this
  // reduction; solve_with_eps then falls back to lapack).
  const DenseEpsChoice choice = choose_dense_eps_type(A.rows, prefix, comm);
  if (choice.requested != EPSSCALAPACK && !choice.replicated) return solve_with_eps(A, B, nev, which, prefix, comm);
  // ScaLAPACK's GHEP driver (pdsygvx) fails ("could not reorthogonalize clusters") on the
  // large clusters of equal eigenvalues that rank-deficient between-class scatter matrices
  // have (LDA: rank c−1 in d = 784). Reduce to a standard problem instead, as pdsygst
  // would: B = LLᵀ (replicated Cholesky, d×d), C = L⁻¹ A L⁻ᵀ, C y = λ y, x = L⁻ᵀ y (so
  // xᵀBx = yᵀy = 1).
  const int64_t d = A.rows;
  Dense L = *B;
  SSDR_CHECK_COLLECTIVE(comm, lapack::potrf(d, L.data(), d), "sym_eigen: B is not positive definite");
  Dense C = A;
  blas::trsm('L', 'L', 'N', 'N', d, d, 1.0, L.data(), d, C.data(), d);  // L⁻¹A
  blas::trsm('R', 'L', 'T', 'N', d, d, 1.0, L.data(), d, C.data(), d);  // (L⁻¹A)L⁻ᵀ
  blas::symmetrize('L', d, C.data(), d);
  EigenPairs e = solve_with_eps(C, nullptr, nev, which, prefix, comm);
  blas::trsm('L', 'L', 'T', 'N', d, nev, 1.0, L.data(), d, e.vectors.data(), d);  // L⁻ᵀY
  for (int64_t k = 0; k < nev; ++k) normalize_and_fix_sign(e.vectors.col(k), d, B);
  return e;
}

EigenPairs largest_low_rank_eigen(const Dense& F, const Dense& B, int64_t nev, const std::string& prefix,
                                  MPI_Comm comm, const Dense* A) {
  const int64_t d = F.rows, r = F.cols;
  SSDR_CHECK_SHAPE("largest_low_rank_eigen: B vs F", B.rows, B.cols, d, d);
  SSDR_CHECK(nev >= 1 && nev <= r, "largest_low_rank_eigen: nev = " + std::to_string(nev) + " must lie in [1, " +
                                       std::to_string(r) + "] (the factor's columns)");
  if (A != nullptr) SSDR_CHECK_SHAPE("largest_low_rank_eigen: A vs B", A->rows, A->cols, d, d);
  auto full = [&] {
    if (A != nullptr) return sym_eigen(*A, &B, nev, Which::largest, prefix, comm);
    Dense FFt(d, d);
    blas::gemm('N', 'T', d, d, r, 1.0, F.data(), d, F.data(), d, 0.0, FFt.data(), d);
    blas::symmetrize('L', d, FFt.data(), d);
    return sym_eigen(FFt, &B, nev, Which::largest, prefix, comm);
  };
  if (!choose_dense_eps_type(d, prefix, comm).replicated) return full();
  Dense L = B;
  // B is replicated; the allreduce makes the branch collective whatever its bits.
  int ok = lapack::potrf(d, L.data(), d) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (!ok) return full();  // sym_eigen raises its error for a B that is not positive definite
  Dense C = F;
  blas::trsm('L', 'L', 'N', 'N', d, r, 1.0, L.data(), d, C.data(), d);  // L⁻¹F
  std::vector<double> sv(static_cast<size_t>(r));
  const int64_t kr = std::min(d, r);
  Dense U(d, kr), Vt(kr, r);
  // λ_nev = σ_nev² must stand above the d × d solve's rounding level (its eigenvalues carry
  // an absolute error of about d·ε·λ₁; below it the vectors are not determined by F). A
  // failed SVD takes the d × d solve too. Both decided together: the inputs were summed
  // with MPI_Allreduce, whose bits may differ between ranks.
  int take = 1;
  try {
    lapack::gesvd(d, r, C.data(), d, sv.data(), U.data(), d, Vt.data(), kr);
    const double eps = std::numeric_limits<double>::epsilon();
    const double lambda_nev = sv[static_cast<size_t>(nev - 1)] * sv[static_cast<size_t>(nev - 1)];
    take = nev <= kr && lambda_nev > 1e3 * static_cast<double>(d) * eps * sv[0] * sv[0] ? 1 : 0;
  } catch (const Error&) {
    take = 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, &take, 1, MPI_INT, MPI_MIN, comm);
  if (!take) return full();
  EigenPairs e;
  e.values.resize(static_cast<size_t>(nev));
  for (int64_t k = 0; k < nev; ++k) e.values[static_cast<size_t>(k)] = sv[static_cast<size_t>(k)] * sv[static_cast<size_t>(k)];
  e.vectors = Dense(d, nev);
  std::copy_n(U.data(), d * nev, e.vectors.data());
  blas::trsm('L', 'L', 'T', 'N', d, nev, 1.0, L.data(), d, e.vectors.data(), d);  // L⁻ᵀU
  for (int64_t k = 0; k < nev; ++k) normalize_and_fix_sign(e.vectors.col(k), d, &B);
  return e;
}

}  // namespace ssdr::solvers
