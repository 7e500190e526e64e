// SL-LDA, soft-label LDA (sllda-zhao2014), and its weighted least-squares solution.
//
// Both methods share the first two stages:
//   1. the normalized symmetric reconstruction graph W̃ of Table 1 (graph/lnp.hpp: eq. (2)
//      weights on the k nearest neighbors of the row's graph (method_lnp_graph: k = 8, r =
//      10⁻³ unless --knn), (W+Wᵀ)/2, D^{-1/2}·W·D^{-1/2});
//   2. label propagation with the outlier class, eq. (3)–(5), F = I_β Y (I − P I_α)⁻¹ with
//      P the row normalization of W̃ (propagation::propagate, prefix o.propagation.prefix,
//      α_l = 0, α_u = 0.99 by default).
// sl-lda then solves the GEVD (15)  S̃b v = λ (S̃t + αI) v  for the m = c−1 largest λ.
// sl-lda-wls solves the regularized weighted least squares (16)/(19) with PETSc's LSQR
// (matrix-free on the distributed X, column-scaled, all classes in one solve; see WlsOperator).
//
// Normalization. ssdr's soft scatter matrices (scatter::soft_scatter) are the paper's (11)–(13)
// divided by ñ = Σ_j E_jj = Σ_{i≤c} Σ_j f_ij (the paper's sums are not normalized). Both α
// below are relative to tr(S̃t)/d', so they do not depend on that factor.
//
// Column lengths. The GEVD (15) fixes no scale. sl-lda returns unit-length columns by
// default, the convention of the LDA code the paper's experiments compare with
// (o.normalization, --normalize); with --normalize metric the columns are B-orthonormal in
// ssdr's normalization (Vᵀ(S̃t + αI)V = I), i.e. √ñ times the paper's. --eigenvalue-scaling
// always starts from the B-orthonormal V (it rejects an explicit --normalize unit), so that
// W = V Λ^{1/2} is the least-squares embedding below.
//
// Theorem 3 of the paper (V Vᵀ = V_WLS V_WLSᵀ) holds only for the eigenvector scaling of
// Theorem 2, V = V_WLS U, for which Vᵀ(S̃t + αI)V = Λ (paper's normalization), neither for
// the B-orthonormal V a GEVD returns nor for unit-length columns. With the B-orthonormal V
// the identity that holds is
//      V Λ Vᵀ = ñ · V_WLS V_WLSᵀ      (ssdr normalization, the same relative α > 0),
// exactly (up to solver tolerances) when m ≥ rank(S̃b) = c−1, i.e. every eigenvector with a
// non-zero eigenvalue is kept: with B = S̃t + αI (ssdr's), V Λ Vᵀ = B⁻¹S̃bB⁻¹ (from
// S̃b = B V Λ Vᵀ B and V Vᵀ = B⁻¹ over all d' eigenpairs), and B⁻¹S̃bB⁻¹ = ñ·V_WLS V_WLSᵀ.
// Hence sl-lda with --eigenvalue-scaling (W = V Λ^{1/2}) and sl-lda-wls give the same 1-NN
// results; for m < c−1 they differ.
#include <cmath>
#include <limits>

#include "methods/registry.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/graph/lnp.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "ssdr/solvers/eigen.hpp"

