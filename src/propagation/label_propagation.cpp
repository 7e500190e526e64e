#include "ssdr/propagation/label_propagation.hpp"

#include <petscksp.h>

#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"

namespace ssdr::propagation {

PropagationResult propagate(Mat A, const std::vector<int>& labels, int classes,
                            const PropagationOptions& options) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  PetscInt n_local = 0, n_global = 0, start = 0, end = 0;
  SSDR_PETSC(MatGetLocalSize(A, &n_local, nullptr));
  SSDR_PETSC(MatGetSize(A, &n_global, nullptr));
  SSDR_PETSC(MatGetOwnershipRange(A, &start, &end));
  SSDR_REQUIRE(options.alpha_unlabeled >= 0 && options.alpha_unlabeled < 1,
               "--alpha-u must be in [0, 1), got " + std::to_string(options.alpha_unlabeled));
  SSDR_REQUIRE(options.alpha_labeled >= 0 && options.alpha_labeled < 1,
               "alpha on labeled samples must be in [0, 1)");
  bool ok = static_cast<PetscInt>(labels.size()) == n_local;
  for (int l : labels) ok = ok && l >= -1 && l < classes;
  SSDR_CHECK_COLLECTIVE(comm, ok, "propagate: labels must be one per local graph row, in -1..c-1");

  // Degrees D_ii = Σ_j A_ij.
  Owned<Vec> ones, degree;
  SSDR_PETSC(MatCreateVecs(A, ones.out(), degree.out()));
  SSDR_PETSC(VecSet(ones, 1.0));
  SSDR_PETSC(MatMult(A, ones, degree));

  // M = I − diag(α_i / D_ii) A. Rows with D_ii = 0 are the identity row.
  Owned<Vec> scale;
  SSDR_PETSC(VecDuplicate(degree, scale.out()));
  {
    const PetscScalar* d = nullptr;
    PetscScalar* s = nullptr;
    SSDR_PETSC(VecGetArrayRead(degree, &d));
    SSDR_PETSC(VecGetArray(scale, &s));
    for (PetscInt i = 0; i < n_local; ++i) {
      const double alpha = labels[static_cast<size_t>(i)] >= 0 ? options.alpha_labeled : options.alpha_unlabeled;
      s[i] = d[i] > 0 ? -alpha / d[i] : 0.0;
    }
    SSDR_PETSC(VecRestoreArray(scale, &s));
    SSDR_PETSC(VecRestoreArrayRead(degree, &d));
  }
  // M = I − diag(s) A assembled row by row with the diagonal added (A's diagonal is empty,
  // and MatShift cannot insert new diagonal entries into an assembled parallel AIJ).
  Owned<Mat> M;
  {
    PetscInt cstart = 0, cend = 0;
    SSDR_PETSC(MatGetOwnershipRangeColumn(A, &cstart, &cend));
    const PetscScalar* s = nullptr;
    SSDR_PETSC(VecGetArrayRead(scale, &s));
    std::vector<PetscInt> d_nnz(static_cast<size_t>(n_local)), o_nnz(static_cast<size_t>(n_local));
    std::vector<std::vector<PetscInt>> cols(static_cast<size_t>(n_local));
    std::vector<std::vector<PetscScalar>> vals(static_cast<size_t>(n_local));
    for (PetscInt i = 0; i < n_local; ++i) {
      PetscInt nz = 0;
      const PetscInt* c = nullptr;
      const PetscScalar* v = nullptr;
      SSDR_PETSC(MatGetRow(A, start + i, &nz, &c, &v));
      auto& rc = cols[static_cast<size_t>(i)];
      auto& rv = vals[static_cast<size_t>(i)];
      bool diag = false;
      for (PetscInt t = 0; t < nz; ++t) {
        rc.push_back(c[t]);
        rv.push_back((c[t] == start + i ? 1.0 : 0.0) + s[i] * v[t]);
        diag = diag || c[t] == start + i;
      }
      SSDR_PETSC(MatRestoreRow(A, start + i, &nz, &c, &v));
      if (!diag) {
        rc.push_back(start + i);
        rv.push_back(1.0);
      }
      for (PetscInt col : rc) ++((col >= cstart && col < cend) ? d_nnz : o_nnz)[static_cast<size_t>(i)];
    }
    SSDR_PETSC(VecRestoreArrayRead(scale, &s));
    SSDR_PETSC(MatCreateAIJ(comm, n_local, n_local, n_global, n_global, 0, d_nnz.data(), 0, o_nnz.data(), M.out()));
    for (PetscInt i = 0; i < n_local; ++i) {
      const PetscInt row = start + i;
      SSDR_PETSC(MatSetValues(M, 1, &row, static_cast<PetscInt>(cols[static_cast<size_t>(i)].size()),
                              cols[static_cast<size_t>(i)].data(), vals[static_cast<size_t>(i)].data(), INSERT_VALUES));
    }
    SSDR_PETSC(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
    SSDR_PETSC(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
  }

  Owned<KSP> ksp;
  SSDR_PETSC(KSPCreate(comm, ksp.out()));
  SSDR_PETSC(KSPSetOperators(ksp, M, M));
  SSDR_PETSC(KSPSetType(ksp, KSPGMRES));
  SSDR_PETSC(KSPSetTolerances(ksp, options.rtol, 1e-50, PETSC_DEFAULT, 10000));
  SSDR_PETSC(KSPSetOptionsPrefix(ksp, options.prefix.c_str()));
  SSDR_PETSC(KSPSetFromOptions(ksp));
  SSDR_PETSC(KSPSetUp(ksp));

  PropagationResult result;
  result.F = make_dist_local(comm, n_local, classes + 1);
  Owned<Vec> rhs, x;
  SSDR_PETSC(MatCreateVecs(M, x.out(), rhs.out()));
  for (int k = 0; k <= classes; ++k) {
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
