// SSGDA and M-SSGDA (ssgda-zhang-yeung) against the paper's identities and serial dense
// references written here from the paper's formulas (n×n S = H K (K H K)⁺ K H with LAPACK on
// the replicated data, brute-force LP vertices, brute-force kNN).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "methods/impls/ssgda_internal.hpp"
#include "reference.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/methods/method.hpp"
#include "support.hpp"

using namespace ssdr;

namespace sd = ssdr::methods::ssgda_detail;

namespace {

using test::local_part;
using test::mul;

/// Moore–Penrose pseudo-inverse of a symmetric PSD matrix (eigenvalues > rtol·largest).
Dense pinv_sym(const Dense& A, double rtol) {
  Dense V = A;
  std::vector<double> w(static_cast<size_t>(A.rows));
  lapack::syev(A.rows, V.data(), A.rows, w.data());
  Dense P(A.rows, A.rows);
  for (int64_t l = 0; l < A.rows; ++l) {
    if (w[static_cast<size_t>(l)] <= rtol * w.back()) continue;
    for (int64_t i = 0; i < A.rows; ++i)
      for (int64_t j = 0; j < A.rows; ++j) P(i, j) += V(i, l) * V(j, l) / w[static_cast<size_t>(l)];
  }
  return P;
}

/// The paper's S = H K (K H K)⁺ K H (sec. III-B), dense n×n.
Dense paper_S(const Dense& K, double rtol) {
  const int64_t n = K.rows;
  Dense H = Dense::identity(n);
  for (double& v : H.v) v -= 1.0 / static_cast<double>(n);
  const Dense HK = mul(H, K);
  const Dense KHK = mul(K, HK);
  return mul(mul(HK, pinv_sym(KHK, rtol)), HK, 'N', 'T');
}

/// Serial CCCP of eq. (7) with the dense S: r_k = (e_kᵀSe_k/t_k²)1 − 2Se_k/t_k, unlabeled
/// rows to argmin_k r_ki, until E stops changing. Returns labels and iterations.
std::vector<int> reference_cccp(const Dense& S, const std::vector<int>& semi, int c, int* iterations,
                                std::vector<double>* objective) {
  const int64_t n = S.rows;
  Dense E(n, c);
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < c; ++k)
      E(i, k) = semi[static_cast<size_t>(i)] < 0 ? 1.0 / c : (semi[static_cast<size_t>(i)] == k ? 1.0 : 0.0);
  std::vector<int> lab(static_cast<size_t>(n));
  int it = 0;
  for (;;) {
    const Dense SE = mul(S, E);
    std::vector<double> t(static_cast<size_t>(c)), s(static_cast<size_t>(c));
    double J = 0;
    for (int k = 0; k < c; ++k) {
      for (int64_t i = 0; i < n; ++i) {
        t[static_cast<size_t>(k)] += E(i, k);
        s[static_cast<size_t>(k)] += E(i, k) * SE(i, k);
      }
      J += s[static_cast<size_t>(k)] / t[static_cast<size_t>(k)];
    }
    if (objective) objective->push_back(J);
    Dense En(n, c);
    for (int64_t i = 0; i < n; ++i) {
      int best = semi[static_cast<size_t>(i)];
      if (best < 0) {
        best = 0;
        double lo = 1e300;
        for (int k = 0; k < c; ++k) {
          const double tk = t[static_cast<size_t>(k)];
          const double r = s[static_cast<size_t>(k)] / (tk * tk) - 2 * SE(i, k) / tk;
          if (r < lo) lo = r, best = k;
        }
      }
      En(i, best) = 1.0;
      lab[static_cast<size_t>(i)] = best;
    }
    ++it;
    if (En.v == E.v) break;
    E = En;
  }
  *iterations = it;
  return lab;
}

