// Parameter selection by k-fold cross-validation on the labeled samples (driver/selection):
// the folds, the score against a brute-force reference, independence from hidden labels and
// from the rank count, the grids and the option errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/driver/selection.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/method.hpp"
#include "support.hpp"
#include "ssdr/core/mpi_util.hpp"

using namespace ssdr;
using ::testing::HasSubstr;

namespace {

driver::FitConfig config_for(const std::string& method) {
  driver::FitConfig c;
  c.method = method;
  c.preprocess = methods::find_method(method).preprocess;
  return c;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_TRUE(e.collective());
    return e.what();
  }
  return "(no error)";
}


}  // namespace

TEST(CvFolds, AreStratifiedAndDependOnlyOnTheLabelsRolesAndSeed) {
  const std::string path = test::data_path("iris.csv");
  const io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const io::Dataset whole = io::read_dataset(path, io::Format::csv, MPI_COMM_SELF);  // every sample's labels
  const auto roles = test::split(ds, test::per_class_split(3, 20, 0));
  const auto all_roles = test::split_all(path, io::Format::csv, test::per_class_split(3, 20, 0));
  // The folds of every rank's rows, gathered in row order.
  auto gathered = [&](const std::vector<data::Role>& r, int folds, uint64_t seed) {
    return allgatherv(driver::cv_folds(ds.labels, r, ds.classes, folds, seed, MPI_COMM_WORLD), MPI_COMM_WORLD);
  };
  const std::vector<int> f = gathered(roles, 5, 0);
  ASSERT_EQ(f.size(), all_roles.size());
  // 9 labeled samples dealt into 5 folds, continuing across classes: 2, 2, 2, 2, 1.
  std::vector<int> size(5, 0);
  std::vector<std::vector<int>> per_class(3, std::vector<int>(5, 0));
  for (size_t i = 0; i < f.size(); ++i) {
    if (all_roles[i] != data::Role::labeled) {
      EXPECT_EQ(f[i], -1);
      continue;
    }
    ASSERT_GE(f[i], 0);
    ASSERT_LT(f[i], 5);
    ++size[static_cast<size_t>(f[i])];
    ++per_class[static_cast<size_t>(whole.labels[i])][static_cast<size_t>(f[i])];
  }
  EXPECT_EQ(size, (std::vector<int>{2, 2, 2, 2, 1}));
  for (const auto& c : per_class)
    for (int v : c) EXPECT_LE(v, 1);  // 3 per class in 5 folds: at most one per fold
  // A function of labels, roles and seed only: the serial folds (every row on one rank) are
  // the distributed ones, on any rank count.
  EXPECT_EQ(driver::cv_folds(whole.labels, all_roles, ds.classes, 5, 0, MPI_COMM_SELF), f);
  EXPECT_EQ(gathered(roles, 5, 0), f);
  EXPECT_NE(gathered(roles, 5, 1), f);
  // More folds than labeled samples: leave-one-out.
  const std::vector<int> loo = gathered(roles, 50, 0);
  std::vector<int> seen;
  for (size_t i = 0; i < loo.size(); ++i)
    if (loo[i] >= 0) seen.push_back(loo[i]);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  // Errors name the option or the class.
  EXPECT_THAT(error_of([&] { driver::cv_folds(ds.labels, roles, ds.classes, 1, 0, MPI_COMM_WORLD); }),
              HasSubstr("--cv-folds must be at least 2, got 1"));
  const auto one = test::split(ds, test::per_class_split(1, 20, 0));
  EXPECT_THAT(error_of([&] { driver::cv_folds(ds.labels, one, ds.classes, 5, 0, MPI_COMM_WORLD); }),
              HasSubstr("at least 2 labeled samples per class (one is held out); class 0 has 1"));
}

