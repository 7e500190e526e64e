#pragma once
/// \file method.hpp
/// The methods: each one is a class behind the Method interface, registered by name in one
/// table (method_table) that drives the help text, validation and dispatch.
#include <nlohmann/json.hpp>

#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/lnp.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/normalization.hpp"
#include "ssdr/propagation/label_propagation.hpp"

namespace ssdr::methods {

/// Seconds per named stage ("knn_graph", "propagation", "scatter", "eigensolve", ...).
using Timings = std::map<std::string, double>;

/// Parameters shared by the methods (each uses the ones it needs; paper defaults).
struct MethodOptions {
  int64_t dim = 0;                              ///< m; 0 → the method's default (c − 1)
  /// The user's graph choices (--knn, --weight, --sigma-s); what the user did not choose
  /// comes from the method's paper graph, MethodInfo::graph (see method_graph).
  graph::GraphOptions graph;
  bool knn_given = false;     ///< the user chose k (--knn): graph.k overrides the method's k
  bool weight_given = false;  ///< the user chose --weight: graph.weight overrides the method's
  propagation::PropagationOptions propagation;  ///< α_u = 0.99, prefix lp_
  double lda_regularization = 1e-3;             ///< LDA: S_t + r·tr(S_t)/d·I
  std::string trace_ratio_prefix = "tr_";       ///< SLEPc prefix of the trace-ratio solves
  std::string eigen_prefix = "eig_";            ///< SLEPc prefix of the other eigen-solves
  // Parameters several method families share, named by the papers' symbols; NaN means "the
  // method's paper default", which each method documents and records in FitResult::info.
  double alpha = std::numeric_limits<double>::quiet_NaN();  ///< --alpha (TCA/OTCA/SOGE/SL-LDA/SDA α)
  double beta = std::numeric_limits<double>::quiet_NaN();   ///< --beta (TCA/OTCA/SDA β)
  /// The parameters one method family declares in its own file (MethodFamily::parameters in
  /// src/methods/impls/: soda's mu_scale, OTCA's gamma, SOGE's mu and recursions, SL-LDA's
  /// eigenvalue_scaling, M-SSGDA's lambda), by job-file name, each value checked by its spec
  /// (set_parameter); a name absent means the method's paper default.
  nlohmann::json own = nlohmann::json::object();
  /// own[name] as a number, `paper_default` when it is not set. Local.
  double own_number(const std::string& name, double paper_default) const {
    const auto it = own.find(name);
    return it == own.end() ? paper_default : it->get<double>();
  }
  /// own[name] as a flag, `paper_default` when it is not set. Local.
  bool own_flag(const std::string& name, bool paper_default) const {
    const auto it = own.find(name);
    return it == own.end() ? paper_default : it->get<bool>();
  }
  /// --normalize: the length of W's columns (see normalization.hpp). unit by default for
  /// every method whose paper fixes no scale: lda, gda, sda, sl-lda and SSGDA's GDA steps,
  /// and for OTCA (unit measured better than the lengths of its least-squares term (25)).
  /// TCA keeps the scale of its paper's constraint (20) (metric) unless --normalize is
  /// given (normalization_given); sl-lda --eigenvalue-scaling implies metric. The
  /// trace-ratio methods (soda, oda, ksoda), olda, pca, soge and 1nn return orthonormal W
  /// and sl-lda-wls its least-squares solution whatever this says.
  Normalization normalization = Normalization::unit;
  /// True when the user chose the normalization (--normalize, job key normalize).
  bool normalization_given = false;
  /// --shrinkage: NaN = none (each method's own regularizer, its paper's), kShrinkageAuto =
  /// the Ledoit–Wolf coefficient of every covariance (scikit-learn's shrinkage="auto"), else
  /// the fixed coefficient in [0, 1] (scatter/shrinkage.hpp). lda, gda and sda.
  double shrinkage = std::numeric_limits<double>::quiet_NaN();
};

/// MethodOptions::shrinkage for --shrinkage auto (Ledoit–Wolf).
constexpr double kShrinkageAuto = -1;

/// v when it is set (not NaN), else the default.
inline double or_default(double v, double fallback) { return v == v ? v : fallback; }

struct GraphCache;

/// What a method learns from: the transductive samples (labeled + unlabeled) after
/// preprocessing, rows distributed (n_t × d', any layout), with one label per local row
/// (class in 0..c−1, or −1 when the label is hidden). The rows are in the precision the fit
/// keeps them in (--precision): the graph, scatter and embedding code reads float rows as
/// they are; any other reader calls X.doubles() (RowsView).
struct TrainingData {
  RowsView X;
  const std::vector<int>& labels;
  int classes;
  /// The samples in input space (after preprocessing), same rows as X, on which graphs are
  /// built; nullptr → X. With a kernel, X holds the centered feature map Φ_c and graphs stay
  /// in input space, as KSODA's does (soda-nie2009 §4).
  const RowsView* graph_X = nullptr;
  const RowsView& graph_data() const { return graph_X ? *graph_X : X; }
  /// The sweep's store of graphs and propagations already computed for these samples (same
  /// data, split and preprocessing: the driver's GraphCaches entry for their RowsKey);
  /// nullptr → compute afresh. Opaque to a method: it asks methods/common.hpp's functions
  /// (knn_graph, graph_and_propagation, soft_scatter, solve_trace_ratio, ...) for what it needs.
  GraphCache* cache = nullptr;
  /// What X holds when it is not the preprocessed rows: the kernel map's options (JSON), ""
  /// otherwise. Part of the cache key of everything computed from X itself (scatter
  /// matrices, SL-LDA's LNP graph), so a kernel method and a linear one never share them.
  std::string features;
  /// --graph-in: the kNN lists of graph_data()'s rows (graph::read_knn_lists), with at least
  /// the k a graph reads; used instead of a search by every kNN graph of the fit. nullptr →
  /// search.
  const graph::KnnLists* given_lists = nullptr;
  /// --graph-out: receives the kNN lists the fit's kNN graph was built from (the widest
  /// when it builds several). nullptr → not kept.
  graph::KnnLists* lists_out = nullptr;
  /// The PCA basis V (d×d', orthonormal columns) that took the user's features (after
  /// --scaling) to X's columns, for what is defined in the features' own coordinates
  /// (--shrinkage auto standardizes each feature, as scikit-learn does); nullptr: X's columns
  /// are the coordinates (--no-pca, or a kernel map).
  const Dense* input_basis = nullptr;
};

/// What Method::fit returns: the projection W (d'×m, replicated), the trace ratio, and the
/// transductive by-products (predictions, soft labels F).
struct FitResult {
  Dense W;  ///< d'×m projection (0×0 for purely transductive methods such as lp)
  double trace_ratio = std::numeric_limits<double>::quiet_NaN();
  /// Transductive predictions per local row of TrainingData::X (lp only; empty otherwise).
  std::vector<int> transductive_prediction;
  /// The propagated soft labels F (n_t×(c+1), the rows of TrainingData::X in its layout;
  /// column c is the outlier class, soda-nie2009 eq. (25)–(27); rows sum to 1 up to the
  /// propagation's tolerance) of the methods that propagate labels (soda, ksoda, lp, sl-lda,
  /// sl-lda-wls); empty (0×0) for the others.
  DistMatrix soft_labels;
  nlohmann::json info = nlohmann::json::object();  ///< σ, iterations, μ, ...
  /// The column scale of W as returned (recorded in the model): unit for unit-length or
  /// orthonormal columns, metric for the scale the method's criterion fixes (see
  /// Normalization).
  Normalization normalization = Normalization::unit;
};

struct MethodInfo;

/// A dimensionality-reduction (or transductive) method. fit() is collective over X.comm.
class Method {
 public:
  virtual ~Method() = default;
  /// Fits on `data` with the user's `options` over the defaults of `row`, the method table's
  /// row this object was made from (its graph: method_graph(row, options)); one class may
  /// serve several rows (SODA: soda and ksoda; LDA: lda and gda).
  /// \throws ssdr::Error (collectively) on invalid options for this data (e.g. m > d').
  virtual FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& options,
                        Timings& timings) = 0;
};

