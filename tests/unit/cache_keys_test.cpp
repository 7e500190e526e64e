// The typed cache keys (methods/cache_keys.hpp, driver::RowsKey): every option a cached value
// depends on is part of its key, so changing any one of them misses the cache. Each case
// puts the key of the defaults in a std::map (the caches' container) and looks up the key
// with one field changed.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/methods/cache_keys.hpp"

using namespace ssdr;

namespace {

/// Whether a cache holding `base` misses `changed` (the lookup of std::map, the caches' container).
template <class K>
bool misses(const K& base, const K& changed) {
  const std::map<K, int> cache = {{base, 0}};
  return cache.find(changed) == cache.end();
}

/// For each change of the options O, the key built from the changed options misses the
/// cache of the defaults' key; the defaults' key itself hits.
template <class O, class F>
void expect_each_change_misses(const O& defaults, F key, const std::vector<std::pair<std::string, std::function<void(O&)>>>& changes) {
  EXPECT_FALSE(misses(key(defaults), key(defaults)));
  for (const auto& [what, change] : changes) {
    O o = defaults;
    change(o);
    EXPECT_TRUE(misses(key(defaults), key(o))) << what;
  }
}

}  // namespace

TEST(CacheKeys, AGraphKeyChangesWithEveryFieldOfGraphOptions) {
  using G = graph::GraphOptions;
  expect_each_change_misses<G>(G{}, [](const G& g) { return methods::graph_key(g); },
                               {{"k", [](G& g) { g.k = 9; }},
                                {"weight", [](G& g) { g.weight = graph::EdgeWeight::binary; }},
                                {"sigma_rule", [](G& g) { g.sigma_rule = graph::SigmaRule::mean_edge_dist2; }},
                                {"sigma_s", [](G& g) { g.sigma_s = 0.5; }},
                                {"sigma", [](G& g) { g.sigma = 2; }},
                                {"knn_method", [](G& g) { g.knn_method = graph::KnnMethod::nndescent; }},
                                {"knn_seed", [](G& g) { g.knn_seed = 2; }},
                                {"knn_recall_sample", [](G& g) { g.knn_recall_sample = 10; }},
                                {"components", [](G& g) { g.components = 3; }}});
}

TEST(CacheKeys, KnnListsAreKeyedByBackendAndForNnDescentBySeedAndK) {
  graph::GraphOptions nd;
  nd.knn_method = graph::KnnMethod::nndescent;
  const methods::ListsKey base = methods::lists_key(nd, 8, 1000);
  graph::GraphOptions seed = nd;
  seed.knn_seed = 7;
  EXPECT_TRUE(misses(base, methods::lists_key(seed, 8, 1000)));
  EXPECT_TRUE(misses(base, methods::lists_key(nd, 9, 1000)));
  graph::GraphOptions exact = nd;
  exact.knn_method = graph::KnnMethod::exact;
  EXPECT_TRUE(misses(base, methods::lists_key(exact, 8, 1000)));
  // The exact lists of a larger k hold a smaller one's: one entry whatever k and seed.
  EXPECT_FALSE(misses(methods::lists_key(exact, 8, 1000), methods::lists_key(exact, 3, 1000)));
  exact.knn_seed = 7;
  EXPECT_FALSE(misses(methods::lists_key(exact, 8, 1000), methods::lists_key(exact, 8, 1000)));
}

