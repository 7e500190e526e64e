#include "ssdr/solvers/block_lanczos.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::solvers {

namespace {

/// Lower Cholesky factor of the symmetric r×r S in place (the upper triangle is left as it
/// was). Replicated: S holds the same bits on every rank, so every rank decides alike.
bool cholesky(Dense& S) { return S.rows == 0 || lapack::potrf(S.rows, S.data(), S.rows); }

/// B ← L⁻¹B (L lower triangular r×r, B r×c).
void solve_lower(const Dense& L, Dense& B) {
  if (B.rows > 0 && B.cols > 0) blas::trsm('L', 'L', 'N', 'N', B.rows, B.cols, 1.0, L.data(), L.rows, B.data(), B.rows);
}

/// B ← L⁻ᵀB.
void solve_lower_transposed(const Dense& L, Dense& B) {
  if (B.rows > 0 && B.cols > 0) blas::trsm('L', 'L', 'T', 'N', B.rows, B.cols, 1.0, L.data(), L.rows, B.data(), B.rows);
}

/// op(X)·op(Y) of replicated column-major matrices.
Dense mul(const Dense& X, const Dense& Y, char tx = 'N', char ty = 'N') {
  const int64_t m = tx == 'N' ? X.rows : X.cols, k = tx == 'N' ? X.cols : X.rows;
  const int64_t n = ty == 'N' ? Y.cols : Y.rows;
  Dense C(m, n);
  if (m > 0 && n > 0 && k > 0)
    blas::gemm(tx, ty, m, n, k, 1.0, X.data(), std::max<int64_t>(X.rows, 1), Y.data(), std::max<int64_t>(Y.rows, 1),
               0.0, C.data(), std::max<int64_t>(m, 1));
  return C;
}

/// XᵀX (the full symmetric matrix) by dsyrk.
Dense gram(const Dense& X) {
  Dense G(X.cols, X.cols);
  if (X.cols > 0 && X.rows > 0) {
    blas::syrk('L', 'T', X.cols, X.rows, 1.0, X.data(), X.rows, 0.0, G.data(), G.rows);
    for (int64_t j = 0; j < G.cols; ++j)
      for (int64_t i = 0; i < j; ++i) G(i, j) = G(j, i);
  }
  return G;
}

void symmetrize(Dense& S) {
  for (int64_t j = 0; j < S.cols; ++j)
    for (int64_t i = 0; i < j; ++i) S(i, j) = S(j, i) = 0.5 * (S(i, j) + S(j, i));
}

double frobenius(const Dense& S) {
  double s = 0;
  for (double v : S.v) s += v * v;
  return std::sqrt(s);
}

/// Sums x over the ranks with the same bits on every rank: a reduction to rank 0, then a
/// broadcast (MPI_Allreduce need not give every rank the same rounding, and every decision
/// of the recurrence is taken on the sums, so they must agree).
void sum_replicated(double* x, int64_t count, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int c = static_cast<int>(count);
  if (rank == 0)
    MPI_Reduce(MPI_IN_PLACE, x, c, MPI_DOUBLE, MPI_SUM, 0, comm);
  else
    MPI_Reduce(x, nullptr, c, MPI_DOUBLE, MPI_SUM, 0, comm);
  MPI_Bcast(x, c, MPI_DOUBLE, 0, comm);
}

/// The n×r column-major src into the local array of the MATDENSE P (its own stride).
void copy_to_dense(Mat P, const double* src, int64_t n, int64_t r) {
  PetscScalar* p = nullptr;
  PetscInt lda = 0;
  SSDR_PETSC(MatDenseGetLDA(P, &lda));
  SSDR_PETSC(MatDenseGetArray(P, &p));
  for (int64_t j = 0; j < r; ++j) std::copy_n(src + j * n, n, p + j * lda);
  SSDR_PETSC(MatDenseRestoreArray(P, &p));
}

/// The local array of the MATDENSE P into the n×r column-major dst.
void copy_from_dense(Mat P, double* dst, int64_t n, int64_t r) {
  const PetscScalar* p = nullptr;
  PetscInt lda = 0;
  SSDR_PETSC(MatDenseGetLDA(P, &lda));
  SSDR_PETSC(MatDenseGetArrayRead(P, &p));
  for (int64_t j = 0; j < r; ++j) std::copy_n(p + j * lda, n, dst + j * n);
  SSDR_PETSC(MatDenseRestoreArrayRead(P, &p));
}

/// σI + τA.
Dense shifted(const Dense& A, double sigma, double tau) {
  Dense D(A.rows, A.cols);
  for (size_t i = 0; i < D.v.size(); ++i) D.v[i] = tau * A.v[i];
  for (int64_t i = 0; i < D.rows; ++i) D(i, i) += sigma;
  return D;
}

}  // namespace

