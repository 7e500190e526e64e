#pragma once
/// \file trace_ratio.hpp
/// The orthogonally constrained trace ratio problem (soda-nie2009 eq. (15)/(16)/(32)):
///   max_{WᵀW = I} tr(Wᵀ Sb W) / tr(Wᵀ Sw W),  W ∈ R^{d×m},
/// solved by the faster algorithm of §2.3.2: with λ the current ratio, the full
/// eigen-decomposition of Sb − λ Sw (eq. (22)), then the m eigenvectors that maximize the
/// ratio among all choices of m (eq. (23), solved exactly by a Dinkelbach iteration over
/// the per-vector values a_i = w_iᵀSb w_i, b_i = w_iᵀSw w_i), repeated until λ stops growing.
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/solvers/eigen.hpp"

namespace ssdr::solvers {

/// The first iteration's work, which does not depend on m: λ₀ = tr(Sb)/tr(Sw), every
/// eigenpair of Sb − λ₀Sw and the per-vector a_i, b_i. A sweep over m on the same (Sb, Sw)
/// computes it once (its bits are what each m's own first iteration computes).
struct TraceRatioStart {
  bool ready = false;
  EigenPairs pairs;
  std::vector<double> a, b;
};

/// The orthogonal trace-ratio problem max tr(WᵀSbW)/tr(WᵀSwW), WᵀW = I (soda-nie2009 §3,
/// the iteration of Wang et al.): m, iterations, tolerance, SLEPc options prefix.
struct TraceRatioOptions {
  int64_t dim = 1;               ///< m, 1 ≤ m ≤ d
  int max_iterations = 100;
  double tolerance = 1e-12;      ///< stop when (λ_new − λ)/λ < tolerance
  std::string prefix = "tr_";    ///< SLEPc options prefix for the eigen-solves
  /// Optional: the first iteration of this (Sb, Sw), filled by the first call that gets an
  /// empty one and reused by later calls (other m). Must belong to the same Sb and Sw.
  TraceRatioStart* start = nullptr;
};

/// W, the trace ratio λ it reached and the iterations taken.
struct TraceRatioResult {
  Dense W;                       ///< d×m, orthonormal columns
  double ratio = 0;              ///< λ* = tr(WᵀSbW)/tr(WᵀSwW)
  std::vector<double> history;   ///< λ after each iteration (non-decreasing)
  int iterations = 0;
  bool converged = false;
};

/// Solves the trace ratio problem. Sb symmetric PSD, Sw symmetric positive definite (pass
/// S̃w + μI), both replicated d×d. Collective over comm (the eigen-solves go to SLEPc).
/// Columns of W are ordered by decreasing eigenvalue τ_i of Sb − λ*Sw, signs fixed as in
/// sym_eigen. \throws ssdr::Error on shape mismatch, m ∉ [1, d], or a Sw that is not
/// positive definite.
TraceRatioResult trace_ratio(const Dense& Sb, const Dense& Sw, const TraceRatioOptions& options,
                             MPI_Comm comm);

}  // namespace ssdr::solvers
