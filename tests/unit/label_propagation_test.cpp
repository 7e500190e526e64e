// Label propagation's solvers (soda-nie2009 eq. (25)–(27)) against each other, a serial dense
// reference (reference.cpp: Cholesky of the unlabeled block) and across rank counts.
//
// Error analysis behind the tolerances. On the free rows f the system is S x = b with
// S = diag(D/α) − A_ff; its Jacobi-scaled form T = D_S⁻¹S = I − N has ‖N‖_∞ ≤ α (row i of N
// sums to (D_ii − A_ii)/(D_ii/α − A_ii) ≤ α), so ‖T⁻¹‖_∞ ≤ 1/(1 − α) and ‖T‖_∞ ≤ 1 + α:
// κ_∞(T) ≤ (1 + α)/(1 − α) = 199 at α = 0.99. Every solver here stops a column when its
// preconditioned residual z = D_S⁻¹(b − S x̃) has ‖z‖₂ ≤ rtol·‖z⁽⁰⁾‖₂ with z⁽⁰⁾ = D_S⁻¹b = T x
// (GMRES on M = I − I_α D⁻¹A with left Jacobi has the same T on the free rows and identity
// rows elsewhere, so the same bounds hold). The error e = x̃ − x = T⁻¹z then satisfies
//   ‖e‖_∞ ≤ ‖z‖₂/(1 − α) ≤ rtol·‖z⁽⁰⁾‖₂/(1 − α) ≤ rtol·√n·‖z⁽⁰⁾‖_∞/(1 − α)
//        ≤ rtol·√n·(1 + α)/(1 − α)·‖x‖_∞,  and ‖x‖_∞ ≤ 1 (F is a probability).
// So one solution is within E = rtol·√n·κ of the exact one in max norm, two solutions within
// 2E (5e-9 for n = 150 at rtol 1e-12). The block CG solves the c class columns only and sets
// the outlier column to 1 − their sum on the free rows (exact: F·1 = 1 there, M·1 = β), so
// its outlier column is within c·E (the c errors add, plus c·ε of the sum): a block CG
// result and a per-column KSP result differ by at most 2E in the class columns and (c + 1)E
// in the outlier column, two block CG results by 2cE there. The dense reference (Cholesky, backward stable) adds
// ≈ n·ε·κ₂ of the unscaled D_uu − αA_uu, κ₂ ≤ κ·(d_max/d_min), which the tests evaluate
// from the graph's degrees. Iteration counts: the block CG in double and PETSc's KSPCG run the same
// recurrence with the same stopping test; only the order of the reductions differs, so a
// column stops at the same iteration or, when ‖z‖ lands within rounding of the threshold, one
// later or earlier (±1). The mixed-precision block CG (the default) stops on the same test
// applied to the true residual b − S x̃ formed in double after each refinement step, so E holds
// for it as well. That residual's own rounding is ≤ (k_i + 2)·u·((D_S⁻¹|b|)_i + (1 + α)‖x‖_∞)
// per scaled row (k_i ≤ 30 entries, u = ε/2), at most 32·u·(‖z⁽⁰⁾‖₂ + 2√n) ≈ 3·10⁻¹³ in 2-norm
// for n ≤ 1 797, below rtol·‖z⁽⁰⁾‖₂ wherever ‖z⁽⁰⁾‖₂ ≥ 1 (every class here has unit-valued
// labeled rows beside free rows); where it is not, a step in double that cannot lower it stops
// on the double CG's own recursive test, as the block CG in double does. Its iteration counts
// are sums over restarted single-precision solves and are not compared.
#include <gtest/gtest.h>
#include <petscksp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <string>

#include "propagation/block_product.hpp"
#include "reference.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "ssdr/graph/locality.hpp"
#include "ssdr/propagation/label_propagation.hpp"
#include "support.hpp"

using namespace ssdr;

namespace {

constexpr double kAlpha = 0.99;
constexpr double kRtol = 1e-12;

/// E = rtol·√n·(1 + α)/(1 − α): the max-norm error of one solution (see the file comment).
double solution_bound(double rtol, int64_t n, double alpha) {
  return rtol * std::sqrt(static_cast<double>(n)) * (1 + alpha) / (1 - alpha);
}

/// max |F − G| over the class columns k < c (first) and over the outlier column c (second).
std::pair<double, double> column_diffs(const Dense& F, const Dense& G, int classes) {
  EXPECT_EQ(F.rows, G.rows);
  EXPECT_EQ(F.cols, G.cols);
  std::pair<double, double> d{0.0, 0.0};
  for (int64_t i = 0; i < std::min(F.rows, G.rows); ++i)
    for (int64_t k = 0; k < std::min(F.cols, G.cols); ++k) {
      double& w = k < classes ? d.first : d.second;
      w = std::max(w, std::abs(F(i, k) - G(i, k)));
    }
  return d;
}

/// The dense reference's rounding: n·ε·κ·(d_max/d_min) of the n_u×n_u Cholesky solve.
double dense_bound(const Dense& A, double alpha) {
  double dmin = INFINITY, dmax = 0;
  for (int64_t i = 0; i < A.rows; ++i) {
    double d = 0;
    for (int64_t j = 0; j < A.cols; ++j) d += A(i, j);
    if (d > 0) dmin = std::min(dmin, d);
    dmax = std::max(dmax, d);
  }
  return 10.0 * static_cast<double>(A.rows) * 1.1e-16 * (1 + alpha) / (1 - alpha) * (dmax / dmin);
}

/// A replicated dense n×n matrix as an MPIAIJ on comm (block rows, its non-zeros only; no
/// symmetry flag, so propagate checks it itself). Collective over comm.
Owned<Mat> to_aij(const Dense& A, MPI_Comm comm) {
  DistMatrix rows = ref::distribute(A, comm);  // only for the layout
  Owned<Mat> M;
  MatCreateAIJ(comm, static_cast<PetscInt>(rows.n_local), static_cast<PetscInt>(rows.n_local), A.rows, A.rows,
               static_cast<PetscInt>(A.rows), nullptr, static_cast<PetscInt>(A.rows), nullptr, M.out());
  for (int64_t i = rows.row_start; i < rows.row_start + rows.n_local; ++i)
    for (int64_t j = 0; j < A.cols; ++j)
      if (A(i, j) != 0) MatSetValue(M, static_cast<PetscInt>(i), static_cast<PetscInt>(j), A(i, j), INSERT_VALUES);
  MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY);
  MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY);
  return M;
}

