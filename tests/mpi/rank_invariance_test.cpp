// Every method in the table gives the same result on one rank as on all ranks (ctest runs
// this binary on 1, 2, 3 and 4 ranks, and .ci/run once more under a second OpenBLAS core
// type). The comparison is the whole pipeline (read, split, preprocessing, graph,
// propagation, solver, 1-NN) on MPI_COMM_SELF against MPI_COMM_WORLD.
//
// Error analysis behind the tolerances. Same result "by design" means: everything discrete
// (the split, the preprocessing's bits, the kNN lists, σ) is bitwise identical on any rank
// count (ordered_row_sum, fixed-shape GEMM tiles, ties to the smaller global index), and
// what remains are reductions whose order changes with the partition plus iterative solves
// stopped at a tolerance:
// - a sum of n terms in another order differs by ≤ n·ε·Σ|terms|: with n ≈ 10³ samples and
//   ε = 1.1e-16, a relative 1e-13 on the scatter/operator matrices;
// - label propagation and the CG solves stop at rtol 1e-12 on systems with condition
//   number ≤ 1/(1 − α_u) = 100 (propagation) or ≲ 10³ (TCA's I + αL, SOGE's L + U + αI on
//   these data), so their solutions differ by ≤ 1e-9 relative, usually far less;
// - the SOGE Stiefel iteration stops at relative stationarity 1e-12 or at rounding-level
//   stagnation of (13).
// An eigenvalue or trace ratio moves by at most ‖δS‖ (Weyl), so 1e-9 relative covers it
// with room. Eigenvectors move by ‖δS‖/gap; the relative eigengaps of the leading m
// eigenvectors on digits are ≥ 1e-2, giving ~1e-7 on the embedding Gram E·Eᵀ (which is
// blind to sign flips and to rotations inside a degenerate eigenspace).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ssdr/methods/method.hpp"
#include "support.hpp"

namespace ssdr {
namespace {

using test::max_abs;
using test::max_abs_diff;
using test::mul;

constexpr double kObjectiveRelTol = 1e-9;
constexpr double kGramRelTol = 1e-7;

/// The method's objective values as the fit reports them: the trace ratio, or the
/// eigenvalues / criterion values in info.
std::vector<double> objective(double trace_ratio, const nlohmann::json& info) {
  if (std::isfinite(trace_ratio)) return {trace_ratio};
  for (const char* key : {"objective", "cccp_objective", "eigenvalues", "singular_values", "direction_norms"}) {
    if (!info.contains(key)) continue;
    const nlohmann::json& v = info[key];
    if (v.is_number()) return {v.get<double>()};
    if (v.is_array()) {
      std::vector<double> out;
      for (const auto& x : v)
        if (x.is_number()) out.push_back(x.get<double>());
      if (!out.empty()) return out;
    }
  }
  return {};
}

class EveryMethod : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryMethod, GivesTheSameObjectiveAndEmbeddingOnOneRankAsOnAllRanks) {
  const methods::MethodInfo& info = methods::find_method(GetParam());
  driver::FitConfig cfg;
  cfg.method = info.name;
  cfg.preprocess = info.preprocess;
  // digits: n = 1797, d = 64, c = 10, integer features (many exact distance ties); half of
  // it transductive, a fifth for the exact kernel maps (an n×n kernel and its
  // eigendecomposition per fit keeps the suite within CI's time on 2 cores).
  const double fraction = info.kernel.type == kernels::KernelType::none ||
                                  info.kernel.type == kernels::KernelType::linear
                              ? 0.5
                              : 0.2;
  const test::SerialAndDistributed r = test::fit_serial_and_distributed(
      "digits.csv", test::transductive_split(5, fraction, 7), cfg, info.projects);

  EXPECT_EQ(r.dist.accuracy.unlabeled, r.serial_accuracy.unlabeled);
  if (info.projects) EXPECT_EQ(r.dist.accuracy.unseen, r.serial_accuracy.unseen);
  // The graph (k, weights, σ or t, edges, mean degree) has the same bits on every rank count.
  for (const char* key : {"graph", "graph_edges", "sigma", "mean_edge_dist2"}) {
    if (!r.dist.info.contains(key)) continue;
    if (std::string(key) == "graph" && r.dist.info[key].is_object() && r.dist.info[key].value("weight", "") == "clr") {
      // CLR's weights come from Krylov eigenvectors, which agree across rank counts to their
      // residual, not bit for bit (ClrGraph.IsTheSameOnOneRankAsOnAllRanks bounds the
      // weights). Exact: the kNN support, the σ-free fields, the iterations, λ (powers of 2
      // times 0.1), the components (counted exactly) and the zero eigenvalues (set exactly).
      // The mean degree is 1 on both within (3k + 2nk)ε whatever the weights: every row of S
      // is on the simplex (the bound of ClrGraph.LaplacianHasExactlyCZeroEigenvalues...).
      nlohmann::json a = r.dist.info[key], b = r.serial_info[key];
      const double n = static_cast<double>(r.Y_serial.rows), k = a["k"].get<double>();  // n ≥ n_t
      const double tol = (3 * k + 2 * n * k) * std::numeric_limits<double>::epsilon();
      EXPECT_NEAR(a["mean_degree"].get<double>(), 1.0, tol);
      EXPECT_NEAR(b["mean_degree"].get<double>(), 1.0, tol);
      const auto za = a["laplacian_eigenvalues"], zb = b["laplacian_eigenvalues"];
      ASSERT_EQ(za.size(), zb.size());
      const int64_t comps = a["components"].get<int64_t>();
      for (size_t q = 0; q < za.size() && static_cast<int64_t>(q) < comps; ++q) {
        EXPECT_EQ(za[q].get<double>(), 0.0);
        EXPECT_EQ(zb[q].get<double>(), 0.0);
      }
      for (const char* f : {"mean_degree", "laplacian_eigenvalues"}) a.erase(f), b.erase(f);
      EXPECT_EQ(a, b) << "CLR graph differs";
      continue;
    }
    EXPECT_EQ(r.dist.info[key], r.serial_info[key]) << key << " differs";
  }

  const std::vector<double> od = objective(r.dist.trace_ratio, r.dist.info);
  const std::vector<double> os = objective(r.serial_trace_ratio, r.serial_info);
  ASSERT_EQ(od.size(), os.size());
  if (info.projects && info.name != "1nn") EXPECT_FALSE(od.empty()) << "no objective reported";
  double scale = 0;
  for (double v : os) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < od.size(); ++i)
    EXPECT_NEAR(od[i], os[i], kObjectiveRelTol * scale) << "objective value " << i;

  if (!info.projects) return;
  ASSERT_EQ(r.Y_dist.rows, r.Y_serial.rows);
  ASSERT_EQ(r.Y_dist.cols, r.Y_serial.cols);
  const Dense Gd = mul(r.Y_dist, r.Y_dist, 'N', 'T'), Gs = mul(r.Y_serial, r.Y_serial, 'N', 'T');
  EXPECT_LT(max_abs_diff(Gd, Gs), kGramRelTol * max_abs(Gs));
}

std::vector<std::string> method_names() {
  std::vector<std::string> out;
  for (const auto& m : methods::method_table()) out.push_back(m.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(MethodTable, EveryMethod, ::testing::ValuesIn(method_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s;
                           for (char ch : p.param) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return s;
                         });

}  // namespace
}  // namespace ssdr
