#include "ssdr/data/split.hpp"

#include <sys/stat.h>

#include <cstdio>

#include <cmath>
#include <fstream>
#include <random>

#include "ssdr/core/error.hpp"

namespace ssdr::data {

namespace {
/// A double as the user would write it ("nan", "-0.1").
std::string fmt_value(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}
}  // namespace

std::vector<Role> make_split(const std::vector<int>& labels, int classes, const SplitSpec& spec) {
  SSDR_REQUIRE(spec.labeled_per_class >= 1,
             "--labeled-per-class must be at least 1, got " + std::to_string(spec.labeled_per_class));
  SSDR_REQUIRE(classes >= 2, "the data has " + std::to_string(classes) +
                                 " class(es): labels 0..c-1 with at least 2 classes are needed to learn a discriminant projection");
  // −1 exactly means "not given"; any other value must be valid (NaN, −0.1 or −5 used to
  // read as "not given" and were silently ignored).
  const bool has_fraction = spec.transductive_fraction != -1.0;
  const bool has_unlabeled = spec.unlabeled_per_class != -1;
  SSDR_REQUIRE(!(has_unlabeled && has_fraction),
             "--unlabeled-per-class and --transductive-fraction are mutually exclusive");
  if (has_fraction)
    SSDR_REQUIRE(spec.transductive_fraction > 0 && spec.transductive_fraction <= 1,
               "--transductive-fraction must be in (0, 1], got " + fmt_value(spec.transductive_fraction));
  if (has_unlabeled)
    SSDR_REQUIRE(spec.unlabeled_per_class >= 0,
               "--unlabeled-per-class must be at least 0, got " + std::to_string(spec.unlabeled_per_class));
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(classes));
  for (size_t i = 0; i < labels.size(); ++i) members[static_cast<size_t>(labels[i])].push_back(static_cast<int64_t>(i));
  std::vector<Role> roles(labels.size(), Role::unseen);
  std::mt19937_64 rng(spec.seed);
  for (int k = 0; k < classes; ++k) {
    auto& idx = members[static_cast<size_t>(k)];
    const int64_t nk = static_cast<int64_t>(idx.size());
    // Fisher–Yates with explicit arithmetic so the split is the same with any libstdc++.
    for (int64_t i = nk - 1; i > 0; --i) {
      const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
      std::swap(idx[static_cast<size_t>(i)], idx[static_cast<size_t>(j)]);
    }
    int64_t transductive = nk;
    if (has_fraction)
      transductive = static_cast<int64_t>(std::llround(spec.transductive_fraction * static_cast<double>(nk)));
    else if (has_unlabeled)
      transductive = spec.labeled_per_class + spec.unlabeled_per_class;
    SSDR_REQUIRE(transductive <= nk,
               "class " + std::to_string(k) + " has " + std::to_string(nk) + " samples, fewer than the " +
                   std::to_string(transductive) + " requested by --labeled-per-class + --unlabeled-per-class");
    SSDR_REQUIRE(spec.labeled_per_class <= transductive,
               "class " + std::to_string(k) + " has only " + std::to_string(transductive) +
                   " transductive samples, fewer than --labeled-per-class " +
                   std::to_string(spec.labeled_per_class));
    for (int64_t i = 0; i < transductive; ++i)
      roles[static_cast<size_t>(idx[static_cast<size_t>(i)])] =
          i < spec.labeled_per_class ? Role::labeled : Role::unlabeled;
  }
  return roles;
}

std::vector<Role> read_split(const std::string& path, int64_t n, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<char> buf(static_cast<size_t>(n), 'T');
  bool ok = true;
  std::string message;
  if (rank == 0) {
    struct stat st {};
    const bool irregular = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
    std::ifstream in;
    if (!irregular) in.open(path);  // a FIFO without a writer would block here forever
    if (irregular) {
      ok = false;
      message = "--split " + path + ": not a regular file; expected one role per line";
    } else if (!in) {
      ok = false;
      message = "cannot open split file '" + path + "'";
    }
    std::string line;
    int64_t lineno = 0, count = 0;
    while (ok && std::getline(in, line)) {
      ++lineno;
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      size_t b = line.find_first_not_of(" \t");
      if (b == std::string::npos) continue;
      line = line.substr(b);
      char r;
      if (line == "labeled" || line == "L") r = 'L';
      else if (line == "unlabeled" || line == "U") r = 'U';
      else if (line == "unseen" || line == "T") r = 'T';
      else {
        ok = false;
        message = path + ":" + std::to_string(lineno) + ": expected 'labeled', 'unlabeled' or 'unseen', found '" + line + "'";
        break;
      }
      if (count >= n) {
        ok = false;
        message = path + ":" + std::to_string(lineno) + ": more lines than the " + std::to_string(n) + " samples of the data";
        break;
      }
      buf[static_cast<size_t>(count++)] = r;
    }
    if (ok && count != n) {
      ok = false;
      message = path + ": has " + std::to_string(count) + " roles, expected one per sample (" + std::to_string(n) + ")";
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  MPI_Bcast(buf.data(), static_cast<int>(n), MPI_CHAR, 0, comm);
  std::vector<Role> roles(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) roles[static_cast<size_t>(i)] = static_cast<Role>(buf[static_cast<size_t>(i)]);
  return roles;
}

void validate_split(const std::vector<int>& labels, int classes, const std::vector<Role>& roles) {
  SSDR_REQUIRE(labels.size() == roles.size(), "split has " + std::to_string(roles.size()) +
                                                " roles for " + std::to_string(labels.size()) + " samples");
  std::vector<int64_t> labeled(static_cast<size_t>(classes), 0);
  for (size_t i = 0; i < labels.size(); ++i)
    if (roles[i] == Role::labeled) ++labeled[static_cast<size_t>(labels[i])];
  for (int k = 0; k < classes; ++k)
    SSDR_REQUIRE(labeled[static_cast<size_t>(k)] > 0,
               "class " + std::to_string(k) + " has no labeled sample; every class needs at least one");
}

SplitCounts count_roles(const std::vector<Role>& roles) {
  SplitCounts c;
  for (Role r : roles) {
    if (r == Role::labeled) ++c.labeled;
    else if (r == Role::unlabeled) ++c.unlabeled;
    else ++c.unseen;
  }
  return c;
}

}  // namespace ssdr::data
