// The baselines (src/methods/baselines.cpp): OLDA (Ye 2005; soda-nie2009 eq. (2)), SDA
// (Cai, He, Han 2007), PCA and plain 1-NN, against serial dense references written here
// from the papers' definitions (LAPACK on the replicated data), the papers' identities,
// and the same results for any rank count.
#include <gtest/gtest.h>
#include <petscmat.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "methods/impls/baselines_internal.hpp"
#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/methods/method.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

// ---------------------------------------------------------------- data and small helpers

using test::local_part;
using test::max_abs;
using test::mul;
using test::Problem;

Problem load(const std::string& name, int p, bool standardized) { return test::load_problem(name, p, standardized); }

/// Runs a method from the table on the distributed X with the semi-supervised labels.
methods::FitResult run(const std::string& method, const Problem& pr, const DistMatrix& X,
                       const methods::MethodOptions& o = {}) {
  const std::vector<int> lab = local_part(pr.semi, X);
  methods::TrainingData td{X, lab, pr.classes};
  methods::Timings t;
  return methods::find_method(method).fit(td, o, t);
}

double trace_of(const Dense& A) {
  double t = 0;
  for (int64_t i = 0; i < A.rows; ++i) t += A(i, i);
  return t;
}

// ------------------------------------------------------------------ serial dense references

/// LDA's scatter matrices of the labeled samples by their definitional sums (eq. (4)–(6) of
/// soda-nie2009 divided by l): S_t = Σ(x−m)(x−m)ᵀ/l, S_b = Σ_k l_k(m_k−m)(m_k−m)ᵀ/l,
/// S_w = Σ(x−m_k)(x−m_k)ᵀ/l.
struct Scatter {
  Dense Sb, Sw, St;
};
Scatter labeled_scatter_dense(const Problem& pr) {
  const int64_t d = pr.X.cols;
  const int c = pr.classes;
  std::vector<double> mean(static_cast<size_t>(d)), cnt(static_cast<size_t>(c));
  Dense means(d, c);
  double l = 0;
  for (int64_t i = 0; i < pr.X.rows; ++i) {
    const int k = pr.semi[static_cast<size_t>(i)];
    if (k < 0) continue;
    l += 1;
    cnt[static_cast<size_t>(k)] += 1;
    for (int64_t t = 0; t < d; ++t) {
      mean[static_cast<size_t>(t)] += pr.X(i, t);
      means(t, k) += pr.X(i, t);
    }
  }
  for (int64_t t = 0; t < d; ++t) mean[static_cast<size_t>(t)] /= l;
  for (int k = 0; k < c; ++k)
    for (int64_t t = 0; t < d; ++t) means(t, k) /= cnt[static_cast<size_t>(k)];
  Scatter S{Dense(d, d), Dense(d, d), Dense(d, d)};
  for (int64_t i = 0; i < pr.X.rows; ++i) {
    const int k = pr.semi[static_cast<size_t>(i)];
    if (k < 0) continue;
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b) {
        S.St(a, b) += (pr.X(i, a) - mean[static_cast<size_t>(a)]) * (pr.X(i, b) - mean[static_cast<size_t>(b)]) / l;
        S.Sw(a, b) += (pr.X(i, a) - means(a, k)) * (pr.X(i, b) - means(b, k)) / l;
      }
  }
  for (int k = 0; k < c; ++k)
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b)
        S.Sb(a, b) += cnt[static_cast<size_t>(k)] / l * (means(a, k) - mean[static_cast<size_t>(a)]) *
                      (means(b, k) - mean[static_cast<size_t>(b)]);
  return S;
}

