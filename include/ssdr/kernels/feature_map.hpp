#pragma once
/// \file feature_map.hpp
/// Kernels as feature maps placed before the methods (soda-nie2009 §4, eq. (33)–(41);
/// ssgda-zhang-yeung): a fitted map φ: R^{d'} → R^r whose inner products φ(x)ᵀφ(y) equal
/// (exact map) or approximate (Nyström) the kernel k(x, y) centered with the training means,
/// so any linear method run on Φ_c = [φ(x_1) … φ(x_n)]ᵀ is its kernel version.
///
/// KSODA = SODA on the exact empirical kernel map. With K = L_c K_raw L_c = U Λ Uᵀ (34)/(36)
/// and Φ = U Λ^{1/2}: since K U = U Λ, the matrices of (38)/(39) are
///   H_w = Λ^{-1/2} Uᵀ K L̃_w K U Λ^{-1/2} = Λ^{1/2} Uᵀ L̃_w U Λ^{1/2} = Φᵀ L̃_w Φ,
///   H_b = Φᵀ L̃_b Φ,
/// i.e. SODA's soft-label scatter matrices (28) of the samples Φ (rows), μ₀ = max diag H_w
/// as in SODA, and the projection (40) y = βᵀ Λ^{-1/2} Uᵀ L_c φ(X)ᵀ φ(x) = βᵀ φ_c(x).
///
/// One representation serves both maps: with Z = [z_1 … z_{r_z}] the landmarks (exact: the
/// n training samples themselves), M (r_z×r) and a (r_z),
///   φ_c(x) = Mᵀ (k(Z, x) − a),   a_j = (1/n) Σ_i k(z_j, x_i)  (training means),      (★)
/// - exact:   Z = X_train, M = U Λ^{-1/2} (positive eigenvalues > 1e-10·λ_max of K). Because
///            Uᵀ1 = 0 and (K_raw − 1aᵀ) = L_c K_raw, (★) on the training samples gives
///            L_c K_raw U Λ^{-1/2} = K U Λ^{-1/2} = U Λ^{1/2}: the empirical kernel map, and on
///            a new sample exactly (40).
/// - Nyström: Z = r landmarks, M = W_r^{+1/2} = U_r Λ_r^{-1/2} of W_r = k(Z, Z) (pseudo-inverse:
///            eigenvalues > 1e-10·largest), so φ(x)ᵀφ(y) = k(x,Z) W_r⁺ k(Z,y) before centering;
///            subtracting a centers Φ with the training mean.
/// Φ_c's columns sum to zero over the training samples in both cases.
#include <mpi.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::kernels {

/// The kernel of a kernel method (KSODA, GDA, SSGDA).
enum class KernelType {
  none,        ///< no kernel: the methods see the preprocessed data
  linear,      ///< k(x,y) = xᵀy
  polynomial,  ///< k(x,y) = (xᵀy + 1)^p, p = degree (soda-nie2009 eq. (41): p = 3)
  rbf          ///< k(x,y) = exp(−‖x−y‖²/σ²) (soda-nie2009 eq. (33))
};
/// Parses "none", "linear", "poly"/"polynomial", "rbf". Local; the error is collective
/// (every rank parses the same options). \throws ssdr::Error naming the valid values.
KernelType parse_kernel(const std::string& name);
/// "none", "linear", "poly", "rbf".
std::string to_string(KernelType k);

/// The largest polynomial degree p accepted for (x'y + 1)^p (the papers use 3; far larger p
/// overflows or makes the kernel matrix numerically rank one).
inline constexpr double kMaxPolynomialDegree = 20;

