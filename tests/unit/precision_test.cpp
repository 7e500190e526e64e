// --precision single (issue 30): the preprocessed rows kept as floats. Each value is rounded
// once (apply_single) and everything computed from the rows reads them as the doubles they
// round to, so a fit on float rows is, bit for bit, the fit on their double copy: that
// identity is what these tests hold the float paths (kNN searches, scatter, embedding, the
// methods that widen) to, on any rank count.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "reference.hpp"
#include "ssdr/core/dense.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/methods/method.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

/// A fit of `method` on X as given, with the kNN backend `knn` when it builds a graph.
methods::FitResult fit_on(const RowsView& X, const std::vector<int>& labels, int classes, const char* method,
                          graph::KnnMethod knn) {
  methods::MethodOptions o;
  o.graph.knn_method = knn;
  methods::Timings t;
  return methods::find_method(method).fit(methods::TrainingData{X, labels, classes}, o, t);
}

}  // namespace

TEST(Precision, ApplySingleIsApplyRoundedOnceToFloat) {
  const test::Problem pr = test::load_problem("digits.csv", 5, false);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  std::vector<char> keep(static_cast<size_t>(X.n_local));
  for (int64_t i = 0; i < X.n_local; ++i) keep[static_cast<size_t>(i)] = (X.row_start + i) % 3 != 0;
  data::PreprocessOptions po;
  po.scaling = data::Scaling::standardize;
  const data::Preprocessor p = data::fit_preprocessor(X, keep, po);
  const DistMatrix Y = data::apply(p, X, keep);
  const DistMatrixF Y32 = data::apply_single(p, X, keep);
  ASSERT_EQ(Y32.n_global, Y.n_global);
  ASSERT_EQ(Y32.row_start, Y.row_start);
  ASSERT_EQ(Y32.cols, Y.cols);
  ASSERT_EQ(Y32.v.size(), Y.v.size());
  int64_t differ = 0;
  for (size_t i = 0; i < Y.v.size(); ++i) differ += Y32.v[i] != static_cast<float>(Y.v[i]);
  EXPECT_EQ(differ, 0);
  // The rounding is real (the test would pass for a float copy of nothing otherwise).
  int64_t rounded = 0;
  for (size_t i = 0; i < Y.v.size(); ++i) rounded += static_cast<double>(Y32.v[i]) != Y.v[i];
  EXPECT_GT(rounded, static_cast<int64_t>(Y.v.size() / 2));
}

TEST(Precision, RowsViewReadsFloatRowsAsTheirDoubles) {
  const test::Problem pr = test::load_problem("wine.csv", 3, true);
  const DistMatrixF X32 = to_single(ref::distribute(pr.X, MPI_COMM_WORLD));
  const DistMatrix Xd = to_double(X32);
  const RowsView v(X32);
  EXPECT_TRUE(v.single());
  EXPECT_EQ(v.memory_bytes(), 4.0 * static_cast<double>(X32.v.size()));
  EXPECT_EQ(v.doubles().v, Xd.v);
  EXPECT_EQ(&v.doubles(), &v.doubles());  // widened once
  std::vector<double> tile(static_cast<size_t>(2 * Xd.cols));
  if (Xd.n_local >= 3) {
    v.tile(1, 2, tile.data());
    EXPECT_EQ(tile, std::vector<double>(Xd.row(1), Xd.row(3)));
  }
  std::vector<char> keep(static_cast<size_t>(Xd.n_local), 0);
  for (size_t i = 0; i < keep.size(); i += 2) keep[i] = 1;
  EXPECT_EQ(select_rows(v, keep).v, select_rows(Xd, keep).v);
}

TEST(Precision, FloatRowsGiveTheFitOfTheirDoubleCopyBitForBit) {
  // SODA through both kNN backends (the exact search reads the double copy; NN-descent and the
  // recall estimate read the floats), the soft-label scatter (floats), and methods that read
  // the rows as doubles (LDA, SL-LDA: the widened copy). Every rank count gives its own bits;
  // within one rank count the two storages must agree exactly.
  const test::Problem pr = test::load_problem("digits.csv", 5, true);
  const DistMatrixF X32 = to_single(ref::distribute(pr.X, MPI_COMM_WORLD));
  const DistMatrix Xd = to_double(X32);
  const std::vector<int> labels = test::local_part(pr.semi, Xd);
  struct Case {
    const char* method;
    graph::KnnMethod knn;
  };
  for (const Case& c : {Case{"soda", graph::KnnMethod::exact}, Case{"soda", graph::KnnMethod::nndescent},
                        Case{"lp", graph::KnnMethod::nndescent}, Case{"lda", graph::KnnMethod::exact},
                        Case{"sl-lda", graph::KnnMethod::exact}}) {
    const std::string what = std::string(c.method) + " / " + graph::to_string(c.knn);
    const methods::FitResult a = fit_on(RowsView(X32), labels, pr.classes, c.method, c.knn);
    const methods::FitResult b = fit_on(RowsView(Xd), labels, pr.classes, c.method, c.knn);
    EXPECT_EQ(a.W.v, b.W.v) << what;
    EXPECT_EQ(a.soft_labels.v, b.soft_labels.v) << what;
    EXPECT_EQ(a.transductive_prediction, b.transductive_prediction) << what;
    if (!std::isnan(b.trace_ratio)) EXPECT_EQ(a.trace_ratio, b.trace_ratio) << what;
    EXPECT_EQ(a.info.value("graph", nlohmann::json()), b.info.value("graph", nlohmann::json())) << what;
    if (b.info.contains("graph") && b.info["graph"].is_object() && b.info["graph"].contains("knn_method"))
      EXPECT_EQ(b.info["graph"]["knn_method"], graph::to_string(c.knn)) << what;
  }
}

TEST(Precision, ASingleFitIsTheSameOnOneRankAsOnAllRanks) {
  // The whole pipeline with --precision single (float rows from the preprocessing through
  // the graph, scatter and streamed evaluation) on rank 0 alone and on every rank: the
  // tolerances of Soda.GivesTheSameEmbeddingAndAccuracyOnOneRankAsOnAllRanks (the
  // propagation stops at its rtol; the rest is rank-invariant by construction).
  driver::FitConfig cfg;
  cfg.method = "soda";
  cfg.preprocess.scaling = data::Scaling::standardize;
  cfg.preprocess.single = true;
  cfg.method_options.mu_scale = 10;
  const data::SplitSpec spec = test::transductive_split(3, 0.8, 11);
  const test::SerialAndDistributed r = test::fit_serial_and_distributed("wine.csv", spec, cfg);
  EXPECT_EQ(r.dist.accuracy.unlabeled, r.serial_accuracy.unlabeled);
  EXPECT_EQ(r.dist.accuracy.unseen, r.serial_accuracy.unseen);
  EXPECT_NEAR(r.dist.trace_ratio, r.serial_trace_ratio, 1e-7 * r.serial_trace_ratio);
  EXPECT_LT(test::max_diff_up_to_column_sign(r.Y_dist, r.Y_serial), 1e-6 * test::max_abs(r.Y_serial));
  // And it is not the double fit: the rows were rounded (wine standardized: 13 values per
  // row, none of them a float).
  cfg.preprocess.single = false;
  const test::SerialAndDistributed d = test::fit_serial_and_distributed("wine.csv", spec, cfg);
  EXPECT_NE(d.dist.trace_ratio, r.dist.trace_ratio);
}
