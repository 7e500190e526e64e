// Kernel feature maps (exact and Nyström), KSODA = SODA on the empirical kernel map, and
// out-of-sample transforms of kernel models, against serial dense LAPACK references.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/factories.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/model/model.hpp"
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
    t.flags.push_back(roles[static_cast<size_t>(ds.X.row_start + i)] != data::Role::unseen);
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
    EXPECT_EQ(f.Zt.cols, 150);
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
  for (const char* seeding : {"uniform", "kmeans++"}) {
    kernels::KernelOptions o = options(kernels::KernelType::polynomial, 25);
    o.landmark_seeding = seeding;
    const kernels::FeatureMap f = kernels::fit_feature_map(Xd, o);
    const kernels::FeatureMap again = kernels::fit_feature_map(Xd, o);
    EXPECT_EQ(f.Zt.v, again.Zt.v) << seeding;
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
    EXPECT_EQ(f.M.v, Ms.v) << seeding;
    o.seed = 8;
    EXPECT_NE(kernels::fit_feature_map(Xd, o).Zt.v, f.Zt.v) << seeding;
  }
}

TEST(Ksoda, EqualsSodaOnTheDenseEmpiricalKernelMapAndProjectsNewSamplesByEq40) {
  // The pipeline with ksoda (exact map, (xᵀy+1)^3 on globally scaled data) against SODA run
  // on Φ = UΛ^{1/2} from a serial LAPACK eigen-decomposition of L_c K L_c, with the graph
  // on the input samples; every sample (transductive and unseen) embedded by (40).
  const std::string path = test::data_path("iris.csv");
  io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const data::SplitSpec spec = test::transductive_split(3, 0.5, 5);
  const auto roles = data::make_split(ds.labels, ds.classes, spec);
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
  for (size_t g = 0; g < roles.size(); ++g)
    if (roles[g] != data::Role::unseen) semi.push_back(roles[g] == data::Role::labeled ? ds.labels[g] : -1);
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
  const methods::FitResult soda =
      methods::make_soda()->fit(methods::TrainingData{Phid, local, ds.classes, &Xtd}, cfg.method_options, t);
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
  const auto roles = data::make_split(ds.labels, ds.classes, spec);
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
    if (test::rank() == 0) model::save(out.model, file);
    MPI_Barrier(MPI_COMM_WORLD);
    const model::Model back = model::load_collective(file, MPI_COMM_WORLD);
    const DistMatrix Y = model::project(back, ds.X);
    EXPECT_EQ(Y.v, out.embedding.v) << "landmarks " << landmarks;  // bit for bit

    // The training rows of the embedding are Φ_c W with the Φ_c the method learned on.
    const Transductive tr = transductive(ds, roles, cfg.preprocess);
    const Dense Yt = allgather(multiply(kernels::apply(out.model.kernel, tr.Xt), out.model.W));
    const Dense Yall = allgather(out.embedding);
    double diff = 0;
    int64_t t = 0;
    for (size_t g = 0; g < roles.size(); ++g)
      if (roles[g] != data::Role::unseen) {
        for (int64_t c = 0; c < Yall.cols; ++c) diff = std::max(diff, std::abs(Yall(static_cast<int64_t>(g), c) - Yt(t, c)));
        ++t;
      }
    EXPECT_LT(diff, 1e-10 * max_abs(Yt)) << "landmarks " << landmarks;
    EXPECT_GT(out.accuracy.unlabeled, 0.85) << "landmarks " << landmarks;
  }
}
