#include "ssdr/driver/pipeline.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>


#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/version.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/model/projector.hpp"

namespace ssdr::driver {

namespace {

/// The kernel of this fit: config.parameters["kernel"] (written by the CLI from --kernel …,
/// see kernels::to_json) when present, else the method's default kernel (MethodInfo::kernel).
/// Methods that do not project (lp) never use one: their graph lives in input space.
kernels::KernelOptions kernel_options(const FitConfig& config, const methods::MethodInfo& info) {
  if (!info.projects) return {};
  if (config.parameters.is_object() && config.parameters.contains("kernel"))
    return kernels::from_json(config.parameters["kernel"]);
  return info.kernel;
}

/// The fit's rows after preprocessing. Xt: the transductive rows (the method's data, d'
/// wide). The unseen rows either preprocessed in Xu (the consuming fit: the raw X is gone) or
/// mapped from the raw X at evaluation (raw ≠ nullptr: the data set outlives the fit).
struct FitRows {
  DistMatrix own_t, own_u;  ///< the rows this fit preprocessed (or none: a sweep's cached rows)
  DistMatrixF own_t32;      ///< --precision single: the transductive rows (own_t empty)
  const DistMatrix* Xt = &own_t;
  const DistMatrixF* Xt32 = nullptr;  ///< non-null: the transductive rows are these floats
  const DistMatrix* Xu = &own_u;
  const DistMatrix* raw = nullptr;
  /// The unseen rows' source when the data set keeps its rows typed (raw is nullptr then):
  /// they are embedded tile by tile from these, never stored preprocessed (the streamed
  /// reduction: n_unseen × d' is never held).
  const TypedRows* raw_typed = nullptr;
  /// The sweep's graphs of these rows (FitConfig::cache's entry for the fit's RowsKey);
  /// nullptr → computed afresh.
  methods::GraphCache* graphs = nullptr;
  bool from_raw() const { return raw != nullptr || raw_typed != nullptr; }
  /// The transductive rows in their precision: one view for the whole fit, so a double copy
  /// of float rows (RowsView::doubles) is made once and released in one place. Local.
  const RowsView& xt() const {
    if (!xt_view) xt_view.emplace(Xt32 ? RowsView(*Xt32) : RowsView(*Xt));
    return *xt_view;
  }
  mutable std::optional<RowsView> xt_view;
  /// Transductive rows [i0, i0 + b) as doubles: in place, or (float rows) converted into
  /// buf, exactly. Local.
  const double* xt_tile(int64_t i0, int64_t b, std::vector<double>& buf) const {
    if (!Xt32) return Xt->row(i0);
    buf.resize(static_cast<size_t>(b * Xt32->cols));
    xt().tile(i0, b, buf.data());
    return buf.data();
  }
  /// Local raw row i as doubles into dst (d_input values). Local.
  void raw_row(int64_t i, double* dst) const {
    if (raw) std::copy_n(raw->row(i), d_input, dst);
    else raw_typed->rows(i, 1, dst);
  }
  Layout layout;  ///< the raw X's row layout (the embedding's)
  MPI_Comm comm = MPI_COMM_WORLD;
  int64_t d_input = 0;
  std::vector<char> transductive;  ///< per local row of X
};

/// The embedding of every local row in file order (n×m, X's layout): the transductive rows
/// from Xt, the unseen ones from Xu or the raw X, all through model::Projector, so a row has
/// the bits `transform` gives it from the raw file (under --precision single a transductive
/// row is embedded from its rounded values: `transform` differs by that rounding). Local, except with an exact kernel map
/// (collective over its communicator: kernels::apply_exact on every row's preprocessed bits).
/// km (optional): the sweep's entry of the model's Nyström map, whose eval_tiles hold (or
/// receive, on first use) every row's feature tiles: the embedding is then one GEMM per tile.
DistMatrix embed_all(const model::Model& m, const FitRows& rows, KernelMapEntry* km = nullptr) {
  model::Projector p(m);
  const int64_t out = p.out_dim(), T = model::Projector::kTile;
  DistMatrix Y;
  Y.comm = rows.comm;
  Y.n_global = rows.layout.n_global;
  Y.row_start = rows.layout.start;
  Y.n_local = rows.layout.n_local;
  Y.cols = out;
  Y.v.assign(static_cast<size_t>(Y.n_local * out), 0.0);
  std::vector<int64_t> pos_t, pos_u;
  for (int64_t i = 0; i < Y.n_local; ++i) (rows.transductive[static_cast<size_t>(i)] ? pos_t : pos_u).push_back(i);
  if (!p.local()) {
    // Every local row's preprocessed bits, in file order (the unseen raw rows preprocessed
    // tile by tile), then the collective exact-map projection.
    const int64_t dp = p.preprocessed_dim();
    std::vector<const double*> src(static_cast<size_t>(Y.n_local));
    const DistMatrix& Xt = rows.xt().doubles();  // float rows: their double copy (the fit's one)
    for (size_t t = 0; t < pos_t.size(); ++t) src[static_cast<size_t>(pos_t[t])] = Xt.row(static_cast<int64_t>(t));
    std::vector<double> unseen, in;
    if (!rows.from_raw()) {
      for (size_t u = 0; u < pos_u.size(); ++u) src[static_cast<size_t>(pos_u[u])] = rows.Xu->row(static_cast<int64_t>(u));
    } else {
      const int64_t d = rows.d_input, nu = static_cast<int64_t>(pos_u.size());
      unseen.resize(static_cast<size_t>(nu * dp));
      in.resize(static_cast<size_t>(T * d));
      for (int64_t i0 = 0; i0 < nu; i0 += T) {
        const int64_t b = std::min(T, nu - i0);
        for (int64_t r = 0; r < b; ++r) rows.raw_row(pos_u[static_cast<size_t>(i0 + r)], in.data() + r * d);
        p.preprocess(in.data(), b, unseen.data() + i0 * dp);
      }
      for (int64_t u = 0; u < nu; ++u) src[static_cast<size_t>(pos_u[static_cast<size_t>(u)])] = unseen.data() + u * dp;
    }
    kernels::apply_exact(m.kernel, &m.W, src.data(), Y.n_local, Y.v.data());
    return Y;
  }
  std::vector<double> tile(static_cast<size_t>(T * out)), in;
  auto scatter = [&](const std::vector<int64_t>& pos, int64_t i0, int64_t b) {
    for (int64_t r = 0; r < b; ++r) std::copy_n(tile.data() + r * out, out, Y.row(pos[static_cast<size_t>(i0 + r)]));
  };
  if (km != nullptr && !m.kernel.empty() && !rows.from_raw()) {
    // The features of every tile once per map (Projector::features), then W per fit: the
    // bits of from_preprocessed, which forms the same tiles and the same GEMM.
    const int64_t per = T * p.feature_dim();
    const bool fill = km->eval_tiles.empty();
    const int64_t counts[2] = {rows.xt().n_local, rows.Xu->n_local};
    std::vector<double> buf;  // a tile of float rows as doubles
    const std::vector<int64_t>* where[2] = {&pos_t, &pos_u};
    int64_t tiles = 0;
    for (int64_t c : counts) tiles += (c + T - 1) / T;
    if (fill) km->eval_tiles.resize(static_cast<size_t>(tiles * per));
    int64_t t = 0;
    for (int k = 0; k < 2; ++k) {
      SSDR_CHECK(counts[k] == static_cast<int64_t>(where[k]->size()), "embed_all: row counts disagree");
      for (int64_t i0 = 0; i0 < counts[k]; i0 += T, ++t) {
        const int64_t b = std::min(T, counts[k] - i0);
        double* phi = km->eval_tiles.data() + t * per;
        if (fill) p.features(k == 0 ? rows.xt_tile(i0, b, buf) : rows.Xu->row(i0), b, phi);
        p.from_features(phi, b, tile.data());
        scatter(*where[k], i0, b);
      }
    }
    return Y;
  }
  auto from_rows = [&](const DistMatrix& src, const std::vector<int64_t>& pos) {
    SSDR_CHECK(src.n_local == static_cast<int64_t>(pos.size()), "embed_all: row counts disagree");
    for (int64_t i0 = 0; i0 < src.n_local; i0 += T) {
      const int64_t b = std::min(T, src.n_local - i0);
      p.from_preprocessed(src.row(i0), b, tile.data());
      scatter(pos, i0, b);
    }
  };
  {  // the transductive rows in their precision (xt_tile: in place, or floats converted)
    const int64_t nt = rows.xt().n_local;
    SSDR_CHECK(nt == static_cast<int64_t>(pos_t.size()), "embed_all: row counts disagree");
    std::vector<double> buf;
    for (int64_t i0 = 0; i0 < nt; i0 += T) {
      const int64_t b = std::min(T, nt - i0);
      p.from_preprocessed(rows.xt_tile(i0, b, buf), b, tile.data());
      scatter(pos_t, i0, b);
    }
  }
  if (!rows.from_raw()) {
    from_rows(*rows.Xu, pos_u);
  } else {
    const int64_t d = rows.d_input, nu = static_cast<int64_t>(pos_u.size());
    in.resize(static_cast<size_t>(T * d));
    for (int64_t i0 = 0; i0 < nu; i0 += T) {
      const int64_t b = std::min(T, nu - i0);
      for (int64_t r = 0; r < b; ++r) rows.raw_row(pos_u[static_cast<size_t>(i0 + r)], in.data() + r * d);
      p.from_raw(in.data(), b, tile.data());
      scatter(pos_u, i0, b);
    }
  }
  return Y;
}

/// The streamed evaluation of a fit whose embedding is not kept: the 1-NN accuracy of
/// one_nn_accuracy(embed_all(m, rows), labels, roles), the same counts, without the n×m
/// embedding (n_local·m doubles per rank, the largest per-sample cost of a thin data set).
/// Pass 1 embeds the labeled rows, in tiles of their own (a row's embedding does not depend
/// on the rows beside it in its tile: Projector's one GEMM shape, tested by
/// Projector.GivesTheSameBitsFromRawAndFromPreprocessedRowsWhateverTheTile, so these are
/// embed_all's bits); they and their labels are gathered on every rank (l rows, global
/// order); pass 2 embeds every row tile by tile and classifies each tile against
/// them (evaluation::nearest_labels: the brute-force scan's answer). L, L_labels receive the
/// labeled rows' embedding (l×m row-major) and labels. Only for a model whose embedding is
/// local (Projector::local()). Collective over rows.comm (two MPI_Allgatherv, one MPI_Allreduce).
evaluation::Accuracy evaluate_streamed(const model::Model& m, const FitRows& rows, const std::vector<int>& labels,
                                       const std::vector<data::Role>& roles, std::vector<double>& L,
                                       std::vector<int>& L_labels) {
  model::Projector p(m);
  const int64_t out = p.out_dim(), T = model::Projector::kTile, n_local = rows.layout.n_local;
  std::vector<double> tile(static_cast<size_t>(T * out)), in;
  std::vector<int64_t> where(static_cast<size_t>(T));  // the local rows of the current tile
  // Calls visit(b) for every tile of the transductive rows (Xt's tiles), `where` holding the
  // tile's local rows, `tile` their embedding.
  std::vector<double> buf;  // a tile of float rows as doubles
  auto transductive_tiles = [&](auto&& visit) {
    const int64_t nt = rows.xt().n_local;
    int64_t cursor = 0;
    for (int64_t i0 = 0; i0 < nt; i0 += T) {
      const int64_t b = std::min(T, nt - i0);
      for (int64_t r = 0; r < b; ++r) {
        while (!rows.transductive[static_cast<size_t>(cursor)]) ++cursor;
        where[static_cast<size_t>(r)] = cursor++;
      }
      p.from_preprocessed(rows.xt_tile(i0, b, buf), b, tile.data());
      visit(b);
    }
  };
  // The labeled rows' embedding (the 1-NN references): only they are embedded here, in tiles
  // of their own (Projector::tail pads every tile to kTile rows: one GEMM shape whatever the
  // tile holds); the transductive pass below embeds every transductive row once.
  std::vector<double> mine;
  std::vector<int> mine_labels;
  {
    const int64_t dp = p.preprocessed_dim();
    std::vector<double> rows_in(static_cast<size_t>(T * dp));
    int64_t b = 0, t = 0;
    auto flush = [&] {
      if (b == 0) return;
      p.from_preprocessed(rows_in.data(), b, tile.data());
      mine.insert(mine.end(), tile.data(), tile.data() + b * out);
      b = 0;
    };
    for (int64_t i = 0; i < n_local; ++i) {
      if (!rows.transductive[static_cast<size_t>(i)]) continue;
      if (roles[static_cast<size_t>(i)] == data::Role::labeled) {
        std::copy_n(rows.xt_tile(t, 1, buf), dp, rows_in.data() + b * dp);
        mine_labels.push_back(labels[static_cast<size_t>(i)]);
        if (++b == T) flush();
      }
      ++t;
    }
    flush();
  }
  L = allgatherv(mine, rows.comm);  // blocks in rank order: global order
  L_labels = allgatherv(mine_labels, rows.comm);
  evaluation::AccuracyCounts counts;
  DistMatrix Yt;
  Yt.comm = MPI_COMM_SELF;
  Yt.cols = out;
  auto classify = [&](int64_t b) {
    Yt.n_global = Yt.n_local = b;
    Yt.v.assign(tile.begin(), tile.begin() + b * out);
    const std::vector<int> pred = evaluation::nearest_labels(Yt, L, L_labels);
    for (int64_t r = 0; r < b; ++r) {
      const size_t i = static_cast<size_t>(where[static_cast<size_t>(r)]);
      counts.add(pred[static_cast<size_t>(r)], labels[i], roles[i]);
    }
  };
  transductive_tiles(classify);
  // The unseen rows: Xu's tiles (consumed data) or tiles of the raw rows in row order.
  int64_t u = 0, cursor = 0;
  const int64_t d = rows.d_input;
  if (rows.from_raw()) in.resize(static_cast<size_t>(T * d));
  for (;;) {
    int64_t b = 0;
    while (b < T && cursor < n_local) {
      if (!rows.transductive[static_cast<size_t>(cursor)]) where[static_cast<size_t>(b++)] = cursor;
      ++cursor;
    }
    if (b == 0) break;
    if (rows.from_raw()) {
      for (int64_t r = 0; r < b; ++r) rows.raw_row(where[static_cast<size_t>(r)], in.data() + r * d);
      p.from_raw(in.data(), b, tile.data());
    } else {
      p.from_preprocessed(rows.Xu->row(u), b, tile.data());
    }
    u += b;
    classify(b);
  }
  return counts.total(rows.comm);
}

/// The transductive flags and the method's labels (class or −1 per transductive local row).
void transductive_rows(const io::Dataset& ds, const std::vector<data::Role>& roles, std::vector<char>& transductive,
                       std::vector<int>& labels) {
  const DistMatrix& X = ds.X;
  transductive.assign(static_cast<size_t>(X.n_local), 0);
  labels.clear();
  for (int64_t i = 0; i < X.n_local; ++i) {
    const size_t li = static_cast<size_t>(i);  // labels and roles live with the rows
    transductive[li] = roles[li] != data::Role::unseen;
    if (roles[li] == data::Role::labeled) labels.push_back(ds.labels[li]);
    else if (roles[li] == data::Role::unlabeled) labels.push_back(-1);
  }
}

FitOutcome fit_rows(FitRows& rows, data::Preprocessor&& pre, const std::vector<int>& labels,
                    const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& config,
                    bool keep_embedding, FitOutcome out, PreparedRows* prepared);

/// FNV-1a (64 bits) of n bytes, continuing from h. Local.
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

/// What a graph file's lists belong to (issue 32), recorded by --graph-out and compared by
/// --graph-in: the data (n, d, the transductive count, a hash of the transductive rows'
/// global indices and one of the raw values of about 64 of them, chosen by global index), the
/// split (a hash of every row's role: seed and spec or split file alike), the preprocessing
/// options; fit_rows adds the distance. Each hash is a sum mod 2^64 of per-row keys, so it
/// is the same for any rank count and gathers nothing of size n. Collective (one allreduce).
nlohmann::json graph_provenance(const io::Dataset& ds, const std::vector<data::Role>& roles,
                                const data::PreprocessOptions& p) {
  const int64_t n = ds.X.n_global, stride = std::max<int64_t>(1, n / 64);
  uint64_t f[4] = {0, 0, 0, 0};  // transductive count, index hash, value hash, split hash
  std::vector<double> row(static_cast<size_t>(ds.X.cols));
  for (int64_t i = 0; i < ds.X.n_local; ++i) {
    const size_t li = static_cast<size_t>(i);
    const int64_t g = ds.X.row_start + i;
    const uint64_t role = roles[li] == data::Role::labeled ? 0 : roles[li] == data::Role::unlabeled ? 1 : 2;
    f[3] += data::split_key(3, 4 * g + static_cast<int64_t>(role));
    if (roles[li] == data::Role::unseen) continue;
    ++f[0];
    f[1] += data::split_key(1, g);
    if (data::split_key(2, g) % static_cast<uint64_t>(stride) != 0) continue;
    uint64_t h = 0;
    if (ds.sparse) {
      const int64_t b = ds.Xs.row_ptr[li], e = ds.Xs.row_ptr[li + 1];
      h = fnv1a(ds.Xs.col.data() + b, static_cast<size_t>(e - b) * sizeof(ds.Xs.col[0]));
      h = fnv1a(ds.Xs.val.data() + b, static_cast<size_t>(e - b) * sizeof(double), h);
    } else {
      if (ds.typed) ds.rows.rows(i, 1, row.data());
      else std::copy_n(ds.X.row(i), ds.X.cols, row.data());
      h = fnv1a(row.data(), row.size() * sizeof(double));
    }
    f[2] += data::split_key(h, g);
  }
  MPI_Allreduce(MPI_IN_PLACE, f, 4, MPI_UINT64_T, MPI_SUM, ds.X.comm);
  return {{"data", {{"n", n}, {"d", ds.X.cols}, {"transductive", f[0]}, {"rows", hex64(f[1])}, {"values", hex64(f[2])}}},
          {"split", hex64(f[3])},
          {"preprocessing", {{"scaling", data::to_string(p.scaling)}, {"pca", p.pca}, {"pca_energy", p.pca_energy},
                             {"pca_dim", p.pca_dim}, {"pca_route", static_cast<int>(p.route)},
                             {"precision", p.single ? "single" : "double"}}}};
}

/// --graph-in: the file's provenance against this fit's. Returns false for a file without
/// one (lists computed elsewhere: the caller warns once its distances are checked).
/// Collective (one broadcast); replicated values, so every rank decides alike.
/// \throws ssdr::Error naming the first entry that differs.
bool check_graph_provenance(const std::string& path, const nlohmann::json& mine, MPI_Comm comm) {
  const std::string text = graph::read_knn_provenance(path, comm);
  if (text.empty()) return false;
  nlohmann::json theirs = nlohmann::json::parse(text, nullptr, false);
  SSDR_REQUIRE(theirs.is_object(), "--graph-in " + path + ": its provenance attribute is not JSON");
  const nlohmann::json a = theirs.flatten(), b = mine.flatten();
  // The causes in the order a user fixes them: the data, the split, the preprocessing, and
  // the distance (which follows from the preprocessing's d').
  for (const char* group : {"/data/", "/split", "/preprocessing/", "/distance"})
  for (const auto& [key, value] : b.items()) {
    if (key.rfind(group, 0) != 0) continue;
    // Files written before --precision existed hold lists of double rows.
    const nlohmann::json other = a.contains(key)                   ? a[key]
                                 : key == "/preprocessing/precision" ? nlohmann::json("double")
                                                                     : nlohmann::json();
    if (other != value) {
      std::string what = key.substr(1);
      std::replace(what.begin(), what.end(), '/', '.');
      SSDR_REQUIRE(false, "--graph-in " + path + ": the lists were made for another " + what + " (" +
                              (other.is_null() ? std::string("none") : other.dump()) + " in the file, " + value.dump() +
                              " in this fit); expected a graph file written by --graph-out for the same data, split, "
                              "preprocessing and distance");
    }
  }
  return true;
}

}  // namespace

RowsKey rows_key(const data::PreprocessOptions& p, const std::vector<data::Role>& roles, int64_t row_start,
                 int64_t n_global, MPI_Comm comm) {
  uint64_t f[2] = {0, 0};  // transductive count, sum of keys
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i] != data::Role::unseen) {
      ++f[0];
      f[1] += data::split_key(1, row_start + static_cast<int64_t>(i));
    }
  MPI_Allreduce(MPI_IN_PLACE, f, 2, MPI_UINT64_T, MPI_SUM, comm);
  RowsKey k;
  k.preprocess = p;
  k.n_global = n_global;
  k.transductive = f[0];
  k.fingerprint = f[1];
  return k;
}

