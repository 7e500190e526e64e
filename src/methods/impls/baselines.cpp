// The baselines the papers compare with (soda-nie2009 §5): OLDA (Ye 2005), SDA (Cai, He,
// Han 2007), PCA and plain 1-NN.
//
// Shapes: n = transductive samples (rows of TrainingData::X, distributed), d = d' the
// preprocessed dimension, l = labeled samples, c = classes, m = projected dimension.
#include <petscmat.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "methods/registry.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/scatter/scatter.hpp"
#include "ssdr/solvers/eigen.hpp"
#include "baselines_internal.hpp"

namespace ssdr::methods {

// ---------------------------------------------------------------------------------------
// Helpers with external linkage so the unit tests can check them directly (declared and
// documented in baselines_internal.hpp).
namespace baselines {

Dense graph_scatter(Mat L, const DistMatrix& X, int64_t block) {
  PetscInt rlo = 0, rhi = 0, N = 0, M = 0;
  SSDR_PETSC(MatGetOwnershipRange(L, &rlo, &rhi));
  SSDR_PETSC(MatGetSize(L, &M, &N));
  SSDR_CHECK_COLLECTIVE(X.comm, rhi - rlo == X.n_local && M == X.n_global,
                        "graph_scatter: L has " + std::to_string(rhi - rlo) +
                            " local rows, X has " + std::to_string(X.n_local));
  const int64_t d = X.cols;
  Dense C(d, d);
  if (d == 0) return C;
  const int64_t nl = X.n_local;
  // Columns [j0, j0 + b) at a time: a column-major copy of them (PETSc dense storage,
  // n_local×b), Y = L·that (n_local×b, and PETSc's ghost rows), then C's columns
  // X_localᵀ·Y. Each entry of Y and of C is the same sum as with every column at once, so
  // the width changes only the memory: three n_local×d copies of X (1.9 GB per rank at
  // 210 000 × 784 on 2 ranks) become about 3·32 MiB. The same width on every rank (the
  // products are collective).
  int64_t widest = nl;
  MPI_Allreduce(MPI_IN_PLACE, &widest, 1, MPI_INT64_T, MPI_MAX, X.comm);
  if (block <= 0) block = std::max<int64_t>(1, (int64_t{32} << 20) / (8 * std::max<int64_t>(widest, 1)));
  block = std::min(block, d);
  for (int64_t j0 = 0; j0 < d; j0 += block) {
    const int64_t b = std::min(block, d - j0);
    Owned<Mat> Xp;
    SSDR_PETSC(MatCreateDense(X.comm, static_cast<PetscInt>(nl), PETSC_DECIDE, static_cast<PetscInt>(X.n_global),
                              static_cast<PetscInt>(b), nullptr, Xp.out()));
    {
      PetscScalar* a = nullptr;
      PetscInt lda = 0;
      SSDR_PETSC(MatDenseGetLDA(Xp, &lda));
      SSDR_PETSC(MatDenseGetArrayWrite(Xp, &a));
      for (int64_t i = 0; i < nl; ++i)
        for (int64_t j = 0; j < b; ++j) a[i + j * lda] = X(i, j0 + j);
      SSDR_PETSC(MatDenseRestoreArrayWrite(Xp, &a));
    }
    SSDR_PETSC(MatAssemblyBegin(Xp, MAT_FINAL_ASSEMBLY));
    SSDR_PETSC(MatAssemblyEnd(Xp, MAT_FINAL_ASSEMBLY));
    Owned<Mat> Y;
    SSDR_PETSC(MatMatMult(L, Xp, MAT_INITIAL_MATRIX, PETSC_DEFAULT, Y.out()));
    Xp.reset();
    const PetscScalar* y = nullptr;
    PetscInt ldy = 0;
    SSDR_PETSC(MatDenseGetLDA(Y, &ldy));
    SSDR_PETSC(MatDenseGetArrayRead(Y, &y));
    // X.v is the d×n_local column-major matrix X_localᵀ; Y_local is n_local×b (ld ldy).
    if (nl > 0)
      blas::gemm('N', 'N', d, b, nl, 1.0, X.v.data(), d, y, std::max<int64_t>(ldy, 1), 0.0, C.data() + j0 * d, d);
    SSDR_PETSC(MatDenseRestoreArrayRead(Y, &y));
  }
  allreduce_sum(C, X.comm);
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < i; ++j) {
      const double s = 0.5 * (C(i, j) + C(j, i));
      C(i, j) = s;
      C(j, i) = s;
    }
  return C;
}

Dense covariance(const DistMatrix& X) {
  SSDR_REQUIRE(X.n_global > 0, "pca: no samples to compute a covariance from");
  const int64_t d = X.cols, nl = X.n_local;
  std::vector<double> mean(static_cast<size_t>(d), 0.0);
  for (int64_t i = 0; i < nl; ++i)
    for (int64_t j = 0; j < d; ++j) mean[static_cast<size_t>(j)] += X(i, j);
  MPI_Allreduce(MPI_IN_PLACE, mean.data(), static_cast<int>(d), MPI_DOUBLE, MPI_SUM, X.comm);
  for (double& v : mean) v /= static_cast<double>(X.n_global);
  std::vector<double> Yc(X.v.size());  // centered local block, d×n_local column-major
  for (int64_t i = 0; i < nl; ++i)
    for (int64_t j = 0; j < d; ++j)
      Yc[static_cast<size_t>(i * d + j)] = X(i, j) - mean[static_cast<size_t>(j)];
  Dense C(d, d);
  if (nl > 0) blas::syrk('U', 'N', d, nl, 1.0 / static_cast<double>(X.n_global), Yc.data(), d, 0.0, C.data(), d);
  blas::symmetrize('U', d, C.data(), d);
  allreduce_sum(C, X.comm);
  return C;
}

Dense orthonormal_basis(const Dense& A) {
  Dense Q = A;
  lapack::orthonormalize(Q.rows, Q.cols, Q.data(), Q.rows);
  for (int64_t j = 0; j < Q.cols; ++j) {
    double r = 0;
    for (int64_t i = 0; i < Q.rows; ++i) r += Q(i, j) * A(i, j);
    if (r < 0)
      for (int64_t i = 0; i < Q.rows; ++i) Q(i, j) = -Q(i, j);
  }
  return Q;
}

}  // namespace baselines