/// The labels of A's local rows.
std::vector<int> local_labels(Mat A, const std::vector<int>& all) {
  PetscInt s = 0, e = 0;
  MatGetOwnershipRange(A, &s, &e);
  return std::vector<int>(all.begin() + s, all.begin() + e);
}

/// propagate with `-lpt_<option> value` pairs set for this call only (prefix lpt_).
propagation::PropagationResult run(Mat A, const std::vector<int>& labels, int classes,
                                   propagation::PropagationOptions po,
                                   const std::vector<std::pair<std::string, std::string>>& opts = {}) {
  po.prefix = "lpt_";
  for (const auto& o : opts) PetscOptionsSetValue(nullptr, ("-lpt_" + o.first).c_str(), o.second.c_str());
  struct Clear {
    const std::vector<std::pair<std::string, std::string>>& o;
    ~Clear() {
      for (const auto& x : o) PetscOptionsClearValue(nullptr, ("-lpt_" + x.first).c_str());
    }
  } clear{opts};
  return propagation::propagate(A, local_labels(A, labels), classes, po);
}

propagation::PropagationOptions defaults() {
  propagation::PropagationOptions po;
  po.alpha_unlabeled = kAlpha;
  po.rtol = kRtol;
  return po;
}

/// Two block-CG solutions of one problem: each within E of the exact one, so within 2E in
/// the class columns and 2cE in the outlier column (file comment); with `same_iterations`
/// (the block CG in double) the same iteration counts (±1). Collective.
void expect_block_cg_agree(const propagation::PropagationResult& a, const propagation::PropagationResult& b,
                           int classes, double E, bool same_iterations, const std::string& what) {
  const auto [classes_diff, outlier_diff] = column_diffs(allgather(a.F), allgather(b.F), classes);
  EXPECT_LT(classes_diff, 2 * E) << what;
  EXPECT_LT(outlier_diff, 2 * classes * E) << what;
  ASSERT_EQ(a.iterations.size(), b.iterations.size()) << what;
  if (same_iterations)
    for (size_t k = 0; k < a.iterations.size(); ++k) EXPECT_NEAR(a.iterations[k], b.iterations[k], 1) << what << " " << k;
}

/// The stored entries of each of A's local rows. Collective (MatGetRow is not, but A's
/// callers here are).
std::vector<PetscInt> local_row_entries(Mat A) {
  PetscInt row_start = 0, row_end = 0;
  MatGetOwnershipRange(A, &row_start, &row_end);
  std::vector<PetscInt> out;
  for (PetscInt r = row_start; r < row_end; ++r) {
    PetscInt nz = 0;
    MatGetRow(A, r, &nz, nullptr, nullptr);
    out.push_back(nz);
    MatRestoreRow(A, r, &nz, nullptr, nullptr);
  }
  return out;
}

}  // namespace

TEST(LabelPropagation, BlockCgAgreesWithGmresWithPetscCgAndWithTheDenseReference) {
  for (const char* name : {"iris.csv", "wine.csv"}) {
    test::Problem pr = test::load_problem(name, 3, true);
    const int64_t n = pr.X.rows;
    DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
    auto g = graph::build_knn_graph(X, graph::GraphOptions{});
    const auto cg = run(g.A, pr.semi, pr.classes, defaults());
    const auto cg_double = run(g.A, pr.semi, pr.classes, defaults(), {{"mixed_precision", "false"}});
    // Mixed precision with the block CG as its inner solve instead of Chebyshev's.
    const auto cg_inner = run(g.A, pr.semi, pr.classes, defaults(), {{"mixed_inner", "cg"}});
    const auto gmres = run(g.A, pr.semi, pr.classes, defaults(), {{"ksp_type", "gmres"}});
    propagation::PropagationOptions per_column = defaults();
    per_column.block = false;
    const auto petsc_cg = run(g.A, pr.semi, pr.classes, per_column);
    // The paths are the ones asked for: a comparison of GMRES with itself proves nothing.
    EXPECT_EQ(cg.solver, "block-cg") << name;
    EXPECT_EQ(cg_double.solver, "block-cg") << name;
    EXPECT_EQ(gmres.solver, "gmres") << name;
    EXPECT_EQ(petsc_cg.solver, "cg-symmetric") << name;
    ASSERT_EQ(cg.iterations.size(), static_cast<size_t>(pr.classes + 1));

    const double E = solution_bound(kRtol, n, kAlpha);
    const int c = pr.classes;
    const Dense F = allgather(cg.F);
    for (const auto* other : {&gmres, &petsc_cg}) {
      const auto [classes_diff, outlier_diff] = column_diffs(F, allgather(other->F), c);
      EXPECT_LT(classes_diff, 2 * E) << name << " against " << other->solver;
      EXPECT_LT(outlier_diff, (c + 1) * E) << name << " against " << other->solver;
      const auto [classes_double, outlier_double] = column_diffs(allgather(cg_double.F), allgather(other->F), c);
      EXPECT_LT(classes_double, 2 * E) << name << " (double) against " << other->solver;
      EXPECT_LT(outlier_double, (c + 1) * E) << name << " (double) against " << other->solver;
      const auto [classes_cg, outlier_cg] = column_diffs(allgather(cg_inner.F), allgather(other->F), c);
      EXPECT_LT(classes_cg, 2 * E) << name << " (inner CG) against " << other->solver;
      EXPECT_LT(outlier_cg, (c + 1) * E) << name << " (inner CG) against " << other->solver;
    }
    // In double the class columns stop as PETSc's CG does (±1); the outlier column, derived
    // from them, reports the slowest one's count (in both precisions).
    for (int k = 0; k < c; ++k) {
      EXPECT_NEAR(cg_double.iterations[static_cast<size_t>(k)], petsc_cg.iterations[static_cast<size_t>(k)], 1)
          << name << " column " << k;
      EXPECT_GT(cg.iterations[static_cast<size_t>(k)], 0) << name << " column " << k;
    }
    for (const auto* r : {&cg, &cg_double, &cg_inner})
      EXPECT_EQ(r->iterations.back(), *std::max_element(r->iterations.begin(), r->iterations.end() - 1)) << name;
    // -lpt_mixed_inner cg took effect: the CG's counts are not Chebyshev's.
    EXPECT_NE(cg_inner.iterations, cg.iterations) << name;
    const Dense A = ref::knn_heat_graph(pr.X, 8, 1e-3 / 8);
    const Dense Fr = ref::propagate(A, pr.semi, pr.classes, kAlpha);
    const double dense = dense_bound(A, kAlpha);
    const auto [classes_ref, outlier_ref] = column_diffs(F, Fr, c);
    EXPECT_LT(classes_ref, E + dense) << name;
    EXPECT_LT(outlier_ref, c * E + dense) << name;
    // Labeled rows are known rows: exactly their label (α_l = 0, β = 1).
    for (size_t i = 0; i < pr.semi.size(); ++i)
      if (pr.semi[i] >= 0)
        for (int k = 0; k <= pr.classes; ++k)
          EXPECT_EQ(F(static_cast<int64_t>(i), k), k == pr.semi[i] ? 1.0 : 0.0) << name << " row " << i;
  }
}

