// The block widths the propagation's kernels are compiled for (label_propagation.cpp's block
// CG, block_product.cpp's off-diagonal rows): one list, so the two cannot disagree.
#pragma once

#include <type_traits>

namespace ssdr::propagation::detail {

/// f(std::integral_constant<int, W>{}) with W = m for the widths met in practice (1..16 and
/// 20: c classes up to 16, and 20), else W = 0 (the caller's kernel takes m at run time; the
/// same arithmetic in the same order). Returns what f returns. Not collective.
template <class F>
decltype(auto) with_width(int m, F&& f) {
  switch (m) {
#define SSDR_WIDTH(W) \
  case W:             \
    return f(std::integral_constant<int, W>{});
    SSDR_WIDTH(1) SSDR_WIDTH(2) SSDR_WIDTH(3) SSDR_WIDTH(4) SSDR_WIDTH(5) SSDR_WIDTH(6) SSDR_WIDTH(7)
    SSDR_WIDTH(8) SSDR_WIDTH(9) SSDR_WIDTH(10) SSDR_WIDTH(11) SSDR_WIDTH(12) SSDR_WIDTH(13) SSDR_WIDTH(14)
    SSDR_WIDTH(15) SSDR_WIDTH(16) SSDR_WIDTH(20)
#undef SSDR_WIDTH
    default:
      return f(std::integral_constant<int, 0>{});
  }
}

}  // namespace ssdr::propagation::detail
