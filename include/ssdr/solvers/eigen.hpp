#pragma once
/// \file eigen.hpp
/// Symmetric (generalized) eigenproblems of small replicated d×d matrices through SLEPc.
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"

namespace ssdr::solvers {

/// Which end of the spectrum an eigensolver returns.
enum class Which { largest, smallest };

/// Eigenpairs, values ordered by `which` (largest first or smallest first); vectors d×nev.
struct EigenPairs {
  std::vector<double> values;
  Dense vectors;
};

/// Solves A x = λ x (B == nullptr, EPS_HEP) or A x = λ B x (B SPD, EPS_GHEP) for `nev`
/// eigenpairs at the `which` end (nev == d: all of them). A and B are replicated symmetric
/// d×d (identical on every rank of comm). By default (no -<prefix>eps_type given, d ≤
/// kReplicatedEigenMax = 4096) every rank solves it with LAPACK (dsyevr for the nev pairs; a
/// GHEP first reduced by B = LLᵀ to L⁻¹AL⁻ᵀ): no communication, the same bits on any rank
/// count. Otherwise the problem goes to SLEPc on `comm` with options prefix `prefix` (e.g.
/// "tr_" → -tr_eps_type krylovschur; SLEPc's default there is `scalapack`, dense, all
/// eigenpairs); EPSSetFromOptions is called last. Eigenvectors are returned
/// replicated, normalized (‖x‖₂ = 1, or xᵀBx = 1 for GHEP) with the sign fixed so the entry
/// of largest magnitude is positive, so results agree across rank counts. (Methods whose
/// paper fixes no scale then rescale the GHEP columns to unit length:
/// methods::Normalization.)
/// Collective over comm. \throws ssdr::Error when shapes differ, nev ∉ [1, d], or SLEPc
/// does not converge (naming the prefix).
EigenPairs sym_eigen(const Dense& A, const Dense* B, int64_t nev, Which which,
                     const std::string& prefix, MPI_Comm comm);

}  // namespace ssdr::solvers
