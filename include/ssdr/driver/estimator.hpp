#pragma once
/// \file estimator.hpp
/// ssdr as a library: an Estimator is a method of the table with its parameters; fit(X, y)
/// learns the projection from every rank's block of rows (y = −1 for the unlabeled ones),
/// transform embeds new rows, predict labels them by 1-NN against the fit's labeled samples
/// (kept in the model), save/load write and read the model file of `ssdr fit --model`.
/// Everything is collective over the rows' communicator and quiet unless `verbose` is set.
/// The command line's fit, transform and predict go through it (src/driver/commands.cpp),
/// and so does the Python module (python/).
#include <mpi.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/sparse.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/model/model.hpp"

namespace ssdr {

namespace driver {

/// One parameter as a user gave it: its name (job-file spelling, e.g. "alpha_u"), its value
/// and how the user wrote it, for messages ("--alpha-u", "ssdr.SODA(alpha_u=...)").
struct ParameterSetting {
  std::string name;
  nlohmann::json value;
  std::string spelling;
};

/// The fit configuration of `method` with the user's parameters over the method's paper
/// preprocessing, kernel and graph: each setting is required to be one the method uses
/// (methods::require_parameter) and checked and set by methods::set_parameter, in the order
/// of methods::parameter_table() whatever the order given; `dim` is m (0: c − 1), `seed`
/// seeds NN-descent and the landmarks, `max_kernel_memory` caps the exact kernel map (MiB
/// per rank, 0: half the host's memory). config.parameters gets the values the method uses,
/// the method, dim, kernel and seed (what the model and the report record). What `ssdr fit`
/// and Estimator both build. Local (replicated: every rank checks the same settings).
/// \throws ssdr::Error (replicated) naming the spelling: unknown method, a parameter the
///   method does not use or a value out of its range; dim < 0; max_kernel_memory < 0.
FitConfig make_fit_config(const std::string& method, const std::vector<ParameterSetting>& settings, int64_t dim,
                          uint64_t seed, double max_kernel_memory);

}  // namespace driver

/// A method of the table (`ssdr methods`) with its parameters. Parameters are given by name
/// as JSON values: every parameter the method uses (`ssdr methods`, `ssdr fit --help`:
/// knn, alpha_u, mu_scale, kernel, pca_energy, ...), plus
///   dim                 m, the embedding's width (0 or absent: c − 1),
///   seed                NN-descent's and the landmarks' seed (default 0),
///   max_kernel_memory   the exact kernel map's limit in MiB per rank (0: automatic),
///   verbose             print the fit's phases on rank 0 (default false: quiet).
/// Unset parameters take the method's paper defaults, as `ssdr fit` does.
///
/// Distribution: X is given as each rank's block of rows (the rows of rank 0, then rank 1,
/// …, form the global n×d matrix: a DistMatrix whose row_start is the exclusive prefix sum of
/// the local counts, see make_dist_local), any number of rows per rank. The fitted model and
/// every row's result do not depend on the rank count or on how the rows are split among the
/// ranks (ties by global index, fixed reduction orders; see docs/design.md).
class Estimator {
 public:
  /// \throws ssdr::Error (replicated) when `method` is not in the table or a parameter is
  ///   unknown to it (the message names it and lists the method's parameters).
  explicit Estimator(std::string method, nlohmann::json params = nlohmann::json::object());
  /// An estimator around a configuration already built (the command line's, with its
  /// cross-validated choice). Local.
  explicit Estimator(driver::FitConfig config);

  /// The method's name from the method table ("soda", ...). Local.
  const std::string& method() const { return config_.method; }
  /// The parameters given so far (name → value), as given. Local.
  const nlohmann::json& params() const { return params_; }
  /// Sets more parameters (replacing those of the same name; a null value unsets one) and
  /// forgets the fitted model. Local. \throws ssdr::Error as the constructor, and for a value
  /// out of its range.
  Estimator& set_params(const nlohmann::json& params);
  /// Every parameter name `method` accepts: dim, seed, max_kernel_memory, verbose, then the
  /// table's parameters the method uses, in table order. Local.
  /// \throws ssdr::Error (replicated) when the method is unknown.
  static std::vector<std::string> parameter_names(const std::string& method);

  /// Learns the projection from X (n×d, rows distributed as above; moved in: pass
  /// std::move(X) to avoid a copy, the fit preprocesses inside its memory) and y (one entry per
  /// local row: the class 0..c−1, or −1 for an unlabeled row; c is the largest label + 1 and
  /// every class needs a labeled row). All rows are transductive (the method sees the
  /// unlabeled ones). Keeps the model with the labeled rows' embeddings for predict.
  /// Collective over X.comm. \throws ssdr::Error (collectively) when y has not one entry per
  ///   local row, a label is < −1, no row or no class is labeled, the layout of X is not the
  ///   prefix-sum layout, or the method fails on this data (the pipeline's errors).
  Estimator& fit(DistMatrix X, const std::vector<int>& y);
  /// The same for sparse rows (n×d in CSR, any number of rows per rank, the prefix-sum
  /// layout): reduced by the truncated SVD of `ssdr fit --sparse yes` (the parameter pca_dim is
  /// required, as there), so the fit gives the command line's sparse results bit for bit.
  /// Collective over X.comm. \throws ssdr::Error (collectively) as fit, and without pca_dim.
  Estimator& fit(SparseRows X, const std::vector<int>& y);

  /// The fit of `ssdr fit`: the data set's rows with a split (unseen rows too, not learned
  /// from), evaluated by 1-NN as the papers do (accuracy on the unlabeled and unseen rows);
  /// consumes ds.X (driver::fit_and_evaluate_consuming). The outcome's embedding is kept when
  /// `keep_embedding`. Collective over ds.X.comm. \throws ssdr::Error as fit.
  driver::FitOutcome fit_split(io::Dataset& ds, const std::vector<data::Role>& roles, bool keep_embedding);

