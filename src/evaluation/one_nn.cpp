#include "ssdr/evaluation/one_nn.hpp"

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace ssdr::evaluation {

namespace {

/// For every row y of Y (n×m, local rows) the index of the row of L (l×m row-major) nearest
/// by the exact squared distance s_j = Σ_t (y_t − z_jt)² summed in t order (the smaller index
/// on a tie, −1 when l = 0): the brute-force scan's answer, found by a GEMM filter and exact
/// re-checks. For a tile of rows, d̃_j = ‖y‖² + ‖z_j‖² − 2 fl(yᵀz_j) from one GEMM, then s_j
/// only for the candidates that can still be the nearest.
///
/// Why the candidates hold the brute-force answer (u = 2⁻⁵³, γ_k = ku/(1 − ku), e_j the true
/// squared distance): a GEMM dot product and the norms carry |error| ≤ γ_m Σ|y_t z_t| ≤
/// γ_m(‖y‖² + ‖z‖²)/2 and ≤ γ_m ‖·‖², and the three-term sum adds γ_2, so |d̃_j − e_j| ≤
/// δ_j = 2γ_{m+2}(‖y‖² + ‖z_j‖²) + η (η = 8m·DBL_MIN covers underflowing squares); the
/// sequential s_j has |s_j − e_j| ≤ γ_m e_j + η. With T = min_k (d̃_k + δ_k) ≥ min_k e_k, the
/// brute-force winner j* has s_{j*} ≤ min_k s_k ≤ (1 + γ_m)T + η, hence d̃_{j*} − δ_{j*} ≤
/// e_{j*} ≤ (s_{j*} + η)/(1 − γ_m) ≤ (1 + 3γ_m)T + 3η. Every j with d̃_j − δ_j > (1 + 3γ_m)T + 3η
/// has s_j ≥ (1 − γ_m)e_j − η > s_{j*}, so it is neither the minimum nor tied with it: scanning
/// the other candidates in increasing j with a strict comparison gives its index.
void nearest_rows(const DistMatrix& Y, const double* L, int64_t l, int64_t m, std::vector<int64_t>& arg) {
  arg.assign(static_cast<size_t>(Y.n_local), -1);
  if (l == 0 || Y.n_local == 0) return;
  constexpr double u = 0x1p-53;
  const double gm = static_cast<double>(m) * u / (1.0 - static_cast<double>(m) * u);
  const double gm2 = static_cast<double>(m + 2) * u / (1.0 - static_cast<double>(m + 2) * u);
  const double eta = 8.0 * static_cast<double>(std::max<int64_t>(m, 1)) * std::numeric_limits<double>::min();
  std::vector<double> nz(static_cast<size_t>(l));
  for (int64_t j = 0; j < l; ++j) {
    double s = 0;
    for (int64_t t = 0; t < m; ++t) s += L[j * m + t] * L[j * m + t];
    nz[static_cast<size_t>(j)] = s;
  }
  constexpr int64_t kRows = 256;
  std::vector<double> G(static_cast<size_t>(kRows * l)), lo(static_cast<size_t>(l)), hi(static_cast<size_t>(l));
  const double w2 = 2.0 * gm2;
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (int64_t i0 = 0; i0 < Y.n_local; i0 += kRows) {
    const int64_t b = std::min(kRows, Y.n_local - i0);
    // G (l×b, column-major): G(j, i) = z_jᵀ y_i.
    if (m > 0) blas::gemm('T', 'N', l, b, m, 1.0, L, m, Y.row(i0), m, 0.0, G.data(), l);
    else std::fill(G.begin(), G.end(), 0.0);
    for (int64_t i = 0; i < b; ++i) {
      const double* y = Y.row(i0 + i);
      const double* g = G.data() + i * l;
      double ny = 0;
      for (int64_t t = 0; t < m; ++t) ny += y[t] * y[t];
      // d̃_j ∓ δ_j for every j in one branch-free (vectorizable) pass, then T = min_j (d̃_j + δ_j)
      // in four independent chains (a minimum is exact, so their order does not matter).
      for (int64_t j = 0; j < l; ++j) {
        const double sj = ny + nz[static_cast<size_t>(j)];
        const double d = sj - 2.0 * g[j];
        const double w = w2 * sj;
        lo[static_cast<size_t>(j)] = d - w - eta;
        hi[static_cast<size_t>(j)] = d + w + eta;
      }
      double t4[4] = {inf, inf, inf, inf};
      int64_t j4 = 0;
      for (; j4 + 4 <= l; j4 += 4)
        for (int q = 0; q < 4; ++q) t4[q] = std::min(t4[q], hi[static_cast<size_t>(j4 + q)]);
      for (; j4 < l; ++j4) t4[0] = std::min(t4[0], hi[static_cast<size_t>(j4)]);
      const double T = std::min(std::min(t4[0], t4[1]), std::min(t4[2], t4[3]));
      const double limit = (1.0 + 3.0 * gm) * T + 3.0 * eta;
      double best = std::numeric_limits<double>::infinity();
      int64_t a = -1;
      for (int64_t j = 0; j < l; ++j) {
        if (lo[static_cast<size_t>(j)] > limit) continue;
        const double* z = L + j * m;
        double s = 0;
        for (int64_t t = 0; t < m; ++t) {
          const double e = y[t] - z[t];
          s += e * e;
        }
        if (s < best) {  // strict: on a tie the smaller index stays
          best = s;
          a = j;
        }
      }
      arg[static_cast<size_t>(i0 + i)] = a;
    }
  }
}

}  // namespace

std::vector<double> gather_labeled_rows(const DistMatrix& Y, const std::vector<data::Role>& roles) {
  SSDR_CHECK(static_cast<int64_t>(roles.size()) == Y.n_local, "gather_labeled_rows: roles must have one entry per local row");
  std::vector<double> mine;
  for (int64_t i = 0; i < Y.n_local; ++i)
    if (roles[static_cast<size_t>(i)] == data::Role::labeled)
      mine.insert(mine.end(), Y.row(i), Y.row(i) + Y.cols);
  return allgatherv(mine, Y.comm);  // blocks in rank order: global order
}

std::vector<int> nearest_labels(const DistMatrix& Y, const std::vector<double>& reference,
                                const std::vector<int>& reference_labels) {
  const int64_t m = Y.cols, l = static_cast<int64_t>(reference_labels.size());
  SSDR_CHECK(static_cast<int64_t>(reference.size()) == l * m,
             "nearest_labels: " + std::to_string(reference.size()) + " reference values for " + std::to_string(l) +
                 " labels of dimension " + std::to_string(m));
  std::vector<int> pred(static_cast<size_t>(Y.n_local), -1);
  std::vector<int64_t> arg;
  nearest_rows(Y, reference.data(), l, m, arg);
  for (int64_t i = 0; i < Y.n_local; ++i)
    pred[static_cast<size_t>(i)] = arg[static_cast<size_t>(i)] >= 0 ? reference_labels[static_cast<size_t>(arg[static_cast<size_t>(i)])] : -1;
  return pred;
}

std::vector<int> one_nn_predict(const DistMatrix& Y, const std::vector<int>& labels,
                                const std::vector<data::Role>& roles) {
  const int64_t m = Y.cols;
  SSDR_CHECK(static_cast<int64_t>(labels.size()) == Y.n_local &&
                 static_cast<int64_t>(roles.size()) == Y.n_local,
             "one_nn_predict: labels/roles must have one entry per local row");
  // The labeled rows and their labels (in global order) on every rank.
  const std::vector<double> L = gather_labeled_rows(Y, roles);
  const int64_t total = static_cast<int64_t>(L.size());
  std::vector<int> mine;
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i] == data::Role::labeled) mine.push_back(labels[i]);
  const std::vector<int> lab = allgatherv(mine, Y.comm);  // blocks in rank order: global order
  const int64_t l = static_cast<int64_t>(lab.size());
  SSDR_CHECK(l * m == total, "one_nn_predict: labeled rows mismatch");

  std::vector<int> pred(static_cast<size_t>(Y.n_local), -1);
  std::vector<int64_t> arg;
  nearest_rows(Y, L.data(), l, m, arg);
  for (int64_t i = 0; i < Y.n_local; ++i) {
    const size_t li = static_cast<size_t>(i);
    const int64_t a = arg[li];
    pred[li] = roles[li] == data::Role::labeled ? labels[li] : (a >= 0 ? lab[static_cast<size_t>(a)] : -1);
  }
  return pred;
}