void GraphCaches::share_into(GraphCaches& to) const {
  for (const auto& [rows, from] : by_rows) {
    methods::GraphCache& into = to.by_rows[rows];
    for (const auto& [key, g] : from.graphs) into.graphs.emplace(key, g);
    for (const auto& [key, l] : from.lists) {
      auto it = into.lists.find(key);
      if (it == into.lists.end() || it->second.k < l.k) into.lists.insert_or_assign(key, l);
    }
    for (const auto& [key, g] : from.lnp_graphs) into.lnp_graphs.emplace(key, g);
    if (from.sigma0 > 0 && !(into.sigma0 > 0)) into.sigma0 = from.sigma0;
  }
}

double RowsCache::bytes() const {
  double b = 0;
  for (const auto& [key, e] : entries) {
    b += 8.0 * static_cast<double>(e.Xt.v.size() + e.Xu.v.size() + e.pre.basis.v.size()) +
         4.0 * static_cast<double>(e.Xt32.v.size());
    for (const auto& [k, km] : e.kernel_maps)
      b += 8.0 * static_cast<double>(km.Phi.v.size() + km.map.Zt.v.size() + km.map.M.v.size() + km.map.a.size());
  }
  return b;
}

namespace {

/// --precision as one policy: the rows of `source` flagged in `keep`, preprocessed by `pre`
/// and owned in the chosen precision: floats in `singles` when `single` (each value rounded
/// once after the map, data::apply_single), else doubles in `doubles`; the other stays empty.
/// Source: the data set's dense rows (DistMatrix), its rows in their own type (TypedRows) or
/// its sparse rows (SparseRows: their doubles rounded, the same bits as apply_single).
/// Collective as data::apply.
template <class Source>
void preprocess_in_precision(const data::Preprocessor& pre, const Source& source, const std::vector<char>& keep,
                             bool single, DistMatrix& doubles, DistMatrixF& singles) {
  if constexpr (std::is_same_v<Source, SparseRows>) {
    doubles = data::apply(pre, source, keep);
    if (single) {
      singles = to_single(doubles);
      doubles = DistMatrix();
    }
  } else if (single) {
    singles = data::apply_single(pre, source, keep);
  } else {
    doubles = data::apply(pre, source, keep);
  }
}

/// The flags of the rows not in `transductive` (the unseen ones). Local.
std::vector<char> unseen_rows(const std::vector<char>& transductive) {
  std::vector<char> unseen(transductive.size());
  for (size_t i = 0; i < unseen.size(); ++i) unseen[i] = !transductive[i];
  return unseen;
}

/// The fit of both entry points. consume = &ds.X: the rows are preprocessed inside its buffer
/// (left empty); nullptr: the raw X stays and the transductive rows are copied out.
FitOutcome fit_and_evaluate_impl(const io::Dataset& ds, io::Dataset* consume, const std::vector<data::Role>& roles,
                                 const FitConfig& config, bool keep_embedding) {
  data::validate_split(ds.labels, ds.classes, roles, ds.X.comm, ds.class_names);
  FitOutcome out;
  FitRows rows;
  std::vector<int> labels;
  transductive_rows(ds, roles, rows.transductive, labels);
  if (config.keep_lists || !config.graph_in.empty())
    out.graph_provenance = graph_provenance(ds, roles, config.preprocess);  // before X is consumed
  rows.layout = ds.X.layout();
  rows.comm = ds.X.comm;
  rows.d_input = ds.X.cols;
  data::Preprocessor pre;
  PreparedRows* prepared = nullptr;
  // A sweep's fit: its rows' key, the outer key of every cache it reads.
  const RowsKey key = config.rows || config.cache
                          ? rows_key(config.preprocess, roles, ds.X.row_start, ds.X.n_global, ds.X.comm)
                          : RowsKey{};
  if (config.cache) rows.graphs = &config.cache->by_rows[key];
  if (config.rows && !consume && !ds.sparse) {
    // A sweep: the split's preprocessed rows once, for every fit of it.
    auto it = config.rows->entries.find(key);
    if (it == config.rows->entries.end()) {
      ++config.rows->misses;
      Phase phase("preprocess", &out.timings);
      PreparedRows e;
      const auto prepare = [&](const auto& source) {  // the typed or the dense rows
        e.pre = data::fit_preprocessor(source, rows.transductive, config.preprocess);
        preprocess_in_precision(e.pre, source, rows.transductive, config.preprocess.single, e.Xt, e.Xt32);
        e.Xu = data::apply(e.pre, source, unseen_rows(rows.transductive));
      };
      if (ds.typed) prepare(ds.rows);
      else prepare(ds.X);
      it = config.rows->entries.emplace(key, std::move(e)).first;
    } else {
      ++config.rows->hits;
    }
    prepared = &it->second;
    pre = prepared->pre;  // the model takes its own copy
    rows.Xt = &prepared->Xt;
    if (config.preprocess.single) rows.Xt32 = &prepared->Xt32;
    rows.Xu = &prepared->Xu;
    return fit_rows(rows, std::move(pre), labels, ds, roles, config, keep_embedding, std::move(out), prepared);
  }
  {
    Phase phase("preprocess", &out.timings);
    if (ds.sparse) {
      // Sparse rows are reduced by a truncated SVD and mapped to their d' scores right away
      // (no raw rows are kept: every row's embedding comes from its scores).
      pre = data::fit_preprocessor(ds.Xs, rows.transductive, config.preprocess);
      preprocess_in_precision(pre, ds.Xs, rows.transductive, config.preprocess.single, rows.own_t, rows.own_t32);
      rows.own_u = data::apply(pre, ds.Xs, unseen_rows(rows.transductive));
      if (consume) {
        consume->Xs = SparseRows{};
        consume->Xs.comm = rows.comm;
      }
    } else if (ds.typed) {
      // Rows in their own type: the transductive ones preprocessed (d'), the others left
      // raw and embedded tile by tile at evaluation (never stored in d').
      pre = data::fit_preprocessor(ds.rows, rows.transductive, config.preprocess);
      rows.raw_typed = &ds.rows;
      preprocess_in_precision(pre, ds.rows, rows.transductive, config.preprocess.single, rows.own_t, rows.own_t32);
      // A consuming fit reads its raw rows again only for its unseen rows (embed_all, at
      // their positions). A rank that holds none releases them now: at F = 1 the rows' own
      // n·d·s/P bytes no longer sit beside the scores, the kNN lists and the graph (the
      // 10.5 M-sample fit at F = 1: 4.1 GB per rank on 2 ranks). Local; the graph's
      // provenance hashed the raw values above, before this.
      if (consume && std::all_of(rows.transductive.begin(), rows.transductive.end(), [](char t) { return t != 0; }))
        std::vector<unsigned char>().swap(consume->rows.bytes);
    } else if (consume) {
      // Dense rows preprocessed inside their own buffer (split into the two sets, in the
      // chosen precision by apply_split's same policy).
      pre = data::fit_preprocessor(ds.X, rows.transductive, config.preprocess);
      data::SplitRows split =
          data::apply_split(pre, std::move(consume->X), rows.transductive, config.preprocess.single);
      rows.own_t = std::move(split.kept);
      rows.own_t32 = std::move(split.kept32);
      rows.own_u = std::move(split.other);
    } else {
      pre = data::fit_preprocessor(ds.X, rows.transductive, config.preprocess);
      rows.raw = &ds.X;
      // No n×d intermediate copies.
      preprocess_in_precision(pre, ds.X, rows.transductive, config.preprocess.single, rows.own_t, rows.own_t32);
    }
  }
  if (config.preprocess.single) rows.Xt32 = &rows.own_t32;
  return fit_rows(rows, std::move(pre), labels, ds, roles, config, keep_embedding, std::move(out), nullptr);
}

}  // namespace

