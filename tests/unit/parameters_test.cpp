// The parameter table (methods/parameters.hpp): every spec checks its own range and kind,
// sets what it names and reads it back; the methods' own lists name own-scoped specs; the
// scopes decide which methods take a parameter.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ssdr/core/error.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/methods/parameters.hpp"

using namespace ssdr;
using ::testing::HasSubstr;
using nlohmann::json;

namespace {

struct Fit {
  methods::MethodOptions method;
  data::PreprocessOptions preprocess;
  kernels::KernelOptions kernel;
  methods::ParameterTarget target() { return {method, preprocess, kernel}; }
  json get(const methods::ParameterSpec& p) const { return p.get({method, preprocess, kernel}); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_TRUE(e.collective()) << e.what();
    return e.what();
  }
  return "no error";
}

/// A value inside the spec's range (or one of its choices), other than the default.
json valid_value(const methods::ParameterSpec& p) {
  switch (p.kind) {
    case methods::ParameterKind::choice: return p.choices.back();
    case methods::ParameterKind::flag: return true;
    case methods::ParameterKind::integer: return static_cast<int64_t>(p.lo) + 2;
    case methods::ParameterKind::real: return std::isinf(p.hi) ? p.lo + 0.75 : p.lo + 0.5 * (p.hi - p.lo);
    case methods::ParameterKind::choice_or_real: return p.choices.back();
  }
  return json();
}

}  // namespace

TEST(ParameterTable, EverySpecSetsTheValueItIsGivenAndReadsItBack) {
  for (const auto& p : methods::parameter_table()) {
    Fit f;
    auto t = f.target();
    const json v = p.name == "pca" ? json(false) : valid_value(p);  // pca's default is true
    methods::set_parameter(t, p.name, v, "test");
    json got = f.get(p);
    if (p.name == "kernel") EXPECT_EQ(got, "rbf");  // "rbf" is the last choice
    else if (p.kind == methods::ParameterKind::integer) EXPECT_EQ(got.get<double>(), v.get<double>()) << p.name;
    else EXPECT_EQ(got, v) << p.name;
  }
}

TEST(ParameterTable, EveryNumberRefusesNanInfinityAndBothEndsOutsideItsRangeNamingTheOption) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const auto& p : methods::parameter_table()) {
    if (p.kind != methods::ParameterKind::integer && p.kind != methods::ParameterKind::real &&
        p.kind != methods::ParameterKind::choice_or_real)
      continue;
    std::vector<double> bad = {nan, inf, -inf, p.lo_open ? p.lo : p.lo - 1};
    if (!std::isinf(p.hi)) bad.push_back(p.hi_open ? p.hi : p.hi + 1);
    if (p.kind == methods::ParameterKind::integer) bad.push_back(p.lo + 1.5);
    for (double x : bad) {
      Fit f;
      auto t = f.target();
      EXPECT_THAT(error_of([&] { methods::set_parameter(t, p.name, x, p.cli_option()); }),
                  HasSubstr(p.cli_option() + ": expected " + p.expected() + ", got "))
          << p.name << " = " << x;
    }
    Fit f;
    auto t = f.target();
    EXPECT_THAT(error_of([&] { methods::set_parameter(t, p.name, "high", "job.yaml: line 3"); }),
                HasSubstr("job.yaml: line 3: parameter " + p.name + ": expected " + p.expected() + ", got " +
                          (p.kind == methods::ParameterKind::choice_or_real ? "'high'" : "\"high\"")));
  }
}

TEST(ParameterTable, ChoicesAndFlagsRefuseWhatTheyDoNotList) {
  Fit f;
  auto t = f.target();
  EXPECT_EQ(error_of([&] { methods::set_parameter(t, "weight", "gauss", "--weight"); }),
            "--weight: expected one of heat, cosine, binary, adaptive, clr, got 'gauss'");
  EXPECT_EQ(error_of([&] { methods::set_parameter(t, "weight", 3, "--weight"); }),
            "--weight: expected one of heat, cosine, binary, adaptive, clr, got 3");
  EXPECT_EQ(error_of([&] { methods::set_parameter(t, "pca", 2, "job.yaml: line 4"); }),
            "job.yaml: line 4: parameter pca: expected true or false, got 2");
  // --shrinkage: a name of its list or a number in [0, 1] (issue 49).
  EXPECT_EQ(error_of([&] { methods::set_parameter(t, "shrinkage", "ledoit", "--shrinkage"); }),
            "--shrinkage: expected none, auto or a number in [0, 1], got 'ledoit'");
  EXPECT_EQ(error_of([&] { methods::set_parameter(t, "shrinkage", 1.5, "--shrinkage"); }),
            "--shrinkage: expected none, auto or a number in [0, 1], got 1.5");
  methods::set_parameter(t, "shrinkage", 0.25, "--shrinkage");
  EXPECT_EQ(f.method.shrinkage, 0.25);
  methods::set_parameter(t, "shrinkage", "auto", "--shrinkage");
  EXPECT_EQ(f.method.shrinkage, methods::kShrinkageAuto);
  methods::set_parameter(t, "shrinkage", "none", "--shrinkage");
  EXPECT_TRUE(std::isnan(f.method.shrinkage));
  EXPECT_THAT(error_of([&] { methods::set_parameter(t, "theta", 1, "--grid"); }),
              HasSubstr("--grid: unknown parameter 'theta'; expected one of knn, weight"));
}

