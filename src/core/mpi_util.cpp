#include "ssdr/core/mpi_util.hpp"

#include <algorithm>
#include <climits>
#include <fstream>
#include <limits>
#include <string>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/error.hpp"

namespace ssdr {

uint64_t fnv1a64(const char* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

std::string bcast_string(const std::string& text, int root, MPI_Comm comm) {
  uint64_t len = text.size();
  MPI_Bcast(&len, 1, MPI_UINT64_T, root, comm);
  std::string out = comm_rank(comm) == root ? text : std::string(static_cast<size_t>(len), '\0');
  for (uint64_t off = 0; off < len;) {  // MPI counts are int
    const int step = static_cast<int>(std::min<uint64_t>(len - off, uint64_t{1} << 30));
    MPI_Bcast(out.data() + off, step, MPI_CHAR, root, comm);
    off += static_cast<uint64_t>(step);
  }
  return out;
}

GatherCounts allgather_counts(int64_t local_count, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int64_t> all(static_cast<size_t>(size));
  MPI_Allgather(&local_count, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, comm);
  GatherCounts g;
  g.counts.resize(static_cast<size_t>(size));
  g.displs.assign(static_cast<size_t>(size), 0);
  int64_t total = 0;
  bool ok = true;
  for (int r = 0; r < size; ++r) {
    ok = ok && all[static_cast<size_t>(r)] >= 0;
    g.displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += all[static_cast<size_t>(r)];
    ok = ok && total <= INT_MAX;
    if (!ok) break;
    g.counts[static_cast<size_t>(r)] = static_cast<int>(all[static_cast<size_t>(r)]);
  }
  SSDR_REQUIRE(ok, "allgatherv: " + std::to_string(total) +
                       " elements over the ranks exceed MPI's count limit (or a count is negative)");
  g.total = static_cast<int>(total);
  return g;
}

double memory_limit_per_rank(MPI_Comm comm) {
  double avail = 0;
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  double value = 0;
  while (f >> key >> value >> unit)
    if (key == "MemAvailable:") {
      avail = value * 1024.0;
      break;
    }
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 1;
  if (node != MPI_COMM_NULL) {
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
  }
  double mine = avail > 0 ? 0.5 * avail / local : std::numeric_limits<double>::infinity();
  double limit = 0;
  MPI_Allreduce(&mine, &limit, 1, MPI_DOUBLE, MPI_MIN, comm);
  return limit;
}


void for_each_row_block(const double* local, int64_t row_start, int64_t n_local, int64_t n, int64_t w,
                        int64_t block, MPI_Comm comm,
                        const std::function<void(int64_t first, int64_t rows, const double* data)>& visit) {
  SSDR_REQUIRE(block >= 1 && w >= 0 && block * w < INT_MAX, "for_each_row_block: a block of " + std::to_string(block) +
                                                                " rows of " + std::to_string(w) +
                                                                " values exceeds MPI's count limit");
  int p = 1, rank = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &rank);
  std::vector<int64_t> starts, counts;
  gather_layout(comm, row_start, n_local, starts, counts);
  const int64_t blocks = (n + block - 1) / block;
  if (blocks == 0) return;
  struct Slot {
    std::vector<double> buf;
    std::vector<int> count, displ;
    MPI_Request request = MPI_REQUEST_NULL;
  } slot[2];
  // Block k's rows [b0, b1): every owner sends its part, everyone receives the whole block.
  auto post = [&](int64_t k, Slot& s) {
    const int64_t b0 = k * block, b1 = std::min(n, b0 + block);
    s.buf.resize(static_cast<size_t>((b1 - b0) * w));
    s.count.assign(static_cast<size_t>(p), 0);
    s.displ.assign(static_cast<size_t>(p), 0);
    for (int q = 0; q < p; ++q) {
      const int64_t lo = std::max(b0, starts[static_cast<size_t>(q)]);
      const int64_t hi = std::min(b1, starts[static_cast<size_t>(q)] + counts[static_cast<size_t>(q)]);
      if (hi > lo) {
        s.count[static_cast<size_t>(q)] = static_cast<int>((hi - lo) * w);
        s.displ[static_cast<size_t>(q)] = static_cast<int>((lo - b0) * w);
      }
    }
    const int mine = s.count[static_cast<size_t>(rank)];
    const double* send = mine > 0 ? local + (b0 + s.displ[static_cast<size_t>(rank)] / std::max<int64_t>(w, 1) - row_start) * w
                                  : s.buf.data();
    MPI_Iallgatherv(send, mine, MPI_DOUBLE, s.buf.data(), s.count.data(), s.displ.data(), MPI_DOUBLE, comm,
                    &s.request);
  };
  post(0, slot[0]);
  for (int64_t k = 0; k < blocks; ++k) {
    Slot& s = slot[k % 2];
    MPI_Wait(&s.request, MPI_STATUS_IGNORE);
    if (k + 1 < blocks) post(k + 1, slot[(k + 1) % 2]);
    const int64_t b0 = k * block, b1 = std::min(n, b0 + block);
    visit(b0, b1 - b0, s.buf.data());
  }
}

}  // namespace ssdr

namespace ssdr {

void redistribute_rows(const void* from, int64_t from_start, int64_t from_count, void* to, int64_t to_start,
                       int64_t to_count, size_t bytes, MPI_Comm comm) {
  const int size = comm_size(comm);
  int64_t mine[4] = {from_start, from_count, to_start, to_count};
  std::vector<int64_t> all(4 * static_cast<size_t>(size));
  MPI_Allgather(mine, 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, comm);
  std::vector<int> sc(static_cast<size_t>(size), 0), sd(sc), rc(sc), rd(sc);
  bool fits = true;
  // Overlap of my source range with rank r's target range, and of rank r's source with mine.
  for (int r = 0; r < size; ++r) {
    const int64_t* a = all.data() + 4 * static_cast<size_t>(r);
    const int64_t s_lo = std::max(from_start, a[2]), s_hi = std::min(from_start + from_count, a[2] + a[3]);
    if (s_hi > s_lo) {
      fits = fits && s_hi - s_lo <= INT_MAX && s_lo - from_start <= INT_MAX;
      sc[static_cast<size_t>(r)] = static_cast<int>(s_hi - s_lo);
      sd[static_cast<size_t>(r)] = static_cast<int>(s_lo - from_start);
    }
    const int64_t r_lo = std::max(to_start, a[0]), r_hi = std::min(to_start + to_count, a[0] + a[1]);
    if (r_hi > r_lo) {
      fits = fits && r_hi - r_lo <= INT_MAX && r_lo - to_start <= INT_MAX;
      rc[static_cast<size_t>(r)] = static_cast<int>(r_hi - r_lo);
      rd[static_cast<size_t>(r)] = static_cast<int>(r_lo - to_start);
    }
  }
  // Agreed before the exchange: a rank that cannot post its counts must not leave the others
  // waiting in MPI_Alltoallv.
  SSDR_CHECK_COLLECTIVE(comm, fits, "redistribute_rows: a block between two ranks exceeds MPI's count limit (2^31 - 1 items)");
  MPI_Datatype item = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &item);
  MPI_Type_commit(&item);
  MPI_Alltoallv(from, sc.data(), sd.data(), item, to, rc.data(), rd.data(), item, comm);
  MPI_Type_free(&item);
}

}  // namespace ssdr
