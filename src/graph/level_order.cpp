#include "level_order.hpp"

#include <petscvec.h>

#include <algorithm>
#include <limits>

#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"

namespace ssdr::graph::detail {

namespace {

/// The positions of the ghost vertices (neighbours on other ranks) fetched from their owners
/// by one PETSc VecScatter; positions travel as doubles (exact below 2^53).
class GhostExchange {
 public:
  GhostExchange(MPI_Comm comm, int64_t rows, int64_t n_global, const std::vector<int64_t>& ghosts) {
    SSDR_PETSC(VecCreateMPI(comm, static_cast<PetscInt>(rows), static_cast<PetscInt>(n_global), x_.out()));
    SSDR_PETSC(VecCreateSeq(PETSC_COMM_SELF, static_cast<PetscInt>(ghosts.size()), g_.out()));
    std::vector<PetscInt> idx(ghosts.begin(), ghosts.end());
    Owned<IS> is;
    SSDR_PETSC(ISCreateGeneral(PETSC_COMM_SELF, static_cast<PetscInt>(idx.size()), idx.data(), PETSC_COPY_VALUES, is.out()));
    SSDR_PETSC(VecScatterCreate(x_, is, g_, nullptr, scatter_.out()));
  }
  /// pos[0, rows) are the local positions; pos[rows, rows + ghosts) receive the ghosts'.
  void exchange(std::vector<int64_t>& pos, int64_t rows) {
    PetscScalar* x = nullptr;
    SSDR_PETSC(VecGetArray(x_, &x));
    for (int64_t i = 0; i < rows; ++i) x[i] = static_cast<PetscScalar>(pos[static_cast<size_t>(i)]);
    SSDR_PETSC(VecRestoreArray(x_, &x));
    SSDR_PETSC(VecScatterBegin(scatter_, x_, g_, INSERT_VALUES, SCATTER_FORWARD));
    SSDR_PETSC(VecScatterEnd(scatter_, x_, g_, INSERT_VALUES, SCATTER_FORWARD));
    const PetscScalar* g = nullptr;
    PetscInt ng = 0;
    SSDR_PETSC(VecGetLocalSize(g_, &ng));
    SSDR_PETSC(VecGetArrayRead(g_, &g));
    for (PetscInt j = 0; j < ng; ++j) pos[static_cast<size_t>(rows + j)] = static_cast<int64_t>(g[j]);
    SSDR_PETSC(VecRestoreArrayRead(g_, &g));
  }

