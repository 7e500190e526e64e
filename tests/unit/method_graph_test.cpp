// Each method on its paper's graph (its row's MethodInfo::graph, resolved by
// method_graph): defaults, the --knn/--weight/--sigma-s overrides, and the graph cache of
// the experiment driver keyed on every graph parameter; a fit builds its own row's graph, also
// when two rows share a class (ksoda and soda).
#include <gtest/gtest.h>

#include <string>

#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/graph_cache.hpp"
#include "ssdr/methods/method.hpp"
#include "support.hpp"

using namespace ssdr;
using graph::EdgeWeight;
using graph::SigmaRule;

TEST(MethodGraph, EachMethodDefaultsToItsPapersGraph) {
  const methods::MethodOptions none;
  // SODA's graph (soda-nie2009 §5.2): k = 8, heat, eq. (42) with s = 1e-3/k; kept by the
  // methods that used it before (soda, ksoda, lp).
  for (const char* m : {"soda", "ksoda", "lp"}) {
    const graph::GraphOptions g = methods::method_graph(methods::find_method(m), none);
    EXPECT_EQ(g.k, 8) << m;
    EXPECT_EQ(g.weight, EdgeWeight::heat) << m;
    EXPECT_EQ(g.sigma_rule, SigmaRule::soda_eq42) << m;
    EXPECT_EQ(g.sigma_s, 0.0) << m;
  }
  // tca-liu2008 eq. (4), §5.2: k = 5, heat, t = d̄.
  for (const char* m : {"tca", "otca"}) {
    const graph::GraphOptions g = methods::method_graph(methods::find_method(m), none);
    EXPECT_EQ(g.k, 5) << m;
    EXPECT_EQ(g.weight, EdgeWeight::heat) << m;
    EXPECT_EQ(g.sigma_rule, SigmaRule::mean_edge_dist2) << m;
  }
  // soge-liu2017 §5.2: the CLR graph (adaptive neighbours refined to c components).
  EXPECT_EQ(methods::method_graph(methods::find_method("soge"), none).weight, EdgeWeight::clr);
  EXPECT_EQ(methods::method_graph(methods::find_method("soge"), none).k, 5);
  // SDA (Cai et al.): 0/1 weights, k = 5.
  EXPECT_EQ(methods::method_graph(methods::find_method("sda"), none).weight, EdgeWeight::binary);
  EXPECT_EQ(methods::method_graph(methods::find_method("sda"), none).k, 5);
  // The methods without a kNN graph have no graph in their row, and none to put options over.
  for (const char* m : {"oda", "lda", "sl-lda", "sl-lda-wls", "olda", "pca", "1nn", "gda", "ssgda", "m-ssgda"}) {
    EXPECT_FALSE(methods::find_method(m).graph.has_value()) << m;
    EXPECT_THROW(methods::method_graph(methods::find_method(m), none), Error) << m;
  }
  // sllda-zhao2014: the LNP graph of its row, k = 8 and r = 1e-3; only the sl-lda rows have one.
  for (const char* m : {"sl-lda", "sl-lda-wls"}) {
    const graph::LnpOptions g = methods::method_lnp_graph(methods::find_method(m), none);
    EXPECT_EQ(g.k, 8) << m;
    EXPECT_EQ(g.regularization, 1e-3) << m;
  }
  for (const methods::MethodInfo& row : methods::method_table())
    if (row.name != "sl-lda" && row.name != "sl-lda-wls") {
      EXPECT_FALSE(row.lnp_graph.has_value()) << row.name;
      EXPECT_THROW(methods::method_lnp_graph(row, none), Error) << row.name;
    }
}

TEST(MethodGraph, KnnOverridesTheLnpGraphsK) {
  methods::MethodOptions o;
  o.graph.k = 11;
  EXPECT_EQ(methods::method_lnp_graph(methods::find_method("sl-lda"), o).k, 8);  // not given: ignored
  o.knn_given = true;
  EXPECT_EQ(methods::method_lnp_graph(methods::find_method("sl-lda"), o).k, 11);
  EXPECT_EQ(methods::method_lnp_graph(methods::find_method("sl-lda-wls"), o).regularization, 1e-3);
}