namespace ssdr::methods {

namespace {

constexpr double kDefaultAlpha = 1e-3;           ///< α = 1e-3·tr(S̃t)/d' (relative)

/// Stages 1–2: the LNP graph (timed "knn_graph") and the soft labels (timed "propagation"),
/// both kept in the sweep's cache (a sweep's other α, α_u and m reuse them); `key` is the
/// scatter matrices' cache key (the propagation's and X's features); `options` the graph's.
struct SoftLabels {
  graph::LnpOptions options;
  graph::LnpGraph g;
  propagation::PropagationResult lp;
  ScatterKey key;
};

SoftLabels lnp_and_propagation(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) {
  SoftLabels s;
  s.options = method_lnp_graph(row, o);  // sl-lda's or sl-lda-wls's row
  // The LNP graph is built on X itself: its key names X's features.
  s.g = lnp_graph(data, s.options, t);
  const LnpKey gkey = lnp_key(s.options, data.features);
  s.lp = lnp_propagation(data, gkey, s.g.W, o, t);
  s.key = scatter_key(propagation_key(gkey, o.propagation), data.features);
  return s;
}

/// soft_scatter of the SL-LDA soft labels, cached by their propagation's key. Collective.
std::shared_ptr<const scatter::ScatterMatrices> sl_scatter(const TrainingData& data, const SoftLabels& s, Timings& t) {
  return soft_scatter(data, s.lp.F, s.key, t);
}

void soft_label_info(const SoftLabels& s, const MethodOptions& o, nlohmann::json& info) {
  info["graph"] = "lnp";
  info["k"] = s.options.k;
  info["knn_method"] = graph::to_string(s.g.knn_method);
  info["knn_recall"] = std::isnan(s.g.knn_recall) ? nlohmann::json(nullptr) : nlohmann::json(s.g.knn_recall);
  info["reconstruction_regularization"] = s.options.regularization;
  info["graph_edges"] = s.g.edges;
  info["max_nnls_iterations"] = s.g.max_nnls_iterations;
  info["alpha_l"] = o.propagation.alpha_labeled;
  info["alpha_u"] = o.propagation.alpha_unlabeled;
  info["propagation_iterations"] = s.lp.iterations;
  info["propagation_solver"] = s.lp.solver;
}

/// α relative to tr(S̃t)/d': --alpha (default 1e-3) times tr(S̃t)/d'.
double relative_alpha(const MethodOptions& o) {
  const double a = or_default(o.alpha, kDefaultAlpha);
  SSDR_REQUIRE(std::isfinite(a) && a >= 0,
               "--alpha " + std::to_string(a) + " (SL-LDA, relative to tr(St)/d) must be non-negative");
  return a;
}

/// SL-LDA, eq. (15): S̃b v = λ (S̃t + αI) v, the m largest, α = a·tr(S̃t)/d'. Columns of unit
/// length (o.normalization = unit, the default) or B-orthonormal (metric); with
/// o.own_flag("eigenvalue_scaling", false), W = V Λ^{1/2} with the B-orthonormal V (metric is implied; an
/// explicit unit is an error).
class SlLda final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t d = data.X.cols;
    const int64_t m = resolve_dim(o.dim, data.classes, d);
    const double a = relative_alpha(o);
    SSDR_REQUIRE(!(o.own_flag("eigenvalue_scaling", false) && o.normalization_given && o.normalization == Normalization::unit),
                 "--eigenvalue-scaling: expected --normalize metric (V Lambda^(1/2) is the least-squares "
                 "embedding only for V'(St + alpha I)V = I), got --normalize unit");
    SoftLabels s = lnp_and_propagation(row, data, o, t);
    const std::shared_ptr<const scatter::ScatterMatrices> shared = sl_scatter(data, s, t);
    const scatter::ScatterMatrices& S = *shared;
    Phase phase("eigensolve", &t);
    const double alpha = a * trace(S.St) / static_cast<double>(d);
    FitResult out;
    const std::vector<double> lambda = largest_generalized_eigenvectors(
        S.Sb, add_identity(S.St, alpha), m, o.own_flag("eigenvalue_scaling", false) ? Normalization::metric : o.normalization, "sl-lda",
        o.eigen_prefix, data.X.comm, out, &S.Sb_factor);
    if (o.own_flag("eigenvalue_scaling", false))
      for (int64_t j = 0; j < m; ++j) {
        const double f = std::sqrt(std::max(lambda[static_cast<size_t>(j)], 0.0));
        for (int64_t i = 0; i < d; ++i) out.W(i, j) *= f;
      }
    soft_label_info(s, o, out.info);
    out.info["alpha_relative"] = a;
    out.info["alpha"] = alpha;
    out.info["dim"] = m;
    out.info["eigenvalue_scaling"] = o.own_flag("eigenvalue_scaling", false);
    out.info["n_tilde"] = S.n_tilde;
    out.info["class_weights"] = S.class_weights;
    out.soft_labels = soft_labels(s.lp, data);
    return out;
  }
};