/// Regularized LDA (GDA on the feature map) on the rows with keep: Sb a = λ(St + εI)a,
/// ε = 1e-3 tr(St)/d, by dsygvd; d×m, B-orthonormal columns, or of unit length when `unit`.
Dense reference_gda(const Dense& X, const std::vector<int>& y, const std::vector<char>& keep, int c, int m,
                    bool unit) {
  const int64_t d = X.cols;
  std::vector<double> mean(static_cast<size_t>(d)), cnt(static_cast<size_t>(c));
  Dense M(d, c);
  double ns = 0;
  for (int64_t i = 0; i < X.rows; ++i) {
    if (!keep[static_cast<size_t>(i)]) continue;
    ns += 1;
    cnt[static_cast<size_t>(y[static_cast<size_t>(i)])] += 1;
    for (int64_t a = 0; a < d; ++a) {
      mean[static_cast<size_t>(a)] += X(i, a);
      M(a, y[static_cast<size_t>(i)]) += X(i, a);
    }
  }
  for (int64_t a = 0; a < d; ++a) {
    mean[static_cast<size_t>(a)] /= ns;
    for (int k = 0; k < c; ++k) M(a, k) /= cnt[static_cast<size_t>(k)];
  }
  Dense St(d, d), Sb(d, d);
  for (int64_t i = 0; i < X.rows; ++i)
    if (keep[static_cast<size_t>(i)])
      for (int64_t a = 0; a < d; ++a)
        for (int64_t b = 0; b < d; ++b)
          St(a, b) += (X(i, a) - mean[static_cast<size_t>(a)]) * (X(i, b) - mean[static_cast<size_t>(b)]) / ns;
  for (int k = 0; k < c; ++k)
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b)
        Sb(a, b) += cnt[static_cast<size_t>(k)] / ns * (M(a, k) - mean[static_cast<size_t>(a)]) *
                    (M(b, k) - mean[static_cast<size_t>(b)]);
  double tr = 0;
  for (int64_t a = 0; a < d; ++a) tr += St(a, a);
  for (int64_t a = 0; a < d; ++a) St(a, a) += 1e-3 * tr / static_cast<double>(d);
  std::vector<double> w(static_cast<size_t>(d));
  lapack::sygv(d, Sb.data(), d, St.data(), d, w.data());
  Dense W(d, m);
  for (int j = 0; j < m; ++j)
    for (int64_t a = 0; a < d; ++a) W(a, j) = Sb(a, d - 1 - j);
  return unit ? ref::unit_columns(W) : W;
}

/// Brute-force selection of sec. III-D: K nearest unlabeled neighbors (ties: smaller index).
std::vector<char> reference_selection(const Dense& Y, const std::vector<int>& semi, const std::vector<int>& est,
                                      int K, double theta) {
  std::vector<int64_t> u;
  for (int64_t i = 0; i < Y.rows; ++i)
    if (semi[static_cast<size_t>(i)] < 0) u.push_back(i);
  std::vector<char> keep(static_cast<size_t>(Y.rows), 0);
  for (int64_t i : u) {
    std::vector<std::pair<double, int64_t>> d;
    for (int64_t j : u) {
      if (j == i) continue;
      double s = 0;
      for (int64_t a = 0; a < Y.cols; ++a) s += (Y(i, a) - Y(j, a)) * (Y(i, a) - Y(j, a));
      d.emplace_back(s, j);
    }
    std::sort(d.begin(), d.end());
    int agree = 0;
    for (int j = 0; j < K; ++j) agree += est[static_cast<size_t>(d[static_cast<size_t>(j)].second)] == est[static_cast<size_t>(i)];
    keep[static_cast<size_t>(i)] = static_cast<double>(agree) / K >= theta;
  }
  return keep;
}

using test::Problem;
/// X centered (and standardized if asked).
Problem load(const std::string& name, int p, bool standardize) {
  Problem pr = test::load_problem(name, p, false);
  pr.X = test::center_columns(pr.X, standardize);
  return pr;
}

double fraction_correct(const std::vector<int>& est, const std::vector<int>& semi, const std::vector<int>& truth) {
  double right = 0, total = 0;
  for (size_t i = 0; i < est.size(); ++i)
    if (semi[i] < 0) total += 1, right += est[i] == truth[i];
  return right / total;
}

}  // namespace

