#pragma once
/// \file progress.hpp
/// What a user watching a long job sees: rank 0 prints each phase with its elapsed time,
/// and long loops report progress with an ETA. `--quiet` silences all of it.
#include <mpi.h>

#include <map>
#include <string>

namespace ssdr {

/// Global switch set by the CLI (--quiet). Rank-local flag; set it identically on all ranks.
void set_quiet(bool quiet);
bool quiet();

/// Prints "ssdr: <message>" on rank 0 of MPI_COMM_WORLD unless quiet. Not collective.
void say(const std::string& message);

/// Times a named phase: prints "[  12.3 s] phase ... done in 4.56 s" on rank 0 when it ends,
/// and adds the elapsed seconds to `timings[name]` when given. Each phase name is a PETSc log
/// stage (pushed for the phase's lifetime) once PETSc is initialized, so `-log_view` breaks
/// time, flops and messages down by read, knn_graph, propagation, scatter, eigensolve, ...
/// Not collective.
class Phase {
 public:
  /// Starts the phase `name` (printed on rank 0; its seconds added to `*timings` when given).
  Phase(std::string name, std::map<std::string, double>* timings = nullptr);
  ~Phase();
  /// Ends the phase now (idempotent); returns elapsed seconds.
  double stop();

 private:
  std::string name_;
  std::map<std::string, double>* timings_;
  double t0_;
  bool stopped_ = false;
};

/// Progress of a loop of `total` steps with an ETA, printed on rank 0 at most every few
/// seconds (progress_interval(), default 5) and only once the loop has run longer than
/// min(3 s, the interval). Not collective.
class Progress {
 public:
  /// A loop of `total` steps named `what`.
  Progress(std::string what, long total);
  /// "what: done/total (p%), ETA s".
  void update(long done);
  /// For a loop whose length is an estimate (an iteration run to a tolerance): `total` is
  /// the current estimate of the steps (≤ 0: unknown, no ETA) and `detail` says where the
  /// loop stands: "what done/~total: detail, ETA s".
  void update(long done, long total, const std::string& detail);

 private:
  bool due(long done);
  std::string what_;
  long total_;
  double t0_, last_;
};

/// The least time between two progress lines of one loop (seconds, default 5); the
/// environment's SSDR_PROGRESS_EVERY sets it at start-up (0: every step). Rank-local; set
/// it identically on all ranks. \throws nothing; set_progress_interval ignores a negative
/// or non-finite value (the CLI refuses it first).
void set_progress_interval(double seconds);
double progress_interval();

/// Seconds since the first call in this process (MPI_Wtime based).
double elapsed_since_start();

}  // namespace ssdr