TEST(LabelPropagation, BlockCgAtEveryKindOfWidthAgreesWithGmres) {
  // The block CG runs with the number of class columns c fixed at compile time (1..16, 20) or
  // at run time (others): c = 1 (one column, MAIJ of dof 1), 10 (compile time) and 17 (run
  // time), the labels of digits folded or spread to c classes. Bounds as in the file comment.
  test::Problem pr = test::load_problem("digits.csv", 3, true);
  const int64_t n = pr.X.rows;
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  const double E = solution_bound(kRtol, n, kAlpha);
  for (int c : {1, 10, 17}) {
    // The j-th labeled row of digit l gets class l + 10·(j mod 2) mod c: every class has one.
    std::vector<int> semi = pr.semi, seen(10, 0);
    for (int& l : semi)
      if (l >= 0) l = c == 1 ? 0 : (l + 10 * (seen[static_cast<size_t>(l)]++ % 2)) % c;
    const auto cg = run(g.A, semi, c, defaults());
    const auto gmres = run(g.A, semi, c, defaults(), {{"ksp_type", "gmres"}});
    EXPECT_EQ(cg.solver, "block-cg") << c;
    ASSERT_EQ(cg.iterations.size(), static_cast<size_t>(c + 1)) << c;
    const Dense F = allgather(cg.F);
    ASSERT_EQ(F.cols, c + 1);
    const auto [classes_diff, outlier_diff] = column_diffs(F, allgather(gmres.F), c);
    EXPECT_LT(classes_diff, 2 * E) << c;
    EXPECT_LT(outlier_diff, (c + 1) * E) << c;
    // Every class has labeled rows here: no column is solved at once.
    for (int k = 0; k < c; ++k) EXPECT_GT(cg.iterations[static_cast<size_t>(k)], 0) << c << " column " << k;
  }
}

TEST(BlockProduct, AgreesWithMaijMatMultAtEveryKindOfWidth) {
  // detail::BlockProduct is PETSc's MPIMAIJ MatMult with the off-diagonal block added on its
  // non-empty rows only. Rows without ghosts (every row on one rank) run PETSc's own kernel:
  // the same bits. Rows with ghosts add the off-diagonal sums from 0, as PETSc's fixed-width
  // MAIJ kernels do; its generic and width-1 kernels accumulate onto the diagonal's sum: a
  // different order. Both sums have non-negative terms (a ≥ 0, p > 0), so each is within
  // γ_{n_i} of the exact one, n_i the row's entries: |Δ| ≤ 2·n_i·ε·y (doubled again for γ's
  // first-order form). Widths with a compile-time kernel (1, 10) and one without (17); the
  // graph in file order (most rows have ghosts on several ranks) and renumbered (few do).
  test::Problem pr = test::load_problem("digits.csv", 3, true);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  const graph::Renumbering ren = graph::renumber_for_locality(g.A, "bpt_");
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (Mat A : {static_cast<Mat>(g.A), static_cast<Mat>(ren.B)}) {
    const std::vector<PetscInt> row_entries = local_row_entries(A);
    for (int m : {1, 10, 17}) {
      propagation::detail::BlockProduct product(A, m);
      Owned<Vec> p = product.block(), q = product.block();
      Owned<Mat> maij;
      MatCreateMAIJ(A, m, maij.out());
      Owned<Vec> x, y;
      MatCreateVecs(maij, x.out(), y.out());
      // Values that round differently in another order: 1/(1 + 0.37·global index).
      PetscInt start = 0, end = 0;
      VecGetOwnershipRange(p, &start, &end);
      PetscScalar* pa = nullptr;
      VecGetArray(p, &pa);
      for (PetscInt e = start; e < end; ++e) pa[e - start] = 1.0 / (1.0 + static_cast<double>(e) * 0.37);
      VecRestoreArray(p, &pa);
      VecCopy(p, x);
      MatMult(maij, x, y);
      VecSet(q, -1.0);  // every entry must be overwritten
      product.apply(p, q);
      const PetscScalar *qa = nullptr, *ya = nullptr;
      VecGetArrayRead(q, &qa);
      VecGetArrayRead(y, &ya);
      int same = 1, within = 1;
      for (PetscInt e = 0; e < end - start; ++e) {
        same = same && qa[e] == ya[e];
        const double n_i = static_cast<double>(row_entries[static_cast<size_t>(e / m)]);
        within = within && std::abs(qa[e] - ya[e]) <= 4 * n_i * std::numeric_limits<double>::epsilon() * ya[e];
      }
      VecRestoreArrayRead(y, &ya);
      VecRestoreArrayRead(q, &qa);
      MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, &within, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      EXPECT_EQ(within, 1) << "width " << m;
      if (size == 1 || m == 10) EXPECT_EQ(same, 1) << "width " << m;  // PETSc's order exactly
    }
  }
}

