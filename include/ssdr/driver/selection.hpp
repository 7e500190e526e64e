#pragma once
/// \file selection.hpp
/// Parameter selection by k-fold cross-validation on the labeled samples only, the way
/// ssgda-zhang-yeung (sec. IV: σ and λ) and sllda-zhao2014 (sec. 5: α_u) choose their
/// parameters, shared by `ssdr fit|evaluate --select-by cv` and `ssdr experiment`
/// (`select_by: cv`, `cv_grid`); and the named parameters both accept (`--grid NAME=...`,
/// the job file's keys).
///
/// No unlabeled or unseen label is looked at: each fold's labeled samples are hidden
/// (they become unlabeled, so the transductive set — graph, kernel map, preprocessing —
/// is the same in every fold) and scored by 1-NN against the remaining labeled samples.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/method.hpp"

namespace ssdr::driver {

/// A parameter grid: (name, candidate values) pairs in sweep order; names from
/// parameter_names().
using Grid = methods::ParameterGrid;

/// The parameters a grid or a job may set: the names of methods::parameter_table() (the
/// command-line options without dashes, '-' → '_'). Local.
const std::set<std::string>& parameter_names();

/// Sets the parameter `key` of `config` to `value` through its spec (methods::set_parameter:
/// method options, preprocessing, or the kernel options kept in config.parameters["kernel"])
/// and records it in config.parameters.
/// `context` starts every error message ("--grid", "job.yaml"). Local.
/// \throws ssdr::Error (collective: every rank sets the same values) "<context>: parameter
///   KEY: expected ..., got ..." for an unknown key or a value of the wrong kind.
void set_parameter(FitConfig& config, const std::string& key, const nlohmann::json& value,
                   const std::string& context);

/// Parses one `--grid NAME=v1,v2,...` argument; a value is a number when it parses as one
/// (integers stay integers), else a string. Local.
/// \throws ssdr::Error (collective) "--grid 'TEXT': ..." naming what was expected.
std::pair<std::string, std::vector<nlohmann::json>> parse_grid_argument(const std::string& text);

/// Every point of the grid's Cartesian product as a JSON object {name: value, ...}, the
/// last parameter varying fastest; an empty grid has one empty point. Local.
std::vector<nlohmann::json> grid_points(const Grid& grid);

/// The candidates the papers cross-validate, for the method and kernel of `config`:
///  - an RBF kernel (whatever the method): sigma_scale ∈ {1, 10⁻¹, 10, 10⁻², 10², 10⁻³, 10³},
///    i.e. σ = scale·σ₀ with σ₀ the mean pairwise distance (ssgda-zhang-yeung sec. IV:
///    σ₀·{10⁻³, …, 10³});
///  - then the method's own, its row's methods::MethodInfo::cv_grid (src/methods/table.cpp:
///    m-ssgda's λ, sl-lda's and sl-lda-wls's α_u, each with its paper's reason).
/// Candidates are listed nearest the method's default first, so a CV tie (common with a
/// few labeled samples) goes to the value nearest the default. Empty for other methods.
/// Local.
Grid default_grid(const FitConfig& config);

/// The CV fold of every local row (labels and roles of this rank's rows, n_local entries; the
/// result likewise): labeled samples get 0..k−1, the others −1, with
/// k = min(folds, number of labeled samples). Classes in order 0..c−1; within a class the
/// labeled samples (in sample order) are shuffled by Fisher–Yates driven by
/// std::mt19937_64(seed) (explicit modulo arithmetic) and dealt
/// round-robin into the folds, continuing where the previous class stopped: a stratified
/// split, fold sizes differ by at most one and each fold holds ⌊l_c/k⌋ or ⌈l_c/k⌉ of class c.
/// Depends only on labels, roles and seed: the same folds for every rank count. The labeled
/// samples' labels (l, never n) are gathered on every rank. Collective over comm.
/// \throws ssdr::Error (collective) when folds < 2 or a class has fewer than two
///   labeled samples (hiding a fold could leave it without one), naming the class by `names`
///   (data::class_text; the code when empty).
std::vector<int> cv_folds(const std::vector<int>& labels, const std::vector<data::Role>& roles, int classes,
                          int folds, uint64_t seed, MPI_Comm comm, const std::vector<std::string>& names = {});

/// Graph caches a cross-validation keeps across the candidates of a grid: one per fold
/// (propagations depend on the fold's labels) and `shared` for what depends only on the
/// transductive samples, which every fold shares (kNN graphs, σ₀).
struct CvCaches {
  GraphCaches shared;
  std::vector<GraphCaches> folds;
};

/// Outcome of one configuration's cross-validation.
struct CvScore {
  double accuracy = 0;     ///< correctly classified held-out samples / labeled samples (pooled over folds)
  int64_t correct = 0, scored = 0;
  int folds = 0;
  int fallback_to_gda = 0;  ///< folds in which SSGDA selected no unlabeled sample (FitResult::info)
  /// Per fold f = 0..folds−1: its held-out samples classified correctly, and scored.
  std::vector<int64_t> fold_correct, fold_scored;
  /// cross_validate_dims: why this m was not scored (the method refused it, e.g. m beyond d'),
  /// empty when it was (replicated).
  std::string error;
  /// cross_validate_dims' keep_going stopped the cross-validation after folds_done folds
  /// (select_candidates' race): correct, scored and fold_correct/fold_scored count those
  /// folds only, the later folds are 0, and accuracy is NaN (not a k-fold accuracy).
  bool stopped = false;
  int folds_done = 0;
};

/// cross_validate_dims' hook: called before fold f (f = 0 … k − 1, so first before any fit)
/// with f, the folds done, and the scores so far (one per m; fold_correct/fold_scored of
/// folds < f filled). Returning false stops the cross-validation there: every m not refused
/// gets CvScore::stopped. Must return the same on every rank (decide on the scores' counts,
/// which are allreduced).
using CvKeepGoing = std::function<bool(int folds_done, const std::vector<CvScore>& scores)>;

/// k-fold CV of one configuration on the labeled samples: for each fold f (cv_folds), the
/// fold's labeled samples become unlabeled (roles only; still transductive), the method is
/// fitted (fit_and_evaluate) and each held-out sample is classified by 1-NN in the
/// embedding against the remaining labeled samples. Collective over ds.X.comm; the fits
/// use `caches` (nullptr: none). ds: n samples distributed by rows; roles, folds: of ds.X's
/// local rows (n_local entries). \throws ssdr::Error (collective) when the method does not project (lp) or
/// a fit fails.
CvScore cross_validate(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& config,
                       const std::vector<int>& folds, CvCaches* caches);

/// cross_validate at each m of `dims` (each ≥ 1, or 0 for the configuration's own default c − 1;
/// one CvScore per entry, in order). A method
/// whose solutions are nested (methods::MethodInfo::nested_dimensions: the first m' columns of
/// the m-dimensional W are the m'-dimensional W) is fitted once per fold at the largest m
/// and each smaller m scored on the leading columns of that embedding, which is what a fit at
/// m gives; any other method is fitted once per m. An m the method refuses (a collective
/// ssdr::Error of its fit: m beyond d' or the rank of S_b) gets CvScore::error and the others
/// are still scored (a nested method whose widest m is refused is fitted per m).
/// `keep_going` (empty: every fold) may stop the cross-validation before a fold
/// (CvKeepGoing, CvScore::stopped). Collective over ds.X.comm.
/// \throws ssdr::Error (collective) as cross_validate, when every m was refused (the first's
///   reason), and when dims is empty or holds m < 0.
std::vector<CvScore> cross_validate_dims(const io::Dataset& ds, const std::vector<data::Role>& roles,
                                         const FitConfig& config, const std::vector<int64_t>& dims,
                                         const std::vector<int>& folds, CvCaches* caches,
                                         const CvKeepGoing& keep_going = {});


/// The chosen configuration and what the selection did.
struct Selection {
  FitConfig config;  ///< the base configuration with the chosen grid point set
  /// {"by": "cv", "folds": k, "seed", "grid", "candidates": [{"params", "cv_accuracy",
  ///  "correct", "scored", "fallback_to_gda_folds"} or {"params", "error"}], "chosen",
  ///  "cv_accuracy", "seconds"}: recorded in the report's info["selection"].
  nlohmann::json report;
};

/// Chooses the grid point with the highest cross_validate accuracy; a tie goes to the
/// earlier point (grid order). A candidate whose fit fails with a collective ssdr::Error (a
/// solver that does not converge, a rejected option) is recorded with its message and
/// skipped. `seed` fixes the folds (cv_folds). ds: n samples, X distributed by rows with
/// their labels; roles: of ds.X's local rows (n_local entries). The kNN graphs and σ₀ of base.cache (if any) are
/// reused. Collective over ds.X.comm.
/// \throws ssdr::Error (collective) when the grid is empty, the method does not project, a
///   class has fewer than two labeled samples, or every candidate failed.
Selection select_by_cv(const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& base,
                       const Grid& grid, int folds, uint64_t seed);

/// One candidate of a selection: a complete configuration (its method, parameters and
/// preprocessing), the parameters that tell it from the other candidates (the report's and
/// the CV table's "params"; "dim" is added per entry of dims), and the dimensions m to score
/// (empty: the configuration's own m, 0 meaning c − 1).
struct Candidate {
  FitConfig config;
  nlohmann::json point = nlohmann::json::object();
  std::vector<int64_t> dims;
  /// The default family (select_candidates): another candidate replaces the best of these
  /// only when it beats it by more than one standard error of its CV accuracy.
  bool preferred = false;
};

/// Chooses among `candidates` by cross_validate_dims on the same folds (cv_folds seeded by
/// `seed`): the highest pooled held-out accuracy; a tie goes to the earlier entry, candidates
/// in order and each candidate's dims in order (callers list the simpler first).
/// With preferred candidates (Candidate::preferred, a default family), the best of them, A
/// (pooled accuracy p over n held-out samples), is chosen unless the best of all, B, has
///   acc(B) > p + √(max(p(1 − p), 1/n)/n),
/// one binomial standard error above it (choose_entry; the floor 1/n means (n − 1)/n is never
/// beaten by n/n): with a few labeled samples the k-fold accuracies of many candidates differ
/// mostly by chance and their maximum is biased upward (the winner's curse), so a candidate
/// must beat the default by more than the CV's own noise; with many labeled samples the rule
/// becomes the plain maximum. A tie between A and an earlier candidate goes to A. Decided on
/// integer counts: the same choice on any rank count. The report then has
/// "preferred_margin" (that standard error) and each preferred entry "preferred": true; when
/// no preferred entry was scored (all failed), the plain rule and its text. A candidate
/// whose fit fails with a collective ssdr::Error is recorded with its message and skipped.
/// The report is Selection::report's, with one entry per (candidate, m) holding its per-fold
/// accuracies ("fold_accuracy"). `context` starts the messages ("--select-by cv", "--method
/// auto"). Preprocessed rows, graphs and σ₀ are shared by every candidate and fold with the
/// same preprocessing (RowsCache, CvCaches).
///
/// Racing (`race`, the default; `--auto-race off` turns it off): exact, the same choice and
/// the same scores of every entry it scores as scoring everything. Once a preferred entry has
/// been scored (callers list the preferred first), a non-preferred candidate is checked before
/// each of its folds: with a the best preferred count so far and n the held-out samples (every
/// preferred entry having scored all n), each of its entries can reach at most
/// bound = correct so far + the held-out samples of the folds not yet scored; when no bound
/// reaches least_beating_count(a, n) (race_cannot_win), the candidate stops. Why that cannot
/// change the choice: its final counts are ≤ the bounds; the final best preferred A ≥ a, and
/// least_beating_count is nondecreasing in a, so none of its entries could beat A by one
/// standard error, and they are not preferred; so dropping them from choose_entry leaves its
/// answer (the first best entry B, if one of them, did not beat A, so the choice was A, and any
/// remaining entry below B does not beat A either; if B is not one of them, B and A are the
/// same). Never without a preferred entry scored (the rule is then the plain maximum). A
/// stopped candidate's entries are reported with "pruned": true, "folds_scored", the partial
/// "correct"/"scored" and "bound", and no "cv_accuracy"; the report has "race" and "pruned"
/// (the number of pruned entries).
/// Groups (`groups` G > 1, `--groups`): ds.X.comm is split into G groups of contiguous ranks,
/// as the experiment driver's; each group receives a copy of every row (distributed over its
/// ranks: G copies in all, so a rank holds about G/P of the rows instead of 1/P) and scores
/// whole preprocessing blocks of the list (consecutive candidates with one preprocessing;
/// block b to group b mod G: auto's two scalings are two blocks), racing inside each block.
/// The folds are the same in every group (cv_folds does not depend on the ranks), and every
/// fit gives the same result on any rank count (docs/design.md: to rounding, and the same
/// bits where tested), so the scores of the unpruned entries and the choice are those of
/// G = 1; which entries the race stops may differ (each group raises its own bar). Each
/// group's memory checks count its own ranks on a host, not the other groups'. The report has "groups". Collective over
/// ds.X.comm.
/// \throws ssdr::Error (collective) when there is no candidate, a class has fewer than two
///   labeled samples, or every candidate failed; G outside [1, ranks], or G > 1 with rows
///   kept sparse (the groups copy dense rows: doubles, or the file's uint8/float32).
Selection select_candidates(const io::Dataset& ds, const std::vector<data::Role>& roles,
                            const std::vector<Candidate>& candidates, int folds, uint64_t seed,
                            const std::string& context, bool race = true, int groups = 1);

/// One binomial standard error of a pooled k-fold accuracy p over n held-out samples, with
/// the variance floored at one sample's worth: √(max(p(1 − p), 1/n)/n) (select_candidates'
/// margin for the preferred candidates, reported as "preferred_margin"). Local.
/// \throws ssdr::Error when n < 1 or p ∉ [0, 1].
double cv_standard_error(double p, int64_t n);

/// Whether b correct of n beats a correct of n by more than one standard error of a/n:
/// b/n > a/n + cv_standard_error(a/n, n), decided exactly on the integers as
/// b > a and (b − a)²·n > max(a(n − a), n) (128-bit products), so that a boundary case
/// (14 of 15 against 15 of 15: 15 > max(14, 15) is false, kept) does not hang on how a square
/// root rounds. Local. \throws ssdr::Error unless 0 ≤ a, b ≤ n and n ≥ 1.
bool beats_by_standard_error(int64_t b, int64_t a, int64_t n);

/// The smallest count b ≤ n that beats a of n by more than one standard error
/// (beats_by_standard_error(b, a, n)), or n + 1 when none does: beats_by_standard_error(b, a, n)
/// ⇔ b ≥ least_beating_count(a, n) for every 0 ≤ b ≤ n (b ↦ beats is monotone). Nondecreasing
/// in a: with g(a) = max(a(n − a), n)/n ≥ 1 the count is a + ⌊√g(a)⌋ + 1, and from a to a + 1
/// g falls by (2a + 1 − n)/n < 1, so √g falls by less than 1/(√g(a) + √g(a + 1)) ≤ 1/2 and
/// ⌊√g⌋ by at most 1, while a rises by 1 (select_candidates' race relies on it). Local.
/// \throws ssdr::Error unless 0 ≤ a ≤ n and n ≥ 1.
int64_t least_beating_count(int64_t a, int64_t n);

/// select_candidates' race test: whether a non-preferred candidate whose entries can each
/// reach at most bounds[j] correct of n (correct so far + the held-out samples of the folds
/// not yet scored; one per m not refused) can no longer be chosen against a preferred entry
/// with a correct of n: no bound reaches least_beating_count(a, n). False when bounds is empty
/// or a < 0 (no preferred entry scored: the rule is then the plain maximum, which any
/// candidate may still win). A bound above n counts as n. Local.
/// \throws ssdr::Error when n < 1 or a > n.
bool race_cannot_win(const std::vector<int64_t>& bounds, int64_t a, int64_t n);

/// One scored (candidate, m) entry of a selection, in candidate order: its held-out samples
/// classified correctly, scored, and whether its candidate is preferred (Candidate::preferred).
struct CvEntry {
  int64_t correct = 0, scored = 0;
  bool preferred = false;
};
/// choose_entry's answer: the index of the chosen entry, and of the best preferred entry (−1
/// when no preferred entry was scored: then the rule is the plain maximum).
struct CvChoice {
  int chosen = -1, preferred = -1;
};
/// select_candidates' rule on the scored entries, exactly on their counts. B: the first entry
/// of the highest accuracy (correct/scored compared as integer cross-products). Without a
/// preferred entry, B. Else A, the first preferred entry of the highest accuracy, unless B
/// beats it by more than one standard error (beats_by_standard_error; cv_standard_error when
/// the two scored different numbers of samples). A tie between A and an earlier entry goes to
/// A. Local (the counts are replicated, so is the choice).
/// \throws ssdr::Error when entries is empty or an entry scored nothing.
CvChoice choose_entry(const std::vector<CvEntry>& entries);

/// The CV table of a selection report (select_candidates): one CSV line per entry (candidate,
/// m) with its parameters, m, pooled accuracy, correct and scored counts, seconds, each fold's
/// accuracy, whether it is preferred and whether it was chosen, then the rule that chose (on
/// the chosen line) or the error (on an entry that was not scored), then (new columns at the
/// end) `pruned` (1 on an entry the race stopped: its correct, scored and fold columns are
/// the folds it scored, its cv_accuracy empty) and its `bound`. Local.
std::string cv_table_csv(const nlohmann::json& report);

}  // namespace ssdr::driver
