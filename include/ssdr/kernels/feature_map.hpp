#pragma once
/// \file feature_map.hpp
/// Kernels as feature maps placed before the methods (soda-nie2009 §4, eq. (33)–(41);
/// ssgda-zhang-yeung): a fitted map φ: R^{d'} → R^r with φ(x)ᵀφ(y) equal (exact) or close
/// (Nyström) to the kernel k(x, y) centered with the training means, so any linear method
/// run on Φ_c is its kernel version (KSODA = SODA on the empirical kernel map).
#include <cstdint>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::kernels {

enum class KernelType {
  none,        ///< no kernel: the methods see the preprocessed data
  linear,      ///< k(x,y) = xᵀy
  polynomial,  ///< k(x,y) = (xᵀy + 1)^p, p = degree (KSODA paper: 3)
  rbf          ///< k(x,y) = exp(−‖x−y‖²/σ²), σ² default = mean pairwise squared distance
};
/// Parses "none", "linear", "poly"/"polynomial", "rbf". \throws ssdr::Error (collective).
KernelType parse_kernel(const std::string& name);
std::string to_string(KernelType k);

struct KernelOptions {
  KernelType type = KernelType::none;
  double degree = 3;        ///< polynomial p
  double sigma2 = 0;        ///< RBF σ²; 0 → mean pairwise squared distance of the training samples
  int64_t landmarks = 0;    ///< r: 0 → exact map (n×n kernel, ScaLAPACK); > 0 → Nyström with r landmarks
  std::string landmark_seeding = "uniform";  ///< "uniform" or "kmeans++"
  uint64_t seed = 0;        ///< landmark sampling seed
};

/// A fitted feature map. For the exact map the training samples themselves are the
/// "landmarks" (kept distributed: X_train n×d' in its row layout); for Nyström the r
/// landmarks are replicated (r×d'). The map of a sample x is
///   φ(x) = M ᵀ (k(Z, x) − k̄(x)·1 − κ) … see fit_feature_map for the exact centering,
/// with M (r_landmarks × r) and the centering terms stored here, so that φ of the training
/// samples is Φ_c (columns centered) and out-of-sample samples get the same map (eq. (40)).
struct FeatureMap {
  KernelOptions options;
  double sigma2 = 0;             ///< σ² actually used (RBF)
  Dense landmarks;               ///< Nyström: r×d' replicated; exact: empty (see train)
  DistMatrix train;              ///< exact: the n training samples (distributed); else empty
  Dense map;                     ///< (number of landmarks or n) × r, column-major
  std::vector<double> column_means;  ///< mean over training samples of k(z_j, x_i), per landmark j
  double total_mean = 0;         ///< mean of all training kernel values (exact centering)
  std::vector<double> feature_mean;  ///< r, mean of the uncentered features (Nyström centering)
  int64_t dim() const { return map.cols; }
};

}  // namespace ssdr::kernels
