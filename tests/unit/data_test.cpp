// Splits, preprocessing (scaling, centering, PCA) and the 1-NN evaluation.
#include <gtest/gtest.h>

#include <limits>

#include <random>

#include <cmath>
#include <fstream>
#include <algorithm>
#include <array>
#include <map>

#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "data/preprocess_internal.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

/// The split's definition computed serially and naively (the reference of make_split): per
/// class, its samples sorted by split_key(seed, i); the first p labeled, the first t
/// transductive (t = round(F·n_k) or p + q).
std::vector<data::Role> naive_split(const std::vector<int>& labels, int classes, const data::SplitSpec& spec) {
  std::vector<data::Role> roles(labels.size(), data::Role::unseen);
  for (int k = 0; k < classes; ++k) {
    std::vector<std::pair<uint64_t, size_t>> members;
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == k) members.emplace_back(data::split_key(spec.seed, static_cast<int64_t>(i)), i);
    std::sort(members.begin(), members.end());
    const int64_t nk = static_cast<int64_t>(members.size());
    const int64_t t = spec.transductive_fraction > 0
                          ? std::llround(spec.transductive_fraction * static_cast<double>(nk))
                          : spec.unlabeled_per_class >= 0 ? spec.labeled_per_class + spec.unlabeled_per_class : nk;
    for (int64_t j = 0; j < t; ++j)
      roles[members[static_cast<size_t>(j)].second] = j < spec.labeled_per_class ? data::Role::labeled : data::Role::unlabeled;
  }
  return roles;
}

/// make_split on this rank's block of the replicated labels, gathered back to n roles.
std::vector<data::Role> distributed_split(const std::vector<int>& labels, int classes, const data::SplitSpec& spec,
                                          MPI_Comm comm) {
  const Layout l = block_layout(static_cast<int64_t>(labels.size()), comm);
  const std::vector<int> mine(labels.begin() + l.start, labels.begin() + l.start + l.n_local);
  const std::vector<data::Role> roles = data::make_split(mine, l.start, classes, spec, comm);
  std::vector<char> bytes(roles.size());
  for (size_t i = 0; i < roles.size(); ++i) bytes[i] = static_cast<char>(roles[i]);
  const std::vector<char> all = allgatherv(bytes.data(), static_cast<int64_t>(bytes.size()), comm);
  std::vector<data::Role> out(all.size());
  for (size_t i = 0; i < all.size(); ++i) out[i] = static_cast<data::Role>(all[i]);
  return out;
}

}  // namespace

TEST(Split, IsStratifiedWithTheRequestedCounts) {
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated("digits.csv", X, labels);
  data::SplitSpec spec;
  spec.labeled_per_class = 5;
  spec.transductive_fraction = 0.5;
  spec.seed = 3;
  auto roles = distributed_split(labels, 10, spec, MPI_COMM_WORLD);
  std::map<int, std::array<int, 4>> per;  // labeled, unlabeled, unseen, total
  for (size_t i = 0; i < labels.size(); ++i) {
    auto& c = per[labels[i]];
    c[roles[i] == data::Role::labeled ? 0 : roles[i] == data::Role::unlabeled ? 1 : 2]++;
    c[3]++;
  }
  for (auto& [k, c] : per) {
    EXPECT_EQ(c[0], 5) << "class " << k;
    EXPECT_EQ(c[0] + c[1], std::llround(0.5 * c[3])) << "class " << k;
  }
  spec.transductive_fraction = -1;
  spec.unlabeled_per_class = 20;
  const Layout l = block_layout(static_cast<int64_t>(labels.size()), MPI_COMM_WORLD);
  const std::vector<int> mine(labels.begin() + l.start, labels.begin() + l.start + l.n_local);
  const auto counts = data::count_roles(data::make_split(mine, l.start, 10, spec, MPI_COMM_WORLD), MPI_COMM_WORLD);
  EXPECT_EQ(counts.labeled, 50);
  EXPECT_EQ(counts.unlabeled, 200);
  EXPECT_EQ(counts.unseen, 1797 - 250);
}

