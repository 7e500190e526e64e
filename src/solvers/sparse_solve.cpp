#include "ssdr/solvers/sparse_solve.hpp"

#include <petscksp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::solvers {

namespace {

/// Both routes' cap on the iterations of one column (the KSP route's KSPSetTolerances).
constexpr PetscInt kMaxIterations = 100000;
/// KSPCreate's default divergence tolerance: KSPConvergedDefault declares KSP_DIVERGED_DTOL
/// when the residual norm reaches divtol times the initial one.
constexpr double kDivergenceTolerance = 1e4;
/// The lockstep route rebuilds its product on the active columns alone once at most this
/// share of the product's width still iterates (a rebuild is a new MatMatMult symbolic step).
constexpr double kCompactBelow = 0.75;

bool starts_with_nocase(const std::string& s, const std::string& head) {
  if (s.size() < head.size()) return false;
  for (size_t i = 0; i < head.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(head[i])))
      return false;
  return true;
}

/// Whether the options database holds an option -<prefix>ksp_* or -<prefix>pc_*: what the
/// KSP route's KSPSetFromOptions would read. PETSc compares option names without case.
bool user_configured(const std::string& prefix) {
  char* all = nullptr;
  SSDR_PETSC(PetscOptionsGetAll(nullptr, &all));
  std::istringstream words(all ? all : "");
  SSDR_PETSC(PetscFree(all));
  const std::string ksp = "-" + prefix + "ksp_", pc = "-" + prefix + "pc_";
  std::string w;
  while (words >> w)
    if (starts_with_nocase(w, ksp) || starts_with_nocase(w, pc)) return true;
  return false;
}

std::string not_converged(const SparseSolveOptions& o, int64_t column, const std::string& why) {
  return "CG with options prefix -" + o.prefix + " did not converge (" + why + ") on right-hand side " +
         std::to_string(column);
}

SparseSolveResult solve_ksp(Mat M, const DistMatrix& R, const SparseSolveOptions& options, MPI_Comm comm) {
  Owned<KSP> ksp;
  SSDR_PETSC(KSPCreate(comm, ksp.out()));
  SSDR_PETSC(KSPSetOperators(ksp, M, M));
  SSDR_PETSC(KSPSetType(ksp, options.ksp_type));
  {
    // Point Jacobi: the preconditioner (and so the iterates) do not depend on the partition,
    // unlike PETSc's default block Jacobi + ILU. -<prefix>pc_type overrides.
    PC pc = nullptr;
    SSDR_PETSC(KSPGetPC(ksp, &pc));
    SSDR_PETSC(PCSetType(pc, PCJACOBI));
  }
  SSDR_PETSC(KSPSetTolerances(ksp, options.rtol, 1e-300, PETSC_DEFAULT, kMaxIterations));
  if (!options.prefix.empty()) SSDR_PETSC(KSPSetOptionsPrefix(ksp, options.prefix.c_str()));
  SSDR_PETSC_OPTIONS(KSPSetFromOptions(ksp));
  SSDR_PETSC(KSPSetUp(ksp));
  SparseSolveResult out;
  out.route = SparseSolveRoute::ksp;
  out.Z = R;
  Owned<Vec> b, x;
  SSDR_PETSC(MatCreateVecs(M, x.out(), b.out()));
  Progress progress("KSP -" + options.prefix + " solves", static_cast<long>(R.cols));
  for (int64_t j = 0; j < R.cols; ++j) {
    progress.update(static_cast<long>(j));
    PetscScalar* pb = nullptr;
    SSDR_PETSC(VecGetArray(b, &pb));
    for (int64_t i = 0; i < R.n_local; ++i) pb[i] = R(i, j);
    SSDR_PETSC(VecRestoreArray(b, &pb));
    SSDR_PETSC(VecSet(x, 0.0));
    SSDR_PETSC(KSPSolve(ksp, b, x));
    KSPConvergedReason reason;
    SSDR_PETSC(KSPGetConvergedReason(ksp, &reason));
    SSDR_REQUIRE(reason > 0, "KSP with options prefix -" + options.prefix + " did not converge (reason " +
                                 std::to_string(static_cast<int>(reason)) + ") on right-hand side " +
                                 std::to_string(j));
    PetscInt its = 0;
    SSDR_PETSC(KSPGetIterationNumber(ksp, &its));
    out.iterations.push_back(static_cast<int>(its));
    vec_to_column(x, out.Z, j);
  }
  return out;
}

