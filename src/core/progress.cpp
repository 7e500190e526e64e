#include "ssdr/core/progress.hpp"

#include <cstdio>

namespace ssdr {

namespace {
bool g_quiet = false;
double g_t0 = -1;
bool is_root() {
  int init = 0;
  MPI_Initialized(&init);
  if (!init) return true;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}
}  // namespace

void set_quiet(bool q) { g_quiet = q; }
bool quiet() { return g_quiet; }

double elapsed_since_start() {
  const double now = MPI_Wtime();
  if (g_t0 < 0) g_t0 = now;
  return now - g_t0;
}

void say(const std::string& message) {
  if (g_quiet || !is_root()) return;
  std::fprintf(stderr, "[%8.1f s] %s\n", elapsed_since_start(), message.c_str());
  std::fflush(stderr);
}

Phase::Phase(std::string name, std::map<std::string, double>* timings)
    : name_(std::move(name)), timings_(timings), t0_(MPI_Wtime()) {
  say(name_ + " ...");
}

Phase::~Phase() { stop(); }

double Phase::stop() {
  const double dt = MPI_Wtime() - t0_;
  if (stopped_) return dt;
  stopped_ = true;
  if (timings_) (*timings_)[name_] += dt;
  char buf[64];
  std::snprintf(buf, sizeof buf, " done in %.2f s", dt);
  say(name_ + buf);
  return dt;
}

Progress::Progress(std::string what, long total)
    : what_(std::move(what)), total_(total), t0_(MPI_Wtime()), last_(t0_) {}

void Progress::update(long done) {
  const double now = MPI_Wtime();
  if (now - t0_ < 3.0 || now - last_ < 5.0 || done <= 0) return;
  last_ = now;
  const double rate = (now - t0_) / static_cast<double>(done);
  const double eta = rate * static_cast<double>(total_ - done);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: %ld/%ld (%.0f%%), ETA %.0f s", what_.c_str(), done, total_,
                100.0 * static_cast<double>(done) / static_cast<double>(total_), eta);
  say(buf);
}

}  // namespace ssdr