/// The weighted least-squares problem of eq. (16) with b eliminated, in ssdr's 1/ñ
/// normalization, for all c class columns at once, column-scaled, as a MATSHELL over the
/// distributed X. For one class the operator is
///   A = [ diag(s) (X − 1 x̃ᵀ) ; √α I ] D⁻¹,   s_j = √(E_jj/ñ),   D = diag(√(diag(S̃t) + α)),
/// so (AD)ᵀ(AD) = S̃t + αI; the column scaling D (Jacobi on the normal equations) makes the
/// PCA-ordered columns comparable and cuts LSQR's iterations several-fold; v = D⁻¹v'.
/// The c classes are stacked block-diagonally, diag(A, …, A) (c(n+d) × cd), so one LSQR
/// iteration costs one GEMM pass over X for all classes (the blocks share LSQR's scalars;
/// the solution is the same, each block being an independent least-squares problem).
/// Layouts: unknowns v' (c·d, class-major: index i·d + t) in the block layout of c·d;
/// rows of this rank: its c·n_local sample rows (class-major: i·n_local + j), then its
/// share of the c·d regularization rows (the same share as its unknowns).
struct WlsOperator {
  const DistMatrix* X = nullptr;
  int c = 0;
  std::vector<double> s;       ///< n_local weights √(E_jj/ñ)
  std::vector<double> mean;    ///< x̃ (d), weighted by E_jj
  std::vector<double> dinv;    ///< D⁻¹ (d)
  double sqrt_alpha = 0;
  Layout vl;                   ///< block layout of c·d
  std::vector<int> counts, displs;  ///< of v' over the ranks
  std::vector<double> full;    ///< scratch: D⁻¹v' as d×c column-major
  std::vector<double> work;    ///< scratch
};

PetscErrorCode wls_mult(Mat A, Vec v, Vec y) {
  PetscFunctionBeginUser;
  WlsOperator* op = nullptr;
  PetscCall(MatShellGetContext(A, &op));
  const DistMatrix& X = *op->X;
  const int64_t d = X.cols, nl = X.n_local, c = op->c;
  const PetscScalar* pv = nullptr;
  PetscCall(VecGetArrayRead(v, &pv));
  MPI_Allgatherv(pv, static_cast<int>(op->vl.n_local), MPI_DOUBLE, op->full.data(), op->counts.data(),
                 op->displs.data(), MPI_DOUBLE, X.comm);
  for (int64_t i = 0; i < c; ++i)
    for (int64_t t = 0; t < d; ++t) op->full[static_cast<size_t>(i * d + t)] *= op->dinv[static_cast<size_t>(t)];
  PetscScalar* py = nullptr;
  PetscCall(VecGetArray(y, &py));
  // Yᵀ = Vᵀ Xᵀ (c × n_local), minus x̃ᵀv_i, times s_j.
  op->work.assign(static_cast<size_t>(c * nl), 0.0);
  if (nl > 0) blas::gemm('T', 'N', c, nl, d, 1.0, op->full.data(), d, X.v.data(), d, 0.0, op->work.data(), c);
  for (int64_t i = 0; i < c; ++i) {
    double shift = 0;
    for (int64_t t = 0; t < d; ++t) shift += op->mean[static_cast<size_t>(t)] * op->full[static_cast<size_t>(i * d + t)];
    for (int64_t j = 0; j < nl; ++j)
      py[i * nl + j] = op->s[static_cast<size_t>(j)] * (op->work[static_cast<size_t>(i + j * c)] - shift);
  }
  for (int64_t q = 0; q < op->vl.n_local; ++q) {
    const int64_t g = op->vl.start + q;
    py[c * nl + q] = op->sqrt_alpha * op->full[static_cast<size_t>(g)];
  }
  PetscCall(VecRestoreArray(y, &py));
  PetscCall(VecRestoreArrayRead(v, &pv));
  PetscFunctionReturn(0);
}

PetscErrorCode wls_mult_transpose(Mat A, Vec u, Vec y) {
  PetscFunctionBeginUser;
  WlsOperator* op = nullptr;
  PetscCall(MatShellGetContext(A, &op));
  const DistMatrix& X = *op->X;
  const int64_t d = X.cols, nl = X.n_local, c = op->c;
  const PetscScalar* pu = nullptr;
  PetscCall(VecGetArrayRead(u, &pu));
  // G_i = Σ_j s_j u_ij (x_j − x̃) = Xᵀ(s∘u_i) − x̃ Σ_j s_j u_ij, summed over the ranks.
  op->work.assign(static_cast<size_t>(c * nl), 0.0);
  std::vector<double> g(static_cast<size_t>(c * d + c), 0.0);
  for (int64_t i = 0; i < c; ++i)
    for (int64_t j = 0; j < nl; ++j) {
      const double su = op->s[static_cast<size_t>(j)] * pu[i * nl + j];
      op->work[static_cast<size_t>(i * nl + j)] = su;
      g[static_cast<size_t>(c * d + i)] += su;
    }
  if (nl > 0) blas::gemm('N', 'N', d, c, nl, 1.0, X.v.data(), d, op->work.data(), nl, 0.0, g.data(), d);
  MPI_Allreduce(MPI_IN_PLACE, g.data(), static_cast<int>(g.size()), MPI_DOUBLE, MPI_SUM, X.comm);
  PetscScalar* py = nullptr;
  PetscCall(VecGetArray(y, &py));
  for (int64_t q = 0; q < op->vl.n_local; ++q) {
    const int64_t gi = op->vl.start + q, i = gi / d, t = gi % d;
    const double r = g[static_cast<size_t>(gi)] - op->mean[static_cast<size_t>(t)] * g[static_cast<size_t>(c * d + i)] +
                     op->sqrt_alpha * pu[c * nl + q];
    py[q] = op->dinv[static_cast<size_t>(t)] * r;
  }
  PetscCall(VecRestoreArray(y, &py));
  PetscCall(VecRestoreArrayRead(u, &pu));
  PetscFunctionReturn(0);
}

