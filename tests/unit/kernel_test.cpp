// Kernel feature maps (exact and Nyström), KSODA = SODA on the empirical kernel map, and
// out-of-sample transforms of kernel models, against serial dense LAPACK references.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/model/model.hpp"
#include "ssdr/model/projector.hpp"
#include "support.hpp"

using namespace ssdr;
using ::testing::HasSubstr;

namespace {

/// Iris (150×4), each feature standardized, replicated.
Dense iris_standardized(std::vector<int>* labels = nullptr) {
  Dense X;
  std::vector<int> y;
  test::load_csv_replicated("iris.csv", X, y);
  if (labels) *labels = y;
  return test::standardize(X);
}

/// Dense kernel k(A_i, B_j) of the rows of A (na×d) and B (nb×d), straight from the definitions.
Dense dense_kernel(const Dense& A, const Dense& B, kernels::KernelType t, double p, double sigma2) {
  Dense K(A.rows, B.rows);
  for (int64_t i = 0; i < A.rows; ++i)
    for (int64_t j = 0; j < B.rows; ++j) {
      double dot = 0, d2 = 0;
      for (int64_t c = 0; c < A.cols; ++c) {
        dot += A(i, c) * B(j, c);
        d2 += (A(i, c) - B(j, c)) * (A(i, c) - B(j, c));
      }
      K(i, j) = t == kernels::KernelType::linear ? dot
                : t == kernels::KernelType::polynomial ? std::pow(dot + 1.0, p)
                                                       : std::exp(-d2 / sigma2);
    }
  return K;
}

/// L_c K L_c (34) with L_c = I − 11ᵀ/n.
Dense centered(const Dense& K) {
  const int64_t n = K.rows;
  std::vector<double> r(static_cast<size_t>(n), 0.0);
  double all = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) r[static_cast<size_t>(i)] += K(i, j) / static_cast<double>(n);
  for (double v : r) all += v / static_cast<double>(n);
  Dense C(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) C(i, j) = K(i, j) - r[static_cast<size_t>(i)] - r[static_cast<size_t>(j)] + all;
  return C;
}

/// Φ Φᵀ of a replicated n×r Φ.
Dense gram(const Dense& Phi) {
  Dense G(Phi.rows, Phi.rows);
  blas::gemm('N', 'T', Phi.rows, Phi.rows, Phi.cols, 1.0, Phi.data(), Phi.rows, Phi.data(), Phi.rows, 0.0, G.data(),
             G.rows);
  return G;
}

using test::max_abs;

/// Serial exact empirical kernel map: eigen-decomposition (36) of the centered K with LAPACK,
/// U (n×r) and Λ (r) for the eigenvalues > 1e-10·λ_max.
void dense_exact_map(const Dense& K, Dense& U, std::vector<double>& lambda) {
  const int64_t n = K.rows;
  Dense A = centered(K);
  std::vector<double> w(static_cast<size_t>(n));
  lapack::syev(n, A.data(), n, w.data());
  std::vector<int64_t> keep;
  for (int64_t k = n - 1; k >= 0; --k)
    if (w[static_cast<size_t>(k)] > 1e-10 * w.back()) keep.push_back(k);
  U = Dense(n, static_cast<int64_t>(keep.size()));
  lambda.clear();
  for (size_t k = 0; k < keep.size(); ++k) {
    std::copy(A.col(keep[k]), A.col(keep[k]) + n, U.col(static_cast<int64_t>(k)));
    // Eigenvectors of λ > 0 are orthogonal to the null vector 1 of L_c K L_c; remove the
    // rounding-level component along 1, which Λ^{-1/2} would amplify in (40).
    double m = 0;
    for (int64_t i = 0; i < n; ++i) m += U(i, static_cast<int64_t>(k)) / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) U(i, static_cast<int64_t>(k)) -= m;
    lambda.push_back(w[static_cast<size_t>(keep[k])]);
  }
}

kernels::KernelOptions options(kernels::KernelType t, int64_t landmarks = 0) {
  kernels::KernelOptions o;
  o.type = t;
  o.landmarks = landmarks;
  o.seed = 7;
  return o;
}


/// The transductive samples after the method's preprocessing, as the pipeline computes them.
struct Transductive {
  data::Preprocessor pre;
  DistMatrix Xt;
  std::vector<char> flags;
};
Transductive transductive(const io::Dataset& ds, const std::vector<data::Role>& roles,
                          const data::PreprocessOptions& po) {
  Transductive t;
  for (int64_t i = 0; i < ds.X.n_local; ++i)
    t.flags.push_back(roles[static_cast<size_t>(i)] != data::Role::unseen);  // roles of the local rows
  t.pre = data::fit_preprocessor(ds.X, t.flags, po);
  t.Xt = data::apply(t.pre, select_rows(ds.X, t.flags));
  return t;
}

}  // namespace

