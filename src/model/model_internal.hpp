#pragma once
// Private to src/model: what the file format (model.cpp) and the projector (projector.cpp)
// both check of a model.
#include <string>

#include "ssdr/model/model.hpp"

namespace ssdr::model::detail {

/// Why the shapes of `m` do not fit together (d_input, the preprocessing vectors, the PCA
/// basis, the kernel map, W, the labeled samples), or "" when they do. Local.
std::string inconsistency(const Model& m);

}  // namespace ssdr::model::detail
