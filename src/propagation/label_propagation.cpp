#include "ssdr/propagation/label_propagation.hpp"

#include <petscksp.h>

#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/graph/laplacian.hpp"

namespace ssdr::propagation {

PropagationResult propagate(Mat A, const std::vector<int>& labels, int classes,
                            const PropagationOptions& options) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  PetscInt n_local = 0;
  SSDR_PETSC(MatGetLocalSize(A, &n_local, nullptr));
  SSDR_REQUIRE(options.alpha_unlabeled >= 0 && options.alpha_unlabeled < 1,
               "--alpha-u must be in [0, 1), got " + std::to_string(options.alpha_unlabeled));
  SSDR_REQUIRE(options.alpha_labeled >= 0 && options.alpha_labeled < 1,
               "alpha on labeled samples must be in [0, 1)");
  bool ok = static_cast<PetscInt>(labels.size()) == n_local;
  for (int l : labels) ok = ok && l >= -1 && l < classes;
  SSDR_CHECK_COLLECTIVE(comm, ok, "propagate: labels must be one per local graph row, in -1..c-1");

  // M = I − diag(α_i / D_ii) A (rows with D_ii = 0 are identity rows).
  const std::vector<double> degree = graph::degrees(A);
  std::vector<double> scale(static_cast<size_t>(n_local));
  for (PetscInt i = 0; i < n_local; ++i) {
    const size_t li = static_cast<size_t>(i);
    const double alpha = labels[li] >= 0 ? options.alpha_labeled : options.alpha_unlabeled;
    scale[li] = degree[li] > 0 ? -alpha / degree[li] : 0.0;
  }
  Owned<Mat> M = graph::diagonal_plus_scaled(A, std::vector<double>(static_cast<size_t>(n_local), 1.0), scale);

  Owned<KSP> ksp;
  SSDR_PETSC(KSPCreate(comm, ksp.out()));
  SSDR_PETSC(KSPSetOperators(ksp, M, M));
  // Defaults that do not depend on the partition: GMRES with point Jacobi (PETSc's own
  // default, block Jacobi + ILU, changes with the rank count) to rtol 1e-12, so F has the
  // same value on any rank count up to rounding. -lp_ksp_type / -lp_pc_type override.
  SSDR_PETSC(KSPSetType(ksp, KSPGMRES));
  {
    PC pc = nullptr;
    SSDR_PETSC(KSPGetPC(ksp, &pc));
    SSDR_PETSC(PCSetType(pc, PCJACOBI));
  }
  SSDR_PETSC(KSPSetTolerances(ksp, options.rtol, 1e-300, PETSC_DEFAULT, 10000));
  SSDR_PETSC(KSPSetOptionsPrefix(ksp, options.prefix.c_str()));
  SSDR_PETSC_OPTIONS(KSPSetFromOptions(ksp));
  SSDR_PETSC(KSPSetUp(ksp));

  PropagationResult result;
  result.F = make_dist_local(comm, n_local, classes + 1);
  Owned<Vec> rhs, x;
  SSDR_PETSC(MatCreateVecs(M, x.out(), rhs.out()));
  Progress progress("label propagation", classes + 1);
  for (int k = 0; k <= classes; ++k) {
    progress.update(k);
    PetscScalar* b = nullptr;
    SSDR_PETSC(VecGetArray(rhs, &b));
    for (PetscInt i = 0; i < n_local; ++i) {
      const int l = labels[static_cast<size_t>(i)];
      const double beta = 1.0 - (l >= 0 ? options.alpha_labeled : options.alpha_unlabeled);
      const int target = l >= 0 ? l : classes;  // unlabeled: the outlier class c+1
      b[i] = target == k ? beta : 0.0;
    }
    SSDR_PETSC(VecRestoreArray(rhs, &b));
    SSDR_PETSC(VecSet(x, 0.0));
    SSDR_PETSC(KSPSolve(ksp, rhs, x));
    KSPConvergedReason reason;
    SSDR_PETSC(KSPGetConvergedReason(ksp, &reason));
    SSDR_REQUIRE(reason > 0, "label propagation: KSP (options prefix -" + options.prefix +
                                 ") did not converge (reason " + std::to_string(static_cast<int>(reason)) +
                                 "); try -" + options.prefix + "ksp_type gmres -" + options.prefix +
                                 "pc_type jacobi or a smaller --alpha-u");
    PetscInt its = 0;
    SSDR_PETSC(KSPGetIterationNumber(ksp, &its));
    result.iterations.push_back(static_cast<int>(its));
    vec_to_column(x, result.F, k);
  }
  return result;
}

std::vector<int> predict(const DistMatrix& F, int classes) {
  std::vector<int> out(static_cast<size_t>(F.n_local));
  for (int64_t i = 0; i < F.n_local; ++i) {
    int best = 0;
    for (int k = 1; k < classes; ++k)
      if (F(i, k) > F(i, best)) best = k;
    out[static_cast<size_t>(i)] = best;
  }
  return out;
}

}  // namespace ssdr::propagation
