// The library's Estimator (ssdr/driver/estimator.hpp): fit on every rank's block of rows with
// y = −1 for the unlabeled ones, transform, predict, score, save/load; the same fit as the
// pipeline behind `ssdr fit`, and the same result on one rank as on all ranks however the
// rows are split among them.
//
// Error analysis behind the tolerances (as in tests/mpi/rank_invariance_test.cpp): what
// changes with the rank count or the rows' layout is the order of the distributed sums (scatter
// matrices: ≤ n·ε relative, 1e-13 for n ≈ 200) and the point where the propagation's CG stops
// (rtol 1e-12, condition ≤ 100: ≤ 1e-9 relative). The trace ratio moves by at most ‖δS‖
// (Weyl): 1e-9 relative. The eigenvectors move by ‖δS‖/gap, relative gaps ≥ 1e-2 on wine:
// ~1e-7 on the embedding's Gram matrix E·Eᵀ, which is blind to the columns' signs. Predictions
// are compared exactly: the 1-NN margins on wine (nearest against second-nearest labeled
// distance of another class) are far above 1e-7 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "support.hpp"

namespace ssdr {
namespace {

constexpr double kObjectiveRelTol = 1e-9;
constexpr double kGramRelTol = 1e-7;

/// X's rows with `weight(r)` of every `Σ weight` rows on rank r (at least one each when n
/// allows), in rank order: a layout other than the readers' balanced blocks. Collective.
DistMatrix skewed(const Dense& X, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int64_t n = X.rows, total = static_cast<int64_t>(size) * (size + 1) / 2;
  int64_t start = 0;
  for (int r = 0; r < rank; ++r) start += n * (r + 1) / total;
  const int64_t local = rank == size - 1 ? n - start : n * (rank + 1) / total;
  DistMatrix D = make_dist_local(comm, local, X.cols);
  for (int64_t i = 0; i < local; ++i)
    for (int64_t j = 0; j < X.cols; ++j) D(i, j) = X(D.row_start + i, j);
  return D;
}

/// The n×m rows of a distributed embedding on every rank (row-major).
std::vector<double> gather_rows(const DistMatrix& Y) { return allgatherv(Y.v, Y.comm); }

/// The n×n Gram matrix E·Eᵀ of row-major n×m rows.
std::vector<double> gram(const std::vector<double>& E, int64_t m) {
  const int64_t n = static_cast<int64_t>(E.size()) / m;
  std::vector<double> G(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < m; ++k) s += E[static_cast<size_t>(i * m + k)] * E[static_cast<size_t>(j * m + k)];
      G[static_cast<size_t>(i * n + j)] = s;
    }
  return G;
}

double max_abs_of(const std::vector<double>& v) {
  double mx = 0;
  for (double x : v) mx = std::max(mx, std::abs(x));
  return mx;
}

struct Result {
  double trace_ratio = 0;
  int64_t m = 0;
  std::vector<double> embedding;  ///< n×m, row-major, every row
  std::vector<int> predicted;     ///< n
};

/// Fits SODA on X (laid out by `layout`) with the semi-supervised labels, then transforms and
/// predicts every row; everything gathered on every rank of comm. Collective over comm.
Result fit_soda(const test::Problem& p, MPI_Comm comm, bool skew) {
  DistMatrix X = skew ? skewed(p.X, comm) : ref::distribute(p.X, comm);
  const DistMatrix X_again = X;
  Estimator e("soda", {{"dim", 2}, {"seed", 3}});
  e.fit(std::move(X), test::local_part(p.semi, X_again));
  Result r;
  r.trace_ratio = e.trace_ratio();
  const DistMatrix Y = e.transform(X_again);
  r.m = Y.cols;
  r.embedding = gather_rows(Y);
  r.predicted = allgatherv(e.predict(X_again), comm);
  return r;
}

TEST(Estimator, FitsThePipelinesModelAndPredictsByOneNearestLabeledNeighbour) {
  const test::Problem p = test::load_problem("wine.csv", 5, false);
  const DistMatrix X = ref::distribute(p.X, MPI_COMM_WORLD);
  Estimator e("soda", {{"dim", 2}});
  e.fit(X, test::local_part(p.semi, X));
  ASSERT_TRUE(e.fitted());

  // The pipeline behind `ssdr fit` on the same rows and roles (labeled where y ≥ 0), with
  // the true labels of the unlabeled rows (hidden from the method, used by its evaluation):
  // the same W, bit for bit.
  const driver::FitOutcome out = test::fit_problem(p, X, driver::make_fit_config("soda", {}, 2, 0, 0));
  EXPECT_EQ(e.model().W.v, out.model.W.v);
  EXPECT_EQ(e.model().W.cols, 2);
  // transform is the fit's own embedding, bit for bit (model::Projector on raw rows).
  const DistMatrix Y = e.transform(X);
  EXPECT_EQ(Y.v, out.embedding.v);
  // The model keeps the 5 × 3 labeled rows' embeddings, in increasing index.
  ASSERT_EQ(e.model().labeled_labels.size(), 15u);
  EXPECT_EQ(e.model().labeled_embedding.rows, 2);

  // predict: 1-NN written out here against the labeled rows of the gathered embedding.
  const std::vector<double> E = gather_rows(Y);
  const std::vector<int> predicted = allgatherv(e.predict(X), MPI_COMM_WORLD);
  ASSERT_EQ(predicted.size(), p.labels.size());
  const std::vector<int> want = test::reference_one_nn(E, 2, p.semi);
  int64_t correct = 0, unlabeled = 0;
  for (size_t i = 0; i < p.labels.size(); ++i) {
    EXPECT_EQ(predicted[i], want[i]) << "row " << i;
    if (p.semi[i] >= 0) EXPECT_EQ(predicted[i], p.semi[i]) << "a labeled row is its own nearest labeled row";
    else {
      ++unlabeled;
      correct += predicted[i] == p.labels[i];
    }
  }
  // score counts the rows with a label: here the unlabeled rows' true labels, hidden at fit.
  std::vector<int> hidden = p.labels;
  for (size_t i = 0; i < hidden.size(); ++i)
    if (p.semi[i] >= 0) hidden[i] = -1;
  EXPECT_DOUBLE_EQ(e.score(X, test::local_part(hidden, X)), static_cast<double>(correct) / unlabeled);
  EXPECT_DOUBLE_EQ(e.score(X, test::local_part(hidden, X)), out.accuracy.unlabeled);  // the fit's evaluation
}

TEST(Estimator, GivesTheSameModelOnOneRankAsOnAllRanksWhateverTheRowsLayout) {
  const test::Problem p = test::load_problem("wine.csv", 5, false);
  Result serial;
  if (test::rank() == 0) serial = fit_soda(p, MPI_COMM_SELF, false);
  int64_t m = serial.m;
  MPI_Bcast(&m, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(&serial.trace_ratio, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  serial.embedding.resize(p.labels.size() * static_cast<size_t>(m));
  serial.predicted.resize(p.labels.size());
  MPI_Bcast(serial.embedding.data(), static_cast<int>(serial.embedding.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(serial.predicted.data(), static_cast<int>(serial.predicted.size()), MPI_INT, 0, MPI_COMM_WORLD);
  const std::vector<double> G1 = gram(serial.embedding, m);
  for (bool skew : {false, true}) {
    const Result all = fit_soda(p, MPI_COMM_WORLD, skew);
    const std::string what = skew ? "skewed layout" : "balanced blocks";
    ASSERT_EQ(all.m, m) << what;
    EXPECT_NEAR(all.trace_ratio, serial.trace_ratio, kObjectiveRelTol * std::abs(serial.trace_ratio)) << what;
    const std::vector<double> G = gram(all.embedding, m);
    double diff = 0;
    for (size_t i = 0; i < G.size(); ++i) diff = std::max(diff, std::abs(G[i] - G1[i]));
    EXPECT_LE(diff, kGramRelTol * max_abs_of(G1)) << what;
    EXPECT_EQ(all.predicted, serial.predicted) << what;
  }
}

TEST(Estimator, SavesAModelThatLoadsAndPredictsTheSame) {
  const test::Problem p = test::load_problem("iris.csv", 5, false);
  const DistMatrix X = ref::distribute(p.X, MPI_COMM_WORLD);
  Estimator e("lda");
  e.fit(X, test::local_part(p.semi, X));
  test::TempDir dir("estimator");
  e.save(dir.file("lda.model"), MPI_COMM_WORLD);
  const Estimator back = Estimator::load(dir.file("lda.model"), MPI_COMM_WORLD);
  EXPECT_EQ(back.method(), "lda");
  EXPECT_EQ(back.transform(X).v, e.transform(X).v);
  EXPECT_EQ(back.predict(X), e.predict(X));
  EXPECT_EQ(back.model().labeled_labels, e.model().labeled_labels);
}

TEST(Estimator, RefusesAParameterTheMethodDoesNotTakeNamingItAndTheValidOnes) {
  try {
    Estimator e("soda", {{"beta", 1.0}});
    FAIL() << "beta was accepted by soda";
  } catch (const Error& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("'beta' is not a parameter of soda"), std::string::npos) << msg;
    EXPECT_NE(msg.find("alpha_u"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dim"), std::string::npos) << msg;
    EXPECT_TRUE(err.collective_over(MPI_COMM_WORLD));
  }
  // A known name with a value out of its range: set_parameter's message.
  EXPECT_THROW(Estimator("soda", {{"alpha_u", 1.5}}), Error);
  // A refused set_params leaves the estimator as it was.
  Estimator e("sl-lda", {{"alpha_u", 0.5}});
  EXPECT_THROW(e.set_params({{"knn", -3}}), Error);
  EXPECT_EQ(e.params().at("alpha_u"), 0.5);
  EXPECT_FALSE(e.params().contains("knn"));
  const auto names = Estimator::parameter_names("sl-lda");
  EXPECT_NE(std::find(names.begin(), names.end(), "alpha_u"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "beta"), names.end());
}

TEST(Estimator, RefusesBadLabelsAndUseBeforeFitOnEveryRank) {
  const test::Problem p = test::load_problem("iris.csv", 5, false);
  const DistMatrix X = ref::distribute(p.X, MPI_COMM_WORLD);
  Estimator e("soda");
  EXPECT_THROW(e.transform(X), Error);
  EXPECT_THROW(e.predict(X), Error);
  std::vector<int> y = test::local_part(p.semi, X);
  EXPECT_THROW(e.fit(X, std::vector<int>(y.size() + 1, 0)), Error);  // one label too many on every rank
  std::vector<int> all_unlabeled(y.size(), -1);
  EXPECT_THROW(e.fit(X, all_unlabeled), Error);
  std::vector<int> bad = y;
  if (!bad.empty() && test::rank() == 0) bad[0] = -2;  // a label below −1 on rank 0 only
  EXPECT_THROW(e.fit(X, bad), Error);
  EXPECT_FALSE(e.fitted());
}

/// Runs f on every rank and expects ssdr::Error raised on every rank of the world with the same
/// message, holding `expected`. Collective.
void expect_same_error_on_every_rank(const std::function<void()>& f, const std::string& expected,
                                     const std::string& what) {
  std::string message = "(no error)";
  bool collective = false;
  try {
    f();
  } catch (const Error& e) {
    message = e.what();
    collective = e.collective_over(MPI_COMM_WORLD);
  }
  SCOPED_TRACE(what);
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  EXPECT_TRUE(collective) << message;
  EXPECT_EQ(bcast_string(message, 0, MPI_COMM_WORLD), message) << "rank 0 raised another message";
}

TEST(Estimator, RaisesAMistakeOnTheLastRankOnlyAsTheSameErrorOnEveryRank) {
  // Each mistake is made on the last rank alone (on one rank: on the only one); the checks run
  // before any numerics and agree over the communicator, so no rank is left in a collective.
  const test::Problem p = test::load_problem("wine.csv", 5, false);
  const DistMatrix X = ref::distribute(p.X, MPI_COMM_WORLD);
  const std::vector<int> y = test::local_part(p.semi, X);
  const bool last = test::rank() == comm_size(MPI_COMM_WORLD) - 1;
  auto fit_with = [&](auto change_X, auto change_y) {
    return [&, change_X, change_y] {
      DistMatrix Xc = X;
      std::vector<int> yc = y;
      if (last) change_X(Xc), change_y(yc);
      Estimator("soda", {{"dim", 2}}).fit(std::move(Xc), yc);
    };
  };
  auto same = [](auto&) {};
  auto first_value = [](double v) { return [v](DistMatrix& Xc) { if (!Xc.v.empty()) Xc.v[0] = v; }; };
  expect_same_error_on_every_rank(fit_with(first_value(std::nan("")), same), "(sample, feature; 0-based) = NaN", "NaN");
  expect_same_error_on_every_rank(fit_with(first_value(-INFINITY), same), "= -inf; expected finite values", "-inf");
  // Finite, but its square overflows the sums of the fit (kMaxAbsValue = 2^448).
  expect_same_error_on_every_rank(fit_with(first_value(1e308), same), "= 1e+308; expected |x| <= 7.3e+134", "1e308");
  expect_same_error_on_every_rank(fit_with(same, [](std::vector<int>& v) { v.pop_back(); }),
                                  "labels for", "y one label short");
  expect_same_error_on_every_rank(fit_with(same, [](std::vector<int>& v) { v[0] = -2; }),
                                  "expected a class 0, 1, ... or -1", "a label below -1");
  if (comm_size(MPI_COMM_WORLD) > 1) {  // what can differ between ranks
    expect_same_error_on_every_rank(fit_with(
                                        [](DistMatrix& Xc) {
                                          Xc.cols -= 1;
                                          Xc.v.resize(static_cast<size_t>(Xc.n_local * Xc.cols));
                                        },
                                        same),
                                    "the ranks' rows differ in width (12 to 13 columns)", "one feature fewer");
    expect_same_error_on_every_rank([&] { Estimator("soda", {{"dim", last ? 1 : 2}}).fit(X, y); },
                                    "dim is 1 on rank " + std::to_string(comm_size(MPI_COMM_WORLD) - 1) + " but 2 on rank 0",
                                    "dim differs");
  }
  // Labels the core refuses on every rank alike: a class without a labeled row (a label of
  // 2^31 - 1 would otherwise mean 2^31 classes), and a single labeled class.
  std::vector<int> big = y;
  for (int& v : big) if (v == 2) v = std::numeric_limits<int>::max();
  expect_same_error_on_every_rank([&] { Estimator("soda").fit(X, big); }, "class 2 has no labeled row", "2^31 - 1");
  std::vector<int> one = y;
  for (int& v : one) if (v > 0) v = -1;
  expect_same_error_on_every_rank([&] { Estimator("soda").fit(X, one); }, "only class 0 is labeled", "one class");
  // Used before fit on the last rank only, and on an emptied communicator.
  Estimator fitted("lda");
  fitted.fit(X, y);
  expect_same_error_on_every_rank(
      [&] { (last ? Estimator("lda") : fitted).transform(X); }, "not fitted", "transform before fit on one rank");
  DistMatrix null_comm = X;
  null_comm.comm = MPI_COMM_NULL;
  EXPECT_THROW(fitted.transform(null_comm), Error);
}

TEST(Estimator, IsQuietWhileItWorksAndLeavesTheSwitchAsItFoundIt) {
  const test::Problem p = test::load_problem("iris.csv", 5, false);
  const DistMatrix X = ref::distribute(p.X, MPI_COMM_WORLD);
  const bool before = quiet();
  set_quiet(false);
  Estimator e("lda");
  e.fit(X, test::local_part(p.semi, X));
  EXPECT_FALSE(quiet());  // restored after the quiet fit
  set_quiet(before);
}

}  // namespace
}  // namespace ssdr