TEST(Split, IsTheSerialReferenceOnEveryRankCountAndInAnyLayout) {
  // The distributed radix selection must choose exactly the naive definition's samples, on
  // this run's rank count (1-4 in ctest), on MPI_COMM_SELF (one rank holding every row), and
  // in an uneven layout (rank r holds a share growing with r, a rank may hold none).
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated("digits.csv", X, labels);
  for (uint64_t seed : {0ull, 1ull, 12345ull}) {
    for (int protocol = 0; protocol < 3; ++protocol) {
      data::SplitSpec spec;
      spec.seed = seed;
      spec.labeled_per_class = protocol == 2 ? 1 : 3;
      if (protocol == 0) spec.transductive_fraction = 0.2;
      if (protocol == 1) spec.unlabeled_per_class = 7;
      const std::vector<data::Role> want = naive_split(labels, 10, spec);
      EXPECT_EQ(distributed_split(labels, 10, spec, MPI_COMM_WORLD), want) << "seed " << seed << " protocol " << protocol;
      EXPECT_EQ(data::make_split(labels, 0, 10, spec, MPI_COMM_SELF), want);
      // Uneven: rank r holds r/(1+2+…+P) of the rows, in rank order.
      const int64_t n = static_cast<int64_t>(labels.size());
      const int P = test::size(), r = test::rank();
      const int64_t total = static_cast<int64_t>(P) * (P + 1) / 2;
      const int64_t start = n * (static_cast<int64_t>(r) * (r + 1) / 2) / total;
      const int64_t stop = n * (static_cast<int64_t>(r + 1) * (r + 2) / 2) / total;
      const std::vector<int> mine(labels.begin() + start, labels.begin() + stop);
      const auto roles = data::make_split(mine, start, 10, spec, MPI_COMM_WORLD);
      EXPECT_TRUE(std::equal(roles.begin(), roles.end(), want.begin() + start));
    }
  }
}

TEST(Split, SelectsInChunksWhenThereAreManyClasses) {
  // 5 000 classes of 6 samples: 10 000 selections (labeled and transductive per class) go in
  // chunks of 4 096, each with its own 8 rounds; a whole class (F = 1) needs no round.
  const int classes = 5000;
  std::vector<int> labels(6 * classes);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int>((i * 7919) % classes);
  for (double fraction : {0.5, 1.0}) {
    data::SplitSpec spec;
    spec.labeled_per_class = 1;
    spec.transductive_fraction = fraction;
    spec.seed = 5;
    EXPECT_EQ(distributed_split(labels, classes, spec, MPI_COMM_WORLD), naive_split(labels, classes, spec))
        << "F = " << fraction;
  }
}

TEST(Split, KeysAreDistinctSoEveryClassGetsExactlyItsCount) {
  // split_key is a bijection of the index for a fixed seed: no ties among 10⁶ consecutive
  // indices (a collision would let a threshold select one sample too many).
  std::vector<uint64_t> keys(1000000);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = data::split_key(7, static_cast<int64_t>(i));
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
  EXPECT_NE(data::split_key(7, 0), data::split_key(8, 0));
}

TEST(Split, DependsOnlyOnTheLabelsAndTheSeed) {
  std::vector<int> labels(300);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int>(i % 3);
  data::SplitSpec spec;
  spec.labeled_per_class = 2;
  spec.transductive_fraction = 0.4;
  spec.seed = 42;
  auto a = distributed_split(labels, 3, spec, MPI_COMM_WORLD);
  auto b = distributed_split(labels, 3, spec, MPI_COMM_WORLD);
  EXPECT_EQ(a, b);
  spec.seed = 43;
  EXPECT_NE(a, distributed_split(labels, 3, spec, MPI_COMM_WORLD));
}

TEST(Split, RejectsAClassSmallerThanRequested) {
  std::vector<int> labels = {0, 0, 0, 1, 1};
  data::SplitSpec spec;
  spec.labeled_per_class = 3;
  try {
    distributed_split(labels, 2, spec, MPI_COMM_WORLD);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("class 1"), std::string::npos) << e.what();
    EXPECT_TRUE(e.collective());
  }
}

