#pragma once
/// \file model.hpp
/// A fitted model: everything needed to map a new raw sample x ∈ R^{d_input} to its
/// m-dimensional embedding y = Wᵀ φ_c(Pᵀ ((x − shift) ∘ scale − mean)), saved with
/// Boost.Serialization; φ_c is the kernel feature map (identity without a kernel).
///
/// Format versions: 1 = preprocessing + W; 2 adds the kernel feature map (kernels::FeatureMap:
/// kernel type and parameters, landmarks Z — for an exact map the n training samples —, M and
/// the centering terms a, soda-nie2009 eq. (40)); 3 adds the column normalization of W
/// (methods::Normalization, provenance only: project() uses W as stored). Version-1 files
/// still load (no kernel), and version-1 and -2 files load with normalization metric, the
/// only scale the ssdr versions that wrote them produced for the generalized eigenproblems.
#include <cstdint>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/normalization.hpp"

namespace ssdr::model {

/// Magic string at the start of every model archive and the current format version.
inline constexpr const char* kMagic = "ssdr-model";
inline constexpr int kFormatVersion = 4;

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
  kernels::FeatureMap kernel;  ///< φ_c: d' → r (type none: identity, r = d'); version ≥ 2
  Dense W;                     ///< r × m projection (d' × m without a kernel)
  /// How W's columns were scaled (FitResult::normalization of the fit); version ≥ 3, older
  /// files: metric.
  methods::Normalization normalization = methods::Normalization::metric;
};

/// Saves `m` atomically (temp + rename) as a Boost binary archive preceded by kMagic and
/// kFormatVersion and followed by an FNV-1a 64 checksum of all preceding bytes. Local: call
/// it on one rank. \throws ssdr::Error naming the path, also when a shape is inconsistent
/// or an entry is NaN/Inf.
void save(const Model& m, const std::string& path);

/// Loads a model. Local. \throws ssdr::Error with a one-line message naming the path when
/// the file is missing, is not an ssdr model (wrong magic), has an unsupported format
/// version, is truncated/corrupt, fails its checksum (format ≥ 4), has inconsistent shapes
/// or a NaN/Inf entry, or is not a regular file.
Model load(const std::string& path);

/// Collective load: rank 0 reads, every rank of comm gets the model; errors are raised on
/// every rank. \throws ssdr::Error as load().
Model load_collective(const std::string& path, MPI_Comm comm);

/// The d_input × m matrix P·W (or W when there is no PCA basis). Local. Only for models
/// without a kernel. \throws ssdr::Error when the model has a kernel map.
Dense combined_projection(const Model& m);

/// Embeds raw samples: Y = ((X − shift) ∘ scale − mean) · P · W without a kernel, and
/// Y = φ_c(((X − shift) ∘ scale − mean) · P) · W with one (eq. (40), in blocks of rows so
/// the n×r feature map is never held whole); rows distributed as X's. fit and transform
/// both call it, so the same samples give the same embedding bit for bit.
/// Not collective. \throws ssdr::Error when X.cols != d_input.
DistMatrix project(const Model& m, const DistMatrix& X);

}  // namespace ssdr::model