BlockLanczos::BlockLanczos(Mat A, std::vector<double> h, const DistMatrix& Y, BlockLanczosOptions options)
    : comm_(Y.comm), h_(std::move(h)), n_(Y.n_local), r_(Y.cols), options_(std::move(options)) {
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm_));
  PetscInt rows = 0, cols = 0, n_global = 0;
  SSDR_PETSC(MatGetLocalSize(A, &rows, &cols));
  SSDR_PETSC(MatGetSize(A, &n_global, nullptr));
  SSDR_CHECK_COLLECTIVE(comm_, rows == n_ && cols == n_ && static_cast<int64_t>(h_.size()) == n_,
                        "block Lanczos: the block has " + std::to_string(n_) + " local rows and the diagonal " +
                            std::to_string(h_.size()) + ", the matrix " + std::to_string(rows) + "x" +
                            std::to_string(cols));
  n_global_ = n_global;
  SSDR_PETSC(PetscObjectReference(reinterpret_cast<PetscObject>(A)));
  A_mat_ = Owned<Mat>(A);
  max_steps_ = options_.max_steps > 0
                   ? options_.max_steps
                   : static_cast<int>(std::min<int64_t>(1 << 20, 2 * static_cast<int64_t>(n_global) / std::max<int64_t>(r_, 1) + 20));
  Qcur_.assign(static_cast<size_t>(n_ * r_), 0.0);
  for (int64_t i = 0; i < n_; ++i)
    for (int64_t j = 0; j < r_; ++j) Qcur_[static_cast<size_t>(i + j * n_)] = Y(i, j);
  if (options_.unit_columns && r_ > 0) {
    col_norm_.assign(static_cast<size_t>(r_), 0.0);
    for (int64_t j = 0; j < r_; ++j)
      for (int64_t i = 0; i < n_; ++i) col_norm_[static_cast<size_t>(j)] += Y(i, j) * Y(i, j);
    sum_replicated(col_norm_.data(), static_cast<int64_t>(r_), comm_);
    for (int64_t j = 0; j < r_; ++j) {
      double& c = col_norm_[static_cast<size_t>(j)];
      c = c > 0 ? std::sqrt(c) : 1.0;  // a zero column stays zero (and breaks the QR below)
      for (int64_t i = 0; i < n_; ++i) Qcur_[static_cast<size_t>(i + j * n_)] /= c;
    }
  }
  if (r_ == 0) {
    why_ = "the block has no columns";
    stopped_ = true;
    return;
  }
  if (!cholqr(Qcur_, nullptr, R0_)) {
    why_ = "the starting block is rank deficient (Cholesky QR failed)";
    stopped_ = true;
  }
  SSDR_PETSC(MatCreateDense(comm_, n_, PETSC_DECIDE, n_global, static_cast<PetscInt>(r_), nullptr, P_.out()));
}

BlockLanczos::~BlockLanczos() = default;

bool BlockLanczos::fits(MPI_Comm comm, int64_t n_local, int64_t r, double memory_mib) {
  int64_t rows_max = n_local;
  MPI_Allreduce(MPI_IN_PLACE, &rows_max, 1, MPI_INT64_T, MPI_MAX, comm);
  const double bytes = 6.0 * 8.0 * static_cast<double>(rows_max) * static_cast<double>(r);
  return r <= kMaxWidth && bytes <= memory_mib * 1048576.0;
}