/// The kernel and its map: type and parameters, exact map or Nyström landmarks.
struct KernelOptions {
  KernelType type = KernelType::none;
  double degree = 3;        ///< polynomial p (KSODA paper: 3)
  double sigma2 = 0;        ///< RBF σ²; 0 → mean pairwise squared distance of the training samples
  /// RBF: when > 0, σ = sigma_scale·σ₀ with σ₀ the mean pairwise *distance* of the training
  /// samples (ssgda-zhang-yeung sec. IV: σ ∈ σ₀·{10⁻³ … 10³}), i.e. σ² = (sigma_scale·σ₀)²;
  /// overrides sigma2.
  double sigma_scale = 0;
  /// σ₀ already computed for these training samples (mean_pairwise_distance), so a sweep over
  /// sigma_scale computes the O(n²d) mean once; 0 → computed by fit_feature_map. Not part of
  /// to_json (a property of the samples, not an option).
  double sigma0 = 0;
  int64_t landmarks = 0;    ///< r: 0 → exact map (n×n kernel, ScaLAPACK); > 0 → Nyström with r landmarks
  std::string landmark_seeding = "uniform";  ///< "uniform" or "kmeans++"
  uint64_t seed = 0;        ///< landmark sampling seed
  /// Exact map: refuse when the estimated memory per rank exceeds this many MiB;
  /// 0 → 50 % of MemAvailable (/proc/meminfo) divided by the ranks on the node.
  double max_memory_mib = 0;
  std::string prefix = "kernel_";  ///< SLEPc options prefix of the exact map's eigen-solve
};

/// KernelOptions as JSON (the "kernel" entry of the fit parameters) and back; missing keys
/// keep their defaults. \throws ssdr::Error (collective) on an unknown kernel or seeding name.
nlohmann::json to_json(const KernelOptions& o);
KernelOptions from_json(const nlohmann::json& j);

/// A fitted feature map (★).
///
/// - Nyström: replicated on every rank (Zt d'×r, M r×r, a r; O(r(d' + r)) doubles).
/// - exact: distributed by training sample over `comm`, like the training rows it was fitted
///   on: this rank holds the samples [z_start, z_start + Zt.cols) of the n = z_global, i.e.
///   Zt (d'×n_local), M's rows (n_local×r) and a's entries (n_local) for them —
///   (n_local·(d' + r + 1)) doubles, no rank holds n×d' or n×r. φ_c of a sample then needs
///   every rank's rows: apply / apply_exact are collective over `comm` (a map on
///   MPI_COMM_SELF holding all n rows, e.g. model::load's, needs no communication and gives
///   the same bits).
struct FeatureMap {
  KernelType type = KernelType::none;
  double degree = 3;             ///< polynomial p
  double sigma2 = 0;             ///< RBF σ² actually used
  bool exact = false;            ///< true: Z = the training samples; false: Nyström landmarks
  Dense Zt;                      ///< d'×r_z (exact: d'×n_local), column j = landmark z_{z_start+j}
  Dense M;                       ///< r_z×r (exact: n_local×r, the rows of this rank's samples)
  std::vector<double> a;         ///< r_z (exact: n_local): training mean of k(z_j, ·)
  int64_t z_global = 0;          ///< exact: n, the training samples over all ranks (Nyström: r_z)
  int64_t z_start = 0;           ///< exact: global index of this rank's first sample (Nyström: 0)
  MPI_Comm comm = MPI_COMM_SELF; ///< exact: the ranks that share the samples (Nyström: unused)
  /// d', the preprocessed input dimension. Local.
  int64_t input_dim() const { return Zt.rows; }
  /// r, the dimension of the feature map's output. Local.
  int64_t dim() const { return M.cols; }
  /// r_z over all ranks: the landmarks (Nyström) or the training samples n (exact).
  int64_t landmarks() const { return exact ? z_global : Zt.cols; }
  bool empty() const { return type == KernelType::none; }
};

/// The fixed number of training samples per block of the exact map's projection sums
/// (apply_exact): the blocks [k·kExactBlock, (k+1)·kExactBlock) of the global training
/// index do not depend on the rank count, so neither do the sums' bits.
inline constexpr int64_t kExactBlock = 256;
/// The fixed number of query rows per GEMM in apply_exact (full zero-padded tiles, so a
/// row's bits depend only on the row).
inline constexpr int64_t kExactTile = 64;