TEST(LabelPropagation, BlockCgGivesTheSameSoftLabelsOnAnyRankCount) {
  // digits (n = 1797, 10 classes): the graph has the same bits on every rank count, the
  // block CG's reductions are partition independent, only the products' rounding differs:
  // both solutions are within E of the exact one.
  test::Problem pr = test::load_problem("digits.csv", 5, true);
  const int64_t n = pr.X.rows;
  DistMatrix Xw = ref::distribute(pr.X, MPI_COMM_WORLD);
  DistMatrix Xs = ref::distribute(pr.X, MPI_COMM_SELF);
  auto gw = graph::build_knn_graph(Xw, graph::GraphOptions{});
  auto gs = graph::build_knn_graph(Xs, graph::GraphOptions{});
  const double E = solution_bound(kRtol, n, kAlpha);
  // Mixed precision with either inner solve (Chebyshev, the default; CG), and double.
  for (const char* inner : {"chebyshev", "cg", "double"}) {
    const std::string mixed = std::string(inner) == "double" ? "false" : "true";
    const std::vector<std::pair<std::string, std::string>> opts = {
        {"mixed_precision", mixed}, {"mixed_inner", std::string(inner) == "double" ? "cg" : inner}};
    const auto dist = run(gw.A, pr.semi, pr.classes, defaults(), opts);
    const auto serial = run(gs.A, pr.semi, pr.classes, defaults(), opts);
    EXPECT_EQ(dist.solver, "block-cg");
    EXPECT_EQ(serial.solver, "block-cg");
    expect_block_cg_agree(dist, serial, pr.classes, E, mixed == "false", std::string("inner ") + inner);
  }
}

TEST(LabelPropagation, TakingOverTheGraphGivesTheSameBitsAndDropsTheCallersReference) {
  // propagate(Owned<Mat>) releases the caller's reference once the block CG's RCM copy exists
  // (memory at scale): the same arithmetic on the same copy, so the same bits as propagate(Mat),
  // on every route (with and without the RCM copy, and the per-column KSP route).
  test::Problem pr = test::load_problem("digits.csv", 3, true);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  const std::vector<int> labels = local_labels(g.A, pr.semi);
  for (const std::string& route : {"rcm", "no-rcm", "gmres"}) {
    propagation::PropagationOptions po = defaults();
    po.reorder = route != "rcm" ? false : true;
    if (route == "gmres") PetscOptionsSetValue(nullptr, "-lp_ksp_type", "gmres");
    const auto kept = propagation::propagate(g.A, labels, pr.classes, po);
    PetscInt before = 0, after = 0;
    PetscObjectGetReference(reinterpret_cast<PetscObject>(g.A.get()), &before);
    Owned<Mat> mine = g.A;
    const auto taken = propagation::propagate(std::move(mine), labels, pr.classes, po);
    PetscObjectGetReference(reinterpret_cast<PetscObject>(g.A.get()), &after);
    if (route == "gmres") PetscOptionsClearValue(nullptr, "-lp_ksp_type");
    EXPECT_EQ(mine.get(), nullptr) << route;
    EXPECT_EQ(after, before) << route;  // the reference handed over is gone
    EXPECT_EQ(taken.solver, kept.solver) << route;
    EXPECT_EQ(taken.iterations, kept.iterations) << route;
    EXPECT_EQ(taken.F.v, kept.F.v) << route;
  }
}

TEST(LabelPropagation, NonSymmetricGraphIsSolvedByGmresOnTheOriginalSystem) {
  // Scaling row i of A by s_i leaves P = D⁻¹A, hence F, unchanged but makes A non-symmetric:
  // propagate must notice, take GMRES on M and still find the symmetric graph's F.
  test::Problem pr = test::load_problem("iris.csv", 3, false);
  const int64_t n = pr.X.rows;
  const Dense A = ref::knn_heat_graph(pr.X, 8, 1e-3 / 8);
  Dense B = A;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) B(i, j) *= 1.0 + 0.5 * static_cast<double>(i % 3);
  Owned<Mat> Bm = to_aij(B, MPI_COMM_WORLD);
  const auto r = run(Bm, pr.semi, pr.classes, defaults());
  EXPECT_EQ(r.solver, "gmres");
  const Dense Fr = ref::propagate(A, pr.semi, pr.classes, kAlpha);
  EXPECT_LT(test::max_abs_diff(allgather(r.F), Fr), solution_bound(kRtol, n, kAlpha) + dense_bound(A, kAlpha));
  // The symmetric original, without the builder's symmetry flag: MatIsSymmetric finds it.
  Owned<Mat> Am = to_aij(A, MPI_COMM_WORLD);
  EXPECT_EQ(run(Am, pr.semi, pr.classes, defaults()).solver, "block-cg");
}