bool BlockLanczos::cholqr(std::vector<double>& W, const Dense* given, Dense& R) {
  // CholeskyQR2: W = Q·(R₂R₁), each pass R = chol(WᵀW)ᵀ and W ← W R⁻¹ (Yamamoto et al.
  // 2015). When the first pass fails (κ(W) beyond about 1/√ε), shifted CholeskyQR3 (Fukaya
  // et al., SIAM J. Sci. Comput. 2020): a first pass on WᵀW + sI with s = 11(nr + r(r+1))ε·
  // tr(WᵀW), which brings κ below 1/√ε for any κ(W) < 1/ε, then CholeskyQR2. The sums WᵀW are
  // one replicated reduction each (sum_replicated), so R (and every decision) is the same on
  // every rank.
  const double eps = std::numeric_limits<double>::epsilon();
  Dense total;
  int passes = 2;
  for (int pass = 0; pass < passes; ++pass) {
    Dense G(r_, r_);
    if (pass == 0 && given != nullptr) {
      G = *given;
    } else {
      if (n_ > 0) blas::syrk('L', 'T', r_, n_, 1.0, W.data(), n_, 0.0, G.data(), r_);
      sum_replicated(G.data(), static_cast<int64_t>(G.v.size()), comm_);
    }
    Dense C = G;
    int ok = cholesky(C) ? 1 : 0;
    // A pivot below √ε of the largest: κ(W) beyond 1/√ε·(a few), where one more pass can no
    // longer restore orthogonality (CholeskyQR2's condition).
    if (ok) {
      double lo = INFINITY, hi = 0;
      for (int64_t i = 0; i < r_; ++i) {
        lo = std::min(lo, C(i, i));
        hi = std::max(hi, C(i, i));
      }
      if (!(lo > 1e-7 * hi)) ok = 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm_);
    if (!ok) {
      if (pass > 0 || passes > 2) return false;  // rank deficient (numerically)
      double trace = 0;
      for (int64_t i = 0; i < r_; ++i) trace += G(i, i);
      const double rr = static_cast<double>(r_);
      const double shift = 11.0 * (static_cast<double>(n_global_) * rr + rr * (rr + 1.0)) * eps * trace;
      C = G;
      for (int64_t i = 0; i < r_; ++i) C(i, i) += shift;
      ok = trace > 0 && cholesky(C) ? 1 : 0;
      MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm_);
      if (!ok) return false;
      passes = 3;
    }
    if (n_ > 0) {
      // W ← W L⁻ᵀ as a GEMM with the explicit inverse (r×r, O(r³)): dtrsm on the tall
      // n_local×r block ran at a third of dgemm's rate (perf, TCA on Fashion-MNIST), and
      // L⁻¹'s rounding is what the next pass repairs anyway.
      Dense Linv = Dense::identity(r_);
      blas::trsm('L', 'L', 'N', 'N', r_, r_, 1.0, C.data(), r_, Linv.data(), r_);
      scratch_.resize(W.size());
      blas::gemm('N', 'T', n_, r_, r_, 1.0, W.data(), n_, Linv.data(), r_, 0.0, scratch_.data(), n_);
      W.swap(scratch_);
    }
    Dense Ru(r_, r_);  // Lᵀ
    for (int64_t j = 0; j < r_; ++j)
      for (int64_t i = 0; i <= j; ++i) Ru(i, j) = C(j, i);
    total = pass == 0 ? Ru : mul(Ru, total);
  }
  R = std::move(total);
  return true;
}