TEST(Kernel, MatricesAreSymmetricPositiveSemidefiniteAndMatchTheirDefinitions) {
  const Dense X = iris_standardized();
  for (auto t : {kernels::KernelType::linear, kernels::KernelType::polynomial, kernels::KernelType::rbf}) {
    kernels::FeatureMap f;
    f.type = t;
    f.degree = 3;
    f.sigma2 = 1.7;
    f.Zt = Dense(X.cols, X.rows);  // d×n: column j = sample j
    for (int64_t i = 0; i < X.rows; ++i)
      for (int64_t c = 0; c < X.cols; ++c) f.Zt(c, i) = X(i, c);
    std::vector<double> G;
    kernels::kernel_block(f, f.Zt.data(), X.rows, G);
    Dense K(X.rows, X.rows);
    K.v = G;
    const Dense R = dense_kernel(X, X, t, 3, 1.7);
    EXPECT_LT(test::max_abs_diff(K, R), 1e-12 * max_abs(R)) << kernels::to_string(t);
    double asym = 0;
    for (int64_t i = 0; i < K.rows; ++i)
      for (int64_t j = 0; j < K.cols; ++j) asym = std::max(asym, std::abs(K(i, j) - K(j, i)));
    EXPECT_LT(asym, 1e-12 * max_abs(K)) << kernels::to_string(t);
    std::vector<double> w(static_cast<size_t>(K.rows));
    lapack::syev(K.rows, K.data(), K.rows, w.data());
    EXPECT_GT(w.front(), -1e-10 * w.back()) << kernels::to_string(t);
    EXPECT_GT(w.back(), 0) << kernels::to_string(t);
  }
}

TEST(Kernel, MeanPairwiseSquaredDistanceEqualsTheDoubleSumOverPairs) {
  const Dense X = iris_standardized();
  double s = 0;
  for (int64_t i = 0; i < X.rows; ++i)
    for (int64_t j = 0; j < X.rows; ++j)
      for (int64_t c = 0; c < X.cols; ++c) s += (X(i, c) - X(j, c)) * (X(i, c) - X(j, c));
  s /= static_cast<double>(X.rows * (X.rows - 1));
  const double got = kernels::mean_pairwise_squared_distance(ref::distribute(X, MPI_COMM_WORLD));
  EXPECT_NEAR(got, s, 1e-12 * s);
  EXPECT_NEAR(got, 8.0 * 150.0 / 149.0, 1e-10);  // standardized: (1/n)Σ‖x_i − x̄‖² = d = 4
}

TEST(Kernel, ExactMapIsCenteredAndItsGramMatrixIsTheCenteredKernel) {
  // Φ_c columns sum to zero and Φ_c Φ_cᵀ = L_c K L_c (34), for every kernel, on any rank count.
  const Dense X = iris_standardized();
  const DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
  for (auto t : {kernels::KernelType::linear, kernels::KernelType::polynomial, kernels::KernelType::rbf}) {
    nlohmann::json info;
    const kernels::FeatureMap f = kernels::fit_feature_map(Xd, options(t), &info);
    EXPECT_TRUE(f.exact);
    EXPECT_EQ(f.landmarks(), 150);
    EXPECT_EQ(f.Zt.cols, Xd.n_local);  // distributed: this rank's samples only
    const Dense Phi = allgather(kernels::apply(f, Xd));
    const double sigma2 = t == kernels::KernelType::rbf ? 8.0 * 150.0 / 149.0 : 0;
    if (t == kernels::KernelType::rbf) EXPECT_NEAR(f.sigma2, sigma2, 1e-10);
    const Dense Kc = centered(dense_kernel(X, X, t, 3, sigma2));
    const double scale = max_abs(Kc);
    for (int64_t k = 0; k < Phi.cols; ++k) {
      double s = 0;
      for (int64_t i = 0; i < Phi.rows; ++i) s += Phi(i, k);
      EXPECT_LT(std::abs(s), 1e-9 * std::sqrt(scale) * 150) << kernels::to_string(t) << " column " << k;
    }
    EXPECT_LT(test::max_abs_diff(gram(Phi), Kc), 1e-8 * scale) << kernels::to_string(t);
    if (t == kernels::KernelType::linear) EXPECT_EQ(Phi.cols, 4);  // rank of centered XXᵀ
    if (t == kernels::KernelType::polynomial) EXPECT_EQ(Phi.cols, 34);  // C(4+3,3) − 1 (centering)
  }
}

TEST(Kernel, ExactMapIsRefusedWithTheMemoryNeededPerRankAndAHintAtNystrom) {
  const DistMatrix Xd = ref::distribute(iris_standardized(), MPI_COMM_WORLD);
  kernels::KernelOptions o = options(kernels::KernelType::rbf);
  o.max_memory_mib = 0.01;
  const double need = kernels::exact_map_bytes_per_rank(150, 4, test::size()) / (1024.0 * 1024.0);
  ASSERT_GT(need, 0.01);
  try {
    kernels::fit_feature_map(Xd, o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.collective());
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("the exact kernel map of n = 150 samples needs about"));
    EXPECT_THAT(msg, HasSubstr("MiB per rank on " + std::to_string(test::size()) + " ranks"));
    EXPECT_THAT(msg, HasSubstr("use --landmarks r (Nystrom)"));
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
  o.max_memory_mib = 2 * need;  // just enough: accepted
  EXPECT_NO_THROW(kernels::fit_feature_map(Xd, o));
}