/// Candidate values per parameter, in sweep order: (job-file name, values) pairs; the
/// method's cross-validation grid (MethodInfo::cv_grid) and `--grid` (driver::Grid).
using ParameterGrid = std::vector<std::pair<std::string, std::vector<nlohmann::json>>>;

/// One row of the method table: everything the program knows of a method besides its class.
/// A built-in method is one file of src/methods/impls/ holding its class and its row
/// (docs/design.md, "Adding a method"); check_method_row says what a complete row holds.
struct MethodInfo {
  std::string name;      ///< --method NAME
  std::string summary;   ///< one line for --help
  std::string source;    ///< paper and equations
  bool uses_unlabeled = false;  ///< learns from the unlabeled samples (graph-based)
  bool projects = false;        ///< produces W (false: transductive classifier only)
  std::unique_ptr<Method> (*make)() = nullptr;  ///< the factory of the method's class
  /// The preprocessing the method's paper uses, applied unless the user passes --scaling,
  /// --pca-energy or --no-pca (e.g. SOGE: global scaling and PCA keeping 95 % energy).
  data::PreprocessOptions preprocess = {};
  /// The kernel the method's paper uses (KSODA: polynomial p = 3; GDA/SSGDA: RBF), applied
  /// unless the user passes --kernel. type none: a linear method on the preprocessed data.
  kernels::KernelOptions kernel = {};
  /// The kNN graph the method's paper uses (k, weights, σ rule), applied unless the user
  /// passes --knn/--weight/--sigma-s (method_graph); set exactly for the methods that build
  /// one through method_graph, which are those whose parameters include knn, weight and
  /// sigma_s. Empty for the others (SL-LDA's LNP graph is lnp_graph; SSGDA's is its own).
  std::optional<graph::GraphOptions> graph = std::nullopt;
  /// The LNP (reconstruction-weight) graph the method's paper uses (k and the regularization
  /// r of sllda-zhao2014 eq. (2)), applied unless the user passes --knn (method_lnp_graph);
  /// set exactly for the methods that build one through method_lnp_graph (sl-lda,
  /// sl-lda-wls), whose parameters include knn but not weight or sigma_s.
  std::optional<graph::LnpOptions> lnp_graph = std::nullopt;
  /// The first m' columns of the solution for m are the solution for m' (eigenvector
  /// methods), so one fit at the largest m gives every smaller dimension; false for the
  /// trace ratio (SODA/ODA), SOGE and OTCA, whose subspaces for different m are not nested.
  bool nested_dimensions = false;
  /// The method's own parameters, by their job-file names (own-scoped specs of
  /// parameter_table(): the shared knn, weight, sigma_s, alpha_u, alpha, beta, shrinkage, and
  /// the ones its family declares, e.g. mu_scale, gamma). A user who sets one
  /// the method does not use gets an error instead of a silently ignored value
  /// (uses_parameter). Parameters every method takes (dim, normalize, preprocessing, and the
  /// kernel for projecting methods) are not listed.
  std::vector<std::string> parameters = {};
  /// The candidates its paper cross-validates (`--select-by cv` without --grid, a job's
  /// `cv_grid: default`), nearest the paper's default first so that a CV tie goes to the
  /// default; only parameters the method uses. An RBF kernel's sigma_scale comes before
  /// them whatever the method (driver::default_grid). Empty: the paper selects nothing.
  ParameterGrid cv_grid = {};

