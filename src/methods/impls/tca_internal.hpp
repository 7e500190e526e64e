#pragma once
/// \file tca_internal.hpp
/// The stages of TCA/OTCA (tca-liu2008), private to src/methods/tca.cpp and its unit test
/// (tests/unit/tca_test.cpp; the test target has src/ on its include path). Notation as in
/// tca.cpp: Y (l×r or n×r) rows = samples, distributed; c classes; labels local, 0..c−1.
#include <petscmat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "methods/dense_route.hpp"
#include "ssdr/core/dense.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/solvers/block_lanczos.hpp"
#include "ssdr/solvers/sparse_solve.hpp"

namespace ssdr::methods::tca {

/// W^r Y, eq. (15): (W^r Y)_i = (1/l_k) Σ_{j∈C_k} y_j for i ∈ C_k. Y: l×r labeled rows,
/// rows distributed, `labels` one per local row in 0..c−1. Collective over Y.comm.
/// \throws ssdr::Error (collectively) on a bad label or fewer than two classes present.
DistMatrix apply_Wr(const DistMatrix& Y, const std::vector<int>& labels, int classes);

/// W^e Y, eq. (15): (W^e Y)_i = (1/(l − l_k)) Σ_{j∉C_k} y_j for i ∈ C_k. As apply_Wr.
DistMatrix apply_We(const DistMatrix& Y, const std::vector<int>& labels, int classes);

/// W^eᵀ Y (eq. 15 transposed; W^e is not symmetric). As apply_Wr.
DistMatrix apply_WeT(const DistMatrix& Y, const std::vector<int>& labels, int classes);

/// M_l Y with M_l = 3I + D^e + W^e + W^eᵀ − 2W^r, eq. (18) (D^e: column sums of W^e).
/// As apply_Wr; O(l·r) work, M_l is never formed.
DistMatrix apply_Ml(const DistMatrix& Y, const std::vector<int>& labels, int classes);

/// D_l Y with D_l = I + D^e, eq. (18). As apply_Wr.
DistMatrix apply_Dl(const DistMatrix& Y, const std::vector<int>& labels, int classes);

/// The smoothness regularizer of eq. (12) in matrix form: Yᵀ S Y (r×r, replicated) with
/// S = (I + αL)⁻¹ αL, eq. (10), L = D − A the Laplacian of the graph A (n×n MPIAIJ) and Y
/// (n×r) distributed with A's row layout (paper: X S Xᵀ with X = Yᵀ). S is never formed:
/// Z = (I+αL)⁻¹(αLY) by solvers::solve_columns (`solve.prefix`: lockstep CG, or one KSP), then
/// YᵀZ (local GEMM + MPI_Allreduce), symmetrized. Solving for αLY rather than forming
/// YᵀY − Yᵀ(I+αL)⁻¹Y avoids cancellation when αL is small (the LPP limit (13)).
/// Collective over A's communicator; `iterations` (optional) gets the KSP iterations.
/// \throws ssdr::Error (collectively) when α ≤ 0, layouts differ or a solve diverges.
Dense smoothness_regularizer(Mat A, const DistMatrix& Y, double alpha,
                             const solvers::SparseSolveOptions& solve, std::vector<int>* iterations);

/// tca-liu2008 eq. (4), the method table's graph for TCA and OTCA: symmetrized kNN heat graph,
/// k = 5 (§5.2 "k = 5 for all datasets"; 6 in the face experiments of §5.3), t = σ² = the
/// mean squared edge length (the paper does not state σ). Local.
graph::GraphOptions tca_graph();

/// The block Lanczos recurrence for smoothness_regularizer_lanczos: H = L = D − A (D the
/// degrees of A) from Y (n×r, A's row layout), options prefix "tca_". Collective over A's
/// communicator. \throws ssdr::Error (collectively) when the layouts differ.
std::shared_ptr<solvers::BlockLanczos> smoothness_lanczos(Mat A, const DistMatrix& Y);

/// Whether the Krylov route of a sweep's fit (one with a cache) computes X S Xᵀ by block
/// Lanczos (else by CG column by column): no -tca_ksp_* or -tca_pc_* option given (those ask for PETSc's KSP), r ≤ solvers::BlockLanczos::kMaxWidth
/// (the replicated r×r work per step grows as r³) and the recurrence's 6 n_local×r doubles
/// within `memory_mib` on the rank with the most rows. Collective over Y.comm.
bool lanczos_route(const DistMatrix& Y, const solvers::SparseSolveOptions& solve);

/// smoothness_regularizer from a block Lanczos recurrence on L from Y (the smoothed form of
/// solvers::BlockLanczos at σ = 1, τ = α: Yᵀ(I + αL)⁻¹αLY, its error at most
/// rtol = 10⁻¹³ of its Frobenius norm by the quadrature's bound). The same recurrence serves
/// every α (a sweep's cache keeps it). std::nullopt when the recurrence broke down
/// (`lanczos.why()` says why); the caller then solves by CG. Collective.
std::optional<solvers::QuadratureResult> smoothness_regularizer_lanczos(solvers::BlockLanczos& lanczos, double alpha);

/// How X S Xᵀ of eq. (12) is computed, by the n_t×n_t system (I + αL) Z = αLY (n_t the
/// transductive samples, Y n_t×d1): `krylov`, d1 CG solves on the distributed sparse graph
/// (smoothness_regularizer); `dense`, one dense Cholesky solve of the whole system on every
/// rank (smoothness_regularizer_dense); `automatic`, dense when n_t ≤ kDenseRouteMaxSamples.
/// The route and its crossover are shared with SOGE (dense_route.hpp).
using dense::Route;
using dense::route_option;
using dense::to_string;
using dense::kDenseRouteMaxSamples;
using dense::kDenseRouteLimit;

/// dense::dense_route for the option -tca_route. Local. \throws ssdr::Error (replicated)
/// when dense is asked for beyond kDenseRouteLimit.
inline bool dense_route(Route route, int64_t n) { return dense::dense_route(route, n, "tca_"); }

/// smoothness_regularizer by the dense route: A's rows and Y are gathered on every rank
/// (n_t² + n_t·r doubles per rank), L = D − A and R = αLY are formed in a fixed order, and
/// (I + αL)Z = R is solved by LAPACK's dposv, then YᵀZ (GEMM), symmetrized. Every rank
/// computes the same thing from the same gathered values, so the result has the same bits
/// on every rank and on any rank count (for the same A and Y). Collective over Y.comm.
/// \throws ssdr::Error (collectively) when α ≤ 0 or the layouts differ.
Dense smoothness_regularizer_dense(Mat A, const DistMatrix& Y, double alpha);

/// The PCA step of Table 1, Step 4: the d1 leading eigenvectors (d'×d1, descending
/// eigenvalues, sign fixed so each column's largest-magnitude entry is positive) of XᵀX
/// for the centered X (n×d', rows distributed). Collective (local GEMM + MPI_Allreduce,
/// then the same LAPACK dsyevd on every rank). \throws ssdr::Error when d1 ∉ [1, d'].
Dense pca_basis(const DistMatrix& X, int64_t d1);

/// The OTCA recursion of eq. (23)–(27) in the d1-dimensional (PCA) subspace, local:
/// H = Z S Zᵀ + β Z_l M_l Z_lᵀ + γ Z_l Z_lᵀ (d1×d1, SPD) in the coordinates E_0 = I,
/// R = Z_l Y (d1×c, class indicator Y). For k = 1 … m: b* = (E_{k−1}ᵀ H E_{k−1})⁻¹
/// E_{k−1}ᵀ R_{·k} (27), a_k = E_{k−1} b* (23), and E_k = Q_2 of the full QR of
/// [a_1 … a_k] (24). Returns [a_1 … a_m] (d1×m, mutually orthogonal, NOT normalized: the
/// least-squares term fixes their scale). \throws ssdr::Error (collective: replicated
/// input) when m ∉ [1, min(c, d1)] or a reduced H is not positive definite.
Dense otca_directions(const Dense& H, const Dense& R, int64_t m);

}  // namespace ssdr::methods::tca