TEST(Nystrom, AllSamplesAsLandmarksReproduceTheExactGramMatrix) {
  const Dense X = iris_standardized();
  const DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
  for (auto t : {kernels::KernelType::polynomial, kernels::KernelType::rbf}) {
    const kernels::FeatureMap ny = kernels::fit_feature_map(Xd, options(t, 150));
    const kernels::FeatureMap ex = kernels::fit_feature_map(Xd, options(t, 0));
    EXPECT_FALSE(ny.exact);
    EXPECT_EQ(ny.Zt.cols, 150);
    const Dense Gn = gram(allgather(kernels::apply(ny, Xd)));
    const Dense Ge = gram(allgather(kernels::apply(ex, Xd)));
    EXPECT_LT(test::max_abs_diff(Gn, Ge), 1e-7 * max_abs(Ge)) << kernels::to_string(t);
  }
}

TEST(Nystrom, FewLandmarksGiveACenteredMapThatIsExactOnTheLandmarks) {
  // φ(z_i)ᵀφ(z_j) = k(z_i, z_j) − centering: with C = K(X, Z), W_r = K(Z, Z), the uncentered
  // Nyström Gram C W_r⁺ Cᵀ equals K on the landmark rows; Φ_c = L_c C M.
  const Dense X = iris_standardized();
  const DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
  const kernels::FeatureMap f = kernels::fit_feature_map(Xd, options(kernels::KernelType::rbf, 20));
  ASSERT_EQ(f.Zt.cols, 20);
  const Dense Phi = allgather(kernels::apply(f, Xd));
  for (int64_t k = 0; k < Phi.cols; ++k) {
    double s = 0;
    for (int64_t i = 0; i < Phi.rows; ++i) s += Phi(i, k);
    EXPECT_LT(std::abs(s), 1e-9);
  }
  // Landmark kernel matrix reproduced by the map of the landmarks shifted back by a.
  Dense Z(20, 4);
  for (int64_t j = 0; j < 20; ++j)
    for (int64_t c = 0; c < 4; ++c) Z(j, c) = f.Zt(c, j);
  const Dense Kzz = dense_kernel(Z, Z, kernels::KernelType::rbf, 3, f.sigma2);
  kernels::FeatureMap uncentered = f;
  std::fill(uncentered.a.begin(), uncentered.a.end(), 0.0);
  std::vector<double> rows(static_cast<size_t>(20 * 4));
  for (int64_t j = 0; j < 20; ++j)
    for (int64_t c = 0; c < 4; ++c) rows[static_cast<size_t>(j * 4 + c)] = Z(j, c);
  std::vector<double> phi(static_cast<size_t>(20 * f.dim()));
  kernels::apply_rows(uncentered, rows.data(), 20, phi.data());
  Dense P(20, f.dim());
  for (int64_t j = 0; j < 20; ++j)
    for (int64_t k = 0; k < f.dim(); ++k) P(j, k) = phi[static_cast<size_t>(j * f.dim() + k)];
  EXPECT_LT(test::max_abs_diff(gram(P), Kzz), 1e-8);
}