/// Ye 2005's OLDA algorithm by SVDs of the precursors: H_t = [x_i − m]/√l (d×l),
/// H_b = [√(l_k/l)(m_k − m)] (d×c); H_t = U Σ Vᵀ (rank t); B = Σ_t⁻¹U_tᵀH_b = P Σ̂ Qᵀ;
/// X = U_tΣ_t⁻¹P_m; G = QR(X). A route independent of the implementation's eigen-solves.
Dense olda_reference(const Problem& pr, int64_t m) {
  const int64_t d = pr.X.cols;
  const int c = pr.classes;
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < pr.X.rows; ++i)
    if (pr.semi[static_cast<size_t>(i)] >= 0) idx.push_back(i);
  const int64_t l = static_cast<int64_t>(idx.size());
  std::vector<double> mean(static_cast<size_t>(d)), cnt(static_cast<size_t>(c));
  Dense means(d, c);
  for (int64_t i : idx) {
    const int k = pr.semi[static_cast<size_t>(i)];
    cnt[static_cast<size_t>(k)] += 1;
    for (int64_t t = 0; t < d; ++t) {
      mean[static_cast<size_t>(t)] += pr.X(i, t) / static_cast<double>(l);
      means(t, k) += pr.X(i, t);
    }
  }
  Dense Ht(d, l), Hb(d, c);
  for (int64_t j = 0; j < l; ++j)
    for (int64_t t = 0; t < d; ++t)
      Ht(t, j) = (pr.X(idx[static_cast<size_t>(j)], t) - mean[static_cast<size_t>(t)]) / std::sqrt(static_cast<double>(l));
  for (int k = 0; k < c; ++k)
    for (int64_t t = 0; t < d; ++t)
      Hb(t, k) = std::sqrt(cnt[static_cast<size_t>(k)] / static_cast<double>(l)) *
                 (means(t, k) / cnt[static_cast<size_t>(k)] - mean[static_cast<size_t>(t)]);
  const int64_t r = std::min(d, l);
  std::vector<double> s(static_cast<size_t>(r));
  Dense U(d, r), Vt(r, l);
  lapack::gesvd(d, l, Ht.data(), d, s.data(), U.data(), d, Vt.data(), r);
  int64_t t = 0;
  while (t < r && s[static_cast<size_t>(t)] > 1e-5 * s[0]) ++t;
  Dense B(t, c);  // Σ_t⁻¹ U_tᵀ H_b
  for (int64_t i = 0; i < t; ++i)
    for (int k = 0; k < c; ++k) {
      double v = 0;
      for (int64_t a = 0; a < d; ++a) v += U(a, i) * Hb(a, k);
      B(i, k) = v / s[static_cast<size_t>(i)];
    }
  const int64_t rb = std::min<int64_t>(t, c);
  std::vector<double> sb(static_cast<size_t>(rb));
  Dense P(t, rb), Qt(rb, c);
  lapack::gesvd(t, c, B.data(), t, sb.data(), P.data(), t, Qt.data(), rb);
  Dense X(d, m);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t a = 0; a < d; ++a) {
      double v = 0;
      for (int64_t i = 0; i < t; ++i) v += U(a, i) / s[static_cast<size_t>(i)] * P(i, j);
      X(a, j) = v;
    }
  lapack::orthonormalize(d, m, X.data(), d);
  return X;
}

/// Moore–Penrose inverse of a symmetric PSD matrix (eigenvalues ≤ 1e-10·λ_max dropped).
Dense pinv_psd(const Dense& S) {
  const int64_t d = S.rows;
  Dense V = S;
  std::vector<double> w(static_cast<size_t>(d));
  lapack::syev(d, V.data(), d, w.data());
  Dense P(d, d);
  const double tol = 1e-10 * w.back();
  for (int64_t k = 0; k < d; ++k) {
    if (w[static_cast<size_t>(k)] <= tol) continue;
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b) P(a, b) += V(a, k) * V(b, k) / w[static_cast<size_t>(k)];
  }
  return P;
}

/// Brute-force 0/1 kNN graph (n×n dense; small n only): j ∈ kNN(i) by (squared distance
/// Σ_t (x_it − x_jt)², index), symmetrized by union.
Dense knn_binary_graph(const Dense& X, int k) {
  const int64_t n = X.rows;
  Dense A(n, n);
  std::vector<double> d2(static_cast<size_t>(n));
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < X.cols; ++t) s += (X(i, t) - X(j, t)) * (X(i, t) - X(j, t));
      d2[static_cast<size_t>(j)] = s;
    }
    std::iota(order.begin(), order.end(), 0);
    order.erase(order.begin() + i);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      return d2[static_cast<size_t>(a)] != d2[static_cast<size_t>(b)] ? d2[static_cast<size_t>(a)] < d2[static_cast<size_t>(b)] : a < b;
    });
    order.resize(static_cast<size_t>(n));
    for (int q = 0; q < k; ++q) {
      A(i, order[static_cast<size_t>(q)]) = 1;
      A(order[static_cast<size_t>(q)], i) = 1;
    }
  }
  return A;
}

