#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "ssdr/core/lapack.hpp"

namespace ssdr::ref {

namespace {

/// Squared distances summed in index order (the bits the library computes).
Dense squared_distances(const Dense& X) {
  const int64_t n = X.rows, d = X.cols;
  Dense D2(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t t = 0; t < d; ++t) {
        const double e = X(i, t) - X(j, t);
        acc += e * e;
      }
      D2(i, j) = acc;
    }
  return D2;
}

/// Row i's other samples sorted by (squared distance, index).
std::vector<int64_t> sorted_neighbors(const Dense& D2, int64_t i) {
  std::vector<int64_t> idx;
  for (int64_t j = 0; j < D2.rows; ++j)
    if (j != i) idx.push_back(j);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    if (D2(i, a) != D2(i, b)) return D2(i, a) < D2(i, b);
    return a < b;
  });
  return idx;
}

/// 0/1 adjacency of the symmetrized kNN graph and d̄ over its undirected edges.
Dense knn_adjacency(const Dense& D2, int k, double& dbar) {
  const int64_t n = D2.rows;
  Dense E(n, n);
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<int64_t> idx = sorted_neighbors(D2, i);
    for (int m = 0; m < k; ++m) E(i, idx[m]) = E(idx[m], i) = 1;
  }
  double sum = 0;
  int64_t edges = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j)
      if (E(i, j) != 0) {
        sum += D2(i, j);
        ++edges;
      }
  dbar = sum / static_cast<double>(edges);
  return E;
}

Dense heat(const Dense& D2, const Dense& E, double t) {
  Dense A(D2.rows, D2.cols);
  for (int64_t i = 0; i < D2.rows; ++i)
    for (int64_t j = 0; j < D2.cols; ++j)
      if (E(i, j) != 0) A(i, j) = std::exp(-D2(i, j) / t);
  return A;
}

}  // namespace

Dense knn_heat_graph(const Dense& X, int k, double s, double* sigma_out) {
  const Dense D2 = squared_distances(X);
  double dbar = 0;
  const Dense E = knn_adjacency(D2, k, dbar);
  const double sigma = std::sqrt(-dbar / std::log(s));
  if (sigma_out) *sigma_out = sigma;
  return heat(D2, E, sigma * sigma);
}

Dense knn_heat_graph_mean_width(const Dense& X, int k, double* t_out) {
  const Dense D2 = squared_distances(X);
  double dbar = 0;
  const Dense E = knn_adjacency(D2, k, dbar);
  if (t_out) *t_out = dbar;
  return heat(D2, E, dbar);
}

Dense adaptive_graph(const Dense& X, int k, Dense* S_out) {
  const Dense D2 = squared_distances(X);
  const int64_t n = X.rows;
  Dense S(n, n);
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<int64_t> idx = sorted_neighbors(D2, i);
    const double dk1 = D2(i, idx[k]);
    double sum = 0;
    for (int h = 0; h < k; ++h) sum += D2(i, idx[h]);
    bool equal = true;  // d_1 = … = d_{k+1}: den is 0 (tested exactly, not by rounding)
    for (int h = 0; h < k; ++h) equal = equal && D2(i, idx[h]) == dk1;
    const double den = k * dk1 - sum;  // the closed form as written
    for (int h = 0; h < k; ++h) S(i, idx[h]) = equal ? 1.0 / k : (dk1 - D2(i, idx[h])) / den;
  }
  if (S_out) *S_out = S;
  Dense A(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) A(i, j) = 0.5 * (S(i, j) + S(j, i));
  return A;
}

Dense propagate(const Dense& A, const std::vector<int>& labels, int classes, double alpha_u) {
  const int64_t n = A.rows;
  std::vector<int64_t> u;
  for (int64_t i = 0; i < n; ++i)
    if (labels[static_cast<size_t>(i)] < 0) u.push_back(i);
  const int64_t nu = static_cast<int64_t>(u.size());
  Dense F(n, classes + 1);
  for (int64_t i = 0; i < n; ++i)
    if (labels[static_cast<size_t>(i)] >= 0) F(i, labels[static_cast<size_t>(i)]) = 1.0;
  // Unlabeled rows: (D_uu − α A_uu) F_u = α A_ul Y_l + (1 − α) D_uu e_{c+1}.
  Dense M(nu, nu), R(nu, classes + 1);
  for (int64_t a = 0; a < nu; ++a) {
    const int64_t i = u[static_cast<size_t>(a)];
    double deg = 0;
    for (int64_t j = 0; j < n; ++j) deg += A(i, j);
    for (int64_t b = 0; b < nu; ++b) M(a, b) = -alpha_u * A(i, u[static_cast<size_t>(b)]);
    M(a, a) += deg;
    for (int64_t j = 0; j < n; ++j)
      if (labels[static_cast<size_t>(j)] >= 0) R(a, labels[static_cast<size_t>(j)]) += alpha_u * A(i, j);
    R(a, classes) += (1 - alpha_u) * deg;
  }
  lapack::posv(nu, classes + 1, M.data(), nu, R.data(), nu);
  for (int64_t a = 0; a < nu; ++a)
    for (int k = 0; k <= classes; ++k) F(u[static_cast<size_t>(a)], k) = R(a, k);
  return F;
}