TEST(SsgdaProjector, ThroughTheFeatureMapEqualsTheDenseKernelFormulaForRbf) {
  // Nyström RBF map of iris built densely here: Φ = K(X,Z) K(Z,Z)^{-1/2} (15 landmarks), so
  // K = ΦΦᵀ is an uncentered rank-15 kernel; S = H K (K H K)⁺ K H must equal the projector
  // onto range(HΦ) that SSGDA applies through Φ_c = HΦ without any n×n matrix.
  Dense raw;
  std::vector<int> labels;
  test::load_csv_replicated("iris.csv", raw, labels);
  const int64_t n = raw.rows, L = 15;
  double s2 = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t a = 0; a < raw.cols; ++a) s2 += (raw(i, a) - raw(j, a)) * (raw(i, a) - raw(j, a));
  s2 /= static_cast<double>(n * n);
  auto k = [&](int64_t i, int64_t j) {
    double d = 0;
    for (int64_t a = 0; a < raw.cols; ++a) d += (raw(i, a) - raw(j, a)) * (raw(i, a) - raw(j, a));
    return std::exp(-d / s2);
  };
  Dense Kzz(L, L), Kxz(n, L);
  for (int64_t a = 0; a < L; ++a)
    for (int64_t b = 0; b < L; ++b) Kzz(a, b) = k(10 * a, 10 * b);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < L; ++a) Kxz(i, a) = k(i, 10 * a);
  std::vector<double> w(static_cast<size_t>(L));
  Dense V = Kzz;
  lapack::syev(L, V.data(), L, w.data());
  Dense Wih(L, L);  // K(Z,Z)^{-1/2}
  for (int64_t l = 0; l < L; ++l)
    for (int64_t a = 0; a < L; ++a)
      for (int64_t b = 0; b < L; ++b) Wih(a, b) += V(a, l) * V(b, l) / std::sqrt(w[static_cast<size_t>(l)]);
  const Dense Phi = mul(Kxz, Wih);
  const Dense K = mul(Phi, Phi, 'N', 'T');
  const Dense S = paper_S(K, 1e-13);
  // The feature-map side, distributed.
  const Dense Phic = test::center_columns(Phi, false);
  int64_t rank = 0;
  const DistMatrix Q = sd::range_basis(ref::distribute(Phic, MPI_COMM_WORLD), &rank);
  EXPECT_EQ(rank, L);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> N(0, 1);
  Dense E(n, 4);
  for (int64_t i = 0; i < n; ++i) {
    E(i, 0) = labels[static_cast<size_t>(i)] == 0;  // a class indicator e_k
    for (int j = 1; j < 4; ++j) E(i, j) = N(rng);
  }
  const Dense SE = allgather(sd::apply_projector(Q, ref::distribute(E, MPI_COMM_WORLD)));
  const Dense SEr = mul(S, E);
  double scale = 0;
  for (double v : SEr.v) scale = std::max(scale, std::abs(v));
  EXPECT_LT(test::max_abs_diff(SE, SEr), 1e-8 * scale);
  // S is a projector (S² = S) that kills constants (S1 = 0) but is not the identity on 1⊥.
  EXPECT_LT(test::max_abs_diff(allgather(sd::apply_projector(Q, ref::distribute(SEr, MPI_COMM_WORLD))), SEr), 1e-8 * scale);
  double col_sum = 0, moved = 0;
  for (int64_t i = 0; i < n; ++i) col_sum += SE(i, 1);
  for (int64_t i = 0; i < n; ++i) moved = std::max(moved, std::abs(SE(i, 0) - E(i, 0) + 1.0 / 3.0));
  EXPECT_LT(std::abs(col_sum), 1e-9 * scale * static_cast<double>(n));
  EXPECT_GT(moved, 1e-3);  // rank 15 < n − 1: S ≠ H, the test is not trivial
}

TEST(SsgdaProjector, ForTheLinearKernelIsTheProjectorOntoTheCenteredData) {
  Problem pr = load("wine.csv", 3, true);
  const Dense S = paper_S(mul(pr.X, pr.X, 'N', 'T'), 1e-12);  // K = XXᵀ
  const DistMatrix Q = sd::range_basis(ref::distribute(pr.X, MPI_COMM_WORLD), nullptr);
  const DistMatrix E0 = sd::initial_indicator(local_part(pr.semi, Q), pr.classes, MPI_COMM_WORLD);
  // E⁽⁰⁾ distributed like Q: build it replicated for the reference.
  Dense E = allgather(E0);
  EXPECT_LT(test::max_abs_diff(allgather(sd::apply_projector(Q, E0)), mul(S, E)), 1e-10);
}