/// The paper's X L Xᵀ with samples as our rows: Xᵀ(D − A)X.
Dense graph_scatter_dense(const Dense& X, const Dense& A) {
  const int64_t n = X.rows;
  Dense L(n, n);
  for (int64_t i = 0; i < n; ++i) {
    double deg = 0;
    for (int64_t j = 0; j < n; ++j) {
      L(i, j) = -A(i, j);
      deg += A(i, j);
    }
    L(i, i) += deg;
  }
  return mul(X, mul(L, X), 'T', 'N');
}

/// The m largest generalized eigenvectors of A x = λ B x (dsygvd), largest first.
Dense top_generalized(const Dense& A, const Dense& B, int64_t m, std::vector<double>* values) {
  const int64_t d = A.rows;
  Dense V = A, Bc = B;
  std::vector<double> w(static_cast<size_t>(d));
  lapack::sygv(d, V.data(), d, Bc.data(), d, w.data());
  Dense W(d, m);
  values->clear();
  for (int64_t j = 0; j < m; ++j) {
    values->push_back(w[static_cast<size_t>(d - 1 - j)]);
    for (int64_t i = 0; i < d; ++i) W(i, j) = V(i, d - 1 - j);
  }
  return W;
}

// ----------------------------------------------------- the pipeline on 1 rank vs all ranks

/// fit_and_evaluate with `method` on a data set on every rank of MPI_COMM_WORLD, and on rank 0
/// alone (MPI_COMM_SELF): accuracies must be identical and W must agree (up to column signs
/// or, when `subspace`, as a subspace).
void expect_same_for_any_rank_count(const std::string& method, const std::string& file, int p,
                                    bool subspace) {
  driver::FitConfig cfg;
  cfg.method = method;
  cfg.preprocess.scaling = data::Scaling::standardize;
  const data::SplitSpec spec = test::transductive_split(p, 0.6, 5);
  const test::SerialAndDistributed r = test::fit_serial_and_distributed(file, spec, cfg, false);
  const Dense& Wd = r.dist.model.W;
  const Dense& Ws = r.W_serial;
  ASSERT_EQ(Wd.rows, Ws.rows) << method;
  ASSERT_EQ(Wd.cols, Ws.cols) << method;
  EXPECT_EQ(r.dist.accuracy.correct_unlabeled, r.serial_accuracy.correct_unlabeled) << method;
  EXPECT_EQ(r.dist.accuracy.correct_unseen, r.serial_accuracy.correct_unseen) << method;
  const double scale = max_abs(Ws);
  if (subspace)
    EXPECT_LT(test::max_abs_diff(ref::projector(Wd), ref::projector(Ws)), 1e-8) << method;
  else
    EXPECT_LT(test::max_diff_up_to_column_sign(Wd, Ws), 1e-8 * scale) << method;
  EXPECT_GT(r.dist.accuracy.unlabeled, 1.0 / r.classes + 0.2) << method;  // far above chance
}

}  // namespace

// ======================================================================================= OLDA

TEST(Olda, SpansTheSubspaceOfYesSvdAlgorithm) {
  // iris (l = 9 > d = 4), standardized wine (l = 9 < d = 13, undersampled) and digits with
  // 5 labels per class (l = 50 < d = 64, constant pixels: S_t singular in many directions).
  struct Case {
    const char* file;
    int p;
    bool standardized;
  };
  for (const Case& cs : {Case{"iris.csv", 3, false}, Case{"wine.csv", 3, true}, Case{"digits.csv", 5, false}}) {
    Problem pr = load(cs.file, cs.p, cs.standardized);
    DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    auto r = run("olda", pr, X);
    ASSERT_EQ(r.W.rows, pr.X.cols) << cs.file;
    ASSERT_EQ(r.W.cols, pr.classes - 1) << cs.file;
    const Dense G = olda_reference(pr, pr.classes - 1);
    EXPECT_LT(test::max_abs_diff(ref::projector(r.W), ref::projector(G)), 1e-8) << cs.file;
  }
}

