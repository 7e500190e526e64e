#include "level_order.hpp"

#include <petscsys.h>

#include <algorithm>
#include <limits>

#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"

namespace ssdr::graph::detail {

namespace {

/// Per level, each rank pushes (vertex, parent position) pairs to the owners of its frontier's
/// neighbours on other ranks: only the ranks that have something to say send, found by
/// PETSc's PetscCommBuildTwoSided (NBX), so a level costs messages to the frontier's partners
/// and bytes for its cut edges, never a whole halo (in file order a halo is most of the
/// other ranks' rows, and a graph has tens to hundreds of levels).
class FrontierPush {
 public:
  FrontierPush(MPI_Comm comm, int ranks) : comm_(comm), out_(static_cast<size_t>(ranks)) {}
  void push(int owner, int64_t vertex, int64_t position) {
    auto& o = out_[static_cast<size_t>(owner)];
    if (o.empty()) targets_.push_back(owner);
    o.push_back(vertex);
    o.push_back(position);
  }
  /// Exchanges the pushed pairs; received(vertex, position) is called for each pair sent to
  /// this rank. Collective.
  template <class Received>
  void exchange(Received received) {
    std::sort(targets_.begin(), targets_.end());
    std::vector<PetscMPIInt> to(targets_.begin(), targets_.end()), lengths;
    for (int t : targets_) lengths.push_back(static_cast<PetscMPIInt>(out_[static_cast<size_t>(t)].size()));
    PetscMPIInt nfrom = 0;
    PetscMPIInt* from = nullptr;
    PetscMPIInt* from_lengths = nullptr;
    SSDR_PETSC(PetscCommBuildTwoSided(comm_, 1, MPI_INT, static_cast<PetscMPIInt>(to.size()), to.data(), lengths.data(),
                                      &nfrom, &from, &from_lengths));
    std::vector<std::vector<int64_t>> in(static_cast<size_t>(nfrom));
    std::vector<MPI_Request> requests;
    for (PetscMPIInt j = 0; j < nfrom; ++j) {
      in[static_cast<size_t>(j)].resize(static_cast<size_t>(from_lengths[j]));
      requests.emplace_back();
      MPI_Irecv(in[static_cast<size_t>(j)].data(), from_lengths[j], MPI_INT64_T, from[j], kTag, comm_, &requests.back());
    }
    for (size_t j = 0; j < to.size(); ++j) {
      auto& o = out_[static_cast<size_t>(to[j])];
      requests.emplace_back();
      MPI_Isend(o.data(), lengths[j], MPI_INT64_T, to[j], kTag, comm_, &requests.back());
    }
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    PetscFree(from);
    PetscFree(from_lengths);
    for (int t : targets_) out_[static_cast<size_t>(t)].clear();
    targets_.clear();
    for (const auto& v : in)
      for (size_t e = 0; e + 1 < v.size(); e += 2) received(v[e], v[e + 1]);
  }

