// --method auto (driver/auto_select) and what it stands on (driver/selection): a nested
// method's m scored on the leading columns is the fit at that m; the candidates, simplest
// first, keep what the user fixed; the choice and every score are the same on one rank as on
// all; the estimator's auto fit is the chosen method's own fit; the CV table says what was
// scored and chosen.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/driver/auto_select.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/driver/selection.hpp"
#include "ssdr/io/dataset.hpp"
#include "support.hpp"

using namespace ssdr;
using ::testing::HasSubstr;

namespace {

/// The report without its clocks (seconds differ from run to run, nothing else may).
nlohmann::json without_seconds(nlohmann::json r) {
  r.erase("seconds");
  for (auto& c : r["candidates"]) c.erase("candidate_seconds");
  return r;
}

driver::FitConfig auto_config(std::vector<driver::ParameterSetting> settings = {}, int64_t dim = 0) {
  return driver::make_auto_config(settings, dim, 7, 0, 5);
}

}  // namespace

TEST(CrossValidateDims, ScoresEachMOfANestedMethodOnTheLeadingColumnsExactlyAsAFitAtThatM) {
  // LDA's W for m = 1 is the first column of its W for m = 2 (one dense GEVD, columns in
  // eigenvalue order), so the 1-NN decisions, hence the integer counts, must agree exactly.
  const std::string path = test::data_path("wine.csv");
  const io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(5, 30, 1));
  driver::FitConfig cfg = driver::make_fit_config(
      "lda", {{"scaling", "standardize", "test"}, {"shrinkage", "auto", "test"}}, 0, 0, 0);
  const std::vector<int> folds = driver::cv_folds(ds.labels, roles, ds.classes, 5, 1, MPI_COMM_WORLD);
  const std::vector<driver::CvScore> both = driver::cross_validate_dims(ds, roles, cfg, {1, 2}, folds, nullptr);
  ASSERT_EQ(both.size(), 2u);
  for (int64_t m : {1, 2}) {
    driver::FitConfig at = cfg;
    at.method_options.dim = m;
    const driver::CvScore one = driver::cross_validate(ds, roles, at, folds, nullptr);
    const driver::CvScore& s = both[static_cast<size_t>(m - 1)];
    EXPECT_EQ(s.correct, one.correct) << "m = " << m;
    EXPECT_EQ(s.scored, 15) << "m = " << m;
    EXPECT_EQ(s.fold_correct, one.fold_correct) << "m = " << m;
    EXPECT_EQ(s.fold_scored, one.fold_scored) << "m = " << m;
  }
  // A method that is not nested (soda's trace ratio) is fitted at each m: still one score each.
  driver::FitConfig soda = driver::make_fit_config("soda", {}, 0, 0, 0);
  const auto s2 = driver::cross_validate_dims(ds, roles, soda, {2, 4}, folds, nullptr);
  ASSERT_EQ(s2.size(), 2u);
  driver::FitConfig soda4 = soda;
  soda4.method_options.dim = 4;
  EXPECT_EQ(s2[1].correct, driver::cross_validate(ds, roles, soda4, folds, nullptr).correct);
}