TEST(LabelPropagation, FreeLabeledRowsAndIsolatedVerticesMatchGmres) {
  // α_l = 0.5: labeled rows are free rows too; vertex 0 loses its edges (D_00 = 0): its row
  // is the identity row of M, F_0 = β_0 Y_0 exactly, on both paths.
  test::Problem pr = test::load_problem("iris.csv", 3, false);
  const int64_t n = pr.X.rows;
  Dense A = ref::knn_heat_graph(pr.X, 8, 1e-3 / 8);
  for (int64_t j = 0; j < n; ++j) A(0, j) = A(j, 0) = 0.0;
  Owned<Mat> Am = to_aij(A, MPI_COMM_WORLD);
  propagation::PropagationOptions po = defaults();
  po.alpha_labeled = 0.5;
  const auto cg = run(Am, pr.semi, pr.classes, po);
  const auto gmres = run(Am, pr.semi, pr.classes, po, {{"ksp_type", "gmres"}});
  EXPECT_EQ(cg.solver, "block-cg");
  EXPECT_EQ(gmres.solver, "gmres");
  const Dense F = allgather(cg.F);
  const double E = solution_bound(kRtol, n, kAlpha);
  const auto [classes_diff, outlier_diff] = column_diffs(F, allgather(gmres.F), pr.classes);
  EXPECT_LT(classes_diff, 2 * E);
  EXPECT_LT(outlier_diff, (pr.classes + 1) * E);
  const double beta0 = 1.0 - (pr.semi[0] >= 0 ? po.alpha_labeled : kAlpha);
  const int y0 = pr.semi[0] >= 0 ? pr.semi[0] : pr.classes;
  for (int k = 0; k <= pr.classes; ++k) EXPECT_EQ(F(0, k), k == y0 ? beta0 : 0.0);
  // Rows with edges sum to 1 (M·1 = β = I_β Y·1): up to the tolerance for GMRES, to
  // rounding for the block CG, whose outlier value is fl(1 − s) with s the class columns'
  // sum in column order, which the test's sum repeats: |fl(s + fl(1 − s)) − 1| ≤ 2ε.
  double worst = 0, worst_gmres = 0;
  const Dense Fg = allgather(gmres.F);
  for (int64_t i = 1; i < n; ++i) {
    double s = 0, sg = 0;
    for (int k = 0; k <= pr.classes; ++k) {
      s += F(i, k);
      sg += Fg(i, k);
    }
    worst = std::max(worst, std::abs(s - 1.0));
    worst_gmres = std::max(worst_gmres, std::abs(sg - 1.0));
  }
  EXPECT_LE(worst, 2 * std::numeric_limits<double>::epsilon());
  EXPECT_LT(worst_gmres, (pr.classes + 1) * E);
}

TEST(LabelPropagation, BlockCgThatCannotConvergeThrowsOnEveryRank) {
  test::Problem pr = test::load_problem("iris.csv", 3, true);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  // Both inner solves: Chebyshev's steps are cut to the iterations left, then the double CG
  // raises; the float CG stops softly at max_it and the double CG raises.
  for (const char* inner : {"chebyshev", "cg"}) {
    try {
      run(g.A, pr.semi, pr.classes, defaults(), {{"ksp_max_it", "3"}, {"mixed_inner", inner}});
      ADD_FAILURE() << "no error with inner " << inner;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("-lpt_ksp_max_it 3"), std::string::npos) << inner << ": " << e.what();
    }
  }
}

TEST(LabelPropagation, ReorderedAndOriginalOrderAgree) {
  // The block CG runs on the RCM-renumbered graph by default; on A's own order it must give
  // the same soft labels (both within E of the exact ones) and, in double, iteration counts (±1).
  test::Problem pr = test::load_problem("wine.csv", 3, true);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  propagation::PropagationOptions plain = defaults();
  plain.reorder = false;
  const double E = solution_bound(kRtol, pr.X.rows, kAlpha);
  for (const char* mixed : {"true", "false"}) {
    const auto a = run(g.A, pr.semi, pr.classes, defaults(), {{"mixed_precision", mixed}});
    const auto b = run(g.A, pr.semi, pr.classes, plain, {{"mixed_precision", mixed}});
    expect_block_cg_agree(a, b, pr.classes, E, std::string(mixed) == "false", std::string("mixed ") + mixed);
  }
}

