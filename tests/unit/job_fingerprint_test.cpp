// The experiment's fingerprint (src/driver/job.cpp): what makes a checkpoint another job's.
// It must change with the data files' contents as stat sees them (size, modification time)
// and must not change with what a copy to another machine changes (inodes, the folder's own
// times), so a checkpoint moved with the data resumes there.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "driver/job_internal.hpp"

namespace {

namespace fs = std::filesystem;
using ssdr::driver::detail::Job;
using ssdr::driver::detail::job_fingerprint;

void write_file(const fs::path& path, const std::string& text, std::time_t mtime) {
  std::ofstream(path) << text;
  struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

class JobFingerprint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ssdr_fingerprint_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    write_file(dir_ / "data" / "train.idx", "abc", 1591347949);
    write_file(dir_ / "data" / "labels.idx", "0", 1591347949);
    job_.seed = 1;
    job_.protocol = "transductive-fraction";
    job_.datasets.push_back({"toy", (dir_ / "data").string(), ssdr::io::Format::idx, {}});
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  Job job_;
};

TEST_F(JobFingerprint, IsTheSameForACopyOfTheDataWithItsTimesUnderTheSamePath) {
  const std::string before = job_fingerprint(job_);
  // What a fresh machine's install changes: every inode and the folder's own times.
  fs::rename(dir_ / "data", dir_ / "old");
  fs::create_directories(dir_ / "data");
  for (const char* name : {"train.idx", "labels.idx"}) {
    fs::copy_file(dir_ / "old" / name, dir_ / "data" / name);
    struct timespec times[2] = {{1591347949, 0}, {1591347949, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ / "data" / name).c_str(), times, 0), 0);
  }
  fs::create_directories(dir_ / "data" / "plots");  // not a regular file: not part of the data
  EXPECT_EQ(job_fingerprint(job_), before);
}

TEST_F(JobFingerprint, ChangesWithAFilesSizeOrTimeOrANewFileInTheFolder) {
  const std::string before = job_fingerprint(job_);
  write_file(dir_ / "data" / "train.idx", "abcd", 1591347949);
  const std::string resized = job_fingerprint(job_);
  EXPECT_NE(resized, before);
  write_file(dir_ / "data" / "train.idx", "abcd", 1591347950);
  const std::string touched = job_fingerprint(job_);
  EXPECT_NE(touched, resized);
  write_file(dir_ / "data" / "test.idx", "", 1591347950);
  EXPECT_NE(job_fingerprint(job_), touched);
}

TEST_F(JobFingerprint, ChangesWithTheSeedAndWithASingleFilesTime) {
  const std::string before = job_fingerprint(job_);
  job_.seed = 2;
  EXPECT_NE(job_fingerprint(job_), before);
  job_.datasets[0].path = (dir_ / "data" / "train.idx").string();
  const std::string file = job_fingerprint(job_);
  write_file(dir_ / "data" / "train.idx", "abc", 1591347950);
  EXPECT_NE(job_fingerprint(job_), file);
}

}  // namespace