TEST(AutoCandidates, AreListedSimplestFirstAndKeepWhatTheUserFixed) {
  const auto all = driver::auto_candidates(auto_config(), 3, 13);
  const std::vector<nlohmann::json> sllda_grid = {1.0 / (1.0 + 1e-3), 0.5};
  // Per scaling (standardize, then none): lda, sda, sl-lda per α_u, soda per μ scale.
  ASSERT_EQ(all.size(), 2 * (2 + sllda_grid.size() + 2));
  EXPECT_EQ(all[0].point, (nlohmann::json{{"method", "lda"}, {"scaling", "standardize"}, {"shrinkage", "auto"}}));
  EXPECT_EQ(all[0].dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(all[0].config.method, "lda");
  EXPECT_EQ(all[0].config.preprocess.scaling, data::Scaling::standardize);
  EXPECT_EQ(all[0].config.method_options.shrinkage, methods::kShrinkageAuto);
  EXPECT_EQ(all[1].config.method, "sda");
  EXPECT_EQ(all[2].config.method, "sl-lda");
  EXPECT_EQ(all[2].point["alpha_u"], sllda_grid.front());
  const auto& soda = all[2 + sllda_grid.size()];
  EXPECT_EQ(soda.config.method, "soda");
  EXPECT_EQ(soda.dims, (std::vector<int64_t>{2}));  // c − 1: each m of the trace ratio is a fit
  // The default family: SL-LDA at α_u = 1/(1 + 10⁻³), at each scaling, and nothing else.
  for (const auto& c : all)
    EXPECT_EQ(c.preferred, c.config.method == "sl-lda" && c.point["alpha_u"] == sllda_grid.front()) << c.point.dump();
  EXPECT_EQ(all[all.size() / 2].point["scaling"], "none");
  // The user's scaling replaces the two; the user's m is every candidate's only m.
  const auto fixed = driver::auto_candidates(auto_config({{"scaling", "minmax", "--scaling"}}, 1), 3, 13);
  ASSERT_EQ(fixed.size(), all.size() / 2);
  for (const auto& c : fixed) {
    EXPECT_EQ(c.config.preprocess.scaling, data::Scaling::unit_range) << c.point.dump();
    EXPECT_EQ(c.dims, (std::vector<int64_t>{1})) << c.point.dump();
  }
  // A fixed m beyond c − 1: soda alone (per scaling, per μ scale).
  const auto wide = driver::auto_candidates(auto_config({}, 4), 3, 13);
  ASSERT_EQ(wide.size(), 4u);
  for (const auto& c : wide) EXPECT_EQ(c.config.method, "soda");
  // Two classes, one feature: m = 1 for every candidate.
  for (const auto& c : driver::auto_candidates(auto_config(), 2, 1)) EXPECT_EQ(c.dims, (std::vector<int64_t>{1}));
}

TEST(AutoConfig, RefusesWhatAutoChoosesAndBadValuesWithOneLineErrors) {
  EXPECT_THAT(test::error_of([] { auto_config({{"alpha_u", 0.9, "--alpha-u"}}); }),
              HasSubstr("--alpha-u is not a parameter of auto: auto chooses the method and its own parameters"));
  EXPECT_THAT(test::error_of([] { auto_config({{"scaling", "loud", "--scaling"}}); }), HasSubstr("--scaling"));
  EXPECT_THAT(test::error_of([] { driver::make_auto_config({}, 0, 0, 0, 1); }),
              HasSubstr("cv_folds (--cv-folds): expected an integer >= 2, got 1"));
  EXPECT_THAT(test::error_of([] { Estimator e("auto", {{"mu_scale", 1.0}}); }),
              HasSubstr("'mu_scale' is not a parameter of auto"));
}

TEST(SelectAuto, ChoosesTheSameCandidateWithTheSameScoresOnOneRankAsOnAllRanks) {
  const std::string path = test::data_path("wine.csv");
  const io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(5, 40, 2));
  const driver::FitConfig a = auto_config();
  const driver::Selection all = driver::select_auto(ds, roles, a, 2);
  std::string serial;
  if (test::rank() == 0) {
    const io::Dataset one = io::read_dataset(path, io::Format::csv, MPI_COMM_SELF);
    serial = without_seconds(
                 driver::select_auto(one, test::split_all(path, io::Format::csv, test::per_class_split(5, 40, 2)), a, 2).report)
                 .dump();
  }
  const nlohmann::json s = nlohmann::json::parse(bcast_string(serial, 0, MPI_COMM_WORLD));
  const nlohmann::json r = without_seconds(all.report);
  EXPECT_EQ(r, s);
  // Every candidate scored on all 15 labeled samples, none failed; the preferred ones are
  // sl-lda at α_u = 1/(1 + 10⁻³), and the chosen one is the first best of them unless the
  // first best of all beats it by more than one standard error, in counts of 15:
  // (b − a)²·15 > max(a(15 − a), 15).
  int64_t best = -1, best_preferred = -1;
  nlohmann::json first_best, first_best_preferred;
  for (const auto& c : r["candidates"]) {
    ASSERT_FALSE(c.contains("error")) << c.dump();
    EXPECT_EQ(c["scored"].get<int>(), 15);
    const bool preferred = c.value("preferred", false);
    EXPECT_EQ(preferred, c["params"]["method"] == "sl-lda" && c["params"]["alpha_u"] == 1.0 / (1.0 + 1e-3)) << c.dump();
    const int64_t correct = c["correct"].get<int64_t>();
    if (correct > best) {
      best = correct;
      first_best = c["params"];
    }
    if (preferred && correct > best_preferred) {
      best_preferred = correct;
      first_best_preferred = c["params"];
    }
  }
  ASSERT_GE(best_preferred, 0);
  EXPECT_DOUBLE_EQ(r["preferred_margin"].get<double>(),
                   std::sqrt(std::max(best_preferred * (15.0 - best_preferred) / 225.0, 1.0 / 15) / 15));
  const int64_t gap = best - best_preferred;
  const nlohmann::json expected =
      gap * gap * 15 > std::max<int64_t>(best_preferred * (15 - best_preferred), 15) ? first_best : first_best_preferred;
  EXPECT_EQ(r["chosen"], expected);
  EXPECT_EQ(all.config.method, expected["method"].get<std::string>());
  EXPECT_EQ(all.config.method_options.dim, expected["dim"].get<int64_t>());
  EXPECT_EQ(all.config.parameters["selected_by"], "auto");
  // The CV table: a header, one line per scored entry, the chosen one marked with the rule.
  const std::string table = driver::cv_table_csv(all.report);
  EXPECT_EQ(table.substr(0, table.find('\n')),
            "method,scaling,shrinkage,alpha_u,mu_scale,dim,cv_accuracy,correct,scored,seconds,fold_1,fold_2,fold_3,"
            "fold_4,fold_5,preferred,chosen,rule,error");
  EXPECT_EQ(static_cast<size_t>(std::count(table.begin(), table.end(), '\n')), r["candidates"].size() + 1);
  EXPECT_THAT(table, HasSubstr(",1,\"the preferred candidate (the default family) with the highest pooled k-fold"));
}

