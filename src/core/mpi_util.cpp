#include "ssdr/core/mpi_util.hpp"

#include <climits>
#include <fstream>
#include <limits>
#include <string>

#include "ssdr/core/error.hpp"

namespace ssdr {

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

}  // namespace ssdr
