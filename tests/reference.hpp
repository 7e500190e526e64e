#pragma once
// Serial dense references (LAPACK) of the SODA stages, written from the paper's
// definitions (soda-nie2009), independent of the distributed implementation.
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::ref {

/// Brute-force symmetrized kNN heat-kernel graph, eq. (24) and (42): n×n dense A.
Dense knn_heat_graph(const Dense& X, int k, double s, double* sigma_out = nullptr);
/// Brute-force symmetrized kNN heat graph of tca-liu2008 eq. (4) with t = σ² = d̄, the mean
/// squared length of the undirected edges: A_ij = exp(−‖x_i−x_j‖²/t). n×n dense.
Dense knn_heat_graph_mean_width(const Dense& X, int k, double* t_out = nullptr);
/// Brute-force adaptive-neighbours graph (Nie et al. 2016, constructW_PKN): S (n×n, row i:
/// s_ij = (d_{k+1} − d_j)/(k·d_{k+1} − Σ_{h≤k} d_h) on the k nearest j, 1/k each when the
/// denominator is 0), returned as A = (S + Sᵀ)/2; S itself in *S_out.
Dense adaptive_graph(const Dense& X, int k, Dense* S_out = nullptr);
/// F = (I − I_α P)⁻¹ I_β Y, eq. (27), solved by eliminating the labeled rows (dense SPD solve).
Dense propagate(const Dense& A, const std::vector<int>& labels, int classes, double alpha_u);
/// Scatter matrices by their definitional sums, eq. (28)–(30).
void scatter(const Dense& X, const Dense& F, int classes, Dense& Sw, Dense& Sb, Dense& St);
/// Trace ratio by the algorithm of §2.3.1 (top-m eigenvectors of Sb − λSw, repeated).
Dense trace_ratio(const Dense& Sb, const Dense& Sw, int m, double* ratio = nullptr);
/// Trace ratio value tr(WᵀSbW)/tr(WᵀSwW).
double ratio(const Dense& Sb, const Dense& Sw, const Dense& W);
/// W Wᵀ (basis-independent comparison of subspaces).
Dense projector(const Dense& W);
/// W with every column divided by its Euclidean length (the unit-length convention of the
/// field's LDA code, methods::Normalization::unit).
Dense unit_columns(const Dense& W);
/// A with the rows i where keep[i] is true.
Dense rows(const Dense& X, const std::vector<char>& keep);
/// Distribute a replicated Dense over comm in the block layout.
DistMatrix distribute(const Dense& X, MPI_Comm comm);

}  // namespace ssdr::ref