TEST(Ssgda, DualClosedFormSolvesTheCccpLinearProgram) {
  // 10 samples (4 labeled, 6 unlabeled, C = 3) with a 3-dimensional feature map: the LP (7)
  // is solved by enumerating its 3⁶ vertices (its optimum is attained at one) and compared
  // with the dual solution (11)–(14), at E⁽⁰⁾ and at the next two CCCP iterates.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> N(0, 1);
  const int n = 10, c = 3;
  Dense Phi(n, 3);
  const std::vector<int> truth = {0, 1, 2, 0, 0, 1, 2, 1, 2, 0};
  const std::vector<int> semi = {0, 1, 2, 0, -1, -1, -1, -1, -1, -1};
  for (int i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) Phi(i, a) = N(rng) + (a == truth[static_cast<size_t>(i)] ? 1.5 : 0.0);
  Phi = test::center_columns(Phi, false);
  const Dense S = paper_S(mul(Phi, Phi, 'N', 'T'), 1e-12);
  const DistMatrix Q = sd::range_basis(ref::distribute(Phi, MPI_COMM_WORLD), nullptr);
  DistMatrix E = sd::initial_indicator(local_part(semi, Q), c, MPI_COMM_WORLD);
  for (int step = 0; step < 3; ++step) {
    const Dense Ep = allgather(E);
    const DistMatrix R = sd::cccp_costs(Q, E, nullptr);
    const DistMatrix En = sd::solve_lp_by_dual(R, local_part(semi, Q));
    const Dense Ed = allgather(En);
    // The objective of (7) from its definition, with the dense S.
    const Dense SEp = mul(S, Ep);
    std::vector<double> tp(c), sp(c);
    for (int k = 0; k < c; ++k)
      for (int i = 0; i < n; ++i) tp[static_cast<size_t>(k)] += Ep(i, k), sp[static_cast<size_t>(k)] += Ep(i, k) * SEp(i, k);
    auto lp_objective = [&](const Dense& Ev) {
      double f = 0;
      for (int k = 0; k < c; ++k) {
        double lin = 0, tk = 0;
        for (int i = 0; i < n; ++i) lin += SEp(i, k) * Ev(i, k), tk += Ev(i, k);
        f += 2 * lin / tp[static_cast<size_t>(k)] - sp[static_cast<size_t>(k)] / (tp[static_cast<size_t>(k)] * tp[static_cast<size_t>(k)]) * tk;
      }
      return f;
    };
    double best = -1e300, second = -1e300;
    Dense Ebest;
    for (int code = 0; code < 729; ++code) {
      Dense Ev(n, c);
      int rest = code;
      for (int i = 0; i < n; ++i) {
        int y = semi[static_cast<size_t>(i)];
        if (y < 0) y = rest % 3, rest /= 3;
        Ev(i, y) = 1.0;
      }
      const double f = lp_objective(Ev);
      if (f > best) second = best, best = f, Ebest = Ev;
      else second = std::max(second, f);
    }
    ASSERT_GT(best - second, 1e-9) << "step " << step << ": the test needs a unique LP optimum";
    EXPECT_NEAR(lp_objective(Ed), best, 1e-12 * std::abs(best)) << "step " << step;
    EXPECT_EQ(Ed.v, Ebest.v) << "step " << step;
    E = En;
  }
}