TEST(SingleBlockProduct, AgreesWithTheDoubleProductToSinglePrecisionRounding) {
  // detail::SingleBlockProduct multiplies by Â = W A, its values formed in double and
  // rounded to float (relative error ≤ u = ε_f/2, or an absolute FLT_MIN where a value leaves
  // float's normal range), and sums a row's n_i non-negative products in float (γ_{n_i+1} =
  // (n_i + 1)u to first order) from the same float-valued p; the double reference (BlockProduct
  // on Â's values: W A formed by MatDiagonalScale) rounds 10⁹ times less. So
  // |q_f − q_d| ≤ (n_i + 2)·u·q_d + n_i·FLT_MIN (p ≤ 1), the first term doubled for γ's
  // first-order form. W = D⁻¹ as the block CG uses (D_S⁻¹ there; digits' heat weights reach 10⁻¹²⁰,
  // which float cannot hold: the scaling is what makes this bound hold), and W = I on a graph
  // with weights in float's range (A's pattern, values 1/(1 + i + j)). Widths 1, 10 (compile
  // time) and 17 (run time); file order (ghosts everywhere) and renumbered.
  test::Problem pr = test::load_problem("digits.csv", 3, true);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  const graph::Renumbering ren = graph::renumber_for_locality(g.A, "bpt_");
  const double u = std::numeric_limits<float>::epsilon() / 2;
  const double tiny = std::numeric_limits<float>::min();
  for (Mat A0 : {static_cast<Mat>(g.A), static_cast<Mat>(ren.B)}) {
    for (bool scaled : {true, false}) {
      Owned<Mat> A;
      MatDuplicate(A0, MAT_COPY_VALUES, A.out());
      PetscInt row_start = 0, row_end = 0;
      MatGetOwnershipRange(A, &row_start, &row_end);
      std::vector<double> w;
      if (scaled) {
        for (double d : graph::degrees(A)) w.push_back(d > 0 ? 1.0 / d : 0.0);
      } else {
        for (PetscInt r = row_start; r < row_end; ++r) {
          PetscInt nz = 0;
          const PetscInt* cols = nullptr;
          MatGetRow(A0, r, &nz, &cols, nullptr);
          std::vector<PetscInt> c(cols, cols + nz);
          MatRestoreRow(A0, r, &nz, &cols, nullptr);
          for (PetscInt j : c) MatSetValue(A, r, j, 1.0 / (1.0 + static_cast<double>(r + j)), INSERT_VALUES);
        }
        MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY);
        MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY);
      }
      // The double reference: Â = W A in double.
      Owned<Mat> Ahat;
      MatDuplicate(A, MAT_COPY_VALUES, Ahat.out());
      if (scaled) {
        Owned<Vec> l, r;
        MatCreateVecs(Ahat, r.out(), l.out());
        PetscScalar* lv = nullptr;
        VecGetArray(l, &lv);
        std::copy(w.begin(), w.end(), lv);
        VecRestoreArray(l, &lv);
        MatDiagonalScale(Ahat, l, nullptr);
      }
      const std::vector<PetscInt> row_entries = local_row_entries(A);
      const size_t n_local = row_entries.size();
      for (int m : {1, 10, 17}) {
        const size_t len = n_local * static_cast<size_t>(m);
        std::vector<float> pf(len), qf(len, -1.0f);  // every entry must be overwritten
        std::vector<double> pd(len), qd(len, -1.0);
        for (size_t e = 0; e < len; ++e) {
          const double global = static_cast<double>(row_start) * m + static_cast<double>(e);
          pf[e] = static_cast<float>(1.0 / (1.0 + global * 0.37));
          pd[e] = pf[e];
        }
        propagation::detail::SingleBlockProduct single(A, m, scaled ? w.data() : nullptr);
        propagation::detail::BlockProduct dbl(Ahat, m);
        single.apply(pf.data(), qf.data());
        dbl.apply(pd.data(), qd.data());
        int within = 1;
        long normal[2] = {0, static_cast<long>(len)};  // values float holds normally, of all
        for (size_t e = 0; e < len; ++e) {
          const double n_i = static_cast<double>(row_entries[e / static_cast<size_t>(m)]);
          within = within &&
                   std::abs(static_cast<double>(qf[e]) - qd[e]) <= 2 * (n_i + 2) * u * qd[e] + n_i * tiny;
          normal[0] += qf[e] >= tiny && qd[e] >= tiny;
        }
        MPI_Allreduce(MPI_IN_PLACE, &within, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, normal, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        EXPECT_EQ(within, 1) << "width " << m << (scaled ? " scaled" : " unscaled");
        // The relative bound is tested on values float holds, not met by zeros on both sides:
        // with the scaling every row's with neighbours (W A's rows sum to 1).
        EXPECT_GT(normal[0], normal[1] * 9 / 10) << "width " << m << (scaled ? " scaled" : " unscaled");
      }
    }
  }
}

TEST(SingleBlockProduct, ChebyshevStepIsTheRecurrenceOnApplysProduct) {
  // chebyshev_step(y, y_prev, b, σ, skip, c1, c2) must equal, row for row, the three-term
  // update y_prev ← y + c1(y − y_prev) + c2(b − (σy − q)) with q = apply(y): the same float
  // sums (diagonal block, then the ghost entries added) and the same float operations in the
  // same order, so the same bits where the compiler does not contract a·b + c (the default
  // build; with FMA (SSDR_NATIVE) each operation's rounding may differ: ≤ 8u of the terms'
  // magnitudes, u = 2⁻²⁴, five roundings of terms no larger than their sum of magnitudes).
  // Skipped rows keep y_prev. File order (ghost entries on many rows) and renumbered; widths
  // 1, 10 (compile time) and 17 (run time); on any rank count.
  test::Problem pr = test::load_problem("digits.csv", 3, true);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  const graph::Renumbering ren = graph::renumber_for_locality(g.A, "bcs_");
  const double u = std::numeric_limits<float>::epsilon() / 2;
  for (Mat A : {static_cast<Mat>(g.A), static_cast<Mat>(ren.B)}) {
    PetscInt row_start = 0, row_end = 0;
    MatGetOwnershipRange(A, &row_start, &row_end);
    std::vector<double> w;
    for (double d : graph::degrees(A)) w.push_back(d > 0 ? 1.0 / d : 0.0);
    const size_t n_local = w.size();
    for (int m : {1, 10, 17}) {
      const size_t len = n_local * static_cast<size_t>(m);
      std::vector<float> y(len), y_prev(len), b(len), q(len), sigma(n_local);
      std::vector<char> skip(n_local);
      for (size_t i = 0; i < n_local; ++i) {
        const double gi = static_cast<double>(row_start) + static_cast<double>(i);
        sigma[i] = static_cast<float>(1.0 + 0.01 * std::sin(gi));
        skip[i] = static_cast<long>(gi) % 7 == 3;
      }
      for (size_t e = 0; e < len; ++e) {
        const double ge = static_cast<double>(row_start) * m + static_cast<double>(e);
        y[e] = static_cast<float>(std::cos(0.37 * ge));
        y_prev[e] = static_cast<float>(std::sin(0.11 * ge));
        b[e] = static_cast<float>(1.0 / (1.0 + 0.5 * ge));
      }
      propagation::detail::SingleBlockProduct single(A, m, w.data());
      single.apply(y.data(), q.data());
      const float c1 = 0.8125f, c2 = 1.375f;
      std::vector<float> stepped = y_prev;
      single.chebyshev_step(y.data(), stepped.data(), b.data(), sigma.data(), skip.data(), c1, c2);
      int same = 1;
      for (size_t e = 0; e < len; ++e) {
        const size_t i = e / static_cast<size_t>(m);
        if (skip[i]) {
          same = same && stepped[e] == y_prev[e];
          continue;
        }
        const float want = y[e] + c1 * (y[e] - y_prev[e]) + c2 * (b[e] - (sigma[i] * y[e] - q[e]));
#if defined(__FMA__)
        const double mag = std::abs(y[e]) + std::abs(c1 * (y[e] - y_prev[e])) +
                           std::abs(c2) * (std::abs(b[e]) + std::abs(sigma[i] * y[e]) + std::abs(q[e]));
        same = same && std::abs(static_cast<double>(stepped[e]) - want) <= 8 * u * mag;
#else
        (void)u;
        same = same && stepped[e] == want;
#endif
      }
      MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      EXPECT_EQ(same, 1) << "width " << m;
    }
  }
}