TEST(Nystrom, LandmarksAndMapAreReproducibleAndIndependentOfTheRankCount) {
  const Dense X = iris_standardized();
  const DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
  const double eps = std::numeric_limits<double>::epsilon();
  for (const char* seeding : {"uniform", "kmeans++"}) {
    kernels::KernelOptions o = options(kernels::KernelType::polynomial, 25);
    o.landmark_seeding = seeding;
    const kernels::FeatureMap f = kernels::fit_feature_map(Xd, o);
    const kernels::FeatureMap again = kernels::fit_feature_map(Xd, o);
    EXPECT_EQ(f.Zt.v, again.Zt.v) << seeding;
    EXPECT_EQ(f.M.v, again.M.v) << seeding;  // same ranks, same reductions: bit for bit
    Dense Zs(f.Zt.rows, f.Zt.cols), Ms(f.M.rows, f.M.cols);
    int64_t cols = f.M.cols;
    if (test::rank() == 0) {
      const kernels::FeatureMap s = kernels::fit_feature_map(ref::distribute(X, MPI_COMM_SELF), o);
      Zs = s.Zt;
      cols = s.M.cols;
      Ms = s.M;
    }
    MPI_Bcast(&cols, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    ASSERT_EQ(cols, f.M.cols) << seeding;
    MPI_Bcast(Zs.data(), static_cast<int>(Zs.v.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Bcast(Ms.data(), static_cast<int>(Ms.v.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    EXPECT_EQ(f.Zt.v, Zs.v) << seeding;  // the same landmarks, bit for bit
    // M = M₀V: M₀ = W_r^{+1/2} comes from replicated data (bit for bit), V from the
    // eigenvectors of G = Φ₀ᵀΦ₀, an all-reduce over the n samples whose summation order
    // depends on the rank count. Error analysis: each entry of G (and of the training means a
    // inside Φ₀) is a sum of n terms, so two orders differ by at most 2γ_n·Σ|terms| ≤
    // 2nε·tr(G) entrywise for G; with a's perturbation (≤ 2nε|a|, entering Φ₀ through
    // 1·ΔaᵀM₀) the same order, so ‖ΔG‖₂ ≤ 4n·ε·tr(G) =: η. Davis–Kahan: the k-th eigenvector
    // moves by ‖Δv_k‖ ≤ √2·η/(gap_k − η) (signs fixed the same way), hence column k of M by
    // ‖M₀‖₂·√2·η/(gap_k − η), with ‖M₀‖₂ = λ_min⁺(W_r)^{-1/2}; LAPACK's own backward error on
    // G (≈ r·ε·‖G‖ ≤ η) is the same on every rank count and absorbed in η.
    const Dense Phi = allgather(kernels::apply(f, Xd));
    std::vector<double> var(static_cast<size_t>(cols), 0.0);
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t i = 0; i < Phi.rows; ++i) var[static_cast<size_t>(k)] += Phi(i, k) * Phi(i, k);
    double trace = 0;
    for (double v : var) trace += v;
    const double eta = 4.0 * static_cast<double>(X.rows) * eps * trace;
    Dense Z(f.Zt.cols, f.Zt.rows);
    for (int64_t j = 0; j < Z.rows; ++j)
      for (int64_t c = 0; c < Z.cols; ++c) Z(j, c) = f.Zt(c, j);
    Dense W = dense_kernel(Z, Z, o.type, o.degree, 0);
    std::vector<double> w(static_cast<size_t>(W.rows));
    lapack::syev(W.rows, W.data(), W.rows, w.data());
    double wmin = w.back();
    for (double v : w)
      if (v > 1e-10 * w.back()) wmin = std::min(wmin, v);
    const double m0 = 1.0 / std::sqrt(wmin);
    for (int64_t k = 0; k < cols; ++k) {
      double gap = std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < cols; ++j)
        if (j != k) gap = std::min(gap, std::abs(var[static_cast<size_t>(k)] - var[static_cast<size_t>(j)]));
      ASSERT_GT(gap, 2 * eta) << seeding << " column " << k;
      double diff = 0, norm = 0;
      for (int64_t i = 0; i < f.M.rows; ++i) {
        diff += (f.M(i, k) - Ms(i, k)) * (f.M(i, k) - Ms(i, k));
        norm += Ms(i, k) * Ms(i, k);
      }
      const double tol = m0 * std::sqrt(2.0) * eta / (gap - eta) + 10 * eps * std::sqrt(norm);
      EXPECT_LE(std::sqrt(diff), tol) << seeding << " column " << k;
    }
    o.seed = 8;
    EXPECT_NE(kernels::fit_feature_map(Xd, o).Zt.v, f.Zt.v) << seeding;
  }
}

TEST(Nystrom, MapIsRotatedToItsPrincipalAxes) {
  // Φ_cᵀΦ_c = Σ diagonal with decreasing entries, as the exact map's Λ (36).
  const DistMatrix Xd = ref::distribute(iris_standardized(), MPI_COMM_WORLD);
  for (auto t : {kernels::KernelType::polynomial, kernels::KernelType::rbf}) {
    nlohmann::json info;
    const kernels::FeatureMap f = kernels::fit_feature_map(Xd, options(t, 40), &info);
    const DistMatrix Phi = kernels::apply(f, Xd);
    const Dense G = transpose_multiply(Phi, Phi);
    // Off-diagonal entries: Φ₀V with V orthonormal to ~rε, so (VᵀGV)_jk ≤ O(r·ε·‖G‖) plus
    // the all-reduce's rounding of G (≤ nε·tr G); 1e-11·tr G covers both with room.
    double trace = 0;
    for (int64_t k = 0; k < G.rows; ++k) trace += G(k, k);
    for (int64_t j = 0; j < G.rows; ++j)
      for (int64_t k = 0; k < G.cols; ++k)
        if (j != k) EXPECT_LT(std::abs(G(j, k)), 1e-11 * trace) << kernels::to_string(t) << " " << j << "," << k;
    for (int64_t k = 1; k < G.rows; ++k) EXPECT_GE(G(k - 1, k - 1), G(k, k) * (1 - 1e-10)) << kernels::to_string(t);
    EXPECT_NEAR(G(0, 0), info["largest_variance"].get<double>(), 1e-10 * trace);
    EXPECT_TRUE(info["principal_axes"].get<bool>());
  }
}

TEST(Nystrom, WithEverySampleAsLandmarkTheSodaMu0EqualsTheExactMaps) {
  // soda-nie2009 (38): μ₀ = max diag H_w on the kernel-PCA coordinates Φ = UΛ^{1/2}. With r = n
  // landmarks the rotated Nyström map spans the exact map's space with the same Gram matrix,
  // so SODA's μ₀ (info "mu" with --mu-scale 1) must agree. Small set: the first 10 samples of
  // each iris class, standardized; polynomial kernel (xᵀy+1)² (feature rank 15 < n = 30, so
  // the Nyström W_r = K_raw is singular and its pseudo-inverse is exercised).
  Dense all;
  std::vector<int> labels_all;
  test::load_csv_replicated("iris.csv", all, labels_all);
  all = test::standardize(all);
  std::vector<char> keep(labels_all.size(), 0);
  std::vector<int> seen(3, 0), labels, semi;
  for (size_t i = 0; i < labels_all.size(); ++i)
    if (seen[static_cast<size_t>(labels_all[i])]++ < 10) {
      keep[i] = 1;
      labels.push_back(labels_all[i]);
      semi.push_back(seen[static_cast<size_t>(labels_all[i])] <= 2 ? labels_all[i] : -1);  // 2 labeled per class
    }
  const Dense X = ref::rows(all, keep);
  const int64_t n = X.rows;
  const DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
  kernels::KernelOptions o = options(kernels::KernelType::polynomial);
  o.degree = 2;
  const kernels::FeatureMap fe = kernels::fit_feature_map(Xd, o);
  o.landmarks = n;
  const kernels::FeatureMap fn = kernels::fit_feature_map(Xd, o);
  ASSERT_TRUE(fe.exact);
  ASSERT_FALSE(fn.exact);
  ASSERT_EQ(fe.dim(), fn.dim());
  const DistMatrix Pe = kernels::apply(fe, Xd), Pn = kernels::apply(fn, Xd);
  const Dense Ge = allgather(Pe), Gn = allgather(Pn);
  const int64_t r = Ge.cols;

  methods::MethodOptions mo;
  mo.own["mu_scale"] = 1.0;  // μ = μ₀
  auto mu0 = [&](const DistMatrix& Phi) {
    methods::Timings t;
    const std::vector<int> local = test::local_part(semi, Phi);
    const RowsView graph_rows(Xd);
    return methods::find_method("ksoda").fit(methods::TrainingData{Phi, local, 3, &graph_rows}, mo, t).info["mu"].get<double>();
  };
  const double mu_e = mu0(Pe), mu_n = mu0(Pn);

  // Error analysis. Write φ_k for column k (principal axis k, ‖φ_k‖² = λ_k) and h_k = φ_kᵀLφ_k
  // with L = (B − F_c D⁻¹ F_cᵀ)/ñ the soft within-class Laplacian of H_w: 0 ⪯ L ⪯ I/ñ (B_jj ≤ 1)
  // and L1 = 0, and ñ ≥ l = 6 (the labeled rows of F are one-hot), so ‖L‖ ≤ 1/6. Then
  // √h is a seminorm: |√ĥ_k − √h_k| ≤ ‖δ_k‖/√6 for δ_k = φ̂_k ∓ φ_k (sign-aligned), and
  // |μ̂₀ − μ₀| ≤ max_k |ĥ_k − h_k| ≤ max_k (‖δ_k‖/√6)·(2√μ₀ + ‖δ_k‖/√6).
  // δ_k: both maps are principal axes of their own Gram matrices ΦΦᵀ, which differ by
  // E = ‖Φ̂Φ̂ᵀ − ΦΦᵀ‖_F (measured), and each is principal to within its off-diagonal
  // departure O = ‖ΦᵀΦ − diag‖_F (measured); with η = E + O_e + O_n and gap_k the distance of
  // λ_k to the other eigenvalues, Weyl gives |λ̂_k − λ_k| ≤ η and Davis–Kahan
  // sin θ_k ≤ η/(gap_k − η), so ‖δ_k‖ ≤ √2·√λ_1·η/(gap_k − η) + η/√λ_k.
  auto gram_rows = [](const Dense& P) { return gram(P); };
  const double E = test::max_abs_diff(gram_rows(Gn), gram_rows(Ge)) * static_cast<double>(n);  // ‖·‖_F ≤ n·max
  auto departure = [&](const Dense& P, std::vector<double>& lam) {
    const Dense C = test::mul(P, P, 'T', 'N');
    double o2 = 0;
    lam.assign(static_cast<size_t>(C.rows), 0.0);
    for (int64_t j = 0; j < C.rows; ++j)
      for (int64_t k = 0; k < C.cols; ++k)
        if (j == k) lam[static_cast<size_t>(j)] = C(j, j);
        else o2 += C(j, k) * C(j, k);
    return std::sqrt(o2);
  };
  std::vector<double> lam, lam_n;
  const double eta = E + departure(Ge, lam) + departure(Gn, lam_n);
  double tol = 0;
  for (int64_t k = 0; k < r; ++k) {
    double gap = std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < r; ++j)
      if (j != k) gap = std::min(gap, std::abs(lam[static_cast<size_t>(k)] - lam[static_cast<size_t>(j)]));
    ASSERT_GT(gap, 2 * eta) << "column " << k << ": eigenvalues too close for the bound";
    const double delta = std::sqrt(2.0 * lam[0]) * eta / (gap - eta) + eta / std::sqrt(lam[static_cast<size_t>(k)]);
    const double d6 = delta / std::sqrt(6.0);
    tol = std::max(tol, d6 * (2 * std::sqrt(mu_e) + d6));
  }
  if (test::rank() == 0)
    std::printf("mu0 exact %.17g nystrom %.17g diff %.3g tol %.3g eta %.3g lambda1 %.3g r %lld\n", mu_e, mu_n,
                std::abs(mu_e - mu_n), tol, eta, lam[0], static_cast<long long>(r));
  EXPECT_LT(tol, 1e-6 * mu_e);  // the bound is not vacuous
  EXPECT_LE(std::abs(mu_n - mu_e), tol);
}

TEST(Kernel, MeanPairwiseDistanceEqualsTheDoubleSumOverPairs) {
  // σ₀ of ssgda-zhang-yeung sec. IV. Error analysis: each ‖x_i − x_j‖ carries a relative error
  // ≤ (d + 2)ε (d squares summed, one square root), and the n² non-negative terms summed in two
  // different orders differ by at most 2·n²·ε·Σ; so |Δ| ≤ (2n² + d + 2)·ε·σ₀.
  const Dense X = iris_standardized();
  const int64_t n = X.rows;
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double d2 = 0;
      for (int64_t c = 0; c < X.cols; ++c) d2 += (X(i, c) - X(j, c)) * (X(i, c) - X(j, c));
      s += std::sqrt(d2);
    }
  s /= static_cast<double>(n * (n - 1));
  const double got = kernels::mean_pairwise_distance(ref::distribute(X, MPI_COMM_WORLD));
  const double eps = std::numeric_limits<double>::epsilon();
  EXPECT_NEAR(got, s, (2.0 * n * n + 4 + 2) * eps * s);
  // By Jensen σ₀² ≤ mean squared distance = 8·150/149 (standardized iris), strictly here.
  EXPECT_LT(got * got, 8.0 * 150.0 / 149.0);
  EXPECT_GT(got, 2.0);
  // σ = sigma_scale·σ₀ for the RBF map.
  kernels::KernelOptions o = options(kernels::KernelType::rbf, 20);
  o.sigma_scale = 3;
  nlohmann::json info;
  const kernels::FeatureMap f = kernels::fit_feature_map(ref::distribute(X, MPI_COMM_WORLD), o, &info);
  EXPECT_NEAR(info["sigma0"].get<double>(), s, (2.0 * n * n + 6) * eps * s);
  EXPECT_DOUBLE_EQ(f.sigma2, 9.0 * info["sigma0"].get<double>() * info["sigma0"].get<double>());
  o.sigma_scale = -1;
  EXPECT_THROW(kernels::fit_feature_map(ref::distribute(X, MPI_COMM_WORLD), o), Error);
}

TEST(Ksoda, EqualsSodaOnTheDenseEmpiricalKernelMapAndProjectsNewSamplesByEq40) {
  // The pipeline with ksoda (exact map, (xᵀy+1)^3 on globally scaled data) against SODA run
  // on Φ = UΛ^{1/2} from a serial LAPACK eigen-decomposition of L_c K L_c, with the graph
  // on the input samples; every sample (transductive and unseen) embedded by (40).
  const std::string path = test::data_path("iris.csv");
  io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const data::SplitSpec spec = test::transductive_split(3, 0.5, 5);
  const auto roles = test::split(ds, spec);
  driver::FitConfig cfg;
  cfg.method = "ksoda";
  cfg.preprocess = methods::find_method("ksoda").preprocess;
  const driver::FitOutcome out = driver::fit_and_evaluate(ds, roles, cfg, true);
  ASSERT_EQ(out.info["kernel"]["map"], "exact");
  ASSERT_EQ(out.info["kernel"]["kernel"], "poly");

  // Serial reference on the same preprocessed samples.
  const Transductive tr = transductive(ds, roles, cfg.preprocess);
  const Dense Xt = allgather(tr.Xt);
  const Dense Xall = allgather(data::apply(tr.pre, ds.X));
  std::vector<int> semi;
  const auto all_roles = test::split_all(path, io::Format::csv, spec);  // every sample's
  const io::Dataset whole = io::read_dataset(path, io::Format::csv, MPI_COMM_SELF);
  for (size_t g = 0; g < all_roles.size(); ++g)
    if (all_roles[g] != data::Role::unseen) semi.push_back(all_roles[g] == data::Role::labeled ? whole.labels[g] : -1);
  const Dense K = dense_kernel(Xt, Xt, kernels::KernelType::polynomial, 3, 0);
  Dense U;
  std::vector<double> lambda;
  dense_exact_map(K, U, lambda);
  Dense Phi = U;
  for (int64_t k = 0; k < Phi.cols; ++k)
    for (int64_t i = 0; i < Phi.rows; ++i) Phi(i, k) *= std::sqrt(lambda[static_cast<size_t>(k)]);
  EXPECT_EQ(Phi.cols, out.model.kernel.dim());

  const DistMatrix Phid = ref::distribute(Phi, MPI_COMM_WORLD);
  const DistMatrix Xtd = ref::distribute(Xt, MPI_COMM_WORLD);
  const std::vector<int> local = test::local_part(semi, Phid);
  methods::Timings t;
  const RowsView graph_rows(Xtd);
  const methods::FitResult soda =
      methods::find_method("ksoda").fit(methods::TrainingData{Phid, local, ds.classes, &graph_rows}, cfg.method_options, t);
  EXPECT_NEAR(out.trace_ratio, soda.trace_ratio, 1e-7 * soda.trace_ratio);

  // (40): y = βᵀ Λ^{-1/2} Uᵀ (k(X_t, x) − a), a = row means of K.
  const int64_t n = K.rows;
  std::vector<double> a(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) a[static_cast<size_t>(i)] += K(i, j) / static_cast<double>(n);
  const Dense Kx = dense_kernel(Xt, Xall, kernels::KernelType::polynomial, 3, 0);  // n_t × N
  Dense Yref(Xall.rows, soda.W.cols);
  for (int64_t s = 0; s < Xall.rows; ++s)
    for (int64_t k = 0; k < U.cols; ++k) {
      double phi = 0;
      for (int64_t i = 0; i < n; ++i) phi += U(i, k) * (Kx(i, s) - a[static_cast<size_t>(i)]);
      phi /= std::sqrt(lambda[static_cast<size_t>(k)]);
      for (int64_t c = 0; c < soda.W.cols; ++c) Yref(s, c) += phi * soda.W(k, c);
    }
  const Dense Y = allgather(out.embedding);
  EXPECT_LT(test::max_diff_up_to_column_sign(Y, Yref), 1e-7 * max_abs(Yref));  // KSP rtol 1e-10
  EXPECT_GT(out.accuracy.unlabeled, 0.8);
}

TEST(Ksoda, TransformOfTheTrainingSamplesEqualsTheFitEmbeddingForExactAndNystromMaps) {
  const std::string path = test::data_path("wine.csv");
  io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const data::SplitSpec spec = test::transductive_split(3, 0.4, 2);
  const auto roles = test::split(ds, spec);
  test::TempDir dir("kernel");
  for (const int64_t landmarks : {int64_t{0}, int64_t{30}}) {
    driver::FitConfig cfg;
    cfg.method = "gda";
    cfg.preprocess.scaling = data::Scaling::standardize;
    kernels::KernelOptions ko = methods::find_method("gda").kernel;
    ko.landmarks = landmarks;
    cfg.parameters["kernel"] = kernels::to_json(ko);
    const driver::FitOutcome out = driver::fit_and_evaluate(ds, roles, cfg, true);
    ASSERT_EQ(out.model.kernel.exact, landmarks == 0);
    ASSERT_EQ(out.info["kernel"]["kernel"], "rbf");
    const std::string file = dir.path() + "/gda" + std::to_string(landmarks) + ".model";
    model::save_collective(out.model, file, MPI_COMM_WORLD);
    const model::Model back = model::load_collective(file, MPI_COMM_WORLD);
    const DistMatrix Y = model::project(back, ds.X);
    EXPECT_EQ(Y.v, out.embedding.v) << "landmarks " << landmarks;  // bit for bit

    // The training rows of the embedding are Φ_c W with the Φ_c the method learned on.
    const Transductive tr = transductive(ds, roles, cfg.preprocess);
    const Dense Yt = allgather(multiply(kernels::apply(out.model.kernel, tr.Xt), out.model.W));
    const Dense Yall = allgather(out.embedding);
    double diff = 0;
    int64_t t = 0;
    const auto all_roles = test::split_all(path, io::Format::csv, spec);  // every sample's
    for (size_t g = 0; g < all_roles.size(); ++g)
      if (all_roles[g] != data::Role::unseen) {
        for (int64_t c = 0; c < Yall.cols; ++c) diff = std::max(diff, std::abs(Yall(static_cast<int64_t>(g), c) - Yt(t, c)));
        ++t;
      }
    EXPECT_LT(diff, 1e-10 * max_abs(Yt)) << "landmarks " << landmarks;
    EXPECT_GT(out.accuracy.unlabeled, 0.85) << "landmarks " << landmarks;
  }
}

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

TEST(Ksoda, AnExactModelSavedOnAnyRankCountLoadsAndTransformsBitForBitOnAnyOther) {
  // KSODA's exact map on breast_cancer (n_t ≈ 455 training samples: two blocks of the
  // projection sums, the first straddling the ranks' rows on 2, 3, 4 ranks). The model is
  // saved by every rank of the world; loaded on the first k ranks (k = 1 … P) it gives the
  // fit's embedding bit for bit and each rank holds only its ⌈n/k⌉ rows; saved again from
  // those k ranks it is the same file, byte for byte, and loads on the world with the same
  // bits. Run on 1 … 4 ranks this covers every save/load pair of rank counts up to 4.
  const std::string data = test::data_path("breast_cancer.csv");
  io::Dataset ds = io::read_dataset(data, io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::transductive_split(3, 0.8, 5));
  driver::FitConfig cfg;
  cfg.method = "ksoda";
  cfg.preprocess = methods::find_method("ksoda").preprocess;
  kernels::KernelOptions ko = methods::find_method("ksoda").kernel;
  ko.landmarks = 0;
  cfg.parameters["kernel"] = kernels::to_json(ko);
  const driver::FitOutcome out = driver::fit_and_evaluate(ds, roles, cfg, true);
  ASSERT_TRUE(out.model.kernel.exact);
  const int64_t n = out.model.kernel.z_global;
  ASSERT_GT(n, kernels::kExactBlock);
  const Dense Y = allgather(out.embedding);
  test::TempDir dir("kernel");
  const std::string world_file = dir.path() + "/world.model";
  model::save_collective(out.model, world_file, MPI_COMM_WORLD);
  const std::string saved = file_bytes(world_file);

  // Loaded whole on one rank (model::load): the same bits without communication.
  {
    const model::Model whole = model::load(world_file);
    EXPECT_EQ(whole.kernel.Zt.cols, n);
    EXPECT_EQ(model::project(whole, ds.X).v, out.embedding.v);
  }
  for (int k = 1; k <= test::size(); ++k) {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, test::rank() < k ? 0 : MPI_UNDEFINED, test::rank(), &sub);
    const std::string again = dir.path() + "/from" + std::to_string(k) + ".model";
    if (sub != MPI_COMM_NULL) {
      const model::Model m = model::load_collective(world_file, sub);
      EXPECT_EQ(m.kernel.Zt.cols, block_layout(n, sub).n_local) << k << " ranks";
      EXPECT_LE(m.kernel.M.rows, (n + k - 1) / k) << k << " ranks";
      const io::Dataset part = io::read_dataset(data, io::Format::csv, sub);
      EXPECT_EQ(allgather(model::project(m, part.X)).v, Y.v) << "loaded on " << k << " ranks";
      model::save_collective(m, again, sub);
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_EQ(file_bytes(again), saved) << "saved again from " << k << " ranks";
    const model::Model back = model::load_collective(again, MPI_COMM_WORLD);
    EXPECT_EQ(model::project(back, ds.X).v, out.embedding.v) << "saved from " << k << " ranks";
  }
}

TEST(Ksoda, ACorruptOrTruncatedExactModelIsRefusedOnEveryRankNamingTheFile) {
  // One flipped bit in the row section (a training sample's coordinate), the row section's
  // checksum itself, a file cut short by one byte or grown by one: every rank raises one line
  // naming the file.
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated("iris.csv", X, labels);
  const DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
  kernels::KernelOptions ko;
  ko.type = kernels::KernelType::rbf;
  model::Model m;
  m.method = "ksoda";
  m.d_input = 4;
  m.classes = 3;
  m.kernel = kernels::fit_feature_map(Xd, ko);
  m.W = Dense(m.kernel.dim(), 2);
  for (int64_t i = 0; i < m.W.rows; ++i) m.W(i, i % 2) = 1.0;
  test::TempDir dir("kernel");
  const std::string good = dir.path() + "/good.model";
  model::save_collective(m, good, MPI_COMM_WORLD);
  const std::string bytes = file_bytes(good);
  const size_t rows = 150 * static_cast<size_t>(4 + m.kernel.dim() + 1) * 8, start = bytes.size() - 8 - rows;
  struct Case {
    std::string name, bytes, expected;
  };
  std::vector<Case> cases;
  std::string b = bytes;
  b[start + rows / 2] ^= 0x10;
  cases.push_back({"row", b, "checksum mismatch"});
  b = bytes;
  b[bytes.size() - 3] ^= 0x01;
  cases.push_back({"row checksum", b, "checksum mismatch"});
  cases.push_back({"cut", bytes.substr(0, bytes.size() - 1), "truncated or corrupt model file"});
  cases.push_back({"grown", bytes + "x", "truncated or corrupt model file"});
  for (const Case& c : cases) {
    const std::string p = dir.path() + "/" + c.name + ".model";
    if (test::rank() == 0) {
      std::ofstream f(p, std::ios::binary);
      f << c.bytes;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    try {
      model::load_collective(p, MPI_COMM_WORLD);
      ADD_FAILURE() << c.name << ": no error";
    } catch (const Error& e) {
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("'" + p + "': truncated or corrupt model file")) << c.name;
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(c.expected)) << c.name;
    }
  }
  // The untouched file loads and a model distributed over the world refuses a local save.
  EXPECT_NO_THROW(model::load_collective(good, MPI_COMM_WORLD));
  if (test::size() > 1) EXPECT_THROW(model::save(m, dir.path() + "/local.model"), Error);
}
