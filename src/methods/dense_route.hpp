#pragma once
/// \file dense_route.hpp
/// Private to src/methods (not installed): the choice between solving an n_t×n_t graph system
/// densely on every rank and by Krylov solves on the distributed graph, shared by the methods
/// whose α-dependent systems have that size (TCA/OTCA's smoothness term, SOGE's K₀).
#include <petscmat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::methods::dense {

/// `krylov`: solves on the distributed sparse graph; `dense`: one dense factorization of the
/// whole system on every rank; `automatic`: dense when n_t ≤ kDenseRouteMaxSamples.
enum class Route { automatic, dense, krylov };

/// The crossover of the automatic route: the largest n_t solved densely. Measured on this
/// machine (docs/fitting.md, "TCA and OTCA's smoothness term"): at n_t = 2000 the dense solve
/// takes about as long as the CG solves at the paper's α; below it the dense route is faster
/// at every α ≥ 1 and costs n_t² doubles per rank (32 MiB at 2000).
constexpr int64_t kDenseRouteMaxSamples = 2000;

/// The largest n_t the dense route accepts even when asked for (-<prefix>route dense): its
/// matrix takes n_t² doubles per rank (2 GiB at 16 384) and its factorization n_t³/3 flops.
constexpr int64_t kDenseRouteLimit = 16384;

/// The route of the option -<prefix>route (auto | dense | krylov; default auto), read with a
/// check of its value. Replicated. \throws ssdr::Error (replicated) on another value.
Route route_option(const std::string& prefix);

/// Whether `route` solves a system of n_t = n samples densely (dense, or automatic and
/// n ≤ kDenseRouteMaxSamples). `prefix` names the option in the message. Local.
/// \throws ssdr::Error (replicated) when dense is asked for beyond kDenseRouteLimit.
bool dense_route(Route route, int64_t n, const std::string& prefix);

/// The name of a route as the report writes it ("dense", "krylov", "auto"). Local.
const char* to_string(Route route);

/// The n×n graph A (a square PETSc matrix whose rows are laid out as `like`'s: row_start,
/// n_local) gathered densely on every rank: each rank's rows row-major, gathered, are A
/// row-major, i.e. Aᵀ column-major — A itself for a symmetric graph. Only copies: the same
/// bits on every rank and for every partition. n² doubles per rank. Collective over
/// like.comm. \throws ssdr::Error (collectively) when the layouts differ.
Dense gather_graph(Mat A, const DistMatrix& like, const char* who);

/// The column sums of the gathered graph (the degrees D_i = Σ_j A_ij of a symmetric one),
/// summed in index order. Local.
std::vector<double> column_sums(const Dense& M);

}  // namespace ssdr::methods::dense