TEST(ChebyshevSolve, MeetsTheChebyshevBoundInTheDegreeWeightedNorm) {
  // Saad's Alg. 12.1: with Ŝ = D_S⁻¹S self-adjoint in ⟨x, y⟩_d = Σ d_i x_i y_i (d = D_S, the
  // free rows) and its spectrum in [lo, hi] = the Gershgorin interval [1 − α, 1 + α] (plus the
  // solver's margin), s steps from e = 0 leave ‖z − Ŝe‖_d ≤ ‖z‖_d / T_s(σ₁), σ₁ = (hi + lo)/(hi − lo).
  // The residual is formed in double from A itself. Float rounding: each step's terms are
  // ≤ ‖z‖ + ‖Ŝ‖·‖e‖ with ‖e‖ ≤ ‖z‖/lo ≈ 100‖z‖ and ‖Ŝ‖ ≤ 2, each rounded to u = 2⁻²⁴ a few
  // times, and Chebyshev's recurrence carries those errors without growth beyond the step
  // count: s·4u·201 ≈ 3·10⁻⁴ relative at s = 60, so the slack is 10⁻³; at s = 60 the bound is
  // 4·10⁻⁴, where Jacobi's iteration would still be at 0.99⁶⁰ ≈ 0.55. digits, 10 columns, on
  // any rank count.
  test::Problem pr = test::load_problem("digits.csv", 5, true);
  const DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  const graph::Graph g = graph::build_knn_graph(X, graph::GraphOptions{});
  const std::vector<int> labels = local_labels(g.A, pr.semi);
  const std::vector<double> degree = graph::degrees(g.A);
  const size_t n = degree.size();
  const int64_t m = 10;
  Owned<Vec> diag;
  MatCreateVecs(g.A, nullptr, diag.out());
  MatGetDiagonal(g.A, diag);
  const PetscScalar* a = nullptr;
  VecGetArrayRead(diag, &a);
  std::vector<double> dinv(n, 0.0), d(n, 0.0);
  std::vector<float> sigma(n, 0.0f);
  std::vector<char> known(n, 0);
  for (size_t i = 0; i < n; ++i) {
    known[i] = labels[i] >= 0 || !(degree[i] > 0);
    if (known[i]) continue;
    const double scale = degree[i] / kAlpha;
    dinv[i] = 1.0 / (scale - a[i]);
    d[i] = 1.0 / dinv[i];
    sigma[i] = static_cast<float>(scale * dinv[i]);
  }
  VecRestoreArrayRead(diag, &a);
  PetscInt row_start = 0;
  MatGetOwnershipRange(g.A, &row_start, nullptr);
  std::vector<float> z(n * m, 0.0f);
  for (size_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < m; ++k)
      if (!known[i]) z[i * m + static_cast<size_t>(k)] = static_cast<float>(std::cos(0.7 * static_cast<double>(row_start + i) + 1.3 * k));
  propagation::detail::SingleBlockProduct single(g.A, static_cast<int>(m), dinv.data());
  propagation::detail::BlockProduct dbl(g.A, static_cast<int>(m));
  const double lo = 1.0 - kAlpha - 1e-6, hi = 1.0 + kAlpha + 1e-6, sigma1 = (hi + lo) / (hi - lo);
  {
    // No interval (lo ≤ 0 or hi ≤ lo), no step, or a block of the wrong size: refused.
    std::vector<float> e(n * m, 0.0f), scratch(n * m, 0.0f), short_e(n * m + 1, 0.0f);
    EXPECT_THROW(propagation::detail::chebyshev_solve(single, known, sigma, m, z, e, scratch, 0.0, hi, 5), Error);
    EXPECT_THROW(propagation::detail::chebyshev_solve(single, known, sigma, m, z, e, scratch, hi, lo, 5), Error);
    EXPECT_THROW(propagation::detail::chebyshev_solve(single, known, sigma, m, z, e, scratch, lo, hi, 0), Error);
    EXPECT_THROW(propagation::detail::chebyshev_solve(single, known, sigma, m, z, short_e, scratch, lo, hi, 5), Error);
  }
  for (int steps : {1, 2, 5, 20, 60}) {
    std::vector<float> e(n * m, 0.0f), scratch(n * m, 0.0f);
    const int products = propagation::detail::chebyshev_solve(single, known, sigma, m, z, e, scratch, lo, hi, steps);
    EXPECT_EQ(products, steps - 1);
    std::vector<double> ed(e.begin(), e.end()), q(n * m, 0.0);
    dbl.apply(ed.data(), q.data());
    double norms[2] = {0, 0};  // ‖z − Ŝe‖_d², ‖z‖_d²
    int known_zero = 1;
    for (size_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < m; ++k) {
        const size_t t = i * m + static_cast<size_t>(k);
        if (known[i]) {
          known_zero = known_zero && e[t] == 0.0f;
          continue;
        }
        // Ŝe = σe − D_S⁻¹(A e), σ = (D/α)D_S⁻¹, in double.
        const double se = (degree[i] / kAlpha) * dinv[i] * ed[t] - dinv[i] * q[t];
        const double res = z[t] - se;
        norms[0] += d[i] * res * res;
        norms[1] += d[i] * static_cast<double>(z[t]) * z[t];
      }
    MPI_Allreduce(MPI_IN_PLACE, norms, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &known_zero, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    const double bound = 1.0 / std::cosh(steps * std::acosh(sigma1));
    EXPECT_LE(std::sqrt(norms[0] / norms[1]), bound + 1e-3) << steps << " steps";
    EXPECT_EQ(known_zero, 1) << steps << " steps";
  }
}

TEST(LabelPropagation, MixedPrecisionThatStallsFinishesInDoubleWithinTheTolerance) {
  // An inner tolerance of 0.9 gains less than the halving each refinement step must make:
  // the block CG hands the rest to double after the first step and still meets rtol (bounds
  // as in the file comment). Without that hand-over the steps of 0.9 would need ~260 > 100
  // refinement steps and the solve would throw, so passing shows it. (The hand-over after a
  // float breakdown or max_it stop: BlockCgThatCannotConvergeThrowsOnEveryRank, whose
  // single-precision solve stops at max_it and whose double finish then names the option.)
  // A tolerance outside (0, 1) is refused, naming the option.
  test::Problem pr = test::load_problem("wine.csv", 3, true);
  DistMatrix X = ref::distribute(pr.X, MPI_COMM_WORLD);
  auto g = graph::build_knn_graph(X, graph::GraphOptions{});
  const auto stalled =
      run(g.A, pr.semi, pr.classes, defaults(), {{"mixed_inner", "cg"}, {"mixed_inner_rtol", "0.9"}});
  const auto gmres = run(g.A, pr.semi, pr.classes, defaults(), {{"ksp_type", "gmres"}});
  const auto cg_double = run(g.A, pr.semi, pr.classes, defaults(), {{"mixed_precision", "false"}});
  EXPECT_EQ(stalled.solver, "block-cg");
  const double E = solution_bound(kRtol, pr.X.rows, kAlpha);
  const auto [classes_diff, outlier_diff] = column_diffs(allgather(stalled.F), allgather(gmres.F), pr.classes);
  EXPECT_LT(classes_diff, 2 * E);
  EXPECT_LT(outlier_diff, (pr.classes + 1) * E);
  // The double finish did the work: at least the double solve's iterations less the few
  // single-precision ones of the first step (a 0.9 reduction takes one or two).
  for (int k = 0; k < pr.classes; ++k)
    EXPECT_GE(stalled.iterations[static_cast<size_t>(k)], cg_double.iterations[static_cast<size_t>(k)] - 5) << k;
  for (const char* bad : {"0", "1", "-1e-4"}) {
    try {
      run(g.A, pr.semi, pr.classes, defaults(), {{"mixed_inner_rtol", bad}});
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("-lpt_mixed_inner_rtol"), std::string::npos) << e.what();
    }
  }
  try {
    run(g.A, pr.semi, pr.classes, defaults(), {{"mixed_inner", "jacobi"}});
    ADD_FAILURE() << "no error for -lpt_mixed_inner jacobi";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-lpt_mixed_inner must be chebyshev or cg"), std::string::npos) << e.what();
  }
}

