// The orthogonally constrained trace ratio problem, soda-nie2009 §2.3.2.
//
//   max_{WᵀW = I} tr(WᵀSbW) / tr(WᵀSwW)
//
// Iteration (λ the current ratio):
//   1. full eigen-decomposition (Sb − λSw) w_i = τ_i w_i (eq. (22)) through sym_eigen (all d
//      eigenpairs, largest first, the caller's SLEPc options prefix);
//   2. a_i = w_iᵀSb w_i, b_i = w_iᵀSw w_i; among all choices of m eigenvectors pick the one
//      that maximizes Σa/Σb (eq. (23)), solved exactly by Dinkelbach's method: from ρ = λ take
//      the m largest a_i − ρ b_i, set ρ = Σa/Σb over them, repeat until the selection stops
//      changing (ρ strictly increases while it changes, so this ends after finitely many
//      steps; at the fixed point no other m-subset has a larger ratio). The first Dinkelbach
//      step from ρ = λ picks exactly the top-m eigenvectors (a_i − λb_i = τ_i), i.e. the
//      choice of the §2.3.1 algorithm, and later steps can only improve it;
//   3. W = the selected eigenvectors, kept in decreasing order of τ_i (the order sym_eigen
//      returns them in), and λ_new = tr(WᵀSbW)/tr(WᵀSwW) ≥ λ.
// Start: λ₀ = tr(Sb)/tr(Sw) (the ratio of the full space, which is ≤ λ* for any m), so the
// first pass is the same step with no W yet. Stop when (λ_new − λ)/λ < tolerance, or when λ
// would not grow any more (then the previous W is kept), or after max_iterations.
// Progress (rank 0, rate-limited like every progress line): each iteration's λ and its
// change; the ETA extrapolates the relative change, which shrinks about geometrically near
// the optimum, to the tolerance.
#include "ssdr/solvers/trace_ratio.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/solvers/eigen.hpp"

namespace ssdr::solvers {
namespace {

/// diag(VᵀSV) for the d×d S and the d×k V.
std::vector<double> quadratic_forms(const Dense& S, const Dense& V) {
  const int64_t d = V.rows, k = V.cols;
  Dense SV(d, k);
  blas::gemm('N', 'N', d, k, d, 1.0, S.data(), d, V.data(), d, 0.0, SV.data(), d);
  std::vector<double> q(static_cast<size_t>(k), 0.0);
  for (int64_t j = 0; j < k; ++j) {
    double s = 0;
    for (int64_t i = 0; i < d; ++i) s += V(i, j) * SV(i, j);
    q[static_cast<size_t>(j)] = s;
  }
  return q;
}

/// Indices of the m largest a_i − ρ b_i (ties broken by the smaller index), sorted ascending.
std::vector<int64_t> top_m(const std::vector<double>& a, const std::vector<double>& b,
                           double rho, int64_t m) {
  std::vector<int64_t> idx(a.size());
  std::iota(idx.begin(), idx.end(), int64_t{0});
  auto score = [&](int64_t i) {
    return a[static_cast<size_t>(i)] - rho * b[static_cast<size_t>(i)];
  };
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t i, int64_t j) { return score(i) > score(j); });
  idx.resize(static_cast<size_t>(m));
  std::sort(idx.begin(), idx.end());
  return idx;
}

double subset_ratio(const std::vector<double>& a, const std::vector<double>& b,
                    const std::vector<int64_t>& sel) {
  double sa = 0, sb = 0;
  for (int64_t i : sel) {
    sa += a[static_cast<size_t>(i)];
    sb += b[static_cast<size_t>(i)];
  }
  return sa / sb;
}

/// Exact solution of eq. (23): the m-subset maximizing Σa/Σb (b > 0), Dinkelbach from rho.
std::vector<int64_t> best_subset(const std::vector<double>& a, const std::vector<double>& b,
                                 double rho, int64_t m) {
  std::vector<int64_t> sel = top_m(a, b, rho, m);
  double r = subset_ratio(a, b, sel);
  // Each changing step strictly increases the ratio, so there are at most C(d, m) steps; in
  // practice a handful. The cap only guards against rounding-level cycling.
  for (size_t step = 0; step < 10 * a.size() + 100; ++step) {
    std::vector<int64_t> next = top_m(a, b, r, m);
    if (next == sel) break;
    const double rn = subset_ratio(a, b, next);
    if (!(rn > r)) break;  // no strict progress: rounding-level tie, keep the current one
    sel = std::move(next);
    r = rn;
  }
  return sel;
}

