#include "ssdr/solvers/sparse_solve.hpp"

#include <petscksp.h>

#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::solvers {

SparseSolveResult solve_columns(Mat M, const DistMatrix& R, const SparseSolveOptions& options) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(M), &comm));
  PetscInt n_local = 0;
  SSDR_PETSC(MatGetLocalSize(M, &n_local, nullptr));
  SSDR_CHECK_COLLECTIVE(comm, n_local == R.n_local,
                        "solve_columns: right-hand sides have " + std::to_string(R.n_local) +
                            " local rows, the matrix " + std::to_string(n_local));
  Owned<KSP> ksp;
  SSDR_PETSC(KSPCreate(comm, ksp.out()));
  SSDR_PETSC(KSPSetOperators(ksp, M, M));
  SSDR_PETSC(KSPSetType(ksp, options.ksp_type));
  {
    // Point Jacobi: the preconditioner (and so the iterates) do not depend on the partition,
    // unlike PETSc's default block Jacobi + ILU. -<prefix>pc_type overrides.
    PC pc = nullptr;
    SSDR_PETSC(KSPGetPC(ksp, &pc));
    SSDR_PETSC(PCSetType(pc, PCJACOBI));
  }
  SSDR_PETSC(KSPSetTolerances(ksp, options.rtol, 1e-300, PETSC_DEFAULT, 100000));
  if (!options.prefix.empty()) SSDR_PETSC(KSPSetOptionsPrefix(ksp, options.prefix.c_str()));
  SSDR_PETSC_OPTIONS(KSPSetFromOptions(ksp));
  SSDR_PETSC(KSPSetUp(ksp));
  SparseSolveResult out;
  out.Z = R;
  Owned<Vec> b, x;
  SSDR_PETSC(MatCreateVecs(M, x.out(), b.out()));
  Progress progress("KSP -" + options.prefix + " solves", static_cast<long>(R.cols));
  for (int64_t j = 0; j < R.cols; ++j) {
    progress.update(static_cast<long>(j));
    PetscScalar* pb = nullptr;
    SSDR_PETSC(VecGetArray(b, &pb));
    for (int64_t i = 0; i < R.n_local; ++i) pb[i] = R(i, j);
    SSDR_PETSC(VecRestoreArray(b, &pb));
    SSDR_PETSC(VecSet(x, 0.0));
    SSDR_PETSC(KSPSolve(ksp, b, x));
    KSPConvergedReason reason;
    SSDR_PETSC(KSPGetConvergedReason(ksp, &reason));
    SSDR_REQUIRE(reason > 0, "KSP with options prefix -" + options.prefix + " did not converge (reason " +
                                 std::to_string(static_cast<int>(reason)) + ") on right-hand side " +
                                 std::to_string(j));
    PetscInt its = 0;
    SSDR_PETSC(KSPGetIterationNumber(ksp, &its));
    out.iterations.push_back(static_cast<int>(its));
    vec_to_column(x, out.Z, j);
  }
  return out;
}

}  // namespace ssdr::solvers
