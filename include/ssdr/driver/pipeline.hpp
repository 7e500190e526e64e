#pragma once
/// \file pipeline.hpp
/// One fit, as the papers evaluate it: preprocessing fitted on the transductive samples,
/// the method on the transductive samples, the model, the embedding of every sample and
/// the 1-NN accuracy on the unlabeled and unseen samples.
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ssdr/data/preprocess.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/evaluation/one_nn.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/graph_cache.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/model/model.hpp"

namespace ssdr::driver {

/// A kernel feature map fitted on a sweep's transductive rows, with their mapped rows Φ.
struct KernelMapEntry {
  kernels::FeatureMap map;
  DistMatrix Phi;  ///< n_t × r, the transductive rows' features (Xt's layout)
  nlohmann::json info;
  /// A Nyström map's features of every local row in the embedding's tiles (model::Projector::
  /// features: the transductive rows' tiles, then the unseen rows'), kept by the first fit's
  /// evaluation so later fits of the map only multiply by their W. Empty until then, and for
  /// an exact map.
  std::vector<double> eval_tiles;
};

/// What every fit of a sweep shares for one (data set, transductive set, preprocessing): the
/// fitted preprocessing, the preprocessed transductive and other rows, and the kernel maps.
/// A fit that finds its entry skips the preprocessing and the kernel map; its results are bit
/// for bit those of a fit that computes them (they are the same deterministic computations).
struct PreparedRows {
  data::Preprocessor pre;
  DistMatrix Xt;  ///< the transductive rows preprocessed (n_t × d', each on its rank, global order)
  DistMatrixF Xt32;  ///< --precision single: Xt's rows as floats instead (Xt empty)
  DistMatrix Xu;  ///< the other (unseen) rows preprocessed, likewise
  std::map<std::string, KernelMapEntry> kernel_maps;  ///< by the kernel's options (kernels::to_json)
};

/// The outer key of every cache of a sweep: what the preprocessed rows depend on, that is
/// every field of data::PreprocessOptions and the transductive set (its size and the sum
/// mod 2⁶⁴ of data::split_key(1, i) over its global indices i, the same on any rank count).
/// Compared field by field. Built by rows_key only.
struct RowsKey {
  data::PreprocessOptions preprocess;  ///< single: --precision single
  int64_t n_global = 0;        ///< samples in the data set
  uint64_t transductive = 0;   ///< n_t
  uint64_t fingerprint = 0;    ///< Σ split_key(1, i) over the transductive i, mod 2⁶⁴
  /// The fields as a tuple: PreprocessOptions::fields(), then the transductive set's. Local.
  auto fields() const { return std::tuple_cat(preprocess.fields(), std::tie(n_global, transductive, fingerprint)); }
  /// Field-by-field order (std::map key). Local.
  bool operator<(const RowsKey& o) const { return fields() < o.fields(); }
};

/// The RowsKey of a fit with preprocessing `p` and the split `roles` (of the local rows
/// row_start.., n_global samples in all). Collective over comm (one MPI_Allreduce of two
/// integers).
RowsKey rows_key(const data::PreprocessOptions& p, const std::vector<data::Role>& roles, int64_t row_start,
                 int64_t n_global, MPI_Comm comm);

/// The sweep's cache of prepared rows, keyed by RowsKey, so cross-validation folds (same
/// transductive set) and every method and grid point of one split share an entry. Memory:
/// per entry n × d' doubles (Xt and Xu) + d × d' (the basis) + each kernel map's n_t × r Φ
/// and its map.
struct RowsCache {
  std::map<RowsKey, PreparedRows> entries;
  int hits = 0, misses = 0;
  /// The bytes its matrices take on this rank. Local.
  double bytes() const;
};

/// The graphs, kNN lists, propagations, scatter matrices and σ₀ a sweep reuses, one
/// methods::GraphCache per RowsKey: the preprocessing and the transductive set are the outer
/// key of every entry, so fits with other rows (a --grid over scaling or pca_energy) never
/// share one. The driver decides what is shared (the experiment: one per block; the
/// cross-validation: one per fold, with share_into).
struct GraphCaches {
  std::map<RowsKey, methods::GraphCache> by_rows;
  /// Copies into `to` what depends only on the transductive samples and their rows (graphs,
  /// kNN lists, LNP graphs, σ₀), not on the labels (propagations and scatter matrices do);
  /// entries `to` has are kept, except kNN lists of a smaller k. Local.
  void share_into(GraphCaches& to) const;
};

/// One fit's configuration: the method, its options and preprocessing, the parameters recorded
/// with the model, and the caches a sweep shares.
struct FitConfig {
  std::string method = "soda";
  methods::MethodOptions method_options;
  data::PreprocessOptions preprocess;
  nlohmann::json parameters = nlohmann::json::object();  ///< recorded in model and report
  /// Graphs, kNN lists, propagations and scatter matrices to reuse, by the fit's RowsKey
  /// (experiment driver: per block; cross-validation: per fold); nullptr → computed afresh.
  GraphCaches* cache = nullptr;
  /// Preprocessed rows and kernel maps to reuse (nullptr → computed afresh). Used by the
  /// fits that keep the data set (fit_and_evaluate), not by the consuming single fit.
  RowsCache* rows = nullptr;
  /// --graph-in: an HDF5 file of kNN lists of the transductive samples (graph::read_knn_lists)
  /// that every kNN graph of the fit uses instead of a search; empty: search.
  std::string graph_in;
  /// --graph-out: keep the kNN lists the fit's graph was built from in FitOutcome::knn_lists.
  bool keep_lists = false;
};

/// One fit's result: accuracies (soda-nie2009 §6 protocol: 1-NN on unlabeled and unseen
/// samples), the trace ratio, timings and the model.
struct FitOutcome {
  evaluation::Accuracy accuracy;
  double trace_ratio = std::numeric_limits<double>::quiet_NaN();
  int64_t d_reduced = 0;  ///< d' after PCA
  int64_t dim = 0;        ///< m (0 for transductive-only methods)
  methods::Timings timings;
  nlohmann::json info = nlohmann::json::object();
  model::Model model;
  DistMatrix embedding;  ///< n×m, every sample in file order (empty unless kept)
  /// The labeled samples' embedding, l×m row-major in increasing global index, and their
  /// labels (l), on every rank (projecting methods; empty for the others): the model's
  /// reference rows for predict, kept whether or not the embedding is.
  std::vector<double> labeled_embedding;
  std::vector<int> labeled_labels;
  /// The propagated soft labels F of the methods that propagate labels (methods::FitResult::
  /// soft_labels): n_t×(c+1), the transductive samples in file order, each on the rank that
  /// holds it (layout generally unbalanced); empty for the other methods.
  DistMatrix soft_labels;
  /// The kNN lists of the transductive samples the fit's graph was built from (with
  /// FitConfig::keep_lists and a method with a kNN graph; else empty, k = 0).
  graph::KnnLists knn_lists;
  /// What a graph file of this fit belongs to (data, split, preprocessing, distance; JSON,
  /// the same on every rank), with FitConfig::keep_lists or graph_in; null otherwise.
  nlohmann::json graph_provenance;
};

/// Runs one fit on the data set `ds` with the split `roles` (the roles of ds.X's local rows,
/// n_local entries, as ds.labels).
/// Timings keys: preprocess, knn_graph, propagation, scatter, eigensolve, evaluate.
/// Collective over ds.X.comm. \throws ssdr::Error (collectively) on invalid options or
/// data, e.g. a class without a labeled sample or k ≥ number of transductive samples.
/// Memory per rank: its block of X, the preprocessed transductive rows (n_t×d') and the
/// method's own (graph, soft labels, d'×d' matrices).
FitOutcome fit_and_evaluate(const io::Dataset& ds, const std::vector<data::Role>& roles,
                            const FitConfig& config, bool keep_embedding);

/// The same fit, the same results bit for bit, but it consumes ds.X (left empty; the labels
/// and the class count stay): the rows are preprocessed inside X's own memory
/// (data::apply_split) and the unseen rows are embedded from their preprocessed copy
/// (model::Projector), so the fit holds one copy of its data, n×d' instead of n×d + n_t×d'
/// (1.0× a rank's share of X plus the method's memory; the million-sample run of docs/scale.md).
/// For a single fit (`ssdr fit`); experiments and cross-validation reuse the data set and
/// call the other overload. Collective over ds.X.comm. \throws ssdr::Error as the other.
FitOutcome fit_and_evaluate_consuming(io::Dataset& ds, const std::vector<data::Role>& roles,
                                      const FitConfig& config, bool keep_embedding);

}  // namespace ssdr::driver