TEST(CrossValidate, ScoresEachHeldOutFoldByOneNnAgainstTheRemainingLabeledSamples) {
  // Reference: per fold, the fold's labeled samples hidden (unlabeled), the pipeline fit, and a
  // brute-force 1-NN over the gathered embedding (nearest remaining labeled sample, ties to the
  // smaller index). The counts must agree exactly.
  const std::string path = test::data_path("wine.csv");
  const io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const io::Dataset whole = io::read_dataset(path, io::Format::csv, MPI_COMM_SELF);  // every sample's labels
  const auto roles = test::split(ds, test::per_class_split(4, 20, 3));
  const auto all_roles = test::split_all(path, io::Format::csv, test::per_class_split(4, 20, 3));
  driver::FitConfig cfg = config_for("sl-lda");
  cfg.preprocess.scaling = data::Scaling::standardize;
  const std::vector<int> folds = driver::cv_folds(ds.labels, roles, ds.classes, 5, 3, MPI_COMM_WORLD);
  const std::vector<int> all_folds = allgatherv(folds, MPI_COMM_WORLD);
  driver::CvCaches caches;
  const driver::CvScore s = driver::cross_validate(ds, roles, cfg, folds, &caches);
  EXPECT_EQ(s.folds, 5);
  EXPECT_EQ(s.scored, 12);
  int64_t correct = 0;
  for (int f = 0; f < 5; ++f) {
    std::vector<data::Role> r = all_roles;
    for (size_t i = 0; i < r.size(); ++i)
      if (all_folds[i] == f) r[i] = data::Role::unlabeled;
    const driver::FitOutcome out = driver::fit_and_evaluate(ds, test::local_part(r, ds.X), cfg, true);
    const Dense Y = allgather(out.embedding);
    for (size_t i = 0; i < r.size(); ++i) {
      if (all_folds[i] != f) continue;
      double best = std::numeric_limits<double>::infinity();
      int label = -1;
      for (size_t j = 0; j < r.size(); ++j) {
        if (r[j] != data::Role::labeled) continue;
        double d2 = 0;
        for (int64_t c = 0; c < Y.cols; ++c)
          d2 += (Y(static_cast<int64_t>(i), c) - Y(static_cast<int64_t>(j), c)) *
                (Y(static_cast<int64_t>(i), c) - Y(static_cast<int64_t>(j), c));
        if (d2 < best) {
          best = d2;
          label = whole.labels[j];
        }
      }
      correct += label == whole.labels[i];
    }
  }
  EXPECT_EQ(s.correct, correct);
  EXPECT_DOUBLE_EQ(s.accuracy, static_cast<double>(correct) / 12.0);
  EXPECT_GE(correct, 9);  // wine with 4 labels per class: far above chance (4 of 12)
  // The graphs were built once and shared by the folds.
  EXPECT_FALSE(caches.folds.empty());
}

TEST(CrossValidate, NeverLooksAtTheLabelsOfUnlabeledOrUnseenSamples) {
  io::Dataset ds = io::read_dataset(test::data_path("iris.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(3, 20, 2));
  driver::FitConfig cfg = config_for("m-ssgda");
  const std::vector<int> folds = driver::cv_folds(ds.labels, roles, ds.classes, 5, 2, MPI_COMM_WORLD);
  const driver::CvScore a = driver::cross_validate(ds, roles, cfg, folds, nullptr);
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i] != data::Role::labeled) ds.labels[i] = (ds.labels[i] + 1) % ds.classes;
  const driver::CvScore b = driver::cross_validate(ds, roles, cfg, folds, nullptr);
  EXPECT_EQ(a.correct, b.correct);
  EXPECT_EQ(a.scored, 9);
  EXPECT_EQ(b.scored, 9);
}

