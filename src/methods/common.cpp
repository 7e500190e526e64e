#include "ssdr/methods/common.hpp"

#include "ssdr/methods/graph_cache.hpp"

#include "ssdr/core/error.hpp"
#include "ssdr/graph/locality.hpp"

#include <cmath>

#include "ssdr/core/progress.hpp"
#include "ssdr/solvers/eigen.hpp"
#include "ssdr/solvers/trace_ratio.hpp"

namespace ssdr::methods {

double trace(const Dense& S) {
  double t = 0;
  for (int64_t i = 0; i < S.rows; ++i) t += S(i, i);
  return t;
}

Normalization scale_generalized_eigenvectors(Dense& W, Normalization n, const std::string& what,
                                             nlohmann::json& info) {
  if (n == Normalization::unit) normalize_columns_to_unit_length(W, what);
  info["normalization"] = to_string(n);
  return n;
}

std::vector<double> largest_generalized_eigenvectors(const Dense& Sb, const Dense& B, int64_t m, Normalization n,
                                                     const std::string& what, const std::string& eigen_prefix,
                                                     MPI_Comm comm, FitResult& out, const Dense* Sb_factor) {
  auto e = Sb_factor != nullptr && Sb_factor->cols >= m && Sb_factor->rows == Sb.rows
               ? solvers::largest_low_rank_eigen(*Sb_factor, B, m, eigen_prefix, comm, &Sb)
               : solvers::sym_eigen(Sb, &B, m, solvers::Which::largest, eigen_prefix, comm);
  out.W = std::move(e.vectors);
  out.normalization = scale_generalized_eigenvectors(out.W, n, what, out.info);
  out.info["eigenvalues"] = e.values;
  return std::move(e.values);
}

scatter::ScatterMatrices labeled_scatter(const TrainingData& data, Timings& t) {
  Phase phase("scatter", &t);
  LabeledPart l = labeled_part(data);
  return scatter::soft_scatter(l.X, scatter::one_hot(l.labels, data.classes, l.X.comm), data.classes);
}

scatter::ShrunkScatter shrunk_labeled_scatter(const TrainingData& data, double shrinkage, Timings& t,
                                              nlohmann::json& info) {
  static_assert(kShrinkageAuto == scatter::kLedoitWolf, "--shrinkage auto is one value in both modules");
  Phase phase("scatter", &t);
  LabeledPart l = labeled_part(data);
  scatter::ShrunkScatter S = scatter::shrunk_scatter(l.X, l.labels, data.classes, data.input_basis, shrinkage);
  info["shrinkage"] = shrinkage == kShrinkageAuto ? nlohmann::json("auto") : nlohmann::json(shrinkage);
  info["shrinkage_class_coefficients"] = S.class_coefficients;
  info["shrinkage_total_coefficient"] = S.total_coefficient;
  // Where the target's diagonal lies: the user's features (through the PCA basis), or X's own
  // columns (--no-pca, a kernel map).
  info["shrinkage_coordinates"] = data.input_basis ? "features" : "columns";
  return S;
}

GraphKey graph_key(const graph::GraphOptions& g) { return GraphKey{g}; }

ListsKey lists_key(const graph::GraphOptions& g, int need, int64_t n) {
  ListsKey k;
  k.backend = graph::resolve(g.knn_method, n);
  const bool exact = k.backend == graph::KnnMethod::exact;
  k.seed = exact ? 0 : g.knn_seed;
  k.k = exact ? 0 : need;
  return k;
}

LnpKey lnp_key(const graph::LnpOptions& g, const std::string& features) { return LnpKey{g, features}; }

QuadratureKey quadrature_key(const GraphKey& graph, const std::string& features, const std::string& block,
                             int64_t width) {
  return QuadratureKey{graph, features, block, width};
}

PropagationKey propagation_key(const std::variant<GraphKey, LnpKey>& graph, const propagation::PropagationOptions& p) {
  return PropagationKey{graph, p};
}

ScatterKey scatter_key(const std::optional<PropagationKey>& soft_labels, const std::string& features) {
  ScatterKey k;
  k.soft_labels = soft_labels;
  k.features = features;
  return k;
}

TraceRatioStartKey trace_ratio_start_key(const ScatterKey& scatter, double mu, const std::string& prefix) {
  TraceRatioStartKey k;
  k.scatter = scatter;
  k.mu = mu;
  k.prefix = prefix;
  return k;
}

ScatterKey labeled_scatter_key(const TrainingData& data) { return scatter_key(std::nullopt, data.features); }

namespace {

/// The options knn_graph builds `requested` with: CLR's rank constraint asks for one
/// connected component per class (soge-liu2017 §5.2).
graph::GraphOptions resolved_graph_options(const TrainingData& data, const graph::GraphOptions& requested) {
  graph::GraphOptions options = requested;
  if (options.weight == graph::EdgeWeight::clr && options.components == 0) options.components = data.classes;
  return options;
}

}  // namespace

GraphKey resolved_graph_key(const TrainingData& data, const graph::GraphOptions& requested) {
  return graph_key(resolved_graph_options(data, requested));
}

std::shared_ptr<solvers::BlockLanczos> block_lanczos(const TrainingData& data, const QuadratureKey& key,
                                                     const std::function<std::shared_ptr<solvers::BlockLanczos>()>& make) {
  if (data.cache) {
    auto it = data.cache->quadratures.find(key);
    if (it != data.cache->quadratures.end()) return it->second;
  }
  std::shared_ptr<solvers::BlockLanczos> lz = make();
  if (data.cache) {
    // At most kMaxQuadratures recurrences per cache (each up to the solver's memory budget,
    // 6 n_local×r doubles): a grid over the graph or μ evicts the oldest. Every rank holds
    // the same entries in the same order, so every rank evicts the same one.
    GraphCache& c = *data.cache;
    c.quadratures.emplace(key, lz);
    c.quadrature_order.push_back(key);
    while (c.quadrature_order.size() > GraphCache::kMaxQuadratures) {
      c.quadratures.erase(c.quadrature_order.front());
      c.quadrature_order.erase(c.quadrature_order.begin());
    }
  }
  return lz;
}

graph::Graph knn_graph(const TrainingData& data, const graph::GraphOptions& requested, Timings& t) {
  const graph::GraphOptions options = resolved_graph_options(data, requested);
  const GraphKey key = graph_key(options);
  if (data.cache) {
    auto it = data.cache->graphs.find(key);
    if (it != data.cache->graphs.end()) {
      ++data.cache->hits;
      return it->second;
    }
    ++data.cache->misses;
  }
  Phase phase("knn_graph", &t);
  const bool adaptive = options.weight == graph::EdgeWeight::adaptive || options.weight == graph::EdgeWeight::clr;
  const int need = adaptive ? options.k + 1 : options.k;
  // Lists given by the user (--graph-in): their first `need` entries, with the recall of
  // the lists estimated as for an approximate search (they may come from anywhere).
  if (data.given_lists != nullptr) {
    const graph::KnnLists& given = *data.given_lists;
    SSDR_REQUIRE(given.k >= need, "--graph-in: the lists hold " + std::to_string(given.k) +
                                      " neighbours per sample; this graph reads " + std::to_string(need) +
                                      " (--knn " + std::to_string(options.k) +
                                      (need > options.k ? ", plus one for the adaptive weights)" : ")"));
    const graph::KnnLists lists = graph::truncate(given, need);
    graph::GraphOptions given_options = options;
    given_options.knn_method = graph::KnnMethod::nndescent;
    graph::Graph g = graph::build_knn_graph(data.graph_data(), given_options, &lists);
    if (data.cache) data.cache->graphs.emplace(key, g);
    return g;
  }
  if (!data.cache && data.lists_out == nullptr) return graph::build_knn_graph(data.graph_data(), options);
  // The lists searched apart from the graph (the same bits as the search build_knn_graph
  // would make): kept in the cache once per backend (and seed), where the exact lists of a
  // larger k hold those of a smaller one, so they are searched at the largest k asked for so
  // far; and handed to the caller for --graph-out.
  graph::KnnLists own;
  const graph::KnnLists* lists = &own;
  if (data.cache) {
    const ListsKey lkey = lists_key(options, need, data.graph_data().n_global);
    auto it = data.cache->lists.find(lkey);
    if (it == data.cache->lists.end() || it->second.k < need)
      it = data.cache->lists.insert_or_assign(lkey, graph::knn_lists(data.graph_data(), need, options)).first;
    lists = &it->second;
  } else {
    own = graph::knn_lists(data.graph_data(), need, options);
  }
  graph::Graph g = graph::build_knn_graph(data.graph_data(), options, lists);
  if (data.cache) data.cache->graphs.emplace(key, g);
  if (data.lists_out != nullptr && data.lists_out->k < lists->k)
    *data.lists_out = lists == &own ? std::move(own) : *lists;
  return g;
}

Dense add_identity(const Dense& S, double mu) {
  Dense R = S;
  for (int64_t i = 0; i < R.rows; ++i) R(i, i) += mu;
  return R;
}

/// Labeled rows of the training data with their hard labels.
LabeledPart labeled_part(const TrainingData& data) {
  std::vector<char> keep(data.labels.size());
  LabeledPart p;
  for (size_t i = 0; i < keep.size(); ++i) {
    keep[i] = data.labels[i] >= 0;
    if (keep[i]) p.labels.push_back(data.labels[i]);
  }
  p.X = select_rows(data.X, keep);
  return p;
}

/// Orthogonal trace ratio on (Sb, Sw + μI), μ = mu_scale·max diag(Sw) (eq. (16)/(32)).
FitResult solve_trace_ratio(const scatter::ScatterMatrices& S, int64_t m, double mu_scale, const MethodOptions& o,
                            const TrainingData& data, Timings& t, const std::optional<ScatterKey>& key) {
  Phase phase("eigensolve", &t);
  const double mu = mu_scale * scatter::largest_diagonal(S.Sw);
  solvers::TraceRatioOptions tro;
  tro.dim = m;
  tro.prefix = o.trace_ratio_prefix;
  if (data.cache != nullptr && key)
    tro.start = &data.cache->trace_ratio_starts[trace_ratio_start_key(*key, mu, o.trace_ratio_prefix)];
  auto r = solvers::trace_ratio(S.Sb, add_identity(S.Sw, mu), tro, data.X.comm);
  FitResult out;
  out.W = std::move(r.W);
  out.trace_ratio = r.ratio;
  out.info["mu"] = mu;
  out.info["trace_ratio_iterations"] = r.iterations;
  out.info["trace_ratio_history"] = r.history;
  out.info["trace_ratio_converged"] = r.converged;
  return out;
}

GraphAndLabels graph_and_propagation(const TrainingData& data, const graph::GraphOptions& g,
                                     const MethodOptions& o, Timings& t) {
  GraphAndLabels r;
  r.g = knn_graph(data, g, t);
  const PropagationKey key = propagation_key(graph_key(g), o.propagation);
  r.key = key;
  if (data.cache) {
    auto it = data.cache->propagations.find(key);
    if (it != data.cache->propagations.end()) {
      r.lp = it->second;
      return r;
    }
  }
  {
    Phase phase("propagation", &t);
    // The kNN graph renumbered so that each rank's neighbours sit on a few ranks (rows in
    // file order link every rank to nearly every other): the solve's halo exchange then
    // talks to those ranks only. F comes back in the rows' own layout.
    // With the level partition each rank's rows arrive in a Cuthill–McKee order already; the
    // solve still renumbers them by its local RCM (PropagationOptions::reorder), which made
    // the block product 17 % faster on 1.05 M Fashion-MNIST rows (they tied on 70 000 and on
    // the tall set): -lp_reorder false keeps the level order.
    // The graph is not read after this (graph_info reads r.g's scalars; a sweep's cache keeps
    // its own reference): the renumbered copy is handed to the solve, which drops it once its
    // RCM copy exists, so one copy of the graph, not three, lives during the solve.
    graph::Renumbering ren = graph::renumber_for_locality(r.g.A, o.propagation.prefix);
    const std::vector<int> labels = graph::to_renumbered(ren, data.labels);
    r.g.A.reset();
    r.lp = propagation::propagate(std::move(ren.B), labels, data.classes, o.propagation);
    r.lp.F = graph::from_renumbered(ren, r.lp.F, data.X.comm);  // F outlives the graph's communicator
  }
  if (data.cache) data.cache->propagations.emplace(key, r.lp);
  return r;
}

void graph_info(const graph::Graph& g, const graph::GraphOptions& options, nlohmann::json& info) {
  nlohmann::json j = {{"k", g.k},
                      {"weight", graph::to_string(g.weight)},
                      {"edges", g.edges},
                      {"mean_degree", g.mean_degree},
                      {"mean_edge_dist2", g.mean_edge_dist2},
                      {"knn_method", graph::to_string(g.knn_method)}};
  if (g.knn_method != graph::KnnMethod::exact)
    j["knn_recall"] = std::isnan(g.knn_recall) ? nlohmann::json(nullptr) : nlohmann::json(g.knn_recall);
  if (g.weight == graph::EdgeWeight::heat) {
    j["sigma_rule"] = options.sigma > 0 ? "explicit" : graph::to_string(options.sigma_rule);
    if (options.sigma == 0 && options.sigma_rule == graph::SigmaRule::soda_eq42)
      j["sigma_s"] = options.sigma_s != 0 ? options.sigma_s : 1e-3 / options.k;
    j["sigma"] = g.sigma;
    j["t"] = g.t;
  }
  if (g.weight == graph::EdgeWeight::clr) {
    j["clr_iterations"] = g.clr_iterations;
    j["clr_lambda"] = g.clr_lambda;
    j["components"] = g.components;
    j["clr_converged"] = g.clr_converged;
    j["laplacian_eigenvalues"] = g.laplacian_eigenvalues;
  }
  info["graph"] = j;
}


ScatterKey soft_scatter_key(const TrainingData& data, const GraphAndLabels& gl) {
  return scatter_key(gl.key, data.features);
}

std::shared_ptr<const scatter::ScatterMatrices> soft_scatter(const TrainingData& data, const GraphAndLabels& gl, Timings& t) {
  return soft_scatter(data, gl.lp.F, soft_scatter_key(data, gl), t);
}

std::shared_ptr<const scatter::ScatterMatrices> soft_scatter(const TrainingData& data, const DistMatrix& F,
                                                             const ScatterKey& key, Timings& t) {
  if (data.cache) {
    auto it = data.cache->scatters.find(key);
    if (it != data.cache->scatters.end()) return it->second;
  }
  Phase phase("scatter", &t);
  auto S = std::make_shared<const scatter::ScatterMatrices>(scatter::soft_scatter(data.X, F, data.classes));
  if (data.cache) data.cache->scatters.emplace(key, S);
  return S;
}

graph::LnpGraph lnp_graph(const TrainingData& data, const graph::LnpOptions& g, Timings& t) {
  const LnpKey key = lnp_key(g, data.features);
  if (data.cache) {
    auto it = data.cache->lnp_graphs.find(key);
    if (it != data.cache->lnp_graphs.end()) return it->second;
  }
  Phase phase("knn_graph", &t);
  graph::LnpGraph lnp = graph::build_lnp_graph(data.X.doubles(), g);
  if (data.cache) data.cache->lnp_graphs.emplace(key, lnp);
  return lnp;
}

propagation::PropagationResult lnp_propagation(const TrainingData& data, const LnpKey& graph, Mat W,
                                               const MethodOptions& o, Timings& t) {
  const PropagationKey key = propagation_key(graph, o.propagation);
  if (data.cache) {
    auto it = data.cache->propagations.find(key);
    if (it != data.cache->propagations.end()) return it->second;
  }
  Phase phase("propagation", &t);
  propagation::PropagationResult lp = propagation::propagate(W, data.labels, data.classes, o.propagation);
  if (data.cache) data.cache->propagations.emplace(key, lp);
  return lp;
}

DistMatrix soft_labels(const propagation::PropagationResult& lp, const TrainingData& data) {
  DistMatrix F = lp.F;
  F.comm = data.X.comm;
  return F;
}

}  // namespace ssdr::methods