/// A MATDENSE's local column-major array, restored when it goes out of scope.
class DenseArray {
 public:
  DenseArray(Mat A, bool write) : A_(A), write_(write) {
    if (write_) {
      SSDR_PETSC(MatDenseGetArray(A_, &a_));
    } else {
      const PetscScalar* a = nullptr;
      SSDR_PETSC(MatDenseGetArrayRead(A_, &a));
      a_ = const_cast<PetscScalar*>(a);
    }
    SSDR_PETSC(MatDenseGetLDA(A_, &lda_));
  }
  ~DenseArray() {
    if (write_) {
      MatDenseRestoreArray(A_, &a_);
    } else {
      const PetscScalar* a = a_;
      MatDenseRestoreArrayRead(A_, &a);
    }
  }
  DenseArray(const DenseArray&) = delete;
  DenseArray& operator=(const DenseArray&) = delete;
  double* col(int64_t s) const { return a_ + s * static_cast<int64_t>(lda_); }

 private:
  Mat A_;
  bool write_;
  PetscScalar* a_ = nullptr;
  PetscInt lda_ = 0;
};

/// Σ a_i b_i over n entries, in four interleaved partial sums (a single running sum would
/// leave the loop waiting on each addition's latency).
double dot(const double* a, const double* b, int64_t n) {
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int t = 0; t < 4; ++t) s[t] += a[i + t] * b[i + t];
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/// ‖D⁻¹r‖² and rᵀD⁻¹r (d = D⁻¹'s diagonal), in four interleaved partial sums each.
void residual_sums(const double* r, const double* d, int64_t n, double& zz, double& rz) {
  double s[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int t = 0; t < 4; ++t) {
      const double z = d[i + t] * r[i + t];
      s[t] += z * z;
      q[t] += z * r[i + t];
    }
  for (; i < n; ++i) {
    const double z = d[i] * r[i];
    s[0] += z * z;
    q[0] += z * r[i];
  }
  zz = (s[0] + s[1]) + (s[2] + s[3]);
  rz = (q[0] + q[1]) + (q[2] + q[3]);
}

/// r −= a·w, then returns ‖D⁻¹r‖² and rᵀD⁻¹r of the updated r (d = D⁻¹'s diagonal) in one
/// pass, in four interleaved partial sums each.
void update_residual(double* r, const double* w, double a, const double* d, int64_t n, double& zz, double& rz) {
  double s[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int t = 0; t < 4; ++t) {
      const double v = r[i + t] - a * w[i + t];
      r[i + t] = v;
      const double z = d[i + t] * v;
      s[t] += z * z;
      q[t] += z * v;
    }
  for (; i < n; ++i) {
    const double v = r[i] - a * w[i];
    r[i] = v;
    const double z = d[i] * v;
    s[0] += z * z;
    q[0] += z * v;
  }
  zz = (s[0] + s[1]) + (s[2] + s[3]);
  rz = (q[0] + q[1]) + (q[2] + q[3]);
}