bool BlockLanczos::step() {
  if (stopped_) return false;
  if (steps() >= max_steps_) {
    why_ = "no convergence in " + std::to_string(max_steps_) + " steps";
    stopped_ = true;
    return false;
  }
  // W = H Q_j = h∘Q_j − A Q_j: one sparse × dense product (PETSc moves the ghost rows),
  // reading Q_j and writing W in place (MatDensePlaceArray: no copies of the n_local×r blocks).
  std::vector<double> W(static_cast<size_t>(n_ * r_));
  if (!AP_ || !in_place_) {
    // The first product (which creates AP_), or PETSc's arrays have another stride: copies.
    copy_to_dense(P_, Qcur_.data(), n_, r_);
    if (!AP_) {
      SSDR_PETSC(MatMatMult(A_mat_, P_, MAT_INITIAL_MATRIX, PETSC_DEFAULT, AP_.out()));
      PetscInt lda_p = 0, lda_ap = 0;
      SSDR_PETSC(MatDenseGetLDA(P_, &lda_p));
      SSDR_PETSC(MatDenseGetLDA(AP_, &lda_ap));
      in_place_ = lda_p == n_ && lda_ap == n_;  // placed arrays have stride n_local
    } else {
      Mat apm = AP_.get();
      SSDR_PETSC(MatMatMult(A_mat_, P_, MAT_REUSE_MATRIX, PETSC_DEFAULT, &apm));
    }
    copy_from_dense(AP_, W.data(), n_, r_);
  } else {
    if (n_ > 0) {
      SSDR_PETSC(MatDensePlaceArray(P_, Qcur_.data()));
      SSDR_PETSC(MatDensePlaceArray(AP_, W.data()));
    }
    Mat ap = AP_.get();
    SSDR_PETSC(MatMatMult(A_mat_, P_, MAT_REUSE_MATRIX, PETSC_DEFAULT, &ap));
    if (n_ > 0) {
      SSDR_PETSC(MatDenseResetArray(AP_));
      SSDR_PETSC(MatDenseResetArray(P_));
    }
  }
  for (int64_t j = 0; j < r_; ++j) {
    const double* q = Qcur_.data() + j * n_;
    double* w = W.data() + j * n_;
    for (int64_t i = 0; i < n_; ++i) w[i] = h_[static_cast<size_t>(i)] * q[i] - w[i];
  }
  const int64_t ld = std::max<int64_t>(n_, 1);
  if (!B_.empty() && n_ > 0)  // W −= Q_{j−1} B_{j−1}ᵀ
    blas::gemm('N', 'T', n_, r_, r_, -1.0, Qprev_.data(), ld, B_.back().data(), r_, 1.0, W.data(), ld);
  Dense Aj(r_, r_);  // Q_jᵀ W
  if (n_ > 0) blas::gemm('T', 'N', r_, r_, n_, 1.0, Qcur_.data(), ld, W.data(), ld, 0.0, Aj.data(), r_);
  sum_replicated(Aj.data(), static_cast<int64_t>(Aj.v.size()), comm_);
  symmetrize(Aj);
  if (n_ > 0)  // W −= Q_j A_j
    blas::gemm('N', 'N', n_, r_, r_, -1.0, Qcur_.data(), ld, Aj.data(), r_, 1.0, W.data(), ld);
  {
    // Local reorthogonalization, a second Gram–Schmidt pass against Q_j and Q_{j−1}: without
    // it the recurrence lost positive definiteness of σI + τT_k at τ = 10³ on digits (step
    // 83 of a 12-column block), where the long recurrence has lost orthogonality between
    // neighbouring blocks. It costs 4n_local·r² flops a step (about a third more).
    Dense C(r_, r_);
    if (n_ > 0) blas::gemm('T', 'N', r_, r_, n_, 1.0, Qcur_.data(), ld, W.data(), ld, 0.0, C.data(), r_);
    sum_replicated(C.data(), static_cast<int64_t>(C.v.size()), comm_);
    if (n_ > 0) blas::gemm('N', 'N', n_, r_, r_, -1.0, Qcur_.data(), ld, C.data(), r_, 1.0, W.data(), ld);
    if (!Qprev_.empty()) {
      if (n_ > 0) blas::gemm('T', 'N', r_, r_, n_, 1.0, Qprev_.data(), ld, W.data(), ld, 0.0, C.data(), r_);
      sum_replicated(C.data(), static_cast<int64_t>(C.v.size()), comm_);
      if (n_ > 0) blas::gemm('N', 'N', n_, r_, r_, -1.0, Qprev_.data(), ld, C.data(), r_, 1.0, W.data(), ld);
    }
  }
  Dense G(r_, r_);  // WᵀW
  if (n_ > 0) blas::syrk('L', 'T', r_, n_, 1.0, W.data(), ld, 0.0, G.data(), r_);
  sum_replicated(G.data(), static_cast<int64_t>(G.v.size()), comm_);
  for (int64_t j = 0; j < r_; ++j)
    for (int64_t i = 0; i < j; ++i) G(i, j) = G(j, i);
  // W at the rounding level of H Q_j = Q_{j−1}B_{j−1}ᵀ + Q_jA_j + W: the block Krylov space
  // is invariant (exhausted), the quadrature exact up to rounding; a QR would only normalize
  // noise.
  double w2 = 0, hq2 = 0;
  for (int64_t i = 0; i < r_; ++i) w2 += G(i, i);
  for (double v : Aj.v) hq2 += v * v;
  if (!B_.empty())
    for (double v : B_.back().v) hq2 += v * v;
  // (1000ε)²: rounding in forming W is a few ε‖H Q_j‖ per entry summed over the block.
  const double eps = std::numeric_limits<double>::epsilon();
  const bool invariant = !(w2 > 1e6 * eps * eps * (hq2 + w2));
  A_.push_back(std::move(Aj));
  gram_.push_back(G);
  if (invariant) {
    exhausted_ = true;
    stopped_ = true;
    why_ = "the block Krylov space is invariant after " + std::to_string(steps()) + " steps";
    return false;
  }
  Dense B;
  if (!cholqr(W, &G, B)) {
    // W_j is (numerically) rank deficient: the block Krylov space is exhausted or about to
    // lose a direction. The steps so far stand (their residual reads W_jᵀW_j, kept above).
    why_ = "the block is rank deficient after " + std::to_string(steps()) +
           " steps (Cholesky QR of W failed: the block Krylov space is nearly exhausted or lost a direction)";
    stopped_ = true;
    return false;
  }
  B_.push_back(std::move(B));
  Qprev_ = std::move(Qcur_);
  Qcur_ = std::move(W);
  return true;
}

