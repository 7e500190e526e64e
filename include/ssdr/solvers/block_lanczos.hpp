#pragma once
/// \file block_lanczos.hpp
/// Quadratic forms Yᵀ g(H) Y of a sparse symmetric positive semidefinite H = diag(h) − A for
/// the resolvents g(x) = (σ + τx)⁻¹ and τx/(σ + τx), every (σ, τ) from ONE block Lanczos
/// recurrence (block Gauss quadrature: G. H. Golub and G. Meurant, "Matrices, Moments and
/// Quadrature with Applications", Princeton 2010, ch. 7 and 10). TCA's X S Xᵀ with
/// S = (I + αL)⁻¹αL (tca-liu2008 eq. (10), (12)) is the second form at σ = 1, τ = α: a sweep
/// over α extends the recurrence only as far as its hardest α needs, where a CG solve with
/// I + αL for every column of Y would be repeated at every α (issue 48).
///
/// The recurrence (Y = Q₁R₀, R₀ upper triangular; Q₀B₀ᵀ = 0):
///   W = H Q_j − Q_{j−1} B_{j−1}ᵀ,  A_j = Q_jᵀ W,  W ← W − Q_j A_j,  W = Q_{j+1} B_j,
/// with a second Gram–Schmidt pass of W against Q_j and Q_{j−1} (local reorthogonalization)
/// and the QRs by Cholesky QR run twice (CholeskyQR2; shifted CholeskyQR3 when W is too
/// ill-conditioned for it). After k steps
/// Yᵀ g(H) Y ≈ R₀ᵀ [g(T_k)]₁₁ R₀ with T_k the block tridiagonal matrix of the A_j (diagonal)
/// and B_j (below it): exactly the block CG iterate's Yᵀ Z_k of (σI + τH) Z = Y, whose
/// residual is τ Q_{k+1} B_k X_k (X_k the last block of (σI + τT_k)⁻¹E₁R₀). Its error is
/// E_kᵀ(σI + τH)E_k with E_k = (σI + τH)⁻¹ times that residual, so
///   ‖Yᵀ(σI + τH)⁻¹Y − R₀ᵀ[(σI + τT_k)⁻¹]₁₁R₀‖₂ ≤ ρ_k²/σ,  ρ_k = τ‖B_k X_k‖_F,
/// (λ_min(σI + τH) ≥ σ for H ⪰ 0) and the smoothed form τH(σI + τH)⁻¹ = I − σ(σI + τH)⁻¹
/// has the bound ρ_k². The resolvent form is the running sum of the block LDLᵀ of σI + τT_k
/// (no extra work per step); the smoothed form is evaluated from the bottom of T_k, O(k r³),
/// only where its stopping rule can hold. Only local reorthogonalization: finite precision costs the recurrence
/// some extra steps, not the accuracy of the quadrature (as for CG; measured on TCA's
/// Fashion-MNIST problem, 14 000 × 200 block: 5·10⁻¹⁵ relative to a sparse LU solve).
#include <petscmat.h>

#include <optional>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/petsc.hpp"

namespace ssdr::solvers {

/// Which form of the resolvent a BlockLanczos evaluates (σ > 0, τ ≥ 0).
enum class QuadratureForm {
  resolvent,  ///< Yᵀ(σI + τH)⁻¹Y
  smoothed,   ///< Yᵀ(σI + τH)⁻¹τH Y, computed without the cancellation of YᵀY − σYᵀ(σI + τH)⁻¹Y
};

/// Stopping rule and limits of a BlockLanczos.
struct BlockLanczosOptions {
  /// A form is taken at the first k whose error bound (ρ_k²/σ, or ρ_k² for the smoothed
  /// form) is at most rtol·‖form_k‖_F (for the smoothed form, also at most rtol times the
  /// estimate ‖YᵀY − σ·resolvent_k‖_F of that norm, which decides where it is evaluated).
  double rtol = 1e-13;
  /// At most this many steps (0: 2n/r + 20, r the block width; finite precision may need
  /// more than the n/r steps of exact arithmetic). Beyond it form() gives up.
  int max_steps = 0;
  /// Name in the progress line and in errors ("tca_" for TCA's).
  std::string prefix;
  /// Start from Y with unit columns (Y = Ŷ·diag(‖y_j‖)) and scale the forms back, so the
  /// stopping rule weighs every pair of columns alike when their lengths differ by orders of
  /// magnitude (SOGE's block [X_c, UY, 1]); `bound` is then that of the unit-column form.
  bool unit_columns = false;
};

/// One form and how it was obtained.
struct QuadratureResult {
  Dense form;        ///< r×r, symmetric (symmetrized by averaging), the same bits on every rank
  int steps = 0;     ///< blocks of T_k the form used (the first k meeting the stopping rule)
  int new_steps = 0; ///< steps of the recurrence this call ran (0: reused a sweep's earlier ones)
  double bound = 0;  ///< the error bound at `steps` (2-norm), see the file comment
};

/// The block Lanczos recurrence of H = diag(h) − A from Y, grown on demand and kept for every
/// later (σ, τ). Construction and form() are collective over A's communicator; A must stay
/// unchanged while the object lives (it holds a reference). H must be positive semidefinite
/// (a graph Laplacian, plus a nonnegative diagonal): the error bounds use λ_min(H) ≥ 0.
///
/// A form depends only on (σ, τ, the form) and the recurrence, never on which forms were
/// asked before or how far the recurrence was grown: the same bits whichever order a sweep
/// (or a resumed experiment) takes its α in.
///
/// Memory per rank: 6 n_local×r doubles (Q_{j−1}, Q_j, W, the QR's scratch, and PETSc's
/// dense product and its input), plus 3 r×r doubles per step (A_j, B_j, W_jᵀW_j), replicated.
/// Work per step: one sparse × dense product H Q_j, and about 17 n_local r² + O(r³) flops.
class BlockLanczos {
 public:
  /// Starts the recurrence: Y (n×r, rows distributed as A's rows) = Q₁R₀. `h` is H's diagonal
  /// part on this rank's rows (n_local values). Collective.
  /// \throws ssdr::Error (collectively) when Y's or h's layout differs from A's.
  /// A rank-deficient Y (numerically: CholeskyQR2 fails) is not an error: broken() says so
  /// and form() gives std::nullopt, so the caller takes another route.
  BlockLanczos(Mat A, std::vector<double> h, const DistMatrix& Y, BlockLanczosOptions options = {});
  ~BlockLanczos();
  BlockLanczos(const BlockLanczos&) = delete;
  BlockLanczos& operator=(const BlockLanczos&) = delete;