TEST(Ssgda, DualSplitsAnExactTieEquallyAndKeepsLabeledRows) {
  DistMatrix R = make_dist_local(MPI_COMM_SELF, 3, 3);
  const double r[9] = {0.3, -0.5, -0.5, 0.1, 0.2, 0.0, 9.0, 9.0, 9.0};
  std::copy(r, r + 9, R.v.begin());
  const DistMatrix E = sd::solve_lp_by_dual(R, {-1, 2, -1});
  const std::vector<double> expect = {0, 0.5, 0.5, 0, 0, 1, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  for (size_t a = 0; a < expect.size(); ++a) EXPECT_DOUBLE_EQ(E.v[a], expect[a]) << a;
}

TEST(Ssgda, CccpObjectiveNeverDecreasesAndTheCriterionStaysBelowCMinusOne) {
  // CCCP maximizes the convex (6) by tangent minorants, so J(E⁽ᵖ⁺¹⁾) ≥ J(E⁽ᵖ⁾); and
  // J = tr(E D⁻¹Eᵀ S) ≤ C − 1 since S projects onto a subspace of 1⊥ (Corollary 1).
  for (const char* name : {"wine.csv", "digits.csv"}) {
    Problem pr = load(name, 3, std::string(name) == "wine.csv");
    const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    const std::vector<int> semi = local_part(pr.semi, X);
    methods::TrainingData data{X, semi, pr.classes};
    nlohmann::json info;
    methods::Timings t;
    const std::vector<int> est =
        allgatherv(sd::estimate_labels(data, methods::MethodOptions{}, false, info, t), MPI_COMM_WORLD);
    if (test::rank() == 0)
      std::printf("[ssgda] %s: CCCP %d iterations, %.1f %% of unlabeled labels right\n", name,
                  info["cccp_iterations"].get<int>(), 100 * fraction_correct(est, pr.semi, pr.labels));
    const auto J = info["cccp_objective"].get<std::vector<double>>();
    ASSERT_GE(J.size(), 3u) << name;
    EXPECT_TRUE(info["cccp_converged"].get<bool>()) << name;
    EXPECT_EQ(J.size(), info["cccp_iterations"].get<size_t>() + 1) << name;
    for (size_t p = 1; p < J.size(); ++p) EXPECT_GE(J[p], J[p - 1] * (1 - 1e-12)) << name << " p=" << p;
    EXPECT_GT(J.back(), J.front()) << name;
    EXPECT_LE(J.back(), pr.classes - 1 + 1e-10) << name;
    EXPECT_EQ(info["cccp_changes"].get<std::vector<double>>().back(), 0.0) << name;
  }
}

TEST(Ssgda, AgreesWithTheSerialDenseReference) {
  // Linear kernel on iris: the dense CCCP with S = HK(KHK)⁺KH, the dense GDA on labeled +
  // estimated samples, brute-force selection and the final GDA, against fit(); both GDA
  // steps with unit columns (the default) and B-orthonormal ones (--normalize metric), which
  // also changes the selection (kNN in the first GDA embedding).
  for (const bool unit : {true, false}) {
    for (const char* name : {"iris.csv", "wine.csv"}) {
      Problem pr = load(name, 3, std::string(name) == "wine.csv");
      const int c = pr.classes, m = c - 1;
      int iterations = 0;
      std::vector<double> Jr;
      const std::vector<int> est_r =
          reference_cccp(paper_S(mul(pr.X, pr.X, 'N', 'T'), 1e-12), pr.semi, c, &iterations, &Jr);
      const Dense W1 = reference_gda(pr.X, est_r, std::vector<char>(pr.X.rows, 1), c, m, unit);
      const std::vector<char> sel = reference_selection(mul(pr.X, W1), pr.semi, est_r, sd::kNeighbors, sd::kTheta);
      std::vector<char> aug(sel);
      for (size_t i = 0; i < aug.size(); ++i) aug[i] = aug[i] || pr.semi[i] >= 0;
      const Dense Wr = reference_gda(pr.X, est_r, aug, c, m, unit);

      const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
      const std::vector<int> semi = local_part(pr.semi, X);
      methods::TrainingData data{X, semi, c};
      methods::Timings t;
      nlohmann::json info;
      const std::vector<int> est = allgatherv(sd::estimate_labels(data, {}, false, info, t), MPI_COMM_WORLD);
      EXPECT_EQ(est, est_r) << name;
      EXPECT_EQ(info["cccp_iterations"].get<int>(), iterations) << name;
      const auto J = info["cccp_objective"].get<std::vector<double>>();
      // fit() also records J at the final, unchanged E (the reference stops before it).
      ASSERT_EQ(J.size(), Jr.size() + 1) << name;
      for (size_t p = 0; p < Jr.size(); ++p) EXPECT_NEAR(J[p], Jr[p], 1e-10) << name;
      EXPECT_EQ(J.back(), J[J.size() - 2]) << name;
      methods::MethodOptions o;
      o.normalization = unit ? methods::Normalization::unit : methods::Normalization::metric;
      o.normalization_given = !unit;
      const methods::FitResult fit = methods::find_method("ssgda").fit(data, o, t);
      EXPECT_EQ(fit.info["normalization"], unit ? "unit" : "metric") << name;
      if (unit) EXPECT_LT(test::max_unit_norm_error(fit.W), 1e-12) << name;
      long nsel = std::count(sel.begin(), sel.end(), 1);
      EXPECT_EQ(fit.info["selected"].get<long>(), nsel) << name;
      EXPECT_GT(nsel, 0) << name;
      double scale = 0;
      for (double v : Wr.v) scale = std::max(scale, std::abs(v));
      EXPECT_LT(test::max_diff_up_to_column_sign(fit.W, Wr), 1e-7 * scale) << name << (unit ? " unit" : " metric");
      if (test::rank() == 0)
        std::printf("[ssgda] %s (%s columns): CCCP %d iterations, %.1f %% of unlabeled labels right, %ld of %ld selected\n",
                    name, unit ? "unit" : "metric", iterations, 100 * fraction_correct(est_r, pr.semi, pr.labels), nsel,
                    static_cast<long>(std::count(pr.semi.begin(), pr.semi.end(), -1)));
    }
  }
}

TEST(Ssgda, ConfidenceSelectionKeepsOnlyAgreeingPoints) {
  // 2-D embedding: three blobs with estimated labels that are right except for a few flips;
  // the selection must equal the brute-force rule, keep points whose ≥ θ of the K nearest
  // unlabeled neighbors agree, reject the others, and never flag labeled samples.
  std::mt19937_64 rng(5);
  std::normal_distribution<double> N(0, 1);
  const int n = 90;
  Dense Y(n, 2);
  std::vector<int> semi(n, -1), est(n);
  for (int i = 0; i < n; ++i) {
    const int k = i % 3;
    Y(i, 0) = 4.0 * k + N(rng);
    Y(i, 1) = N(rng);
    est[static_cast<size_t>(i)] = (i % 7 == 0) ? (k + 1) % 3 : k;
    if (i < 6) semi[static_cast<size_t>(i)] = k;
  }
  const std::vector<char> ref_keep = reference_selection(Y, semi, est, sd::kNeighbors, sd::kTheta);
  const DistMatrix Yd = ref::distribute(Y, MPI_COMM_WORLD);
  double agreement = 0;
  const std::vector<char> keep_local =
      sd::confident_selection(Yd, local_part(semi, Yd), local_part(est, Yd), sd::kNeighbors, sd::kTheta, &agreement);
  std::vector<int> kl(keep_local.begin(), keep_local.end());
  const std::vector<int> keep = allgatherv(kl, MPI_COMM_WORLD);
  int kept = 0, rejected = 0;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(keep[static_cast<size_t>(i)], ref_keep[static_cast<size_t>(i)]) << i;
    if (semi[static_cast<size_t>(i)] >= 0) EXPECT_EQ(keep[static_cast<size_t>(i)], 0) << i;
    else keep[static_cast<size_t>(i)] ? ++kept : ++rejected;
  }
  EXPECT_GT(kept, 40);
  EXPECT_GT(rejected, 5);  // the flipped labels inside other blobs are rejected
  for (int i = 6; i < n; ++i)
    if (i % 7 == 0 && std::abs(Y(i, 0) - 4.0 * (i % 3)) < 1.0) EXPECT_EQ(keep[static_cast<size_t>(i)], 0) << i;
  EXPECT_GT(agreement, 0.5);
  EXPECT_LT(agreement, 1.0);
}

