// The length of the projection columns (include/ssdr/methods/normalization.hpp).
#include "ssdr/methods/normalization.hpp"

#include <cmath>

#include "ssdr/core/error.hpp"

namespace ssdr::methods {

void normalize_columns_to_unit_length(Dense& W, const std::string& what) {
  for (int64_t j = 0; j < W.cols; ++j) {
    double* w = W.col(j);
    double s = 0;
    for (int64_t i = 0; i < W.rows; ++i) s += w[i] * w[i];
    const double norm = std::sqrt(s);
    SSDR_REQUIRE(norm > 0 && std::isfinite(norm),
                 what + ": projection column " + std::to_string(j + 1) + " is zero or not finite");
    for (int64_t i = 0; i < W.rows; ++i) w[i] /= norm;
  }
}

}  // namespace ssdr::methods