  /// The form (r×r) at the first k meeting the stopping rule, growing the recurrence as far
  /// as needed. Collective. std::nullopt (on every rank) when the recurrence broke down
  /// before the rule was met (a rank-deficient block, a non-SPD Schur complement, or
  /// max_steps): why() says which.
  /// \throws ssdr::Error (collectively) when σ ≤ 0, τ < 0 or either is not finite.
  std::optional<QuadratureResult> form(QuadratureForm which, double sigma, double tau);

  /// Several forms at one (σ, τ): each element is what form(which[q], σ, τ) gives (the same
  /// bits, steps and bound; new_steps counts from this call's start), but the forward block
  /// LU of σI + τT_k, most of a form's O(k r³) replicated work, is done once for all of them
  /// (SOGE needs both forms at every α). Collective. An element is std::nullopt when the
  /// recurrence broke down before its rule was met (why() says why); a form taken before
  /// the breakdown is kept.
  /// \throws ssdr::Error (collectively) when σ ≤ 0, τ < 0 or either is not finite.
  std::vector<std::optional<QuadratureResult>> forms(const std::vector<QuadratureForm>& which, double sigma, double tau);

  /// The widest block a recurrence is started for: its replicated work per step grows as r³.
  static constexpr int64_t kMaxWidth = 1024;
  /// Whether a recurrence from a block of width r fits: r ≤ kMaxWidth and its 6 n_local×r
  /// doubles within memory_mib (MiB) on the rank with the most rows. Collective over comm.
  static bool fits(MPI_Comm comm, int64_t n_local, int64_t r, double memory_mib);

  /// Steps run so far. Local.
  int steps() const { return static_cast<int>(A_.size()); }
  /// Width r of the block. Local.
  int64_t width() const { return r_; }
  /// Why the last form() gave std::nullopt, or why the recurrence cannot be grown (a
  /// rank-deficient start or block, max_steps); empty when neither happened. Local.
  const std::string& why() const { return why_; }
  /// Whether the recurrence can still be grown. Local (the same on every rank).
  bool can_grow() const { return !stopped_; }

 private:
  bool step();  // collective; false (stopped_, why_ set) when the recurrence cannot be grown
  bool cholqr(std::vector<double>& W, const Dense* gram, Dense& R);  // collective
  std::optional<Dense> smoothed_form(double sigma, double tau, int k) const;

  MPI_Comm comm_;
  Owned<Mat> A_mat_;
  Owned<Mat> P_, AP_;  // the product's dense input (Q_j) and output (A Q_j)
  bool in_place_ = false;  // P_ and AP_ read and write Q_j and W in place (their stride is n_local)
  std::vector<double> h_;
  std::vector<double> col_norm_;  // ‖y_j‖ with unit_columns, else empty
  int64_t n_ = 0, r_ = 0, n_global_ = 0;
  bool exhausted_ = false;  // the last step's W was at rounding level: T_k is exact
  bool stopped_ = false;    // the recurrence cannot be grown (why_ says why)
  int max_steps_ = 0;
  BlockLanczosOptions options_;
  std::vector<double> Qprev_, Qcur_;  // column-major n_local×r
  std::vector<double> scratch_;       // n_local×r, the QR's product
  Dense R0_;
  std::vector<Dense> A_, B_, gram_;  // per step: A_j, B_j (when the QR of W_j succeeded), W_jᵀW_j
  std::string why_;
};

}  // namespace ssdr::solvers