/// Point-Jacobi CG on every column at once (see solve_columns). It mirrors PETSc 3.18's
/// KSPSolve_CG with PCJACOBI, KSP_NORM_PRECONDITIONED and KSPConvergedDefault, step for step:
///  - PCJACOBI takes the reciprocal of M's diagonal, a zero diagonal entry as 1;
///  - from x = 0, r = b: z = D⁻¹r, dp = ‖z‖₂ at iteration 0; KSPConvergedDefault with a zero
///    initial guess sets rnorm0 = that dp and ttol = max(rtol·rnorm0, abstol) (abstol 1e-300
///    as the KSP route sets it), and stops when dp ≤ ttol: a zero b stops at 0 iterations;
///  - β = zᵀr; at the start of iteration i (counted from 0, its = i + 1) β = 0 stops the
///    column as converged (KSP_CONVERGED_ATOL), and β·β_old < 0 for i > 0 is
///    KSP_DIVERGED_INDEFINITE_PC;
///  - p = z (i = 0) or z + (β/β_old)p; w = Mp; pᵀw: KSPCG refuses 0 or a change of sign
///    (KSP_DIVERGED_INDEFINITE_MAT); for the SPD matrices this route is for, any pᵀw ≤ 0 is
///    a breakdown here;
///  - a = β/pᵀw; x += a p; r −= a w; dp = ‖D⁻¹r‖₂ tested against ttol after the update
///    (KSP_CONVERGED_RTOL), a NaN or infinite dp is KSP_DIVERGED_NANORINF and
///    dp ≥ divtol·rnorm0 (divtol 10⁴, PETSc's default) is KSP_DIVERGED_DTOL;
///  - after kMaxIterations, KSP_DIVERGED_ITS.
/// Sums are this rank's rows in four interleaved partial sums, then MPI_Allreduce (VecNorm
/// and VecDot use BLAS there): the same arithmetic in another rounding.
/// Measured on TCA's Fashion-MNIST fit (issue 48; n_t = 14 000, 200 columns, ~67 iterations
/// each, at most 70): the product is about half the time (1.5 s on one rank; PETSc's MAIJ
/// product on interleaved columns took 38 ms against MatMatMult's 21 ms on a random matrix
/// of that size), the vector passes over the n_local×r arrays, bound by memory bandwidth,
/// the rest. Dropping frozen columns changed nothing measurable there (the columns stop
/// within a few iterations of each other) and is kept for right-hand sides of unequal
/// difficulty (zero columns are never in the product).
SparseSolveResult solve_lockstep(Mat M, const DistMatrix& R, const SparseSolveOptions& o, MPI_Comm comm) {
  const int64_t n = R.n_local, r = R.cols;
  PetscInt n_global = 0;
  SSDR_PETSC(MatGetSize(M, &n_global, nullptr));
  SparseSolveResult out;
  out.route = SparseSolveRoute::lockstep;
  out.iterations.assign(static_cast<size_t>(r), 0);

  // The preconditioner: PCJACOBI's reciprocal diagonal.
  std::vector<double> inv;
  {
    Owned<Vec> d;
    SSDR_PETSC(MatCreateVecs(M, nullptr, d.out()));
    SSDR_PETSC(MatGetDiagonal(M, d));
    inv = vec_local(d);
    for (double& v : inv) v = v == 0.0 ? 1.0 : 1.0 / v;
  }
  // x and r column-major at full width (column j at j·n).
  std::vector<double> x(static_cast<size_t>(n * r), 0.0), res(static_cast<size_t>(n * r));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < r; ++j) res[static_cast<size_t>(j * n + i)] = R(i, j);
  auto rcol = [&](int64_t j) { return res.data() + j * n; };
  auto xcol = [&](int64_t j) { return x.data() + j * n; };
  // Each column scaled by a power of two that brings its largest entry into [1, 2) (on every
  // rank: the largest over the ranks), x scaled back at the end. CG's steps are homogeneous
  // (a = β/pᵀMp does not change, p, x and r scale), and a power of two scales every rounding
  // exactly, so the iterates are the unscaled ones' bits times the factor; what the scaling
  // removes is the under- or overflow of ‖D⁻¹r‖² for entries near 1e±155 (VecNorm's dnrm2
  // scales too).
  std::vector<int> shift(static_cast<size_t>(r), 0);
  {
    std::vector<double> big(static_cast<size_t>(r), 0.0);
    for (int64_t j = 0; j < r; ++j)
      for (int64_t i = 0; i < n; ++i) big[static_cast<size_t>(j)] = std::max(big[static_cast<size_t>(j)], std::abs(rcol(j)[i]));
    MPI_Allreduce(MPI_IN_PLACE, big.data(), static_cast<int>(r), MPI_DOUBLE, MPI_MAX, comm);
    for (int64_t j = 0; j < r; ++j) {
      const double b = big[static_cast<size_t>(j)];
      if (!(b > 0) || !std::isfinite(b)) continue;  // a zero column stops at once; NaN/inf is reported below
      int e = 0;
      std::frexp(b, &e);  // b = f·2^e, f in [0.5, 1)
      shift[static_cast<size_t>(j)] = 1 - e;
      for (int64_t i = 0; i < n; ++i) rcol(j)[i] = std::ldexp(rcol(j)[i], 1 - e);
    }
  }

  std::vector<double> sums;  // ‖D⁻¹r_j‖², then r_jᵀD⁻¹r_j, of the columns iterating
  std::vector<double> rnorm0(static_cast<size_t>(r)), ttol(static_cast<size_t>(r)), beta(static_cast<size_t>(r)),
      beta_old(static_cast<size_t>(r), 1.0);
  std::vector<int64_t> active;  // columns still iterating, in increasing order
  std::vector<char> iterating(static_cast<size_t>(r), 0);
  double worst = 0;  // the largest ‖D⁻¹r_j‖/‖D⁻¹b_j‖ of the active columns, for the progress line
  {
    sums.assign(static_cast<size_t>(2 * r), 0.0);
    for (int64_t j = 0; j < r; ++j)
      residual_sums(rcol(j), inv.data(), n, sums[static_cast<size_t>(j)], sums[static_cast<size_t>(r + j)]);
    MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(2 * r), MPI_DOUBLE, MPI_SUM, comm);
    for (int64_t j = 0; j < r; ++j) {
      const size_t u = static_cast<size_t>(j);
      const double dp = std::sqrt(sums[u]);
      SSDR_REQUIRE(std::isfinite(dp), not_converged(o, j, "KSP_DIVERGED_NANORINF: the right-hand side's norm is " +
                                                             std::to_string(dp)));
      rnorm0[u] = dp;
      ttol[u] = std::max(o.rtol * dp, 1e-300);
      beta[u] = sums[static_cast<size_t>(r) + u];
      if (!(dp <= ttol[u])) {  // else converged at iteration 0 (b = 0)
        active.push_back(j);
        iterating[u] = 1;
        worst = 1;
      }
    }
  }

  // The product W = M P on the columns of `slot` (slot s holds column slot[s]; −1: frozen,
  // its p zero so that its w is zero). Frozen columns leave the product when it is rebuilt.
  Owned<Mat> P, W;
  std::vector<int64_t> slot;
  std::vector<double> pw;
  PetscInt n_local_cols = 0;
  SSDR_PETSC(MatGetLocalSize(M, nullptr, &n_local_cols));
  Progress progress("CG -" + o.prefix + " lockstep solves, iteration", 0);
  PetscInt it = 0;
  for (; it < kMaxIterations && !active.empty(); ++it) {
    {
      char detail[160];
      std::snprintf(detail, sizeof detail, "%zu of %lld right-hand sides iterating, largest relative residual %.1e (rtol %.0e)",
                    active.size(), static_cast<long long>(r), worst, o.rtol);
      progress.update(static_cast<long>(it), 0, detail);
    }
    // Start of KSPCG's iteration: β = 0 converged, a change of β's sign an indefinite PC.
    {
      std::vector<int64_t> still;
      for (int64_t j : active) {
        const size_t u = static_cast<size_t>(j);
        if (beta[u] == 0.0) {
          out.iterations[u] = static_cast<int>(it + 1);
          iterating[u] = 0;
          continue;
        }
        SSDR_REQUIRE(!(it > 0 && beta[u] * beta_old[u] < 0.0),
                     not_converged(o, j, "KSP_DIVERGED_INDEFINITE_PC at iteration " + std::to_string(it + 1)));
        still.push_back(j);
      }
      active.swap(still);
      if (active.empty()) break;
    }
    // Build the product on the active columns at first, and again once at most kCompactBelow
    // of its width still iterates.
    if (slot.empty() || static_cast<double>(active.size()) <= kCompactBelow * static_cast<double>(slot.size())) {
      Owned<Mat> P2;
      SSDR_PETSC(MatCreateDense(comm, n_local_cols, PETSC_DECIDE, n_global, static_cast<PetscInt>(active.size()),
                                nullptr, P2.out()));
      if (!slot.empty()) {  // carry the active columns' p over, in the order of `active`
        DenseArray from(P, false), to(P2, true);
        int64_t s2 = 0;
        for (size_t s = 0; s < slot.size(); ++s)
          if (slot[s] >= 0 && iterating[static_cast<size_t>(slot[s])])
            std::copy_n(from.col(static_cast<int64_t>(s)), n, to.col(s2++));
      }
      W.reset();  // M·P of the old P, whose product context refers to it
      P = std::move(P2);
      slot = active;
    }
    // p = z + (β/β_old) p, z = D⁻¹r; a column frozen since the last product gets p = 0.
    {
      DenseArray p(P, true);
      for (size_t s = 0; s < slot.size(); ++s) {
        const int64_t j = slot[s];
        if (j < 0) continue;
        const size_t u = static_cast<size_t>(j);
        double* pc = p.col(static_cast<int64_t>(s));
        if (!iterating[u]) {
          std::fill_n(pc, n, 0.0);
          slot[s] = -1;
          continue;
        }
        const double* rc = rcol(j);
        if (it == 0) {
          for (int64_t i = 0; i < n; ++i) pc[i] = inv[static_cast<size_t>(i)] * rc[i];
        } else {
          const double b = beta[u] / beta_old[u];
          for (int64_t i = 0; i < n; ++i) pc[i] = inv[static_cast<size_t>(i)] * rc[i] + b * pc[i];
        }
      }
    }
    // w = M p for every slot: one sparse × dense product.
    if (!W) {
      SSDR_PETSC(MatMatMult(M, P, MAT_INITIAL_MATRIX, PETSC_DEFAULT, W.out()));
    } else {
      Mat w = W.get();
      SSDR_PETSC(MatMatMult(M, P, MAT_REUSE_MATRIX, PETSC_DEFAULT, &w));
    }
    const size_t k = slot.size();
    {
      DenseArray p(P, false), w(W, false);
      pw.assign(k, 0.0);
      for (size_t s = 0; s < k; ++s) {
        if (slot[s] < 0) continue;
        const double* pc = p.col(static_cast<int64_t>(s));
        const double* wc = w.col(static_cast<int64_t>(s));
        pw[s] = dot(pc, wc, n);
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, pw.data(), static_cast<int>(k), MPI_DOUBLE, MPI_SUM, comm);
    for (size_t s = 0; s < k; ++s)
      if (slot[s] >= 0)
        SSDR_REQUIRE(pw[s] > 0.0, not_converged(o, slot[s], "KSP_DIVERGED_INDEFINITE_MAT: pᵀMp = " +
                                                               std::to_string(pw[s]) + " at iteration " +
                                                               std::to_string(it + 1)));
    // x += a p, r −= a w (a = β/pᵀw), then ‖D⁻¹r‖² and rᵀD⁻¹r (in the order of `active`,
    // which is the order of the slots that are not frozen).
    {
      DenseArray p(P, false), w(W, false);
      const size_t na = active.size();
      sums.assign(2 * na, 0.0);
      size_t t = 0;
      for (size_t s = 0; s < k; ++s) {
        const int64_t j = slot[s];
        if (j < 0) continue;
        const double a = beta[static_cast<size_t>(j)] / pw[s];
        const double* pc = p.col(static_cast<int64_t>(s));
        double* xc = xcol(j);
        for (int64_t i = 0; i < n; ++i) xc[i] += a * pc[i];
        update_residual(rcol(j), w.col(static_cast<int64_t>(s)), a, inv.data(), n, sums[t], sums[na + t]);
        ++t;
      }
      MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(2 * na), MPI_DOUBLE, MPI_SUM, comm);
    }
    std::vector<int64_t> still;
    worst = 0;
    for (size_t t = 0; t < active.size(); ++t) {
      const int64_t j = active[t];
      const size_t u = static_cast<size_t>(j);
      const double dp = std::sqrt(sums[t]);
      out.iterations[u] = static_cast<int>(it + 1);
      SSDR_REQUIRE(std::isfinite(dp), not_converged(o, j, "KSP_DIVERGED_NANORINF at iteration " + std::to_string(it + 1)));
      beta_old[u] = beta[u];
      beta[u] = sums[active.size() + t];
      if (dp <= ttol[u]) {  // KSP_CONVERGED_RTOL: frozen
        iterating[u] = 0;
        continue;
      }
      SSDR_REQUIRE(!(dp >= kDivergenceTolerance * rnorm0[u]),
                   not_converged(o, j, "KSP_DIVERGED_DTOL: the preconditioned residual grew " +
                                           std::to_string(dp / rnorm0[u]) + " times by iteration " +
                                           std::to_string(it + 1)));
      worst = std::max(worst, dp / rnorm0[u]);
      still.push_back(j);
    }
    active.swap(still);
  }
  SSDR_REQUIRE(active.empty(), not_converged(o, active.empty() ? 0 : active.front(),
                                             "KSP_DIVERGED_ITS: " + std::to_string(kMaxIterations) + " iterations"));
  P.reset();
  W.reset();
  res.clear();
  res.shrink_to_fit();
  out.Z = make_dist_like(R, r);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < r; ++j) out.Z(i, j) = std::ldexp(x[static_cast<size_t>(j * n + i)], -shift[static_cast<size_t>(j)]);
  return out;
}

}  // namespace

