// The symmetrized kNN graph
// (soda-nie2009 §3.1, eq. (24), (42), (43); §5.2 for the defaults k = 8, s = 1e-3/k).
//
// knn_search and knn_recall live in knn_exact.cpp (half ring, single-precision GEMM filter,
// exact re-ranking in double).
//
// symmetrize: every forward edge (i → j) also travels as the reverse edge (j → i) to the owner
// of row j (MPI_Alltoallv); rows are merged, sorted by column and deduplicated. A directed
// weight w_ij rides along; the merged entry holds (w_ij + w_ji)/2 — a sum of the same two
// doubles at (i, j) and (j, i), so the result is symmetric bit for bit.
//
// build_knn_graph: d̄ (eq. (42)) is the mean of dist2 over the undirected edges; t = σ² by the
// σ rule (eq. (42), or t = d̄ for tca-liu2008 eq. (4)) unless σ is given; weights; MATAIJ
// (MPIAIJ on several ranks) with exact preallocation. The adaptive-neighbours weights
// (Nie et al. 2016) need the (k+1)-th distance of each row: one knn_search with k+1, the
// weights of the k nearest from the closed form, then the lists cut to k and symmetrized
// with the weights.
// Cosine weights use the squared norms of all rows (one Allgatherv of n doubles: O(n), not
// O(n·d)): cos = (‖x‖² + ‖y‖² − ‖x−y‖²) / (2‖x‖‖y‖), clamped to [0, 1], 0 for a zero row.
// The expression is symmetric in x and y bit for bit, so A stays exactly symmetric.
#include "ssdr/graph/knn.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/ordered_sum.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/graph/nndescent.hpp"
#include "knn_internal.hpp"

