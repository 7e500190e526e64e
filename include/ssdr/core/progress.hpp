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
/// seconds and only once the loop has run longer than 3 s. Not collective.
class Progress {
 public:
  Progress(std::string what, long total);
  void update(long done);

 private:
  std::string what_;
  long total_;
  double t0_, last_;
};

/// Seconds since the first call in this process (MPI_Wtime based).
double elapsed_since_start();

}  // namespace ssdr