std::optional<Dense> BlockLanczos::smoothed_form(double sigma, double tau, int k) const {
  // From the bottom: S_k = σI + τA_k, S_j = σI + M_j with M_j = τA_j − τ²B_jᵀS_{j+1}⁻¹B_j;
  // [(σI + τT_k)⁻¹τT_k]₁₁ = S₁⁻¹M₁, without the cancellation of I − σ[(σI + τT_k)⁻¹]₁₁.
  Dense M;
  for (int j = k; j >= 1; --j) {
    Dense Mj(r_, r_);
    for (size_t i = 0; i < Mj.v.size(); ++i) Mj.v[i] = tau * A_[static_cast<size_t>(j - 1)].v[i];
    if (j < k) {
      Dense L = M;  // S_{j+1} = σI + M_{j+1}
      for (int64_t i = 0; i < r_; ++i) L(i, i) += sigma;
      if (!cholesky(L)) return std::nullopt;
      Dense X = B_[static_cast<size_t>(j - 1)];  // L⁻¹B_j
      solve_lower(L, X);
      const Dense XX = gram(X);
      for (size_t i = 0; i < Mj.v.size(); ++i) Mj.v[i] -= tau * tau * XX.v[i];
    }
    M = std::move(Mj);
  }
  Dense L = M;
  for (int64_t i = 0; i < r_; ++i) L(i, i) += sigma;
  if (!cholesky(L)) return std::nullopt;
  Dense Z = mul(M, R0_);  // S₁⁻¹M₁R₀, then R₀ᵀ·
  solve_lower(L, Z);
  solve_lower_transposed(L, Z);
  Dense F = mul(R0_, Z, 'T', 'N');
  symmetrize(F);
  return F;
}

