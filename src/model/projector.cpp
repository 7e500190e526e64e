// The projection of samples through a fitted model: Projector (tile by tile: preprocessing,
// kernel feature map, Wᵀ on full zero-padded tiles, so a row's bits depend on the row only),
// project / project_preprocessed over a rank's rows, and combined_projection. The model's
// file format is model.cpp's.
#include "ssdr/model/projector.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "model_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/kernels/feature_map.hpp"

namespace ssdr::model {

Dense combined_projection(const Model& m) {
  SSDR_CHECK(m.kernel.empty(), "model: a kernel model has no linear projection matrix");
  if (m.basis.rows == 0) return m.W;
  SSDR_CHECK(m.basis.cols == m.W.rows,
             "model: PCA basis is " + std::to_string(m.basis.rows) + "x" +
                 std::to_string(m.basis.cols) + " but W has " + std::to_string(m.W.rows) +
                 " rows");
  Dense C(m.basis.rows, m.W.cols);
  if (m.basis.cols > 0)
    blas::gemm('N', 'N', m.basis.rows, m.W.cols, m.basis.cols, 1.0, m.basis.data(),
               m.basis.rows, m.W.data(), m.W.rows, 0.0, C.data(), C.rows);
  return C;
}

Projector::Projector(const Model& m) : m_(m) {
  const std::string why = detail::inconsistency(m);
  SSDR_CHECK(why.empty(), "model: " + why);
  dp_ = m.basis.rows > 0 ? m.basis.cols : m.d_input;  // data::output_dim of the model's map
  r_ = m.kernel.empty() ? dp_ : m.kernel.dim();
  SSDR_CHECK(m.W.rows == r_ || (m.W.rows == 0 && m.W.cols == 0),
             "model: W has " + std::to_string(m.W.rows) + " rows, expected " + std::to_string(r_));
}

const data::Preprocessor& Projector::map() {
  if (!pre_copied_) {
    // The map's copy is made by the first raw tile only: preprocessed rows (the fit's
    // embedding, sparse rows) never need it, and the d×d' basis can be the largest object.
    pre_.shift = m_.shift;
    pre_.scale = m_.scale;
    pre_.mean = m_.mean;
    pre_.basis = m_.basis;
    pre_copied_ = true;
  }
  return pre_;
}

void Projector::preprocess(const double* x, int64_t b, double* xp) {
  P_.resize(static_cast<size_t>(kTile * dp_));
  data::apply_tile(map(), x, b, m_.d_input, P_.data(), Z_, T_);
  std::copy_n(P_.data(), b * dp_, xp);
}

void Projector::from_raw(const double* x, int64_t b, double* y) {
  SSDR_CHECK(local(), "Projector: an exact kernel map's projection is collective (model::project)");
  P_.resize(static_cast<size_t>(kTile * dp_));
  data::apply_tile(map(), x, b, m_.d_input, P_.data(), Z_, T_);
  tail(b, y);
}

void Projector::from_preprocessed(const double* xp, int64_t b, double* y) {
  SSDR_CHECK(b >= 0 && b <= kTile, "Projector: " + std::to_string(b) + " rows, at most " + std::to_string(kTile));
  SSDR_CHECK(local(), "Projector: an exact kernel map's projection is collective (model::project)");
  if (b == kTile && m_.kernel.empty()) {
    // A full tile of a linear model is already the GEMM's operand (the same shape, so the
    // same bits): no copy of the rows, which was a pass over all of X per fit in a sweep.
    from_features(xp, b, y);
    return;
  }
  P_.resize(static_cast<size_t>(kTile * dp_));
  std::copy_n(xp, b * dp_, P_.data());
  tail(b, y);
}

void Projector::tail(int64_t b, double* y) {
  const int64_t out = out_dim();
  if (b == 0 || out == 0) return;
  // Zero rows past b: every GEMM below has the fixed shape of a full tile.
  std::fill(P_.begin() + b * dp_, P_.end(), 0.0);
  const double* features = P_.data();
  if (!m_.kernel.empty()) {
    Phi_.assign(static_cast<size_t>(kTile * r_), 0.0);
    kernels::apply_rows(m_.kernel, P_.data(), kTile, Phi_.data());
    features = Phi_.data();
  }
  from_features(features, b, y);
}

void Projector::features(const double* xp, int64_t b, double* phi) {
  SSDR_CHECK(b >= 0 && b <= kTile && local() && !m_.kernel.empty(),
             "Projector::features: expected at most one tile of rows and a Nystrom map");
  P_.assign(static_cast<size_t>(kTile * dp_), 0.0);  // rows past b zero, as tail() pads them
  std::copy_n(xp, b * dp_, P_.data());
  std::fill(phi, phi + kTile * r_, 0.0);
  kernels::apply_rows(m_.kernel, P_.data(), kTile, phi);
}

void Projector::from_features(const double* features, int64_t b, double* y) {
  const int64_t out = out_dim();
  if (b == 0 || out == 0) return;
  Y_.resize(static_cast<size_t>(kTile * out));
  // Row-major Y tile (kTile×m) is column-major Yᵀ (m×kTile) = Wᵀ (m×r) · Φᵀ (r×kTile).
  if (r_ > 0) blas::gemm('T', 'N', out, kTile, r_, 1.0, m_.W.data(), m_.W.rows, features, r_, 0.0, Y_.data(), out);
  else std::fill(Y_.begin(), Y_.end(), 0.0);
  std::copy_n(Y_.data(), b * out, y);
}

namespace {

void check_input_width(const Model& m, int64_t d) {
  SSDR_CHECK(d == m.d_input, "the data has " + std::to_string(d) + " features but the model expects " +
                                 std::to_string(m.d_input));
}

/// Y's rows = Wᵀ φ_c of the preprocessed rows (exact map: kernels::apply_exact, collective).
void project_exact_rows(const Model& m, const std::vector<const double*>& rows, DistMatrix& Y) {
  kernels::apply_exact(m.kernel, &m.W, rows.data(), static_cast<int64_t>(rows.size()), Y.v.data());
}

}  // namespace

DistMatrix project(const Model& m, const TypedRows& X) {
  check_input_width(m, X.cols);
  Projector p(m);
  DistMatrix Y;
  Y.comm = X.comm;
  Y.n_global = X.n_global;
  Y.row_start = X.row_start;
  Y.n_local = X.n_local;
  Y.cols = p.out_dim();
  Y.v.assign(static_cast<size_t>(Y.n_local * Y.cols), 0.0);
  const int64_t T = Projector::kTile;
  std::vector<double> tile(static_cast<size_t>(T * X.cols));
  if (!p.local()) {
    const int64_t dp = p.preprocessed_dim();
    std::vector<double> Xp(static_cast<size_t>(X.n_local * dp));
    std::vector<const double*> rows(static_cast<size_t>(X.n_local));
    for (int64_t i0 = 0; i0 < X.n_local; i0 += T) {
      const int64_t b = std::min(T, X.n_local - i0);
      X.rows(i0, b, tile.data());
      p.preprocess(tile.data(), b, Xp.data() + i0 * dp);
    }
    for (int64_t i = 0; i < X.n_local; ++i) rows[static_cast<size_t>(i)] = Xp.data() + i * dp;
    project_exact_rows(m, rows, Y);
    return Y;
  }
  for (int64_t i0 = 0; i0 < X.n_local; i0 += T) {
    const int64_t b = std::min(T, X.n_local - i0);
    X.rows(i0, b, tile.data());
    p.from_raw(tile.data(), b, Y.row(i0));
  }
  return Y;
}

DistMatrix project(const Model& m, const DistMatrix& X) {
  check_input_width(m, X.cols);
  Projector p(m);
  DistMatrix Y = make_dist_like(X, p.out_dim());
  if (!p.local()) {
    const int64_t dp = p.preprocessed_dim();
    std::vector<double> Xp(static_cast<size_t>(X.n_local * dp));
    std::vector<const double*> rows(static_cast<size_t>(X.n_local));
    for (int64_t i0 = 0; i0 < X.n_local; i0 += Projector::kTile)
      p.preprocess(X.row(i0), std::min(Projector::kTile, X.n_local - i0), Xp.data() + i0 * dp);
    for (int64_t i = 0; i < X.n_local; ++i) rows[static_cast<size_t>(i)] = Xp.data() + i * dp;
    project_exact_rows(m, rows, Y);
    return Y;
  }
  for (int64_t i0 = 0; i0 < X.n_local; i0 += Projector::kTile)
    p.from_raw(X.row(i0), std::min(Projector::kTile, X.n_local - i0), Y.row(i0));
  return Y;
}

DistMatrix project(const Model& m, const SparseRows& X) {
  check_input_width(m, X.cols);
  SSDR_REQUIRE(m.basis.rows > 0, "the model has no PCA basis (it was fitted with --no-pca on dense data); sparse "
                                 "rows are mapped through one: read the data dense (--sparse no)");
  data::Preprocessor pre;
  pre.shift = m.shift;
  pre.scale = m.scale;
  pre.mean = m.mean;
  pre.basis = m.basis;
  const DistMatrix Xp = data::apply(pre, X, std::vector<char>(static_cast<size_t>(X.n_local), 1));
  pre = data::Preprocessor();  // the copy of the basis goes before the embedding is formed
  return project_preprocessed(m, Xp);
}

DistMatrix project_preprocessed(const Model& m, const DistMatrix& Xp) {
  Projector p(m);
  SSDR_CHECK(Xp.cols == p.preprocessed_dim(), "project_preprocessed: the rows have " + std::to_string(Xp.cols) +
                                                  " features, the model's preprocessing gives " +
                                                  std::to_string(p.preprocessed_dim()));
  DistMatrix Y = make_dist_like(Xp, p.out_dim());
  if (!p.local()) {
    std::vector<const double*> rows(static_cast<size_t>(Xp.n_local));
    for (int64_t i = 0; i < Xp.n_local; ++i) rows[static_cast<size_t>(i)] = Xp.row(i);
    project_exact_rows(m, rows, Y);
    return Y;
  }
  for (int64_t i0 = 0; i0 < Xp.n_local; i0 += Projector::kTile)
    p.from_preprocessed(Xp.row(i0), std::min(Projector::kTile, Xp.n_local - i0), Y.row(i0));
  return Y;
}

}  // namespace ssdr::model