TEST(Olda, IsOrthonormalAndAttainsTheMaximalRatioTrace) {
  // Ye 2005 (Theorem 3.1 / sec. 4): the criterion tr((GᵀS_tG)⁺GᵀS_bG) is at most
  // tr(S_t⁺S_b) and OLDA's G (c−1 columns) attains it; it is invariant under G ↦ GM, so
  // the orthonormalization costs nothing.
  for (const char* file : {"iris.csv", "digits.csv"}) {
    Problem pr = load(file, 5, false);
    DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    auto r = run("olda", pr, X);
    const Dense& W = r.W;
    const Dense WtW = mul(W, W, 'T', 'N');
    EXPECT_LT(test::max_abs_diff(WtW, Dense::identity(W.cols)), 1e-12) << file;
    const Scatter S = labeled_scatter_dense(pr);
    const Dense StW = mul(W, mul(S.St, W), 'T', 'N');
    const Dense SbW = mul(W, mul(S.Sb, W), 'T', 'N');
    Dense ratio = SbW, K = StW;  // (WᵀS_tW)⁻¹WᵀS_bW, WᵀS_tW is SPD (W lies in range(S_t))
    lapack::posv(K.rows, ratio.cols, K.data(), K.rows, ratio.data(), ratio.rows);
    const double best = trace_of(mul(pinv_psd(S.St), S.Sb));
    EXPECT_NEAR(trace_of(ratio), best, 1e-8 * best) << file;
    // The eigenvalues recorded are those of S_t⁺S_b, and they sum to the same maximum.
    const std::vector<double> ev = r.info.at("eigenvalues").get<std::vector<double>>();
    EXPECT_NEAR(std::accumulate(ev.begin(), ev.end(), 0.0), best, 1e-8 * best) << file;
  }
}

TEST(Olda, CollapsesEachLabeledClassWhenTheDataAreUndersampled) {
  // Ye 2005 sec. 5: when rank(S_t) = rank(S_b) + rank(S_w) (l = 50 digits in d = 64, in
  // general position) every eigenvalue of S_t⁺S_b kept is 1 and GᵀS_wG = 0: each labeled
  // class maps to a single point.
  Problem pr = load("digits.csv", 5, false);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto r = run("olda", pr, X);
  EXPECT_EQ(r.info.at("rank_St").get<int64_t>(), 49);
  for (double v : r.info.at("eigenvalues").get<std::vector<double>>()) EXPECT_NEAR(v, 1.0, 1e-9);
  const Scatter S = labeled_scatter_dense(pr);
  const Dense SwW = mul(r.W, mul(S.Sw, r.W), 'T', 'N');
  const Dense SbW = mul(r.W, mul(S.Sb, r.W), 'T', 'N');
  EXPECT_LT(max_abs(SwW), 1e-9 * max_abs(SbW));
  EXPECT_GT(max_abs(SbW), 0.0);
}

TEST(Olda, RejectsADimensionAboveTheRankOfTheTotalScatter) {
  Problem pr = load("iris.csv", 1, false);  // l = 3: rank(S_t) = 2
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  methods::MethodOptions o;
  o.dim = 3;
  EXPECT_THROW(run("olda", pr, X, o), ssdr::Error);
  o.dim = 2;
  EXPECT_EQ(run("olda", pr, X, o).W.cols, 2);
}

TEST(Olda, GivesTheSameSubspaceAndAccuracyForAnyRankCount) {
  expect_same_for_any_rank_count("olda", "wine.csv", 3, true);
}

// ======================================================================================== SDA