TEST(MSsgda, LocalScalingWeightsFollowTheDefinition) {
  Problem pr = load("wine.csv", 3, true);
  const int64_t n = pr.X.rows;
  // Brute force: K-th neighbor distances σ_i, symmetric kNN (ties: smaller index).
  std::vector<std::vector<int64_t>> nb(static_cast<size_t>(n));
  std::vector<double> sigma(static_cast<size_t>(n));
  auto d2 = [&](int64_t i, int64_t j) {
    double s = 0;
    for (int64_t a = 0; a < pr.X.cols; ++a) s += (pr.X(i, a) - pr.X(j, a)) * (pr.X(i, a) - pr.X(j, a));
    return s;
  };
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::pair<double, int64_t>> d;
    for (int64_t j = 0; j < n; ++j)
      if (j != i) d.emplace_back(d2(i, j), j);
    std::sort(d.begin(), d.end());
    for (int j = 0; j < sd::kNeighbors; ++j) nb[static_cast<size_t>(i)].push_back(d[static_cast<size_t>(j)].second);
    sigma[static_cast<size_t>(i)] = std::sqrt(d[sd::kNeighbors - 1].first);
  }
  Dense Wr(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j : nb[static_cast<size_t>(i)]) {
      const double w = std::exp(-d2(i, j) / (sigma[static_cast<size_t>(i)] * sigma[static_cast<size_t>(j)]));
      Wr(i, j) = Wr(j, i) = w;
    }
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  graph::SymmetricEdges edges;
  std::vector<double> w;
  sd::local_scaling_graph(X, sd::kNeighbors, edges, w);
  DistMatrix Wd = make_dist_local(MPI_COMM_WORLD, X.n_local, n);
  for (int64_t i = 0; i < edges.n_local; ++i)
    for (int64_t e = edges.row_ptr[static_cast<size_t>(i)]; e < edges.row_ptr[static_cast<size_t>(i + 1)]; ++e)
      Wd(i, edges.col[static_cast<size_t>(e)]) = w[static_cast<size_t>(e)];
  EXPECT_LT(test::max_abs_diff(allgather(Wd), Wr), 1e-13);
  double total = 0;
  for (double v : Wr.v) total += v;
  EXPECT_GT(total, static_cast<double>(n));  // non-trivial weights
}

