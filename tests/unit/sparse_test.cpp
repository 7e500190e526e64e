// Sparse data (issue 11): LIBSVM read sparse, and the preprocessing's truncated-SVD PCA of
// the implicitly centered rows against the dense covariance PCA; the dense d > n route.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <utility>

#include "reference.hpp"
#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/sparse.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/model/model.hpp"
#include "ssdr/model/projector.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

/// digits.csv (1797 × 64, about half of the pixels zero) written as LIBSVM by rank 0.
void write_digits_libsvm(const std::string& path) {
  if (test::rank() == 0) {
    Dense X;
    std::vector<int> labels;
    test::load_csv_replicated("digits.csv", X, labels);
    std::ofstream f(path);
    for (int64_t i = 0; i < X.rows; ++i) {
      f << labels[static_cast<size_t>(i)];
      for (int64_t j = 0; j < X.cols; ++j)
        if (X(i, j) != 0) f << ' ' << j + 1 << ':' << X(i, j);
      f << '\n';
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/// digits written as LIBSVM, read once sparse and once dense (the same rows). Collective.
std::pair<io::Dataset, io::Dataset> read_digits_sparse_and_dense() {
  test::TempDir dir("sparse");
  const std::string path = dir.file("digits.libsvm");
  write_digits_libsvm(path);
  io::ReadOptions ro;
  ro.sparse = io::Sparsity::sparse;
  return {io::read_dataset(path, io::Format::libsvm, MPI_COMM_WORLD, ro),
          io::read_dataset(path, io::Format::libsvm, MPI_COMM_WORLD)};
}

}  // namespace

TEST(SparseRead, LibsvmReadSparseHoldsTheDenseReadsValuesInTheSameRowLayout) {
  const auto [s, dn] = read_digits_sparse_and_dense();
  ASSERT_TRUE(s.sparse);
  ASSERT_FALSE(dn.sparse);
  EXPECT_EQ(s.labels, dn.labels);
  EXPECT_EQ(s.X.n_global, dn.X.n_global);
  EXPECT_EQ(s.X.cols, dn.X.cols);
  EXPECT_EQ(s.Xs.row_start, dn.X.row_start);
  ASSERT_EQ(s.Xs.n_local, dn.X.n_local);
  EXPECT_TRUE(s.X.v.empty());
  int64_t stored = 0;
  for (int64_t i = 0; i < s.Xs.n_local; ++i) {
    std::vector<double> row(static_cast<size_t>(s.X.cols), 0.0);
    int32_t prev = -1;
    for (int64_t k = s.Xs.row_ptr[static_cast<size_t>(i)]; k < s.Xs.row_ptr[static_cast<size_t>(i) + 1]; ++k) {
      EXPECT_GT(s.Xs.col[static_cast<size_t>(k)], prev) << "columns increase within a row";
      prev = s.Xs.col[static_cast<size_t>(k)];
      row[static_cast<size_t>(prev)] = s.Xs.val[static_cast<size_t>(k)];
    }
    for (int64_t j = 0; j < s.X.cols; ++j) {
      ASSERT_EQ(row[static_cast<size_t>(j)], dn.X(i, j)) << "row " << s.Xs.row_start + i << " column " << j;
      stored += dn.X(i, j) != 0;
    }
  }
  EXPECT_EQ(stored, s.Xs.nnz_local()) << "explicit zeros are not stored";
}

TEST(SparsePca, ScoresAgreeWithTheDenseCovariancePcaWithinTheSvdTolerance) {
  // digits as sparse rows: the truncated SVD of the implicitly centered rows (d' = 10) must
  // give the dense covariance route's eigenvalues, basis and scores, for every scaling.
  // Error analysis. SLEPc stops when a triplet's relative residual ‖(Zv − σu, Zᵀu − σv)‖/σ
  // is below τ = 1e-10 (the default set in fit_preprocessor; the test also reads the
  // residual reached). By the sin-θ theorem (Wedin) the computed v_k is then within
  // √2·τ·σ_k/g_k of the exact one, g_k = min_{j≠k} |σ_k − σ_j| over all singular values
  // (σ_j² = n·λ_j, λ from the dense route), and σ_k² within 2τσ_k² relative; a score
  // z_iᵀv_k moves by at most ‖z_i‖ times that. The dense route's own error (a backward-
  // stable eigensolve of C formed with entry errors ≲ d·ε·λ_max) adds c·ε·λ_max/gλ_k to the
  // eigenvector (c = 10³ as in Preprocess.GramRoute...). Both signs follow the same rule
  // (largest |entry| positive), so columns are compared as they are; the test asserts the
  // largest entry is separated from the runner-up by more than the error bound, so the rule
  // cannot flip. The bounds get a factor 10 of slack for the unknown constants.
  const auto [s, dn] = read_digits_sparse_and_dense();
  const int64_t k = 10, n = dn.X.n_global;
  // The first 1500 rows are the fit rows (a split), the rest go through the map only.
  std::vector<char> fit(static_cast<size_t>(dn.X.n_local));
  for (int64_t i = 0; i < dn.X.n_local; ++i) fit[static_cast<size_t>(i)] = dn.X.row_start + i < 1500;
  const int64_t n_fit = std::min<int64_t>(n, 1500);
  std::vector<char> all(fit.size(), 1);
  constexpr double tau = 1e-10, eps = 2.2e-16, c = 1e3, slack = 10;
  for (data::Scaling sc : {data::Scaling::none, data::Scaling::standardize, data::Scaling::unit_range,
                           data::Scaling::global_unit}) {
    SCOPED_TRACE(data::to_string(sc));
    data::PreprocessOptions po;
    po.scaling = sc;
    po.route = data::PcaRoute::covariance;
    const data::Preprocessor full = data::fit_preprocessor(dn.X, fit, po);  // every eigenvalue above the null space
    po.pca_dim = k;
    const data::Preprocessor pd = data::fit_preprocessor(dn.X, fit, po);
    const data::Preprocessor ps = data::fit_preprocessor(s.Xs, fit, po);
    ASSERT_EQ(ps.route, "sparse-svd");
    ASSERT_EQ(ps.basis.rows, 64);
    ASSERT_EQ(ps.basis.cols, k);
    ASSERT_EQ(pd.basis.cols, k);
    EXPECT_LT(ps.svd_residual, tau);
    // Statistics: sums over stored values plus implicit zeros, in another order than the
    // dense ordered sums: relative rounding ≲ n·ε (ratio of sums of n terms).
    for (int64_t j = 0; j < 64; ++j) {
      const size_t J = static_cast<size_t>(j);
      EXPECT_NEAR(ps.mean[J], pd.mean[J], 1e-13 * n * (1 + std::abs(pd.mean[J]))) << "mean " << j;
      if (!pd.scale.empty()) EXPECT_NEAR(ps.scale[J], pd.scale[J], 1e-13 * n * std::abs(pd.scale[J])) << "scale " << j;
      if (!pd.shift.empty()) EXPECT_NEAR(ps.shift[J], pd.shift[J], 1e-13 * n * (1 + std::abs(pd.shift[J]))) << "shift " << j;
    }
    EXPECT_NEAR(ps.total_variance, full.total_variance, 1e-13 * n * full.total_variance);
    // Singular-value gaps from the dense spectrum.
    const std::vector<double>& lam = full.eigenvalues;
    ASSERT_GT(static_cast<int64_t>(lam.size()), k);
    const double lmax = lam.front();
    const Dense Yd = allgather(data::apply(pd, dn.X, all));
    const Dense Ys = allgather(data::apply(ps, s.Xs, all));
    // Row norms ‖z_i‖ of the centered, scaled rows (the dense map without PCA).
    data::Preprocessor center = pd;
    center.basis = Dense();
    const Dense Z = allgather(data::apply(center, dn.X));
    std::vector<double> znorm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      double t = 0;
      for (int64_t j = 0; j < 64; ++j) t += Z(i, j) * Z(i, j);
      znorm[static_cast<size_t>(i)] = std::sqrt(t);
    }
    for (int64_t t = 0; t < k; ++t) {
      const double sk = std::sqrt(n_fit * lam[static_cast<size_t>(t)]);
      double g = INFINITY, gl = INFINITY;
      for (size_t j = 0; j < lam.size(); ++j)
        if (static_cast<int64_t>(j) != t) {
          g = std::min(g, std::abs(sk - std::sqrt(n_fit * lam[j])));
          gl = std::min(gl, std::abs(lam[static_cast<size_t>(t)] - lam[j]));
        }
      const double bound_v = slack * (std::sqrt(2.0) * tau * sk / g + c * eps * lmax / gl);
      EXPECT_NEAR(ps.eigenvalues[static_cast<size_t>(t)], pd.eigenvalues[static_cast<size_t>(t)],
                  slack * (2 * tau * pd.eigenvalues[static_cast<size_t>(t)] + c * eps * lmax))
          << "eigenvalue " << t;
      // The sign rule cannot flip: the two largest |entries| of the column differ by more than the bound.
      std::vector<double> mag(64);
      for (int64_t j = 0; j < 64; ++j) mag[static_cast<size_t>(j)] = std::abs(pd.basis(j, t));
      std::sort(mag.rbegin(), mag.rend());
      ASSERT_GT(mag[0] - mag[1], 2 * bound_v) << "component " << t << ": the sign rule is ill-conditioned here";
      double dv = 0;
      for (int64_t j = 0; j < 64; ++j) dv = std::max(dv, std::abs(ps.basis(j, t) - pd.basis(j, t)));
      EXPECT_LT(dv, bound_v) << "basis column " << t;
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(Ys(i, t), Yd(i, t), bound_v * znorm[static_cast<size_t>(i)] + 1e-12 * (1 + znorm[static_cast<size_t>(i)]))
            << "score of row " << i << ", component " << t;
    }
  }
}

TEST(SparsePca, AModelProjectsSparseRowsWithTheFitsBitsAndAsItsDenseRowsWithinRounding) {
  // transform/predict on sparse data: model::project(m, Xs) must give the bits of the fit's
  // own path (data::apply on the sparse rows, then the preprocessed rows through W), on any
  // rank count, and the dense raw rows' projection within rounding.
  // Error analysis (sparse vs dense): both compute y = Wᵀ(Vᵀ(x∘s) − Vᵀc) from the same V, s,
  // c; they differ only in summation order (sparse: over the stored values then minus Vᵀc;
  // dense: the GEMM over all 64 centered entries). Each score differs by at most
  // 2·d·ε·Σ_j |x_j s_j v_j| + |c_j v_j| ≤ 2·64·ε·(‖x∘s‖₁ + ‖c‖₁)·max|V| (|V| ≤ 1, orthonormal
  // columns), and W (entries ≤ 1 in magnitude here, 10 rows) adds a factor 10 and its own
  // rounding: bound 10·(2·64·ε·(‖x∘s‖₁ + ‖c‖₁)) + 1e-13, with a factor 10 of slack.
  const auto [s, dn] = read_digits_sparse_and_dense();
  std::vector<char> fit(static_cast<size_t>(s.Xs.n_local));
  for (int64_t i = 0; i < s.Xs.n_local; ++i) fit[static_cast<size_t>(i)] = s.Xs.row_start + i < 1500;
  data::PreprocessOptions po;
  po.scaling = data::Scaling::standardize;
  po.pca_dim = 10;
  const data::Preprocessor pre = data::fit_preprocessor(s.Xs, fit, po);
  model::Model m;
  m.method = "soda";
  m.d_input = 64;
  m.classes = 10;
  m.shift = pre.shift;
  m.scale = pre.scale;
  m.mean = pre.mean;
  m.basis = pre.basis;
  m.W = Dense(10, 3);
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 3; ++j) m.W(i, j) = std::sin(1.0 + static_cast<double>(i * 3 + j));
  const Dense Y = allgather(model::project(m, s.Xs));
  const std::vector<char> all(static_cast<size_t>(s.Xs.n_local), 1);
  const Dense Yfit = allgather(model::project_preprocessed(m, data::apply(pre, s.Xs, all)));
  const Dense Yd = allgather(model::project(m, dn.X));
  ASSERT_EQ(Y.rows, 1797);
  ASSERT_EQ(Y.cols, 3);
  EXPECT_EQ(Y.v, Yfit.v);  // the same bits as the fit's path
  const Dense X = allgather(dn.X);
  double c1 = 0;  // ‖c‖₁, c = shift∘scale + mean (standardize sets both)
  for (int64_t j = 0; j < 64; ++j)
    c1 += std::abs(pre.shift[static_cast<size_t>(j)] * pre.scale[static_cast<size_t>(j)] + pre.mean[static_cast<size_t>(j)]);
  constexpr double eps = 2.2e-16;
  double largest = 0;
  for (int64_t i = 0; i < Y.rows; ++i) {
    double x1 = 0;
    for (int64_t j = 0; j < 64; ++j) x1 += std::abs(X(i, j) * pre.scale[static_cast<size_t>(j)]);
    const double bound = 10 * (10 * 2 * 64 * eps * (x1 + c1) + 1e-13);
    for (int64_t t = 0; t < 3; ++t) {
      ASSERT_NEAR(Y(i, t), Yd(i, t), bound) << "row " << i << ", column " << t;
      largest = std::max(largest, std::abs(Y(i, t)));
    }
  }
  EXPECT_GT(largest, 1.0);  // the embedding is not trivially zero
}