TEST(Sda, GraphScatterEqualsTheDenseFormula) {
  // X L Xᵀ from the distributed 0/1 kNN graph (k = 5) against Xᵀ(D − A)X with a brute-force
  // dense graph, and against the edge form ½Σ_ij A_ij (x_i − x_j)(x_i − x_j)ᵀ's trace.
  Problem pr = load("wine.csv", 3, true);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  graph::GraphOptions go;
  go.k = 5;
  go.weight = graph::EdgeWeight::binary;
  auto g = graph::build_knn_graph(X, go);
  Owned<Mat> L = graph::laplacian(g.A);
  const Dense C = methods::baselines::graph_scatter(L, X);
  const Dense A = knn_binary_graph(pr.X, 5);
  const Dense Cr = graph_scatter_dense(pr.X, A);
  double edges = 0, edge_form = 0;
  for (int64_t i = 0; i < A.rows; ++i)
    for (int64_t j = 0; j < A.rows; ++j) {
      edges += A(i, j) / 2;
      double s = 0;
      for (int64_t t = 0; t < pr.X.cols; ++t) s += (pr.X(i, t) - pr.X(j, t)) * (pr.X(i, t) - pr.X(j, t));
      edge_form += 0.5 * A(i, j) * s;
    }
  EXPECT_EQ(g.edges, static_cast<int64_t>(edges));
  EXPECT_LT(test::max_abs_diff(C, Cr), 1e-11 * max_abs(Cr));
  EXPECT_NEAR(trace_of(C), edge_form, 1e-11 * edge_form);
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < i; ++j) EXPECT_EQ(C(i, j), C(j, i));  // exactly symmetric
  // Columns a few at a time (the memory bound of a wide X): the same bits as all 13 at once.
  for (int64_t block : {1, 3, 5, 12, 13, 40}) {
    const Dense Cb = methods::baselines::graph_scatter(L, X, block);
    ASSERT_EQ(Cb.v.size(), C.v.size());
    for (size_t q = 0; q < C.v.size(); ++q) ASSERT_EQ(Cb.v[q], C.v[q]) << "block " << block << ", entry " << q;
  }
}

TEST(Sda, AgreesWithTheSerialDenseReference) {
  // max aᵀS_b a / aᵀ(S_t + α_eff XLXᵀ + β_eff I)a with α_eff = α tr(S_t)/tr(XLXᵀ),
  // β_eff = β tr(S_t)/d, at the defaults (α = 1, β = 1e-3) and at α = 5, β = 0.1; columns
  // of unit length by default, B-orthonormal with --normalize metric.
  for (const char* file : {"wine.csv", "breast_cancer.csv"}) {
    Problem pr = load(file, 3, true);
    DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    const Scatter S = labeled_scatter_dense(pr);
    const Dense XLX = graph_scatter_dense(pr.X, knn_binary_graph(pr.X, 5));
    const int64_t d = pr.X.cols, m = pr.classes - 1;
    for (const auto& ab : {std::pair<double, double>{1.0, 1e-3}, std::pair<double, double>{5.0, 0.1}}) {
      methods::MethodOptions o;
      if (ab.first != 1.0) {
        o.alpha = ab.first;
        o.beta = ab.second;
      }
      auto r = run("sda", pr, X, o);
      methods::MethodOptions om = o;
      om.normalization = methods::Normalization::metric;
      om.normalization_given = true;
      auto rm = run("sda", pr, X, om);
      const double a_eff = ab.first * trace_of(S.St) / trace_of(XLX);
      const double b_eff = ab.second * trace_of(S.St) / static_cast<double>(d);
      EXPECT_NEAR(r.info.at("alpha").get<double>(), ab.first, 0.0);
      EXPECT_NEAR(r.info.at("alpha_eff").get<double>(), a_eff, 1e-10 * a_eff) << file;
      EXPECT_NEAR(r.info.at("beta_eff").get<double>(), b_eff, 1e-10 * b_eff) << file;
      Dense B = S.St;
      for (size_t i = 0; i < B.v.size(); ++i) B.v[i] += a_eff * XLX.v[i];
      for (int64_t i = 0; i < d; ++i) B(i, i) += b_eff;
      std::vector<double> values;
      const Dense Wr = top_generalized(S.Sb, B, m, &values);
      ASSERT_EQ(r.W.cols, m);
      ASSERT_EQ(rm.W.cols, m);
      EXPECT_EQ(r.info.at("normalization"), "unit");
      EXPECT_EQ(rm.info.at("normalization"), "metric");
      const Dense Wu = ref::unit_columns(Wr);
      EXPECT_LT(test::max_diff_up_to_column_sign(r.W, Wu), 1e-7) << file << " α=" << ab.first;
      EXPECT_LT(test::max_diff_up_to_column_sign(rm.W, Wr), 1e-7 * max_abs(Wr)) << file << " α=" << ab.first;
      const auto ev = r.info.at("eigenvalues").get<std::vector<double>>();
      for (int64_t j = 0; j < m; ++j) EXPECT_NEAR(ev[static_cast<size_t>(j)], values[static_cast<size_t>(j)], 1e-9 * values[0]);
      // Unit columns by default; B-orthonormal with metric: WᵀBW = I.
      EXPECT_LT(test::max_unit_norm_error(r.W), 1e-12);
      EXPECT_LT(test::max_abs_diff(mul(rm.W, mul(B, rm.W), 'T', 'N'), Dense::identity(m)), 1e-8);
    }
  }
}