 private:
  Owned<Vec> x_, g_;
  Owned<VecScatter> scatter_;
};

}  // namespace

std::vector<int64_t> level_order(MPI_Comm comm, const LocalAdjacency& adj) {
  SSDR_CHECK(!adj.offsets.empty(), "level_order: offsets must have rows + 1 entries");
  const int64_t rows = static_cast<int64_t>(adj.offsets.size()) - 1;
  const int64_t lo = adj.lo, hi = adj.lo + rows, N = adj.n_global;
  // Neighbours in a local numbering: local rows first, then the ghosts in global order.
  std::vector<int64_t> ghosts;
  for (int64_t c : adj.cols)
    if (c < lo || c >= hi) ghosts.push_back(c);
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  std::vector<int64_t> offsets(static_cast<size_t>(rows) + 1, 0), nbr;
  std::vector<int64_t> degree(static_cast<size_t>(rows), 0);
  nbr.reserve(adj.cols.size());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t e = adj.offsets[static_cast<size_t>(i)]; e < adj.offsets[static_cast<size_t>(i) + 1]; ++e) {
      const int64_t c = adj.cols[static_cast<size_t>(e)];
      if (c == lo + i) continue;
      nbr.push_back(c >= lo && c < hi ? c - lo
                                      : rows + (std::lower_bound(ghosts.begin(), ghosts.end(), c) - ghosts.begin()));
    }
    offsets[static_cast<size_t>(i) + 1] = static_cast<int64_t>(nbr.size());
    degree[static_cast<size_t>(i)] = offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)];
  }
  GhostExchange halo(comm, rows, N, ghosts);
  std::vector<int64_t> pos(static_cast<size_t>(rows) + ghosts.size(), -1);
  std::vector<int64_t> open(static_cast<size_t>(rows));  // local vertices not yet placed
  for (int64_t i = 0; i < rows; ++i) open[static_cast<size_t>(i)] = i;
  std::vector<int64_t> cand, key, counts, below;
  int64_t placed = 0;
  for (int component = 0; placed < N && component < kMaxComponents; ++component) {
    // The root: the open vertex of least degree, ties by global index.
    int64_t best[2] = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()};
    for (int64_t i : open) best[0] = std::min(best[0], degree[static_cast<size_t>(i)]);
    MPI_Allreduce(MPI_IN_PLACE, &best[0], 1, MPI_INT64_T, MPI_MIN, comm);
    for (int64_t i : open)
      if (degree[static_cast<size_t>(i)] == best[0]) {
        best[1] = lo + i;
        break;
      }
    MPI_Allreduce(MPI_IN_PLACE, &best[1], 1, MPI_INT64_T, MPI_MIN, comm);
    if (best[1] >= lo && best[1] < hi) pos[static_cast<size_t>(best[1] - lo)] = placed;
    int64_t off = placed, width = 1;  // the current level: positions [off, off + width)
    placed += 1;
    for (;;) {
      open.erase(std::remove_if(open.begin(), open.end(), [&](int64_t i) { return pos[static_cast<size_t>(i)] >= 0; }),
                 open.end());
      halo.exchange(pos, rows);
      // The next level: open vertices with a neighbour in the current level, keyed by the
      // least such position (their parent in Cuthill–McKee's order).
      cand.clear();
      key.clear();
      for (int64_t i : open) {
        int64_t k = std::numeric_limits<int64_t>::max();
        for (int64_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e) {
          const int64_t p = pos[static_cast<size_t>(nbr[static_cast<size_t>(e)])];
          if (p >= off && p < off + width) k = std::min(k, p);
        }
        if (k != std::numeric_limits<int64_t>::max()) {
          cand.push_back(i);
          key.push_back(k);
        }
      }
      int64_t next = static_cast<int64_t>(cand.size());
      MPI_Allreduce(MPI_IN_PLACE, &next, 1, MPI_INT64_T, MPI_SUM, comm);
      if (next == 0) break;
      // Sorted by parent position in `bins` bins of the current level (exact when it is no
      // wider), ties by global index: a bin's vertices on lower ranks come first (exscan),
      // then this rank's in local order.
      const int64_t bins = std::min(width, kLevelBins);
      counts.assign(static_cast<size_t>(bins), 0);
      for (size_t j = 0; j < cand.size(); ++j) {
        key[j] = (key[j] - off) * bins / width;
        ++counts[static_cast<size_t>(key[j])];
      }
      below.assign(static_cast<size_t>(bins), 0);
      MPI_Exscan(counts.data(), below.data(), static_cast<int>(bins), MPI_INT64_T, MPI_SUM, comm);
      int rank = 0;
      MPI_Comm_rank(comm, &rank);
      if (rank == 0) std::fill(below.begin(), below.end(), 0);
      MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(bins), MPI_INT64_T, MPI_SUM, comm);
      int64_t start = off + width;
      for (int64_t b = 0; b < bins; ++b) {  // counts → each bin's first position on this rank
        const int64_t c = counts[static_cast<size_t>(b)];
        below[static_cast<size_t>(b)] += start;
        start += c;
      }
      for (size_t j = 0; j < cand.size(); ++j) pos[static_cast<size_t>(cand[j])] = below[static_cast<size_t>(key[j])]++;
      off += width;
      width = next;
      placed += next;
    }
  }
  if (placed < N) {
    // Past kMaxComponents: the rest in global index order.
    open.erase(std::remove_if(open.begin(), open.end(), [&](int64_t i) { return pos[static_cast<size_t>(i)] >= 0; }),
               open.end());
    int64_t mine = static_cast<int64_t>(open.size()), before = 0;
    MPI_Exscan(&mine, &before, 1, MPI_INT64_T, MPI_SUM, comm);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) before = 0;
    for (int64_t i : open) pos[static_cast<size_t>(i)] = placed + before++;
  }
  pos.resize(static_cast<size_t>(rows));
  return pos;
}

}  // namespace ssdr::graph::detail