TEST(SelectByCv, ChoosesTheSameParameterWithTheSameScoresOnOneRankAsOnAllRanks) {
  struct Case {
    std::string method, file;
    int p, q;
    driver::Grid grid;  // empty: the method's default grid
  };
  const std::vector<Case> cases = {
      {"m-ssgda", "iris.csv", 3, 20, {{"lambda", {0.01, 1.0, 100.0}}}},
      {"sl-lda", "wine.csv", 4, 20, {}},
  };
  for (const auto& c : cases) {
    driver::FitConfig cfg = config_for(c.method);
    const io::Dataset ds = io::read_dataset(test::data_path(c.file), io::Format::csv, MPI_COMM_WORLD);
    const auto roles = test::split(ds, test::per_class_split(c.p, c.q, 5));
    const driver::Grid grid = c.grid.empty() ? driver::default_grid(cfg) : c.grid;
    const driver::Selection all = driver::select_by_cv(ds, roles, cfg, grid, 5, 5);
    std::string serial;
    if (test::rank() == 0) {
      const io::Dataset one = io::read_dataset(test::data_path(c.file), io::Format::csv, MPI_COMM_SELF);
      const auto all_roles = test::split_all(test::data_path(c.file), io::Format::csv, test::per_class_split(c.p, c.q, 5));
      serial = driver::select_by_cv(one, all_roles, cfg, grid, 5, 5).report.dump();
    }
    const nlohmann::json s = nlohmann::json::parse(bcast_string(serial, 0, MPI_COMM_WORLD));
    const nlohmann::json& r = all.report;
    EXPECT_EQ(r["chosen"], s["chosen"]) << c.method;
    ASSERT_EQ(r["candidates"].size(), s["candidates"].size()) << c.method;
    ASSERT_EQ(r["candidates"].size(), driver::grid_points(grid).size()) << c.method;
    int best = -1;
    double best_acc = -1;
    for (size_t k = 0; k < r["candidates"].size(); ++k) {
      const auto& x = r["candidates"][k];
      ASSERT_FALSE(x.contains("error")) << c.method << " " << x.dump();
      EXPECT_EQ(x["correct"], s["candidates"][k]["correct"]) << c.method << " " << x["params"].dump();
      EXPECT_EQ(x["scored"].get<int>(), c.p * ds.classes) << c.method;
      if (x["cv_accuracy"].get<double>() > best_acc) {
        best_acc = x["cv_accuracy"].get<double>();
        best = static_cast<int>(k);
      }
    }
    // The best score, the first candidate on ties; recorded and applied.
    EXPECT_EQ(r["chosen"], r["candidates"][static_cast<size_t>(best)]["params"]) << c.method;
    EXPECT_EQ(r["cv_accuracy"].get<double>(), best_acc) << c.method;
    EXPECT_EQ(r["folds"].get<int>(), 5) << c.method;
    EXPECT_EQ(r["held_out_as"], "unlabeled");
    for (auto it = r["chosen"].begin(); it != r["chosen"].end(); ++it)
      EXPECT_EQ(all.config.parameters[it.key()], it.value()) << c.method;
    if (c.method == "m-ssgda")
      EXPECT_EQ(all.config.method_options.own.at("lambda").get<double>(), r["chosen"]["lambda"].get<double>());
    else
      EXPECT_EQ(all.config.method_options.propagation.alpha_unlabeled, r["chosen"]["alpha_u"].get<double>());
  }
}

TEST(SelectByCv, AGridOverThePreprocessingScoresEachCandidateAsItsOwnCrossValidation) {
  // Every candidate shares the folds' caches; a candidate with another scaling or PCA has
  // other rows (another d'), so none of the graphs, propagations, scatter matrices or σ₀ of
  // one may serve another (issue 33: a 0.7-energy scatter matrix once reached the 0.99
  // candidate's fit). Reference: each candidate cross-validated alone, without caches; the
  // counts are integers of the same deterministic fits, so they agree exactly.
  const io::Dataset ds = io::read_dataset(test::data_path("wine.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(4, 20, 5));
  driver::FitConfig cfg = config_for("soda");
  cfg.method_options.dim = 2;
  const std::vector<int> folds = driver::cv_folds(ds.labels, roles, ds.classes, 5, 5, MPI_COMM_WORLD);
  for (const driver::Grid& grid : {driver::Grid{{"pca_energy", {0.8, 0.99}}, {"scaling", {"standardize", "minmax"}}},
                                   driver::Grid{{"pca_dim", {3, 8}}}}) {
    const driver::Selection sel = driver::select_by_cv(ds, roles, cfg, grid, 5, 5);
    const nlohmann::json& candidates = sel.report["candidates"];
    ASSERT_EQ(candidates.size(), driver::grid_points(grid).size());
    int64_t best = -1;
    nlohmann::json chosen;
    for (const auto& x : candidates) {
      ASSERT_FALSE(x.contains("error")) << x.dump();
      driver::FitConfig c = cfg;
      for (auto it = x["params"].begin(); it != x["params"].end(); ++it)
        driver::set_parameter(c, it.key(), it.value(), "test");
      const driver::CvScore alone = driver::cross_validate(ds, roles, c, folds, nullptr);
      EXPECT_EQ(x["correct"].get<int64_t>(), alone.correct) << x["params"].dump();
      EXPECT_EQ(x["scored"].get<int64_t>(), alone.scored) << x["params"].dump();
      if (alone.correct > best) {  // every candidate scores the same samples: counts order as accuracies
        best = alone.correct;
        chosen = x["params"];
      }
    }
    // The candidate the individual cross-validations pick (the first on ties).
    EXPECT_EQ(sel.report["chosen"], chosen) << sel.report.dump();
  }
}

TEST(SelectByCv, DefaultGridsAreThePapersCandidateSets) {
  using nlohmann::json;
  driver::FitConfig c = config_for("m-ssgda");
  driver::Grid g = driver::default_grid(c);  // linear kernel: λ only
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].first, "lambda");
  EXPECT_EQ(g[0].second, (std::vector<json>{1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0}));
  driver::set_parameter(c, "kernel", "rbf", "test");
  g = driver::default_grid(c);  // RBF: σ = scale·σ₀, and λ
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].first, "sigma_scale");
  EXPECT_EQ(g[0].second, (std::vector<json>{1.0, 0.1, 10.0, 0.01, 100.0, 0.001, 1000.0}));
  EXPECT_EQ(driver::grid_points(g).size(), 49u);
  c = config_for("sl-lda");
  g = driver::default_grid(c);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].first, "alpha_u");
  ASSERT_EQ(g[0].second.size(), 7u);
  EXPECT_DOUBLE_EQ(g[0].second[0].get<double>(), 1.0 / 1.001);  // λ = 10⁻³, nearest α_u = 0.99
  for (const auto& a : g[0].second) {
    EXPECT_GE(a.get<double>(), 0.0);
    EXPECT_LT(a.get<double>(), 1.0);  // eq. (5) needs α_u < 1
  }
  EXPECT_TRUE(driver::default_grid(config_for("lda")).empty());
  EXPECT_TRUE(driver::default_grid(config_for("ssgda")).empty());  // linear: nothing to select
  EXPECT_EQ(driver::default_grid(config_for("gda"))[0].first, "sigma_scale");
}