std::optional<QuadratureResult> BlockLanczos::form(QuadratureForm which, double sigma, double tau) {
  return forms({which}, sigma, tau).front();
}

std::vector<std::optional<QuadratureResult>> BlockLanczos::forms(const std::vector<QuadratureForm>& which, double sigma,
                                                                 double tau) {
  SSDR_REQUIRE(std::isfinite(sigma) && sigma > 0 && std::isfinite(tau) && tau >= 0,
               "block Lanczos: needs sigma > 0 and tau >= 0 (got " + std::to_string(sigma) + ", " +
                   std::to_string(tau) + ")");
  std::vector<std::optional<QuadratureResult>> out(which.size());
  if (R0_.v.empty()) return out;  // rank-deficient start (why_ says so)
  // A failure at this shift is reported in why_ but does not stop the recurrence: another
  // shift may still grow it.
  const int before = steps();
  const Dense YtY = mul(R0_, R0_, 'T', 'N');
  // Forward block LU of σI + τT_k (incremental in k, the same for every form at this (σ, τ),
  // so several forms at once share it): U₁ = σI + τA₁, y₁ = R₀,
  // U_{j+1} = σI + τA_{j+1} − τ²B_jU_j⁻¹B_jᵀ, y_{j+1} = −τB_jU_j⁻¹y_j. Then
  //  - the resolvent form is the running sum R₀ᵀ[(σI + τT_k)⁻¹]₁₁R₀ = Σ_{j≤k} z_jᵀz_j with
  //    z_j = L_j⁻¹y_j (U_j = L_jL_jᵀ: the block LDLᵀ of σI + τT_k, whose first k blocks do
  //    not change as k grows), a sum of positive semidefinite terms;
  //  - X_k = U_k⁻¹y_k gives the residual ρ_k = τ‖B_kX_k‖_F, and B_kX_k = B_kU_k⁻¹y_k is
  //    −y_{k+1}/τ: one product serves both (where the recurrence stops at k, without B_k,
  //    ρ_k = τ·tr(X_kᵀ W_kᵀW_k X_k)^½ from W_k = Q_{k+1}B_k's Gram matrix).
  // Stopping rules: the resolvent at the first k with ρ_k²/σ ≤ rtol·‖Σ_{j≤k} z_jᵀz_j‖_F. The
  // smoothed form (smoothed_form, O(k r³) from the bottom of T_k) is evaluated only where
  // ρ_k² ≤ rtol·‖YᵀY − σ·resolvent_k‖_F, an estimate of its norm (absolute error about
  // ε‖YᵀY‖), and taken there once ρ_k² ≤ rtol·‖form_k‖_F holds for the evaluated form too.
  // Every rule reads only the recurrence's first k steps: a form does not depend on the
  // forms or shifts asked before, nor on the other forms asked with it.
  Dense z;  // z_k = L_k⁻¹y_k
  // Carried from step k to k + 1: X = L_k⁻¹B_kᵀ gives B_kU_k⁻¹B_kᵀ = XᵀX (next U's update)
  // and B_kU_k⁻¹y_k = Xᵀz_k (the next y, and B_kX_k, whose norm is ρ_k/τ).
  Dense XX, Bx;
  Dense resolvent(r_, r_);  // Σ_{j≤k} z_jᵀz_j
  size_t pending = which.size();
  std::vector<char> failed(which.size(), 0);  // a form whose Schur complement broke down
  auto take = [&](size_t q, Dense F, int k, double bound) {
    QuadratureResult& r = out[q].emplace();
    r.form = std::move(F);
    if (!col_norm_.empty())
      for (int64_t j = 0; j < r_; ++j)
        for (int64_t i = 0; i < r_; ++i) r.form(i, j) *= col_norm_[static_cast<size_t>(i)] * col_norm_[static_cast<size_t>(j)];
    r.steps = k;
    r.new_steps = steps() - before;
    r.bound = bound;
    --pending;
  };
  Progress progress("block Lanczos" + (options_.prefix.empty() ? std::string() : " -" + options_.prefix) + ", step", 0);
  for (int k = 1; pending > 0; ++k) {
    if (k > steps()) {
      step();  // an exhausted space still adds A_k and W_kᵀW_k (its residual may be ~0)
      if (k > steps()) return out;  // the forms not yet taken stay std::nullopt
    }
    progress.update(k, 0, std::to_string(r_) + " columns");
    Dense U = shifted(A_[static_cast<size_t>(k - 1)], sigma, tau);
    Dense y;
    if (k == 1) {
      y = R0_;
    } else {
      for (size_t i = 0; i < U.v.size(); ++i) U.v[i] -= tau * tau * XX.v[i];
      y = std::move(Bx);  // y_k = −τB_{k−1}U_{k−1}⁻¹y_{k−1}
      for (double& v : y.v) v *= -tau;
    }
    Dense L = U;
    if (!cholesky(L)) {
      why_ = "sigma I + tau T is not positive definite at step " + std::to_string(k);
      return out;
    }
    z = std::move(y);
    solve_lower(L, z);  // z_k = L_k⁻¹y_k
    const Dense zz = gram(z);
    for (size_t i = 0; i < zz.v.size(); ++i) resolvent.v[i] += zz.v[i];
    double rho2 = 0;
    if (static_cast<int>(B_.size()) >= k) {
      // ρ_k = τ‖B_kX_k‖_F with X_k = L_k⁻ᵀz_k: B_kX_k = Xᵀz_k, which step k + 1 needs anyway.
      const Dense& B = B_[static_cast<size_t>(k - 1)];
      Dense X(r_, r_);
      for (int64_t j = 0; j < r_; ++j)
        for (int64_t i = 0; i < r_; ++i) X(i, j) = B(j, i);
      solve_lower(L, X);
      XX = gram(X);
      Bx = mul(X, z, 'T', 'N');
      for (double v : Bx.v) rho2 += v * v;
    } else {
      // No B_k (the recurrence stops at step k): ρ_k² = τ²·tr(X_kᵀ W_kᵀW_k X_k).
      Dense x = z;
      solve_lower_transposed(L, x);
      const Dense Gx = mul(gram_[static_cast<size_t>(k - 1)], x);
      for (size_t i = 0; i < x.v.size(); ++i) rho2 += x.v[i] * Gx.v[i];
    }
    rho2 = tau * tau * std::max(rho2, 0.0);
    // An invariant space (the last step): the forms are exact up to rounding.
    const bool exact = exhausted_ && k == steps();
    for (size_t q = 0; q < which.size(); ++q) {
      if (out[q] || failed[q]) continue;
      if (which[q] == QuadratureForm::resolvent) {
        const double bound = rho2 / sigma;
        if (exact || bound <= options_.rtol * frobenius(resolvent)) take(q, resolvent, k, bound);
        continue;
      }
      const double bound = rho2;
      if (!exact) {
        Dense estimate = YtY;  // YᵀY − σ·resolvent_k
        for (size_t i = 0; i < estimate.v.size(); ++i) estimate.v[i] -= sigma * resolvent.v[i];
        if (!(bound <= options_.rtol * frobenius(estimate))) continue;
      }
      std::optional<Dense> F = smoothed_form(sigma, tau, k);
      if (!F) {
        // This form fails; the others asked with it go on, as calls of their own would.
        why_ = "a Schur complement of sigma I + tau T is not positive definite at step " + std::to_string(k);
        failed[q] = true;
        --pending;
        continue;
      }
      if (exact || bound <= options_.rtol * frobenius(*F)) take(q, std::move(*F), k, bound);
    }
  }
  return out;
}

}  // namespace ssdr::solvers
