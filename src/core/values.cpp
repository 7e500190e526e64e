#include "ssdr/core/values.hpp"

#include <cmath>
#include <cstdio>

#include "ssdr/core/error.hpp"

namespace ssdr {

std::string value_problem(double v) {
  if (std::isnan(v)) return "NaN; expected finite values";
  if (std::isinf(v)) return std::string(v > 0 ? "inf" : "-inf") + "; expected finite values";
  if (std::fabs(v) <= kMaxAbsValue) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.17g; expected |x| <= %.2g (2^448, so that the fit's sums of squares stay finite): scale the data",
                v, kMaxAbsValue);
  return buf;
}

namespace {
/// Raises the first bad value of this rank (global row i, column j), agreed over comm.
void raise_first(MPI_Comm comm, bool bad, int64_t i, int64_t j, double v, const std::string& what) {
  SSDR_CHECK_COLLECTIVE(comm, !bad,
                        what + "[" + std::to_string(i) + ", " + std::to_string(j) + "] (sample, feature; 0-based) = " +
                            value_problem(v));
}
}  // namespace

void check_values(const DistMatrix& X, const std::string& what) {
  const int64_t total = X.n_local * X.cols;
  int64_t bad = -1;
  for (int64_t k = 0; k < total; ++k) {
    const double v = X.v[static_cast<size_t>(k)];
    if (!(std::fabs(v) <= kMaxAbsValue)) {  // NaN fails the comparison too
      bad = k;
      break;
    }
  }
  const int64_t cols = X.cols > 0 ? X.cols : 1;
  raise_first(X.comm, bad >= 0, X.row_start + (bad >= 0 ? bad / cols : 0), bad >= 0 ? bad % cols : 0,
              bad >= 0 ? X.v[static_cast<size_t>(bad)] : 0.0, what);
}

void check_values(const TypedRows& X, const std::string& what) {
  int64_t bad = -1;
  double value = 0;
  if (X.type != ElementType::u8) {
    std::vector<double> scratch(static_cast<size_t>(X.cols));
    for (int64_t i = 0; i < X.n_local && bad < 0; ++i) {
      const double* x = X.row(i, scratch.data());
      for (int64_t j = 0; j < X.cols; ++j)
        if (!(std::fabs(x[j]) <= kMaxAbsValue)) {
          bad = i * X.cols + j;
          value = x[j];
          break;
        }
    }
  }
  const int64_t cols = X.cols > 0 ? X.cols : 1;
  raise_first(X.comm, bad >= 0, X.row_start + (bad >= 0 ? bad / cols : 0), bad >= 0 ? bad % cols : 0, value, what);
}

void check_values(const SparseRows& X, const std::string& what) {
  int64_t row = -1, k_bad = -1;
  for (int64_t i = 0; i < X.n_local && k_bad < 0; ++i)
    for (int64_t k = X.row_ptr[static_cast<size_t>(i)]; k < X.row_ptr[static_cast<size_t>(i) + 1]; ++k)
      if (!(std::fabs(X.val[static_cast<size_t>(k)]) <= kMaxAbsValue)) {
        row = i;
        k_bad = k;
        break;
      }
  raise_first(X.comm, k_bad >= 0, X.row_start + row, k_bad >= 0 ? X.col[static_cast<size_t>(k_bad)] : 0,
              k_bad >= 0 ? X.val[static_cast<size_t>(k_bad)] : 0.0, what);
}

}  // namespace ssdr
