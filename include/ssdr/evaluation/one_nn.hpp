#pragma once
/// \file one_nn.hpp
/// The papers' evaluation: 1-nearest-neighbor classification in the projected space,
/// trained on the labeled samples, accuracy on the unlabeled (transductive) and on the
/// unseen samples.
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/data/split.hpp"

namespace ssdr::evaluation {

/// 1-NN accuracy on the unlabeled (transductive) and unseen samples that have a true label, in
/// [0, 1]; n_unlabeled and n_unseen count the samples scored.
struct Accuracy {
  double unlabeled = std::numeric_limits<double>::quiet_NaN();  ///< NaN when there are none
  double unseen = std::numeric_limits<double>::quiet_NaN();
  int64_t n_unlabeled = 0, n_unseen = 0;
  int64_t correct_unlabeled = 0, correct_unseen = 0;
};

/// The rows of Y whose role is labeled, in increasing global index, on every rank: l×m
/// row-major (row j the j-th labeled sample), the same on any rank count. Collective over
/// Y.comm (MPI_Allgatherv of the labeled rows, blocks in rank order).
/// \param roles  the roles of Y's local rows (n_local entries)
std::vector<double> gather_labeled_rows(const DistMatrix& Y, const std::vector<data::Role>& roles);

/// 1-NN against reference rows: for every local row of Y (n×m) the label of the nearest of
/// the l rows of `reference` (l×m row-major, labels `reference_labels`) by exact squared
/// Euclidean distance; a tie goes to the reference row with the smaller index (−1 when l is
/// 0). What one_nn_predict does for the rows it classifies, and `ssdr predict` against a
/// model's labeled samples. Local. \throws ssdr::Error when the sizes disagree.
std::vector<int> nearest_labels(const DistMatrix& Y, const std::vector<double>& reference,
                                const std::vector<int>& reference_labels);

/// 1-NN predictions for the local rows of Y (n×m, all samples, rows in rank order): the label
/// of the nearest labeled sample by exact squared Euclidean distance; a distance tie goes
/// to the labeled sample with the smaller global index. The labeled rows (l×m, l small) and
/// their labels are gathered on every rank (MPI_Allgatherv: O(l), never O(n)); each rank
/// classifies its own rows. Labeled samples get their own label. Collective over Y.comm.
/// \param labels, roles  of Y's local rows (n_local entries each)
std::vector<int> one_nn_predict(const DistMatrix& Y, const std::vector<int>& labels,
                                const std::vector<data::Role>& roles);

/// The counts behind an Accuracy, accumulated one prediction at a time on a rank and summed
/// over a communicator: what accuracy() and a streamed evaluation (tile by tile) share.
struct AccuracyCounts {
  int64_t n_unlabeled = 0, correct_unlabeled = 0, n_unseen = 0, correct_unseen = 0;
  /// Counts one row: its prediction, its true label and its role (labeled rows, and rows
  /// without a true label, −1, are not scored). Local.
  void add(int predicted, int truth, data::Role role) {
    if (truth < 0) return;
    if (role == data::Role::unlabeled) {
      ++n_unlabeled;
      correct_unlabeled += predicted == truth;
    } else if (role == data::Role::unseen) {
      ++n_unseen;
      correct_unseen += predicted == truth;
    }
  }
  /// Every rank's counts summed and the accuracies (NaN where nothing was scored).
  /// Collective over comm (one MPI_Allreduce of four integers).
  Accuracy total(MPI_Comm comm) const;
};

/// Accuracy of local predictions (one per local row, with the rows' true labels and roles,
/// all n_local entries) on the unlabeled and unseen samples. Collective (one MPI_Allreduce).
Accuracy accuracy(const std::vector<int>& predicted, const std::vector<int>& labels,
                  const std::vector<data::Role>& roles, MPI_Comm comm);

/// one_nn_predict + accuracy. Collective over Y.comm.
Accuracy one_nn_accuracy(const DistMatrix& Y, const std::vector<int>& labels,
                         const std::vector<data::Role>& roles);

}  // namespace ssdr::evaluation
