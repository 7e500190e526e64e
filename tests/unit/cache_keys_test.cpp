// The typed cache keys (methods/cache_keys.hpp, driver::RowsKey): every option a cached value
// depends on is part of its key, so changing any one of them misses the cache. Each case
// puts the key of the defaults in a std::map (the caches' container) and looks up the key
// with one field changed: each field of the option struct's fields() in turn, after checking
// that fields() lists every member of the struct (so a new option fails here until it is in
// fields(), and is then tested with no further edit).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
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

/// Converts to any member's type: counts an aggregate's members (member_count).
struct AnyMember {
  template <class T>
  operator T() const {
    return T{};
  }
};

/// Whether O{A...} is a valid aggregate initialization. Local.
template <class O, class... A>
constexpr auto braces_fit(int) -> decltype(O{std::declval<A>()...}, true) {
  return true;
}
template <class O, class... A>
constexpr bool braces_fit(long) {
  return false;
}

/// The number of members of the aggregate O (the most initializers O{...} takes).
template <class O, class... A>
constexpr size_t member_count() {
  if constexpr (braces_fit<O, A..., AnyMember>(0))
    return member_count<O, A..., AnyMember>();
  else
    return sizeof...(A);
}

/// A value other than `v`: a bool flipped, an enum's next value, a number + 1, a string longer.
template <class T>
T other_than(const T& v) {
  if constexpr (std::is_same_v<T, bool>)
    return !v;
  else if constexpr (std::is_enum_v<T>)
    return static_cast<T>(static_cast<std::underlying_type_t<T>>(v) + 1);
  else if constexpr (std::is_arithmetic_v<T>)
    return static_cast<T>(v + 1);
  else
    return v + "_other";
}

/// For each index I of O::fields(): the options with field I changed miss the defaults' key.
template <class O, class F, size_t... I>
void expect_each_field_misses(const O& defaults, F key, std::index_sequence<I...>) {
  EXPECT_FALSE(misses(key(defaults), key(defaults)));
  const auto change_field = [&](auto index) {
    O o = defaults;
    using T = std::decay_t<std::tuple_element_t<decltype(index)::value, decltype(o.fields())>>;
    T& field = const_cast<T&>(std::get<decltype(index)::value>(o.fields()));  // o is not const
    field = other_than(field);
    EXPECT_TRUE(misses(key(defaults), key(o))) << "field " << decltype(index)::value << " of O::fields()";
  };
  (change_field(std::integral_constant<size_t, I>{}), ...);
}

/// Members of O that fields() leaves out on purpose: they change no result, so a cached
/// result serves every value (GraphOptions::nndescent_memory_mib: NN-descent's lists are the
/// same for any memory budget, NNDescent.GivesTheListsOfOneRank*, *TakesItsMemory*).
template <class O>
constexpr size_t unkeyed_members = 0;
template <>
constexpr size_t unkeyed_members<graph::GraphOptions> = 1;
template <>
constexpr size_t unkeyed_members<graph::LnpOptions> = 1;  // nndescent_memory_mib, likewise

/// O::fields() lists every member of O (but its unkeyed_members), and for each of them the key
/// built from the options with that one field changed misses the cache of the defaults' key;
/// the defaults' key hits.
template <class O, class F>
void expect_each_field_misses(const O& defaults, F key) {
  constexpr size_t listed = std::tuple_size_v<decltype(defaults.fields())>;
  EXPECT_EQ(listed + unkeyed_members<O>, member_count<O>()) << "a member of the options is missing from their fields()";
  expect_each_field_misses(defaults, key, std::make_index_sequence<listed>{});
}

}  // namespace

TEST(CacheKeys, AGraphKeyChangesWithEveryFieldOfGraphOptions) {
  using G = graph::GraphOptions;
  expect_each_field_misses(G{}, [](const G& g) { return methods::graph_key(g); });
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
  expect_each_field_misses(P{}, pkey);
  // The graph under the propagation: another kNN graph, or an LNP graph (k, r, features).
  graph::GraphOptions g9 = g;
  g9.k = 9;
  EXPECT_TRUE(misses(pkey(P{}), methods::propagation_key(methods::graph_key(g9), P{})));
  graph::LnpOptions lnp;
  const methods::PropagationKey on_lnp = methods::propagation_key(methods::lnp_key(lnp, ""), P{});
  EXPECT_TRUE(misses(pkey(P{}), on_lnp));
  using L = graph::LnpOptions;
  expect_each_field_misses(L{}, [](const L& l) { return methods::lnp_key(l, ""); });
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
  expect_each_field_misses(P{}, [&](const P& p) { return driver::rows_key(p, roles, start, n, MPI_COMM_WORLD); });
  // Another transductive set (one more sample) misses; the same set with other labels
  // (a cross-validation fold) hits.
  const driver::RowsKey base = driver::rows_key(P{}, roles, start, n, MPI_COMM_WORLD);
  EXPECT_TRUE(misses(base, driver::rows_key(P{}, roles_with_unseen(9), start, n, MPI_COMM_WORLD)));
  std::vector<data::Role> fold = roles;
  for (auto& r : fold)
    if (r == data::Role::unlabeled) r = data::Role::labeled;
  EXPECT_FALSE(misses(base, driver::rows_key(P{}, fold, start, n, MPI_COMM_WORLD)));
}