FitOutcome fit_and_evaluate(const io::Dataset& ds, const std::vector<data::Role>& roles,
                            const FitConfig& config, bool keep_embedding) {
  return fit_and_evaluate_impl(ds, nullptr, roles, config, keep_embedding);
}

FitOutcome fit_and_evaluate_consuming(io::Dataset& ds, const std::vector<data::Role>& roles,
                                      const FitConfig& config, bool keep_embedding) {
  return fit_and_evaluate_impl(ds, &ds, roles, config, keep_embedding);
}

namespace {

FitOutcome fit_rows(FitRows& rows, data::Preprocessor&& pre, const std::vector<int>& labels,
                    const io::Dataset& ds, const std::vector<data::Role>& roles, const FitConfig& config,
                    bool keep_embedding, FitOutcome out, PreparedRows* prepared) {
  const methods::MethodInfo& info = methods::find_method(config.method);
  const RowsView& Xt = rows.xt();
  out.d_reduced = Xt.cols;
  say("training on " + std::to_string(Xt.n_global) + " transductive samples, d' = " +
      std::to_string(Xt.cols) + " after preprocessing");
  // Kernel: the map is fitted on the transductive samples; the method learns on Φ_c and
  // builds its graphs on Xt (input space), as KSODA does (soda-nie2009 §4).
  kernels::KernelOptions ko = kernel_options(config, info);
  if (ko.type == kernels::KernelType::rbf && ko.sigma_scale > 0 && rows.graphs) {
    if (!(rows.graphs->sigma0 > 0)) rows.graphs->sigma0 = kernels::mean_pairwise_distance(Xt.doubles());
    ko.sigma0 = rows.graphs->sigma0;
  }
  kernels::FeatureMap feature_map;
  KernelMapEntry* kernel_entry = nullptr;  // the sweep's entry of this fit's kernel map
  DistMatrix own_phi;
  const DistMatrix* Phi = &own_phi;
  nlohmann::json kernel_info;
  // The exact linear kernel's empirical map spans the same space as the centered data
  // (K = X_c X_cᵀ), so the data itself is its map: no n×n kernel for --kernel linear without
  // landmarks (Nyström with a linear kernel still goes through the map).
  const bool identity_map = ko.type == kernels::KernelType::linear && ko.landmarks == 0;
  if (ko.type != kernels::KernelType::none && !identity_map) {
    Phase phase("kernel", &out.timings);
    const std::string kernel_key = kernels::to_json(ko).dump();
    if (prepared && prepared->kernel_maps.count(kernel_key)) {
      KernelMapEntry& e = prepared->kernel_maps.at(kernel_key);
      feature_map = e.map;  // the model takes its own copy
      Phi = &e.Phi;
      kernel_info = e.info;
      kernel_entry = &e;
    } else {
      feature_map = kernels::fit_feature_map(Xt.doubles(), ko, &kernel_info);
      own_phi = kernels::apply(feature_map, Xt.doubles());
      if (prepared) {
        KernelMapEntry& e = prepared->kernel_maps[kernel_key];
        e.map = feature_map;
        e.Phi = std::move(own_phi);
        e.info = kernel_info;
        Phi = &e.Phi;
        kernel_entry = &e;
      }
    }
    say("kernel " + kernels::to_string(ko.type) + " (" + (feature_map.exact ? "exact" : "Nystrom") +
        " map): " + std::to_string(Phi->cols) + " features from " + std::to_string(feature_map.landmarks()) +
        " landmarks");
  }

  // The linear methods form d'×d' matrices (scatter, eigen-solves) replicated on every rank:
  // with --no-pca on wide data (30 × 20 000) that is gigabytes per rank and minutes. Refuse
  // before computing when about four of them would not fit this rank's memory share.
  const RowsView learn_X = feature_map.empty() ? Xt : RowsView(*Phi);
  if (info.projects && info.name != "1nn") {
    const double dm = static_cast<double>(learn_X.cols);
    const double need = 4.0 * dm * dm * 8.0, limit = memory_limit_per_rank(learn_X.comm);
    if (need > limit) {
      char b[320];
      std::snprintf(b, sizeof b,
                    "%s: d' = %lld features after preprocessing: its d' x d' matrices need about %.3g GiB per rank, "
                    "more than this rank's share of the host's memory (%.3g GiB); keep PCA (drop --no-pca) or "
                    "lower --pca-energy",
                    info.name.c_str(), static_cast<long long>(learn_X.cols), need / 1073741824.0, limit / 1073741824.0);
      SSDR_REQUIRE(false, b);
    }
  }
  methods::TrainingData training{learn_X, labels, ds.classes,
                                 feature_map.empty() ? nullptr : &Xt, rows.graphs,
                                 feature_map.empty() ? std::string() : kernels::to_json(ko).dump()};
  graph::KnnLists given_lists;
  if (!out.graph_provenance.is_null())
    out.graph_provenance["distance"] = "squared Euclidean, preprocessed transductive rows, d' = " + std::to_string(Xt.cols);
  if (!config.graph_in.empty()) {
    Phase phase("read graph", &out.timings);
    const bool foreign = !check_graph_provenance(config.graph_in, out.graph_provenance, Xt.comm);
    given_lists = graph::read_knn_lists(config.graph_in, Xt.n_global, Xt.row_start, Xt.n_local, Xt.comm);
    graph::check_list_distances(given_lists, Xt, foreign, config.graph_in);
    if (foreign && comm_rank(Xt.comm) == 0)
      std::fprintf(stderr, "ssdr: warning: --graph-in %s has no provenance (lists computed elsewhere?): its data, "
                           "split and preprocessing cannot be checked, only a sample of its distances\n",
                   config.graph_in.c_str());
    training.given_lists = &given_lists;
  }
  if (config.keep_lists) training.lists_out = &out.knn_lists;
  // The features' coordinates (--shrinkage auto standardizes the features, not the PCA axes).
  if (feature_map.empty() && pre.basis.rows > 0) training.input_basis = &pre.basis;
  methods::FitResult fit = info.fit(training, config.method_options, out.timings);
  Xt.release();  // a method's double copy of float rows (a kernel map's too) is not read again
  given_lists = graph::KnnLists();
  own_phi = DistMatrix();
  out.soft_labels = std::move(fit.soft_labels);
  out.trace_ratio = fit.trace_ratio;
  out.info = fit.info;
  // Lists from --graph-in: the report says where they came from, not which search the graph
  // code ran through to estimate their recall.
  if (!config.graph_in.empty() && out.info.contains("graph")) {
    out.info["graph"]["lists_file"] = config.graph_in;
    out.info["graph"]["knn_method"] = "file";
  }
  if (!pre.route.empty()) {
    // The PCA's route and the fraction of the variance it keeps (the energy rule's measure).
    double kept = 0;
    for (double e : pre.eigenvalues) kept += e;
    nlohmann::json pca = {{"route", pre.route}, {"d_input", rows.d_input}, {"components", pre.basis.cols},
                          {"total_variance", pre.total_variance},
                          {"energy_kept", pre.total_variance > 0 ? kept / pre.total_variance : 1.0}};
    if (!pre.svd_type.empty()) {
      pca["svd_type"] = pre.svd_type;
      pca["svd_iterations"] = pre.svd_iterations;
      pca["svd_ncv"] = pre.svd_ncv;
      pca["svd_max_relative_residual"] = pre.svd_residual;
    }
    out.info["pca"] = pca;
  }
  if (!feature_map.empty()) out.info["kernel"] = kernel_info;
  else if (identity_map) out.info["kernel"] = {{"type", "linear"}, {"map", "identity (the centered data)"}};

  model::Model& m = out.model;
  m.method = config.method;
  m.ssdr_version = version();
  m.parameters_json = config.parameters.dump();
  m.d_input = rows.d_input;
  m.classes = ds.classes;
  // Moved, not copied: the basis of a sparse, high-dimensional fit is d×d' (400 MB at d = 10⁶,
  // d' = 50), and a copy doubled the fit's peak memory on 2 ranks.
  m.shift = std::move(pre.shift);
  m.scale = std::move(pre.scale);
  m.mean = std::move(pre.mean);
  m.basis = std::move(pre.basis);
  m.kernel = std::move(feature_map);
  m.W = fit.W;
  m.normalization = fit.normalization;
  out.dim = fit.W.cols;

  Phase phase("evaluate", &out.timings);
  if (info.projects && !keep_embedding && kernel_entry == nullptr && model::Projector(m).local()) {
    // No n×m embedding: each tile is classified as it is embedded.
    out.accuracy = evaluate_streamed(m, rows, ds.labels, roles, out.labeled_embedding, out.labeled_labels);
  } else if (info.projects) {
    DistMatrix Y = embed_all(m, rows, kernel_entry);
    out.accuracy = evaluation::one_nn_accuracy(Y, ds.labels, roles);
    out.labeled_embedding = evaluation::gather_labeled_rows(Y, roles);
    std::vector<int> mine;
    for (size_t i = 0; i < roles.size(); ++i)
      if (roles[i] == data::Role::labeled) mine.push_back(ds.labels[i]);
    out.labeled_labels = allgatherv(mine, rows.comm);
    if (keep_embedding) out.embedding = std::move(Y);
  } else {
    // Transductive classifier: predictions exist for the transductive samples only.
    std::vector<int> predicted(static_cast<size_t>(rows.layout.n_local), -1);
    size_t t = 0;
    for (int64_t i = 0; i < rows.layout.n_local; ++i)
      if (rows.transductive[static_cast<size_t>(i)])
        predicted[static_cast<size_t>(i)] = fit.transductive_prediction.at(t++);
    out.accuracy = evaluation::accuracy(predicted, ds.labels, roles, rows.comm);
    out.accuracy.unseen = std::numeric_limits<double>::quiet_NaN();
    out.accuracy.correct_unseen = 0;
  }
  phase.stop();  // before the return: the destructor would record it after `out` has left
  return out;
}

}  // namespace

}  // namespace ssdr::driver