  /// make()->fit(*this, data, options, timings): a fresh object of the method fitted as this
  /// row. Collective over data.X.comm, as Method::fit.
  FitResult fit(const TrainingData& data, const MethodOptions& options, Timings& timings) const;
};

/// Whether `method` uses the parameter `name` (job-file spelling, e.g. "alpha_u"), by the
/// parameter's scope in parameter_table(): its own (MethodInfo::parameters), one every method
/// takes (dim, normalize, scaling, pca_energy, pca), the kernel's when the method projects,
/// the kNN backend's when the method builds a kNN graph. Local.
bool uses_parameter(const MethodInfo& method, const std::string& name);
/// Whether the method's fit propagates labels (soda-nie2009 eq. (25)–(27); its
/// FitResult::soft_labels, `ssdr fit --soft-labels`): the methods whose own parameters hold
/// the propagation's α_u (soda, ksoda, lp, sl-lda, sl-lda-wls). Local.
bool propagates_labels(const MethodInfo& method);
/// Refuse a parameter the method does not use. `spelling` is how the user wrote it
/// ("--beta", "job.yaml: line 7: beta"). \throws ssdr::Error (replicated) "SPELLING is not a
/// parameter of METHOD (its parameters: ...)".
void require_parameter(const MethodInfo& method, const std::string& name, const std::string& spelling);

