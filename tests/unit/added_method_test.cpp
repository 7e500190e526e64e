// A method added as docs/design.md says ("Adding a method"): one file holding its class and its
// row, tests/methods/first_coordinates.cpp, written exactly as a family of src/methods/impls/
// and listed by the same generator (cmake/SsdrMethods.cmake, here as test_method_families()).
// Registered for the test's duration (as the library's build lists its own families), it fits
// and predicts through the path every method takes: the Estimator (the library's and
// Python's door) and driver::fit_and_evaluate (the pipeline behind `ssdr fit`), with its row's
// preprocessing, the parameter checks of its row and the 1-NN evaluation. The same file in
// src/methods/impls/ reaches the CLI and Python too: jobs/check_method_files.sh builds such a
// tree.
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

#include "methods/registry.hpp"
#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/methods/method.hpp"
#include "support.hpp"

namespace ssdr::methods {
/// The families of tests/methods/ (generated: <build>/generated/ssdr_test_method_families.cpp).
std::vector<FamilyEntry> test_method_families();
}  // namespace ssdr::methods

using namespace ssdr;

namespace {

/// The row of tests/methods/first_coordinates.cpp, as its family gives it.
methods::MethodInfo first_coordinates_row() {
  for (const methods::FamilyEntry& f : methods::test_method_families())
    if (std::string(f.stem) == "first_coordinates") {
      methods::MethodFamily family = f.rows();
      if (family.rows.size() == 1) return family.rows.front();
    }
  throw Error("tests/methods/first_coordinates.cpp: its family is not listed or has not one row", __FILE__,
              __LINE__, true);
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
