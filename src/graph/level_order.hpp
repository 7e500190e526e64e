#pragma once
// Private to src/graph and its tests: the distributed Cuthill–McKee level order behind the
// "levels" MatPartitioning type (graph/locality.hpp).
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace ssdr::graph::detail {

/// A symmetric graph's local rows in CSR form with global column indices: row i (global index
/// lo + i) has the neighbours cols[offsets[i] .. offsets[i+1]). Rows are distributed in
/// contiguous blocks in rank order (rank r holds [lo_r, lo_r + rows)). Self loops are ignored.
struct LocalAdjacency {
  int64_t lo = 0;                ///< global index of the first local row
  int64_t n_global = 0;          ///< number of vertices
  std::vector<int64_t> offsets;  ///< rows + 1 entries
  std::vector<int64_t> cols;     ///< global column indices
};

/// Largest number of bins a level's parent positions are sorted into (one allreduce and one
/// exscan of this many counts per level): levels at most this wide are ordered exactly.
constexpr int64_t kLevelBins = 65536;

/// Components started from their own root before the rest are appended in index order (each
/// component costs a few collective rounds; a kNN graph has few components).
constexpr int kMaxComponents = 256;

/// The position (0 .. n−1) of each local vertex in a Cuthill–McKee order computed level by
/// level across the ranks. Each connected component starts at its vertex of least degree
/// (ties: lowest global index), as SciPy's reverse_cuthill_mckee starts; a vertex of level
/// L+1 is keyed by the least position of its neighbours in level L (its Cuthill–McKee parent)
/// and the level is sorted by that key (in kLevelBins bins of the parent level when it is
/// wider), ties by global index. Components follow one another in the order their roots are
/// found; after kMaxComponents the remaining vertices follow in global index order.
/// Edges join vertices of the same or adjacent levels, so contiguous ranges of positions
/// border few others: cut into P ranges, a range's neighbours sit in the ranges beside it.
/// The order depends on the graph only, never on the number of ranks or the row layout.
/// Collective over comm. Per level: the frontier's cut edges pushed to their owners (PETSc's
/// NBX: messages to the frontier's partners only), two allreduces and an exscan; O(rows +
/// local edges) work in all, plus O(rows) per component.
/// Source: Cuthill & McKee (1969); George & Liu, Computer Solution of Large Sparse
/// Positive Definite Systems (1981), ch. 4.
std::vector<int64_t> level_order(MPI_Comm comm, const LocalAdjacency& adj);

}  // namespace ssdr::graph::detail
