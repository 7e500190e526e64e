// The fit that consumes its data (driver::fit_and_evaluate_consuming, data::apply_split,
// model::Projector): one copy of the data in memory, and the same bits as the fit that keeps
// the raw rows and as `transform` of the raw rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "reference.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/data/preprocess.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/model/model.hpp"
#include "ssdr/model/projector.hpp"
#include "support.hpp"

using namespace ssdr;

TEST(ApplySplit, GivesBitwiseTheKeptAndTheOtherRowsOfApplyAndEmptiesX) {
  // d' < d (energy 0.9), every non-null component (full PCA) and no PCA (d' = d): the in-place pass must write every
  // row exactly as apply(p, X, keep) does, in file order, and leave X empty.
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated("digits.csv", X, labels);
  const int r = test::rank();
  for (double energy : {0.9, -1.0, 0.0}) {
    data::PreprocessOptions po;
    po.scaling = data::Scaling::standardize;
    po.pca = energy != 0.0;
    po.pca_energy = energy;
    DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
    std::vector<char> keep(static_cast<size_t>(Xd.n_local)), other(keep.size());
    for (int64_t i = 0; i < Xd.n_local; ++i) {
      keep[static_cast<size_t>(i)] = (i * 7 + r) % 5 != 2;  // runs of kept and other rows across tiles
      other[static_cast<size_t>(i)] = !keep[static_cast<size_t>(i)];
    }
    const data::Preprocessor p = data::fit_preprocessor(Xd, keep, po);
    const DistMatrix A = data::apply(p, Xd, keep), B = data::apply(p, Xd, other);
    const data::SplitRows s = data::apply_split(p, std::move(Xd), keep);
    const std::string what = "energy " + std::to_string(energy);
    EXPECT_TRUE(Xd.v.empty()) << what;
    EXPECT_EQ(Xd.n_local, 0) << what;
    ASSERT_EQ(s.kept.cols, A.cols) << what;
    ASSERT_EQ(s.other.cols, B.cols) << what;
    EXPECT_EQ(s.kept.n_global, A.n_global) << what;
    EXPECT_EQ(s.kept.row_start, A.row_start) << what;
    EXPECT_EQ(s.other.n_global, B.n_global) << what;
    EXPECT_EQ(s.other.row_start, B.row_start) << what;
    EXPECT_EQ(s.kept.v, A.v) << what;
    EXPECT_EQ(s.other.v, B.v) << what;
    if (energy != 0.0) EXPECT_LT(A.cols, X.cols);  // digits has constant pixels: d' < d even at full energy
    else EXPECT_EQ(A.cols, X.cols);
  }
}

TEST(ApplySplit, KeepsEveryRowOrNoRow) {
  Dense X;
  std::vector<int> labels;
  test::load_csv_replicated("iris.csv", X, labels);
  for (char flag : {char(1), char(0)}) {
    DistMatrix Xd = ref::distribute(X, MPI_COMM_WORLD);
    const std::vector<char> all(static_cast<size_t>(Xd.n_local), 1), keep(static_cast<size_t>(Xd.n_local), flag);
    const data::Preprocessor p = data::fit_preprocessor(Xd, all, data::PreprocessOptions{});
    const DistMatrix A = data::apply(p, Xd);
    const data::SplitRows s = data::apply_split(p, std::move(Xd), keep);
    const DistMatrix& got = flag ? s.kept : s.other;
    EXPECT_EQ(got.v, A.v);
    EXPECT_EQ((flag ? s.other : s.kept).n_global, 0);
  }
}