namespace {

using solvers::Which;

/// Orthogonal LDA (Ye 2005, JMLR 6, Algorithm "OLDA"; soda-nie2009 eq. (2)):
/// W = orth(top-m eigenvectors of S_t⁺S_b) on the labeled samples.
/// Computed stably in the range of S_t: S_t = U₁Λ₁U₁ᵀ (eigenvalues > rank_tol·λ_max kept,
/// t of them); B̃ = Λ₁^{-1/2}U₁ᵀS_bU₁Λ₁^{-1/2} (t×t) = P Σ̂ Pᵀ; X_m = U₁Λ₁^{-1/2}P_m are the
/// eigenvectors of S_t⁺S_b with eigenvalues Σ̂ (since S_t⁺S_bX_m = X_mΣ̂_m); W = QR(X_m).
/// m = c−1 by default, m ≤ t required.
class Olda final : public Method {
 public:
  FitResult fit(const MethodInfo&, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    const scatter::ScatterMatrices S = labeled_scatter(data, t);
    Phase phase("eigensolve", &t);
    const int64_t d = S.St.rows;
    const double rank_tol = 1e-10;
    // All eigenpairs of S_t, largest first.
    auto et = solvers::sym_eigen(S.St, nullptr, d, Which::largest, o.eigen_prefix, data.X.comm);
    const double lmax = et.values.empty() ? 0.0 : et.values[0];
    int64_t rank = 0;
    while (rank < d && et.values[static_cast<size_t>(rank)] > rank_tol * lmax && lmax > 0) ++rank;
    SSDR_REQUIRE(rank >= 1, "olda: the total scatter of the labeled samples is zero");
    SSDR_REQUIRE(m <= rank, "olda: --dim " + std::to_string(m) + " exceeds rank(S_t) = " +
                                std::to_string(rank) + " of the labeled samples");
    // Z = U₁Λ₁^{-1/2} (d×t).
    Dense Z(d, rank);
    for (int64_t j = 0; j < rank; ++j) {
      const double s = 1.0 / std::sqrt(et.values[static_cast<size_t>(j)]);
      for (int64_t i = 0; i < d; ++i) Z(i, j) = et.vectors(i, j) * s;
    }
    // B̃ = Zᵀ S_b Z (t×t).
    Dense SbZ(d, rank), Bt(rank, rank);
    blas::gemm('N', 'N', d, rank, d, 1.0, S.Sb.data(), d, Z.data(), d, 0.0, SbZ.data(), d);
    blas::gemm('T', 'N', rank, rank, d, 1.0, Z.data(), d, SbZ.data(), d, 0.0, Bt.data(), rank);
    for (int64_t i = 0; i < rank; ++i)
      for (int64_t j = 0; j < i; ++j) {
        const double s = 0.5 * (Bt(i, j) + Bt(j, i));
        Bt(i, j) = s;
        Bt(j, i) = s;
      }
    auto eb = solvers::sym_eigen(Bt, nullptr, m, Which::largest, o.eigen_prefix, data.X.comm);
    // X_m = Z P_m (d×m), then QR.
    Dense Xm(d, m);
    blas::gemm('N', 'N', d, m, rank, 1.0, Z.data(), d, eb.vectors.data(), rank, 0.0, Xm.data(), d);
    FitResult out;
    out.W = baselines::orthonormal_basis(Xm);
    out.info["rank_tol"] = rank_tol;
    out.info["rank_St"] = rank;
    out.info["dim"] = m;
    out.info["eigenvalues"] = eb.values;  // of S_t⁺S_b, in [0, 1]
    return out;
  }
};

/// Semi-supervised discriminant analysis (Cai, He, Han, ICCV 2007, eq. (9)):
///   max aᵀS_b a / aᵀ(S_t + α_eff XLXᵀ + β_eff I)a,
/// S_b, S_t the hard-label scatter matrices of the labeled samples (divided by l), L = D − A
/// the Laplacian of the 0/1 symmetrized kNN graph on all n transductive samples (built on
/// data.graph_data(), the input-space rows, when a kernel maps X) with k = 5
/// (Cai et al.'s setting, the method table's graph; --knn and --weight override it). α and β are relative to the traces:
///   α_eff = α·tr(S_t)/tr(XLXᵀ),  β_eff = β·tr(S_t)/d,  defaults α = 1, β = 10⁻³,
/// so α = 0 is the regularized LDA of the `lda` method. The m = c−1 largest generalized
/// eigenvectors through sym_eigen (prefix o.eigen_prefix), of unit length by default as in
/// Cai et al.'s code (o.normalization; metric: aᵀBa = 1 with B the denominator above).
/// --shrinkage (o.shrinkage not NaN) replaces the ridge β_eff I: S_t and S_b are then the
/// shrunk ones of shrunk_labeled_scatter (S_b = Ŝ_t − Ŝ_w, scikit-learn's shrinkage LDA), so
/// α = 0 is `lda --shrinkage` with the same value.
class Sda final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    // S_b has rank at most c−1: past it the generalized eigenvalues are 0, tied, and their
    // eigenvectors any basis of a subspace (the solver's, which depends on the partition: 1
    // and 2 ranks gave different accuracies on wine at m = 4). Refused rather than arbitrary.
    SSDR_REQUIRE(m <= std::max(data.classes - 1, 1),
                 "sda: --dim " + std::to_string(m) + " is beyond the rank of S_b (c - 1 = " +
                     std::to_string(std::max(data.classes - 1, 1)) +
                     "): the eigenvalues past it are 0 and their eigenvectors arbitrary; the largest meaningful --dim "
                     "is " + std::to_string(std::max(data.classes - 1, 1)));
    const double alpha = or_default(o.alpha, 1.0);
    const double beta = or_default(o.beta, 1e-3);
    SSDR_REQUIRE(alpha >= 0 && std::isfinite(alpha), "sda: --alpha must be finite and >= 0");
    SSDR_REQUIRE(beta >= 0 && std::isfinite(beta), "sda: --beta must be finite and >= 0");
    const bool shrink = o.shrinkage == o.shrinkage;
    SSDR_REQUIRE(!shrink || o.beta != o.beta,
                 "sda: --beta and --shrinkage both regularize S_t; give one of them");
    FitResult out;
    Dense Sb, St, Sb_factor;  // Sb_factor: S_b's rank-c factor (unshrunk scatter only)
    if (shrink) {
      scatter::ShrunkScatter S = shrunk_labeled_scatter(data, o.shrinkage, t, out.info);
      Sb = std::move(S.Sb);
      St = std::move(S.St);
    } else {
      scatter::ScatterMatrices S = labeled_scatter(data, t);
      Sb = std::move(S.Sb);
      St = std::move(S.St);
      Sb_factor = std::move(S.Sb_factor);
    }
    const int64_t d = St.rows;
    const double tr_st = trace(St);
    Dense B = St;
    if (alpha > 0) {
      // Cai et al.'s 0/1 graph with k = 5 (the table's) unless --knn/--weight; input space
      // (data.graph_data(), same rows as X), cached with the other methods' graphs.
      const graph::GraphOptions go = method_graph(row, o);
      const graph::Graph g = knn_graph(data, go, t);
      Dense XLX;
      {
        Phase phase("graph_scatter", &t);
        Owned<Mat> L = graph::laplacian(g.A);
        XLX = baselines::graph_scatter(L, data.X.doubles());
      }
      const double tr_xlx = trace(XLX);
      const double alpha_eff = tr_xlx > 0 ? alpha * tr_st / tr_xlx : 0.0;
      for (size_t i = 0; i < B.v.size(); ++i) B.v[i] += alpha_eff * XLX.v[i];
      graph_info(g, go, out.info);
      out.info["trace_XLX"] = tr_xlx;
      out.info["alpha_eff"] = alpha_eff;
    } else {
      out.info["alpha_eff"] = 0.0;
    }
    Phase phase("eigensolve", &t);
    const double beta_eff = shrink ? 0.0 : beta * tr_st / static_cast<double>(d);
    for (int64_t i = 0; i < d; ++i) B(i, i) += beta_eff;
    largest_generalized_eigenvectors(Sb, B, m, o.normalization, "sda", o.eigen_prefix, data.X.comm, out,
                                     Sb_factor.v.empty() ? nullptr : &Sb_factor);
    out.info["alpha"] = alpha;
    if (!shrink) out.info["beta"] = beta;
    out.info["beta_eff"] = beta_eff;
    out.info["trace_St"] = tr_st;
    out.info["dim"] = m;
    return out;
  }
};