TEST(Sda, WithoutTheGraphTermIsRegularizedLda) {
  // α = 0: S_b a = λ(S_t + 1e-3·tr(S_t)/d·I)a, the `lda` method with its default regularization.
  Problem pr = load("digits.csv", 5, false);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  methods::MethodOptions o;
  o.alpha = 0;
  auto sda = run("sda", pr, X, o);
  auto lda = run("lda", pr, X);
  EXPECT_NEAR(sda.info.at("beta_eff").get<double>(), lda.info.at("regularization").get<double>(), 0.0);
  ASSERT_EQ(sda.W.cols, lda.W.cols);
  EXPECT_LT(test::max_diff_up_to_column_sign(sda.W, lda.W), 1e-10 * max_abs(lda.W));
  // And the graph term changes the answer when α > 0.
  auto sda1 = run("sda", pr, X);
  EXPECT_GT(test::max_abs_diff(ref::projector(sda1.W), ref::projector(lda.W)), 1e-3 * max_abs(ref::projector(lda.W)));
}

TEST(Sda, RejectsNegativeParameters) {
  Problem pr = load("iris.csv", 3, false);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  methods::MethodOptions o;
  o.alpha = -1;
  EXPECT_THROW(run("sda", pr, X, o), ssdr::Error);
  o.alpha = 1;
  o.beta = -1e-3;
  EXPECT_THROW(run("sda", pr, X, o), ssdr::Error);
}

TEST(Sda, GivesTheSameProjectionAndAccuracyForAnyRankCount) {
  expect_same_for_any_rank_count("sda", "wine.csv", 3, false);
}

// ======================================================================================== PCA

TEST(Pca, RecoversTheCovarianceEigenvectors) {
  // digits shifted by a constant (PCA must center) in an uneven layout (the labeled rows
  // of every rank: any layout is allowed); 5 components against dsyevd on the dense
  // covariance. Labels play no role.
  Problem pr = load("digits.csv", 5, false);
  for (double& v : pr.X.v) v += 100.0;
  DistMatrix Xall = ref::distribute(pr.X, MPI_COMM_WORLD);
  std::vector<char> keep(static_cast<size_t>(Xall.n_local));
  for (int64_t i = 0; i < Xall.n_local; ++i) keep[static_cast<size_t>(i)] = (Xall.row_start + i) % 3 != 1 || i < 50;
  DistMatrix X = select_rows(Xall, keep);
  std::vector<char> keep_all(static_cast<size_t>(pr.X.rows));
  {
    const std::vector<int> k_local(keep.begin(), keep.end());
    const std::vector<int> k_all = allgatherv(k_local, MPI_COMM_WORLD);  // rows in rank order
    for (size_t i = 0; i < k_all.size(); ++i) keep_all[i] = static_cast<char>(k_all[i]);
  }
  Problem sub;
  sub.X = ref::rows(pr.X, keep_all);
  sub.classes = pr.classes;
  for (size_t i = 0; i < keep_all.size(); ++i)
    if (keep_all[i]) sub.semi.push_back(pr.semi[i]);
  methods::MethodOptions o;
  o.dim = 5;
  auto r = run("pca", sub, X, o);

  const int64_t n = sub.X.rows, d = sub.X.cols;
  Dense C(d, d);
  std::vector<double> mean(static_cast<size_t>(d));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = 0; t < d; ++t) mean[static_cast<size_t>(t)] += sub.X(i, t) / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b)
        C(a, b) += (sub.X(i, a) - mean[static_cast<size_t>(a)]) * (sub.X(i, b) - mean[static_cast<size_t>(b)]) / static_cast<double>(n);
  std::vector<double> w(static_cast<size_t>(d));
  Dense V = C;
  lapack::syev(d, V.data(), d, w.data());
  Dense Wr(d, 5);
  for (int j = 0; j < 5; ++j)
    for (int64_t i = 0; i < d; ++i) Wr(i, j) = V(i, d - 1 - j);
  ASSERT_EQ(r.W.cols, 5);
  EXPECT_LT(test::max_diff_up_to_column_sign(r.W, Wr), 1e-8);
  const auto ev = r.info.at("eigenvalues").get<std::vector<double>>();
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(ev[static_cast<size_t>(j)], w[static_cast<size_t>(d - 1 - j)], 1e-10 * w.back());
  // The default is m = c − 1.
  EXPECT_EQ(run("pca", sub, X).W.cols, pr.classes - 1);
}

