#pragma once
/// \file experiment_internal.hpp
/// Private to src/driver (not installed): what the run of `ssdr experiment`
/// (experiment.cpp), its output folder (folder.cpp) and its summaries (summary.cpp) share.
#include <mpi.h>

#include <string>
#include <vector>

#include "job_internal.hpp"

namespace ssdr::driver::detail {

// ---------------------------------------------------------------------------------------
// The output folder (folder.cpp).

/// The lock file of an output folder. It is never removed: a process that removed it while
/// a second one waited on the old file would let a third lock a new one beside it.
inline constexpr const char* kLockName = "experiment.lock";

/// Creates `path` and its missing parents (mkdir -p). Returns 0 when `path` is a folder at
/// the end, else the errno of the failed step (ENOTDIR: a file of that name). Local.
int make_dirs(const std::string& path);

/// The checkpoint file of group `group` of `groups` in `dir`: results.g<group>of<groups>.jsonl.
std::string checkpoint_path(const std::string& dir, int group, int groups);

/// Every checkpoint file of `dir` (results*.jsonl, of whatever type), sorted. Local.
std::vector<std::string> result_files(const std::string& dir);

/// Makes job.output (mkdir -p) and checks, before anything runs, that a run of `groups`
/// groups destroys nothing there: the output folder is a writable folder (not a file or
/// device); no input of the job (job file, data and labels files) is a file the run writes
/// (results.json, summary.csv, summary.md, experiment.lock, a checkpoint; io::check_outputs,
/// by device and inode) or lies in plots/; those names are absent or regular files of their
/// own (no link, device, FIFO or second hard link), plots/ is a folder holding no link,
/// device or FIFO; and a folder holding summary files or plots/ also holds a checkpoint or
/// the lock (else it is not an experiment's folder). Rank 0 checks; collective over world.
/// \throws ssdr::Error (collectively) naming the folder, or the file and the input.
void prepare_output_folder(const Job& job, int groups, MPI_Comm world);

/// The lock of an output folder, held by rank 0 of `world` for the object's lifetime: an
/// exclusive non-blocking flock on <dir>/experiment.lock (opened O_CLOEXEC, so no child such
/// as gnuplot inherits it), released when the object is destroyed or the process dies. The
/// file holds "pid P on host H" of the holder. On a file system without flock the run goes
/// on with a warning. Collective over world (the constructor).
class FolderLock {
 public:
  /// \throws ssdr::Error (collectively over world) naming the folder and the holder when
  /// another process holds the lock, or the lock file when it cannot be opened or is not a
  /// regular file.
  FolderLock(const std::string& dir, MPI_Comm world);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// ---------------------------------------------------------------------------------------
// Summaries (summary.cpp).

/// A number for tables and progress lines with printf format `f`; NaN → "-".
/// Defined in summary.cpp.
std::string fmt(double v, const char* f = "%.4f");

/// Writes results.json, summary.csv, summary.md and the plots (PNG and SVG, through
/// gnuplot) of `results` into `out_dir`, then prints the table. Rank 0 of the world only.
/// Defined in summary.cpp.
void summarize(const Job& job, const std::string& out_dir, const std::vector<json>& results, double sweep_seconds,
               int groups, int ranks);

}  // namespace ssdr::driver::detail
