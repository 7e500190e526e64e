#include "ssdr/evaluation/one_nn.hpp"

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"

#include <limits>
#include <string>

namespace ssdr::evaluation {

namespace {

/// Index of the row of L (l×m row-major) nearest to y by exact squared Euclidean distance,
/// the smaller index on a tie; −1 when l is 0.
int64_t nearest(const double* y, const double* L, int64_t l, int64_t m) {
  double best = std::numeric_limits<double>::infinity();
  int64_t arg = -1;
  for (int64_t j = 0; j < l; ++j) {
    const double* z = L + j * m;
    double s = 0;
    for (int64_t t = 0; t < m; ++t) {
      const double e = y[t] - z[t];
      s += e * e;
    }
    if (s < best) {  // strict: on a tie the earlier (smaller global index) sample stays
      best = s;
      arg = j;
    }
  }
  return arg;
}

}  // namespace

std::vector<double> gather_labeled_rows(const DistMatrix& Y, const std::vector<data::Role>& roles) {
  SSDR_CHECK(static_cast<int64_t>(roles.size()) == Y.n_global, "gather_labeled_rows: roles must have one entry per sample");
  std::vector<double> mine;
  for (int64_t i = 0; i < Y.n_local; ++i)
    if (roles[static_cast<size_t>(Y.row_start + i)] == data::Role::labeled)
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
  for (int64_t i = 0; i < Y.n_local; ++i) {
    const int64_t arg = nearest(Y.row(i), reference.data(), l, m);
    pred[static_cast<size_t>(i)] = arg >= 0 ? reference_labels[static_cast<size_t>(arg)] : -1;
  }
  return pred;
}

std::vector<int> one_nn_predict(const DistMatrix& Y, const std::vector<int>& labels,
                                const std::vector<data::Role>& roles) {
  const int64_t m = Y.cols;
  SSDR_CHECK(static_cast<int64_t>(labels.size()) == Y.n_global &&
                 static_cast<int64_t>(roles.size()) == Y.n_global,
             "one_nn_predict: labels/roles must have one entry per sample");
  // The labeled rows (in global order) on every rank.
  const std::vector<double> L = gather_labeled_rows(Y, roles);
  const int64_t total = static_cast<int64_t>(L.size());
  std::vector<int> lab;  // labels of the gathered rows, global order (blocks are in rank order)
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i] == data::Role::labeled) lab.push_back(labels[i]);
  const int64_t l = static_cast<int64_t>(lab.size());
  SSDR_CHECK(l * m == total, "one_nn_predict: labeled rows mismatch");

  std::vector<int> pred(static_cast<size_t>(Y.n_local), -1);
  for (int64_t i = 0; i < Y.n_local; ++i) {
    const size_t g = static_cast<size_t>(Y.row_start + i);
    if (roles[g] == data::Role::labeled) {
      pred[static_cast<size_t>(i)] = labels[g];
      continue;
    }
    const int64_t arg = nearest(Y.row(i), L.data(), l, m);
    pred[static_cast<size_t>(i)] = arg >= 0 ? lab[static_cast<size_t>(arg)] : -1;
  }
  return pred;
}

Accuracy accuracy(const std::vector<int>& predicted, int64_t row_start, const std::vector<int>& labels,
                  const std::vector<data::Role>& roles, MPI_Comm comm) {
  int64_t c[4] = {0, 0, 0, 0};  // n_unlabeled, correct_unlabeled, n_unseen, correct_unseen
  for (size_t i = 0; i < predicted.size(); ++i) {
    const size_t g = static_cast<size_t>(row_start) + i;
    const bool right = predicted[i] == labels[g];
    if (roles[g] == data::Role::unlabeled) {
      ++c[0];
      c[1] += right;
    } else if (roles[g] == data::Role::unseen) {
      ++c[2];
      c[3] += right;
    }
  }
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
  return accuracy(one_nn_predict(Y, labels, roles), Y.row_start, labels, roles, Y.comm);
}

}  // namespace ssdr::evaluation
