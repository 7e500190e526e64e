// TCA and OTCA: Transductive Component Analysis and Orthogonal Transductive Component
// Analysis (W. Liu, D. Tao, J. Liu, ICDM 2008; tca-liu2008). NOT Transfer Component
// Analysis (Pan et al., domain adaptation), which shares the acronym.
//
// Notation (the paper's): X = [x_1 … x_n] ∈ R^{d×n} the transductive samples (our DistMatrix
// is its transpose, n×d', rows distributed), X_l ∈ R^{d×l} the labeled ones, c classes C_k
// with l_k = |C_k|, L = D − W the Laplacian of the kNN heat graph (4), S = (I+αL)⁻¹αL (10),
// the supervised graphs W^r, W^e (15), D_l = I + D^e, M_l = 3I + D^e + W^e + W^eᵀ − 2W^r (18).
//
//   TCA  (21): (X S Xᵀ + β X_l M_l X_lᵀ) a = λ X_l D_l X_lᵀ a, the m SMALLEST eigenpairs
//              (Table 1, Step 5: "in an order of increasing eigenvalues"), U = P[a_1 … a_m].
//   OTCA (23)–(27): for k = 1 … m (≤ c): Z = (P E_{k−1})ᵀX, Z_l = (P E_{k−1})ᵀX_l,
//              b* = (Z S Zᵀ + β Z_l M_l Z_lᵀ + γ Z_l Z_lᵀ)⁻¹ Z_l Y_{·k}, a_k = E_{k−1} b*,
//              E_k = Q_2 of the full QR of [a_1 … a_k] (24); U = P[a_1 … a_m].
//
// Step 4 (optional PCA): when d' > l the paper projects onto d_1 ≤ l principal components
// so that X_l D_l X_lᵀ is nonsingular; we use d_1 = min(d', l) principal axes of the
// (already centered) transductive samples, P = I when d' ≤ l, for both TCA and OTCA.
//
// Decisions (recorded in FitResult::info): m defaults to c − 1 for TCA (the project's
// convention; the paper only bounds r ≤ min(d, l)) and to c for OTCA (§4: one direction per
// class, at most c). Column lengths (o.normalization, --normalize, recorded as
// info["normalization"]): unless --normalize is given TCA's columns keep the scale of the
// constraint of (20), a_iᵀ Pᵀ X_l D_l X_lᵀ P a_i = 1 (metric, the only scale the paper
// defines). OTCA's directions have unit length by default (orthonormal W): the lengths the
// least-squares term of (25) fixes (--normalize metric) measured slightly worse on digits.
// The lengths of the paper's OTCA a_k are recorded in info["direction_norms"] either way.
// The graph is the paper's eq. (4) (the method table's, method_graph): symmetrized kNN with
// k = 5 (§5.2, UCI; the face experiments of §5.3 use 6) and heat weights exp(−‖x_i−x_j‖²/t);
// the paper leaves σ² open, we take t = the mean squared length of the graph's edges.
// --knn/--weight/--sigma-s override it. (SODA's eq. (42) width with s = 10⁻³/k makes the
// graph so narrow — mean degree 0.06 on digits — that the smoothness term (12) vanishes.)
//
// Distribution: every d×d quantity is computed in the d_1-dimensional PCA subspace (Y = XP,
// n×d_1 distributed like X), as local GEMMs plus one MPI_Allreduce. S is never formed:
// Yᵀ S Y = Yᵀ (I+αL)⁻¹ (αL Y), an n_t×n_t system with d_1 right-hand sides (α-dependent:
// it is solved at every α). Up to n_t = kDenseRouteMaxSamples (2000, measured: docs/
// fitting.md) every rank gathers the graph and Y and solves it densely (dposv; the same
// bits on every rank and rank count); beyond, inside a sweep, one block Lanczos recurrence
// on L from Y serves every α (solvers::BlockLanczos, kept in the sweep's cache: the smoothed
// form at σ = 1, τ = α), and a single fit makes d_1 CG solves with I + αL on the distributed
// graph (solvers::solve_columns: lockstep CG, or one KSP with any -tca_ksp_*/-tca_pc_* option), right-hand sides αLY by
// sparse products. -tca_route auto|dense|krylov chooses; info["solver_route"] records the
// route taken, with n_t and the crossover; info["krylov_method"] block_lanczos or cg. M_l, D_l, W^r,
// W^e are never formed either: they act on labeled rows through the c class sums (15).
#include <limits>
#include <petscmat.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "methods/registry.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/solvers/eigen.hpp"
#include "ssdr/solvers/sparse_solve.hpp"
#include "tca_internal.hpp"

