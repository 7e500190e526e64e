// A method added from outside src/methods/: its class and its one row, both in this one file
// (docs/design.md, "Adding a method"). Registered for the test's duration, it fits and
// predicts through the path every method takes: the Estimator (the library's and Python's
// door) and driver::fit_and_evaluate (the pipeline behind `ssdr fit`), with its row's
// preprocessing, the parameter checks of its row and the 1-NN evaluation.
//
// Error analysis of the one tolerance: the embedding is x_ij − μ_j exactly (W's entries are 0
// and 1, so each product sum has one non-zero term), and μ_j, a sum of n terms in another
// order here than in the library, differs by at most 2nε·max|x_j| (n = 178 wine samples:
// ~8e-14·max|x_j|); kEmbeddingTol = 4nε·max|x| has a factor 2 of margin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/methods/method.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

/// The first m coordinates of the preprocessed rows: W = the first m columns of the d'×d'
/// identity (m = c − 1 by default). Unit columns.
class FirstCoordinates final : public methods::Method {
 public:
  methods::FitResult fit(const methods::MethodInfo& row, const methods::TrainingData& data,
                         const methods::MethodOptions& o, methods::Timings&) override {
    const int64_t m = methods::resolve_dim(o.dim, data.classes, data.X.cols);
    methods::FitResult out;
    out.W = Dense(data.X.cols, m);
    for (int64_t j = 0; j < m; ++j) out.W(j, j) = 1.0;
    out.info["fitted_as"] = row.name;
    return out;
  }
};

/// Its one row: no own parameters, no graph, nothing to cross-validate; its preprocessing
/// centers without PCA, so the coordinates are the input's.
methods::MethodInfo first_coordinates_row() {
  methods::MethodInfo r;
  r.name = "first-coordinates";
  r.summary = "the first m centered input coordinates (a method defined by a test)";
  r.source = "tests/unit/added_method_test.cpp";
  r.projects = true;
  r.make = []() -> std::unique_ptr<methods::Method> { return std::make_unique<FirstCoordinates>(); };
  r.preprocess.pca = false;
  return r;
}

using test::error_of;

}  // namespace

TEST(AddedMethod, FitsAndPredictsThroughTheEstimatorAndThePipelineFromOneFileAndOneRow) {
  const size_t rows = methods::method_table().size();
  {
    const methods::MethodRegistration added(first_coordinates_row());
    ASSERT_EQ(methods::method_table().size(), rows + 1);
    EXPECT_EQ(&methods::find_method("first-coordinates"), &added.row());
    EXPECT_EQ(methods::method_table().back().name, "first-coordinates");

    const test::Problem p = test::load_problem("wine.csv", 5, false);  // raw features
    const DistMatrix X = ref::distribute(p.X, MPI_COMM_WORLD);
    Estimator e("first-coordinates", {{"dim", 2}});
    e.fit(X, test::local_part(p.semi, X));
    ASSERT_TRUE(e.fitted());
    EXPECT_EQ(e.info()["fitted_as"], "first-coordinates");  // fit received its row
    // The row's preprocessing (no PCA): W is d × m = 13 × 2, the identity's first columns.
    const Dense& W = e.model().W;
    ASSERT_EQ(W.rows, 13);
    ASSERT_EQ(W.cols, 2);
    for (int64_t i = 0; i < W.rows; ++i)
      for (int64_t j = 0; j < W.cols; ++j) EXPECT_EQ(W(i, j), i == j ? 1.0 : 0.0) << i << "," << j;

    // transform: the centered first two features of every row, against a serial reference.
    const DistMatrix Y = e.transform(X);
    const std::vector<double> E = allgatherv(Y.v, MPI_COMM_WORLD);  // n × 2, row-major
    const int64_t n = p.X.rows;
    ASSERT_EQ(static_cast<int64_t>(E.size()), 2 * n);
    for (int j = 0; j < 2; ++j) {
      double mean = 0, max_x = 0;
      for (int64_t i = 0; i < n; ++i) mean += p.X(i, j), max_x = std::max(max_x, std::abs(p.X(i, j)));
      mean /= static_cast<double>(n);
      const double kEmbeddingTol = 4.0 * static_cast<double>(n) * std::numeric_limits<double>::epsilon() * max_x;
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(E[static_cast<size_t>(2 * i + j)], p.X(i, j) - mean, kEmbeddingTol) << i << "," << j;
    }

    // predict: the nearest labeled row in the embedding (ties to the smaller index), written
    // out here; score counts the unlabeled rows' true labels, hidden at fit.
    const std::vector<int> predicted = allgatherv(e.predict(X), MPI_COMM_WORLD);
    ASSERT_EQ(predicted.size(), p.labels.size());
    const std::vector<int> want = test::reference_one_nn(E, 2, p.semi);
    int64_t correct = 0, unlabeled = 0;
    for (size_t i = 0; i < p.labels.size(); ++i) {
      EXPECT_EQ(predicted[i], want[i]) << "row " << i;
      if (p.semi[i] < 0) ++unlabeled, correct += predicted[i] == p.labels[i];
    }
    std::vector<int> hidden = p.labels;
    for (size_t i = 0; i < hidden.size(); ++i)
      if (p.semi[i] >= 0) hidden[i] = -1;
    const double score = e.score(X, test::local_part(hidden, X));
    EXPECT_DOUBLE_EQ(score, static_cast<double>(correct) / static_cast<double>(unlabeled));
    EXPECT_GT(score, 1.0 / 3.0);  // two wine features separate the classes better than chance

    // The pipeline of `ssdr fit` on the same rows and roles: the same W and embedding, bit
    // for bit, and its 1-NN evaluation is score's.
    const driver::FitOutcome out = test::fit_problem(p, X, driver::make_fit_config("first-coordinates", {}, 2, 0, 0));
    EXPECT_EQ(out.model.W.v, W.v);
    EXPECT_EQ(out.embedding.v, Y.v);
    EXPECT_DOUBLE_EQ(out.accuracy.unlabeled, score);

    // Its row decides its parameters: none of its own, the ones every method takes.
    EXPECT_NE(error_of([] { Estimator("first-coordinates", {{"alpha", 1.0}}); }).find("not a parameter of first-coordinates"),
              std::string::npos);
    EXPECT_NO_THROW(Estimator("first-coordinates", {{"scaling", "standardize"}}));
  }
  // The registration ended: the table is the built-in one again.
  EXPECT_EQ(methods::method_table().size(), rows);
  EXPECT_THROW(methods::find_method("first-coordinates"), Error);
}