TEST(CvStandardError, IsTheBinomialOneWithOneSamplesWorthAtTheEdges) {
  EXPECT_DOUBLE_EQ(driver::cv_standard_error(0.5, 100), 0.05);            // √(0.25/100)
  EXPECT_DOUBLE_EQ(driver::cv_standard_error(0.9, 100), std::sqrt(0.0009));  // √(0.09/100)
  EXPECT_DOUBLE_EQ(driver::cv_standard_error(1.0, 15), 1.0 / 15);          // √((1/15)/15): one sample
  EXPECT_DOUBLE_EQ(driver::cv_standard_error(0.0, 4), 0.25);
  EXPECT_THAT(test::error_of([] { driver::cv_standard_error(0.5, 0); }), HasSubstr("expected n >= 1"));
  EXPECT_THAT(test::error_of([] { driver::cv_standard_error(1.5, 10); }), HasSubstr("p in [0, 1]"));
}

TEST(SelectCandidates, KeepsThePreferredCandidateUnlessAnotherBeatsItByMoreThanOneStandardError) {
  // wine, 5 labeled per class: shrinkage LDA on standardized features against SL-LDA on the
  // raw features (wine's columns span 10⁻¹ … 10³: its graph is magnesium's and proline's) and
  // against SL-LDA on standardized ones. Each pair's choice follows the rule from its scores.
  const std::string path = test::data_path("wine.csv");
  const io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(5, 40, 2));
  const auto all = driver::auto_candidates(auto_config(), 3, 13);
  auto find = [&](const std::string& method, const std::string& scaling) {
    for (const auto& c : all)
      if (c.point["method"] == method && c.point["scaling"] == scaling &&
          (method != "sl-lda" || c.point["alpha_u"] == 1.0 / (1.0 + 1e-3)))
        return c;
    throw std::runtime_error("no candidate " + method + " " + scaling);
  };
  int switched = 0, kept = 0;
  for (const std::string& scaling : {"none", "standardize"}) {
    std::vector<driver::Candidate> pair = {find("lda", "standardize"), find("sl-lda", scaling)};
    ASSERT_FALSE(pair[0].preferred);
    ASSERT_TRUE(pair[1].preferred);
    const driver::Selection sel = driver::select_candidates(ds, roles, pair, 5, 2, "test");
    double lda = -1, sl = -1;
    nlohmann::json lda_point, sl_point;
    for (const auto& e : sel.report["candidates"]) {
      double& best = e["params"]["method"] == "lda" ? lda : sl;
      if (e["cv_accuracy"].get<double>() > best) {
        best = e["cv_accuracy"].get<double>();
        (e["params"]["method"] == "lda" ? lda_point : sl_point) = e["params"];
      }
    }
    const bool beats = lda > sl + driver::cv_standard_error(sl, 15);
    EXPECT_EQ(sel.report["chosen"], beats ? lda_point : sl_point) << scaling << ": lda " << lda << ", sl-lda " << sl;
    EXPECT_EQ(sel.config.method, beats ? "lda" : "sl-lda");
    (beats ? switched : kept) += 1;
  }
  // Both branches ran: SL-LDA on wine's raw units loses by far more than one standard error
  // (measured 9/15 against LDA's 15/15); on standardized features it ties with LDA (15/15).
  // The margin itself is ChooseEntry's.
  EXPECT_EQ(switched, 1);
  EXPECT_EQ(kept, 1);
}