/// PCA on the transductive samples: the m eigenvectors of the covariance
/// (1/n)Σ(x_i − x̄)(x_i − x̄)ᵀ with the largest eigenvalues (sym_eigen, prefix
/// o.eigen_prefix). m = c−1 by default (or --dim).
class Pca final : public Method {
 public:
  FitResult fit(const MethodInfo&, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    Dense C;
    {
      Phase phase("scatter", &t);
      C = baselines::covariance(data.X.doubles());
    }
    Phase phase("eigensolve", &t);
    auto e = solvers::sym_eigen(C, nullptr, m, Which::largest, o.eigen_prefix, data.X.comm);
    FitResult out;
    out.W = std::move(e.vectors);
    out.info["dim"] = m;
    out.info["eigenvalues"] = e.values;
    return out;
  }
};

/// Plain 1-NN: W = I (d'×d'), so the driver's 1-NN runs on the preprocessed data (with the
/// default null-space-dropping PCA these are the distances of the raw data).
class OneNn final : public Method {
 public:
  FitResult fit(const MethodInfo&, const TrainingData& data, const MethodOptions& o, Timings&) override {
    const int64_t d = data.X.cols;
    SSDR_REQUIRE(o.dim == 0 || o.dim == d, "1nn: --dim is not used (the embedding is the " +
                                               std::to_string(d) + "-dimensional preprocessed data)");
    FitResult out;
    out.W = Dense::identity(d);
    out.info["dim"] = d;
    return out;
  }
};

