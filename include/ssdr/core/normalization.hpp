#pragma once
/// \file normalization.hpp
/// The length of the projection columns (--normalize, job key `normalize`): the choice a
/// model records, so it sits below both the methods that apply it (methods/normalization.hpp:
/// why unit length is the default, and the scaling itself) and the model that stores it.
#include <string>

namespace ssdr {

/// How the columns of W are scaled (--normalize).
enum class Normalization {
  unit = 0,    ///< every column of W has Euclidean length 1 (the field's convention)
  metric = 1,  ///< the scale the method's own criterion fixes: wᵀBw = 1 for the generalized
               ///< eigenproblems (LDA, GDA, SDA, SL-LDA, SSGDA's GDA steps: B = S_t + εI or
               ///< SDA's S_t + αXLXᵀ + βI), TCA's constraint (20) aᵀX_lD_lX_lᵀa = 1, OTCA's
               ///< least-squares lengths of (25), SL-LDA-WLS's least-squares solution
};
// The values are stored in model files (format version 3): do not renumber.

/// Parses "unit" or "metric". Not collective (every rank parses the same options).
/// \throws ssdr::Error (marked collective) "--normalize: expected unit or metric, got 'x'".
Normalization parse_normalization(const std::string& name);
/// "unit" or "metric".
std::string to_string(Normalization n);

}  // namespace ssdr
