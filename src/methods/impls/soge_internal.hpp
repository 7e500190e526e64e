#pragma once
/// \file soge_internal.hpp
/// The stages of SOGE (soge-liu2017), private to src/methods/soge.cpp and its unit test
/// (tests/unit/soge_test.cpp; the test target has src/ on its include path).
///
/// Symbols as in the paper: X ∈ R^{d×n} (here a DistMatrix n×d, rows = samples, distributed),
/// X_c = X H_c with H_c = I − 11ᵀ/n, graph S (n×n sparse, PETSc MPIAIJ, X's row layout),
/// L = D − S, U = diag(μ on labeled samples, 0 on unlabeled), Y ∈ B^{n×c} the one-hot labels
/// of the labeled samples (zero rows for unlabeled), Q = (L + U + αH_c)⁻¹ (eq. (9)).
///
/// H_c is dense and is never formed: with K₀ = L + U + αI (sparse SPD) and w = K₀⁻¹U1,
/// Sherman–Morrison on K₀ − (α/n)11ᵀ together with K₀1 = U1 + α1 gives, for any r ∈ Rⁿ,
///     H_c Q r = K₀⁻¹r − w (1ᵀK₀⁻¹r)/(1ᵀw)                                          (R1)
/// and, because I/α − Q = Q((L+U)/α − 11ᵀ/n) and X_c1 = 0,
///     A = α² X_c (I/α − Q) X_cᵀ = α X_c Q (L+U) X_cᵀ                               (R2)
/// which has no cancellation at large α. X_c Q = X_c H_c Q, so (R1) serves both A and B.
#include <petscmat.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/solvers/block_lanczos.hpp"
#include "ssdr/solvers/sparse_solve.hpp"

