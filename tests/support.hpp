#pragma once
// Helpers shared by the tests: data paths, small dense references, comparisons, and the
// "same result on one rank as on all ranks" pipeline comparison.
#include <petscsys.h>
#include <mpi.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/evaluation/one_nn.hpp"

namespace ssdr::test {

/// Absolute path of a file in tests/data.
std::string data_path(const std::string& name);
int rank();
int size();
/// A directory unique to the current test and run ("ssdr_<prefix>_<suite>_<test>_<pid>" in
/// the system's temporary directory), created by rank 0 and removed at the end.
/// Collective over MPI_COMM_WORLD (constructor and destructor).
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Loads a CSV data set from tests/data serially on every rank (label first column):
/// X is n×d replicated (column-major Dense), labels n. For serial references only.
void load_csv_replicated(const std::string& name, Dense& X, std::vector<int>& labels);
/// Squared distance of rows i and j of X by the library's convention (graph/knn_internal.hpp
/// exact_dist2), written independently: term t goes to partial sum t mod 8 in increasing t,
/// and the sums combine as ((s0+s4)+(s1+s5))+((s2+s6)+(s3+s7)). For bitwise comparisons.
double dist2_convention(const Dense& X, int64_t i, int64_t j);

/// Max |A - B| after flipping each column of B to match the sign of A's column (|A·B| sign).
double max_diff_up_to_column_sign(const Dense& A, const Dense& B);
/// Max |A - B|.
double max_abs_diff(const Dense& A, const Dense& B);
/// Max |A_ij| (0 for an empty matrix).
double max_abs(const Dense& A);
/// max_j | ‖W_·j‖₂ − 1 | (0 for no columns). Normalizing a column of length d in double
/// leaves |‖w‖₂ − 1| ≤ ~(d/2 + 2)ε (the sum of squares has relative error ≤ dε, the square
/// root halves it, the division and this check add a few ε): ~1e-14 for d ≤ 100, so 1e-12
/// is a tolerance with a margin, not a fudge.
double max_unit_norm_error(const Dense& W);
/// op(A)·op(B) by BLAS gemm, op = transpose when ta/tb is 'T'.
Dense mul(const Dense& A, const Dense& B, char ta = 'N', char tb = 'N');

/// Columns centered, and scaled to unit (population) variance when `scale`; a constant
/// column (zero variance) becomes 0 when scaled.
Dense center_columns(const Dense& X, bool scale);
/// center_columns(X, true).
Dense standardize(const Dense& X);

/// A deterministic semi-supervised labeling: the first `p` samples of each class keep their
/// label, every other sample gets −1.
std::vector<int> first_p_labeled(const std::vector<int>& labels, int classes, int p);
/// The entries of the replicated per-sample vector `v` for X's local rows.
std::vector<int> local_part(const std::vector<int>& v, const DistMatrix& X);
/// The same for roles.
std::vector<data::Role> local_part(const std::vector<data::Role>& v, const DistMatrix& X);

/// Every rank's labels of the data set, in row order, on every rank (allgatherv over ds.X.comm).
std::vector<int> all_labels(const io::Dataset& ds);

/// data::make_split on the data set's own rows (its local labels, collective over ds.X.comm):
/// the roles of ds.X's local rows.
std::vector<data::Role> split(const io::Dataset& ds, const data::SplitSpec& spec);
/// The same split for every sample (n roles), computed serially from the file's labels read
/// on MPI_COMM_SELF: the serial reference of the distributed split. Local.
std::vector<data::Role> split_all(const std::string& path, io::Format format, const data::SplitSpec& spec);

/// A CSV data set from tests/data, replicated, with the first p samples of each class labeled.
struct Problem {
  Dense X;                        ///< n×d replicated (standardized if asked)
  std::vector<int> labels, semi;  ///< true labels; first p per class labeled, others −1
  int classes = 0;
};
Problem load_problem(const std::string& name, int p, bool standardized);

/// The pipeline behind `ssdr fit` (driver::fit_and_evaluate, embedding kept) on a Problem's
/// rows X (distributed from p.X): labeled where p.semi ≥ 0, unlabeled elsewhere, the true
/// labels used by the evaluation only; `config` as from driver::make_fit_config. What the
/// Estimator tests compare its fit with. Collective over X.comm.
driver::FitOutcome fit_problem(const Problem& p, const DistMatrix& X, const driver::FitConfig& config);

/// The SODA protocol's split: `fraction` of each class transductive, `labeled_per_class` of
/// those labeled, shuffled by `seed`.
data::SplitSpec transductive_split(int labeled_per_class, double fraction, uint64_t seed);
/// The SSGDA/SL-LDA protocol's split: `labeled_per_class` labeled and `unlabeled_per_class`
/// unlabeled samples per class, the rest unseen, shuffled by `seed`.
data::SplitSpec per_class_split(int labeled_per_class, int unlabeled_per_class, uint64_t seed);

/// One pipeline fit (driver::fit_and_evaluate) on every rank of MPI_COMM_WORLD and the same
/// fit on rank 0 alone (data read on MPI_COMM_SELF), rank 0's results broadcast to every rank.
struct SerialAndDistributed {
  int classes = 0;                  ///< of the data set
  std::vector<data::Role> roles;    ///< the split both fits used (every sample's role, n entries)
  driver::FitOutcome dist;          ///< on MPI_COMM_WORLD
  Dense Y_dist;                     ///< dist.embedding gathered (empty unless kept)
  evaluation::Accuracy serial_accuracy;
  double serial_trace_ratio = 0;
  Dense Y_serial;                   ///< the serial embedding (empty unless kept)
  Dense W_serial;                   ///< the serial model's W
  nlohmann::json serial_info;       ///< the serial FitOutcome::info
};
/// `file` in tests/data (CSV), split by `spec`. Collective over MPI_COMM_WORLD.
SerialAndDistributed fit_serial_and_distributed(const std::string& file, const data::SplitSpec& spec,
                                                const driver::FitConfig& config, bool keep_embedding = true);

/// The 1-NN label of every row of E (n×m, row-major, gathered on the caller) among the rows j
/// with semi[j] ≥ 0, by squared Euclidean distance summed over the m coordinates in order,
/// ties to the smaller j: the reference that predict's tests compare with. Local.
inline std::vector<int> reference_one_nn(const std::vector<double>& E, int64_t m, const std::vector<int>& semi) {
  const size_t n = semi.size(), w = static_cast<size_t>(m);
  std::vector<int> label(n, -1);
  for (size_t i = 0; i < n; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < n; ++j) {
      if (semi[j] < 0) continue;
      double d = 0;
      for (size_t t = 0; t < w; ++t) d += (E[w * i + t] - E[w * j + t]) * (E[w * i + t] - E[w * j + t]);
      if (d < best) best = d, label[i] = semi[j];
    }
  }
  return label;
}

/// The message of the ssdr::Error that f throws, "(no error)" when it throws none. Local.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

/// Sets a PETSc option for the lifetime of the object (and clears it even when a test fails).
struct ScopedOption {
  std::string name;
  ScopedOption(const std::string& n, const std::string& value) : name(n) {
    PetscOptionsSetValue(nullptr, name.c_str(), value.c_str());
  }
  ~ScopedOption() { PetscOptionsClearValue(nullptr, name.c_str()); }
  ScopedOption(const ScopedOption&) = delete;
  ScopedOption& operator=(const ScopedOption&) = delete;
};

}  // namespace ssdr::test