TEST(ChooseEntry, KeepsTheDefaultUnlessAnotherIsMoreThanOneStandardErrorBetter) {
  using E = driver::CvEntry;
  // {chosen, best preferred} for: a non-preferred entry first, then a preferred one.
  auto pick = [](int64_t other, int64_t preferred, int64_t n) {
    const driver::CvChoice c = driver::choose_entry({E{other, n, false}, E{preferred, n, true}});
    EXPECT_EQ(c.preferred, 1);
    return c.chosen;
  };
  // n = 15: one standard error of 13/15 is √((13·2/225)/15) = 0.0878 (1.3 samples), of 14/15
  // √((1/15)/15) = 1/15 (the floor: 14·1/225 < 1/15), exactly one sample: 15/15 does not beat
  // 14/15 by more (the boundary), and beats 13/15 by 2 samples > 1.3.
  EXPECT_EQ(pick(15, 13, 15), 0);
  EXPECT_EQ(pick(15, 14, 15), 1);
  EXPECT_EQ(pick(15, 15, 15), 1);  // a tie with an earlier entry goes to the preferred one
  // n = 9: 7/9's standard error √((7·2/81)/9) = 0.139 (1.25 samples): 9/9 is 2 better.
  EXPECT_EQ(pick(9, 7, 9), 0);
  // n = 10: 8/10's √((8·2/100)/10) = 0.126 (1.26 samples): 9/10 is 1 better, kept.
  EXPECT_EQ(pick(9, 8, 10), 1);
  // n = 1000, p = 0.5: one standard error is 15.8 samples. 516 is 16 better than 500
  // (16²·1000 = 256 000 > 500·500 = 250 000): switched; 515 is 15 better: kept.
  EXPECT_EQ(pick(516, 500, 1000), 0);
  EXPECT_EQ(pick(515, 500, 1000), 1);
  // Without a preferred entry: the plain maximum, the first of the highest.
  const driver::CvChoice plain = driver::choose_entry({E{3, 5, false}, E{4, 5, false}, E{4, 5, false}});
  EXPECT_EQ(plain.chosen, 1);
  EXPECT_EQ(plain.preferred, -1);
  // The best preferred entry is the first of the highest among the preferred.
  const driver::CvChoice two = driver::choose_entry({E{14, 15, true}, E{14, 15, true}, E{15, 15, false}});
  EXPECT_EQ(two.preferred, 0);
  EXPECT_EQ(two.chosen, 0);
  // The integer rule is the standard error's: every a, b ≤ n for n ≤ 60, away from the
  // boundary (where the floating form may round either way) they agree.
  for (int64_t n = 1; n <= 60; ++n)
    for (int64_t a = 0; a <= n; ++a)
      for (int64_t b = 0; b <= n; ++b) {
        const double lhs = static_cast<double>(b - a) / n, rhs = driver::cv_standard_error(static_cast<double>(a) / n, n);
        if (std::abs(lhs - rhs) > 1e-9) EXPECT_EQ(driver::beats_by_standard_error(b, a, n), lhs > rhs) << a << " " << b << " " << n;
      }
  EXPECT_THAT(test::error_of([] { driver::choose_entry({}); }), HasSubstr("no entry"));
  EXPECT_THAT(test::error_of([] { driver::beats_by_standard_error(5, 3, 4); }), HasSubstr("0 <= a, b <= n"));
}

