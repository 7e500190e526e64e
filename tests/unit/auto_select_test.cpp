// --method auto (driver/auto_select) and what it stands on (driver/selection): a nested
// method's m scored on the leading columns is the fit at that m; the candidates, simplest
// first, keep what the user fixed; the choice and every score are the same on one rank as on
// all; the estimator's auto fit is the chosen method's own fit; the CV table says what was
// scored and chosen; the race stops hopeless candidates without changing the choice or any
// score it keeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
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

driver::FitConfig auto_config(std::vector<driver::ParameterSetting> settings = {}, int64_t dim = 0,
                              bool race = true, int groups = 1) {
  return driver::make_auto_config(settings, dim, 7, 0, 5, race, groups);
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

TEST(AutoCandidates, AreListedDefaultFamilyFirstThenSimplestFirstAndKeepWhatTheUserFixed) {
  const auto all = driver::auto_candidates(auto_config(), 3, 13);
  const std::vector<nlohmann::json> sllda_grid = {1.0 / (1.0 + 1e-3), 0.5};
  // Per scaling (standardize, then none): the default family (sl-lda at α_u = 1/(1 + 10⁻³),
  // the race's bar), then lda, sda, sl-lda at α_u = 0.5, soda per μ scale.
  ASSERT_EQ(all.size(), 2 * (2 + sllda_grid.size() + 2));
  EXPECT_EQ(all[0].config.method, "sl-lda");
  EXPECT_EQ(all[0].point["alpha_u"], sllda_grid.front());
  EXPECT_TRUE(all[0].preferred);
  EXPECT_EQ(all[1].point, (nlohmann::json{{"method", "lda"}, {"scaling", "standardize"}, {"shrinkage", "auto"}}));
  EXPECT_EQ(all[1].dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(all[1].config.method, "lda");
  EXPECT_EQ(all[1].config.preprocess.scaling, data::Scaling::standardize);
  EXPECT_EQ(all[1].config.method_options.shrinkage, methods::kShrinkageAuto);
  EXPECT_EQ(all[2].config.method, "sda");
  EXPECT_EQ(all[3].config.method, "sl-lda");
  EXPECT_EQ(all[3].point["alpha_u"], sllda_grid.back());
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
  // Every candidate scored on all 15 labeled samples (or stopped by the race), none failed;
  // the preferred ones are sl-lda at α_u = 1/(1 + 10⁻³), and the chosen one is the first best
  // of them unless the first best of all beats it by more than one standard error, in counts
  // of 15: (b − a)²·15 > max(a(15 − a), 15).
  int64_t best = -1, best_preferred = -1;
  nlohmann::json first_best, first_best_preferred;
  for (const auto& c : r["candidates"]) {
    ASSERT_FALSE(c.contains("error")) << c.dump();
    if (c.value("pruned", false)) {
      EXPECT_FALSE(c.value("preferred", false)) << c.dump();
      EXPECT_LT(c["scored"].get<int>(), 15);
      continue;
    }
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
            "method,scaling,alpha_u,shrinkage,mu_scale,dim,cv_accuracy,correct,scored,seconds,fold_1,fold_2,fold_3,"
            "fold_4,fold_5,preferred,chosen,rule,error,pruned,bound");
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

namespace {

/// The entries of a selection report by their parameters (candidate and m).
std::map<std::string, nlohmann::json> entries_by_params(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& e : report["candidates"]) out[e["params"].dump()] = e;
  return out;
}

/// select_auto with the race on and off on the same data and split: the same choice, the same
/// chosen configuration, identical scores of every entry the race kept, and every pruned
/// entry's full score within its bound and unable to beat the best preferred entry. Returns
/// the number of pruned entries. Collective over ds.X.comm.
int expect_race_changes_nothing(const io::Dataset& ds, const std::vector<data::Role>& roles, uint64_t seed,
                                const std::string& what) {
  const driver::Selection on = driver::select_auto(ds, roles, auto_config({}, 0, true), seed);
  const driver::Selection off = driver::select_auto(ds, roles, auto_config({}, 0, false), seed);
  EXPECT_EQ(on.report["chosen"], off.report["chosen"]) << what;
  EXPECT_EQ(on.report["cv_accuracy"], off.report["cv_accuracy"]) << what;
  EXPECT_EQ(on.report["rule"], off.report["rule"]) << what;
  EXPECT_EQ(on.report.value("preferred_margin", -1.0), off.report.value("preferred_margin", -1.0)) << what;
  EXPECT_EQ(on.config.method, off.config.method) << what;
  EXPECT_EQ(on.config.method_options.dim, off.config.method_options.dim) << what;
  EXPECT_EQ(on.config.parameters, off.config.parameters) << what;
  EXPECT_EQ(on.config.preprocess.fields(), off.config.preprocess.fields()) << what;
  EXPECT_TRUE(on.report["race"].get<bool>());
  EXPECT_FALSE(off.report["race"].get<bool>());
  EXPECT_EQ(off.report["pruned"], 0) << what;
  // The best preferred count of the full run: no pruned entry's full count may beat it.
  int64_t a = -1, n = 0;
  for (const auto& e : off.report["candidates"])
    if (e.value("preferred", false) && !e.contains("error") && e["correct"].get<int64_t>() > a) {
      a = e["correct"].get<int64_t>();
      n = e["scored"].get<int64_t>();
    }
  const auto full = entries_by_params(off.report);
  int pruned = 0;
  for (const auto& e : on.report["candidates"]) {
    const auto it = full.find(e["params"].dump());
    EXPECT_NE(it, full.end()) << what << ": " << e.dump();
    if (it == full.end()) continue;
    nlohmann::json x = e, y = it->second;
    x.erase("candidate_seconds");
    y.erase("candidate_seconds");
    if (!e.value("pruned", false)) {
      EXPECT_EQ(x, y) << what;  // the same counts, folds, accuracy, flags
      continue;
    }
    ++pruned;
    EXPECT_FALSE(e.value("preferred", false)) << what << ": " << e.dump();
    EXPECT_GE(a, 0) << what << ": pruned without a preferred entry";
    if (y.contains("error")) continue;  // a later fold refused this m: not an entry either way
    // The folds it scored are the full run's first folds; its full count is within its bound.
    const int done = e["folds_scored"].get<int>();
    for (int f = 0; f < done; ++f) EXPECT_EQ(e["fold_accuracy"][f], y["fold_accuracy"][f]) << what << " fold " << f;
    EXPECT_LE(y["correct"].get<int64_t>(), e["bound"].get<int64_t>()) << what << ": " << e.dump();
    EXPECT_FALSE(driver::beats_by_standard_error(e["bound"].get<int64_t>(), a, n)) << what << ": " << e.dump();
  }
  EXPECT_EQ(on.report["pruned"].get<int>(), pruned) << what;
  return pruned;
}

}  // namespace

TEST(SelectAuto, RacingChoosesAndScoresExactlyAsScoringEveryCandidateOnWineIrisAndBreastCancer) {
  // Run on 1, 2 and 3 ranks by ctest (tests.npN): the folds and counts are the same on any.
  int pruned = 0;
  for (const auto& [file, seed] : std::vector<std::pair<std::string, uint64_t>>{
           {"wine.csv", 2}, {"wine.csv", 5}, {"iris.csv", 1}, {"iris.csv", 3}, {"breast_cancer.csv", 1}}) {
    const io::Dataset ds = io::read_dataset(test::data_path(file), io::Format::csv, MPI_COMM_WORLD);
    const auto roles = test::split(ds, test::per_class_split(5, 40, seed));
    pruned += expect_race_changes_nothing(ds, roles, seed, file + " seed " + std::to_string(seed));
  }
  EXPECT_GT(pruned, 0);  // the race did stop something on these sets
}

TEST(SelectAuto, RacingStopsEveryOtherCandidateBeforeAnyFitWhenTheDefaultFamilyIsAtMostOneMiss) {
  // Three clusters 10 apart on each of 3 features, noise within ±1: the default family
  // scores at least 14 of 15, which nothing can beat by one standard error (the floor of one
  // sample's worth: 14 + 2 > 15), so every other candidate is stopped before its first fold,
  // with bound 15.
  test::TempDir dir("race");
  const std::string path = dir.file("clusters.csv");
  if (test::rank() == 0) {
    std::ofstream out(path);
    std::mt19937_64 rng(11);
    auto noise = [&] { return static_cast<double>(rng() % 2000001) / 1e6 - 1.0; };  // [−1, 1], explicit
    for (int i = 0; i < 90; ++i) {
      const int c = i % 3;
      out << c;
      for (int j = 0; j < 3; ++j) out << ',' << 10.0 * c + noise();
      out << '\n';
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(5, 20, 1));
  const driver::Selection sel = driver::select_auto(ds, roles, auto_config(), 1);
  int64_t first_preferred = -1;  // the standardize block's best, the bar of its others
  for (const auto& e : sel.report["candidates"])
    if (e.value("preferred", false) && e["params"]["scaling"] == "standardize")
      first_preferred = std::max(first_preferred, e["correct"].get<int64_t>());
  ASSERT_GE(first_preferred, 14);
  int pruned = 0, others = 0;
  for (const auto& e : sel.report["candidates"]) {
    if (e.contains("error") || e.value("preferred", false)) continue;
    ++others;
    EXPECT_TRUE(e.value("pruned", false)) << e.dump();
    if (!e.value("pruned", false)) continue;
    ++pruned;
    EXPECT_EQ(e["folds_scored"], 0) << e.dump();
    EXPECT_EQ(e["correct"], 0) << e.dump();
    EXPECT_EQ(e["scored"], 0) << e.dump();
    EXPECT_EQ(e["bound"], 15) << e.dump();
  }
  EXPECT_GT(pruned, 0);
  EXPECT_EQ(pruned, others);
  EXPECT_EQ(sel.report["pruned"], pruned);
  EXPECT_EQ(sel.config.method, "sl-lda");
  // The CV table marks them: pruned 1, their bound, no accuracy; the others pruned 0.
  const std::string table = driver::cv_table_csv(sel.report);
  EXPECT_EQ(static_cast<size_t>(std::count(table.begin(), table.end(), '\n')), sel.report["candidates"].size() + 1);
  int marked = 0;
  for (size_t at = table.find('\n') + 1; at < table.size(); at = table.find('\n', at) + 1) {
    const std::string line = table.substr(at, table.find('\n', at) - at);
    if (line.size() > 5 && line.compare(line.size() - 5, 5, ",1,15") == 0) ++marked;
  }
  EXPECT_EQ(marked, pruned);
  // Racing off scores them all, and chooses the same.
  const driver::Selection off = driver::select_auto(ds, roles, auto_config({}, 0, false), 1);
  EXPECT_EQ(off.report["pruned"], 0);
  EXPECT_EQ(off.report["chosen"], sel.report["chosen"]);
}

TEST(CrossValidateDims, StopsWhereKeepGoingSaysWithTheFoldsDoneCountedAsInTheFullRun) {
  const io::Dataset ds = io::read_dataset(test::data_path("wine.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(5, 30, 1));
  const driver::FitConfig cfg = driver::make_fit_config(
      "lda", {{"scaling", "standardize", "test"}, {"shrinkage", "auto", "test"}}, 0, 0, 0);
  const std::vector<int> folds = driver::cv_folds(ds.labels, roles, ds.classes, 5, 1, MPI_COMM_WORLD);
  const auto full = driver::cross_validate_dims(ds, roles, cfg, {1, 2}, folds, nullptr);
  std::vector<int> asked;
  const auto part = driver::cross_validate_dims(ds, roles, cfg, {1, 2}, folds, nullptr,
                                                [&](int done, const std::vector<driver::CvScore>&) {
                                                  asked.push_back(done);
                                                  return done < 2;
                                                });
  EXPECT_EQ(asked, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(part.size(), 2u);
  for (size_t j = 0; j < 2; ++j) {
    EXPECT_TRUE(part[j].stopped);
    EXPECT_FALSE(full[j].stopped);
    EXPECT_EQ(part[j].folds_done, 2);
    EXPECT_EQ(full[j].folds_done, 5);
    EXPECT_TRUE(std::isnan(part[j].accuracy));
    EXPECT_EQ(part[j].correct, full[j].fold_correct[0] + full[j].fold_correct[1]);
    EXPECT_EQ(part[j].scored, full[j].fold_scored[0] + full[j].fold_scored[1]);
    for (size_t f = 0; f < 2; ++f) EXPECT_EQ(part[j].fold_correct[f], full[j].fold_correct[f]);
    for (size_t f = 2; f < 5; ++f) EXPECT_EQ(part[j].fold_scored[f], 0);
  }
}

TEST(ChooseEntry, RaceStopsACandidateExactlyWhenNoBoundReachesTheCountThatBeatsTheDefault) {
  // n = 15, a = 13: one standard error is √(26/15) = 1.32 samples, so 15 beats (2² · 15 = 60 >
  // 26) and 14 does not (15 ≤ 26): a candidate that can still reach 15 races on, one capped
  // at 14 stops.
  EXPECT_EQ(driver::least_beating_count(13, 15), 15);
  EXPECT_FALSE(driver::race_cannot_win({15}, 13, 15));
  EXPECT_TRUE(driver::race_cannot_win({14}, 13, 15));
  EXPECT_FALSE(driver::race_cannot_win({10, 15, 3}, 13, 15));  // one m still able keeps it
  EXPECT_TRUE(driver::race_cannot_win({14, 14, 3}, 13, 15));
  // a ≥ n − 1: the floor of one sample's worth means nothing beats it (n + 1 needed).
  EXPECT_EQ(driver::least_beating_count(14, 15), 16);
  EXPECT_EQ(driver::least_beating_count(15, 15), 16);
  EXPECT_TRUE(driver::race_cannot_win({15}, 14, 15));
  // n = 1000, a = 500: 16 samples beat it (16² · 1000 > 250 000), 15 do not.
  EXPECT_EQ(driver::least_beating_count(500, 1000), 516);
  EXPECT_FALSE(driver::race_cannot_win({516}, 500, 1000));
  EXPECT_TRUE(driver::race_cannot_win({515}, 500, 1000));
  // No preferred entry scored (a < 0: the plain maximum), or no m left: never stop.
  EXPECT_FALSE(driver::race_cannot_win({0}, -1, 15));
  EXPECT_FALSE(driver::race_cannot_win({}, 13, 15));
  // A bound above n is n.
  EXPECT_FALSE(driver::race_cannot_win({40}, 13, 15));
  // The count is the exact test's threshold, and nondecreasing in a (a larger bar only raises
  // it: stopping against the bar so far is safe against the final best preferred entry).
  for (int64_t n = 1; n <= 150; ++n) {
    int64_t previous = 0;
    for (int64_t a = 0; a <= n; ++a) {
      const int64_t need = driver::least_beating_count(a, n);
      EXPECT_GE(need, previous) << "a = " << a << ", n = " << n;
      previous = need;
      for (int64_t b = 0; b <= n; ++b)
        ASSERT_EQ(driver::beats_by_standard_error(b, a, n), b >= need) << "a = " << a << ", b = " << b << ", n = " << n;
    }
  }
  EXPECT_THAT(test::error_of([] { driver::least_beating_count(16, 15); }), HasSubstr("0 <= a <= n"));
  EXPECT_THAT(test::error_of([] { driver::race_cannot_win({1}, 3, 0); }), HasSubstr("n >= 1"));
}

TEST(SelectAuto, GroupsOfRanksGiveTheSameEntriesAndChoiceAsOneGroup) {
  // --groups G: each group scores one scaling's candidates on its own copy of the rows. With
  // the race off every entry is scored in full, so the report's entries (seconds aside), the
  // choice and the chosen configuration are those of one group, bit for bit: the folds, the
  // preprocessing and every fit are the same on any rank count (rank invariance). With the
  // race on, the choice is the same. On one rank, two groups are refused on every rank.
  const io::Dataset ds = io::read_dataset(test::data_path("wine.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(5, 40, 2));
  if (test::size() < 2) {
    EXPECT_THAT(test::error_of([&] { driver::select_auto(ds, roles, auto_config({}, 0, false, 2), 2); }),
                HasSubstr("--groups 2 must be between 1 and the number of ranks (1)"));
    return;
  }
  auto strip = [](nlohmann::json report) {
    for (auto& e : report["candidates"]) e.erase("candidate_seconds");
    return report["candidates"];
  };
  const driver::Selection one = driver::select_auto(ds, roles, auto_config({}, 0, false), 2);
  for (int groups : test::size() > 2 ? std::vector<int>{2, test::size()} : std::vector<int>{2}) {
    SCOPED_TRACE("groups " + std::to_string(groups));
    const driver::Selection grouped = driver::select_auto(ds, roles, auto_config({}, 0, false, groups), 2);
    EXPECT_EQ(strip(grouped.report), strip(one.report));
    EXPECT_EQ(grouped.report["chosen"], one.report["chosen"]);
    EXPECT_EQ(grouped.report["cv_accuracy"], one.report["cv_accuracy"]);
    EXPECT_EQ(grouped.report["groups"], groups);
    EXPECT_EQ(grouped.config.method, one.config.method);
    EXPECT_EQ(grouped.config.method_options.dim, one.config.method_options.dim);
    EXPECT_EQ(grouped.config.preprocess.fields(), one.config.preprocess.fields());
    const driver::Selection raced = driver::select_auto(ds, roles, auto_config({}, 0, true, groups), 2);
    EXPECT_EQ(raced.report["chosen"], one.report["chosen"]);
    EXPECT_EQ(raced.report["cv_accuracy"], one.report["cv_accuracy"]);
  }
  EXPECT_EQ(one.report["groups"], 1);
}

TEST(SelectAuto, ScoresOnTheTransductiveRowsAloneExactlyAsOnTheWholeDataSet) {
  // select_auto copies the labeled and unlabeled rows (not the unseen: 40 per class here) and
  // selects on the copy; select_candidates on the whole data set, whose folds ignore the
  // unseen rows, must give the same entries bit for bit (seconds aside) and the same choice.
  const io::Dataset ds = io::read_dataset(test::data_path("wine.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::per_class_split(5, 10, 3));
  int64_t unseen = 0;
  for (data::Role r : roles) unseen += r == data::Role::unseen;
  MPI_Allreduce(MPI_IN_PLACE, &unseen, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  ASSERT_GT(unseen, 100);  // 178 − 3·15: the copy leaves most rows out
  const driver::FitConfig a = auto_config({}, 0, false);
  const driver::Selection copied = driver::select_auto(ds, roles, a, 3);
  const driver::Selection whole = driver::select_candidates(ds, roles, driver::auto_candidates(a, ds.classes, ds.X.cols),
                                                            5, 3, "--method auto", false);
  auto strip = [](nlohmann::json report) {
    for (auto& e : report["candidates"]) e.erase("candidate_seconds");
    return report["candidates"];
  };
  EXPECT_EQ(strip(copied.report), strip(whole.report));
  EXPECT_EQ(copied.report["chosen"], whole.report["chosen"]);
  EXPECT_EQ(copied.report["cv_accuracy"], whole.report["cv_accuracy"]);
}