namespace ssdr::graph {

namespace {

using detail::k_message;

void squared_norms(const double* rows, int64_t n, int64_t d, double* out) {
  for (int64_t i = 0; i < n; ++i) {
    const double* r = rows + i * d;
    double s = 0;
    for (int64_t t = 0; t < d; ++t) s += r[t] * r[t];
    out[i] = s;
  }
}

}  // namespace

namespace {

/// The directed weight w of an edge record or row entry, present only when weights are given
/// (W): the unweighted graph moves 24 bytes per edge, not 32, and keeps 16 per entry, not 24
/// (at 5·10⁶ rows per rank and k = 8 the exchange's peak was 4 GB).
template <bool W>
struct DirectedWeight {
  double w;  ///< the directed weight of (col → row)
};
template <>
struct DirectedWeight<false> {};
/// An edge record of symmetrize's exchange (sent to the owner of `row`).
template <bool W>
struct EdgeRecord : DirectedWeight<W> {
  int64_t row, col;
  double d2;
};
/// A row's entry before the merge.
template <bool W>
struct RowEntry : DirectedWeight<W> {
  int64_t col;
  double d2;
};

/// symmetrize with weights (W) or without; `owned`, when not null, is knn itself, whose
/// lists are released once the rows' entries hold them. Collective.
template <bool W>
SymmetricEdges symmetrize_impl(const KnnLists& knn, KnnLists* owned, MPI_Comm comm,
                               const std::vector<double>* directed) {
  using Edge = EdgeRecord<W>;
  using Entry = RowEntry<W>;
  int size = 1;
  MPI_Comm_size(comm, &size);
  const int k = knn.k;
  const int64_t nl = knn.n_local;
  SSDR_CHECK(static_cast<int64_t>(knn.index.size()) == nl * k &&
                 static_cast<int64_t>(knn.dist2.size()) == nl * k &&
                 (!directed || static_cast<int64_t>(directed->size()) == nl * k),
             "symmetrize: neighbor lists do not have n_local·k entries");
  std::vector<int64_t> starts, counts;
  gather_layout(comm, knn.row_start, nl, starts, counts);
  std::vector<int64_t> ends(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) ends[r] = starts[r] + counts[r];
  // Owner of global row j: the first rank whose block ends after j (empty blocks skipped).
  auto owner = [&](int64_t j) {
    return static_cast<int>(std::upper_bound(ends.begin(), ends.end(), j) - ends.begin());
  };

  static_assert(sizeof(Edge) == (W ? 32 : 24), "Edge must be packed as 8-byte fields");
  MPI_Datatype edge_type;
  MPI_Type_contiguous(static_cast<int>(sizeof(Edge)), MPI_BYTE, &edge_type);
  MPI_Type_commit(&edge_type);

  // Reverse edges (j, i) go to the owner of j, bucketed by destination.
  std::vector<int> send_counts(static_cast<size_t>(size), 0), recv_counts(static_cast<size_t>(size));
  for (int64_t e = 0; e < nl * k; ++e) ++send_counts[owner(knn.index[e])];
  std::vector<int> sdispl(static_cast<size_t>(size) + 1, 0), rdispl(static_cast<size_t>(size) + 1, 0);
  for (int r = 0; r < size; ++r) sdispl[r + 1] = sdispl[r] + send_counts[r];
  std::vector<Edge> sendbuf(static_cast<size_t>(nl * k));
  {
    std::vector<int> fill(sdispl.begin(), sdispl.end() - 1);
    for (int64_t i = 0; i < nl; ++i)
      for (int m = 0; m < k; ++m) {
        const int64_t e = i * k + m;
        const int64_t j = knn.index[e];
        Edge& out = sendbuf[static_cast<size_t>(fill[owner(j)]++)];
        out.row = j;
        out.col = knn.row_start + i;
        out.d2 = knn.dist2[e];
        if constexpr (W) out.w = (*directed)[static_cast<size_t>(e)];
      }
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
  for (int r = 0; r < size; ++r) rdispl[r + 1] = rdispl[r] + recv_counts[r];
  std::vector<Edge> recvbuf(static_cast<size_t>(rdispl[size]));
  MPI_Alltoallv(sendbuf.data(), send_counts.data(), sdispl.data(), edge_type, recvbuf.data(),
                recv_counts.data(), rdispl.data(), edge_type, comm);
  MPI_Type_free(&edge_type);
  sendbuf = std::vector<Edge>();

  // Bucket forward + received reverse edges by local row (counting sort), then sort each
  // row by column and drop the duplicates (an edge found from both sides).
  std::vector<int64_t> ptr(static_cast<size_t>(nl) + 1, 0);
  for (int64_t i = 0; i < nl; ++i) ptr[i + 1] = k;
  for (const Edge& e : recvbuf) {
    const int64_t li = e.row - knn.row_start;
    SSDR_CHECK(li >= 0 && li < nl, "symmetrize: received an edge for a row owned elsewhere");
    ++ptr[li + 1];
  }
  for (int64_t i = 0; i < nl; ++i) ptr[i + 1] += ptr[i];
  std::vector<Entry> ent(static_cast<size_t>(ptr[nl]));
  {
    std::vector<int64_t> fill(ptr.begin(), ptr.end() - 1);
    for (int64_t i = 0; i < nl; ++i)
      for (int m = 0; m < k; ++m) {
        Entry& en = ent[static_cast<size_t>(fill[i]++)];
        en.col = knn.index[i * k + m];
        en.d2 = knn.dist2[i * k + m];
        if constexpr (W) en.w = (*directed)[static_cast<size_t>(i * k + m)];
      }
    for (const Edge& e : recvbuf) {
      Entry& en = ent[static_cast<size_t>(fill[e.row - knn.row_start]++)];
      en.col = e.col;
      en.d2 = e.d2;
      if constexpr (W) en.w = e.w;
    }
  }
  recvbuf = std::vector<Edge>();
  const int64_t row_start = knn.row_start, n_global = knn.n_global;
  if (owned != nullptr) {  // the lists are in ent now
    std::vector<int64_t>().swap(owned->index);
    std::vector<double>().swap(owned->dist2);
  }

  SymmetricEdges out;
  out.n_global = n_global;
  out.row_start = row_start;
  out.n_local = nl;
  out.row_ptr.assign(static_cast<size_t>(nl) + 1, 0);
  out.col.reserve(ent.size());
  out.dist2.reserve(ent.size());
  std::vector<double> wsum;  // w_ij + w_ji per merged entry
  wsum.reserve(W ? ent.size() : 0);
  for (int64_t i = 0; i < nl; ++i) {
    auto b = ent.begin() + ptr[i], e = ent.begin() + ptr[i + 1];
    std::sort(b, e, [](const Entry& a, const Entry& c) { return a.col < c.col; });
    for (auto it = b; it != e; ++it) {
      if (static_cast<int64_t>(out.col.size()) > out.row_ptr[i] && out.col.back() == it->col) {
        // The edge found from both sides: same dist2 bits; the two directed weights add
        // (a + b == b + a exactly, so (i, j) and (j, i) agree).
        if constexpr (W) wsum.back() += it->w;
        continue;
      }
      out.col.push_back(it->col);
      out.dist2.push_back(it->d2);
      if constexpr (W) wsum.push_back(it->w);
    }
    out.row_ptr[i + 1] = static_cast<int64_t>(out.col.size());
  }
  if constexpr (W) {
    out.weight = std::move(wsum);
    for (double& w : out.weight) w *= 0.5;  // (S + Sᵀ)/2
  }
  return out;
}

}  // namespace

SymmetricEdges symmetrize(const KnnLists& knn, MPI_Comm comm, const std::vector<double>* directed) {
  return directed ? symmetrize_impl<true>(knn, nullptr, comm, directed)
                  : symmetrize_impl<false>(knn, nullptr, comm, directed);
}

SymmetricEdges symmetrize(KnnLists&& knn, MPI_Comm comm, const std::vector<double>* directed) {
  return directed ? symmetrize_impl<true>(knn, &knn, comm, directed)
                  : symmetrize_impl<false>(knn, &knn, comm, directed);
}

const char* to_string(EdgeWeight w) {
  switch (w) {
    case EdgeWeight::heat: return "heat";
    case EdgeWeight::cosine: return "cosine";
    case EdgeWeight::binary: return "binary";
    case EdgeWeight::adaptive: return "adaptive";
    case EdgeWeight::clr: return "clr";
  }
  return "?";
}

EdgeWeight parse_weight(const std::string& s) {
  for (EdgeWeight w : {EdgeWeight::heat, EdgeWeight::cosine, EdgeWeight::binary, EdgeWeight::adaptive, EdgeWeight::clr})
    if (s == to_string(w)) return w;
  throw Error("--weight: expected heat, cosine, binary, adaptive or clr, got '" + s + "'", __FILE__, __LINE__, true);
}

const char* to_string(KnnMethod m) {
  return m == KnnMethod::exact ? "exact" : m == KnnMethod::nndescent ? "nndescent" : "auto";
}

KnnMethod parse_knn_method(const std::string& s) {
  for (KnnMethod m : {KnnMethod::exact, KnnMethod::nndescent, KnnMethod::automatic})
    if (s == to_string(m)) return m;
  throw Error("--knn-method: expected exact, nndescent or auto, got '" + s + "'", __FILE__, __LINE__, true);
}

KnnMethod resolve(KnnMethod m, int64_t n) {
  if (m != KnnMethod::automatic) return m;
  return n <= kExactKnnMax ? KnnMethod::exact : KnnMethod::nndescent;
}

KnnLists knn_lists(const RowsView& X, int k, const GraphOptions& options) {
  if (resolve(options.knn_method, X.n_global) == KnnMethod::exact) return knn_search(X, k);
  NNDescentOptions o;
  o.seed = options.knn_seed;
  o.fetch_budget_bytes = options.nndescent_memory_mib * (1 << 20);
  return nndescent_search(X, k, o);
}

const char* to_string(SigmaRule r) {
  return r == SigmaRule::soda_eq42 ? "soda_eq42" : "mean_edge_dist2";
}

std::vector<double> adaptive_weights(const KnnLists& lists, int k) {
  SSDR_CHECK(k >= 1 && lists.k == k + 1,
             "adaptive_weights: needs k + 1 = " + std::to_string(k + 1) + " neighbours per row, got " +
                 std::to_string(lists.k));
  const int64_t nl = lists.n_local;
  std::vector<double> w(static_cast<size_t>(nl * k));
  for (int64_t i = 0; i < nl; ++i) {
    const double* d = lists.dist2.data() + i * (k + 1);
    double* s = w.data() + i * k;
    // den = k·d_{k+1} − Σ_{h≤k} d_h written as a sum of non-negative terms d_{k+1} − d_h.
    double den = 0;
    for (int h = 0; h < k; ++h) {
      s[h] = d[k] - d[h];
      den += s[h];
    }
    if (den > 0)
      for (int h = 0; h < k; ++h) s[h] /= den;
    else  // d_1 = … = d_{k+1}: the equal-distance limit of the closed form
      for (int h = 0; h < k; ++h) s[h] = 1.0 / k;
  }
  return w;
}

KnnLists truncate(const KnnLists& lists, int k) {
  SSDR_CHECK(k >= 1 && k <= lists.k, "truncate: k out of range");
  KnnLists out;
  out.k = k;
  out.n_global = lists.n_global;
  out.row_start = lists.row_start;
  out.n_local = lists.n_local;
  out.index.resize(static_cast<size_t>(lists.n_local * k));
  out.dist2.resize(static_cast<size_t>(lists.n_local * k));
  for (int64_t i = 0; i < lists.n_local; ++i)
    for (int m = 0; m < k; ++m) {
      out.index[static_cast<size_t>(i * k + m)] = lists.index[static_cast<size_t>(i * lists.k + m)];
      out.dist2[static_cast<size_t>(i * k + m)] = lists.dist2[static_cast<size_t>(i * lists.k + m)];
    }
  return out;
}

namespace {

/// The n×n MATAIJ with E's pattern and values value(i_local, entry), exact preallocation
/// (diagonal block = the columns this rank owns). Collective. Returns each local row's sum
/// of values (its degree) in row_sums.
template <class Value>
Owned<Mat> assemble(MPI_Comm comm, const SymmetricEdges& E, Value value, std::vector<double>& row_sums) {
  const int64_t nl = E.n_local, n = E.n_global;
  const int64_t c0 = E.row_start, c1 = E.row_start + nl;
  std::vector<PetscInt> dnz(static_cast<size_t>(nl), 0), onz(static_cast<size_t>(nl), 0);
  for (int64_t i = 0; i < nl; ++i)
    for (int64_t e = E.row_ptr[i]; e < E.row_ptr[i + 1]; ++e)
      ++((E.col[e] >= c0 && E.col[e] < c1) ? dnz : onz)[i];

  Owned<Mat> A;
  SSDR_PETSC(MatCreate(comm, A.out()));
  SSDR_PETSC(MatSetSizes(A, static_cast<PetscInt>(nl), static_cast<PetscInt>(nl),
                         static_cast<PetscInt>(n), static_cast<PetscInt>(n)));
  SSDR_PETSC(MatSetType(A, MATAIJ));
  SSDR_PETSC(MatSeqAIJSetPreallocation(A, 0, dnz.data()));
  SSDR_PETSC(MatMPIAIJSetPreallocation(A, 0, dnz.data(), 0, onz.data()));
  SSDR_PETSC(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  SSDR_PETSC(MatSetOption(A, MAT_NO_OFF_PROC_ENTRIES, PETSC_TRUE));

  row_sums.assign(static_cast<size_t>(nl), 0.0);
  std::vector<PetscInt> cols;
  std::vector<PetscScalar> vals;
  for (int64_t i = 0; i < nl; ++i) {
    const int64_t b = E.row_ptr[i], e = E.row_ptr[i + 1];
    cols.resize(static_cast<size_t>(e - b));
    vals.resize(static_cast<size_t>(e - b));
    for (int64_t p = b; p < e; ++p) {
      const size_t q = static_cast<size_t>(p - b);
      cols[q] = static_cast<PetscInt>(E.col[p]);
      vals[q] = value(i, p);
      row_sums[static_cast<size_t>(i)] += vals[q];
    }
    const PetscInt row = static_cast<PetscInt>(c0 + i);
    SSDR_PETSC(MatSetValues(A, 1, &row, static_cast<PetscInt>(e - b), cols.data(), vals.data(),
                            INSERT_VALUES));
  }
  SSDR_PETSC(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  // Exactly symmetric by construction (same dist2 bits and weight formula at both ends).
  // Not MAT_SYMMETRY_ETERNAL: PETSc drops the flag if a caller modifies A.
  SSDR_PETSC(MatSetOption(A, MAT_SYMMETRIC, PETSC_TRUE));
  return A;
}

}  // namespace

Graph build_knn_graph(const RowsView& X, const GraphOptions& requested, const KnnLists* given) {
  GraphOptions options = requested;
  options.knn_method = resolve(requested.knn_method, X.n_global);
  MPI_Comm comm = X.comm;
  const int k = options.k;
  const int64_t n = X.n_global;
  const bool clr = options.weight == EdgeWeight::clr;
  const bool adaptive = options.weight == EdgeWeight::adaptive || clr;  // CLR starts from it
  SSDR_CHECK_COLLECTIVE(comm, k >= 1 && static_cast<int64_t>(k) < n, k_message(k, n));
  SSDR_CHECK_COLLECTIVE(comm, !adaptive || static_cast<int64_t>(k) + 1 < n,
                        "--knn " + std::to_string(k) + " must be smaller than the number of graph samples minus one (" +
                            std::to_string(n - 1) + ") for the adaptive graph, which reads the (k+1)-th neighbour");
  const double s = options.sigma_s == 0 ? 1e-3 / k : options.sigma_s;
  SSDR_CHECK_COLLECTIVE(comm, s > 0 && s < 1,
                        "--sigma-s " + std::to_string(s) + " must lie strictly between 0 and 1");
  SSDR_CHECK_COLLECTIVE(comm, std::isfinite(options.sigma) && options.sigma >= 0,
                        "--sigma " + std::to_string(options.sigma) + " must be positive (or 0 for the sigma rule)");

  SSDR_CHECK_COLLECTIVE(comm, options.knn_recall_sample >= 0,
                        "--knn-recall-sample " + std::to_string(options.knn_recall_sample) + " must be >= 0");
  const bool approximate = options.knn_method != KnnMethod::exact;
  double recall = 1;
  SymmetricEdges E;
  ClrResult clr_result;
  const int need = adaptive ? k + 1 : k;
  SSDR_CHECK(given == nullptr || (given->n_local == X.n_local && given->row_start == X.row_start &&
                                  (given->k == need || (given->k > need && !approximate))),
             "build_knn_graph: the given lists do not fit X or k");
  auto lists_of = [&](int kk) { return given ? truncate(*given, kk) : knn_lists(X, kk, options); };
  if (adaptive) {
    const KnnLists wide = lists_of(k + 1);
    std::vector<double> w = adaptive_weights(wide, k);
    KnnLists lists = truncate(wide, k);
    if (approximate) recall = knn_recall(X, lists, options.knn_recall_sample, options.knn_seed);
    if (clr) {
      ClrResult r = clr_refine(lists, w, options.components, comm);
      w = std::move(r.s);
      clr_result = std::move(r);
    }
    E = symmetrize(std::move(lists), comm, &w);
  } else {
    KnnLists lists = lists_of(k);
    if (approximate) recall = knn_recall(X, lists, options.knn_recall_sample, options.knn_seed);
    E = symmetrize(std::move(lists), comm);
  }
  const int64_t nl = E.n_local;

  // d̄ over undirected edges: every edge appears in two rows, so sum/entries = sum/2/edges.
  // Row sums in column order, added in ordered_sum's fixed order: σ has the same bits on
  // any rank count.
  std::vector<double> row_sums(static_cast<size_t>(nl), 0.0);
  for (int64_t i = 0; i < nl; ++i)
    for (int64_t e = E.row_ptr[i]; e < E.row_ptr[i + 1]; ++e) row_sums[static_cast<size_t>(i)] += E.dist2[e];
  const double total = ordered_sum(comm, row_sums);
  int64_t entries = static_cast<int64_t>(E.col.size());
  MPI_Allreduce(MPI_IN_PLACE, &entries, 1, MPI_INT64_T, MPI_SUM, comm);
  Graph g;
  g.k = k;
  g.weight = options.weight;
  g.knn_method = options.knn_method;
  g.knn_recall = recall;
  g.edges = entries / 2;
  if (clr) {
    g.clr_iterations = clr_result.iterations;
    g.clr_lambda = clr_result.lambda;
    g.components = clr_result.components;
    g.clr_converged = clr_result.converged;
    g.laplacian_eigenvalues = clr_result.eigenvalues;
  }
  g.mean_edge_dist2 = entries > 0 ? total / static_cast<double>(entries) : 0.0;
  if (options.weight == EdgeWeight::heat) {
    if (options.sigma > 0) {
      g.sigma = options.sigma;
      g.t = g.sigma * g.sigma;
    } else if (g.mean_edge_dist2 == 0) {
      g.sigma = g.t = 1.0;  // all edges join duplicates: every heat weight is 1 anyway
    } else if (options.sigma_rule == SigmaRule::soda_eq42) {
      g.sigma = std::sqrt(-g.mean_edge_dist2 / std::log(s));  // eq. (42)
      g.t = g.sigma * g.sigma;
    } else {
      g.t = g.mean_edge_dist2;  // tca-liu2008 eq. (4) with t = d̄
      g.sigma = std::sqrt(g.t);
    }
  }

  // Cosine weights need ‖x_j‖² of every neighbor: gather the n squared norms.
  std::vector<double> norms2;
  if (options.weight == EdgeWeight::cosine) {
    std::vector<double> mine(static_cast<size_t>(nl));
    std::vector<double> row(static_cast<size_t>(X.cols));  // float rows: one row's doubles at a time
    for (int64_t i = 0; i < nl; ++i) {
      X.tile(i, 1, row.data());
      squared_norms(row.data(), 1, X.cols, mine.data() + i);
    }
    norms2 = allgatherv(mine, comm);  // global row order: the row blocks are in rank order
  }

  const double t = g.t;
  auto value = [&](int64_t i, int64_t p) -> double {
    switch (options.weight) {
      case EdgeWeight::heat:
        return std::exp(-E.dist2[p] / t);  // eq. (24) / tca-liu2008 eq. (4)
      case EdgeWeight::cosine: {
        const double xi2 = norms2[static_cast<size_t>(E.row_start + i)];
        const double yj2 = norms2[static_cast<size_t>(E.col[p])];
        double c = 0;
        if (xi2 > 0 && yj2 > 0) c = (xi2 + yj2 - E.dist2[p]) / (2.0 * (std::sqrt(xi2) * std::sqrt(yj2)));
        return std::min(1.0, std::max(0.0, c));
      }
      case EdgeWeight::binary:
        return 1.0;
      case EdgeWeight::adaptive:
      case EdgeWeight::clr:
        return E.weight[static_cast<size_t>(p)];  // (S + Sᵀ)/2
    }
    return 0.0;
  };
  std::vector<double> degrees;
  g.A = assemble(comm, E, value, degrees);
  const double sum = ordered_sum(comm, degrees);  // the same bits on any rank count
  g.mean_degree = n > 0 ? sum / static_cast<double>(n) : 0.0;
  return g;
}

}  // namespace ssdr::graph