TEST(EstimatorAuto, FitsTheChosenMethodAsItsOwnEstimatorWouldAndPredictsWithIt) {
  const test::Problem p = test::load_problem("wine.csv", 5, false);
  const DistMatrix X = ref::distribute(p.X, MPI_COMM_WORLD);
  Estimator e("auto", {{"seed", 3}});
  e.fit(X, test::local_part(p.semi, X));
  const nlohmann::json chosen = e.info().at("selection").at("chosen");
  EXPECT_EQ(e.model().method, chosen["method"].get<std::string>());
  EXPECT_EQ(e.model().W.cols, chosen["dim"].get<int64_t>());
  // The same method with the chosen parameters, fitted directly: the same W bit for bit.
  nlohmann::json params = {{"seed", 3}};
  for (auto it = chosen.begin(); it != chosen.end(); ++it)
    if (it.key() != "method") params[it.key()] = it.value();
  Estimator direct(chosen["method"].get<std::string>(), params);
  direct.fit(X, test::local_part(p.semi, X));
  EXPECT_EQ(e.model().W.v, direct.model().W.v);
  EXPECT_EQ(allgatherv(e.predict(X), MPI_COMM_WORLD), allgatherv(direct.predict(X), MPI_COMM_WORLD));
  EXPECT_EQ(e.method(), "auto");
}

TEST(CrossValidateDims, ScoresTheMsTheMethodTakesAndRecordsWhyItRefusedTheOthers) {
  // --pca-dim 1 leaves d' = 1: LDA (nested) cannot fit m = 2, SODA cannot fit m = 4; the m = 1
  // fits are scored all the same, and equal the fit at m = 1 alone.
  const std::string path = test::data_path("iris.csv");
  const io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(4, 20, 1));
  const std::vector<int> folds = driver::cv_folds(ds.labels, roles, ds.classes, 4, 1, MPI_COMM_WORLD);
  for (const char* method : {"lda", "soda"}) {
    const driver::FitConfig cfg = driver::make_fit_config(method, {{"pca_dim", 1, "test"}}, 0, 0, 0);
    const auto s = driver::cross_validate_dims(ds, roles, cfg, {1, 2}, folds, nullptr);
    ASSERT_EQ(s.size(), 2u) << method;
    EXPECT_TRUE(s[0].error.empty()) << method << ": " << s[0].error;
    EXPECT_EQ(s[0].scored, 12) << method;
    EXPECT_THAT(s[1].error, HasSubstr("--dim 2")) << method;
    driver::FitConfig one = cfg;
    one.method_options.dim = 1;
    EXPECT_EQ(s[0].correct, driver::cross_validate(ds, roles, one, folds, nullptr).correct) << method;
    // Every m refused: the candidate fails with the first m's reason.
    EXPECT_THAT(test::error_of([&] { driver::cross_validate_dims(ds, roles, cfg, {2, 3}, folds, nullptr); }),
                HasSubstr("--dim 2"))
        << method;
  }
  // auto with --pca-dim 1 on iris: chooses among the m = 1 fits; the m = 2 ones are listed as refused.
  const driver::Selection sel =
      driver::select_auto(ds, roles, auto_config({{"pca_dim", 1, "--pca-dim"}}), 1);
  EXPECT_EQ(sel.config.method_options.dim, 1);
  int refused = 0;
  for (const auto& c : sel.report["candidates"]) refused += c.contains("error");
  EXPECT_GT(refused, 0);
}