double trace(const Dense& S) {
  double t = 0;
  for (int64_t i = 0; i < S.rows; ++i) t += S(i, i);
  return t;
}

}  // namespace

TraceRatioResult trace_ratio(const Dense& Sb, const Dense& Sw, const TraceRatioOptions& options,
                             MPI_Comm comm) {
  SSDR_CHECK(Sb.rows == Sb.cols, "trace_ratio: Sb must be square, got " +
                                     std::to_string(Sb.rows) + "×" + std::to_string(Sb.cols));
  SSDR_CHECK_SHAPE("trace_ratio: Sw vs Sb", Sw.rows, Sw.cols, Sb.rows, Sb.cols);
  const int64_t d = Sb.rows;
  const int64_t m = options.dim;
  SSDR_CHECK(d >= 1 && m >= 1 && m <= d, "trace_ratio: the target dimension m = " +
                                             std::to_string(m) + " must lie in [1, " +
                                             std::to_string(d) + "]");
  {
    Dense L = Sw;
    // Sw is replicated, but a check every rank agrees on costs one allreduce and can never
    // leave one rank behind (a user's μ ≤ 0 reaches here; it must not abort the job).
    SSDR_CHECK_COLLECTIVE(comm, lapack::potrf(d, L.data(), d),
                          "trace_ratio: Sw is not positive definite (add a regularization μI, μ > 0)");
  }

  TraceRatioResult res;
  const double tsw = trace(Sw);
  double lambda = trace(Sb) / tsw;  // λ₀ = tr(Sb)/tr(Sw) ≤ λ*
  bool have_w = false;

  Dense M(d, d);  // Sb − λSw, formed even when the first step is reused (cheap beside its eigen-solve)
  Progress progress("trace ratio (d = " + std::to_string(d) + ", m = " + std::to_string(m) + ") iteration",
                    options.max_iterations);
  double previous_rel = 0;
  for (int it = 1; it <= options.max_iterations; ++it) {
    for (size_t k = 0; k < M.v.size(); ++k) M.v[k] = Sb.v[k] - lambda * Sw.v[k];
    // Symmetrize against rounding in the inputs so every EPS type sees the same problem.
    for (int64_t j = 0; j < d; ++j)
      for (int64_t i = j + 1; i < d; ++i) {
        const double s = 0.5 * (M(i, j) + M(j, i));
        M(i, j) = s;
        M(j, i) = s;
      }
    TraceRatioStart fresh;
    TraceRatioStart& step = it == 1 && options.start != nullptr ? *options.start : fresh;
    if (!step.ready) {
      step.pairs = sym_eigen(M, nullptr, d, Which::largest, options.prefix, comm);
      step.a = quadratic_forms(Sb, step.pairs.vectors);
      step.b = quadratic_forms(Sw, step.pairs.vectors);
      step.ready = true;
    }
    const EigenPairs& ep = step.pairs;
    const std::vector<double>& a = step.a;
    const std::vector<double>& b = step.b;
    const std::vector<int64_t> sel = best_subset(a, b, lambda, m);
    const double lambda_new = subset_ratio(a, b, sel);
    res.iterations = it;

    if (have_w && !(lambda_new > lambda)) {
      // No growth (λ at its optimum up to rounding): keep the previous W.
      res.converged = true;
      break;
    }
    Dense W(d, m);
    for (int64_t k = 0; k < m; ++k) {
      const int64_t src = sel[static_cast<size_t>(k)];
      std::copy(ep.vectors.col(src), ep.vectors.col(src) + d, W.col(k));
    }
    res.W = std::move(W);
    have_w = true;
    res.history.push_back(lambda_new);
    const double rel = (lambda_new - lambda) /
                       std::max(std::fabs(lambda), std::numeric_limits<double>::min());
    {
      // Iterations still to go if the change keeps shrinking by its last factor q.
      long expected = 0;
      if (rel >= options.tolerance && previous_rel > 0 && rel > 0 && rel < previous_rel) {
        const double more = std::ceil(std::log(options.tolerance / rel) / std::log(rel / previous_rel));
        expected = static_cast<long>(std::min<double>(it + more, options.max_iterations));
      }
      char detail[160];
      std::snprintf(detail, sizeof detail, "ratio %.15g, change %.3g (relative %.3g)", lambda_new, lambda_new - lambda, rel);
      progress.update(it, expected, detail);
      previous_rel = rel;
    }
    lambda = lambda_new;
    if (rel < options.tolerance) {
      res.converged = true;
      break;
    }
  }
  res.ratio = lambda;
  return res;
}

}  // namespace ssdr::solvers