/// Cai, He, Han 2007 (SDA): the 0/1 kNN graph with k = 5.
graph::GraphOptions sda_graph() {
  graph::GraphOptions g;
  g.k = 5;
  g.weight = graph::EdgeWeight::binary;
  return g;
}

}  // namespace
}  // namespace ssdr::methods

/// The baselines users compare with: OLDA, SDA, PCA and plain 1-NN.
SSDR_METHOD_FAMILY(baselines) {
  using namespace ssdr::methods;
  return {50,
          {
              MethodRow("olda", "orthogonal LDA (ratio trace with St^+)", "soda-nie2009 eq. (2), Ye 2005", false, true,
                        &make_method<Olda>)
                  .nested().row(),
              MethodRow("sda", "semi-supervised discriminant analysis (Cai, He, Han 2007)",
                        "max a'Sb a / a'(St + alpha XLX' + beta I)a", true, true, &make_method<Sda>)
                  .parameters({"knn", "weight", "sigma_s", "alpha", "beta", "shrinkage"}).graph(sda_graph()).nested()
                  .row(),
              MethodRow("pca", "principal component analysis (unsupervised baseline)", "top-m covariance eigenvectors",
                        true, true, &make_method<Pca>)
                  .nested().row(),
              MethodRow("1nn", "plain 1-NN on the preprocessed data (W = identity, no learning)", "baseline", false,
                        true, &make_method<OneNn>)
                  .row(),
          }};
}