TEST(SparsePca, EnergyRuleKeepsTheFewestComputedComponentsReachingTheFractionOfTheTotalVariance) {
  const auto [s, dn] = read_digits_sparse_and_dense();
  std::vector<char> fit(static_cast<size_t>(dn.X.n_local), 1);
  data::PreprocessOptions po;
  po.pca_energy = 0.5;
  po.route = data::PcaRoute::covariance;
  const data::Preprocessor pd = data::fit_preprocessor(dn.X, fit, po);  // the dense answer (all d eigenvalues)
  ASSERT_LT(pd.basis.cols, 20);
  po.pca_dim = 20;
  const data::Preprocessor ps = data::fit_preprocessor(s.Xs, fit, po);
  EXPECT_EQ(ps.basis.cols, pd.basis.cols);
  // A cap below the energy's count wins.
  po.pca_dim = pd.basis.cols - 1;
  EXPECT_EQ(data::fit_preprocessor(s.Xs, fit, po).basis.cols, pd.basis.cols - 1);
  EXPECT_EQ(data::fit_preprocessor(dn.X, fit, po).basis.cols, pd.basis.cols - 1);
}

TEST(SparsePca, RefusesSparseDataWithoutPcaDimOrWithNoPcaOnEveryRank) {
  test::TempDir dir("sparse");
  const std::string path = dir.file("digits.libsvm");
  write_digits_libsvm(path);
  io::ReadOptions ro;
  ro.sparse = io::Sparsity::sparse;
  const io::Dataset s = io::read_dataset(path, io::Format::libsvm, MPI_COMM_WORLD, ro);
  std::vector<char> fit(static_cast<size_t>(s.Xs.n_local), 1);
  data::PreprocessOptions po;
  EXPECT_THROW(data::fit_preprocessor(s.Xs, fit, po), Error);
  po.pca_dim = 5;
  po.pca = false;
  EXPECT_THROW(data::fit_preprocessor(s.Xs, fit, po), Error);
  po.pca = true;
  po.pca_dim = 65;  // more than d
  EXPECT_THROW(data::fit_preprocessor(s.Xs, fit, po), Error);
}

TEST(Preprocess, WideDenseDataTakeTheGramRouteWithoutAFeatureByFeatureMatrix) {
  // 30 samples × 20 000 features (the case, once minutes and 5 GB per rank): the
  // automatic route is the 30×30 Gram matrix, the basis is 20 000 × (at most 29), and the
  // process' peak resident memory stays far below one 20 000² matrix (3.2 GB).
  const int64_t n = 30, d = 20000;
  DistMatrix X = make_dist(MPI_COMM_WORLD, n, d);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const double v = u(rng);
      if (i >= X.row_start && i < X.row_start + X.n_local) X(i - X.row_start, j) = v;
    }
  std::vector<char> fit(static_cast<size_t>(X.n_local), 1);
  const data::Preprocessor p = data::fit_preprocessor(X, fit, data::PreprocessOptions{});
  EXPECT_EQ(p.route, "gram");
  EXPECT_EQ(p.basis.rows, d);
  EXPECT_EQ(p.basis.cols, n - 1);  // centering removes one dimension
  const DistMatrix Y = data::apply(p, X);
  EXPECT_EQ(Y.cols, n - 1);
}