TEST(ParameterTable, OwnParametersAreOwnScopedAndScopesDecideWhoTakesTheRest) {
  for (const auto& m : methods::method_table())
    for (const auto& name : m.parameters) {
      const auto* p = methods::lookup_parameter(name);
      ASSERT_NE(p, nullptr) << m.name << " lists " << name;
      EXPECT_EQ(p->scope, methods::ParameterScope::own) << m.name << " lists " << name;
    }
  const auto& soda = methods::find_method("soda");
  const auto& lda = methods::find_method("lda");
  const auto& lp = methods::find_method("lp");
  EXPECT_TRUE(methods::uses_parameter(soda, "mu_scale"));
  EXPECT_FALSE(methods::uses_parameter(soda, "beta"));
  EXPECT_TRUE(methods::uses_parameter(soda, "knn_method"));   // a kNN graph
  EXPECT_FALSE(methods::uses_parameter(lda, "knn_method"));   // no graph
  EXPECT_TRUE(methods::uses_parameter(lda, "scaling"));       // every method
  EXPECT_TRUE(methods::uses_parameter(lda, "sigma2"));        // projects: a kernel may come first
  EXPECT_FALSE(methods::uses_parameter(lp, "sigma2"));        // transductive only
  EXPECT_TRUE(methods::uses_parameter(methods::find_method("m-ssgda"), "lambda"));
  EXPECT_FALSE(methods::uses_parameter(methods::find_method("m-ssgda"), "alpha"));  // alpha means one thing
  EXPECT_THAT(error_of([&] { methods::require_parameter(soda, "beta", "--beta"); }),
              HasSubstr("--beta is not a parameter of soda"));
}

TEST(ParameterTable, TheReportListsExactlyTheParametersTheMethodUsesWithPaperDefaultsNamed) {
  Fit f;
  const json soda = methods::parameter_values(methods::find_method("soda"), {f.method, f.preprocess, f.kernel});
  EXPECT_EQ(soda["alpha_u"], 0.99);
  EXPECT_EQ(soda["mu_scale"], 0.1);
  EXPECT_EQ(soda["knn"], "default");  // the paper graph's k, recorded in info.graph
  EXPECT_FALSE(soda.contains("beta"));
  EXPECT_FALSE(soda.contains("degree"));  // the kernel is recorded as one object by the caller
  const json tca = methods::parameter_values(methods::find_method("tca"), {f.method, f.preprocess, f.kernel});
  EXPECT_EQ(tca["alpha"], "default");
  EXPECT_FALSE(tca.contains("mu_scale"));
}

TEST(ParameterTable, AFamilysOwnParameterIsDeclaredInItsFileAndStoredUnderItsName) {
  // OTCA's gamma is declared by src/methods/impls/tca.cpp (family_number), not by the shared
  // table: its value lives in MethodOptions::own, "default" until set, and only otca takes it.
  const methods::ParameterSpec* gamma = methods::lookup_parameter("gamma");
  ASSERT_NE(gamma, nullptr);
  EXPECT_EQ(gamma->scope, methods::ParameterScope::own);
  Fit f;
  EXPECT_EQ(f.get(*gamma), "default");
  EXPECT_FALSE(f.method.own.contains("gamma"));
  auto t = f.target();
  methods::set_parameter(t, "gamma", 0.25, "--gamma");
  EXPECT_EQ(f.method.own.at("gamma"), 0.25);
  EXPECT_EQ(f.method.own_number("gamma", 1e-3), 0.25);
  EXPECT_EQ(f.get(*gamma), 0.25);
  EXPECT_EQ(methods::MethodOptions().own_number("gamma", 1e-3), 1e-3);  // unset: the paper's
  EXPECT_TRUE(methods::uses_parameter(methods::find_method("otca"), "gamma"));
  EXPECT_FALSE(methods::uses_parameter(methods::find_method("tca"), "gamma"));
  // A family's integer and flag, with the values they show before they are set.
  EXPECT_EQ(f.get(*methods::lookup_parameter("recursions")), 1);
  EXPECT_EQ(f.get(*methods::lookup_parameter("eigenvalue_scaling")), false);
  EXPECT_EQ(f.get(*methods::lookup_parameter("mu_scale")), 0.1);
  methods::set_parameter(t, "eigenvalue_scaling", 1, "job.yaml: line 3");  // a job's 0/1
  EXPECT_EQ(f.method.own.at("eigenvalue_scaling"), true);
  EXPECT_TRUE(f.method.own_flag("eigenvalue_scaling", false));
  // The families' own come after the shared own-scoped parameters, before the others (help order).
  const auto& table = methods::parameter_table();
  auto at = [&](const std::string& name) {
    for (size_t i = 0; i < table.size(); ++i)
      if (table[i].name == name) return i;
    return table.size();
  };
  EXPECT_LT(at("shrinkage"), at("mu_scale"));
  EXPECT_LT(at("mu_scale"), at("normalize"));
  EXPECT_LT(at("gamma"), at("normalize"));
}
