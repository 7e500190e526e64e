#include "ssdr/core/progress.hpp"

#include <petscsys.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ssdr {

namespace {
/// Hands the heap's free pages back to the system (glibc's malloc_trim also releases whole
/// free pages inside the heap, not only its top): the resident size between phases is then
/// what is live, not the largest earlier phase's small-block debris. Not collective.
void release_free_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}
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

namespace {

/// The PETSc log stage of a phase name (registered on first use; -1 when PETSc is not
/// initialized). Stages make -log_view break time, flops and messages down by ssdr phase.
int stage_of(const std::string& name) {
  PetscBool init = PETSC_FALSE;
  if (PetscInitialized(&init) != 0 || !init) return -1;
  static std::map<std::string, PetscLogStage> stages;
  auto it = stages.find(name);
  if (it != stages.end()) return static_cast<int>(it->second);
  PetscLogStage s = -1;
  std::string label = name;
  for (char& c : label)
    if (c == ' ') c = '_';
  if (PetscLogStageRegister(label.c_str(), &s) != 0) return -1;
  stages.emplace(name, s);
  return static_cast<int>(s);
}

/// The phases whose stage is pushed, innermost last, with whether they have ended.
std::vector<std::pair<const void*, bool>>& pushed() {
  static std::vector<std::pair<const void*, bool>> v;
  return v;
}

}  // namespace

Phase::Phase(std::string name, std::map<std::string, double>* timings)
    : name_(std::move(name)), timings_(timings), t0_(MPI_Wtime()) {
  release_free_heap();
  say(name_ + " ...");
  const int stage = stage_of(name_);
  if (stage >= 0 && PetscLogStagePush(static_cast<PetscLogStage>(stage)) == 0) pushed().emplace_back(this, false);
}

Phase::~Phase() { stop(); }

double Phase::stop() {
  const double dt = MPI_Wtime() - t0_;
  if (stopped_) return dt;
  stopped_ = true;
  // PETSc's stages form a stack: a phase that ends before one it encloses is popped when
  // that one ends.
  for (auto& p : pushed())
    if (p.first == this) p.second = true;
  while (!pushed().empty() && pushed().back().second) {
    PetscLogStagePop();
    pushed().pop_back();
  }
  if (timings_) (*timings_)[name_] += dt;
  char buf[64];
  std::snprintf(buf, sizeof buf, " done in %.2f s", dt);
  say(name_ + buf);
  return dt;
}

namespace {
double g_interval = 5.0;
}  // namespace

void set_progress_interval(double seconds) {
  if (std::isfinite(seconds) && seconds >= 0) g_interval = seconds;
}
double progress_interval() { return g_interval; }

Progress::Progress(std::string what, long total)
    : what_(std::move(what)), total_(total), t0_(MPI_Wtime()), last_(t0_) {}

bool Progress::due(long done) {
  if (g_quiet || done <= 0) return false;
  const double now = MPI_Wtime();
  if (now - t0_ < std::min(3.0, g_interval) || now - last_ < g_interval) return false;
  last_ = now;
  return true;
}

void Progress::update(long done) {
  if (!due(done)) return;
  const double rate = (MPI_Wtime() - t0_) / static_cast<double>(done);
  const double eta = rate * static_cast<double>(total_ - done);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: %ld/%ld (%.0f%%), ETA %.0f s", what_.c_str(), done, total_,
                100.0 * static_cast<double>(done) / static_cast<double>(total_), eta);
  say(buf);
}

void Progress::update(long done, long total, const std::string& detail) {
  if (!due(done)) return;
  std::string line = what_ + " " + std::to_string(done);
  if (total > 0) line += "/~" + std::to_string(total);
  if (!detail.empty()) line += ": " + detail;
  if (total > 0) {
    const double eta = (MPI_Wtime() - t0_) / static_cast<double>(done) * static_cast<double>(std::max(total - done, 0L));
    char buf[64];
    std::snprintf(buf, sizeof buf, ", ETA %.0f s", eta);
    line += buf;
  }
  say(line);
}

}  // namespace ssdr