/// k(Z, X) for the b samples of the row-major block X (b×d', the local block of a DistMatrix)
/// against the columns of Zt (d'×r_z; an exact map: this rank's n_local samples only): G
/// (r_z×b, column-major, column i = k(Z, x_i)). Local.
/// RBF distances use ‖x‖² + ‖z‖² − 2xᵀz clamped at 0.
void kernel_block(const FeatureMap& f, const double* X, int64_t b, std::vector<double>& G);

/// Mean pairwise squared distance of the n rows of X (all ordered pairs i ≠ j):
///   (1/(n(n−1))) Σ_{i≠j} ‖x_i − x_j‖² = 2n/(n−1) · (1/n) Σ_i ‖x_i − x̄‖²,
/// computed in O(n·d) (one pass for x̄, one for the sum). This is the RBF default σ²; SSGDA's
/// σ₀ is the mean pairwise *distance*, and σ² here is the mean of its square (≥ σ₀² by
/// Jensen). Collective over X.comm. \throws ssdr::Error (collective) when n < 2.
double mean_pairwise_squared_distance(const DistMatrix& X);

/// Mean pairwise Euclidean distance σ₀ of the n rows of X (n×d, rows distributed, any
/// layout) over all ordered pairs i ≠ j,
///   σ₀ = (1/(n(n−1))) Σ_{i≠j} ‖x_i − x_j‖   (ssgda-zhang-yeung sec. IV, "the average
/// distance between two points"), not squared: no O(n·d) shortcut exists, so the row blocks
/// travel around a ring of the ranks (each rank: its block plus one travelling block) and
/// every pair is computed directly, O(n²·d/p) flops per rank. Collective over X.comm.
/// \throws ssdr::Error (collective) when n < 2.
double mean_pairwise_distance(const DistMatrix& X);

/// Memory (bytes per rank) the exact map needs for n training samples of dimension d on p
/// ranks: its distributed Z and M ((n·d + n²)/p, M is n×r with r ≤ n), the local kernel
/// rows while they are set into the matrix (n²/p), the ScaLAPACK matrix and its eigenvectors
/// (2n²/p) and the eigen-solver's workspace (n²/p): 8·(n·d + 5n²)/p. Not collective.
double exact_map_bytes_per_rank(int64_t n, int64_t d, int p);

/// Refuses kernel values that could exceed kMaxAbsValue (core/values.hpp), the bound every data
/// value keeps so that the fit's sums cannot overflow: for the linear kernel max‖x‖², for the
/// polynomial kernel (1 + max‖x‖²)^p bound |k(x, z)| over the training rows X (n×d', rows
/// distributed); the RBF kernel always passes. Called by fit_feature_map. Collective over
/// X.comm. \throws ssdr::Error (replicated: the bound is agreed) naming the kernel, its degree
/// and the bound reached, e.g. a degree-20 kernel on values of 10^4.
void check_kernel_range(const DistMatrix& X, const KernelOptions& o);