 private:
  static constexpr int kTag = 7301;
  MPI_Comm comm_;
  std::vector<std::vector<int64_t>> out_;
  std::vector<int> targets_;
};

/// MPI_Comm_dup'd for the level order's own messages, freed on every path.
struct OwnComm {
  MPI_Comm c = MPI_COMM_NULL;
  explicit OwnComm(MPI_Comm from) { MPI_Comm_dup(from, &c); }
  ~OwnComm() { MPI_Comm_free(&c); }
  OwnComm(const OwnComm&) = delete;
  OwnComm& operator=(const OwnComm&) = delete;
};

}  // namespace

std::vector<int64_t> level_order(MPI_Comm comm_in, const LocalAdjacency& adj) {
  SSDR_CHECK(!adj.offsets.empty(), "level_order: offsets must have rows + 1 entries");
  OwnComm own(comm_in);
  MPI_Comm comm = own.c;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const int64_t rows = static_cast<int64_t>(adj.offsets.size()) - 1;
  const int64_t lo = adj.lo, hi = adj.lo + rows, N = adj.n_global;
  std::vector<int64_t> starts(static_cast<size_t>(ranks) + 1, N);  // rank r's rows: [starts[r], starts[r+1])
  MPI_Allgather(&lo, 1, MPI_INT64_T, starts.data(), 1, MPI_INT64_T, comm);
  auto owner = [&](int64_t g) {
    return static_cast<int>(std::upper_bound(starts.begin(), starts.end() - 1, g) - starts.begin()) - 1;
  };
  std::vector<int64_t> degree(static_cast<size_t>(rows), 0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = adj.offsets[static_cast<size_t>(i)]; e < adj.offsets[static_cast<size_t>(i) + 1]; ++e)
      degree[static_cast<size_t>(i)] += adj.cols[static_cast<size_t>(e)] != lo + i;
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> pos(static_cast<size_t>(rows), -1), key(static_cast<size_t>(rows), kNone);
  std::vector<int64_t> frontier, cand, counts, below;
  FrontierPush push(comm, ranks);
  // Offers position p as parent to the local vertex v (global index g).
  auto offer = [&](int64_t v, int64_t p) {
    if (pos[static_cast<size_t>(v)] >= 0) return;
    if (key[static_cast<size_t>(v)] == kNone) cand.push_back(v);
    key[static_cast<size_t>(v)] = std::min(key[static_cast<size_t>(v)], p);
  };
  int64_t placed = 0, scan = 0;  // vertices before `scan` (local) are all placed
  for (int component = 0; placed < N && component < kMaxComponents; ++component) {
    // The root: the open vertex of least degree, ties by global index.
    int64_t best[2] = {kNone, kNone};
    while (scan < rows && pos[static_cast<size_t>(scan)] >= 0) ++scan;
    for (int64_t i = scan; i < rows; ++i)
      if (pos[static_cast<size_t>(i)] < 0 && degree[static_cast<size_t>(i)] < best[0]) {
        best[0] = degree[static_cast<size_t>(i)];
        best[1] = lo + i;
      }
    int64_t least = best[0];
    MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_INT64_T, MPI_MIN, comm);
    if (best[0] != least) best[1] = kNone;
    MPI_Allreduce(MPI_IN_PLACE, &best[1], 1, MPI_INT64_T, MPI_MIN, comm);
    frontier.clear();
    if (best[1] >= lo && best[1] < hi) {
      pos[static_cast<size_t>(best[1] - lo)] = placed;
      frontier.push_back(best[1] - lo);
    }
    int64_t off = placed, width = 1;  // the current level: positions [off, off + width)
    placed += 1;
    for (;;) {
      // The next level: open vertices with a neighbour in the current level, keyed by the
      // least such position (their parent in Cuthill–McKee's order).
      cand.clear();
      for (int64_t u : frontier)
        for (int64_t e = adj.offsets[static_cast<size_t>(u)]; e < adj.offsets[static_cast<size_t>(u) + 1]; ++e) {
          const int64_t g = adj.cols[static_cast<size_t>(e)];
          if (g >= lo && g < hi)
            offer(g - lo, pos[static_cast<size_t>(u)]);
          else
            push.push(owner(g), g, pos[static_cast<size_t>(u)]);
        }
      push.exchange([&](int64_t g, int64_t p) { offer(g - lo, p); });
      std::sort(cand.begin(), cand.end());  // ties go to the lower global index
      int64_t next = static_cast<int64_t>(cand.size());
      MPI_Allreduce(MPI_IN_PLACE, &next, 1, MPI_INT64_T, MPI_SUM, comm);
      if (next == 0) break;
      // Sorted by parent position in `bins` bins of the current level (exact when it is no
      // wider), ties by global index: a bin's vertices on lower ranks come first (exscan),
      // then this rank's in local order.
      const int64_t bins = std::min(width, kLevelBins);
      counts.assign(static_cast<size_t>(bins), 0);
      for (int64_t v : cand) {
        key[static_cast<size_t>(v)] = (key[static_cast<size_t>(v)] - off) * bins / width;
        ++counts[static_cast<size_t>(key[static_cast<size_t>(v)])];
      }
      below.assign(static_cast<size_t>(bins), 0);
      MPI_Exscan(counts.data(), below.data(), static_cast<int>(bins), MPI_INT64_T, MPI_SUM, comm);
      if (rank == 0) std::fill(below.begin(), below.end(), 0);
      MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(bins), MPI_INT64_T, MPI_SUM, comm);
      int64_t start = off + width;
      for (int64_t b = 0; b < bins; ++b) {  // counts → each bin's first position on this rank
        below[static_cast<size_t>(b)] += start;
        start += counts[static_cast<size_t>(b)];
      }
      for (int64_t v : cand) {
        pos[static_cast<size_t>(v)] = below[static_cast<size_t>(key[static_cast<size_t>(v)])]++;
        key[static_cast<size_t>(v)] = kNone;
      }
      frontier.swap(cand);
      off += width;
      width = next;
      placed += next;
    }
  }
  if (placed < N) {
    // Past kMaxComponents: the rest in global index order.
    int64_t mine = 0, before = 0;
    for (int64_t i = 0; i < rows; ++i) mine += pos[static_cast<size_t>(i)] < 0;
    MPI_Exscan(&mine, &before, 1, MPI_INT64_T, MPI_SUM, comm);
    if (rank == 0) before = 0;
    for (int64_t i = 0; i < rows; ++i)
      if (pos[static_cast<size_t>(i)] < 0) pos[static_cast<size_t>(i)] = placed + before++;
  }
  return pos;
}

}  // namespace ssdr::graph::detail
