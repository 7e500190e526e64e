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
/// kReplicatedEigenMax = 4096) every rank solves it with LAPACK (dsyevr for the nev pairs, or
/// dsyevd's whole decomposition when nev > d/4; a
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

/// The nev largest solutions of A x = λ B x for a low-rank A = F Fᵀ given by its factor F
/// (d×r, nev ≤ r ≤ d; B d×d symmetric positive definite; both replicated), as sym_eigen
/// returns them (xᵀBx = 1, sign fixed, largest first) for A. LDA's, SDA's and SL-LDA's
/// between-class scatter has rank at most c, and the eigenvalue problem of rank r is an
/// r-column one: B = LLᵀ, the thin SVD L⁻¹F = UΣVᵀ (dgesdd), λ_i = σ_i², x_i = L⁻ᵀu_i
/// (the eigenvectors of L⁻¹AL⁻ᵀ with nonzero eigenvalues, those sym_eigen's reduction
/// computes; O(d³/3 + d²r) flops instead of O(d³) for the reduction and its tridiagonal
/// eigen-solve). Taken when sym_eigen would solve replicated with LAPACK (no
/// -<prefix>eps_type, d ≤ kReplicatedEigenMax) and λ_nev > 10³·d·ε·λ₁ on every rank;
/// otherwise (an eigen-solver asked for, or λ_nev near the d × d solve's rounding level,
/// where the vectors are not determined by F) sym_eigen(A, &B, ...) solves it, with A the
/// caller's F Fᵀ when given (else formed). Collective over comm.
/// \throws ssdr::Error as sym_eigen (B not positive definite, shapes, nev ∉ [1, r]).
EigenPairs largest_low_rank_eigen(const Dense& F, const Dense& B, int64_t nev, const std::string& prefix,
                                  MPI_Comm comm, const Dense* A = nullptr);

}  // namespace ssdr::solvers