namespace ssdr::methods::tca {

// The helpers declared in tca_internal.hpp are used by fit() and by tests/unit/tca_test.cpp.

namespace {

/// Class sums T (c×r, T_k = Σ_{i∈C_k} y_i) and class sizes l_k of the labeled rows Y (l×r,
/// rows distributed, labels local in 0..c−1). Collective (one MPI_Allreduce).
struct ClassSums {
  Dense T;                    // c×r
  std::vector<double> count;  // l_k
  double l = 0;               // Σ l_k
};

ClassSums class_sums(const DistMatrix& Y, const std::vector<int>& labels, int classes) {
  bool ok = static_cast<int64_t>(labels.size()) == Y.n_local;
  for (int y : labels) ok = ok && y >= 0 && y < classes;
  SSDR_CHECK_COLLECTIVE(Y.comm, ok, "tca: labeled rows need one label in 0.." + std::to_string(classes - 1) +
                                        " each (" + std::to_string(labels.size()) + " labels for " +
                                        std::to_string(Y.n_local) + " rows)");
  const int64_t r = Y.cols;
  Dense T(classes, r + 1);  // last column: counts, so one reduction does both
  for (int64_t i = 0; i < Y.n_local; ++i) {
    const int k = labels[static_cast<size_t>(i)];
    for (int64_t j = 0; j < r; ++j) T(k, j) += Y(i, j);
    T(k, r) += 1.0;
  }
  allreduce_sum(T, Y.comm);
  ClassSums s;
  s.T = Dense(classes, r);
  std::copy(T.v.begin(), T.v.begin() + classes * r, s.T.v.begin());
  for (int k = 0; k < classes; ++k) s.count.push_back(T(k, r));
  s.l = std::accumulate(s.count.begin(), s.count.end(), 0.0);
  int present = 0;
  for (double lk : s.count) present += lk > 0;
  SSDR_REQUIRE(present >= 2, "tca: the inter-class graph W^e (eq. 15) needs labeled samples of at least two classes");
  return s;
}

/// Which of the operators of eq. (15)/(18) to apply.
enum class Op { Wr, We, WeT, Ml, Dl };

DistMatrix apply(Op op, const DistMatrix& Y, const std::vector<int>& labels, int classes) {
  const ClassSums s = class_sums(Y, labels, classes);
  const int64_t r = Y.cols;
  // Σ_k T_k/(l − l_k) and Σ_k l_k/(l − l_k) over the classes present (W^eᵀ and D^e).
  std::vector<double> U(static_cast<size_t>(r), 0.0), total(static_cast<size_t>(r), 0.0);
  double u = 0;
  for (int k = 0; k < classes; ++k) {
    if (s.count[static_cast<size_t>(k)] == 0) continue;
    const double inv = 1.0 / (s.l - s.count[static_cast<size_t>(k)]);
    u += s.count[static_cast<size_t>(k)] * inv;
    for (int64_t j = 0; j < r; ++j) {
      U[static_cast<size_t>(j)] += s.T(k, j) * inv;
      total[static_cast<size_t>(j)] += s.T(k, j);
    }
  }
  DistMatrix out = make_dist_like(Y, r);  // every entry set below
  for (int64_t i = 0; i < Y.n_local; ++i) {
    const int k = labels[static_cast<size_t>(i)];
    const double lk = s.count[static_cast<size_t>(k)], inv_e = 1.0 / (s.l - lk);
    const double De = u - lk * inv_e;  // D^e_ii = Σ_j W^e_ji = Σ_{k'≠k} l_k'/(l − l_k')
    for (int64_t j = 0; j < r; ++j) {
      const double y = Y(i, j);
      const double wr = s.T(k, j) / lk;                            // (W^r Y)_i
      const double we = (total[static_cast<size_t>(j)] - s.T(k, j)) * inv_e;  // (W^e Y)_i
      const double wet = U[static_cast<size_t>(j)] - s.T(k, j) * inv_e;      // (W^eᵀ Y)_i
      double v = 0;
      switch (op) {
        case Op::Wr: v = wr; break;
        case Op::We: v = we; break;
        case Op::WeT: v = wet; break;
        case Op::Ml: v = 3.0 * y + De * y + we + wet - 2.0 * wr; break;
        case Op::Dl: v = y + De * y; break;
      }
      out(i, j) = v;
    }
  }
  return out;
}

void symmetrize_average(Dense& A) {
  for (int64_t j = 0; j < A.cols; ++j)
    for (int64_t i = j + 1; i < A.rows; ++i) A(i, j) = A(j, i) = 0.5 * (A(i, j) + A(j, i));
}

}  // namespace

DistMatrix apply_Wr(const DistMatrix& Y, const std::vector<int>& labels, int classes) {
  return apply(Op::Wr, Y, labels, classes);
}
DistMatrix apply_We(const DistMatrix& Y, const std::vector<int>& labels, int classes) {
  return apply(Op::We, Y, labels, classes);
}
DistMatrix apply_WeT(const DistMatrix& Y, const std::vector<int>& labels, int classes) {
  return apply(Op::WeT, Y, labels, classes);
}
DistMatrix apply_Ml(const DistMatrix& Y, const std::vector<int>& labels, int classes) {
  return apply(Op::Ml, Y, labels, classes);
}
DistMatrix apply_Dl(const DistMatrix& Y, const std::vector<int>& labels, int classes) {
  return apply(Op::Dl, Y, labels, classes);
}

Dense smoothness_regularizer(Mat A, const DistMatrix& Y, double alpha,
                             const solvers::SparseSolveOptions& solve, std::vector<int>* iterations) {
  SSDR_REQUIRE(alpha > 0, "tca: --alpha must be positive (got " + std::to_string(alpha) + ")");
  const std::vector<double> D = graph::degrees(A);
  SSDR_CHECK_COLLECTIVE(Y.comm, static_cast<int64_t>(D.size()) == Y.n_local,
                        "tca: samples and graph have different row layouts");
  std::vector<double> diag(D.size()), off(D.size(), -alpha);
  for (size_t i = 0; i < D.size(); ++i) diag[i] = 1.0 + alpha * D[i];
  Owned<Mat> M = graph::diagonal_plus_scaled(A, diag, off);  // I + αL
  // R = αLY = α(D∘Y − AY), column by column.
  DistMatrix R = make_dist_like(Y, Y.cols);
  for (int64_t j = 0; j < Y.cols; ++j) {
    Owned<Vec> y = column_to_vec(Y, j);
    Owned<Vec> Ay;
    SSDR_PETSC(VecDuplicate(y, Ay.out()));
    SSDR_PETSC(MatMult(A, y, Ay));
    vec_to_column(Ay, R, j);
    for (int64_t i = 0; i < Y.n_local; ++i)
      R(i, j) = alpha * (D[static_cast<size_t>(i)] * Y(i, j) - R(i, j));
  }
  solvers::SparseSolveResult z = solvers::solve_columns(M, R, solve);
  if (iterations) *iterations = z.iterations;
  Dense G = transpose_multiply(Y, z.Z);
  symmetrize_average(G);
  return G;
}

std::shared_ptr<solvers::BlockLanczos> smoothness_lanczos(Mat A, const DistMatrix& Y) {
  solvers::BlockLanczosOptions o;
  o.prefix = "tca_";
  // Unit columns: Y's principal components have lengths √λ_j spread over orders of
  // magnitude, and the stopping rule is relative to the whole form's norm (CG's is per column).
  o.unit_columns = true;
  return std::make_shared<solvers::BlockLanczos>(A, graph::degrees(A), Y, o);
}

bool lanczos_route(const DistMatrix& Y, const solvers::SparseSolveOptions& solve) {
  if (solvers::column_route(solve) != solvers::SparseSolveRoute::lockstep) return false;
  return solvers::BlockLanczos::fits(Y.comm, Y.n_local, Y.cols, solve.memory_mib);
}

std::optional<solvers::QuadratureResult> smoothness_regularizer_lanczos(solvers::BlockLanczos& lanczos, double alpha) {
  SSDR_REQUIRE(alpha > 0, "tca: --alpha must be positive (got " + std::to_string(alpha) + ")");
  return lanczos.form(solvers::QuadratureForm::smoothed, 1.0, alpha);
}

Dense smoothness_regularizer_dense(Mat A, const DistMatrix& Y, double alpha) {
  SSDR_REQUIRE(alpha > 0, "tca: --alpha must be positive (got " + std::to_string(alpha) + ")");
  Dense M = dense::gather_graph(A, Y, "tca");  // Aᵀ = A column-major, the same bits everywhere
  const int64_t n = M.rows, r = Y.cols;
  const std::vector<double> D = dense::column_sums(M);  // D_i = Σ_j A_ij, in index order
  const Dense Yg = allgather(Y);  // n×r
  // R = αLY = α(D∘Y − AY): (AY)_i = Σ_j A_ij y_j over the graph's edges of row i, in index
  // order (O(nnz·r), not a dense GEMM's n²r).
  Dense R(n, r);
  {
    std::vector<double> acc(static_cast<size_t>(r));
    for (int64_t i = 0; i < n; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);
      const double* a = M.col(i);
      for (int64_t j = 0; j < n; ++j)
        if (a[j] != 0.0)
          for (int64_t c = 0; c < r; ++c) acc[static_cast<size_t>(c)] += a[j] * Yg(j, c);
      for (int64_t c = 0; c < r; ++c)
        R(i, c) = alpha * (D[static_cast<size_t>(i)] * Yg(i, c) - acc[static_cast<size_t>(c)]);
    }
  }
  // M = I + αL = I + α(D − A), its lower triangle (all dposv reads).
  for (int64_t j = 0; j < n; ++j) {
    double* m = M.col(j);
    for (int64_t i = j; i < n; ++i) m[i] = -alpha * m[i];
    m[j] += 1.0 + alpha * D[static_cast<size_t>(j)];
  }
  if (n > 0 && r > 0) lapack::posv(n, r, M.data(), n, R.data(), n);  // R ← Z = (I + αL)⁻¹ αLY
  Dense G(r, r);
  if (n > 0 && r > 0) blas::gemm('T', 'N', r, r, n, 1.0, Yg.data(), n, R.data(), n, 0.0, G.data(), r);
  symmetrize_average(G);
  return G;
}

