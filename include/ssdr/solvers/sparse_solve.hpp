#pragma once
/// \file sparse_solve.hpp
/// Many right-hand sides against one sparse matrix through one PETSc KSP (TCA's
/// X(I+αL)⁻¹Xᵀ, SOGE's Q Xᵀ, SL-LDA's weighted least squares, ...).
#include <petscmat.h>

#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::solvers {

/// A sparse SPD solve through PETSc KSP: options prefix, default type and tolerance.
struct SparseSolveOptions {
  std::string prefix;             ///< KSP options prefix, e.g. "tca_" → -tca_ksp_type
  const char* ksp_type = "cg";    ///< default KSP type (CG for SPD matrices; "gmres" otherwise)
  double rtol = 1e-12;
};

/// The solutions and the solver's record.
struct SparseSolveResult {
  DistMatrix Z;                   ///< n×r solutions, M's row layout
  std::vector<int> iterations;    ///< per right-hand side
};

/// Solves M z_j = r_j for every column j of R (n×r, rows distributed as M's rows) with one
/// KSP: operators set once, so the preconditioner is built once and reused for every
/// column; KSPSetFromOptions last (prefix). Collective over M's communicator.
/// \throws ssdr::Error (collectively) when R's layout differs from M's or a solve diverges
/// (naming the prefix).
SparseSolveResult solve_columns(Mat M, const DistMatrix& R, const SparseSolveOptions& options);

}  // namespace ssdr::solvers