/// SL-LDA by weighted least squares, eq. (16)/(19): V_WLS = (S̃t + αI)⁻¹ H̃b with the class
/// indicator (20) t_ij = f_ij/(E_jj √ñ_i), all classes in one LSQR solve (KSP prefix "wls_",
/// rtol 1e-12; -wls_ksp_type cgls or lsqr). V_WLS is d'×c of rank ≤ c−1 (H̃b's columns
/// √ñ_i(x̃_i − x̃) are dependent: Σ_i √ñ_i·H̃b_i = 0); W is its principal form P Σ (thin SVD
/// V_WLS = P Σ Qᵀ), the first m columns, so W Wᵀ = V_WLS V_WLSᵀ for m ≥ c−1 and the 1-NN
/// distances are those of V_WLS itself. o.normalization does not apply: the least-squares
/// problem fixes the scale (recorded as metric).
class SlLdaWls final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const DistMatrix& X = data.X.doubles();
    MPI_Comm comm = X.comm;
    const int64_t d = X.cols, nl = X.n_local;
    const int c = data.classes;
    const int64_t m = resolve_dim(o.dim, c, d);
    SSDR_REQUIRE(m <= c, "--dim " + std::to_string(m) + " exceeds the " + std::to_string(c) +
                             " columns of the SL-LDA least-squares solution");
    const double a = relative_alpha(o);
    SoftLabels s = lnp_and_propagation(row, data, o, t);
    const DistMatrix& F = s.lp.F;

    // E_jj = Σ_{i≤c} f_ij, ñ_i, ñ, x̃ (weighted by E) and diag(S̃t): O(n·d), no d×d matrix.
    WlsOperator op;
    op.X = &X;
    op.c = c;
    std::vector<double> class_weights(static_cast<size_t>(c), 0.0);
    double n_tilde = 0, alpha = 0;
    {
      Phase phase("scatter", &t);
      std::vector<double> E(static_cast<size_t>(nl), 0.0);
      std::vector<double> red(static_cast<size_t>(c + d), 0.0);  // [ñ_i | Σ_j E_jj x_j]
      for (int64_t j = 0; j < nl; ++j) {
        for (int i = 0; i < c; ++i) {
          E[static_cast<size_t>(j)] += F(j, i);
          red[static_cast<size_t>(i)] += F(j, i);
        }
        for (int64_t q = 0; q < d; ++q) red[static_cast<size_t>(c + q)] += E[static_cast<size_t>(j)] * X(j, q);
      }
      MPI_Allreduce(MPI_IN_PLACE, red.data(), static_cast<int>(red.size()), MPI_DOUBLE, MPI_SUM, comm);
      for (int i = 0; i < c; ++i) {
        class_weights[static_cast<size_t>(i)] = red[static_cast<size_t>(i)];
        n_tilde += red[static_cast<size_t>(i)];
        SSDR_REQUIRE(red[static_cast<size_t>(i)] > 0,
                     "sl-lda-wls: class " + std::to_string(i) + " has zero total soft-label weight");
      }
      op.mean.assign(red.begin() + c, red.end());
      for (double& v : op.mean) v /= n_tilde;
      std::vector<double> diag(static_cast<size_t>(d), 0.0);  // ñ·diag(S̃t)
      op.s.resize(static_cast<size_t>(nl));
      for (int64_t j = 0; j < nl; ++j) {
        const double e = std::max(E[static_cast<size_t>(j)], 0.0);
        for (int64_t q = 0; q < d; ++q) {
          const double y = X(j, q) - op.mean[static_cast<size_t>(q)];
          diag[static_cast<size_t>(q)] += e * y * y;
        }
        op.s[static_cast<size_t>(j)] = std::sqrt(e / n_tilde);
      }
      MPI_Allreduce(MPI_IN_PLACE, diag.data(), static_cast<int>(d), MPI_DOUBLE, MPI_SUM, comm);
      double tr = 0;
      for (double& v : diag) tr += (v /= n_tilde);
      alpha = a * tr / static_cast<double>(d);
      SSDR_REQUIRE(alpha > 0, "sl-lda-wls: alpha must be positive (the least-squares problem is rank-deficient)");
      op.sqrt_alpha = std::sqrt(alpha);
      op.dinv.resize(static_cast<size_t>(d));
      for (int64_t q = 0; q < d; ++q) op.dinv[static_cast<size_t>(q)] = 1.0 / std::sqrt(diag[static_cast<size_t>(q)] + alpha);
      op.vl = block_layout(c * d, comm);
      int size = 1;
      MPI_Comm_size(comm, &size);
      op.counts.resize(static_cast<size_t>(size));
      op.displs.resize(static_cast<size_t>(size));
      const int mine[2] = {static_cast<int>(op.vl.n_local), static_cast<int>(op.vl.start)};
      std::vector<int> all(2 * static_cast<size_t>(size));
      MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm);
      for (int r = 0; r < size; ++r) {
        op.counts[static_cast<size_t>(r)] = all[2 * static_cast<size_t>(r)];
        op.displs[static_cast<size_t>(r)] = all[2 * static_cast<size_t>(r) + 1];
      }
      op.full.assign(static_cast<size_t>(c * d), 0.0);
    }

    // The solve stage is timed under the report's "eigensolve" key (the CLI reports a fixed
    // set of stage names); it is LSQR here.
    Phase phase("eigensolve", &t);
    const PetscInt rows_local = static_cast<PetscInt>(c * nl + op.vl.n_local);
    Owned<Mat> A;
    SSDR_PETSC(MatCreateShell(comm, rows_local, static_cast<PetscInt>(op.vl.n_local), PETSC_DETERMINE,
                              static_cast<PetscInt>(c * d), &op, A.out()));
    SSDR_PETSC(MatShellSetOperation(A, MATOP_MULT, reinterpret_cast<void (*)(void)>(wls_mult)));
    SSDR_PETSC(MatShellSetOperation(A, MATOP_MULT_TRANSPOSE, reinterpret_cast<void (*)(void)>(wls_mult_transpose)));
    Owned<KSP> ksp;
    SSDR_PETSC(KSPCreate(comm, ksp.out()));
    SSDR_PETSC(KSPSetOptionsPrefix(ksp, "wls_"));
    SSDR_PETSC(KSPSetOperators(ksp, A, A));
    SSDR_PETSC(KSPSetType(ksp, KSPLSQR));
    PC pc;
    SSDR_PETSC(KSPGetPC(ksp, &pc));
    SSDR_PETSC(PCSetType(pc, PCNONE));
    SSDR_PETSC(KSPSetTolerances(ksp, 1e-12, PETSC_DEFAULT, PETSC_DEFAULT, std::max<PetscInt>(1000, 10 * d)));
    SSDR_PETSC_OPTIONS(KSPSetFromOptions(ksp));

    Owned<Vec> v, rhs;
    SSDR_PETSC(MatCreateVecs(A, v.out(), rhs.out()));
    {
      // b = [s∘t_i for every class i; 0], s_j t_ij = f_ij/(√(E_jj ñ) √ñ_i) = f_ij/(s_j ñ √ñ_i)
      // (0 when E_jj = 0).
      PetscScalar* pb = nullptr;
      SSDR_PETSC(VecGetArray(rhs, &pb));
      for (int i = 0; i < c; ++i) {
        const double root = std::sqrt(class_weights[static_cast<size_t>(i)]);
        for (int64_t j = 0; j < nl; ++j) {
          const double sj = op.s[static_cast<size_t>(j)];
          pb[i * nl + j] = sj > 0 ? F(j, i) / (sj * n_tilde * root) : 0.0;
        }
      }
      for (int64_t q = 0; q < op.vl.n_local; ++q) pb[c * nl + q] = 0.0;
      SSDR_PETSC(VecRestoreArray(rhs, &pb));
    }
    SSDR_PETSC(VecSet(v, 0.0));
    SSDR_PETSC(KSPSolve(ksp, rhs, v));
    KSPConvergedReason reason;
    PetscInt its = 0;
    SSDR_PETSC(KSPGetConvergedReason(ksp, &reason));
    SSDR_PETSC(KSPGetIterationNumber(ksp, &its));
    SSDR_REQUIRE(reason > 0, "sl-lda-wls: LSQR (prefix wls_) did not converge (reason " +
                                 std::to_string(static_cast<int>(reason)) + " after " + std::to_string(its) +
                                 " iterations)");  // the KSP reason is the same on every rank
    const std::vector<double> vs = vec_allgather(v);
    Dense V(d, c);
    for (int i = 0; i < c; ++i)
      for (int64_t q = 0; q < d; ++q) V(q, i) = op.dinv[static_cast<size_t>(q)] * vs[static_cast<size_t>(i * d + q)];

    // Principal form: V_WLS = P Σ Qᵀ, W = (P Σ)[:, :m].
    const int64_t r = std::min<int64_t>(d, c);
    Dense P(d, r), Qt(r, c);
    std::vector<double> sigma(static_cast<size_t>(r));
    Dense Vc = V;
    lapack::gesvd(d, c, Vc.data(), d, sigma.data(), P.data(), d, Qt.data(), r);
    FitResult out;
    out.W = Dense(d, m);
    for (int64_t j = 0; j < m; ++j)
      for (int64_t q = 0; q < d; ++q) out.W(q, j) = P(q, j) * sigma[static_cast<size_t>(j)];
    canonicalize_signs(out.W);
    out.normalization = Normalization::metric;  // the least-squares solution's own scale
    soft_label_info(s, o, out.info);
    out.info["alpha_relative"] = a;
    out.info["alpha"] = alpha;
    out.info["dim"] = m;
    out.info["n_tilde"] = n_tilde;
    out.info["class_weights"] = class_weights;
    out.info["singular_values"] = sigma;
    out.info["lsqr_iterations"] = static_cast<int>(its);
    out.soft_labels = soft_labels(s.lp, data);
    return out;
  }
};

