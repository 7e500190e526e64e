#include "ssdr/data/split.hpp"

#include <sys/stat.h>

#include <cstdio>

#include <algorithm>
#include <cmath>

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::data {

namespace {
/// A double as the user would write it ("nan", "-0.1").
std::string fmt_value(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}
}  // namespace

uint64_t split_key(uint64_t seed, int64_t i) {
  auto mix = [](uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  return mix(static_cast<uint64_t>(i) + mix(seed));
}

namespace {

/// For every selection s (class cls[s], target t[s] ≥ 1), the t[s]-th smallest key among the
/// samples of that class on all ranks: a radix selection on the keys' bytes, most significant
/// first, one MPI_Allreduce of S × 256 counts per byte (exact integer sums, so the same on any
/// rank count). Keys are distinct (split_key is a bijection), so exactly t[s] samples have a
/// key ≤ the result. A selection of a whole class (t[s] = n_k[s]) is every key (UINT64_MAX)
/// without a round. The selections go in chunks of at most kChunk (8 MiB of counts per
/// round), so many classes never ask for more memory or a larger count than that. Collective.
std::vector<uint64_t> select_keys(const std::vector<int>& labels, int64_t row_start, uint64_t seed,
                                  const std::vector<int>& cls, const std::vector<int64_t>& t,
                                  const std::vector<int64_t>& nk, int classes, MPI_Comm comm) {
  constexpr size_t kChunk = 4096;
  const size_t S = cls.size();
  std::vector<uint64_t> prefix(S, ~uint64_t{0});
  std::vector<size_t> todo;  // the selections that need rounds
  for (size_t s = 0; s < S; ++s)
    if (t[s] < nk[static_cast<size_t>(cls[s])]) todo.push_back(s);
  // The selections of each class within the current chunk (at most two per class).
  std::vector<std::vector<size_t>> of(static_cast<size_t>(classes));
  std::vector<int64_t> hist;
  for (size_t c0 = 0; c0 < todo.size(); c0 += kChunk) {
    const size_t C = std::min(kChunk, todo.size() - c0);
    for (auto& v : of) v.clear();
    std::vector<int64_t> need(C);
    for (size_t j = 0; j < C; ++j) {
      const size_t s = todo[c0 + j];
      of[static_cast<size_t>(cls[s])].push_back(j);
      prefix[s] = 0;
      need[j] = t[s];
    }
    hist.assign(C * 256, 0);
    for (int byte = 7; byte >= 0; --byte) {
      const int shift = 8 * byte;
      std::fill(hist.begin(), hist.end(), 0);
      for (size_t i = 0; i < labels.size(); ++i) {
        const int k = labels[i];
        if (k < 0 || k >= classes) continue;
        const auto& sel = of[static_cast<size_t>(k)];
        if (sel.empty()) continue;
        const uint64_t key = split_key(seed, row_start + static_cast<int64_t>(i));
        for (size_t j : sel) {
          const uint64_t p = prefix[todo[c0 + j]];
          // Only keys that agree with the prefix found so far (the bytes above this one).
          if (byte < 7 && (key >> (shift + 8)) != (p >> (shift + 8))) continue;
          ++hist[j * 256 + ((key >> shift) & 0xFF)];
        }
      }
      MPI_Allreduce(MPI_IN_PLACE, hist.data(), static_cast<int>(hist.size()), MPI_INT64_T, MPI_SUM, comm);
      for (size_t j = 0; j < C; ++j) {
        uint64_t b = 0;
        for (; b < 255; ++b) {
          const int64_t h = hist[j * 256 + b];
          if (need[j] <= h) break;
          need[j] -= h;
        }
        prefix[todo[c0 + j]] |= b << shift;
      }
    }
  }
  return prefix;
}

}  // namespace

std::string class_text(int k, const std::vector<std::string>& names) {
  if (k < 0 || static_cast<size_t>(k) >= names.size()) return "class " + std::to_string(k);
  const std::string& name = names[static_cast<size_t>(k)];
  const bool integer = !name.empty() && name.find_first_not_of("-0123456789") == std::string::npos;
  return integer ? "class " + name : "class '" + name + "'";
}

namespace {

}  // namespace

std::vector<Role> make_split(const std::vector<int>& labels, int64_t row_start, int classes, const SplitSpec& spec,
                             MPI_Comm comm, const std::vector<std::string>& names) {
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
  // n_k over every rank.
  std::vector<int64_t> nk(static_cast<size_t>(classes), 0);
  bool in_range = true;
  for (int l : labels) {
    if (l < -1 || l >= classes) in_range = false;
    else if (l >= 0) ++nk[static_cast<size_t>(l)];
  }
  SSDR_CHECK_COLLECTIVE(comm, in_range, "make_split: labels must be in 0.." + std::to_string(classes - 1) + " or -1");
  MPI_Allreduce(MPI_IN_PLACE, nk.data(), classes, MPI_INT64_T, MPI_SUM, comm);
  std::vector<int> cls;
  std::vector<int64_t> target;
  std::vector<int64_t> transductive_of(static_cast<size_t>(classes));
  for (int k = 0; k < classes; ++k) {
    const int64_t n_k = nk[static_cast<size_t>(k)];
    int64_t transductive = n_k;
    if (has_fraction)
      transductive = static_cast<int64_t>(std::llround(spec.transductive_fraction * static_cast<double>(n_k)));
    else if (has_unlabeled)
      transductive = spec.labeled_per_class + spec.unlabeled_per_class;
    SSDR_REQUIRE(transductive <= n_k,
               class_text(k, names) + " has " + std::to_string(n_k) + " samples, fewer than the " +
                   std::to_string(transductive) + " requested by --labeled-per-class + --unlabeled-per-class");
    SSDR_REQUIRE(spec.labeled_per_class <= transductive,
               class_text(k, names) + " has only " + std::to_string(transductive) +
                   " transductive samples, fewer than --labeled-per-class " +
                   std::to_string(spec.labeled_per_class));
    transductive_of[static_cast<size_t>(k)] = transductive;
    cls.push_back(k);
    target.push_back(spec.labeled_per_class);
    cls.push_back(k);
    target.push_back(transductive);
  }
  const std::vector<uint64_t> thr = select_keys(labels, row_start, spec.seed, cls, target, nk, classes, comm);
  std::vector<Role> roles(labels.size(), Role::unseen);
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0) {  // a row without a label is always transductive
      roles[i] = Role::unlabeled;
      continue;
    }
    const size_t k = static_cast<size_t>(labels[i]);
    const uint64_t key = split_key(spec.seed, row_start + static_cast<int64_t>(i));
    if (key <= thr[2 * k]) roles[i] = Role::labeled;
    else if (key <= thr[2 * k + 1]) roles[i] = Role::unlabeled;
  }
  return roles;
}

