#pragma once
/// \file experiment.hpp
/// `ssdr experiment JOB.yaml`: the papers' protocols over data sets × methods × labeled
/// counts × parameter grids × random splits, run concurrently on sub-communicators,
/// checkpointed after every configuration, summarized as tables and plots.
#include <mpi.h>

#include <string>

namespace ssdr::driver {

/// `ssdr experiment`: the job file, its output folder and how the run reports progress.
struct ExperimentOptions {
  std::string job_file;      ///< YAML job (see jobs/experiments/README.md)
  int groups = 1;            ///< G: MPI_COMM_WORLD is split into G groups of ranks
  std::string output;        ///< overrides the job's `output` directory when non-empty
};

/// Runs (or resumes) a job. Collective over `world`. Each group takes whole blocks of
/// configurations (one block = data set × labeled count × split, so every method of a
/// block sees the same split); every finished configuration is appended as one JSON line
/// (single write + fsync) to <output>/results.g<g>of<G>.jsonl, and configurations found in
/// any results*.jsonl of <output> are skipped, so a killed run loses at most the
/// configurations in flight. At the end rank 0 writes results.json, summary.csv,
/// summary.md and gnuplot plots (PNG and SVG) atomically; they cover exactly the job's
/// current configurations (results of configurations an edited job no longer has stay in
/// the checkpoint files, unreported, and their plots are removed).
/// Before anything runs the output folder is checked (a writable folder; no input of the job
/// under a name the run writes or in plots/; no link, device or FIFO under those names; no
/// summary files without a checkpoint or lock) and locked: rank 0 holds an flock on
/// <output>/experiment.lock for the whole run, and a second run into the folder is refused.
/// SIGUSR1 or SIGTERM (a batch system's warning before the time limit) stops it cleanly: the
/// configuration in flight finishes and is checkpointed, no other starts, the summary covers
/// what is done, and the return value is 128 + the signal number (138 for SIGUSR1).
/// \throws ssdr::Error (collectively) naming the job file and key for invalid jobs, the
/// folder for a folder in use or unfit, the file and the input for an input the run would
/// replace.
int run_experiment(const ExperimentOptions& options, MPI_Comm world);

}  // namespace ssdr::driver
