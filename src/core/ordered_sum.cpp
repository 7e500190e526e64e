// Rank-count-independent sums over samples: fixed chunks, fixed pairwise tree (see the header).
#include "ssdr/core/ordered_sum.hpp"

#include <algorithm>
#include <string>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"

namespace ssdr {

namespace {

/// A node of the pairwise tree: level l covers chunks [index·2^l, (index+1)·2^l).
struct Node {
  int64_t level = 0, index = 0;
  std::vector<double> value;
};

/// Number of nodes at level l for `chunks` leaves.
int64_t nodes_at(int64_t chunks, int64_t level) {
  return (chunks + (int64_t{1} << level) - 1) >> level;
}

int64_t top_level(int64_t chunks) {
  int64_t l = 0;
  while (nodes_at(chunks, l) > 1) ++l;
  return l;
}

/// Merges the stack's top while it completes a node: two siblings add (left + right), a last
/// node without sibling moves up unchanged. Local.
void settle(std::vector<Node>& stack, int64_t chunks, int64_t top) {
  for (;;) {
    Node& t = stack.back();
    if (t.level >= top) return;
    if (t.index % 2 == 1 && stack.size() >= 2) {
      Node& s = stack[stack.size() - 2];
      if (s.level != t.level || s.index != t.index - 1) return;
      for (size_t q = 0; q < s.value.size(); ++q) s.value[q] += t.value[q];
      s.level += 1;
      s.index /= 2;
      stack.pop_back();
    } else if (t.index % 2 == 0 && t.index == nodes_at(chunks, t.level) - 1) {
      t.level += 1;
      t.index /= 2;
    } else {
      return;
    }
  }
}

/// A contiguous MPI type of `width` doubles (counts in rows, not doubles).
struct RowType {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  explicit RowType(int64_t width) {
    MPI_Type_contiguous(static_cast<int>(width), MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
  }
  ~RowType() { MPI_Type_free(&t); }
  RowType(const RowType&) = delete;
  RowType& operator=(const RowType&) = delete;
};

}  // namespace

std::vector<double> ordered_row_sum(MPI_Comm comm, int64_t n_local, int64_t width, int64_t length,
                                    const RowFill& fill, const ChunkPartial& partial, int64_t chunk_rows) {
  SSDR_CHECK(width > 0 && length > 0 && chunk_rows > 0,
             "ordered_row_sum: width, length and chunk_rows must be positive");
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const Layout lay = layout_from_local(n_local, comm);
  const int64_t n = lay.n_global, start = lay.start, end = lay.start + n_local;
  std::vector<double> result(static_cast<size_t>(length), 0.0);
  if (n == 0) return result;
  std::vector<int64_t> starts, counts;
  gather_layout(comm, start, n_local, starts, counts);
  const int64_t B = chunk_rows;
  const int64_t chunks = (n + B - 1) / B;
  const int64_t top = top_level(chunks);
  // Owner of global row g: the rank whose (non-empty) block holds it.
  auto owner = [&](int64_t g) {
    for (int r = 0; r < size; ++r)
      if (g >= starts[r] && g < starts[r] + counts[r]) return r;
    return -1;
  };
  // This rank's chunks: those whose first row it holds.
  const int64_t a = (start + B - 1) / B, b = n_local > 0 ? (end + B - 1) / B : a;

  // Rows of a chunk that started on an earlier rank go to that chunk's owner; the owner of
  // this rank's last chunk receives the rest of it from the following ranks.
  RowType row_type(width);
  std::vector<int> scount(static_cast<size_t>(size), 0), rcount(static_cast<size_t>(size), 0);
  const int64_t head = std::min(n_local, a * B - start);  // rows before my first chunk
  std::vector<double> sendbuf(static_cast<size_t>(std::max<int64_t>(head, 0) * width));
  if (head > 0) {
    scount[static_cast<size_t>(owner((a - 1) * B))] = static_cast<int>(head);
    for (int64_t i = 0; i < head; ++i) fill(i, sendbuf.data() + i * width);
  }
  const int64_t tail_end = b > a ? std::min(b * B, n) : end;  // my last chunk's end
  for (int r = rank + 1; r < size; ++r) {
    const int64_t lo = std::max(starts[r], end), hi = std::min(starts[r] + counts[r], tail_end);
    if (hi > lo) rcount[static_cast<size_t>(r)] = static_cast<int>(hi - lo);
  }
  std::vector<int> sdispl(static_cast<size_t>(size), 0), rdispl(static_cast<size_t>(size), 0);
  for (int r = 1; r < size; ++r) {
    sdispl[r] = sdispl[r - 1] + scount[r - 1];
    rdispl[r] = rdispl[r - 1] + rcount[r - 1];
  }
  const int64_t tail = tail_end - end;
  std::vector<double> tailbuf(static_cast<size_t>(std::max<int64_t>(tail, 0) * width));
  MPI_Alltoallv(sendbuf.data(), scount.data(), sdispl.data(), row_type.t, tailbuf.data(),
                rcount.data(), rdispl.data(), row_type.t, comm);

  // Local chunks, each partial pushed on a stack that adds siblings as soon as both exist.
  std::vector<Node> stack;
  std::vector<double> block(static_cast<size_t>(B * width));
  for (int64_t t = a; t < b; ++t) {
    const int64_t g0 = t * B, g1 = std::min(g0 + B, n);
    for (int64_t g = g0; g < g1; ++g) {
      double* dst = block.data() + (g - g0) * width;
      if (g < end)
        fill(g - start, dst);
      else
        std::copy_n(tailbuf.data() + (g - end) * width, width, dst);
    }
    Node node;
    node.index = t;
    node.value.assign(static_cast<size_t>(length), 0.0);
    partial(block.data(), g1 - g0, node.value.data());
    stack.push_back(std::move(node));
    settle(stack, chunks, top);
  }

  // Global phase: every rank learns every rank's remaining nodes (level, index) and replays
  // the same merges; a right sibling held elsewhere is sent to the left sibling's holder.
  struct Meta {
    int64_t level, index;
    int owner;
    int slot;  // position in the owner's stack
  };
  std::vector<int64_t> mine;
  for (const Node& nd : stack) {
    mine.push_back(nd.level);
    mine.push_back(nd.index);
  }
  GatherCounts gathered;
  const std::vector<int64_t> all = allgatherv(mine, comm, &gathered);
  const std::vector<int>& mcount = gathered.counts;
  const std::vector<int>& mdispl = gathered.displs;
  std::vector<Meta> list;  // in chunk order (ranks in order, each stack in order)
  for (int r = 0; r < size; ++r)
    for (int q = 0; q < mcount[r] / 2; ++q)
      list.push_back(Meta{all[static_cast<size_t>(mdispl[r] + 2 * q)],
                          all[static_cast<size_t>(mdispl[r] + 2 * q + 1)], r, q});
  // Values by slot on this rank (slots are never reused: a merged node keeps the left slot).
  std::vector<std::vector<double>> held(stack.size());
  for (size_t q = 0; q < stack.size(); ++q) held[q] = std::move(stack[q].value);

  while (list.size() > 1) {
    std::vector<Meta> next;
    bool changed = false;
    std::vector<MPI_Request> reqs;
    std::vector<std::pair<int, std::vector<double>>> incoming;  // (left slot, right value)
    incoming.reserve(list.size());
    for (size_t j = 0; j < list.size(); ++j) {
      Meta m = list[j];
      if (m.index % 2 == 0 && j + 1 < list.size() && list[j + 1].level == m.level &&
          list[j + 1].index == m.index + 1) {
        const Meta& rt = list[j + 1];
        const int tag = static_cast<int>(j);
        if (rt.owner != m.owner) {
          if (rank == rt.owner) {
            reqs.emplace_back();
            MPI_Isend(held[static_cast<size_t>(rt.slot)].data(), static_cast<int>(length), MPI_DOUBLE,
                      m.owner, tag, comm, &reqs.back());
          } else if (rank == m.owner) {
            incoming.emplace_back(m.slot, std::vector<double>(static_cast<size_t>(length)));
            reqs.emplace_back();
            MPI_Irecv(incoming.back().second.data(), static_cast<int>(length), MPI_DOUBLE, rt.owner, tag,
                      comm, &reqs.back());
          }
        } else if (rank == m.owner) {
          std::vector<double>& l = held[static_cast<size_t>(m.slot)];
          const std::vector<double>& r = held[static_cast<size_t>(rt.slot)];
          for (size_t q = 0; q < l.size(); ++q) l[q] += r[q];
        }
        m.level += 1;
        m.index /= 2;
        next.push_back(m);
        changed = true;
        ++j;
      } else if (m.index % 2 == 0 && m.index == nodes_at(chunks, m.level) - 1 && m.level < top) {
        m.level += 1;
        m.index /= 2;
        next.push_back(m);
        changed = true;
      } else {
        next.push_back(m);
      }
    }
    MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    for (auto& in : incoming) {
      std::vector<double>& l = held[static_cast<size_t>(in.first)];
      for (size_t q = 0; q < l.size(); ++q) l[q] += in.second[q];
    }
    // Progress is guaranteed: a node of the lowest level has its sibling at the same level
    // (or none), so every round merges or moves up at least one node.
    SSDR_CHECK(changed, "ordered_row_sum: the reduction tree made no progress");
    list = std::move(next);
  }
  const Meta& root = list.front();
  if (rank == root.owner) result = held[static_cast<size_t>(root.slot)];
  MPI_Bcast(result.data(), static_cast<int>(length), MPI_DOUBLE, root.owner, comm);
  return result;
}

double ordered_sum(MPI_Comm comm, const std::vector<double>& v) {
  const auto out = ordered_row_sum(
      comm, static_cast<int64_t>(v.size()), 1, 1, [&](int64_t i, double* o) { *o = v[static_cast<size_t>(i)]; },
      [](const double* block, int64_t rows, double* o) {
        double s = 0;
        for (int64_t i = 0; i < rows; ++i) s += block[i];
        *o = s;
      });
  return out[0];
}

ChunkedColumnSums::ChunkedColumnSums(MPI_Comm comm, int64_t n_local, int width) : comm_(comm), w_(width) {
  SSDR_CHECK(width > 0, "ChunkedColumnSums: width must be positive");
  int size = 1;
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size);
  std::vector<int64_t> starts, counts;
  const Layout lay = layout_from_local(n_local, comm);
  gather_layout(comm, lay.start, n_local, starts, counts);
  n_ = lay.n_global;
  start_ = lay.start;
  end_ = lay.start + n_local;
  B_ = std::max<int64_t>(64, (n_ + 255) / 256);
  chunk_counts_.assign(static_cast<size_t>(size), 0);
  displs_.assign(static_cast<size_t>(size), 0);
  for (int r = 0; r < size; ++r) {
    chunk_counts_[static_cast<size_t>(r)] = static_cast<int>(completed(starts[r], starts[r] + counts[r]) * w_);
    if (r > 0) displs_[static_cast<size_t>(r)] = displs_[static_cast<size_t>(r - 1)] + chunk_counts_[static_cast<size_t>(r - 1)];
  }
  for (int r = rank_ - 1; r >= 0 && prev_ < 0; --r)
    if (counts[r] > 0) prev_ = r;
  for (int r = rank_ + 1; r < size && next_ < 0; ++r)
    if (counts[r] > 0) next_ = r;
  chunks_ = n_ > 0 ? (n_ + B_ - 1) / B_ : 0;
  all_.assign(static_cast<size_t>(chunks_ * w_), 0.0);
  mine_.assign(static_cast<size_t>(completed(start_, end_) * w_), 0.0);
  result_.assign(static_cast<size_t>(w_), 0.0);
  acc_.assign(static_cast<size_t>(w_), 0.0);
  carry_.assign(static_cast<size_t>(w_), 0.0);
  out_.assign(static_cast<size_t>(w_), 0.0);
  c_.assign(static_cast<size_t>(w_), 0.0);
}

void ChunkedColumnSums::throw_width_mismatch(int W) const {
  throw Error("ChunkedColumnSums::sum: compile-time width " + std::to_string(W) + " for sums of width " +
                  std::to_string(w_),
              __FILE__, __LINE__);
}

int64_t ChunkedColumnSums::completed(int64_t a, int64_t b) const {
  if (b <= a) return 0;
  const int64_t lo = a / B_;
  const int64_t hi = b == n_ ? (n_ - 1) / B_ : b / B_ - 1;
  return std::max<int64_t>(0, hi - lo + 1);
}

}  // namespace ssdr