TEST(RcmReorder, IsASymmetricPermutationThatKeepsEveryRowOnItsRank) {
  test::Problem pr = test::load_problem("iris.csv", 3, false);
  const int64_t n = pr.X.rows;
  const Dense A = ref::knn_heat_graph(pr.X, 8, 1e-3 / 8);
  auto permutation = [&](MPI_Comm comm, Dense* B_out) {
    Owned<Mat> Am = to_aij(A, comm);
    const graph::Reordered re = graph::rcm_reorder(Am);
    // π gathered in B's row order, and B's entries checked against A(π, π).
    int cnt = static_cast<int>(re.rows.size()), size = 1;
    MPI_Comm_size(comm, &size);
    std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size), 0);
    MPI_Allgather(&cnt, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
    for (int r = 1; r < size; ++r) displs[static_cast<size_t>(r)] = displs[static_cast<size_t>(r - 1)] + counts[static_cast<size_t>(r - 1)];
    std::vector<PetscInt> pi(static_cast<size_t>(n));
    MPI_Allgatherv(re.rows.data(), cnt, MPIU_INT, pi.data(), counts.data(), displs.data(), MPIU_INT, comm);
    PetscInt s = 0, e = 0;
    MatGetOwnershipRange(re.B, &s, &e);
    Dense B(n, n);
    for (PetscInt i = s; i < e; ++i) {
      PetscInt nz = 0;
      const PetscInt* c = nullptr;
      const PetscScalar* v = nullptr;
      MatGetRow(re.B, i, &nz, &c, &v);
      for (PetscInt t = 0; t < nz; ++t) B(i, c[t]) = v[t];
      MatRestoreRow(re.B, i, &nz, &c, &v);
    }
    MPI_Allreduce(MPI_IN_PLACE, B.data(), static_cast<int>(n * n), MPI_DOUBLE, MPI_SUM, comm);
    *B_out = B;
    return pi;
  };
  Dense B, Bs;
  const std::vector<PetscInt> pi = permutation(MPI_COMM_WORLD, &B);
  const std::vector<PetscInt> pi_self = permutation(MPI_COMM_SELF, &Bs);
  // Each rank renumbers its own rows only: π maps every rank's block of rows onto itself.
  const Layout l = block_layout(n, MPI_COMM_WORLD);
  for (int64_t i = l.start; i < l.start + l.n_local; ++i) {
    EXPECT_GE(pi[static_cast<size_t>(i)], l.start);
    EXPECT_LT(pi[static_cast<size_t>(i)], l.start + l.n_local);
  }
  std::vector<PetscInt> sorted = pi_self;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  sorted = pi;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  double worst = 0;
  bool moved = false;
  for (int64_t i = 0; i < n; ++i) {
    moved = moved || pi[static_cast<size_t>(i)] != i;
    for (int64_t j = 0; j < n; ++j)
      worst = std::max(worst, std::abs(B(i, j) - A(pi[static_cast<size_t>(i)], pi[static_cast<size_t>(j)])));
  }
  EXPECT_EQ(worst, 0.0);  // entries are moved, not computed
  EXPECT_TRUE(moved);     // iris in file order is not already in RCM order
}