TEST(CacheKeys, PropagationScatterAndTraceRatioKeysChangeWithEachOfTheirOptions) {
  using P = propagation::PropagationOptions;
  const graph::GraphOptions g;
  const auto pkey = [&](const P& p) { return methods::propagation_key(methods::graph_key(g), p); };
  expect_each_change_misses<P>(P{}, pkey,
                               {{"alpha_labeled", [](P& p) { p.alpha_labeled = 0.1; }},
                                {"alpha_unlabeled", [](P& p) { p.alpha_unlabeled = 0.9; }},
                                {"rtol", [](P& p) { p.rtol = 1e-8; }},
                                {"prefix", [](P& p) { p.prefix = "other_"; }},
                                {"block", [](P& p) { p.block = false; }},
                                {"reorder", [](P& p) { p.reorder = false; }},
                                {"mixed_precision", [](P& p) { p.mixed_precision = false; }}});
  // The graph under the propagation: another kNN graph, or an LNP graph (k, r, features).
  graph::GraphOptions g9 = g;
  g9.k = 9;
  EXPECT_TRUE(misses(pkey(P{}), methods::propagation_key(methods::graph_key(g9), P{})));
  graph::LnpOptions lnp;
  const methods::PropagationKey on_lnp = methods::propagation_key(methods::lnp_key(lnp, ""), P{});
  EXPECT_TRUE(misses(pkey(P{}), on_lnp));
  using L = graph::LnpOptions;
  expect_each_change_misses<L>(L{}, [](const L& l) { return methods::lnp_key(l, ""); },
                               {{"k", [](L& l) { l.k = 3; }}, {"regularization", [](L& l) { l.regularization = 1; }}});
  EXPECT_TRUE(misses(methods::lnp_key(lnp, ""), methods::lnp_key(lnp, "{\"type\":\"rbf\"}")));
  // Scatter matrices: the soft labels that weigh them (or the hard labels) and X's features.
  const methods::ScatterKey s = methods::scatter_key(pkey(P{}), "");
  EXPECT_TRUE(misses(s, methods::scatter_key(on_lnp, "")));
  EXPECT_TRUE(misses(s, methods::scatter_key(std::nullopt, "")));
  EXPECT_TRUE(misses(s, methods::scatter_key(pkey(P{}), "{\"type\":\"polynomial\"}")));
  // The trace ratio's start: the scatter set, μ and the SLEPc prefix.
  const methods::TraceRatioStartKey tr = methods::trace_ratio_start_key(s, 0.5, "tr_");
  EXPECT_FALSE(misses(tr, methods::trace_ratio_start_key(s, 0.5, "tr_")));
  EXPECT_TRUE(misses(tr, methods::trace_ratio_start_key(methods::scatter_key(std::nullopt, ""), 0.5, "tr_")));
  EXPECT_TRUE(misses(tr, methods::trace_ratio_start_key(s, 0.25, "tr_")));
  EXPECT_TRUE(misses(tr, methods::trace_ratio_start_key(s, 0.5, "x_")));
}

TEST(CacheKeys, TheRowsKeyChangesWithEveryPreprocessingOptionAndTheTransductiveSet) {
  // 10 samples, each rank holding a contiguous block; samples 8 and 9 unseen.
  const int rank = [] { int r; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }();
  const int size = [] { int s; MPI_Comm_size(MPI_COMM_WORLD, &s); return s; }();
  const int64_t n = 10, start = n * rank / size, end = n * (rank + 1) / size;
  const auto roles_with_unseen = [&](int64_t unseen_from) {
    std::vector<data::Role> r;
    for (int64_t i = start; i < end; ++i) r.push_back(i >= unseen_from ? data::Role::unseen : data::Role::unlabeled);
    return r;
  };
  const std::vector<data::Role> roles = roles_with_unseen(8);
  using P = data::PreprocessOptions;
  expect_each_change_misses<P>(P{}, [&](const P& p) { return driver::rows_key(p, roles, start, n, MPI_COMM_WORLD); },
                               {{"scaling", [](P& p) { p.scaling = data::Scaling::standardize; }},
                                {"pca", [](P& p) { p.pca = false; }},
                                {"pca_energy", [](P& p) { p.pca_energy = 0.7; }},
                                {"route", [](P& p) { p.route = data::PcaRoute::gram; }},
                                {"pca_dim", [](P& p) { p.pca_dim = 3; }},
                                {"single", [](P& p) { p.single = true; }}});
  // Another transductive set (one more sample) misses; the same set with other labels
  // (a cross-validation fold) hits.
  const driver::RowsKey base = driver::rows_key(P{}, roles, start, n, MPI_COMM_WORLD);
  EXPECT_TRUE(misses(base, driver::rows_key(P{}, roles_with_unseen(9), start, n, MPI_COMM_WORLD)));
  std::vector<data::Role> fold = roles;
  for (auto& r : fold)
    if (r == data::Role::unlabeled) r = data::Role::labeled;
  EXPECT_FALSE(misses(base, driver::rows_key(P{}, fold, start, n, MPI_COMM_WORLD)));
}