Dense pca_basis(const DistMatrix& X, int64_t d1) {
  SSDR_REQUIRE(d1 >= 1 && d1 <= X.cols, "tca: PCA dimension out of range");
  Dense C = transpose_multiply(X, X);
  // Only the d1 leading eigenvectors (dsyevr): at d' = 719, d1 = 40 (COIL-20) a tenth of
  // the full dsyevd's time.
  const int64_t d = X.cols;
  std::vector<double> w(static_cast<size_t>(d1));
  Dense Z(d, d1);
  lapack::syevr(d, C.data(), d, d - d1 + 1, d, w.data(), Z.data(), d);
  Dense P(d, d1);
  for (int64_t j = 0; j < d1; ++j) {
    const double* src = Z.col(d1 - 1 - j);  // descending eigenvalues
    const double sign = largest_magnitude_sign(src, d);
    for (int64_t i = 0; i < d; ++i) P(i, j) = sign * src[i];
  }
  return P;
}

Dense otca_directions(const Dense& H, const Dense& R, int64_t m) {
  const int64_t d1 = H.rows;
  SSDR_REQUIRE(m >= 1 && m <= R.cols && m <= d1,
               "otca: --dim " + std::to_string(m) + " must be between 1 and min(c = " + std::to_string(R.cols) +
                   ", " + std::to_string(d1) + " PCA dimensions)");
  Dense A(d1, m);
  Dense E = Dense::identity(d1);  // E_0 = I
  for (int64_t k = 0; k < m; ++k) {
    const int64_t q = E.cols;  // d1 − k
    // Hk = Eᵀ H E, rk = Eᵀ R_{·k}
    Dense HE(d1, q), Hk(q, q);
    blas::gemm('N', 'N', d1, q, d1, 1.0, H.data(), d1, E.data(), d1, 0.0, HE.data(), d1);
    blas::gemm('T', 'N', q, q, d1, 1.0, E.data(), d1, HE.data(), d1, 0.0, Hk.data(), q);
    symmetrize_average(Hk);
    std::vector<double> b(static_cast<size_t>(q));
    blas::gemm('T', 'N', q, 1, d1, 1.0, E.data(), d1, R.col(k), d1, 0.0, b.data(), q);
    Dense chol = Hk;
    SSDR_REQUIRE(lapack::potrf(q, chol.data(), q),
                 "otca: Z S Z' + beta Zl Ml Zl' + gamma Zl Zl' (eq. 27) is not positive definite; increase --gamma");
    lapack::posv(q, 1, Hk.data(), q, b.data(), q);
    blas::gemm('N', 'N', d1, 1, q, 1.0, E.data(), d1, b.data(), q, 0.0, A.col(k), d1);
    if (k + 1 < m) {
      // Full QR of A_k = [a_1 … a_{k+1}] (d1×(k+1)): Q = [Q_1 Q_2], E = Q_2, eq. (24).
      Dense Q(d1, d1);
      std::copy(A.v.begin(), A.v.begin() + d1 * (k + 1), Q.v.begin());
      lapack::full_qr(d1, k + 1, Q.data(), d1);
      E = Dense(d1, d1 - (k + 1));
      std::copy(Q.v.begin() + d1 * (k + 1), Q.v.end(), E.v.begin());
    }
  }
  return A;
}