std::vector<Role> read_split(const std::string& path, int64_t row_start, int64_t n_local, int64_t n, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  bool ok = true;
  std::string message;
  if (rank == 0) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      ok = false;
      message = "cannot open split file '" + path + "'";
    } else if (!S_ISREG(st.st_mode)) {  // a FIFO without a writer would block forever
      ok = false;
      message = "--split " + path + ": not a regular file; expected one role per line";
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  const io::LineCodes lines = io::read_line_codes(
      path, "'labeled', 'unlabeled' or 'unseen'",
      [](std::string_view w) -> char {
        if (w == "labeled" || w == "L") return 'L';
        if (w == "unlabeled" || w == "U") return 'U';
        if (w == "unseen" || w == "T") return 'T';
        return 0;
      },
      comm);
  SSDR_CHECK_COLLECTIVE(comm, lines.total == n,
                        path + ": has " + std::to_string(lines.total) + " roles, expected one per sample (" +
                            std::to_string(n) + ")");
  const std::vector<char> mine = redistribute_rows(lines.codes, lines.first, row_start, n_local, comm);
  std::vector<Role> roles(mine.size());
  for (size_t i = 0; i < mine.size(); ++i) roles[i] = static_cast<Role>(mine[i]);
  return roles;
}

void validate_split(const std::vector<int>& labels, int classes, const std::vector<Role>& roles, MPI_Comm comm,
                    const std::vector<std::string>& names) {
  SSDR_CHECK_COLLECTIVE(comm, labels.size() == roles.size(),
                        "split has " + std::to_string(roles.size()) + " roles for " + std::to_string(labels.size()) +
                            " samples on this rank");
  // A row the split calls labeled must have a label (a split file over partly labeled data).
  int64_t first = -1, row_start = 0, local = static_cast<int64_t>(labels.size());
  MPI_Exscan(&local, &row_start, 1, MPI_INT64_T, MPI_SUM, comm);
  if (comm_rank(comm) == 0) row_start = 0;
  for (size_t i = 0; i < labels.size() && first < 0; ++i)
    if (roles[i] == Role::labeled && labels[i] < 0) first = row_start + static_cast<int64_t>(i);
  SSDR_CHECK_COLLECTIVE(comm, first < 0,
                        "split: sample " + std::to_string(first) +
                            " is labeled in the split but has no label in the data (an unlabeled marker); expected "
                            "'unlabeled' or 'unseen' for it");
  std::vector<int64_t> labeled(static_cast<size_t>(classes), 0);
  for (size_t i = 0; i < labels.size(); ++i)
    if (roles[i] == Role::labeled && labels[i] >= 0 && labels[i] < classes) ++labeled[static_cast<size_t>(labels[i])];
  MPI_Allreduce(MPI_IN_PLACE, labeled.data(), classes, MPI_INT64_T, MPI_SUM, comm);
  for (int k = 0; k < classes; ++k)
    SSDR_REQUIRE(labeled[static_cast<size_t>(k)] > 0,
               class_text(k, names) + " has no labeled sample; every class needs at least one");
  SSDR_REQUIRE(classes >= 2, "the labeled rows hold " + std::to_string(classes) + " class" +
                                 (classes == 1 ? " (" + class_text(0, names) + ")" : std::string("es")) +
                                 "; expected labeled rows of at least two classes");
}

std::vector<Role> roles_from_labels(const std::vector<int>& labels, MPI_Comm comm) {
  std::vector<Role> roles(labels.size(), Role::labeled);
  int64_t unlabeled = 0;
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0) {
      roles[i] = Role::unlabeled;
      ++unlabeled;
    }
  MPI_Allreduce(MPI_IN_PLACE, &unlabeled, 1, MPI_INT64_T, MPI_SUM, comm);
  SSDR_REQUIRE(unlabeled > 0,
               "every row of the data is labeled, so there is nothing to propagate to: mark the unlabeled rows in the "
               "label field (empty, ?, NA or -1; --unlabeled-marker), or draw a split with --labeled-per-class P or "
               "--split FILE");
  return roles;
}

SplitCounts count_roles(const std::vector<Role>& roles, MPI_Comm comm) {
  int64_t c[3] = {0, 0, 0};
  for (Role r : roles) {
    if (r == Role::labeled) ++c[0];
    else if (r == Role::unlabeled) ++c[1];
    else ++c[2];
  }
  MPI_Allreduce(MPI_IN_PLACE, c, 3, MPI_INT64_T, MPI_SUM, comm);
  return SplitCounts{c[0], c[1], c[2]};
}

}  // namespace ssdr::data
