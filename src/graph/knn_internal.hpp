#pragma once
// Private to src/graph and its tests: the exact kNN search with the precision of its
// candidate filter as a parameter, so tests can check that the single-precision filter gives
// the same lists as the double one.
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/graph/knn_lists.hpp"

namespace ssdr::graph {
struct ReconstructionWeights;  // ssdr/graph/lnp.hpp
}

namespace ssdr::graph::detail {

/// Exact squared distance Σ_t (x_t − y_t)² in a fixed order: eight partial sums, lane l
/// taking t ≡ l (mod 8) in increasing t, combined as ((s0+s4)+(s1+s5))+((s2+s6)+(s3+s7)).
/// The bit pattern both endpoints of an edge agree on, whichever backend or rank computes it
/// (it depends on the two rows only). Eight independent chains instead of one: the sum in
/// index order was latency-bound (d dependent additions, about 1 µs at d = 784) and took a
/// fifth of the exact search at n = 20 000; the rounding error bound is the same kind,
/// (d/8 + 3)·u·Σ(x_t − y_t)² instead of d·u·Σ.
///
/// Compiled twice (AVX2 and the build's baseline, chosen at run time by the CPU): plain
/// subtractions, products and sums with no FMA in either clone, so both give the same bits;
/// AVX2 does four lanes per instruction instead of two. Local.
double exact_dist2(const double* x, const double* y, int64_t d);
/// The same on float rows, each difference taken in double: the bits of exact_dist2 on their
/// double copy (--precision single). Local.
double exact_dist2(const float* x, const float* y, int64_t d);

/// y_t = float(x_t − μ_t), t = 0..d−1: a row centered in double and rounded to float, as the
/// GEMM filters take it. Compiled twice like exact_dist2 (same bits in both clones). Local.
void center_to_float(const double* x, const double* mu, int64_t d, float* y);
/// The same for float rows: y_t = float(double(x_t) − μ_t), the bits of their double copy's.
/// Local.
void center_to_float(const float* x, const double* mu, int64_t d, float* y);

/// The error for a k outside [1, n): "--knn K must be ...".
inline std::string k_message(int k, int64_t n) {
  if (k < 1) return "--knn " + std::to_string(k) + " must be at least 1";
  return "--knn " + std::to_string(k) + " must be smaller than the number of graph samples (" +
         std::to_string(n) + ")";
}

/// knn_search with the GEMM candidate filter in `Real` (float: the default path; double:
/// the reference). The lists are the same for both (the filter's slack covers its rounding
/// and every candidate is re-ranked by its exact double distance). Float rows are searched in
/// place (their ring carries floats) with the lists of their double copy. Collective over X.comm.
template <class Real>
KnnLists exact_knn(const RowsView& X, int k);

/// A locality order of the n rows of xf (n×d, row-major, local): a permutation whose
/// consecutive runs of `leaf` positions (from position 0) are the leaves of a random-projection
/// tree (Dasgupta & Freund 2008), so rows in one run are often neighbours. Each node splits its
/// rows by their projection onto x_a − x_b (two of its rows, ties by row number) at a size
/// that is a multiple of `leaf`. The exact search visits its own block in this order, its
/// diagonal tiles (= leaves) first; the order changes the work, never the lists.
/// Deterministic for given rows (fixed seed). The arithmetic is in Real whatever the rows' type
/// S: locality_order<float, double>(float rows) gives the order of their double copy. Local;
/// O(n·d·log(n/leaf)) time, O(n + d) memory.
template <class S, class Real = S>
std::vector<int64_t> locality_order(const S* xf, int64_t n, int64_t d, int64_t leaf);

/// NN-descent's local-join dot products (nndescent.cpp's join_dots, which calls one of these):
/// G[a·nc + b] = rows[a]·rows[b] in float for every a < nn and b > a, b < nc; rows[q]
/// (q < nc) points to d floats, G is nn×nc row-major, its entries with b ≤ a are left
/// undefined. Each pair's sum has a fixed order that depends on d alone: eight lanes (lane l
/// takes t ≡ l (mod 8), t < d − d mod 8, by multiply-adds), combined as
/// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), then the tail t ≥ d − d mod 8 added in increasing t.
/// join_dots_2x4 computes 2 × 4 tiles of pairs (target_clones: an "fma" clone on CPUs with
/// FMA, else the baseline, which may differ in the last bits); join_dots_4x4 computes 4 × 4
/// tiles with AVX-512 and gives the bits of the "fma" clone. Call join_dots_4x4 only when
/// join_dots_has_4x4() (AVX-512F, AVX-512VL and FMA; else it faults). Local.
void join_dots_2x4(const float* const* rows, int64_t nn, int64_t nc, int64_t d, float* G);
void join_dots_4x4(const float* const* rows, int64_t nn, int64_t nc, int64_t d, float* G);
bool join_dots_has_4x4();
/// δ with |d̃ − ‖x − y‖²| ≤ δ for NN-descent's float distance d̃ = max(0, fl(ñ_a + ñ_b −
/// 2 fl(ã·b̃))) of d-dimensional rows centered in float (ã = fl(x − μ), ñ = fl(‖ã‖²) summed in
/// double, the dot product in any order), given only the row's own stored norm ñ_a and d̃ (the
/// other row's norm is bounded through d̃). The analysis is beside the definition
/// (nndescent.cpp, Build::exact_lists). Local.
double float_distance_bound(float own_norm, float dist, int64_t d);

/// How many other ranks' float rows the last nndescent_search on this rank read in place (its
/// shared-memory window; 0: none, every remote row fetched). For tests. Local.
int nndescent_last_shared_ranks();
/// How the last nndescent_search on this rank held its own rows for the joins: 0 converted
/// as gathered (through the row cache), 1 a float copy, 2 the float rows in place. For
/// tests. Local.
int nndescent_last_rows();
/// Whether the last nndescent_search centered its rows (false: μ = 0, the sample mean was
/// negligible). For tests. Local.
bool nndescent_last_centered();

/// Filter slack coefficient c of the exact search: |approx − exact| ≤ c·(‖x−μ‖² + ‖y−μ‖²)
/// (plus an absolute underflow term), for the GEMM in `Real` over d features.
template <class Real>
double filter_slack(int64_t d);

/// The rows `wanted` (sorted, unique global indices, none of them local) of X, fetched from
/// their owners: row-major |wanted|×X.cols (lnp.cpp). Collective over X.comm.
std::vector<double> fetch_rows(const DistMatrix& X, const std::vector<int64_t>& wanted);

/// graph::reconstruction_weights (sllda-zhao2014 eq. (2)) with the local rows taken
/// `chunk_rows` (≥ 1, any value on each rank) at a time: each chunk's remote neighbour rows
/// are fetched by fetch_rows and freed after its weights. The weights are the same bits for
/// any chunk_rows and rank count (a row's weights depend on its neighbours' rows only).
/// Collective over X.comm (as many fetches on every rank: the most chunks of any rank).
/// \throws ssdr::Error (collectively) as reconstruction_weights, or when chunk_rows < 1.
ReconstructionWeights reconstruction_weights(const DistMatrix& X, const KnnLists& knn, double regularization,
                                             int64_t chunk_rows);

/// Local rows per chunk of reconstruction_weights within `memory_mib` MiB for the fetched
/// rows and the replies: ⌊memory_mib·2²⁰ / (ranks·k·d·8)⌋, at least 1 (a chunk of c rows
/// fetches at most c·k rows of d doubles and answers at most c·k requests of each other
/// rank), and at most as many rows as keep (ranks − 1)·c·k·d within half of MPI's int
/// counts (the whole bound when memory_mib is infinite). Local; the same on every rank.
int64_t reconstruction_chunk_rows(int k, int64_t d, int ranks, double memory_mib);

}  // namespace ssdr::graph::detail