TEST(MethodGraph, TheLnpGraphSearchesByTheRunsKnnBackend) {
  methods::MethodOptions o;  // --knn-method and --seed, as the kNN graph takes them
  EXPECT_EQ(methods::method_lnp_graph(methods::find_method("sl-lda"), o).knn_method, graph::KnnMethod::automatic);
  o.graph.knn_method = graph::KnnMethod::nndescent;
  o.graph.knn_seed = 42;
  const graph::LnpOptions g = methods::method_lnp_graph(methods::find_method("sl-lda"), o);
  EXPECT_EQ(g.knn_method, graph::KnnMethod::nndescent);
  EXPECT_EQ(g.knn_seed, 42u);
  EXPECT_EQ(g.k, 8);  // the paper's k stays
  for (const char* m : {"sl-lda", "sl-lda-wls"})
    for (const char* p : {"knn_method", "knn_recall_sample"})
      EXPECT_TRUE(methods::uses_parameter(methods::find_method(m), p)) << m << " " << p;
  EXPECT_FALSE(methods::uses_parameter(methods::find_method("lda"), "knn_method"));
}

TEST(MethodGraph, EveryGraphTakesTheRunsNnDescentMemory) {
  // --nndescent-memory reaches the kNN graph of every method that has one and SL-LDA's LNP
  // graph (the lists do not depend on it: only the time and the memory do).
  methods::MethodOptions o;
  o.graph.nndescent_memory_mib = 512;
  for (const methods::MethodInfo& m : methods::method_table()) {
    if (m.graph) EXPECT_EQ(methods::method_graph(m, o).nndescent_memory_mib, 512) << m.name;
    if (m.lnp_graph) EXPECT_EQ(methods::method_lnp_graph(m, o).nndescent_memory_mib, 512) << m.name;
    if (m.graph || m.lnp_graph) EXPECT_TRUE(methods::uses_parameter(m, "nndescent_memory")) << m.name;
  }
}

TEST(MethodGraph, KnnWeightAndSigmaSOverrideTheMethodsGraph) {
  methods::MethodOptions o;
  o.graph.k = 11;
  o.graph.weight = EdgeWeight::cosine;
  // Not given: the values in o.graph are ignored.
  EXPECT_EQ(methods::method_graph(methods::find_method("tca"), o).k, 5);
  EXPECT_EQ(methods::method_graph(methods::find_method("tca"), o).weight, EdgeWeight::heat);
  o.knn_given = true;
  EXPECT_EQ(methods::method_graph(methods::find_method("tca"), o).k, 11);
  EXPECT_EQ(methods::method_graph(methods::find_method("tca"), o).weight, EdgeWeight::heat);
  o.weight_given = true;
  EXPECT_EQ(methods::method_graph(methods::find_method("tca"), o).weight, EdgeWeight::cosine);
  o.graph.weight = EdgeWeight::heat;
  EXPECT_EQ(methods::method_graph(methods::find_method("soge"), o).weight, EdgeWeight::heat);  // --weight heat on soge
  o.graph.weight = EdgeWeight::adaptive;
  EXPECT_EQ(methods::method_graph(methods::find_method("soda"), o).weight, EdgeWeight::adaptive);
  // --sigma-s asks for eq. (42) with that s, whatever the method's σ rule.
  methods::MethodOptions s;
  s.graph.sigma_s = 0.25;
  const graph::GraphOptions g = methods::method_graph(methods::find_method("otca"), s);
  EXPECT_EQ(g.sigma_rule, SigmaRule::soda_eq42);
  EXPECT_EQ(g.sigma_s, 0.25);
  EXPECT_EQ(g.k, 5);
}

TEST(MethodGraph, AFitUsesItsOwnRowsGraphWhenRowsShareAClass) {
  // ksoda is SODA's class on another row. SODA's fit once named its graph by "soda", so a
  // graph on ksoda's row was ignored; the fit now receives its row. A row with SODA's class
  // and a 0/1 graph with k = 5 fits as soda with --knn 5 --weight binary, bit for bit.
  const test::Problem pr = test::load_problem("wine.csv", 3, true);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const std::vector<int> labels = test::local_part(pr.semi, X);
  const methods::TrainingData data{X, labels, pr.classes};
  methods::Timings t;
  methods::MethodInfo row = methods::find_method("ksoda");
  row.graph->k = 5;
  row.graph->weight = graph::EdgeWeight::binary;
  const methods::FitResult by_row = row.fit(data, methods::MethodOptions{}, t);
  methods::MethodOptions o;
  o.graph.k = 5;
  o.knn_given = true;
  o.graph.weight = graph::EdgeWeight::binary;
  o.weight_given = true;
  const methods::FitResult by_options = methods::find_method("soda").fit(data, o, t);
  EXPECT_EQ(by_row.info["graph"]["k"], 5);
  EXPECT_EQ(by_row.info["graph"]["weight"], "binary");
  EXPECT_EQ(by_row.info["graph"], by_options.info["graph"]);
  EXPECT_EQ(by_row.W.v, by_options.W.v);
  // And the table's own ksoda row keeps SODA's paper graph (k = 8, heat).
  const methods::FitResult ksoda = methods::find_method("ksoda").fit(data, methods::MethodOptions{}, t);
  EXPECT_EQ(ksoda.info["graph"]["k"], 8);
  EXPECT_EQ(ksoda.info["graph"]["weight"], "heat");
  EXPECT_NE(ksoda.W.v, by_row.W.v);
}

