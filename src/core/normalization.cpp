// The choice of projection column length (include/ssdr/core/normalization.hpp).
#include "ssdr/core/normalization.hpp"

#include "ssdr/core/error.hpp"

namespace ssdr {

Normalization parse_normalization(const std::string& name) {
  if (name == "unit") return Normalization::unit;
  if (name == "metric") return Normalization::metric;
  throw Error("--normalize: expected unit or metric, got '" + name + "'", __FILE__, __LINE__, true);
}

std::string to_string(Normalization n) { return n == Normalization::unit ? "unit" : "metric"; }

}  // namespace ssdr
