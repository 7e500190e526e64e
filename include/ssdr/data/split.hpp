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

/// The counter-based key of sample i (global index, 0-based) under `seed`: splitmix64's
/// finalizer of i + splitmix64(seed). A bijection of i for a fixed seed, so no two samples
/// share a key. Local.
uint64_t split_key(uint64_t seed, int64_t i);

/// Stratified split (the protocol of soda-nie2009 §6: per class p labeled, a fraction F of
/// the samples transductive, the rest unseen; sllda-zhao2014 and ssgda-zhang-yeung: p
/// labeled and q unlabeled per class), identical for every rank count (it depends only on
/// the labels and the seed). Per class k with n_k samples, its samples are ordered by split_key(seed, i): the
/// first round(F·n_k) (transductive_fraction F) or p + q (unlabeled_per_class q) are
/// transductive, the first p of them labeled (labeled_per_class p), the rest unseen. The
/// per-class thresholds are found by a distributed radix selection (8 rounds of one
/// MPI_Allreduce of 256 counts per selection, at most 4 096 selections at a time; a whole
/// class needs none), so no rank holds the labels or roles of all n samples.
/// A row without a label (−1) is always transductive (unlabeled) and is in no class's count.
/// \param labels    the labels of this rank's rows, global rows [row_start, row_start + n_local)
/// \param classes   c (the same on every rank)
/// \return the roles of this rank's rows (n_local)
/// \param names     the classes' names (Dataset::class_names) for messages; empty: numbers
/// Collective over comm. \throws ssdr::Error (collectively) when a class has fewer samples than
///   requested (naming the class and the option), p < 1, or F ∉ (0,1].
std::vector<Role> make_split(const std::vector<int>& labels, int64_t row_start, int classes, const SplitSpec& spec,
                             MPI_Comm comm, const std::vector<std::string>& names = {});

/// Reads a split file: one word per line (`labeled`, `unlabeled` or `unseen`; also the
/// letters L/U/T; blank lines skipped), exactly n lines, in sample order. Each rank reads its
/// byte range of the file in parallel and receives the roles of its rows [row_start,
/// row_start + n_local) (io::read_line_codes, then one MPI_Alltoallv): nothing of size n.
/// Collective. \throws ssdr::Error on every rank naming the file and line.
std::vector<Role> read_split(const std::string& path, int64_t row_start, int64_t n_local, int64_t n, MPI_Comm comm);

/// Checks a split against the labels (both of this rank's rows): at least two classes, every
/// class has at least one labeled sample on some rank, and no row without a label (−1) is
/// labeled. `names` (Dataset::class_names; empty: numbers) name the classes in messages.
/// Collective (one MPI_Allreduce of c counts).
/// \throws ssdr::Error (collectively) when fewer than two classes are labeled, naming the first
///   class without a labeled sample, or the first labeled sample without a label.
void validate_split(const std::vector<int>& labels, int classes, const std::vector<Role>& roles, MPI_Comm comm,
                    const std::vector<std::string>& names = {});

/// The roles the data give themselves: a row with a label is labeled, a row without one
/// (label −1, an unlabeled marker in the file) is transductive (unlabeled); no unseen rows.
/// What `ssdr fit` does without --labeled-per-class or --split. Local but for one
/// MPI_Allreduce (collective over comm).
/// \throws ssdr::Error (collectively) when no row is unlabeled, naming the options that draw
///   a split instead.
std::vector<Role> roles_from_labels(const std::vector<int>& labels, MPI_Comm comm);

/// Counts of each role.
struct SplitCounts {
  int64_t labeled = 0, unlabeled = 0, unseen = 0;
};
/// The counts of each role over every rank's `roles`. Collective (one MPI_Allreduce).
SplitCounts count_roles(const std::vector<Role>& roles, MPI_Comm comm);

/// How messages name class k: "class 'bus'" (a name from the data), "class 7" (an integer
/// label as the data write it) or "class 3" (no names: the code). Local.
std::string class_text(int k, const std::vector<std::string>& names);

}  // namespace ssdr::data
