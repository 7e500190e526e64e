#pragma once
/// \file knn.hpp
/// Exact k-nearest-neighbor search and the symmetrized neighborhood graph
/// (soda-nie2009 §3.1, eq. (24), (42), (43); tca-liu2008 eq. (4); the adaptive-neighbours
/// graph of Nie et al. 2016 that soge-liu2017 §5.2 uses).
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/graph/knn_lists.hpp"

namespace ssdr::graph {

/// Exact kNN lists of the rows of X (n×d, rows distributed, any layout). Each unordered pair
/// of rows is looked at once: the upper triangle of tiles within a rank's block, and across
/// ranks a half ring (⌈P/2⌉ steps) in which a visiting block carries its rows' partial lists
/// and goes home again. Candidates come from single-precision GEMM tiles on the centered rows
/// with a slack that provably covers the float rounding (knn_exact.cpp has the analysis), and
/// are re-ranked by their exact double distance; the lists are bitwise those of a brute-force
/// search for any partition. Duplicate points (distance 0) are neighbours like any other.
/// Collective over X.comm. Memory per rank: its block (in its type, + a float copy), two visiting
/// blocks in its type and a float copy, the visitor's lists, one 256×256 float tile. Float rows
/// (--precision single) are searched in place, their blocks travel as floats, and the lists
/// are bitwise those of their double copy.
/// \throws ssdr::Error (collectively) when k < 1 or k ≥ n.
KnnLists knn_search(const RowsView& X, int k);

/// Recall@k of approximate lists against exact ones, estimated on `sample` rows drawn
/// uniformly without replacement (global indices from `seed`, the same on any rank count;
/// all n rows when sample ≥ n): the exact k nearest of each sampled row are found by
/// broadcasting the sampled rows and scanning every rank's block (O(sample·n·d) flops, no
/// rank holds more than its block plus the sample), and recall = |approx ∩ exact| /
/// (sample·k), the lists compared as sets of global indices (a tie at the k-th distance
/// may count an equally near neighbour as a miss). `lists` must be the lists of X's rows in
/// X's layout. Float rows are read as their doubles, a chunk at a time. Collective over
/// X.comm. Returns NaN when sample ≤ 0 (not estimated).
/// \throws ssdr::Error (collectively) when the lists do not match X's layout.
double knn_recall(const RowsView& X, const KnnLists& lists, int64_t sample, uint64_t seed);

/// Edge weights of the graph.
enum class EdgeWeight {
  heat,      ///< A_ij = exp(−‖x_i−x_j‖²/t), t = σ² by GraphOptions::sigma_rule (eq. (24))
  cosine,    ///< A_ij = max(0, x_iᵀx_j/(‖x_i‖‖x_j‖)), eq. (43) (clamped at 0)
  binary,    ///< A_ij = 1 (0/1 graph, as SDA uses)
  /// The adaptive-neighbours graph of the constrained Laplacian rank method (Nie et al. 2016,
  /// cited by soge-liu2017 §5.2): the directed weights s_ij of adaptive_weights on the k
  /// nearest neighbours (each row sums to 1), symmetrized A = (S + Sᵀ)/2. Parameter-free:
  /// σ and the σ rule do not apply. The closed form only, without CLR's rank constraint.
  adaptive,
  /// The constrained Laplacian rank graph (Nie, Wang, Jordan, Huang 2016, the L2 problem
  /// min Σ_i ‖s_i − a_i‖² + 2λ tr(FᵀL_S F), s_i on the simplex, FᵀF = I; soge-liu2017 §5.2
  /// "we follow CLR to construct the Laplacian matrix L that exactly has rank (n − c)"): the
  /// adaptive graph's directed rows a_i are refined on their k neighbours until the Laplacian
  /// of A = (S + Sᵀ)/2 has exactly GraphOptions::components zero eigenvalues, i.e. the graph
  /// exactly that many connected components. See clr_refine.
  clr
};

/// How the heat kernel's width t = σ² follows from the data (heat weights only).
enum class SigmaRule {
  /// σ² = −d̄/ln s, soda-nie2009 eq. (42), s = GraphOptions::sigma_s (0 → 10⁻³/k): an edge of
  /// mean length gets weight s. With the default s the graph is very narrow (mean degree
  /// ≈ 0.06 on digits).
  soda_eq42,
  /// t = σ² = d̄, the mean squared length of the graph's edges (tca-liu2008 eq. (4), whose
  /// σ is not specified; the usual heat-kernel choice): an edge of mean length weighs e⁻¹.
  mean_edge_dist2
};

/// The kNN backend behind build_knn_graph (a policy, as mlpack's tree types): exact
/// (knn_search) or approximate (nndescent_search, include/ssdr/graph/nndescent.hpp).
/// automatic (the default): exact for at most kExactKnnMax graph samples, NN-descent beyond,
/// where the exact search's n²d work and its ring moving every row to every rank stop
/// scaling (docs/scaling.md).
enum class KnnMethod { exact, nndescent, automatic };
/// The largest graph the automatic backend searches exactly (about a minute of single-precision
/// GEMM on 2 cores at 70 000 samples of 784 features; the exact cost grows as n²).
inline constexpr int64_t kExactKnnMax = 100000;
/// "exact", "nndescent", "auto" (as --knn-method spells them).
const char* to_string(KnnMethod m);
/// The backend `m` means for a graph of n samples (automatic resolved by kExactKnnMax). Local.
KnnMethod resolve(KnnMethod m, int64_t n);
/// Inverse of to_string. \throws ssdr::Error (replicated) naming the valid values.
KnnMethod parse_knn_method(const std::string& s);

/// The kNN graph: k, the weights (heat kernel, soda-nie2009 eq. (42) for σ), the backend.
struct GraphOptions {
  int k = 8;                           ///< neighbors
  EdgeWeight weight = EdgeWeight::heat;
  SigmaRule sigma_rule = SigmaRule::soda_eq42;  ///< heat width when sigma is 0
  double sigma_s = 0;                  ///< s of eq. (42); 0 → 1e-3/k
  double sigma = 0;                    ///< explicit σ (> 0 overrides the σ rule)
  KnnMethod knn_method = KnnMethod::automatic;  ///< --knn-method
  uint64_t knn_seed = 1;               ///< NN-descent's seed (the run's --seed)
  /// Rows whose exact lists estimate the recall of an approximate graph (--knn-recall-sample;
  /// 0: not estimated). Unused by the exact backend (recall 1).
  int64_t knn_recall_sample = 1000;
  /// --nndescent-memory: B_f of NNDescentOptions in MiB (its float copy of the rank's rows is
  /// kept when it fits, and the remote rows of one join block). The lists do not depend on it
  /// (nndescent_search gives the same lists for any B_f), so fields() leaves it out: a graph
  /// cached under one value serves another (tests/unit/cache_keys_test.cpp: unkeyed_members).
  double nndescent_memory_mib = 160;
  /// c of the CLR rank constraint (weight clr only): the connected components asked for.
  /// 0 → not set; methods::knn_graph sets it to the number of classes.
  int components = 0;
  /// Every field as a tuple, in declaration order: the one list of the fields that
  /// methods::GraphKey compares (a new field goes here and into tests/unit/cache_keys_test.cpp).
  auto fields() const {
    return std::tie(k, weight, sigma_rule, sigma_s, sigma, knn_method, knn_seed, knn_recall_sample, components);
  }
};

/// The k nearest neighbours of each row of X by the backend options.knn_method (knn_search
/// or nndescent_search with options.knn_seed), in knn_search's layout. Collective over X.comm.
/// \throws ssdr::Error (collectively) as the backend.
KnnLists knn_lists(const RowsView& X, int k, const GraphOptions& options);

/// "heat", "cosine", "binary", "adaptive", "clr" (as --weight spells them).
const char* to_string(EdgeWeight w);
/// Inverse of to_string. \throws ssdr::Error (replicated) naming the valid values.
EdgeWeight parse_weight(const std::string& s);
/// "soda_eq42", "mean_edge_dist2".
const char* to_string(SigmaRule r);

/// The symmetrized neighborhood graph: an edge joins i and j when i ∈ kNN(j) or j ∈ kNN(i).
struct Graph {
  Owned<Mat> A;               ///< n×n symmetric MPIAIJ, X's row layout, zero diagonal
  int k = 0;                  ///< neighbors per sample
  EdgeWeight weight = EdgeWeight::heat;  ///< construction / weights used
  double sigma = 0;           ///< heat-kernel σ actually used (heat only, else 0)
  double t = 0;               ///< heat-kernel width t = σ² of exp(−d/t) (heat only, else 0)
  double mean_edge_dist2 = 0; ///< d̄ of eq. (42): mean squared length over undirected edges
  int64_t edges = 0;          ///< number of undirected edges (stored pairs i < j)
  double mean_degree = 0;     ///< Σ_ij A_ij / n (1 for the adaptive graph, up to rounding)
  KnnMethod knn_method = KnnMethod::exact;  ///< backend that found the neighbours
  /// Recall@k of the neighbour lists, estimated by knn_recall on GraphOptions::
  /// knn_recall_sample rows: 1 for the exact backend, NaN when not estimated.
  double knn_recall = 1;
  /// CLR (weight clr only): the outer iterations run, the final λ, the connected components
  /// of the final graph (= GraphOptions::components when converged) and the c + 1 smallest
  /// eigenvalues of its Laplacian L = D − A, ascending.
  int clr_iterations = 0;
  double clr_lambda = 0;
  int64_t components = 0;
  bool clr_converged = false;
  std::vector<double> laplacian_eigenvalues;
};

/// For each local row, its neighbors in the symmetrized graph (union of both directions),
/// as sorted global indices with the exact squared distances. Collective (edges are
/// exchanged with MPI_Alltoallv so each rank holds the full rows it owns).
struct SymmetricEdges {
  int64_t n_global = 0, row_start = 0, n_local = 0;
  std::vector<int64_t> row_ptr;  ///< n_local+1 offsets (CSR)
  std::vector<int64_t> col;      ///< global column indices, sorted within a row
  std::vector<double> dist2;     ///< squared distances
  /// (w_ij + w_ji)/2 per entry when directed weights were given (w_ij = 0 when j ∉ kNN(i)),
  /// bitwise the same at (i, j) and (j, i); empty otherwise.
  std::vector<double> weight;
};
/// `directed` (optional): one weight per kNN entry (knn.n_local·k, the layout of knn.index);
/// when given, the result's `weight` holds the symmetrized (S + Sᵀ)/2.
/// \throws ssdr::Error when the lists (or `directed`) do not have n_local·k entries.
SymmetricEdges symmetrize(const KnnLists& knn, MPI_Comm comm,
                          const std::vector<double>* directed = nullptr);
/// The same, releasing knn's lists (index, dist2) as soon as the rows' entries hold them: the
/// exchange's peak is then the lists or the entries, not both. The same result bit for bit.
SymmetricEdges symmetrize(KnnLists&& knn, MPI_Comm comm, const std::vector<double>* directed = nullptr);

/// The adaptive-neighbours weights (Nie, Wang, Jordan, Huang 2016, "The constrained
/// Laplacian rank algorithm", the closed-form initial graph; soge-liu2017 §5.2 builds its L
/// with it). `lists` must hold k+1 neighbours per row (knn_search(X, k+1)); for row i with
/// sorted squared distances d_1 ≤ … ≤ d_{k+1}:
///   s_ij = (d_{k+1} − d_j) / (k·d_{k+1} − Σ_{h≤k} d_h)  for the k nearest j,
/// computed with the denominator as Σ_{h≤k} (d_{k+1} − d_h) (the same value, no cancellation).
/// The denominator is 0 only when d_1 = … = d_{k+1}; then s_ij = 1/k (the limit of the
/// formula as the distances become equal). Each row sums to 1 up to rounding, s_ij ≥ 0.
/// Returns n_local·k weights in the layout of the first k entries of each row. Local.
/// \throws ssdr::Error when k < 1 or lists.k ≠ k + 1.
std::vector<double> adaptive_weights(const KnnLists& lists, int k);

/// What clr_refine found.
struct ClrResult {
  std::vector<double> s;  ///< the refined directed weights, the layout of `a` (rows sum to 1)
  int iterations = 0;     ///< outer iterations run (at most kClrMaxIterations)
  double lambda = 0;      ///< λ at the end
  int64_t components = 0; ///< connected components of (S + Sᵀ)/2 at the end
  bool converged = false; ///< components == the c asked for
  std::vector<double> eigenvalues;  ///< the c + 1 smallest eigenvalues of its L, ascending
};
/// CLR's outer iterations and initial λ, as the authors' code (CLR.m: NITER = 30, λ = 0.1).
inline constexpr int kClrMaxIterations = 30;
inline constexpr double kClrInitialLambda = 0.1;

/// The rank-constrained refinement of the constrained Laplacian rank method (Nie et al. 2016,
/// §"CLR with L2-norm", the authors' CLR.m with islocal = 1; soge-liu2017 §5.2). `a`: the
/// directed adaptive weights (adaptive_weights, n_local·k, the layout of `lists`), the
/// support of row i its k neighbours. Starting from F = the c eigenvectors of the smallest
/// eigenvalues of L_A (A = (a + aᵀ)/2), λ = kClrInitialLambda, each iteration sets
///   s_i = argmin_{s ≥ 0, 1ᵀs = 1} ‖s − (a_i − (λ/2) v_i)‖²,  v_ij = ‖f_i − f_j‖²
/// (Euclidean projection onto the simplex, exact by sorting), then F from L_S of
/// S = (s + sᵀ)/2 and: fewer than c connected components → λ ← 2λ; more → λ ← λ/2 and F
/// back to the previous one; exactly c → stop. CLR.m tests the sums of the c and c + 1
/// smallest eigenvalues against 10⁻¹⁰; we count the components of S's positive edges
/// exactly instead (the number of zero eigenvalues of L_S in exact arithmetic; no threshold,
/// the same count on any rank count). L_S's null space is spanned by the components'
/// indicator vectors, so those columns of F are set exactly; the other eigenpairs come from
/// SLEPc Krylov–Schur with the indicators as deflation space (options prefix "clr_",
/// residual ≤ 10⁻¹⁰·‖L‖; a one-vector Krylov method would find a multiple zero eigenvalue's
/// copies only through rounding). The rows of F stay distributed; only those at the
/// neighbours of this rank's rows are fetched. `c` must be in [1, n).
/// Collective over comm. \throws ssdr::Error (collectively) when c is out of range or the
/// eigen-solve converges fewer than c + 1 pairs.
ClrResult clr_refine(const KnnLists& lists, const std::vector<double>& a, int c, MPI_Comm comm);

/// Writes the kNN lists of a graph's samples to the HDF5 file `path`: /knn/index (n × k
/// int64, 0-based global indices of the graph samples, nearest first) and /knn/dist2 (n × k
/// float64, their squared Euclidean distances). The lists determine the graph: any weight,
/// σ rule and k' <= k rebuild its matrix bit for bit (build_knn_graph). Rows are distributed
/// as `lists`. Collective over comm; atomic and checked as io::write_hdf5_rows.
/// \throws ssdr::Error (collectively) naming `path`.
/// `provenance` (JSON text, the same on every rank; "" for none): what the lists belong to
/// (driver::graph_provenance), stored as the root attribute "provenance" for read_knn_provenance.
void write_knn_lists(const std::string& path, const KnnLists& lists, MPI_Comm comm,
                     const std::string& provenance = "");

/// The provenance write_knn_lists stored in `path` (JSON text), "" for a file without one
/// (lists computed elsewhere). Collective over comm (rank 0 reads, then broadcasts).
/// \throws ssdr::Error (collectively) naming `path` when it is not an HDF5 file.
std::string read_knn_provenance(const std::string& path, MPI_Comm comm);

/// Recomputes the squared distances of a sample of the lists' edges from X (the rows the
/// lists index: n_global × d', X's layout = the lists' layout) and refuses a disagreement
/// beyond rounding. The sample: the rows whose global index g has split_key(0x6b6e6e, g) in
/// the first 1/stride of its range (about 32 rows, whatever the partition) and their first
/// 16 entries; their neighbours' rows are fetched by one allreduce of at most 512·d' values
/// (never anything of size n). `single` (a file without provenance, possibly float32 lists,
/// FAISS or cuVS): the single-precision tolerance. Collective over X.comm.
/// \throws ssdr::Error (collectively) naming `path`, the row, the entry and both distances.
void check_list_distances(const KnnLists& lists, const RowsView& X, bool single, const std::string& path);

/// Reads rows [row_start, row_start + n_local) of the lists write_knn_lists writes (or that a
/// user computed elsewhere: FAISS, cuVS, PyNNDescent) for a graph of n_global samples, and
/// checks them: n_global rows, 1 <= k < n_global, and per row k distinct neighbours other
/// than itself in [0, n_global), nearest first, at finite squared distances >= 0.
/// Collective over comm.
/// \throws ssdr::Error (collectively) naming the file, and the row and entry at fault.
KnnLists read_knn_lists(const std::string& path, int64_t n_global, int64_t row_start, int64_t n_local,
                        MPI_Comm comm);

/// The first k entries of each row of `lists` (k ≤ lists.k). Local.
KnnLists truncate(const KnnLists& lists, int k);

/// Builds the weighted graph from X: knn_lists (k neighbours; k+1 for the adaptive weights;
/// the recall of approximate lists estimated as Graph::knn_recall),
/// symmetrize, weights, exact MPIAIJ preallocation. X (n×d, rows distributed, any layout):
/// its rows are the graph's vertices (e.g. the transductive samples); A has X's row layout.
/// Heat weights: t = σ² from options.sigma if > 0, else by options.sigma_rule (d̄ = 0, all
/// edges joining duplicates: t = 1). Collective over X.comm.
/// `lists` (optional): X's neighbour lists already found by options.knn_method, with at least
/// the k (adaptive: k + 1) neighbours the graph reads; their first entries are used (a sweep
/// searches once per k and backend). For the exact backend the first k of a longer list are
/// the k-search's lists bit for bit; an approximate backend's lists must be of exactly that k.
/// \throws ssdr::Error (collectively) for k < 1, k ≥ n (adaptive: k + 1 ≥ n), s ∉ (0,1), σ < 0.
Graph build_knn_graph(const RowsView& X, const GraphOptions& options, const KnnLists* lists = nullptr);

}  // namespace ssdr::graph
