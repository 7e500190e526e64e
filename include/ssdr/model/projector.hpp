#pragma once
/// \file projector.hpp
/// The projection of samples through a fitted model (model.hpp):
/// y = Wᵀ φ_c(Pᵀ ((x − shift) ∘ scale − mean)), tile by tile (Projector) or for whole row
/// blocks (project, project_preprocessed), and P·W of a linear model (combined_projection).
/// The file format (save, load, versions) is model.hpp's.
#include <cstdint>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/sparse.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/model/model.hpp"

namespace ssdr::model {

/// The d_input × m matrix P·W (or W when there is no PCA basis). Local. Only for models
/// without a kernel. \throws ssdr::Error when the model has a kernel map.
Dense combined_projection(const Model& m);

/// The embedding of rows, tile by tile: raw rows → preprocessing (data::apply_tile) → φ_c
/// (kernels::apply_rows) → Wᵀ, every GEMM and feature map on a full zero-padded tile of
/// kTile rows. A row's bits therefore depend only on the row: not on the rows beside it, the
/// rank count, or whether it arrives raw (transform, project) or already preprocessed (the
/// fit's own rows, project_preprocessed). This is what makes `transform` reproduce `fit
/// --embedding` bit for bit although the fit never keeps the raw rows. Shapes: raw rows
/// d_input wide, preprocessed rows d' wide (preprocessed_dim), output m wide (out_dim).
/// Local for a model without a kernel or with a Nyström map (local() true); an exact map's
/// projection needs every rank's training rows, so from_raw / from_preprocessed refuse it
/// and the callers use kernels::apply_exact on the preprocessed rows (project does).
/// \throws ssdr::Error from the constructor when the model's shapes are inconsistent,
/// and from the calls when b is not in [0, kTile] or the map is exact.
class Projector {
 public:
  static constexpr int64_t kTile = data::kApplyTile;
  /// \throws ssdr::Error when the model's shapes are inconsistent.
  explicit Projector(const Model& m);
  /// d' (the preprocessed width); out_dim is m. Local.
  int64_t preprocessed_dim() const { return dp_; }
  int64_t out_dim() const { return m_.W.cols; }
  /// Whether the embedding is computed tile by tile on this rank (no exact kernel map).
  bool local() const { return m_.kernel.empty() || !m_.kernel.exact; }
  /// xp (b×d', row-major) = the model's preprocessing of b ≤ kTile raw rows x (b×d_input).
  void preprocess(const double* x, int64_t b, double* xp);
  /// y (b×m, row-major) from b ≤ kTile raw rows x (b×d_input).
  void from_raw(const double* x, int64_t b, double* y);
  /// y (b×m) from b ≤ kTile preprocessed rows xp (b×d').
  void from_preprocessed(const double* xp, int64_t b, double* y);
  /// The width of a feature tile: r, the kernel map's features (a model with a Nyström map).
  int64_t feature_dim() const { return r_; }
  /// phi (kTile×r, row-major) = the Nyström map's features of b ≤ kTile preprocessed rows xp,
  /// zero-padded to a full tile, as from_preprocessed forms them. The tile depends only on the
  /// rows and the kernel map (not on W): a sweep keeps it for every W of that map. Local.
  void features(const double* xp, int64_t b, double* phi);
  /// y (b×m) from a tile of features(): from_preprocessed's bits for those rows. Local.
  void from_features(const double* phi, int64_t b, double* y);

 private:
  void tail(int64_t b, double* y);  // P_ holds b preprocessed rows
  const data::Preprocessor& map();  // pre_, copied from the model on first use
  const Model& m_;
  data::Preprocessor pre_;  ///< the model's map, copied by the first raw tile (map())
  bool pre_copied_ = false;
  int64_t dp_ = 0, r_ = 0;
  std::vector<double> Z_, T_, P_, Phi_, Y_;
};

/// Embeds raw samples: Y = Wᵀ φ_c(Pᵀ((x − shift) ∘ scale − mean)) for every row (φ_c the
/// identity without a kernel; soda-nie2009 eq. (40) with one), through Projector, so the
/// n×r feature map is never held whole; n×d_input → n×m, rows distributed as X's.
/// Not collective, except for a model with an exact kernel map distributed over more than
/// one rank: then every rank of the map's communicator must call it (the preprocessed rows,
/// n_local×d', are kept for kernels::apply_exact). The same bits on any rank count either
/// way. \throws ssdr::Error when X.cols != d_input or the model is inconsistent.
DistMatrix project(const Model& m, const DistMatrix& X);
/// The same for rows kept in their own type (each tile converted to doubles, exactly): the
/// bits of project on their double copy. Collectivity as project.
DistMatrix project(const Model& m, const TypedRows& X);

/// The same for sparse raw rows (n×d_input CSR, rows distributed as X's): a model fitted on
/// sparse data (a PCA basis from the truncated SVD) maps each row by data::apply(pre, X, ·),
/// the summation the fit used, then as project_preprocessed, so `transform` of the fit's
/// file gives its `--embedding` bit for bit. Holds a second copy of the d×d' basis while it
/// runs. Not collective. \throws ssdr::Error when X.cols != d_input, the model has no PCA
/// basis (sparse rows are only mapped through one) or is inconsistent.
DistMatrix project(const Model& m, const SparseRows& X);

/// The same for rows already through the model's preprocessing (n×d' → n×m): the fit's own
/// rows. project(m, X) and project_preprocessed(m, data::apply(pre, X)) are the same bits.
/// Collectivity as project. \throws ssdr::Error when Xp.cols != d' or the model is
/// inconsistent.
DistMatrix project_preprocessed(const Model& m, const DistMatrix& Xp);

}  // namespace ssdr::model