/// The rows of the method table. A deque: a registered row (MethodRegistration) is appended
/// without moving the others, so references from find_method stay valid.
using MethodTable = std::deque<MethodInfo>;
/// All methods, in help order (the built-in rows, family by family as the files of
/// src/methods/impls/ order them, then the registered ones in registration order). Built on
/// first use. Local.
/// \throws ssdr::Error (replicated) when a built-in row is incomplete (check_method_row) or
///   two rows share a name.
const MethodTable& method_table();
/// The entry for `name`. \throws ssdr::Error (collective: same on every rank) listing the
/// valid names when unknown.
const MethodInfo& find_method(const std::string& name);
/// "soda, oda, lda, lp" for help and error texts.
std::string method_names();

/// The graph a method builds: its row's `graph` (the paper's) with the user's choices put
/// over it — k when o.knn_given, the weights when o.weight_given, eq. (42) with s when
/// o.graph.sigma_s ≠ 0, an explicit σ when o.graph.sigma > 0. Local.
/// \throws ssdr::Error (replicated) when the row has no graph (a method that builds no kNN
///   graph; an internal error, refused by check_method_row for the table's rows).
graph::GraphOptions method_graph(const MethodInfo& method, const MethodOptions& o);
/// The LNP graph a method builds: its row's `lnp_graph` (the paper's) with k from o.graph.k
/// when o.knn_given, searched by the run's kNN backend and seed (o.graph.knn_method,
/// knn_seed). Local.
/// \throws ssdr::Error (replicated) when the row has no LNP graph (an internal error).
graph::LnpOptions method_lnp_graph(const MethodInfo& method, const MethodOptions& o);

/// Checks that `row` is complete and consistent: a name (non-empty, no white space), a summary
/// and a source (it is documented: `ssdr methods`, docs/methods.md), a factory; every own
/// parameter an own-scoped spec of parameter_table(); a graph exactly when its parameters
/// include knn, weight and sigma_s (a graph on a row that builds none would be ignored, a
/// graph method without one has no defaults), and no weight or sigma_s without a graph; an
/// LNP graph only with knn and without a kNN graph, and knn only with one of the graphs; a
/// cross-validation grid of parameters the method uses, each with at least one value and
/// every value in its spec's range. Local.
/// \throws ssdr::Error (replicated) "method table: NAME: WHAT".
void check_method_row(const MethodInfo& row);

/// A method row added to the table for the lifetime of this object, after the built-in
/// rows: the way a method defined outside the library (tests/unit/added_method_test.cpp)
/// enters find_method, method_table and so every command. Registrations end in reverse
/// order. Local: every rank registers the same rows, as the table is replicated.
class MethodRegistration {
 public:
  /// \throws ssdr::Error (replicated) when the row is incomplete (check_method_row) or its
  ///   name is already in the table.
  explicit MethodRegistration(MethodInfo row);
  ~MethodRegistration();
  MethodRegistration(const MethodRegistration&) = delete;
  MethodRegistration& operator=(const MethodRegistration&) = delete;
  /// The row as the table holds it.
  const MethodInfo& row() const { return *row_; }

 private:
  const MethodInfo* row_;
};

/// The m a method uses: options.dim, or c−1 by default; checked against d'.
/// \throws ssdr::Error (collective) when m ∉ [1, d'].
int64_t resolve_dim(int64_t requested, int classes, int64_t d);

}  // namespace ssdr::methods