TEST(MSsgda, AlternatingStepEndsAtAPerSampleMinimumOfProblem15) {
  // Every unlabeled sample's label minimizes (17) given all the others, with the 1-norms
  // ‖e^i − e^j‖₁ evaluated directly, and (15) is no larger than at the λ = 0 start.
  Problem pr = load("wine.csv", 3, true);
  const int c = pr.classes;
  const int64_t n = pr.X.rows;
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const std::vector<int> semi = local_part(pr.semi, X);
  const DistMatrix Q = sd::range_basis(X, nullptr);
  const DistMatrix R = sd::cccp_costs(Q, sd::initial_indicator(semi, c, X.comm), nullptr);
  graph::SymmetricEdges edges;
  std::vector<double> w;
  sd::local_scaling_graph(X, sd::kNeighbors, edges, w);
  double deg = std::accumulate(w.begin(), w.end(), 0.0);
  MPI_Allreduce(MPI_IN_PLACE, &deg, 1, MPI_DOUBLE, MPI_SUM, X.comm);
  const double lambda = 5.0 * c / deg;  // 5× the default c/(n·mean degree): the term matters
  int sweeps = 0;
  const std::vector<int> lab =
      allgatherv(sd::solve_manifold_lp(R, semi, std::vector<int>(semi.size(), -1), edges, w, lambda, &sweeps),
                  MPI_COMM_WORLD);
  const Dense Rr = allgather(R);
  DistMatrix Wd = make_dist_local(MPI_COMM_WORLD, X.n_local, n);
  for (int64_t i = 0; i < edges.n_local; ++i)
    for (int64_t e = edges.row_ptr[static_cast<size_t>(i)]; e < edges.row_ptr[static_cast<size_t>(i + 1)]; ++e)
      Wd(i, edges.col[static_cast<size_t>(e)]) = w[static_cast<size_t>(e)];
  const Dense W = allgather(Wd);
  auto l1 = [&](int a, int b) {
    double s = 0;
    for (int k = 0; k < c; ++k) s += std::abs((k == a) - (k == b));
    return s;
  };
  auto objective15 = [&](const std::vector<int>& y) {
    double f = 0;
    for (int64_t i = 0; i < n; ++i) {
      f += Rr(i, y[static_cast<size_t>(i)]);
      for (int64_t j = i + 1; j < n; ++j) f += lambda * W(i, j) * l1(y[static_cast<size_t>(i)], y[static_cast<size_t>(j)]);
    }
    return f;
  };
  std::vector<int> start(pr.semi);
  int moved = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (pr.semi[static_cast<size_t>(i)] >= 0) {
      EXPECT_EQ(lab[static_cast<size_t>(i)], pr.semi[static_cast<size_t>(i)]);
      continue;
    }
    double lo = 1e300, mine = 0;
    for (int k = 0; k < c; ++k) {
      double f = Rr(i, k);
      for (int64_t j = 0; j < n; ++j)
        if (j != i && W(i, j) > 0) f += lambda * W(i, j) * l1(k, lab[static_cast<size_t>(j)]);
      lo = std::min(lo, f);
      if (k == lab[static_cast<size_t>(i)]) mine = f;
    }
    EXPECT_LE(mine, lo + 1e-12 * std::abs(lo)) << i;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (pr.semi[static_cast<size_t>(i)] >= 0) continue;
    int best = 0;
    for (int k = 1; k < c; ++k)
      if (Rr(i, k) < Rr(i, best)) best = k;
    start[static_cast<size_t>(i)] = best;
    moved += best != lab[static_cast<size_t>(i)];
  }
  EXPECT_GT(moved, 0);  // the manifold term changed labels
  EXPECT_LT(objective15(lab), objective15(start));
  EXPECT_GE(sweeps, 2);
}