namespace ssdr::methods::soge {

/// X_c = X H_c: X (n×d, rows distributed) minus its column means over all n rows.
/// Collective over X.comm (one MPI_Allreduce of d doubles).
DistMatrix center(const DistMatrix& X);

/// U's diagonal for the local rows: μ where labels[i] ≥ 0, else 0. Local.
std::vector<double> label_weights(const std::vector<int>& labels, double mu);

/// H_c Q R for the n×r right-hand sides R (rows distributed as S's rows), by (R1): K₀⁻¹ with
/// K₀ = L + U + αI for the r columns of R plus the column U1 (w), by the route of
/// -<so.prefix>route (dense_route.hpp): up to n = 2000 (auto) one Cholesky of the gathered
/// K₀ on every rank (n² doubles per rank; the same bits on every rank count), else
/// solvers::solve_columns (`graph::diagonal_plus_scaled`, options prefix so.prefix: lockstep
/// CG, or one KSP). u = U's local
/// diagonal (label_weights). Returns n×r with R's layout; `iterations` (optional) gets the
/// KSP iterations per column (r + 1 entries, w last; zeros on the dense route);
/// `dense_used` (optional) whether the dense route was taken.
/// Collective over S's communicator. \throws ssdr::Error (collectively) when a solve does
/// not converge or R's layout differs from S's, or when 1ᵀw ≤ 0 (no labeled sample).
DistMatrix centered_q(Mat S, const std::vector<double>& u, double alpha, const DistMatrix& R,
                      const solvers::SparseSolveOptions& so, std::vector<int>* iterations = nullptr,
                      bool* dense_used = nullptr);

/// The quadratic and linear terms of eq. (10).
struct Operators {
  Dense A;                      ///< d×d, eq. (11) computed as (R2); symmetric PSD, replicated
  Dense B;                      ///< d×c, eq. (12) B = α X_c Q U Y, replicated
  std::vector<int> iterations;  ///< KSP iterations per right-hand side (d + c + 1; zeros when dense)
  bool dense = false;           ///< K₀ solved by the dense route
};

/// A and B of eq. (11)–(12) from the centered data Xc (n×d, X_c1 = 0 — see center()),
/// the graph S, the local labels (class 0..c−1 or −1) and α, μ: d + c + 1 sparse solves
/// with K₀ (right-hand sides (L+U)X_cᵀ, UY, U1), then local GEMMs and one MPI_Allreduce;
/// A is symmetrized, and A, B are broadcast from rank 0 so every rank holds the same bits.
/// Collective over Xc.comm. \throws ssdr::Error as centered_q.
Operators operators(const DistMatrix& Xc, Mat S, const std::vector<int>& labels, int classes,
                    double alpha, double mu, const solvers::SparseSolveOptions& so);

/// The block Lanczos recurrence operators_lanczos reads: H = L + U = diag(D + u) − S from the
/// block V = [X_c, UY] (n × (d + c), started from unit columns; UY: μ at each labeled
/// sample's class). Collective over Xc.comm. \throws ssdr::Error (collectively) when
/// layouts differ. A rank-deficient block (a class without labeled samples) leaves the
/// recurrence broken (operators_lanczos gives std::nullopt).
std::shared_ptr<solvers::BlockLanczos> operators_lanczos_start(const DistMatrix& Xc, Mat S,
                                                               const std::vector<int>& labels, int classes, double mu);

/// The operators of `operators` at α from the recurrence of operators_lanczos_start: with
/// K₀ = αI + H, the resolvent form VᵀK₀⁻¹V and the smoothed form VᵀK₀⁻¹HV (σ = α, τ = 1;
/// each within 10⁻¹³ of its Frobenius norm by the quadrature's bound), and z = K₀⁻¹1 by one CG
/// solve (options `so`), give A = α(X_cᵀK₀⁻¹HX_c − (X_cᵀw)(X_cᵀw)ᵀ/(zᵀu)) and
/// B = α(X_cᵀK₀⁻¹UY − (X_cᵀw)(zᵀUY)/(zᵀu)) with w = K₀⁻¹U1 = K₀⁻¹UY·1 (1ᵀK₀⁻¹HX_c =
/// (X_cᵀw)ᵀ since H1 = U1): (R1)–(R2) with one solve instead of d + c + 1. (1 is not in the
/// block: H1 = U1 lies in span(UY), which would make the recurrence's next block rank
/// deficient.) A is symmetric; every rank holds the same bits. std::nullopt when the
/// recurrence broke down. `steps`, `new_steps` (optional) get the steps the forms used and
/// the steps this call ran. Collective.
/// \throws ssdr::Error (collectively) when 1ᵀw ≤ 0 or the solve fails.
std::optional<Operators> operators_lanczos(solvers::BlockLanczos& lanczos, const DistMatrix& Xc, Mat S,
                                           const std::vector<int>& labels, int classes, double alpha, double mu,
                                           const solvers::SparseSolveOptions& so, int* steps = nullptr,
                                           int* new_steps = nullptr);

/// Algorithm 1 on the Stiefel manifold for eq. (13).
struct StiefelOptions {
  /// Stop when the relative Riemannian gradient ‖D − W sym(WᵀD)‖/‖D‖ is ≤ tol (W is then
  /// within ~tol·‖D‖/gap of the maximizer), or when (13) stops growing by more than its
  /// rounding; in the latter case converged = stationarity ≤ stagnation_tol.
  double tol = 1e-12;
  double stagnation_tol = 1e-9;
  int max_iterations = 5000;
  /// Without newton: safeguarded extrapolation of Algorithm 1's step (keeps (13) monotone).
  bool extrapolate = true;
  /// Riemannian trust regions with a preconditioned truncated CG (keeps (13) monotone); its
  /// iteration count does not grow with α. False: the paper's Algorithm 1 (GPI).
  bool newton = true;
  int newton_cg_iterations = 200;  ///< truncated-CG iterations per trust-region step
  std::string eigen_prefix = "eig_";  ///< SLEPc prefix of the λ_max solve
};

struct StiefelResult {
  Dense W;                        ///< d×c, WᵀW = I
  double lambda_max = 0;          ///< λ_max(A)
  std::vector<double> objective;  ///< (13) at the start and after every iteration
  int iterations = 0;
  bool converged = false;
  double stationarity = 0;        ///< ‖D − W sym(WᵀD)‖_F / ‖D‖_F at the returned W
  int extrapolated = 0;           ///< iterations whose extrapolated step was accepted
  int newton_steps = 0;           ///< accepted trust-region steps
};

/// max_{WᵀW=I} tr(Wᵀ(λ_max I − A)W) + 2 tr(WᵀB), eq. (13) (≡ min of (10)). λ_max(A) by
/// solvers::sym_eigen (nev 1, largest, prefix o.eigen_prefix); start at the polar factor
/// of B, whose columns for B's zero singular values (B1_c = 0, so at least one) are made
/// deterministic: the bottom eigenvectors of A in the complement of the others.
/// - o.newton (default): Riemannian trust regions (Absil, Baker and Gallivan 2007, as Manopt's
///   RTR) in the eigenbasis of A (LAPACK dsyev on every rank), the inner Steihaug–Toint CG
///   preconditioned by the exact inverse of ξ ↦ 2Aξ − ξ sym(WᵀG) before the tangent
///   projection. Algorithm 1 contracts by about 1 − gap/λ_max per iteration and λ_max grows
///   with α (COIL-20: thousands of iterations at α ≥ 10³); the trust regions take 30–100
///   iterations at every α of the paper's grid. Below the rounding of (13) a step is taken
///   when it lowers the relative gradient, so the finish is quadratic in the gradient.
/// - otherwise the paper's Algorithm 1: D = (λ_max I − A)W + B (eq. (14), half the gradient)
///   and W ← U Vᵀ from the thin SVD D = UΣVᵀ (eq. (15), LAPACK on every rank); with
///   o.extrapolate, the polar factor of W⁺ + β(W⁺ − W) replaces W⁺ when it raises (13) further.
/// Either way (13) never decreases (Theorem 1; a trust-region step is accepted only when it
/// lowers f, or at rounding level as said). A (d×d) and B (d×c, c ≤ d) must be identical on
/// every rank. Collective over comm (the eigen-solve only).
/// \throws ssdr::Error when shapes differ or c > d.
StiefelResult maximize_on_stiefel(const Dense& A, const Dense& B, const StiefelOptions& o, MPI_Comm comm);

/// Objective (13) at W. Local.
double objective13(const Dense& A, const Dense& B, double lambda_max, const Dense& W);

/// Recursive projections, eq. (7)–(8) and Algorithm 2.
struct Recursion {
  Dense W;                             ///< d×Kc: the embedding of x is Wᵀx (deflations folded in)
  std::vector<Dense> blocks;           ///< W_k (d×c) learned on the k-times deflated data
  std::vector<StiefelResult> results;  ///< Algorithm 1 per recursion (in reduced coordinates)
};

/// K recursions of Algorithm 1. Recursion k learns W_k from X̃_k = P_{k−1}⋯P_1 X with
/// P_j = I − W_jW_jᵀ (eq. (7)); since X̃_k Q and X̃_k1 = 0 follow from X's, the deflated
/// operators are Ã = P A P, B̃ = P B (P = P_{k−1}⋯P_1) and no sparse solve is repeated.
/// Algorithm 1 runs in an orthonormal basis V of range(P) (d × (d − (k−1)c)) — its iterates
/// stay in range(P) anyway, as Wang et al.'s proposition states — so W_k ⊥ W_j (j < k)
/// exactly. The embedding block k is W_kᵀX̃_k = (P_1⋯P_{k−1}W_k)ᵀX, so column block k of
/// W is P_1⋯P_{k−1}W_k (= W_k by the orthogonality; computed as the product).
/// Collective over comm. \throws ssdr::Error (collective) when Kc > d.
Recursion recursive_projections(const Dense& A, const Dense& B, int K, const StiefelOptions& o, MPI_Comm comm);

}  // namespace ssdr::methods::soge
