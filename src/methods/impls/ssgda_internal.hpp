#pragma once
/// \file ssgda_internal.hpp
/// The constants and stages of SSGDA / M-SSGDA (ssgda-zhang-yeung), private to
/// src/methods/ssgda.cpp and its unit test (tests/unit/ssgda_test.cpp; the test target has
/// src/ on its include path). Φ (n×r), Q, E, R (n×c) are sample-distributed DistMatrix
/// (rows = samples); labels are per local row, −1 for unlabeled.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/methods/method.hpp"

namespace ssdr::methods::ssgda_detail {

/// Confidence threshold θ of sec. III-D ("usually chosen to be larger than 0.5"): an
/// unlabeled sample is selected when at least θ of its K nearest unlabeled neighbors (in the
/// first GDA embedding) carry its estimated label. A documented constant (no CLI option).
constexpr double kTheta = 0.7;
/// K of Table I: neighbors of the local-scaling graph (M-SSGDA) and of the confidence
/// selection. σ_i = distance to the K-th neighbor (Zelnik-Manor & Perona local scaling).
constexpr int kNeighbors = 5;
/// CCCP stops when E stops changing (Table I with ε = 0); this caps it.
constexpr int kMaxCccpIterations = 100;
/// Gauss–Seidel sweeps of the alternating method (17) per CCCP iteration, at most.
constexpr int kMaxSweeps = 100;
/// Costs r_ki (and M-SSGDA's cost_k) closer than this, relative to the row's largest |cost|,
/// are ties: they differ by rounding (Q's orthonormality, all-reduce order) only, and must
/// not decide a label differently on different rank counts.
constexpr double kTieTolerance = 1e-10;

/// Orthonormal basis Q (n×rank, X's row layout) of range(Φ) for the sample-distributed
/// Φ (n×r), so that S = Q Qᵀ = Φ(ΦᵀΦ)⁺Φᵀ. With Φ = Φ_c the centered feature map this is
/// the paper's S = H_n K (K H_n K)⁻¹ K H_n (sec. III-B; pseudo-inverse as in sec. II).
/// Two passes of an eigen-based Cholesky-QR: G = ΦᵀΦ (r×r, one all-reduce), G = VΛVᵀ,
/// Q₁ = Φ V₊ Λ₊^{-1/2} keeping λ_i > √(max(n, r)·ε)·λ_max, then the same on Q₁ to restore
/// orthonormality lost to cond(Φ)². The tolerance is the paper's (K H_n K)⁻¹ read as MATLAB's
/// pinv (tolerance max(n)·ε·‖KHK‖): KHK's non-zero eigenvalues are the squares λ_i² of the
/// centered Gram's when K is centered. Memory O(n_local·r + r²).
/// Collective over Phi.comm. \throws ssdr::Error (collective) when Φ is zero.
DistMatrix range_basis(const DistMatrix& Phi, int64_t* rank_out);

/// S E = Q (QᵀE) (n×c, X's layout) for the basis Q of range_basis and any E (n×c).
/// Collective (one q×c all-reduce).
DistMatrix apply_projector(const DistMatrix& Q, const DistMatrix& E);

/// E⁽⁰⁾ of eq. (8) (n×c, labels' layout): one-hot rows for labeled samples (labels[i] in
/// 0..c−1), 1/C on the unlabeled (−1) rows. Local.
DistMatrix initial_indicator(const std::vector<int>& labels, int classes, MPI_Comm comm);

/// The dual costs r_ki⁽ᵖ⁾ of sec. III-E, r_k = (e_kᵀSe_k / t_k²)·1 − 2 S e_k / t_k with
/// t_k = e_kᵀ1 (n×c, E's layout; row i holds r_{1i} … r_{Ci}), and in *criterion* the
/// GDA criterion of eq. (5)/(6), Σ_k e_kᵀSe_k / t_k = tr(E D⁻¹ Eᵀ S) (Corollary 1).
/// Maximizing the linearized objective (7) is minimizing Σ_k r_kᵀe_k.
/// Collective. \throws ssdr::Error (collective) when a class has t_k ≤ 0.
DistMatrix cccp_costs(const DistMatrix& Q, const DistMatrix& E, double* criterion);

/// The solution of the CCCP step (7) from its dual (11)–(14): labeled rows stay one-hot;
/// unlabeled row i goes to k* = argmin_k r_ki (β_i = min_k r_ki, KKT (12)). When the minimum
/// is not unique (within kTieTolerance·max_k|r_ki|) the remaining LP over that row is
/// minimized by every point of the face spanned by the tied vertices; we return its
/// barycenter (equal shares), the point an interior-point LP solver such as the paper's CVX
/// converges to. Such a row has no estimated label (it is never selected). Local.
DistMatrix solve_lp_by_dual(const DistMatrix& R, const std::vector<int>& labels);

/// Local-scaling K-nearest-neighbor graph of M-SSGDA (sec. III-C): an edge joins i and j
/// when i ∈ N_K(j) or j ∈ N_K(i), w_ij = exp(−‖x_i−x_j‖² / (σ_iσ_j)), σ_i the distance of
/// x_i to its K-th neighbor (w_ij = 1 for duplicates with σ_iσ_j = 0). X: the input-space
/// samples (n×d, distributed); edges and w (one per entry of edges.col) for the local rows.
/// Collective (exact kNN, edge exchange, σ replicated: n doubles).
/// \throws ssdr::Error (collective) when K ≥ n.
void local_scaling_graph(const DistMatrix& X, int K, graph::SymmetricEdges& edges, std::vector<double>& w);

/// The manifold term λ Σ_{i<j} w_ij ‖e^i − e^j‖₁ of eq. (9) for rows that are vertices
/// (hard label ≥ 0) or the uniform row 1/C of eq. (8) (label −1); `all` replicated labels
/// (n). Collective.
double manifold_penalty(const graph::SymmetricEdges& edges, const std::vector<double>& w,
                        const std::vector<int>& all, int classes, double lambda, MPI_Comm comm);

/// One CCCP step of M-SSGDA: problem (10)/(15) by the alternating method of (16)–(17).
/// `current` (per local row) is the starting point: the hard labels of E⁽ᵖ⁾, or −1 where
/// the row is not a vertex (E⁽⁰⁾), which starts from the λ = 0 solution argmin_k r_ki.
/// Then Gauss–Seidel sweeps in global row order: with every other row a vertex e_l,
/// ‖e − e_l‖₁ = 2(1 − e_l) on the simplex, so (17) is linear and its exact minimizer is the
/// vertex argmin_k cost_k, cost_k = r_ki + 2λ Σ_j w_ij (1 − E_jk); a row moves only on a
/// decrease larger than kTieTolerance·max_k|cost_k|, so (15) decreases monotonically, as
/// the paper's argument requires, and the sweeps terminate.
/// Rank p updates its rows in order and then broadcasts them before rank p+1 starts, so the
/// sweep is the serial global-order sweep for any rank count (cost O(n·K·c) per sweep,
/// P broadcasts). Returns the labels per local row (labeled rows keep theirs), *sweeps the
/// number of sweeps (the last one changes nothing unless kMaxSweeps was reached).
/// Collective over R.comm.
std::vector<int> solve_manifold_lp(const DistMatrix& R, const std::vector<int>& labels,
                                   const std::vector<int>& current, const graph::SymmetricEdges& edges,
                                   const std::vector<double>& w, double lambda, int* sweeps);

/// Label estimation of SSGDA (manifold = false: CCCP on (6), steps (7) by the dual) or
/// M-SSGDA (manifold = true: CCCP on (9), steps (10) by solve_manifold_lp), Table I with
/// E⁽⁰⁾ of eq. (8) and ε = 0 (stop when E stops changing, at most kMaxCccpIterations).
/// Returns the estimated class per local row of data.X (labeled rows: their label; rows the
/// LP leaves split by a tie: −1, undetermined). info gets cccp_iterations,
/// cccp_objective (the objective of (6)/(9) at E⁽⁰⁾, E⁽¹⁾, …), gda_criterion, changes per
/// iteration, rank of S, estimated class counts, undetermined rows, criterion_saturated
/// (tr(E D⁻¹EᵀS) = C − 1 or rank S = n − 1: range(Φ_c) holds every labeling, e.g. a
/// full-rank RBF kernel on the transductive set gives S = H_n, and the estimate carries no
/// information; with equal labeled counts every unlabeled row then ties) and, for
/// M-SSGDA, λ, K, mean degree and sweeps. Collective over data.X.comm. \throws ssdr::Error (collective) when a class has no
/// labeled sample, λ < 0, or K ≥ n.
std::vector<int> estimate_labels(const TrainingData& data, const MethodOptions& o, bool manifold,
                                 nlohmann::json& info, Timings& t);

/// Confidence selection of sec. III-D: in the embedding Y (n×m, rows = the transductive
/// samples, distributed), each unlabeled sample (labels[i] = −1) looks at its K nearest
/// neighbors among the unlabeled samples only (exact kNN on them, self excluded, K reduced
/// to n_u − 1 when fewer exist) and is selected when the fraction of them whose estimated
/// label equals its own is ≥ θ (undetermined samples, estimated −1, are never selected nor
/// agree with anyone). Returns a flag per local row (labeled rows: 0); in
/// *mean_agreement the mean of that fraction over the unlabeled samples. Collective
/// (estimated labels of the unlabeled samples are replicated: n_u ints).
std::vector<char> confident_selection(const DistMatrix& Y, const std::vector<int>& labels,
                                      const std::vector<int>& estimated, int K, double theta,
                                      double* mean_agreement);

/// GDA (eq. (3)–(4)) as regularized LDA on the feature map: S_b a = λ (S_t + εI) a on the
/// rows with keep[i] ≠ 0 with hard labels y[i], ε = o.lda_regularization·tr(S_t)/r, the m
/// largest, through solvers::sym_eigen with prefix o.eigen_prefix. The paper fixes no scale:
/// columns of unit length when o.normalization is unit (the default; the convention of the
/// LDA code the paper's experiments use), aᵀ(S_t + εI)a = 1 when metric. X n×r distributed;
/// returns W (r×m, replicated) and the eigenvalues. Collective. \throws ssdr::Error
/// (collective) when a class has no kept row.
Dense gda(const DistMatrix& X, const std::vector<char>& keep, const std::vector<int>& y, int classes,
          int64_t m, const MethodOptions& o, std::vector<double>* eigenvalues, double* regularization);

}  // namespace ssdr::methods::ssgda_detail