namespace {

/// A fitted model from the pipeline (method `name`, F = fraction) and the raw data set.
struct Fitted {
  io::Dataset ds;
  driver::FitOutcome keep, consume;
};

/// landmarks ≥ 0: the method's kernel with that many Nyström landmarks (0: the exact map).
Fitted fit_both(const std::string& file, const std::string& name, double fraction, int64_t landmarks = -1) {
  Fitted f;
  f.ds = io::read_dataset(test::data_path(file), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(f.ds, test::transductive_split(3, fraction, 7));
  driver::FitConfig cfg;
  cfg.method = name;
  cfg.preprocess = methods::find_method(name).preprocess;
  if (landmarks >= 0) {
    kernels::KernelOptions ko = methods::find_method(name).kernel;
    ko.landmarks = landmarks;
    cfg.parameters = nlohmann::json::object();
    cfg.parameters["kernel"] = kernels::to_json(ko);
  }
  f.keep = driver::fit_and_evaluate(f.ds, roles, cfg, true);
  io::Dataset copy = f.ds;
  f.consume = driver::fit_and_evaluate_consuming(copy, roles, cfg, true);
  EXPECT_TRUE(copy.X.v.empty());
  return f;
}

/// The model's preprocessing as a data::Preprocessor.
data::Preprocessor preprocessor_of(const model::Model& m) {
  data::Preprocessor pre;
  pre.shift = m.shift;
  pre.scale = m.scale;
  pre.mean = m.mean;
  pre.basis = m.basis;
  return pre;
}

}  // namespace

TEST(ConsumingFit, GivesBitwiseTheAccuracyModelAndEmbeddingOfTheFitThatKeepsTheData) {
  // SODA with unseen samples, KSODA (an exact kernel map: φ_c on every tile) and LDA with every
  // sample transductive (no unseen rows at all).
  const struct {
    const char* file;
    const char* method;
    double fraction;
  } cases[] = {{"wine.csv", "soda", 0.5}, {"iris.csv", "ksoda", 0.6}, {"wine.csv", "lda", 1.0}};
  for (const auto& c : cases) {
    const Fitted f = fit_both(c.file, c.method, c.fraction);
    const std::string what = std::string(c.method) + " on " + c.file;
    EXPECT_EQ(f.consume.accuracy.correct_unlabeled, f.keep.accuracy.correct_unlabeled) << what;
    EXPECT_EQ(f.consume.accuracy.correct_unseen, f.keep.accuracy.correct_unseen) << what;
    EXPECT_EQ(f.consume.model.W.v, f.keep.model.W.v) << what;
    EXPECT_EQ(f.consume.embedding.v, f.keep.embedding.v) << what;
    // `transform` of the raw rows with the saved model: the fit's embedding, bit for bit,
    // although the consuming fit embedded its rows from their preprocessed copy.
    const DistMatrix Y = model::project(f.consume.model, f.ds.X);
    EXPECT_EQ(Y.v, f.consume.embedding.v) << what;
  }
}

TEST(StreamedEvaluation, CountsWhatTheOneNnOfTheWholeEmbeddingCountsWithoutHoldingIt) {
  // A fit that keeps no embedding classifies each tile as it is embedded: the same correct
  // counts, bit for bit the same labeled rows (the model's reference for predict), for the
  // consuming fit (unseen rows from their preprocessed copy), the fit that keeps the data
  // (unseen rows from the raw X, in their own type too) and every sample transductive.
  const struct {
    const char* file;
    const char* method;
    double fraction;
  } cases[] = {{"wine.csv", "soda", 0.5}, {"digits.csv", "lda", 0.3}, {"wine.csv", "olda", 1.0}};
  for (const auto& c : cases) {
    const std::string what = std::string(c.method) + " on " + c.file;
    const io::Dataset ds = io::read_dataset(test::data_path(c.file), io::Format::csv, MPI_COMM_WORLD);
    const auto roles = test::split(ds, test::transductive_split(3, c.fraction, 7));
    driver::FitConfig cfg;
    cfg.method = c.method;
    cfg.preprocess = methods::find_method(c.method).preprocess;
    const driver::FitOutcome whole = driver::fit_and_evaluate(ds, roles, cfg, true);
    const driver::FitOutcome kept = driver::fit_and_evaluate(ds, roles, cfg, false);
    io::Dataset copy = ds;
    const driver::FitOutcome consumed = driver::fit_and_evaluate_consuming(copy, roles, cfg, false);
    for (const driver::FitOutcome* s : {&kept, &consumed}) {
      EXPECT_TRUE(s->embedding.v.empty()) << what;
      EXPECT_EQ(s->accuracy.n_unlabeled, whole.accuracy.n_unlabeled) << what;
      EXPECT_EQ(s->accuracy.correct_unlabeled, whole.accuracy.correct_unlabeled) << what;
      EXPECT_EQ(s->accuracy.n_unseen, whole.accuracy.n_unseen) << what;
      EXPECT_EQ(s->accuracy.correct_unseen, whole.accuracy.correct_unseen) << what;
      EXPECT_EQ(s->labeled_embedding, whole.labeled_embedding) << what;
      EXPECT_EQ(s->labeled_labels, whole.labeled_labels) << what;
    }
    // The labeled rows are the embedding's rows of the labeled samples, in global order.
    EXPECT_EQ(whole.labeled_embedding, evaluation::gather_labeled_rows(whole.embedding, roles)) << what;
    EXPECT_EQ(static_cast<int64_t>(whole.labeled_labels.size()), 3 * ds.classes) << what;
  }
}

TEST(Projector, GivesTheSameBitsFromRawAndFromPreprocessedRowsWhateverTheTile) {
  // Rows fed one at a time, in tiles of 64 and in tiles of 5 from the raw or the preprocessed
  // rows: one row's bits never depend on the rows beside it. (A Nyström map: the tile-local
  // path; the exact map's collective path is the next test.)
  const Fitted f = fit_both("iris.csv", "ksoda", 0.6, 40);
  ASSERT_FALSE(f.consume.model.kernel.exact);
  const model::Model& m = f.consume.model;
  const DistMatrix Xp = data::apply(preprocessor_of(m), f.ds.X);
  const DistMatrix whole = model::project_preprocessed(m, Xp);
  model::Projector p(m);
  const int64_t out = p.out_dim(), nl = f.ds.X.n_local;
  std::vector<double> y(static_cast<size_t>(nl * out));
  for (int64_t tile : {int64_t{1}, int64_t{5}}) {
    for (int64_t i0 = 0; i0 < nl; i0 += tile)
      p.from_raw(f.ds.X.row(i0), std::min(tile, nl - i0), y.data() + i0 * out);
    EXPECT_EQ(y, whole.v) << "raw rows, tiles of " << tile;
    for (int64_t i0 = 0; i0 < nl; i0 += tile)
      p.from_preprocessed(Xp.row(i0), std::min(tile, nl - i0), y.data() + i0 * out);
    EXPECT_EQ(y, whole.v) << "preprocessed rows, tiles of " << tile;
  }
  EXPECT_EQ(model::project(m, f.ds.X).v, whole.v);
}

TEST(ExactKernelProjection, GivesARowTheSameBitsWhateverRowsComeWithItAndWhateverTheirOrder) {
  // KSODA's exact map (distributed samples): every row alone, the rows in reverse order, and
  // all rows at once give each row the same bits (fixed 64-row tiles, fixed 256-sample blocks
  // summed in global order), and project of the raw rows equals the fit's embedding.
  const Fitted f = fit_both("iris.csv", "ksoda", 0.6, 0);
  const model::Model& m = f.consume.model;
  ASSERT_TRUE(m.kernel.exact);
  const DistMatrix Xp = data::apply(preprocessor_of(m), f.ds.X);
  const DistMatrix whole = model::project_preprocessed(m, Xp);
  EXPECT_EQ(whole.v, f.consume.embedding.v);
  EXPECT_EQ(model::project(m, f.ds.X).v, whole.v);
  const int64_t out = m.W.cols, nl = Xp.n_local;
  int64_t most = nl;  // every rank makes as many collective calls as the one with most rows
  MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  std::vector<double> y(static_cast<size_t>(out));
  for (int64_t i = 0; i < most; ++i) {
    const double* row = i < nl ? Xp.row(i) : nullptr;
    kernels::apply_exact(m.kernel, &m.W, &row, i < nl ? 1 : 0, y.data());
    if (i < nl)
      EXPECT_TRUE(std::equal(y.begin(), y.end(), whole.row(i))) << "row " << i << " alone";
  }
  std::vector<const double*> reversed;
  for (int64_t i = nl - 1; i >= 0; --i) reversed.push_back(Xp.row(i));
  std::vector<double> yr(static_cast<size_t>(nl * out));
  kernels::apply_exact(m.kernel, &m.W, reversed.data(), nl, yr.data());
  for (int64_t i = 0; i < nl; ++i)
    EXPECT_TRUE(std::equal(yr.begin() + (nl - 1 - i) * out, yr.begin() + (nl - i) * out, whole.row(i))) << "row " << i;
}

TEST(SweepCaches, GiveEveryFitTheBitsOfASingleConsumingFit) {
  // A sweep on one split as the experiment driver runs it: every method and grid point shares
  // one RowsCache (preprocessed rows, kernel maps) and one GraphCache (kNN lists, graphs,
  // propagations, scatter matrices), warmed by the fits before it. Each fit must give the
  // model, the embedding and the accuracy of `ssdr fit` of that configuration alone (the
  // consuming fit, no caches), bit for bit: the caches only skip recomputing deterministic
  // stages. The order visits a graph's larger k before a smaller one (the smaller k's lists
  // come from the larger search) and repeats settings after others have filled the caches.
  io::Dataset ds = io::read_dataset(test::data_path("wine.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::transductive_split(4, 0.5, 11));
  struct Case {
    const char* method;
    nlohmann::json params;
    int64_t dim;
  };
  const std::vector<Case> cases = {
      {"soda", {{"knn", 10}}, 2},     {"soda", {{"knn", 6}, {"sigma_s", 1e-4}}, 2}, {"soda", {{"knn", 6}}, 1},
      {"ksoda", {{"landmarks", 40}}, 2}, {"ksoda", {{"landmarks", 40}, {"mu_scale", 1.0}}, 2},
      {"oda", nlohmann::json::object(), 2}, {"sl-lda", {{"alpha_u", 0.9}}, 2}, {"sl-lda", {{"alpha_u", 0.5}}, 2},
      {"lp", nlohmann::json::object(), 0}, {"tca", nlohmann::json::object(), 2}, {"soda", {{"knn", 10}}, 3},
      {"oda", nlohmann::json::object(), 1}, {"soda", {{"knn", 10}}, 2}};
  driver::RowsCache rows;
  driver::GraphCaches graphs;  // one per preprocessing, as the driver keys them (RowsKey)
  for (const Case& c : cases) {
    std::vector<driver::ParameterSetting> settings;
    for (const auto& [k, v] : c.params.items()) settings.push_back({k, v, "test"});
    const driver::FitConfig alone = driver::make_fit_config(c.method, settings, c.dim, 0, 0);
    driver::FitConfig swept = alone;
    swept.rows = &rows;
    swept.cache = &graphs;
    const driver::FitOutcome s = driver::fit_and_evaluate(ds, roles, swept, true);
    io::Dataset copy = ds;
    const driver::FitOutcome a = driver::fit_and_evaluate_consuming(copy, roles, alone, true);
    const std::string what = std::string(c.method) + " " + c.params.dump() + " m=" + std::to_string(c.dim);
    EXPECT_EQ(s.model.W.v, a.model.W.v) << what;
    EXPECT_EQ(s.embedding.v, a.embedding.v) << what;
    EXPECT_EQ(s.soft_labels.v, a.soft_labels.v) << what;
    EXPECT_EQ(s.accuracy.correct_unlabeled, a.accuracy.correct_unlabeled) << what;
    EXPECT_EQ(s.accuracy.correct_unseen, a.accuracy.correct_unseen) << what;
    if (!std::isnan(a.trace_ratio)) EXPECT_EQ(s.trace_ratio, a.trace_ratio) << what;
  }
  EXPECT_EQ(rows.misses, 2);  // the default preprocessing and KSODA's unit scaling
  EXPECT_EQ(rows.hits, static_cast<int>(cases.size()) - 2);
  EXPECT_EQ(rows.entries.size(), 2u);
  EXPECT_GT(rows.bytes(), 0.0);
  // One exact search per preprocessing, at the largest k asked for (TCA's graph and the
  // smaller k of SODA come from it), the scatter matrices of each soft-label set once, and
  // the trace ratio's first step once per scatter set and μ (SODA k = 10 at m = 2, 3, 2;
  // ODA at m = 2, 1 share theirs).
  ASSERT_EQ(graphs.by_rows.size(), 2u);
  const auto none = std::find_if(graphs.by_rows.begin(), graphs.by_rows.end(),
                                 [](const auto& e) { return e.first.preprocess.scaling == data::Scaling::none; });
  ASSERT_NE(none, graphs.by_rows.end());
  const methods::GraphCache& plain = none->second;
  ASSERT_EQ(plain.lists.size(), 1u);
  EXPECT_EQ(plain.lists.begin()->second.k, 10);
  EXPECT_EQ(plain.scatters.size(), 5u);  // soda k=10, k=6 (two sigmas); sl-lda alpha_u 0.9, 0.5
  EXPECT_EQ(plain.trace_ratio_starts.size(), 4u);  // soda k=10, k=6 (two sigmas), oda
}

namespace {
/// ds's rows as TypedRows of `type` (the values must be exact in it: digits are 0..16).
io::Dataset typed_copy(const io::Dataset& ds, ElementType type) {
  io::Dataset t = ds;
  t.typed = true;
  TypedRows& r = t.rows;
  r.comm = ds.X.comm;
  r.n_global = ds.X.n_global;
  r.row_start = ds.X.row_start;
  r.n_local = ds.X.n_local;
  r.cols = ds.X.cols;
  r.type = type;
  r.bytes.resize(ds.X.v.size() * element_size(type));
  for (size_t k = 0; k < ds.X.v.size(); ++k) {
    if (type == ElementType::u8) r.bytes[k] = static_cast<unsigned char>(ds.X.v[k]);
    else {
      const float f = static_cast<float>(ds.X.v[k]);
      std::memcpy(r.bytes.data() + 4 * k, &f, 4);
    }
  }
  t.X.v.clear();  // shape and layout only, as the readers leave it
  return t;
}
}  // namespace

TEST(TypedRows, FitFromUint8AndFloat32RowsGivesTheBitsOfTheirDoubleCopy) {
  // uint8 and float32 values are doubles exactly, and every consumer converts a row before
  // it reads it: the consuming fit (the unseen rows embedded from their raw bytes, never
  // stored preprocessed), the fit that keeps its data and the sweep's cached one all give
  // the double data set's model, embedding and accuracy, bit for bit.
  io::Dataset ds = io::read_dataset(test::data_path("digits.csv"), io::Format::csv, MPI_COMM_WORLD);
  const auto roles = test::split(ds, test::transductive_split(5, 0.3, 2));
  for (const char* method : {"soda", "ksoda"}) {
    // KSODA with a Nyström map (80 landmarks): the kernel's tiles see the converted rows too.
    std::vector<driver::ParameterSetting> ps;
    if (std::string(method) == "ksoda") ps.push_back({"landmarks", 80, "test"});
    const driver::FitConfig cfg = driver::make_fit_config(method, ps, 3, 0, 0);
    io::Dataset base = ds;
    const driver::FitOutcome ref = driver::fit_and_evaluate_consuming(base, roles, cfg, true);
    for (ElementType type : {ElementType::u8, ElementType::f32}) {
      const std::string what = std::string(method) + " from " + to_string(type);
      io::Dataset t = typed_copy(ds, type);
      const driver::FitOutcome keep = driver::fit_and_evaluate(t, roles, cfg, true);
      driver::RowsCache rows;
      driver::FitConfig swept = cfg;
      swept.rows = &rows;
      const driver::FitOutcome cached = driver::fit_and_evaluate(t, roles, swept, true);
      const driver::FitOutcome consumed = driver::fit_and_evaluate_consuming(t, roles, cfg, true);
      for (const driver::FitOutcome* o : {&keep, &cached, &consumed}) {
        EXPECT_EQ(o->model.W.v, ref.model.W.v) << what;
        EXPECT_EQ(o->model.basis.v, ref.model.basis.v) << what;
        EXPECT_EQ(o->embedding.v, ref.embedding.v) << what;
        EXPECT_EQ(o->accuracy.correct_unseen, ref.accuracy.correct_unseen) << what;
      }
      // transform of the typed rows: the fit's embedding.
      EXPECT_EQ(model::project(consumed.model, t.rows).v, ref.embedding.v) << what;
    }
  }
}

TEST(TypedRows, AConsumingFitWithEveryRowTransductiveReleasesItsRawRowsAndKeepsItsBits) {
  // With no unseen row on a rank the consuming fit never reads the raw rows after computing
  // the scores, so it releases them (the n·d·s/P bytes beside the scores and the kNN lists at
  // F = 1). The fit that keeps its data must give the same model and embedding, bit for bit;
  // with unseen rows (F < 1) the rows stay, since evaluation embeds those from them.
  io::Dataset ds = io::read_dataset(test::data_path("digits.csv"), io::Format::csv, MPI_COMM_WORLD);
  const driver::FitConfig cfg = driver::make_fit_config("soda", {}, 3, 0, 0);
  for (double fraction : {1.0, 0.5}) {
    const auto roles = test::split(ds, test::transductive_split(5, fraction, 2));
    io::Dataset kept = typed_copy(ds, ElementType::u8);
    io::Dataset consumed_rows = typed_copy(ds, ElementType::u8);
    const size_t bytes = kept.rows.bytes.size();
    const driver::FitOutcome keep = driver::fit_and_evaluate(kept, roles, cfg, true);
    const driver::FitOutcome consumed = driver::fit_and_evaluate_consuming(consumed_rows, roles, cfg, true);
    EXPECT_EQ(consumed.model.W.v, keep.model.W.v) << fraction;
    EXPECT_EQ(consumed.embedding.v, keep.embedding.v) << fraction;
    EXPECT_EQ(consumed.accuracy.correct_unlabeled, keep.accuracy.correct_unlabeled) << fraction;
    EXPECT_EQ(kept.rows.bytes.size(), bytes) << fraction;
    bool local_unseen = false;
    for (data::Role r : roles) local_unseen = local_unseen || r == data::Role::unseen;
    EXPECT_EQ(consumed_rows.rows.bytes.size(), local_unseen ? bytes : 0u) << fraction;
    if (fraction == 1.0) EXPECT_FALSE(local_unseen);
    else EXPECT_EQ(consumed.accuracy.correct_unseen, keep.accuracy.correct_unseen);
  }
}