namespace {

/// The d1×d1 matrices of (21) and (26)–(27), with E_0 = I, in the PCA subspace of Step 4.
struct Problem {
  Dense P;      // d'×d1 (identity when d' ≤ l)
  Dense XSX;    // Pᵀ X S Xᵀ P, eq. (12)
  Dense XMX;    // Pᵀ X_l M_l X_lᵀ P, eq. (19)
  Dense XDX;    // Pᵀ X_l D_l X_lᵀ P, eq. (20) constraint
  Dense XX;     // Pᵀ X_l X_lᵀ P (OTCA's γ term)
  Dense XY;     // Pᵀ X_l Y, d1×c (OTCA's least-squares term)
  int64_t l = 0, d1 = 0;
};

Problem build_problem(const TrainingData& data, const graph::GraphOptions& go, double alpha, Timings& t,
                      nlohmann::json& info) {
  Problem pb;
  const DistMatrix& X = data.X.doubles();
  const int c = data.classes;
  graph::Graph g = knn_graph(data, go, t);  // eq. (4) on all transductive samples
  graph_info(g, go, info);

  Phase phase("scatter", &t);
  LabeledPart lp = labeled_part(data);
  pb.l = lp.X.n_global;
  SSDR_REQUIRE(pb.l >= 2, "tca: needs at least two labeled samples");
  // Step 4: PCA to d1 = min(d', l) dimensions when d' > l.
  const bool use_pca = X.cols > pb.l;
  pb.d1 = use_pca ? pb.l : X.cols;
  pb.P = use_pca ? pca_basis(X, pb.d1) : Dense::identity(X.cols);
  info["pca_step"] = use_pca;
  info["pca_dim"] = pb.d1;
  info["labeled"] = pb.l;
  DistMatrix Y = use_pca ? multiply(X, pb.P) : X;
  DistMatrix Yl = use_pca ? multiply(lp.X, pb.P) : lp.X;

  pb.XMX = transpose_multiply(Yl, apply_Ml(Yl, lp.labels, c));
  pb.XDX = transpose_multiply(Yl, apply_Dl(Yl, lp.labels, c));
  symmetrize_average(pb.XMX);
  symmetrize_average(pb.XDX);
  pb.XX = transpose_multiply(Yl, Yl);
  pb.XY = Dense(pb.d1, c);
  {
    const ClassSums s = class_sums(Yl, lp.labels, c);
    for (int k = 0; k < c; ++k)
      for (int64_t j = 0; j < pb.d1; ++j) pb.XY(j, k) = s.T(k, j);
    std::vector<int64_t> counts;
    for (double v : s.count) counts.push_back(static_cast<int64_t>(v));
    info["labeled_per_class"] = counts;
  }
  phase.stop();

  // X S Xᵀ, eq. (12): the n_t×n_t system (I + αL)Z = αLY solved densely up to the crossover,
  // by CG beyond it (or as -tca_route says).
  const Route route = route_option("tca_");
  const bool dense = dense_route(route, Y.n_global);
  info["solver_route"] = dense ? "dense" : "krylov";
  info["solver_route_size"] = Y.n_global;
  info["solver_route_crossover"] = kDenseRouteMaxSamples;
  info["solver_route_option"] = to_string(route);
  Phase solve_phase(dense ? "dense_solve" : "sparse_solve", &t);
  if (dense) {
    pb.XSX = smoothness_regularizer_dense(g.A, Y, alpha);
  } else {
    solvers::SparseSolveOptions so;
    so.prefix = "tca_";  // -tca_ksp_type, -tca_pc_type, ... (TCA and OTCA alike)
    // In a sweep (data.cache): block Lanczos on L from Y, one recurrence for every α (kept
    // in the cache under the graph, the rows and the PCA width). A single fit, or when the
    // user configured the KSP (-tca_ksp_*), the block is too wide or the recurrence breaks
    // down: CG on the columns in lockstep, faster for one α. Fashion-MNIST (n_t = 13 800,
    // 200 columns, 2 ranks): one fit's solve at α = 16 takes 4.6 s by Lanczos (41 steps)
    // against 2.3 s by CG, while a sweep over α = 0.25, 1, 4, 16 takes 1.7 s then 1.0–1.3 s
    // per α against CG's 0.9 s then 2.3 s. The two routes agree within CG's tolerance
    // (the sweep's and a single fit's accuracies there are the same), not bit for bit.
    std::optional<solvers::QuadratureResult> q;
    if (data.cache != nullptr && lanczos_route(Y, so)) {
      const QuadratureKey key = quadrature_key(resolved_graph_key(data, go), data.features,
                                               use_pca ? "tca_pca" : "tca_rows", pb.d1);
      std::shared_ptr<solvers::BlockLanczos> lz = block_lanczos(data, key, [&] { return smoothness_lanczos(g.A, Y); });
      q = smoothness_regularizer_lanczos(*lz, alpha);
      if (!q) info["lanczos_breakdown"] = lz->why();
    }
    if (q) {
      pb.XSX = std::move(q->form);
      info["krylov_method"] = "block_lanczos";
      info["lanczos_steps"] = q->steps;
      info["lanczos_new_steps"] = q->new_steps;
      info["lanczos_error_bound"] = q->bound;
    } else {
      std::vector<int> its;
      pb.XSX = smoothness_regularizer(g.A, Y, alpha, so, &its);
      info["krylov_method"] = "cg";
      info["cg_iterations_total"] = std::accumulate(its.begin(), its.end(), 0L);
      info["cg_iterations_max"] = its.empty() ? 0 : *std::max_element(its.begin(), its.end());
      info["cg_route"] = solvers::route_name(solvers::column_route(so));  // lockstep, or ksp given -tca_ksp_*/-tca_pc_*
    }
  }
  return pb;
}

/// P·A (d'×d1 · d1×m).
Dense lift(const Dense& P, const Dense& A) {
  Dense U(P.rows, A.cols);
  blas::gemm('N', 'N', P.rows, A.cols, P.cols, 1.0, P.data(), P.rows, A.data(), A.rows, 0.0, U.data(), U.rows);
  return U;
}

/// TCA, Table 1: the m smallest generalized eigenvectors of (21) in the PCA subspace.
/// Defaults (tca-liu2008 §5.1): α = 10, β = 6; m = c − 1. Columns scaled by the constraint
/// of (20) (metric) unless o.normalization_given, then as o.normalization says.
class Tca final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const double alpha = or_default(o.alpha, 10.0), beta = or_default(o.beta, 6.0);
    SSDR_REQUIRE(beta > 0, "tca: --beta must be positive (got " + std::to_string(beta) + ")");
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    FitResult out;
    out.info["alpha"] = alpha;
    out.info["beta"] = beta;
    out.info["dim"] = m;
    Problem pb = build_problem(data, method_graph(row, o), alpha, t, out.info);
    SSDR_REQUIRE(m <= pb.d1, "tca: --dim " + std::to_string(m) + " exceeds the " + std::to_string(pb.d1) +
                                 " dimensions of the PCA step (at most the number of labeled samples)");
    Phase phase("eigensolve", &t);
    Dense A = pb.XSX;  // X S Xᵀ + β X_l M_l X_lᵀ
    for (size_t i = 0; i < A.v.size(); ++i) A.v[i] += beta * pb.XMX.v[i];
    Dense chol = pb.XDX;
    SSDR_REQUIRE(lapack::potrf(chol.rows, chol.data(), chol.rows),
                 "tca: X_l D_l X_l' (eq. 21) is singular: the labeled samples do not span the PCA subspace");
    auto e = solvers::sym_eigen(A, &pb.XDX, m, solvers::Which::smallest, o.eigen_prefix, data.X.comm);
    // a_iᵀ X_l D_l X_lᵀ a_i = 1 (metric) or ‖a_i‖ = 1, which P's orthonormal columns keep.
    out.normalization = scale_generalized_eigenvectors(
        e.vectors, o.normalization_given ? o.normalization : Normalization::metric, "tca", out.info);
    out.W = lift(pb.P, e.vectors);  // U = P[a_1 … a_m]
    out.info["eigenvalues"] = e.values;
    return out;
  }
};

