// kNN lists in HDF5: a graph's expensive part, written by one fit (--graph-out) and used by
// later ones (--graph-in) or computed elsewhere (FAISS, cuVS, PyNNDescent) and checked here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/io/output.hpp"

namespace ssdr::graph {

void write_knn_lists(const std::string& path, const KnnLists& lists, MPI_Comm comm, const std::string& provenance) {
  using B = io::Hdf5RowBlock;
  std::vector<std::pair<std::string, std::string>> attributes;
  if (!provenance.empty()) attributes.emplace_back("provenance", provenance);
  io::write_hdf5_rows(path, lists.n_local,
                      {{"/knn/index", B::Type::i64, lists.k, lists.index.data()},
                       {"/knn/dist2", B::Type::f64, lists.k, lists.dist2.data()}},
                      comm, attributes);
}

std::string read_knn_provenance(const std::string& path, MPI_Comm comm) {
  return io::read_hdf5_root_attribute(path, "provenance", comm);
}

void check_list_distances(const KnnLists& lists, const RowsView& X, bool single, const std::string& path) {
  MPI_Comm comm = X.comm;
  const int64_t d = X.cols, k = lists.k;
  const int64_t per_row = std::min<int64_t>(k, 16);
  // About 32 sampled rows (fewer for wide rows: at most 2^21 fetched values), chosen by
  // their global index alone, so the same edges are checked on any rank count.
  const int64_t target = std::max<int64_t>(1, std::min<int64_t>(32, (int64_t{1} << 21) / std::max<int64_t>(1, per_row * d)));
  const uint64_t cut = X.n_global <= target ? UINT64_MAX
                                            : static_cast<uint64_t>(static_cast<double>(UINT64_MAX) *
                                                                    (static_cast<double>(target) / X.n_global));
  std::vector<int64_t> rows, want;
  for (int64_t i = 0; i < lists.n_local; ++i)
    if (data::split_key(0x6b6e6e, lists.row_start + i) <= cut) {
      rows.push_back(i);
      for (int64_t m = 0; m < per_row; ++m) want.push_back(lists.index[static_cast<size_t>(i * k + m)]);
    }
  int P = 1, rank = 0;
  MPI_Comm_size(comm, &P);
  MPI_Comm_rank(comm, &rank);
  std::vector<int> counts(static_cast<size_t>(P)), displs(static_cast<size_t>(P));
  int mine = static_cast<int>(want.size());
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < P; ++r) displs[static_cast<size_t>(r)] = total, total += counts[static_cast<size_t>(r)];
  std::vector<int64_t> all(static_cast<size_t>(total));
  MPI_Allgatherv(want.data(), mine, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, comm);
  // Each wanted row from its owner, zeros elsewhere: the sum is the row itself, exactly.
  std::vector<double> fetched(static_cast<size_t>(total) * static_cast<size_t>(d), 0.0);
  for (int w = 0; w < total; ++w) {
    const int64_t j = all[static_cast<size_t>(w)] - X.row_start;
    if (j >= 0 && j < X.n_local) X.tile(j, 1, fetched.data() + static_cast<size_t>(w) * d);
  }
  if (!fetched.empty())
    MPI_Allreduce(MPI_IN_PLACE, fetched.data(), static_cast<int>(fetched.size()), MPI_DOUBLE, MPI_SUM, comm);
  // Rounding. ssdr's searches compute a listed distance in double precision, directly or from
  // centred rows or as |x|^2 + |y|^2 - 2 x.y; each way's error is at most about
  // 2 (d'+2) u (|x_i|^2 + |x_j|^2), u = 2^-53 (Higham, Accuracy and Stability, §3.1: a sum of d'
  // products errs by at most gamma_d' times the sum of their magnitudes). The recomputation
  // here (direct differences) adds gamma_d' dist2 <= the same bound. The tolerance is 2^7 times
  // that: 2^-45 (d'+2) (|x_i|^2 + |x_j|^2), far below any change of data, scaling or metric.
  // A file from elsewhere may hold float32 distances of float32 rows (FAISS, cuVS): the same
  // bound with u = 2^-24, times 2^4: 2^-19 (d'+2) (|x_i|^2 + |x_j|^2).
  const double unit = single ? std::ldexp(1.0, -19) : std::ldexp(1.0, -45);
  std::string problem;
  std::vector<double> xs(static_cast<size_t>(d));
  for (size_t s = 0, w = static_cast<size_t>(displs[static_cast<size_t>(rank)]); s < rows.size() && problem.empty(); ++s) {
    const int64_t i = rows[s];
    X.tile(i, 1, xs.data());
    const double* xi = xs.data();
    double ni = 0;
    for (int64_t t = 0; t < d; ++t) ni += xi[t] * xi[t];
    for (int64_t m = 0; m < per_row && problem.empty(); ++m, ++w) {
      const double* xj = fetched.data() + w * static_cast<size_t>(d);
      double d2 = 0, nj = 0;
      for (int64_t t = 0; t < d; ++t) {
        const double e = xi[t] - xj[t];
        d2 += e * e;
        nj += xj[t] * xj[t];
      }
      const double given = lists.dist2[static_cast<size_t>(i * k + m)];
      const double tol = unit * static_cast<double>(d + 2) * (ni + nj);
      if (!(std::fabs(given - d2) <= tol)) {
        char b[200];
        std::snprintf(b, sizeof b, "squared distance %.17g in the file but %.17g recomputed (tolerance %.3g)", given,
                      d2, tol);
        problem = path + ": row " + std::to_string(lists.row_start + i) + ", entry " + std::to_string(m) +
                  " (neighbour " + std::to_string(lists.index[static_cast<size_t>(i * k + m)]) + "): " + b +
                  "; expected the lists of this fit's preprocessed rows (the same data, split and preprocessing)";
      }
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, problem.empty(), problem);
}

KnnLists read_knn_lists(const std::string& path, int64_t n_global, int64_t row_start, int64_t n_local,
                        MPI_Comm comm) {
  KnnLists L;
  int64_t rows = 0, k = 0, rows2 = 0, k2 = 0;
  io::read_hdf5_rows(path, "/knn/index", 0, 0, true, &L.index, nullptr, rows, k, comm);  // the shape first
  SSDR_CHECK_COLLECTIVE(comm, rows == n_global,
                        path + ":/knn/index: lists of " + std::to_string(rows) + " samples, but the fit's graph has " +
                            std::to_string(n_global) +
                            " (its transductive samples in file order; all samples when none is unseen)");
  SSDR_CHECK_COLLECTIVE(comm, k >= 1 && k < n_global,
                        path + ":/knn/index: " + std::to_string(k) + " neighbours per sample; expected 1 to " +
                            std::to_string(n_global - 1));
  io::read_hdf5_rows(path, "/knn/index", row_start, n_local, true, &L.index, nullptr, rows, k, comm);
  io::read_hdf5_rows(path, "/knn/dist2", row_start, n_local, false, nullptr, &L.dist2, rows2, k2, comm);
  SSDR_CHECK_COLLECTIVE(comm, rows2 == rows && k2 == k,
                        path + ": /knn/dist2 is " + std::to_string(rows2) + " x " + std::to_string(k2) +
                            "; expected the shape of /knn/index, " + std::to_string(rows) + " x " + std::to_string(k));
  L.k = static_cast<int>(k);
  L.n_global = n_global;
  L.row_start = row_start;
  L.n_local = n_local;
  // Each row: k distinct neighbours other than itself, in [0, n), nearest first, at finite
  // squared distances >= 0. The first bad row (in this rank's rows) is named.
  std::string problem;
  for (int64_t i = 0; i < n_local && problem.empty(); ++i) {
    const int64_t g = row_start + i;
    const int64_t* idx = L.index.data() + i * k;
    const double* d2 = L.dist2.data() + i * k;
    for (int64_t j = 0; j < k && problem.empty(); ++j) {
      const std::string where = path + ": row " + std::to_string(g) + ", entry " + std::to_string(j) + ": ";
      if (idx[j] < 0 || idx[j] >= n_global)
        problem = where + "neighbour " + std::to_string(idx[j]) + " outside [0, " + std::to_string(n_global) + ")";
      else if (idx[j] == g)
        problem = where + "the sample itself; expected its k nearest other samples";
      else if (!std::isfinite(d2[j]) || d2[j] < 0)
        problem = where + "squared distance " + std::to_string(d2[j]) + "; expected a finite value >= 0";
      else if (j > 0 && d2[j] < d2[j - 1])
        problem = where + "not sorted; expected the neighbours nearest first (dist2 ascending)";
      for (int64_t q = 0; q < j && problem.empty(); ++q)
        if (idx[q] == idx[j]) problem = where + "neighbour " + std::to_string(idx[j]) + " listed twice";
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, problem.empty(), problem);
  return L;
}

}  // namespace ssdr::graph