const char* route_name(SparseSolveRoute route) {
  return route == SparseSolveRoute::lockstep ? "lockstep" : "ksp";
}

SparseSolveRoute column_route(const SparseSolveOptions& options) {
  if (options.ksp_type == nullptr || std::string(options.ksp_type) != KSPCG) return SparseSolveRoute::ksp;
  return user_configured(options.prefix) ? SparseSolveRoute::ksp : SparseSolveRoute::lockstep;
}

SparseSolveResult solve_columns(Mat M, const DistMatrix& R, const SparseSolveOptions& options) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(M), &comm));
  PetscInt n_local = 0, n_local_cols = 0;
  SSDR_PETSC(MatGetLocalSize(M, &n_local, &n_local_cols));
  SSDR_CHECK_COLLECTIVE(comm, n_local == R.n_local,
                        "solve_columns: right-hand sides have " + std::to_string(R.n_local) +
                            " local rows, the matrix " + std::to_string(n_local));
  // MatMatMult with a MATDENSE needs an AIJ matrix; P's rows are laid out as M's columns.
  // The choice is agreed over the ranks (a rank whose options database differed would
  // otherwise enter the other route's collectives).
  PetscBool aij = PETSC_FALSE;
  SSDR_PETSC(PetscObjectTypeCompareAny(reinterpret_cast<PetscObject>(M), &aij, MATSEQAIJ, MATMPIAIJ, ""));
  int ok = column_route(options) == SparseSolveRoute::lockstep && aij && n_local_cols == n_local ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (!ok) return solve_ksp(M, R, options, comm);
  // Columns in batches whose lockstep arrays (about 5 n_local doubles per column, on the
  // rank with the most rows) fit options.memory_mib: the columns are independent, so the
  // batches give each column the iterations it would have had in one batch.
  int64_t rows_max = R.n_local;
  MPI_Allreduce(MPI_IN_PLACE, &rows_max, 1, MPI_INT64_T, MPI_MAX, comm);
  const double per_column = 5.0 * 8.0 * static_cast<double>(std::max<int64_t>(rows_max, 1));
  const int64_t width = static_cast<int64_t>(
      std::max(1.0, std::min(static_cast<double>(std::max<int64_t>(R.cols, 1)),
                             std::floor(options.memory_mib * 1048576.0 / per_column))));
  if (R.cols <= width) return solve_lockstep(M, R, options, comm);
  SparseSolveResult out;
  out.route = SparseSolveRoute::lockstep;
  out.Z = make_dist_like(R, R.cols);
  for (int64_t j0 = 0; j0 < R.cols; j0 += width) {
    const int64_t w = std::min(width, R.cols - j0);
    DistMatrix Rb = make_dist_like(R, w);
    for (int64_t i = 0; i < R.n_local; ++i)
      for (int64_t j = 0; j < w; ++j) Rb(i, j) = R(i, j0 + j);
    SparseSolveResult b = solve_lockstep(M, Rb, options, comm);
    for (int64_t i = 0; i < R.n_local; ++i)
      for (int64_t j = 0; j < w; ++j) out.Z(i, j0 + j) = b.Z(i, j);
    out.iterations.insert(out.iterations.end(), b.iterations.begin(), b.iterations.end());
  }
  return out;
}

}  // namespace ssdr::solvers