/// OTCA, §4: c orthogonal directions by the recursion (23)–(27). Their lengths, by
/// o.normalization: unit (the default: orthonormal W) or metric (the lengths the
/// least-squares term of (25) fixes, the paper's own); unit measured better on digits
/// (5 labeled per class, half transductive, 10 splits: 66.1 % vs 65.1 % unlabeled,
/// 63.4 % vs 63.0 % unseen). The paper's lengths are recorded as "direction_norms" either way.
/// Defaults (tca-liu2008 §5.1): α = 4, β = 10, γ = 10⁻³; m = c (one direction per class).
class Otca final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const double alpha = or_default(o.alpha, 4.0), beta = or_default(o.beta, 10.0),
                 gamma = o.own_number("gamma", 1e-3);
    SSDR_REQUIRE(beta > 0, "otca: --beta must be positive (got " + std::to_string(beta) + ")");
    SSDR_REQUIRE(gamma > 0, "otca: --gamma must be positive (got " + std::to_string(gamma) + ")");
    // m = c by default, at most d' (one direction per class, each orthogonal to the others).
    const int64_t m = o.dim > 0 ? o.dim : std::min<int64_t>(data.classes, data.X.cols);
    SSDR_REQUIRE(m <= data.classes, "otca: --dim " + std::to_string(m) + " exceeds the number of classes " +
                                        std::to_string(data.classes) + " (one direction per class, eq. 25)");
    FitResult out;
    out.info["alpha"] = alpha;
    out.info["beta"] = beta;
    out.info["gamma"] = gamma;
    out.info["dim"] = m;
    Problem pb = build_problem(data, method_graph(row, o), alpha, t, out.info);
    Phase phase("eigensolve", &t);
    Dense H = pb.XSX;
    for (size_t i = 0; i < H.v.size(); ++i) H.v[i] += beta * pb.XMX.v[i] + gamma * pb.XX.v[i];
    Dense Adir = otca_directions(H, pb.XY, m);
    std::vector<double> norms;
    for (int64_t k = 0; k < m; ++k) {
      double s = 0;
      for (int64_t i = 0; i < Adir.rows; ++i) s += Adir(i, k) * Adir(i, k);
      norms.push_back(std::sqrt(s));
    }
    out.normalization = o.normalization;
    if (out.normalization == Normalization::unit) normalize_columns_to_unit_length(Adir, "otca");
    out.W = lift(pb.P, Adir);  // P has orthonormal columns: W's columns are orthogonal (22)
    out.info["direction_norms"] = norms;
    out.info["normalization"] = to_string(out.normalization);
    return out;
  }
};

}  // namespace

