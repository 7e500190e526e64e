#pragma once
/// \file values.hpp
/// The range of values ssdr accepts as data, and its collective check: every door (the
/// readers, ssdr::Estimator, Python) refuses a NaN, an infinity, or a finite value so large
/// that the fit's sums of squares would overflow a double, before any numerics run.
#include <cstdint>
#include <string>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/sparse.hpp"

namespace ssdr {

/// The largest magnitude accepted for a data value or a kernel value: 2^448 ≈ 7.3·10^134.
/// Why this bound: the fit forms sums of squares and products of centered values (the
/// covariance, the scatter matrices, squared distances, the kernel's centering) over at
/// most N ≤ 2^62 terms; a centered value is at most 2·2^448 in magnitude, so such a sum is at
/// most 2^62 · 4 · 2^896 = 2^960, which leaves 2^63 of headroom under the largest double
/// (≈ 2^1024) for the products the solvers form with unit vectors. A finite value beyond it
/// (1e308 in a CSV) would reach LAPACK as an infinity.
constexpr double kMaxAbsValue = 0x1p448;

/// "" when v is finite with |v| ≤ kMaxAbsValue; otherwise the value and what was expected,
/// e.g. "NaN; expected finite values" or "1e+308; expected |x| <= 7.3e+134 (2^448, so that the
/// fit's sums of squares stay finite): scale the data". Local.
std::string value_problem(double v);

/// Checks every value of X (n×d, rows distributed over X.comm) with value_problem; the
/// first bad value (lowest rank, then row-major order) is raised on every rank as
/// "<what>[i, j] (sample, feature; 0-based) = <problem>", i the global row.
/// Collective over X.comm. \throws ssdr::Error (collectively over X.comm).
void check_values(const DistMatrix& X, const std::string& what);
/// The same for the stored values of sparse rows (CSR, X's layout). Collective over X.comm.
void check_values(const SparseRows& X, const std::string& what);
/// The same for typed rows (uint8 values always pass; float32 ones must be finite).
/// Collective over X.comm.
void check_values(const TypedRows& X, const std::string& what);

}  // namespace ssdr
