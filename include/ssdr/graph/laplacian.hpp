#pragma once
/// \file laplacian.hpp
/// Sparse operators built from a graph: degrees, Laplacians and every matrix of the form
/// diag(a) + diag(s)·A that label propagation (I − I_α D⁻¹A), TCA (I + αL) and SOGE
/// (L + U + αI) need.
#include <petscmat.h>

#include <vector>

#include "ssdr/core/petsc.hpp"

namespace ssdr::graph {

/// Degrees D_ii = Σ_j A_ij of the local rows. Collective over A's communicator.
std::vector<double> degrees(Mat A);

/// M = diag(a) + diag(s)·A for the local rows (a, s: one entry per local row of A), with
/// the diagonal stored even where A has none (A's off-diagonal pattern plus the diagonal,
/// exact preallocation). Collective. \throws ssdr::Error when a or s has the wrong length.
/// Examples: Laplacian L = D − A is a = D, s = −1; I + αL is a = 1 + αD, s = −α.
Owned<Mat> diagonal_plus_scaled(Mat A, const std::vector<double>& a, const std::vector<double>& s);

/// The graph Laplacian L = D − A. Collective.
Owned<Mat> laplacian(Mat A);

}  // namespace ssdr::graph
