#pragma once
/// \file split.hpp
/// Roles of the samples: labeled, unlabeled (transductive, label hidden from training) or
/// unseen (test, not used in training), as in the papers' protocols.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ssdr::data {

/// The role of a sample in a split: labeled (in L), unlabeled (transductive, in U) or unseen.
enum class Role : char { labeled = 'L', unlabeled = 'U', unseen = 'T' };

/// How to draw a stratified random split. Exactly one of unlabeled_per_class (≥ 0) and
/// transductive_fraction (in (0,1]) may be set; with neither, every sample that is not
/// labeled is unlabeled (transductive fraction 1, no unseen samples).
struct SplitSpec {
  int labeled_per_class = 0;            ///< p
  int unlabeled_per_class = -1;         ///< q (SSGDA/SL-LDA protocol), −1 = unset
  double transductive_fraction = -1;    ///< SODA protocol, −1 = unset
  uint64_t seed = 0;
};

/// Stratified split, identical on every rank and for every rank count (it depends only on
/// the labels and the seed: a Fisher–Yates shuffle per class driven by std::mt19937_64).
/// Per class k with n_k samples: with transductive_fraction F, the transductive set is
/// round(F·n_k) samples of which p are labeled; with unlabeled_per_class q, p labeled + q
/// unlabeled; the rest unseen. Local (no communication).
/// \throws ssdr::Error when a class has fewer samples than requested (naming the class and
///   the option), p < 1, or F ∉ (0,1].
std::vector<Role> make_split(const std::vector<int>& labels, int classes, const SplitSpec& spec);

/// Reads a split file: one word per line (`labeled`, `unlabeled` or `unseen`; also the
/// letters L/U/T), exactly n lines, in sample order. Rank 0 reads, all ranks receive it.
/// Collective. \throws ssdr::Error on every rank naming the file and line.
std::vector<Role> read_split(const std::string& path, int64_t n, MPI_Comm comm);

/// Checks a split against the labels: every class has at least one labeled sample.
/// Local. \throws ssdr::Error naming the first class without a labeled sample.
void validate_split(const std::vector<int>& labels, int classes, const std::vector<Role>& roles);

/// Counts of each role.
struct SplitCounts {
  int64_t labeled = 0, unlabeled = 0, unseen = 0;
};
/// The counts of each role in `roles`. Local.
SplitCounts count_roles(const std::vector<Role>& roles);

}  // namespace ssdr::data