TEST(GraphCache, KeysOnEveryGraphParameter) {
  graph::GraphOptions a, b;
  EXPECT_EQ(methods::graph_key(a), methods::graph_key(b));
  b.sigma_rule = SigmaRule::mean_edge_dist2;  // the one parameter the old key missed
  EXPECT_NE(methods::graph_key(a), methods::graph_key(b));
  b = a;
  b.weight = EdgeWeight::adaptive;
  EXPECT_NE(methods::graph_key(a), methods::graph_key(b));
  b = a;
  b.sigma_s = 0.5;
  EXPECT_NE(methods::graph_key(a), methods::graph_key(b));
  b = a;
  b.sigma = 2;
  EXPECT_NE(methods::graph_key(a), methods::graph_key(b));
  b = a;
  b.k = 9;
  EXPECT_NE(methods::graph_key(a), methods::graph_key(b));
  b = a;
  b.components = 4;  // CLR's c
  EXPECT_NE(methods::graph_key(a), methods::graph_key(b));
}

TEST(GraphCache, MethodsWithDifferentDefaultGraphsGetDifferentGraphsFromOneCache) {
  // One split, one cache, as the experiment driver shares it between the methods of a block.
  const test::Problem pr = test::load_problem("wine.csv", 3, true);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const std::vector<int> labels = test::local_part(pr.semi, X);
  methods::GraphCache cache;
  methods::TrainingData cached{X, labels, pr.classes, nullptr, &cache};
  methods::TrainingData fresh{X, labels, pr.classes};
  methods::Timings t;
  auto fit = [&](const methods::TrainingData& d, const char* m, const methods::MethodOptions& o) {
    return methods::find_method(m).fit(d, o, t);
  };
  methods::MethodOptions o;
  const auto soda = fit(cached, "soda", o);
  const auto tca = fit(cached, "tca", o);
  const auto sda = fit(cached, "sda", o);
  const auto soge = fit(cached, "soge", o);
  EXPECT_EQ(cache.graphs.size(), 4u);
  EXPECT_EQ(cache.misses, 4);
  EXPECT_EQ(cache.hits, 0);
  EXPECT_EQ(soda.info["graph"]["k"], 8);
  EXPECT_EQ(soda.info["graph"]["sigma_rule"], "soda_eq42");
  EXPECT_EQ(tca.info["graph"]["k"], 5);
  EXPECT_EQ(tca.info["graph"]["sigma_rule"], "mean_edge_dist2");
  EXPECT_EQ(sda.info["graph"]["weight"], "binary");
  EXPECT_EQ(soge.info["graph"]["weight"], "clr");
  EXPECT_EQ(soge.info["graph"]["components"], pr.classes);  // CLR asks for one per class
  // OTCA shares TCA's graph: a hit, and the same result as without the cache.
  const auto otca = fit(cached, "otca", o);
  EXPECT_EQ(cache.hits, 1);
  EXPECT_EQ(otca.info["graph"], tca.info["graph"]);
  EXPECT_EQ(fit(fresh, "otca", o).W.v, otca.W.v);

  // TCA with --knn 8 differs from SODA's graph only in the σ rule: under the old key
  // (k, weight, s, σ) it would have received SODA's narrow graph from the cache.
  methods::MethodOptions k8;
  k8.graph.k = 8;
  k8.knn_given = true;
  const auto tca8 = fit(cached, "tca", k8);
  EXPECT_EQ(cache.misses, 5);
  EXPECT_EQ(tca8.info["graph"]["k"], 8);
  EXPECT_EQ(tca8.info["graph"]["edges"], soda.info["graph"]["edges"]);  // same kNN support
  EXPECT_NE(tca8.info["graph"]["t"], soda.info["graph"]["t"]);
  EXPECT_EQ(tca8.info["graph"]["t"], tca8.info["graph"]["mean_edge_dist2"]);
  EXPECT_EQ(fit(fresh, "tca", k8).W.v, tca8.W.v);
}
