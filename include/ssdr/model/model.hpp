#pragma once
/// \file model.hpp
/// A fitted model: everything needed to map a new raw sample x ∈ R^{d_input} to its
/// m-dimensional embedding y = Wᵀ Pᵀ ((x − shift) ∘ scale − mean), saved with
/// Boost.Serialization.
#include <cstdint>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::model {

/// Magic string at the start of every model archive and the current format version.
inline constexpr const char* kMagic = "ssdr-model";
inline constexpr int kFormatVersion = 1;

struct Model {
  std::string method;          ///< method name from the method table ("soda", ...)
  std::string ssdr_version;    ///< version that produced it
  std::string parameters_json; ///< the parameters of the fit, as JSON text
  int64_t d_input = 0;         ///< d of the raw data
  int classes = 0;             ///< c
  std::vector<double> shift;   ///< d_input, empty = 0 (scaling: x ← (x − shift) ∘ scale)
  std::vector<double> scale;   ///< d_input, empty = 1
  std::vector<double> mean;    ///< d_input, centering after scaling (empty = 0)
  Dense basis;                 ///< d_input × d' PCA basis (0×0 = identity)
  Dense W;                     ///< d' × m projection
};

/// Saves `m` atomically (temp + rename) as a Boost binary archive preceded by kMagic and
/// kFormatVersion. Local: call it on one rank. \throws ssdr::Error naming the path.
void save(const Model& m, const std::string& path);

/// Loads a model. Local. \throws ssdr::Error with a one-line message naming the path when
/// the file is missing, is not an ssdr model (wrong magic), has an unsupported format
/// version, or is truncated/corrupt.
Model load(const std::string& path);

/// Collective load: rank 0 reads, every rank of comm gets the model; errors are raised on
/// every rank. \throws ssdr::Error as load().
Model load_collective(const std::string& path, MPI_Comm comm);

/// The d_input × m matrix P·W (or W when there is no PCA basis). Local.
Dense combined_projection(const Model& m);

/// Embeds raw samples: Y = ((X − shift) ∘ scale − mean) · P · W, rows distributed as X's.
/// fit and transform both call it, so the same samples give the same embedding bit for bit.
/// Not collective. \throws ssdr::Error when X.cols != d_input.
DistMatrix project(const Model& m, const DistMatrix& X);

}  // namespace ssdr::model
