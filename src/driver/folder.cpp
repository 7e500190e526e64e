// The output folder of `ssdr experiment`: its checkpoint files, what it may hold before a run
// starts (no input under a name the run writes, no link, device or FIFO there, no files of
// something else), and the lock that keeps a second run out while one is running.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "experiment_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/io/output.hpp"

namespace ssdr::driver::detail {

namespace {

/// The files a summary writes (atomically, replacing them) in the output folder.
const char* const kSummaryFiles[] = {"results.json", "summary.csv", "summary.md"};

bool is_checkpoint_name(const std::string& n) {
  return n.rfind("results", 0) == 0 && n.size() > 6 && n.substr(n.size() - 6) == ".jsonl";
}

/// realpath(path), or "" when it does not resolve.
std::string resolved(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

/// What a job reads: the job file, every data set's file and its labels file (named as the
/// messages of io::check_outputs show them).
std::vector<io::NamedPath> job_inputs(const Job& job) {
  std::vector<io::NamedPath> in = {{"job file", job.file}};
  for (const DatasetSpec& d : job.datasets) {
    in.push_back({"data set '" + d.name + "' of " + job.file, d.path});
    if (!d.read.labels.empty()) in.push_back({"labels of data set '" + d.name + "' of " + job.file, d.read.labels});
  }
  return in;
}

/// The files a run of `groups` groups writes in `dir` (plots/ aside), and the checkpoint
/// files already there (every one is read, so none may be an input either).
std::vector<io::NamedPath> folder_outputs(const std::string& dir, int groups) {
  std::vector<std::string> names;
  for (const char* n : kSummaryFiles) names.push_back(dir + "/" + n);
  names.push_back(dir + "/" + kLockName);
  for (int g = 0; g < groups; ++g) names.push_back(checkpoint_path(dir, g, groups));
  for (const std::string& f : result_files(dir))
    if (std::find(names.begin(), names.end(), f) == names.end()) names.push_back(f);
  std::vector<io::NamedPath> out;
  for (const std::string& n : names) out.push_back({"experiment output", n});
  return out;
}

/// Rank 0: the folder exists (made when missing) and is a writable folder. "" when fine.
std::string make_folder(const std::string& dir) {
  if (dir.empty()) return "output folder: expected a folder name, got an empty string";
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return "output folder '" + dir + "' is not a folder (a file, device or FIFO of that name exists); expected a folder";
  const int err = make_dirs(dir);
  if (err != 0) return "output folder '" + dir + "' cannot be created: " + std::strerror(err);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "output folder '" + dir + "' cannot be written: " + std::strerror(errno);
  return "";
}

/// Rank 0, after io::check_outputs: no input inside plots/, and every name the run writes is
/// absent or a file of the kind the run expects (no link that would carry a write elsewhere,
/// no device or FIFO that would take it or block it), and a folder that holds summary files
/// holds a checkpoint or the lock too (it is an experiment's folder, not someone's data).
/// "" when fine.
std::string check_contents(const Job& job, int groups) {
  const std::string& dir = job.output;
  const std::string remedy = "; remove it or choose another --output folder";
  const std::string plots = dir + "/plots";
  const std::string real_plots = resolved(plots);
  if (!real_plots.empty())
    for (const io::NamedPath& in : job_inputs(job)) {
      const std::string r = resolved(in.path);
      if (!r.empty() && (r == real_plots || r.rfind(real_plots + "/", 0) == 0))
        return in.option + " " + in.path + " is inside " + plots +
               ", the folder whose plots every summary rewrites: an output never replaces an input";
    }
  struct stat st {};
  std::vector<std::string> fixed;
  for (const char* n : kSummaryFiles) fixed.push_back(n);
  fixed.push_back(kLockName);
  for (const std::string& n : fixed) {
    const std::string p = dir + "/" + n;
    if (::lstat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return "'" + p + "' is a link, folder, device or FIFO, and ssdr experiment writes a file of that name" + remedy;
  }
  const std::vector<std::string> checkpoints = result_files(dir);
  for (const std::string& p : checkpoints) {
    if (::lstat(p.c_str(), &st) != 0) continue;
    const std::string what = S_ISLNK(st.st_mode)    ? "it is a symbolic link"
                              : !S_ISREG(st.st_mode) ? "it is not a regular file (a folder, device or FIFO)"
                              : st.st_nlink > 1      ? "it has other hard links"
                                                     : "";
    if (!what.empty())
      return "checkpoint file '" + p + "' is refused: " + what + " (a checkpoint is read and appended to)" + remedy;
  }
  for (int g = 0; g < groups; ++g) {
    const std::string p = checkpoint_path(dir, g, groups);
    if (std::find(checkpoints.begin(), checkpoints.end(), p) == checkpoints.end()) continue;
    if (::access(p.c_str(), W_OK) != 0) return "checkpoint file '" + p + "' cannot be appended to: " + std::strerror(errno);
  }
  if (::lstat(plots.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return "'" + plots + "' is a link or not a folder, and the summary writes its plots there" + remedy;
    if (::access(plots.c_str(), W_OK | X_OK) != 0) return "'" + plots + "' cannot be written: " + std::strerror(errno);
    if (DIR* d = ::opendir(plots.c_str())) {
      std::string bad;
      while (dirent* e = ::readdir(d)) {
        const std::string p = plots + "/" + e->d_name;
        if (::lstat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
          bad = p;
          break;
        }
      }
      ::closedir(d);
      if (!bad.empty())
        return "'" + bad + "' is a link, device or FIFO in the plots folder, whose files the summary and gnuplot replace" +
               remedy;
    }
  }
  if (checkpoints.empty() && !exists(dir + "/" + kLockName)) {
    fixed.pop_back();  // the lock
    fixed.push_back("plots");
    for (const std::string& n : fixed)
      if (exists(dir + "/" + n))
        return "output folder '" + dir + "' holds " + n +
               " but no checkpoint (results*.jsonl) nor experiment.lock: it is not the folder of an ssdr experiment, "
               "and the run would replace that " +
               (n == "plots" ? "folder's files" : "file") + "; choose an empty or new --output folder";
  }
  return "";
}

}  // namespace

int make_dirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  int err = 0;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) err = errno;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return 0;
  return err != 0 ? err : ENOTDIR;
}

std::string checkpoint_path(const std::string& dir, int group, int groups) {
  return dir + "/results.g" + std::to_string(group) + "of" + std::to_string(groups) + ".jsonl";
}

std::vector<std::string> result_files(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (is_checkpoint_name(e->d_name)) files.push_back(dir + "/" + e->d_name);
    ::closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

void prepare_output_folder(const Job& job, int groups, MPI_Comm world) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  std::string msg;
  if (rank == 0) msg = make_folder(job.output);
  SSDR_CHECK_COLLECTIVE(world, msg.empty(), msg);
  // An input under a name the run writes (the data set saved as summary.csv, the job file as
  // summary.md, a checkpoint): by device and inode, so any path to it counts.
  io::check_outputs(rank == 0 ? folder_outputs(job.output, groups) : std::vector<io::NamedPath>{}, job_inputs(job),
                    world);
  if (rank == 0) msg = check_contents(job, groups);
  SSDR_CHECK_COLLECTIVE(world, msg.empty(), msg);
}

FolderLock::FolderLock(const std::string& dir, MPI_Comm world) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  std::string msg;
  if (rank == 0) {
    const std::string path = dir + "/" + kLockName;
    // O_NOFOLLOW and O_NONBLOCK: a link is refused, a FIFO never waited on; O_CLOEXEC: gnuplot
    // (spawned by the summary) must not inherit the lock and hold it after this process ends.
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno == EACCES)  // another user's lock file: flock works on a read-only descriptor
      fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    if (fd_ < 0) {
      msg = "cannot open the lock file '" + path + "': " +
            (errno == ELOOP ? std::string("it is a symbolic link") : std::string(std::strerror(errno)));
    } else if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      msg = "the lock file '" + path + "' is not a regular file; remove it or choose another --output folder";
    } else if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        // The holder wrote "pid P on host H" (it may not have yet: then it is unnamed).
        char buf[256] = {0};
        const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
        std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
        holder.erase(std::remove_if(holder.begin(), holder.end(),
                                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }),
                     holder.end());
        msg = "output folder '" + dir + "' is in use by another ssdr experiment (" +
              (holder.empty() ? std::string("its process") : holder) + " holds " + path +
              "); wait for it to end or choose another --output folder";
      } else if (err == ENOLCK || err == ENOSYS || err == EOPNOTSUPP || err == EINVAL) {
        // A file system without flock (Lustre mounted without -o flock, some NFS setups):
        // the run goes on, unprotected, and says so.
        std::fprintf(stderr, "ssdr: warning: cannot lock '%s' (%s): a second run into this folder would not be refused\n",
                     path.c_str(), std::strerror(err));
        std::fflush(stderr);
      } else {
        msg = "cannot lock '" + path + "': " + std::strerror(err);
      }
    } else {
      char host[256] = {0};
      if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
      const std::string text = "pid " + std::to_string(static_cast<long>(::getpid())) + " on host " + host + "\n";
      if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) < 0) {
        // only the refusal message of a second run would miss the holder's name
      }
    }
    if (!msg.empty() && fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  SSDR_CHECK_COLLECTIVE(world, msg.empty(), msg);
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (see kLockName)
}

}  // namespace ssdr::driver::detail
