// --precision single (issue 30): the preprocessed rows kept as floats. Each value is rounded
// once (apply_single) and everything computed from the rows reads them as the doubles they
// round to, so a fit on float rows is, bit for bit, the fit on their double copy: that
// identity is what these tests hold the float paths (kNN searches, scatter, embedding, the
// methods that widen) to, on any rank count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "reference.hpp"
#include "ssdr/core/dense.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/nndescent.hpp"
#include "ssdr/io/dataset.hpp"
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
  // SODA and LP through both kNN backends (the exact search, NN-descent and the recall
  // estimate read the floats in place), the soft-label scatter, LDA's and ODA's labeled rows
  // (floats), and SL-LDA, which reads a double copy (RowsView::widened says which). Every rank
  // count gives its own bits; within one rank count the two storages must agree exactly.
  const test::Problem pr = test::load_problem("digits.csv", 5, true);
  const DistMatrixF X32 = to_single(ref::distribute(pr.X, MPI_COMM_WORLD));
  const DistMatrix Xd = to_double(X32);
  const std::vector<int> labels = test::local_part(pr.semi, Xd);
  struct Case {
    const char* method;
    graph::KnnMethod knn;
    bool widens;
  };
  const RowsView v32(X32);
  for (const Case& c : {Case{"soda", graph::KnnMethod::exact, false}, Case{"soda", graph::KnnMethod::nndescent, false},
                        Case{"lp", graph::KnnMethod::nndescent, false}, Case{"lda", graph::KnnMethod::exact, false},
                        Case{"oda", graph::KnnMethod::exact, false}, Case{"sl-lda", graph::KnnMethod::exact, true}}) {
    const std::string what = std::string(c.method) + " / " + graph::to_string(c.knn);
    const methods::FitResult a = fit_on(v32, labels, pr.classes, c.method, c.knn);
    EXPECT_EQ(v32.widened(), c.widens) << what;
    v32.release();
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
  cfg.method_options.own["mu_scale"] = 10.0;
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

TEST(Precision, NNDescentWithoutItsFloatCopyGivesTheListsOfTheDoubleCopy) {
  // Beyond B_f (here 1 MiB: 12 000 × 128 rows are 6 MB) NN-descent keeps no centered float
  // copy and orders its joins by a random-projection tree on the rows as stored: computed in
  // double for float rows, so the lists are still those of their double copy.
  // Ten tight clusters (values in [1, 2), spread 1e-5, about 80 float ulps): projections of
  // one cluster's rows differ by about what a float sum of 128 terms errs by, so a tree
  // computed in float orders them otherwise than one in double (the test fails then).
  const int64_t n = 12000, d = 128;
  Dense A(n, d);
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto uniform = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) * 0x1.0p-53;
  };
  std::vector<double> centers(static_cast<size_t>(10 * d));
  for (double& c : centers) c = 1.0 + uniform();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = 0; t < d; ++t)
      A(i, t) = std::min(centers[static_cast<size_t>((i % 10) * d + t)] + (uniform() - 0.5) * 1e-5, 1.9999);
  const DistMatrixF X32 = to_single(ref::distribute(A, MPI_COMM_WORLD));
  const DistMatrix Xd = to_double(X32);
  graph::NNDescentOptions o;
  o.fetch_budget_bytes = double(1 << 20);
  o.max_iterations = 4;  // unconverged lists: the join order shows in them
  const graph::KnnLists a = graph::nndescent_search(X32, 8, o);
  const graph::KnnLists b = graph::nndescent_search(Xd, 8, o);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.dist2, b.dist2);
}

TEST(Precision, EverySingleRouteOfThePipelineGivesTheSameFit) {
  // --precision single through the pipeline's routes: the fit that keeps its data set (rows
  // mapped by apply_single), the consuming fit (apply_split writes the kept rows as floats),
  // a sweep's cached rows (PreparedRows::Xt32, with the kernel maps of KSODA), and the
  // streamed evaluation against the kept embedding. Each gives the consuming fit's bits.
  io::Dataset ds = io::read_dataset(test::data_path("wine.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::transductive_split(4, 0.5, 11));
  driver::RowsCache rows;
  driver::GraphCaches graphs;
  for (const char* method : {"soda", "oda", "lp", "ksoda", "tca", "soda"}) {
    std::vector<driver::ParameterSetting> settings = {{"precision", "single", "test"}};
    if (std::string(method) == "ksoda") settings.push_back({"landmarks", 40, "test"});
    const bool transductive = std::string(method) == "lp";
    const driver::FitConfig alone = driver::make_fit_config(method, settings, transductive ? 0 : 2, 0, 0);
    ASSERT_TRUE(alone.preprocess.single);
    driver::FitConfig swept = alone;
    swept.rows = &rows;
    swept.cache = &graphs;
    io::Dataset copy = ds;
    const driver::FitOutcome a = driver::fit_and_evaluate_consuming(copy, roles, alone, true);
    const driver::FitOutcome k = driver::fit_and_evaluate(ds, roles, alone, true);
    const driver::FitOutcome s = driver::fit_and_evaluate(ds, roles, swept, true);
    copy = ds;
    const driver::FitOutcome streamed = driver::fit_and_evaluate_consuming(copy, roles, alone, false);
    for (const driver::FitOutcome* o : {&k, &s}) {
      EXPECT_EQ(o->model.W.v, a.model.W.v) << method;
      EXPECT_EQ(o->embedding.v, a.embedding.v) << method;
      EXPECT_EQ(o->soft_labels.v, a.soft_labels.v) << method;
      EXPECT_EQ(o->accuracy.correct_unlabeled, a.accuracy.correct_unlabeled) << method;
      EXPECT_EQ(o->accuracy.correct_unseen, a.accuracy.correct_unseen) << method;
    }
    EXPECT_EQ(streamed.model.W.v, a.model.W.v) << method;
    EXPECT_EQ(streamed.accuracy.correct_unlabeled, a.accuracy.correct_unlabeled) << method;
    EXPECT_EQ(streamed.accuracy.correct_unseen, a.accuracy.correct_unseen) << method;
  }
  EXPECT_EQ(rows.misses, 2);  // the default preprocessing and KSODA's
  EXPECT_GT(rows.bytes(), 0.0);
  for (const auto& [key, e] : rows.entries) {
    EXPECT_TRUE(key.preprocess.single);
    EXPECT_TRUE(e.Xt.v.empty());
    EXPECT_FALSE(e.Xt32.v.empty());
  }
}
