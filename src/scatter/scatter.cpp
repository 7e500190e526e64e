#include "ssdr/scatter/scatter.hpp"

#include <algorithm>
#include <cmath>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"

namespace ssdr::scatter {

ScatterMatrices soft_scatter(const RowsView& X, const DistMatrix& F, int classes) {
  SSDR_CHECK(X.n_local == F.n_local && X.n_global == F.n_global,
             shape_message("soft_scatter: F rows", F.n_global, F.cols, X.n_global, F.cols));
  SSDR_CHECK(classes >= 1 && classes <= F.cols, "soft_scatter: F has " + std::to_string(F.cols) +
                                                    " columns for " + std::to_string(classes) + " classes");
  const int64_t d = X.cols, n = X.n_local;
  const int c = classes;
  ScatterMatrices S;
  // Rows in chunks (a chunk of rows, row-major, is the column-major d×rows block a GEMM
  // reads) and the soft labels of the chunk beside them (rows×c row-major: c×rows).
  const int64_t chunk = 512;
  std::vector<double> yb(static_cast<size_t>(chunk * d)), fb(static_cast<size_t>(chunk * c));
  auto load = [&](int64_t j0, int64_t rows) {
    X.tile(j0, rows, yb.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int k = 0; k < c; ++k) fb[static_cast<size_t>(r * c + k)] = F(j0 + r, k);
  };
  // Class weights ñ_k and the weighted sums Σ_j F_jk x_j (d×c, one GEMM per chunk).
  std::vector<double> red(static_cast<size_t>(c + d * c), 0.0);  // [ñ_k | Σ F_jk x_j]
  for (int64_t j0 = 0; j0 < n; j0 += chunk) {
    const int64_t rows = std::min(chunk, n - j0);
    load(j0, rows);
    for (int64_t r = 0; r < rows; ++r)
      for (int k = 0; k < c; ++k) red[static_cast<size_t>(k)] += fb[static_cast<size_t>(r * c + k)];
    blas::gemm('N', 'T', d, c, rows, 1.0, yb.data(), d, fb.data(), c, 1.0, red.data() + c, d);
  }
  MPI_Allreduce(MPI_IN_PLACE, red.data(), static_cast<int>(red.size()), MPI_DOUBLE, MPI_SUM, X.comm);
  S.class_weights.assign(red.begin(), red.begin() + c);
  S.n_tilde = 0;
  for (double w : S.class_weights) S.n_tilde += w;
  SSDR_REQUIRE(S.n_tilde > 0, "soft_scatter: all soft labels are zero");
  for (int k = 0; k < c; ++k)
    SSDR_REQUIRE(S.class_weights[static_cast<size_t>(k)] > 0,
                 "soft_scatter: class " + std::to_string(k) + " has zero total soft-label weight");
  S.class_means = Dense(d, c);
  S.mean.assign(static_cast<size_t>(d), 0.0);
  for (int k = 0; k < c; ++k)
    for (int64_t t = 0; t < d; ++t) {
      const double s = red[static_cast<size_t>(c + k * d + t)];
      S.class_means(t, k) = s / S.class_weights[static_cast<size_t>(k)];
      S.mean[static_cast<size_t>(t)] += s;
    }
  for (double& m : S.mean) m /= S.n_tilde;

  // Local Yᵀ B Y with y_j = x_j − x̃ (rows scaled by √B_jj, DSYRK per chunk) and
  // G = Yᵀ F_c (DGEMM per chunk, on the unscaled rows). Centering at x̃ avoids the
  // cancellation of the uncentered forms.
  S.St = Dense(d, d);
  Dense G(d, c);
  for (int64_t j0 = 0; j0 < n; j0 += chunk) {
    const int64_t rows = std::min(chunk, n - j0);
    load(j0, rows);
    for (int64_t r = 0; r < rows; ++r) {
      double* y = yb.data() + r * d;
      for (int64_t t = 0; t < d; ++t) y[t] -= S.mean[static_cast<size_t>(t)];
    }
    blas::gemm('N', 'T', d, c, rows, 1.0, yb.data(), d, fb.data(), c, 1.0, G.data(), d);
    for (int64_t r = 0; r < rows; ++r) {
      double b = 0;
      for (int k = 0; k < c; ++k) b += fb[static_cast<size_t>(r * c + k)];
      const double sb = std::sqrt(std::max(b, 0.0));
      double* y = yb.data() + r * d;
      for (int64_t t = 0; t < d; ++t) y[t] *= sb;
    }
    // yb is row-major rows×d = column-major d×rows: St += yb·ybᵀ.
    blas::syrk('L', 'N', d, rows, 1.0, yb.data(), d, 1.0, S.St.data(), d);
  }
  blas::symmetrize('L', d, S.St.data(), d);
  allreduce_sum(S.St, X.comm);
  allreduce_sum(G, X.comm);

  // S̃b = (1/ñ) G D Gᵀ with D = diag(1/ñ_k); S̃w = S̃t − S̃b in the matrix form (28).
  Dense GD = G;
  for (int k = 0; k < c; ++k)
    for (int64_t t = 0; t < d; ++t) GD(t, k) /= S.class_weights[static_cast<size_t>(k)];
  S.Sb = Dense(d, d);
  blas::gemm('N', 'T', d, d, c, 1.0, GD.data(), d, G.data(), d, 0.0, S.Sb.data(), d);
  S.Sb_factor = G;
  for (int k = 0; k < c; ++k) {
    const double f = 1.0 / std::sqrt(S.n_tilde * S.class_weights[static_cast<size_t>(k)]);
    for (int64_t t = 0; t < d; ++t) S.Sb_factor(t, k) *= f;
  }
  const double inv = 1.0 / S.n_tilde;
  for (double& v : S.St.v) v *= inv;
  for (double& v : S.Sb.v) v *= inv;
  // Exact symmetry of Sb (GEMM of G·D·Gᵀ may differ in the last bit across triangles).
  for (int64_t j = 0; j < d; ++j)
    for (int64_t i = j + 1; i < d; ++i) {
      const double a = 0.5 * (S.Sb(i, j) + S.Sb(j, i));
      S.Sb(i, j) = S.Sb(j, i) = a;
    }
  S.Sw = Dense(d, d);
  for (size_t i = 0; i < S.Sw.v.size(); ++i) S.Sw.v[i] = S.St.v[i] - S.Sb.v[i];
  return S;
}

DistMatrix one_hot(const std::vector<int>& labels, int classes, MPI_Comm comm) {
  DistMatrix F = make_dist_local(comm, static_cast<int64_t>(labels.size()), classes);
  for (size_t i = 0; i < labels.size(); ++i) {
    SSDR_CHECK(labels[i] >= 0 && labels[i] < classes, "one_hot: label out of range");
    F(static_cast<int64_t>(i), labels[i]) = 1.0;
  }
  return F;
}

double largest_diagonal(const Dense& S) {
  double m = 0;
  for (int64_t i = 0; i < S.rows; ++i) m = std::max(m, S(i, i));
  return m;
}

}  // namespace ssdr::scatter