TEST(SplitFile, NamesTheLineOfABadRole) {
  const std::string path = "/tmp/ssdr_split_test_" + std::to_string(test::size()) + ".txt";
  if (test::rank() == 0) std::ofstream(path) << "labeled\nunlabeled\nunknown\n";
  MPI_Barrier(MPI_COMM_WORLD);
  const Layout l = block_layout(3, MPI_COMM_WORLD);
  try {
    data::read_split(path, l.start, l.n_local, 3, MPI_COMM_WORLD);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3"), std::string::npos) << e.what();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::rank() == 0) std::remove(path.c_str());
}

TEST(SplitFile, EachRankReceivesItsOwnRowsRoles) {
  // 1 001 roles (blank lines between), read by byte ranges: each rank gets exactly its block's
  // roles, whichever rank's byte range the lines started in; a count mismatch is named.
  const std::string path = "/tmp/ssdr_split_rows_" + std::to_string(test::size()) + ".txt";
  const int64_t n = 1001;
  std::vector<data::Role> want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    want[static_cast<size_t>(i)] = i % 7 == 0 ? data::Role::labeled : i % 3 == 0 ? data::Role::unseen : data::Role::unlabeled;
  if (test::rank() == 0) {
    std::ofstream f(path);
    for (int64_t i = 0; i < n; ++i) {
      const char* w = want[static_cast<size_t>(i)] == data::Role::labeled ? "labeled" : want[static_cast<size_t>(i)] == data::Role::unseen ? "T" : "unlabeled";
      f << w << (i % 10 == 0 ? "\n\n" : "\n");
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const Layout l = block_layout(n, MPI_COMM_WORLD);
  const auto mine = data::read_split(path, l.start, l.n_local, n, MPI_COMM_WORLD);
  EXPECT_TRUE(mine.size() == static_cast<size_t>(l.n_local) && std::equal(mine.begin(), mine.end(), want.begin() + l.start));
  try {
    data::read_split(path, 0, test::rank() == 0 ? n + 1 : 0, n + 1, MPI_COMM_WORLD);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 1001 roles, expected one per sample (1002)"), std::string::npos) << e.what();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::rank() == 0) std::remove(path.c_str());
}

TEST(Preprocess, PcaMatchesTheSerialCovarianceEigenvectorsOfTheFitRows) {
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated("wine.csv", X, labels);
  const int64_t n = X.rows, d = X.cols;
  std::vector<char> fit_all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) fit_all[static_cast<size_t>(i)] = i % 3 != 0;
  DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
  std::vector<char> fit(fit_all.begin() + Xd.row_start, fit_all.begin() + Xd.row_start + Xd.n_local);
  data::PreprocessOptions po;
  po.scaling = data::Scaling::standardize;
  auto p = data::fit_preprocessor(Xd, fit, po);
  ASSERT_EQ(p.basis.cols, d);  // wine has no null space

  // Serial reference: standardize with the fit rows' statistics, covariance, LAPACK.
  Dense F = ref::rows(X, fit_all);
  const int64_t nf = F.rows;
  for (int64_t j = 0; j < d; ++j) {
    double m = 0, s = 0;
    for (int64_t i = 0; i < nf; ++i) m += F(i, j) / static_cast<double>(nf);
    for (int64_t i = 0; i < nf; ++i) s += (F(i, j) - m) * (F(i, j) - m) / static_cast<double>(nf);
    for (int64_t i = 0; i < nf; ++i) F(i, j) = (F(i, j) - m) / std::sqrt(s);
  }
  Dense C(d, d);
  blas::gemm('T', 'N', d, d, nf, 1.0 / static_cast<double>(nf), F.data(), nf, F.data(), nf, 0.0, C.data(), d);
  std::vector<double> w(static_cast<size_t>(d));
  lapack::syev(d, C.data(), d, w.data());
  for (int64_t k = 0; k < d; ++k) EXPECT_NEAR(p.eigenvalues[static_cast<size_t>(k)], w[static_cast<size_t>(d - 1 - k)], 1e-10);
  Dense top(d, 3), mine(d, 3);
  for (int64_t k = 0; k < 3; ++k)
    for (int64_t i = 0; i < d; ++i) {
      top(i, k) = C(i, d - 1 - k);
      mine(i, k) = p.basis(i, k);
    }
  EXPECT_LT(test::max_diff_up_to_column_sign(mine, top), 1e-8);

  // The transformed fit rows are centered with a diagonal covariance (the eigenvalues).
  DistMatrix Z = data::apply(p, Xd);
  Dense cov(d, d);
  std::vector<double> mean(static_cast<size_t>(d));
  for (int64_t i = 0; i < Z.n_local; ++i) {
    if (!fit[static_cast<size_t>(i)]) continue;
    for (int64_t a = 0; a < d; ++a) {
      mean[static_cast<size_t>(a)] += Z(i, a);
      for (int64_t b = 0; b < d; ++b) cov(a, b) += Z(i, a) * Z(i, b) / static_cast<double>(nf);
    }
  }
  allreduce_sum(cov, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, mean.data(), static_cast<int>(d), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int64_t a = 0; a < d; ++a) {
    EXPECT_NEAR(mean[static_cast<size_t>(a)], 0.0, 1e-9);
    for (int64_t b = 0; b < d; ++b)
      EXPECT_NEAR(cov(a, b), a == b ? p.eigenvalues[static_cast<size_t>(a)] : 0.0, 1e-9);
  }
}

TEST(Preprocess, RemovesTheNullSpaceAndKeepsTheRequestedEnergy) {
  // Column 2 = column 0 + column 1 and column 3 constant: rank 2 after centering.
  Dense X(40, 4);
  for (int64_t i = 0; i < 40; ++i) {
    X(i, 0) = std::sin(0.3 * static_cast<double>(i));
    X(i, 1) = std::cos(0.7 * static_cast<double>(i)) * 0.1;
    X(i, 2) = X(i, 0) + X(i, 1);
    X(i, 3) = 5.0;
  }
  DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
  std::vector<char> fit(static_cast<size_t>(Xd.n_local), 1);
  auto p = data::fit_preprocessor(Xd, fit, {});
  EXPECT_EQ(p.basis.cols, 2);
  data::PreprocessOptions po;
  po.pca_energy = 0.5;  // the first component carries most of the variance
  EXPECT_EQ(data::fit_preprocessor(Xd, fit, po).basis.cols, 1);
  // Distances among fit rows are preserved by null-space removal.
  Dense Z = allgather(data::apply(p, Xd));
  for (int64_t i = 1; i < 40; ++i) {
    double dx = 0, dz = 0;
    for (int j = 0; j < 4; ++j) dx += (X(i, j) - X(0, j)) * (X(i, j) - X(0, j));
    for (int j = 0; j < 2; ++j) dz += (Z(i, j) - Z(0, j)) * (Z(i, j) - Z(0, j));
    EXPECT_NEAR(dx, dz, 1e-12);
  }
}

TEST(OneNn, AgreesWithBruteForceAndBreaksTiesBySmallerIndex) {
  // 1-D points: labeled at 0 (class 0, index 0), 2 (class 1, index 1), 10 (class 1, index 5);
  // the point at 1 is equidistant from indices 0 and 1 → class 0 (smaller index).
  const std::vector<double> x = {0, 2, 1, 1.9, 9, 10, 5.9, 6.5};
  const std::vector<int> labels = {0, 1, 0, 1, 1, 1, 1, 1};
  using R = data::Role;
  const std::vector<R> roles = {R::labeled, R::labeled, R::unlabeled, R::unlabeled, R::unseen, R::labeled, R::unseen, R::unseen};
  Dense Y(8, 1);
  for (int i = 0; i < 8; ++i) Y(i, 0) = x[static_cast<size_t>(i)];
  DistMatrix Yd = ref::distribute(Y, MPI_COMM_WORLD);
  const std::vector<int> my_labels = test::local_part(labels, Yd);
  const std::vector<R> my_roles = test::local_part(roles, Yd);
  auto pred = evaluation::one_nn_predict(Yd, my_labels, my_roles);
  const std::vector<int> all = allgatherv(pred, MPI_COMM_WORLD);
  ASSERT_EQ(all.size(), 8u);
  EXPECT_EQ(all[2], 0);  // the tie
  EXPECT_EQ(all[3], 1);
  EXPECT_EQ(all[4], 1);
  EXPECT_EQ(all[6], 1);  // 5.9 is nearest to 2.0 (index 1, class 1)
  EXPECT_EQ(all[7], 1);
  auto acc = evaluation::one_nn_accuracy(Yd, my_labels, my_roles);
  EXPECT_EQ(acc.n_unlabeled, 2);
  EXPECT_EQ(acc.n_unseen, 3);
  EXPECT_DOUBLE_EQ(acc.unlabeled, 1.0);
  EXPECT_DOUBLE_EQ(acc.unseen, 1.0);
  // What `ssdr predict` does against a model's labeled samples: the labeled rows gathered in
  // global order, then every row classified (a labeled row is nearest to itself), the same
  // tie rule.
  const std::vector<double> L = evaluation::gather_labeled_rows(Yd, my_roles);
  EXPECT_EQ(L, (std::vector<double>{0, 2, 10}));
  const std::vector<int> near = allgatherv(evaluation::nearest_labels(Yd, L, {0, 1, 1}), MPI_COMM_WORLD);
  EXPECT_EQ(near, (std::vector<int>{0, 1, 0, 1, 1, 1, 1, 1}));
  EXPECT_THROW(evaluation::nearest_labels(Yd, L, {0, 1}), Error);
}

TEST(OneNn, FiltersByGemmYetGivesTheBruteForceScanOfExactDistancesOnHardCases) {
  // nearest_labels finds candidates with a GEMM of ‖y‖² + ‖z‖² − 2yᵀz and re-checks them by
  // the sequential exact distance: its answer must be the brute-force scan's (smallest
  // sequential sum, the smaller index on a tie) where the GEMM's rounding is largest:
  // points far from the origin (1e8) that differ in the last bits (exact distances of a few
  // ulps of the offset, where ‖y‖² + ‖z‖² − 2yᵀz cancels completely), duplicated reference
  // rows (exact ties), and tiny coordinates whose squares underflow.
  const int64_t m = 7, l = 60, n = 300;
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> pick(0, 3);
  for (double scale : {1.0, 1e-160}) {
    for (double offset : {0.0, 1e8}) {
      std::vector<double> L(static_cast<size_t>(l * m));
      for (auto& v : L) v = scale * (offset + std::ldexp(static_cast<double>(pick(rng)), offset > 0 ? -26 : 0));
      for (int64_t t = 0; t < m; ++t) L[static_cast<size_t>(17 * m + t)] = L[static_cast<size_t>(3 * m + t)];  // a tie
      std::vector<int> labels(static_cast<size_t>(l));
      for (int64_t j = 0; j < l; ++j) labels[static_cast<size_t>(j)] = static_cast<int>(j);
      Dense Y(n, m);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t t = 0; t < m; ++t)
          Y(i, t) = scale * (offset + std::ldexp(static_cast<double>(pick(rng)), offset > 0 ? -26 : 0));
      const DistMatrix Yd = ref::distribute(Y, MPI_COMM_WORLD);
      const std::vector<int> got = allgatherv(evaluation::nearest_labels(Yd, L, labels), MPI_COMM_WORLD);
      ASSERT_EQ(got.size(), static_cast<size_t>(n));
      int64_t ties = 0;
      for (int64_t i = 0; i < n; ++i) {
        double best = std::numeric_limits<double>::infinity();
        int arg = -1, equal = 0;
        for (int64_t j = 0; j < l; ++j) {
          double s = 0;
          for (int64_t t = 0; t < m; ++t) {
            const double e = Y(i, t) - L[static_cast<size_t>(j * m + t)];
            s += e * e;
          }
          if (s < best) best = s, arg = static_cast<int>(j), equal = 0;
          else if (s == best) ++equal;
        }
        ties += equal > 0;
        EXPECT_EQ(got[static_cast<size_t>(i)], arg) << "row " << i << " scale " << scale << " offset " << offset;
      }
      EXPECT_GT(ties, 0) << "the data were meant to hold exact ties";
    }
  }
}

TEST(Preprocess, GivesBitwiseTheSameRowsOnAnyRankCountAndLayout) {
  // digits (integer features, many exact distance ties downstream): every scaling, fitted
  // on every other row, on MPI_COMM_SELF and on all ranks with an uneven layout (rank r
  // keeps rows with (i + r) % 3 != 0 of its block, so blocks differ in size). The kNN
  // graph built on the result breaks ties by exact distances, so the rows must agree bit
  // for bit, not to a tolerance.
  Dense digits;
  std::vector<int> labels;
  test::load_csv_replicated("digits.csv", digits, labels);
  const int r = test::rank();
  // The covariance route has two ways: the exact integer sums for digits' own values, and
  // the ordered tree of DSYRKs for digits/7 (not integers).
  for (const bool integer : {true, false}) {
    Dense X = digits;
    if (!integer)
      for (double& v : X.v) v /= 7;
    for (int case_ = 0; case_ < 5; ++case_) {
      // Cases 0-3: every scaling by the covariance route; case 4: the Gram route (G = ZZᵀ/n
      // from fixed-shape GEMM tiles), which must be as layout-independent.
      const data::Scaling sc = case_ == 4 ? data::Scaling::none : static_cast<data::Scaling>(case_);
      data::PreprocessOptions po;
      po.scaling = sc;
      po.route = case_ == 4 ? data::PcaRoute::gram : data::PcaRoute::covariance;
      auto run = [&](MPI_Comm comm, bool uneven) {
        DistMatrix Xd = ref::distribute(X, comm);
        std::vector<char> keep(static_cast<size_t>(Xd.n_local), 1);
        if (uneven)
          for (int64_t i = 0; i < Xd.n_local; ++i) keep[static_cast<size_t>(i)] = (i + r) % 3 != 0;
        DistMatrix Y = select_rows(Xd, keep);
        std::vector<char> fit(static_cast<size_t>(Y.n_local));
        // Fit rows: every other row of Y in global order.
        for (int64_t i = 0; i < Y.n_local; ++i) fit[static_cast<size_t>(i)] = (Y.row_start + i) % 2 == 0;
        const data::Preprocessor p = data::fit_preprocessor(Y, fit, po);
        return std::make_pair(allgather(data::apply(p, Y)), p);
      };
      // The same rows on one rank: rank 0's selection replayed serially is not the uneven
      // one, so compare the uneven all-rank run with a serial run on the same selected rows.
      const auto dist = run(MPI_COMM_WORLD, true);
      const Dense& Yd = dist.first;
      // Serial: the selected rows (gathered, in global order) on MPI_COMM_SELF.
      DistMatrix Xall = ref::distribute(X, MPI_COMM_WORLD);
      std::vector<char> keep(static_cast<size_t>(Xall.n_local));
      for (int64_t i = 0; i < Xall.n_local; ++i) keep[static_cast<size_t>(i)] = (i + r) % 3 != 0;
      const Dense sel = allgather(select_rows(Xall, keep));
      DistMatrix S = ref::distribute(sel, MPI_COMM_SELF);
      std::vector<char> fit(static_cast<size_t>(S.n_local));
      for (int64_t i = 0; i < S.n_local; ++i) fit[static_cast<size_t>(i)] = i % 2 == 0;
      const data::Preprocessor ps = data::fit_preprocessor(S, fit, po);
      const Dense Ys = allgather(data::apply(ps, S));
      EXPECT_EQ(dist.second.mean, ps.mean) << data::to_string(sc);
      EXPECT_EQ(dist.second.scale, ps.scale) << data::to_string(sc);
      EXPECT_EQ(dist.second.basis.v, ps.basis.v) << data::to_string(sc);
      EXPECT_EQ(ps.route, case_ == 4 ? "gram" : integer ? "covariance-exact" : "covariance") << data::to_string(sc);
      ASSERT_EQ(Yd.rows, Ys.rows);
      EXPECT_EQ(Yd.v, Ys.v) << data::to_string(sc) << ": preprocessed rows differ in their bits";
    }
  }
}

TEST(Preprocess, IntegerRowsCovarianceIsWithinFourRoundingsOfTheExactOneOnAnyRankCount) {
  // 1 000 rows (three full chunks of 256 and a partial one on one rank) × 9 integer columns:
  // uniform on [0, 255], on [−255, 0], near 255 with a small spread (mean² / variance ≈ 2·10⁴:
  // an uncentered double formula would lose four digits there), all 255 (a constant column,
  // variance exactly 0), and their mixtures; scaled per column. The exact covariance is
  // computed here with 128-bit integers, then in long double: its own error is ≤ 4·2⁻⁶⁴
  // relative, while the route's C_ij carries at most four roundings of double (the
  // numerator's conversion, the division by n², the two scale factors): |C − exact| ≤
  // ((1 + u)⁴ − 1)|exact| < 4.0001u|exact|. So |C − ref| ≤ (4.0001u + 5·2⁻⁶⁴)|ref|, and zero
  // where the exact value is zero.
  const int64_t n = 1000, d = 9;
  Dense X(n, d);
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> full(0, 255), near(250, 255), coin(0, 9);
  for (int64_t i = 0; i < n; ++i) {
    X(i, 0) = full(rng);
    X(i, 1) = -full(rng);
    X(i, 2) = near(rng);
    X(i, 3) = 255;
    X(i, 4) = coin(rng) == 0 ? 0 : 255;
    X(i, 5) = std::floor((X(i, 0) + X(i, 2)) / 2);  // correlated with columns 0 and 2
    X(i, 6) = i % 256;
    X(i, 7) = -X(i, 6);
    X(i, 8) = coin(rng);
  }
  std::vector<double> scale(static_cast<size_t>(d));
  for (int64_t j = 0; j < d; ++j) scale[static_cast<size_t>(j)] = 1.0 / (static_cast<double>(j) + 1.5);
  // Fit rows: all but i % 5 == 3.
  auto fit_of = [&](const DistMatrix& Xd) {
    std::vector<char> fit(static_cast<size_t>(Xd.n_local));
    for (int64_t i = 0; i < Xd.n_local; ++i) fit[static_cast<size_t>(i)] = (Xd.row_start + i) % 5 != 3;
    return fit;
  };
  const DistMatrix Xw = ref::distribute(X, MPI_COMM_WORLD), Xs = ref::distribute(X, MPI_COMM_SELF);
  const Dense C = data::detail::integer_covariance(Xw, fit_of(Xw), scale);
  const Dense Cs = data::detail::integer_covariance(Xs, fit_of(Xs), scale);
  EXPECT_EQ(C.v, Cs.v) << "the covariance differs in its bits between all ranks and one";

  __extension__ typedef __int128 int128;
  int128 count = 0;
  std::vector<int128> sum(static_cast<size_t>(d), 0), gram(static_cast<size_t>(d * d), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (i % 5 == 3) continue;
    ++count;
    for (int64_t a = 0; a < d; ++a) {
      sum[static_cast<size_t>(a)] += static_cast<int128>(X(i, a));
      for (int64_t b = 0; b < d; ++b) gram[static_cast<size_t>(a + b * d)] += static_cast<int128>(X(i, a) * X(i, b));
    }
  }
  const double u = 0x1p-53;
  for (int64_t b = 0; b < d; ++b)
    for (int64_t a = 0; a < d; ++a) {
      const int128 num = count * gram[static_cast<size_t>(a + b * d)] - sum[static_cast<size_t>(a)] * sum[static_cast<size_t>(b)];
      const long double ref = static_cast<long double>(num) / (static_cast<long double>(count) * static_cast<long double>(count)) *
                              static_cast<long double>(scale[static_cast<size_t>(a)]) * static_cast<long double>(scale[static_cast<size_t>(b)]);
      const long double err = std::abs(static_cast<long double>(C(a, b)) - ref);
      EXPECT_LE(err, (4.0001L * u + 5.0L * 0x1p-64L) * std::abs(ref)) << "C(" << a << ", " << b << ")";
    }
  EXPECT_EQ(C(3, 3), 0.0);  // the constant column
  EXPECT_GT(C(2, 2), 0.0);

  // A scale of the wrong length is refused (on every rank: every rank passes it).
  EXPECT_THROW(data::detail::integer_covariance(Xw, fit_of(Xw), std::vector<double>{1.0}), Error);
  // A value that is not a small integer is refused on every rank (the route's own check).
  Dense Y = X;
  Y(n - 1, 0) = 256;
  const DistMatrix Yw = ref::distribute(Y, MPI_COMM_WORLD);
  EXPECT_THROW(data::detail::integer_covariance(Yw, std::vector<char>(static_cast<size_t>(Yw.n_local), 1), scale), Error);
  Y(n - 1, 0) = 0.5;
  const DistMatrix Yh = ref::distribute(Y, MPI_COMM_WORLD);
  EXPECT_THROW(data::detail::integer_covariance(Yh, std::vector<char>(static_cast<size_t>(Yh.n_local), 1), scale), Error);
}

TEST(Preprocess, ApplyingToTheKeptRowsGivesBitwiseTheRowsOfApplyAfterSelectRows) {
  // The pipeline's fused apply(p, X, keep) must be apply(p, select_rows(X, keep)) bit for bit
  // (the kNN graph downstream breaks exact ties), with and without a PCA basis.
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated("digits.csv", X, labels);
  const int r = test::rank();
  for (bool pca : {true, false}) {
    data::PreprocessOptions po;
    po.scaling = data::Scaling::standardize;
    po.pca = pca;
    po.pca_energy = 0.9;  // a basis with fewer columns than d
    DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
    std::vector<char> keep(static_cast<size_t>(Xd.n_local)), fit(static_cast<size_t>(Xd.n_local), 1);
    for (int64_t i = 0; i < Xd.n_local; ++i) keep[static_cast<size_t>(i)] = (i + r) % 5 != 2;
    const data::Preprocessor p = data::fit_preprocessor(Xd, fit, po);
    const DistMatrix A = data::apply(p, Xd, keep), B = data::apply(p, select_rows(Xd, keep));
    ASSERT_EQ(A.n_local, B.n_local);
    ASSERT_EQ(A.cols, B.cols);
    EXPECT_EQ(A.row_start, B.row_start);
    if (pca) EXPECT_LT(A.cols, X.cols);
    EXPECT_EQ(A.v, B.v) << (pca ? "with PCA" : "without PCA");
  }
}

TEST(Preprocess, GramRouteGivesTheCovarianceRoutesPcaWhenFeaturesOutnumberSamples) {
  // 40 digits rows (d = 64 > n_fit = 40), distributed over all ranks: the automatic route is
  // the Gram one. Both routes eigen-decompose the same covariance (C = ZᵀZ/n and G = ZZᵀ/n
  // share their nonzero eigenvalues), so they must agree up to rounding.
  // Error analysis: both are backward-stable symmetric eigen-solves of matrices formed with
  // relative error ≲ d·ε in each entry, so eigenvalues agree to c·ε·λ_max (c ≈ 10³ covers d,
  // n and LAPACK's constants), and the kept subspace (every eigenvalue above 1e-10·λ_max;
  // its projector BBᵀ is basis-independent) moves by at most c·ε·λ_max/λ_min_kept (Davis-
  // Kahan, the gap to the null space being λ_min_kept). The test asserts λ_max/λ_min_kept
  // stays below 10⁶, so the bounds are at most 2.2e-13·λ_max and 2.2e-7.
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated("digits.csv", X, labels);
  Dense X40(40, X.cols);
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < X.cols; ++j) X40(i, j) = X(i, j);
  DistMatrix Xd = ref::distribute(X40, MPI_COMM_WORLD);
  std::vector<char> fit(static_cast<size_t>(Xd.n_local), 1);
  data::PreprocessOptions po;
  po.route = data::PcaRoute::covariance;
  const data::Preprocessor pc = data::fit_preprocessor(Xd, fit, po);
  po.route = data::PcaRoute::automatic;
  const data::Preprocessor pg = data::fit_preprocessor(Xd, fit, po);
  ASSERT_EQ(pc.basis.cols, pg.basis.cols);
  ASSERT_EQ(pc.basis.rows, 64);
  const double lmax = pc.eigenvalues.front(), lmin = pc.eigenvalues.back();
  ASSERT_LT(lmax / lmin, 1e6) << "the bound below assumes a well-separated null space";
  constexpr double c = 1e3, eps = 2.2e-16;
  for (size_t k = 0; k < pc.eigenvalues.size(); ++k)
    EXPECT_NEAR(pc.eigenvalues[k], pg.eigenvalues[k], c * eps * lmax) << "eigenvalue " << k;
  double worst = 0;
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 64; ++j) {
      double a = 0, b = 0;
      for (int64_t k = 0; k < pc.basis.cols; ++k) {
        a += pc.basis(i, k) * pc.basis(j, k);
        b += pg.basis(i, k) * pg.basis(j, k);
      }
      worst = std::max(worst, std::abs(a - b));
    }
  EXPECT_LT(worst, c * eps * lmax / lmin) << "kept subspaces differ";
  // Orthonormal columns (each normalized explicitly; orthogonal up to the same bound).
  for (int64_t a = 0; a < pg.basis.cols; ++a)
    for (int64_t b = 0; b < pg.basis.cols; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < 64; ++i) dot += pg.basis(i, a) * pg.basis(i, b);
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, c * eps * lmax / lmin) << a << "," << b;
    }
}