TEST(MSsgda, CccpObjectiveNeverDecreasesAfterTheFirstStep) {
  Problem pr = load("digits.csv", 3, false);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const std::vector<int> semi = local_part(pr.semi, X);
  methods::TrainingData data{X, semi, pr.classes};
  nlohmann::json info;
  methods::Timings t;
  const std::vector<int> est = allgatherv(sd::estimate_labels(data, {}, true, info, t), MPI_COMM_WORLD);
  const auto J = info["cccp_objective"].get<std::vector<double>>();
  ASSERT_GE(J.size(), 3u);
  EXPECT_TRUE(info["cccp_converged"].get<bool>());
  for (size_t p = 2; p < J.size(); ++p) EXPECT_GE(J[p], J[p - 1] - 1e-12 * std::abs(J[p - 1])) << p;
  EXPECT_GT(info["lambda"].get<double>(), 0.0);
  if (test::rank() == 0)
    std::printf("[m-ssgda] digits: CCCP %d iterations, %.1f %% of unlabeled labels right\n",
                info["cccp_iterations"].get<int>(), 100 * fraction_correct(est, pr.semi, pr.labels));
}

namespace {
/// Pipeline on every rank against the pipeline on MPI_COMM_SELF of rank 0.
/// kernel: linear, or the exact RBF map (whose rank n − 1 saturates the criterion).
void same_on_all_rank_counts(const std::string& method, bool linear) {
  driver::FitConfig cfg;
  cfg.method = method;
  kernels::KernelOptions ko;
  ko.type = linear ? kernels::KernelType::linear : kernels::KernelType::rbf;
  cfg.parameters["kernel"] = kernels::to_json(ko);
  cfg.preprocess.scaling = data::Scaling::standardize;
  const data::SplitSpec spec = test::transductive_split(3, 0.8, 4);
  const test::SerialAndDistributed r = test::fit_serial_and_distributed("wine.csv", spec, cfg);
  EXPECT_EQ(r.dist.accuracy.unlabeled, r.serial_accuracy.unlabeled) << method;
  EXPECT_EQ(r.dist.accuracy.unseen, r.serial_accuracy.unseen) << method;
  EXPECT_EQ(r.dist.info["cccp_iterations"].get<double>(), r.serial_info["cccp_iterations"].get<double>()) << method;
  EXPECT_EQ(r.dist.info["selected"].get<double>(), r.serial_info["selected"].get<double>()) << method;
  EXPECT_LT(test::max_diff_up_to_column_sign(r.Y_dist, r.Y_serial), 1e-7 * test::max_abs(r.Y_serial)) << method;
  // wine, 3 labels per class (chance 1/3). The exact RBF map has rank n − 1, S = H_n, the
  // criterion is C − 1 for every labeling and the estimate is uninformative (reported).
  if (linear) EXPECT_GT(r.dist.accuracy.unlabeled, 0.5) << method;
  else EXPECT_TRUE(r.dist.info["criterion_saturated"].get<bool>()) << method;
  // No silent fall-back: the report states what the final GDA learned from.
  const auto& info = r.dist.info;
  const long selected = info["selected"].get<long>();
  EXPECT_EQ(info["final_gda_samples"]["selected_unlabeled"].get<long>(), selected) << method;
  EXPECT_EQ(info["final_gda_samples"]["labeled"].get<long>(), 9) << method;  // 3 per class
  EXPECT_EQ(info["fallback_to_gda"].get<bool>(), selected == 0) << method;
  if (selected == 0) {
    const std::string why = info["fallback_reason"].get<std::string>();
    EXPECT_NE(why.find("GDA on the 9 labeled samples alone"), std::string::npos) << why;
    if (info["criterion_saturated"].get<bool>()) EXPECT_NE(why.find("saturated"), std::string::npos) << why;
  }
}
}  // namespace

TEST(Ssgda, GivesTheSameEmbeddingOnOneRankAsOnAllRanks) {
  same_on_all_rank_counts("ssgda", true);
  same_on_all_rank_counts("ssgda", false);
}
TEST(MSsgda, GivesTheSameEmbeddingOnOneRankAsOnAllRanks) {
  same_on_all_rank_counts("m-ssgda", true);
  same_on_all_rank_counts("m-ssgda", false);
}
