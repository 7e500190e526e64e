// kNN lists in HDF5: a graph's expensive part, written by one fit (--graph-out) and used by
// later ones (--graph-in) or computed elsewhere (FAISS, cuVS, PyNNDescent) and checked here.
#include <cmath>
#include <string>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/io/output.hpp"

namespace ssdr::graph {

void write_knn_lists(const std::string& path, const KnnLists& lists, MPI_Comm comm) {
  using B = io::Hdf5RowBlock;
  io::write_hdf5_rows(path, lists.n_local,
                      {{"/knn/index", B::Type::i64, lists.k, lists.index.data()},
                       {"/knn/dist2", B::Type::f64, lists.k, lists.dist2.data()}},
                      comm);
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
