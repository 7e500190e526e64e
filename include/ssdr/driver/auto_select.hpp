#pragma once
/// \file auto_select.hpp
/// `--method auto` (`method: auto` in job files, Python's ssdr.Auto): the method, its
/// dimension m and its parameters chosen by k-fold cross-validation on the labeled samples
/// only (select_candidates: transductive CV, the unlabeled samples stay in every fold's
/// graph and their labels are never read), then the chosen configuration fitted on every
/// labeled sample. The model is the chosen method's, so transform and predict need nothing
/// of auto.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ssdr/driver/estimator.hpp"
#include "ssdr/driver/selection.hpp"

namespace ssdr::driver {

/// The name the user writes: "auto".
extern const char* const kAutoMethod;

/// Whether `method` is "auto". Local.
bool is_auto(const std::string& method);

/// Whether the user may set parameter `name` (job-file spelling) for auto: the preprocessing
/// and column-length options every method takes (scaling, pca_energy, pca_dim, pca,
/// precision, normalize) and the kNN backend's (knn_method, ...); each then holds for every
/// candidate that uses it, and a given `scaling` replaces the candidates' none/standardize.
/// Local.
bool auto_accepts(const std::string& name);

/// The configuration of auto: method "auto", the user's settings checked (auto_accepts, and
/// each value by methods::set_parameter as for any method) and recorded in parameters
/// ("settings"), `dim` (0: chosen; else every candidate at m = dim), the seed of the folds,
/// of NN-descent and of the landmarks, the folds k, and `race` ("auto_race": select_candidates'
/// exact racing, `--auto-race on|off`; off scores every candidate on every fold, for studies
/// of the rule, with the same choice), and `groups` ("groups", recorded when > 1:
/// select_candidates' groups of ranks, `--groups G`, each scoring one scaling's candidates on
/// its own copy of the rows). What `ssdr fit --method auto` and Estimator("auto") both build.
/// Local (replicated).
/// \throws ssdr::Error (replicated) naming the spelling: a parameter auto does not take (it
///   chooses it), a value out of range, dim < 0, cv_folds < 2, groups < 1 (more groups than
///   ranks is refused by select_candidates, collectively).
FitConfig make_auto_config(const std::vector<ParameterSetting>& settings, int64_t dim, uint64_t seed,
                           double max_kernel_memory, int cv_folds, bool race = true, int groups = 1);

/// The candidates of auto for c classes and d input features: per scaling the default family
/// first (preferred by select_candidates, whose race then has its bar: SL-LDA at
/// α_u = 1/(1 + 10⁻³)), then the others simplest first (a CV tie goes to the earlier, but a
/// tie with the default family to it; docs/methods-guide.md "How auto chooses"):
///  - per scaling, standardize then none (each feature's units are the user's; only one if
///    the user gave --scaling):
///    - sl-lda (sllda-zhao2014) at α_u = 1/(1 + 10⁻³), m = 1 … c − 1 (the default family);
///    - lda with Ledoit–Wolf shrinkage (scikit-learn's shrinkage LDA), m = 1 … c − 1;
///    - sda with Ledoit–Wolf shrinkage on its kNN graph (Cai et al. 2007), m = 1 … c − 1;
///    - sl-lda at α_u = 1/(1 + 1) (λ = 1 of its paper's grid), m = 1 … c − 1;
///    - soda (soda-nie2009) with μ = 0.1 μ₀ and μ₀ (sec. 5.2/5.3.1), m = c − 1;
///  each m at most d, and only `dim` when the user fixed it. The nested methods (lda, sda,
///  sl-lda) fit once per fold for all their m. Local.
std::vector<Candidate> auto_candidates(const FitConfig& auto_config, int classes, int64_t d);

/// Chooses by select_candidates among auto_candidates(auto_config, ds.classes, ds.X.cols) on
/// the folds of cv_folds(…, seed), racing unless auto_config's "auto_race" is false, in
/// auto_config's "groups" groups of ranks. Without a sweep's caches (auto_config.cache and
/// .rows null: `ssdr fit`, the Estimator), on a copy of the transductive rows alone when there
/// are unseen ones (dense or in the file's type; the unseen rows take no part in a fold), so a
/// fold neither preprocesses nor embeds them: the same scores, at a memory of the transductive
/// rows (docs/methods-guide.md). ds: n
/// samples, X distributed by rows with their labels; roles: of ds.X's local rows. The report
/// (Selection::report) adds "method": "auto". Collective over ds.X.comm.
/// \throws ssdr::Error (collective) as select_candidates.
Selection select_auto(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& auto_config,
                      uint64_t seed);

/// Whether select_auto(ds, roles, auto_config, ·) selects on a copy of the transductive rows
/// (transductive_copy): ds has unseen rows, keeps them dense or in the file's type (not
/// sparse), and auto_config has no sweep's caches (.cache, .rows null). A caller that holds
/// ds only for the fit after the selection may then make the copy itself, release ds while
/// the selection runs and read it again (`ssdr fit`: the selection's memory is that of the
/// transductive rows, not of the whole data set). roles: of ds.X's local rows. Collective
/// over ds.X.comm (one MPI_Allreduce).
bool selects_on_copy(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& auto_config);

/// The transductive rows of ds (labeled and unlabeled; not the unseen), in global order,
/// balanced over ds.X.comm's ranks (n_t·r/P … n_t·(r+1)/P on rank r of P), as dense doubles or
/// in the file's type as ds holds them (not sparse), with their labels; `roles_out` receives
/// their roles (one per local row of the copy). No ids. select_auto(copy, roles_out, …) scores
/// exactly as select_auto(ds, roles, …). Collective over ds.X.comm.
/// \throws ssdr::Error (collective) for sparse rows or when roles has not one role per local row.
io::Dataset transductive_copy(const io::Dataset& ds, const std::vector<data::Role>& roles,
                              std::vector<data::Role>& roles_out);

}  // namespace ssdr::driver