/// sllda-zhao2014 Table 1: the LNP reconstruction graph on k = 8 neighbours (the paper does
/// not state k; SODA's), regularized by r = 10⁻³·tr(G)/k in eq. (2).
graph::LnpOptions sllda_graph() {
  graph::LnpOptions g;
  g.k = 8;
  g.regularization = 1e-3;
  return g;
}

/// sllda-zhao2014 sec. 5 cross-validates the balancing parameter over λ ∈ {10⁻⁹, 10⁻⁶, 10⁻³,
/// 1, 10³, 10⁶, 10⁹} (α_j of eq. (3)); α_u must lie in [0, 1), and α = 1/(1+λ) is the relation
/// between the propagation's α and the fitting weight λ of the consistency method it builds
/// on [39] (the set is symmetric under λ ↔ 1/λ). Nearest the default 0.99 (λ ≈ 10⁻²) first
/// in log λ.
ParameterGrid sllda_grid() {
  std::vector<nlohmann::json> a;
  for (double lambda : {1e-3, 1.0, 1e-6, 1e3, 1e-9, 1e6, 1e9}) a.emplace_back(1.0 / (1.0 + lambda));
  return {{"alpha_u", a}};
}

}  // namespace
}  // namespace ssdr::methods

/// sllda-zhao2014: SL-LDA by its GEVD and by its weighted least-squares solution.
SSDR_METHOD_FAMILY(sllda) {
  using namespace ssdr::methods;
  return {20,
          {
              MethodRow("sl-lda", "soft-label LDA: LNP graph, label propagation, GEVD (St + aI)^-1 Sb",
                        "sllda-zhao2014 eq. (3)-(5), (11)-(15)", true, true, &make_method<SlLda>)
                  .parameters({"knn", "alpha_u", "alpha", "eigenvalue_scaling"})  // the LNP graph has no σ
                  .lnp_graph(sllda_graph()).cv_grid(sllda_grid()).nested().row(),
              MethodRow("sl-lda-wls", "soft-label LDA by its weighted least-squares solution",
                        "sllda-zhao2014 eq. (19)/(22)", true, true, &make_method<SlLdaWls>)
                  .parameters({"knn", "alpha_u", "alpha"}).lnp_graph(sllda_graph()).cv_grid(sllda_grid()).nested()
                  .row(),
          },
          {
              family_flag("eigenvalue_scaling",
                          "SL-LDA: scale the columns of V by Lambda^(1/2) (implies --normalize metric)"),
          }};
}