  /// The embedding Y = Wᵀφ_c(preprocessed x) of every local row of X (n×d_input → n×m,
  /// X's layout; model::project, the same bits as the fit's own embedding of the row).
  /// Collective over X.comm (the checks). \throws ssdr::Error (collectively) when not fitted,
  ///   the method learns no projection, or X.cols ≠ d_input on some rank.
  DistMatrix transform(const DistMatrix& X) const;
  /// The same for sparse rows (n×d_input in CSR, X's layout; model::project(m, SparseRows):
  /// each row mapped through the model's PCA basis as the sparse fit did, never densified).
  /// Collective over X.comm. \throws ssdr::Error (collectively) as transform, and when the
  ///   model has no PCA basis (fitted with --no-pca on dense data).
  DistMatrix transform(const SparseRows& X) const;
  /// The label of every local row of X by 1-NN in the embedding against the fit's labeled
  /// rows (a distance tie to the smaller labeled index, evaluation::nearest_labels).
  /// Collective over X.comm. \throws ssdr::Error (collectively) as transform, and when the
  ///   model keeps no labeled samples (loaded from a format before 5).
  std::vector<int> predict(const DistMatrix& X) const;
  /// The same for sparse rows (CSR, as transform(const SparseRows&)). Collective over X.comm.
  std::vector<int> predict(const SparseRows& X) const;
  /// The fraction of rows with y ≥ 0 that predict labels y (NaN when there is none); y one
  /// entry per local row. Collective over X.comm. \throws ssdr::Error as predict, and when y
  ///   has not one entry per local row.
  double score(const DistMatrix& X, const std::vector<int>& y) const;

  /// Writes the model (model::save_collective: rank 0 the replicated part, each rank its rows of
  /// an exact kernel map; atomic). Collective over comm.
  /// \throws ssdr::Error (collectively) naming the path when not fitted or the write fails.
  void save(const std::string& path, MPI_Comm comm) const;
  /// An estimator of the model's method with the model of `path` (model::load_collective) and
  /// `params` (e.g. {"verbose": true}; the fit's parameters stay in model().parameters_json).
  /// Collective over comm. \throws ssdr::Error (collectively) as model::load, and as the
  /// constructor for params.
  static Estimator load(const std::string& path, MPI_Comm comm, const nlohmann::json& params = nlohmann::json::object());

  /// The soft labels F the fit propagated (soda-nie2009 eq. (25)–(27): n_t×(c+1), column c
  /// the outlier class, each row summing to 1 up to the propagation's tolerance), for this
  /// rank's transductive rows in global order (fit(X, y): every local row of X, in order).
  /// Local. \throws ssdr::Error (replicated) when not fitted here (a loaded model keeps none)
  /// or the method propagates no labels (only soda, ksoda, lp, sl-lda, sl-lda-wls do).
  const DistMatrix& soft_labels() const;
  /// The fitted model as the bytes of its file (model::to_bytes; what pickling keeps). Local.
  /// \throws ssdr::Error when not fitted, or when an exact kernel map is distributed over
  ///   more than this rank (save() writes those collectively).
  std::string to_bytes() const;
  /// An estimator with the model of `bytes` (to_bytes of any rank count), its exact kernel
  /// map distributed over comm as load() does. Collective over comm (every rank passes the
  /// same bytes). \throws ssdr::Error (collectively) as model::from_bytes_collective.
  static Estimator from_bytes(const std::string& bytes, MPI_Comm comm,
                              const nlohmann::json& params = nlohmann::json::object());
  /// Records the user's names of the classes 0..c−1 (a JSON array of c values) in the
  /// model's parameters ("class_names"), so a saved or pickled model restores them (the
  /// Python classes_). Local. \throws ssdr::Error when not fitted or the count is not c.
  Estimator& set_class_names(const nlohmann::json& names);

  /// Whether fit() has succeeded (or a model was loaded). Local.
  bool fitted() const { return fitted_; }
  /// The fitted model. \throws ssdr::Error (replicated) when not fitted.
  const model::Model& model() const;
  /// What the fit recorded (graph, σ, iterations, …: the report's info) and its trace ratio.
  const nlohmann::json& info() const { return info_; }
  double trace_ratio() const { return trace_ratio_; }
  /// The configuration a fit uses (make_fit_config of the parameters).
  const driver::FitConfig& config() const { return config_; }

 private:
  void configure();
  void require_projection(const char* what, MPI_Comm comm) const;
  /// X (DistMatrix or SparseRows) checked and embedded for `what` ("transform", "predict").
  /// Collective over X.comm. Defined (and instantiated) in estimator.cpp only.
  template <class Rows>
  DistMatrix project(const Rows& X, const char* what) const;
  /// predict's one body for dense and sparse rows. Collective over X.comm. As project.
  template <class Rows>
  std::vector<int> predict_rows(const Rows& X) const;
  std::vector<int> nearest_labeled(const DistMatrix& Y) const;  // predict's 1-NN of embedded rows
  nlohmann::json params_ = nlohmann::json::object();
  driver::FitConfig config_;
  /// Quiet unless `verbose` while it computes (the global set_quiet switch, restored after);
  /// an estimator made from a FitConfig (the command line) leaves the switch alone.
  bool manage_quiet_ = true;
  bool verbose_ = false;
  bool fitted_ = false;
  bool loaded_ = false;  ///< the model came from a file or bytes (no soft labels)
  model::Model model_;
  DistMatrix soft_labels_;
  nlohmann::json info_ = nlohmann::json::object();
  double trace_ratio_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace ssdr