graph::GraphOptions tca_graph() {
  graph::GraphOptions g;
  g.k = 5;
  g.weight = graph::EdgeWeight::heat;
  g.sigma_rule = graph::SigmaRule::mean_edge_dist2;
  return g;
}

}  // namespace ssdr::methods::tca

/// tca-liu2008: TCA and OTCA.
SSDR_METHOD_FAMILY(tca) {
  using namespace ssdr::methods;
  return {30,
          {
              MethodRow("tca", "transductive component analysis (not transfer component analysis)",
                        "tca-liu2008 eq. (4), (10)-(21)", true, true, &make_method<tca::Tca>)
                  .parameters({"knn", "weight", "sigma_s", "alpha", "beta"}).graph(tca::tca_graph()).nested().row(),
              MethodRow("otca", "orthogonal transductive component analysis (recursive complement)",
                        "tca-liu2008 eq. (4), (23)-(27)", true, true, &make_method<tca::Otca>)
                  .parameters({"knn", "weight", "sigma_s", "alpha", "beta", "gamma"}).graph(tca::tca_graph()).row(),
          },
          {
              family_number("gamma", "gamma", "OTCA ridge on the labeled samples (tca-liu2008 eq. (27); sec. 5.1: 1e-3)",
                            ParameterKind::real, 0, false, std::numeric_limits<double>::infinity(), false, "default"),
          }};
}