void scatter(const Dense& X, const Dense& F, int c, Dense& Sw, Dense& Sb, Dense& St) {
  const int64_t n = X.rows, d = X.cols;
  std::vector<double> nk(static_cast<size_t>(c), 0.0);
  Dense means(d, c);
  std::vector<double> mean(static_cast<size_t>(d), 0.0);
  double nt = 0;
  for (int k = 0; k < c; ++k) {
    for (int64_t j = 0; j < n; ++j) {
      nk[static_cast<size_t>(k)] += F(j, k);
      for (int64_t t = 0; t < d; ++t) means(t, k) += F(j, k) * X(j, t);
    }
    for (int64_t t = 0; t < d; ++t) {
      mean[static_cast<size_t>(t)] += means(t, k);
      means(t, k) /= nk[static_cast<size_t>(k)];
    }
    nt += nk[static_cast<size_t>(k)];
  }
  for (double& m : mean) m /= nt;
  Sw = Dense(d, d);
  Sb = Dense(d, d);
  St = Dense(d, d);
  for (int k = 0; k < c; ++k) {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t a = 0; a < d; ++a)
        for (int64_t b = 0; b < d; ++b)
          Sw(a, b) += F(j, k) * (X(j, a) - means(a, k)) * (X(j, b) - means(b, k)) / nt;
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b)
        Sb(a, b) += nk[static_cast<size_t>(k)] / nt * (means(a, k) - mean[static_cast<size_t>(a)]) *
                    (means(b, k) - mean[static_cast<size_t>(b)]);
  }
  for (int64_t j = 0; j < n; ++j) {
    double bj = 0;
    for (int k = 0; k < c; ++k) bj += F(j, k);
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b)
        St(a, b) += bj * (X(j, a) - mean[static_cast<size_t>(a)]) * (X(j, b) - mean[static_cast<size_t>(b)]) / nt;
  }
}

double ratio(const Dense& Sb, const Dense& Sw, const Dense& W) {
  double num = 0, den = 0;
  for (int64_t c = 0; c < W.cols; ++c)
    for (int64_t a = 0; a < W.rows; ++a)
      for (int64_t b = 0; b < W.rows; ++b) {
        num += W(a, c) * Sb(a, b) * W(b, c);
        den += W(a, c) * Sw(a, b) * W(b, c);
      }
  return num / den;
}

Dense trace_ratio(const Dense& Sb, const Dense& Sw, int m, double* ratio_out) {
  const int64_t d = Sb.rows;
  Dense W(d, m);
  for (int c = 0; c < m; ++c) W(c, c) = 1.0;
  double lambda = ratio(Sb, Sw, W);
  for (int it = 0; it < 1000; ++it) {
    Dense M(d, d);
    for (size_t i = 0; i < M.v.size(); ++i) M.v[i] = Sb.v[i] - lambda * Sw.v[i];
    std::vector<double> w(static_cast<size_t>(d));
    lapack::syev(d, M.data(), d, w.data());
    for (int c = 0; c < m; ++c)
      for (int64_t a = 0; a < d; ++a) W(a, c) = M(a, d - 1 - c);
    const double next = ratio(Sb, Sw, W);
    const bool done = std::abs(next - lambda) <= 1e-15 * std::abs(next);
    lambda = next;
    if (done) break;
  }
  if (ratio_out) *ratio_out = lambda;
  return W;
}

Dense projector(const Dense& W) {
  Dense P(W.rows, W.rows);
  blas::gemm('N', 'T', W.rows, W.rows, W.cols, 1.0, W.data(), W.rows, W.data(), W.rows, 0.0, P.data(), W.rows);
  return P;
}

Dense unit_columns(const Dense& W) {
  Dense U = W;
  for (int64_t j = 0; j < W.cols; ++j) {
    double s = 0;
    for (int64_t i = 0; i < W.rows; ++i) s += W(i, j) * W(i, j);
    for (int64_t i = 0; i < W.rows; ++i) U(i, j) = W(i, j) / std::sqrt(s);
  }
  return U;
}

Dense rows(const Dense& X, const std::vector<char>& keep) {
  int64_t n = 0;
  for (char k : keep) n += k ? 1 : 0;
  Dense R(n, X.cols);
  int64_t r = 0;
  for (int64_t i = 0; i < X.rows; ++i)
    if (keep[static_cast<size_t>(i)]) {
      for (int64_t j = 0; j < X.cols; ++j) R(r, j) = X(i, j);
      ++r;
    }
  return R;
}

DistMatrix distribute(const Dense& X, MPI_Comm comm) {
  DistMatrix D = make_dist(comm, X.rows, X.cols);
  for (int64_t i = 0; i < D.n_local; ++i)
    for (int64_t j = 0; j < X.cols; ++j) D(i, j) = X(D.row_start + i, j);
  return D;
}

}  // namespace ssdr::ref