TEST(Pca, GivesTheSameProjectionAndAccuracyForAnyRankCount) {
  expect_same_for_any_rank_count("pca", "wine.csv", 3, false);
}

// ======================================================================================= 1-NN

TEST(OneNnBaseline, IsTheIdentityOnThePreprocessedData) {
  Problem pr = load("iris.csv", 3, false);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto r = run("1nn", pr, X);
  EXPECT_EQ(test::max_abs_diff(r.W, Dense::identity(pr.X.cols)), 0.0);
  methods::MethodOptions o;
  o.dim = 2;
  EXPECT_THROW(run("1nn", pr, X, o), ssdr::Error);
}

TEST(OneNnBaseline, AccuracyEqualsBruteForceOneNnOnTheRawData) {
  // The pipeline (centering + PCA that keeps the full-rank transductive covariance, W = I,
  // distributed 1-NN) against serial brute-force 1-NN on the raw features: the counts of
  // correct unlabeled and unseen samples must be identical.
  for (const char* file : {"wine.csv", "breast_cancer.csv"}) {
    const std::string path = test::data_path(file);
    io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
    const data::SplitSpec spec = test::transductive_split(3, 0.5, 3);
    const auto roles = test::split(ds, spec);
    const auto all_roles = test::split_all(path, io::Format::csv, spec);  // every sample's
    driver::FitConfig cfg;
    cfg.method = "1nn";
    auto out = driver::fit_and_evaluate(ds, roles, cfg, false);

    Dense Xr;
    std::vector<int> labels;
    test::load_csv_replicated(file, Xr, labels);
    int64_t correct[2] = {0, 0}, total[2] = {0, 0};
    for (int64_t i = 0; i < Xr.rows; ++i) {
      const auto role = all_roles[static_cast<size_t>(i)];
      if (role == data::Role::labeled) continue;
      double best = INFINITY;
      int pred = -1;
      for (int64_t j = 0; j < Xr.rows; ++j) {
        if (all_roles[static_cast<size_t>(j)] != data::Role::labeled) continue;
        double s = 0;
        for (int64_t t = 0; t < Xr.cols; ++t) s += (Xr(i, t) - Xr(j, t)) * (Xr(i, t) - Xr(j, t));
        if (s < best) {
          best = s;
          pred = labels[static_cast<size_t>(j)];
        }
      }
      const int which = role == data::Role::unlabeled ? 0 : 1;
      total[which] += 1;
      correct[which] += pred == labels[static_cast<size_t>(i)];
    }
    // wine's transductive covariance is well conditioned: nothing is dropped. breast_cancer's
    // spans ten orders of magnitude, so PCA drops directions below 1e-10·λ_max (d' = 22 of
    // 30): distances change by far too little to change a neighbor.
    if (std::string(file) == "wine.csv") EXPECT_EQ(out.dim, Xr.cols) << file;
    EXPECT_LE(out.dim, Xr.cols) << file;
    EXPECT_EQ(out.accuracy.n_unlabeled, total[0]) << file;
    EXPECT_EQ(out.accuracy.n_unseen, total[1]) << file;
    EXPECT_EQ(out.accuracy.correct_unlabeled, correct[0]) << file;
    EXPECT_EQ(out.accuracy.correct_unseen, correct[1]) << file;
  }
}

TEST(OneNnBaseline, GivesTheSameAccuracyForAnyRankCount) {
  expect_same_for_any_rank_count("1nn", "wine.csv", 3, false);
}