TEST(SelectByCv, GridArgumentsAndParametersAreCheckedWithOneLineErrors) {
  auto [name, values] = driver::parse_grid_argument("alpha-u=0.9,0.99");
  EXPECT_EQ(name, "alpha_u");
  EXPECT_EQ(values, (std::vector<nlohmann::json>{0.9, 0.99}));
  auto knn = driver::parse_grid_argument("knn=5,8").second;
  EXPECT_TRUE(knn[0].is_number_integer());
  EXPECT_EQ(driver::parse_grid_argument("weight=heat,cosine").second[1], "cosine");
  EXPECT_THAT(error_of([] { driver::parse_grid_argument("alpha"); }),
              HasSubstr("--grid 'alpha': expected NAME=v1,v2,..."));
  EXPECT_THAT(error_of([] { driver::parse_grid_argument("bogus=1"); }),
              HasSubstr("--grid 'bogus=1': unknown parameter 'bogus'; expected dim or one of"));
  EXPECT_THAT(error_of([] { driver::parse_grid_argument("alpha=1,,2"); }), HasSubstr("empty value"));
  driver::FitConfig c = config_for("sl-lda");
  EXPECT_THAT(error_of([&] { driver::set_parameter(c, "alpha_u", "high", "--grid"); }),
              HasSubstr("--grid: parameter alpha_u: expected a number in [0, 1), got \"high\""));
  EXPECT_THAT(error_of([&] { driver::set_parameter(c, "kernel", "gauss", "--grid"); }),
              HasSubstr("--grid: parameter kernel: expected one of none, linear, poly, polynomial, rbf, got 'gauss'"));
  for (const std::string& m :
       {error_of([&] { driver::set_parameter(c, "alpha_u", "high", "--grid"); }),
        error_of([] { driver::parse_grid_argument("bogus=1"); })})
    EXPECT_EQ(m.find('\n'), std::string::npos);
  // Nothing to select, and a method without a projection.
  const io::Dataset ds = io::read_dataset(test::data_path("iris.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(3, 20, 0));
  EXPECT_THAT(error_of([&] { driver::select_by_cv(ds, roles, config_for("lda"), {}, 5, 0); }),
              HasSubstr("--select-by cv: nothing to select for method 'lda'"));
  EXPECT_THAT(error_of([&] { driver::select_by_cv(ds, roles, config_for("lp"), {{"alpha_u", {0.9}}}, 5, 0); }),
              HasSubstr("learns no projection"));
}