/// Fits the map on the training samples X (n×d', rows distributed, any layout): RBF σ², then
/// - exact (o.landmarks == 0): K_raw rows of the local samples computed against every
///   sample, the samples travelling in fixed blocks (for_each_row_block; no rank gathers
///   them all), a_g = (1/n) Σ_j K_raw(g, j) summed in global j order, the
///   centered K = L_c K_raw L_c (34) assembled as a MATSCALAPACK, all eigenpairs through SLEPc
///   (EPS type scalapack by default, options prefix o.prefix, EPSSetFromOptions last; the
///   lapack type when PETSc cannot lay out a MATSCALAPACK of order n on p ranks), positive
///   eigenvalues > 1e-10·λ_max kept (36), M = U Λ^{-1/2} with every column's largest-magnitude
///   entry positive, each rank keeping the rows of its samples (the map stays distributed
///   over X.comm with X's row layout; see FeatureMap). Refused (collective one-line error naming the MiB per rank and suggesting
///   --landmarks) when exact_map_bytes_per_rank exceeds the limit (o.max_memory_mib).
/// - Nyström (o.landmarks = r > 0, capped at n): r landmarks drawn from X with a generator
///   seeded by o.seed — "uniform" (a seeded permutation of the global indices) or "kmeans++"
///   (D² sampling with integer-quantized weights, so the choice does not depend on the rank
///   count) — W_r = k(Z, Z) eigen-decomposed with LAPACK on every rank, M₀ = U_+ Λ_+^{-1/2};
///   then rotated to the principal axes of the centered training map, as the exact map's
///   Φ_c = UΛ^{1/2} is: with Φ₀ = φ_c(X) under M₀ and Φ₀ᵀΦ₀ = VΣVᵀ (r×r, one all-reduce),
///   M = M₀V₊ (Σ in decreasing order, columns with σ_k ≤ 1e-10·σ_max dropped — the direction
///   the centering removes among them — each column of V with its largest-magnitude entry
///   positive). Φ_cᵀΦ_c = Σ is then diagonal, so μ₀ = max diag H_w of soda-nie2009 (38) is
///   taken on kernel-PCA coordinates for both maps and μ = R·μ₀ means the same; with r = n
///   landmarks the rotated map equals the exact one up to column signs. Rotation-invariant
///   methods (GDA, SSGDA) are unaffected. M depends on an all-reduce, so it agrees across
///   rank counts to rounding (Davis–Kahan: ‖ΔV_k‖ ≲ ‖ΔΣ‖/gap_k), not bit for bit.
/// Collective over X.comm. `info` receives the parameters used (kernel, degree, σ², with
/// sigma_scale also σ₀ and the scale, r_z, r, discarded eigenvalues). \throws ssdr::Error
/// (collective) on type none, n < 2, degree ≤ 0, negative σ² or sigma_scale, an unknown
/// seeding, or the memory refusal.
FeatureMap fit_feature_map(const DistMatrix& X, const KernelOptions& o, nlohmann::json* info = nullptr);

/// φ_c of the b rows of the row-major block X (b×d'): Phi (row-major b×r) = (★). Local;
/// Nyström maps only. \throws ssdr::Error for an exact map (its rows are distributed: use
/// apply or apply_exact, collective).
void apply_rows(const FeatureMap& f, const double* X, int64_t b, double* Phi);

/// Φ_c = φ_c(X) for every row of X (n×d' → n×r, X's layout), in blocks of rows. Nyström:
/// local (no communication). Exact: apply_exact, collective over f.comm. \throws
/// ssdr::Error when X.cols != f.input_dim().
DistMatrix apply(const FeatureMap& f, const DistMatrix& X);

/// The exact map's projection of this rank's b query rows (rows[i]: d' doubles each, any
/// address): out (row-major b×q) row i = Rᵀ (k(Z, x_i) − a) with R = M (q = r, out = φ_c(x_i),
/// (★)) or, given W (r×m), R = M·W (q = m, out = Wᵀφ_c(x_i), soda-nie2009 eq. (40)); R's rows
/// are formed locally, R_j = M_j·W summed in k order. The training rows (z_j, R_j, a_j) travel
/// to every rank in the fixed blocks of kExactBlock samples (for_each_row_block, global
/// order), and each block's contribution R_bᵀ(k(Z_b, x) − a_b) is one GEMM of fixed shape on a
/// full zero-padded tile of kExactTile query rows, added to out in block order: a row's bits
/// depend only on the row and the map's values, not on the rank count, the map's row layout
/// or the rows beside it. Collective over f.comm (every rank calls it, b may be 0); memory
/// per rank n_local·(d' + q + 1) for the local rows plus two blocks in flight. O(n·b·(d' + q))
/// flops per rank. \throws ssdr::Error (collective: checked on values every rank holds
/// alike) when the map is not exact or W->rows != r.
void apply_exact(const FeatureMap& f, const Dense* W, const double* const* rows, int64_t b, double* out);

/// Turns an exact map that holds all n samples on every rank (a model of format ≤ 5) into
/// one distributed over comm with the block layout (each rank keeps its rows). Local
/// arithmetic, no communication. \throws ssdr::Error when the map is not exact or does not
/// hold all its samples.
void distribute(FeatureMap& f, MPI_Comm comm);

}  // namespace ssdr::kernels