Accuracy accuracy(const std::vector<int>& predicted, const std::vector<int>& labels,
                  const std::vector<data::Role>& roles, MPI_Comm comm) {
  SSDR_CHECK(labels.size() == predicted.size() && roles.size() == predicted.size(),
             "accuracy: predictions, labels and roles must have one entry per local row");
  AccuracyCounts counts;
  for (size_t i = 0; i < predicted.size(); ++i) counts.add(predicted[i], labels[i], roles[i]);
  return counts.total(comm);
}

Accuracy AccuracyCounts::total(MPI_Comm comm) const {
  int64_t c[4] = {n_unlabeled, correct_unlabeled, n_unseen, correct_unseen};
  MPI_Allreduce(MPI_IN_PLACE, c, 4, MPI_INT64_T, MPI_SUM, comm);
  Accuracy a;
  a.n_unlabeled = c[0];
  a.correct_unlabeled = c[1];
  a.n_unseen = c[2];
  a.correct_unseen = c[3];
  if (c[0] > 0) a.unlabeled = static_cast<double>(c[1]) / static_cast<double>(c[0]);
  if (c[2] > 0) a.unseen = static_cast<double>(c[3]) / static_cast<double>(c[2]);
  return a;
}

Accuracy one_nn_accuracy(const DistMatrix& Y, const std::vector<int>& labels,
                         const std::vector<data::Role>& roles) {
  return accuracy(one_nn_predict(Y, labels, roles), labels, roles, Y.comm);
}

}  // namespace ssdr::evaluation
