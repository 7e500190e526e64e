// The constrained Laplacian rank graph (Nie, Wang, Jordan, Huang 2016; soge-liu2017 §5.2):
// the adaptive-neighbours rows refined until (S + Sᵀ)/2 has exactly c connected components.
// Rows stay distributed: each rank refines its own rows, fetching F's rows (and component
// labels) only at its rows' neighbours; the eigenpairs of the sparse Laplacian come from SLEPc.
#include <slepceps.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "knn_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/graph/knn.hpp"

namespace ssdr::graph {

namespace {

/// The Euclidean projection of v onto the simplex {s ≥ 0, Σ s = 1} (CLR.m's
/// EProjSimplex_new), exactly: sort v descending, ρ = the largest j with
/// u_j − (Σ_{r≤j} u_r − 1)/j > 0, θ = (Σ_{r≤ρ} u_r − 1)/ρ, s = max(v − θ, 0)
/// (Duchi, Shalev-Shwartz, Singer, Chandra 2008). Local.
void project_simplex(const double* v, int k, double* s) {
  std::vector<double> u(v, v + k);
  std::sort(u.begin(), u.end(), [](double x, double y) { return x > y; });
  double sum = 0, theta = 0;
  for (int j = 0; j < k; ++j) {
    sum += u[static_cast<size_t>(j)];
    const double t = (sum - 1.0) / (j + 1);
    if (u[static_cast<size_t>(j)] - t > 0) theta = t;
  }
  for (int j = 0; j < k; ++j) s[j] = std::max(v[j] - theta, 0.0);
}

/// The sorted, unique global columns of E that another rank owns.
std::vector<int64_t> ghost_columns(const SymmetricEdges& E) {
  std::vector<int64_t> g;
  const int64_t c0 = E.row_start, c1 = E.row_start + E.n_local;
  for (int64_t j : E.col)
    if (j < c0 || j >= c1) g.push_back(j);
  std::sort(g.begin(), g.end());
  g.erase(std::unique(g.begin(), g.end()), g.end());
  return g;
}

/// A one-column-per-value view of local values as a DistMatrix (for detail::fetch_rows).
DistMatrix as_rows(MPI_Comm comm, int64_t n, int64_t row_start, int64_t n_local, int64_t cols,
                   std::vector<double> v) {
  DistMatrix M;
  M.comm = comm;
  M.n_global = n;
  M.row_start = row_start;
  M.n_local = n_local;
  M.cols = cols;
  M.v = std::move(v);
  return M;
}

/// The connected components of the graph of E's edges of positive weight, found exactly:
/// every vertex takes the smallest global index it reaches (min-label propagation, ghost
/// labels fetched each round, until no label changes on any rank). Collective.
struct Components {
  int64_t count = 0;          ///< number of components (vertices whose label is their own index)
  std::vector<double> label;  ///< per local row: the smallest global index of its component
};
Components components_of(const SymmetricEdges& E, MPI_Comm comm) {
  const int64_t nl = E.n_local, c0 = E.row_start;
  const std::vector<int64_t> ghosts = ghost_columns(E);
  Components out;
  std::vector<double>& label = out.label;
  label.resize(static_cast<size_t>(nl));
  for (int64_t i = 0; i < nl; ++i) label[static_cast<size_t>(i)] = static_cast<double>(c0 + i);
  for (;;) {
    const DistMatrix L = as_rows(comm, E.n_global, c0, nl, 1, label);
    const std::vector<double> remote = detail::fetch_rows(L, ghosts);
    auto at = [&](int64_t j) {
      if (j >= c0 && j < c0 + nl) return label[static_cast<size_t>(j - c0)];
      const auto it = std::lower_bound(ghosts.begin(), ghosts.end(), j);
      return remote[static_cast<size_t>(it - ghosts.begin())];
    };
    int changed = 0;
    // Local sweeps to a fixed point on this rank's rows first (fewer rounds of messages).
    for (bool again = true; again;) {
      again = false;
      for (int64_t i = 0; i < nl; ++i)
        for (int64_t e = E.row_ptr[i]; e < E.row_ptr[i + 1]; ++e) {
          if (!(E.weight[static_cast<size_t>(e)] > 0)) continue;
          const double l = at(E.col[e]);
          if (l < label[static_cast<size_t>(i)]) {
            label[static_cast<size_t>(i)] = l;
            again = true;
            changed = 1;
          }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &changed, 1, MPI_INT, MPI_MAX, comm);
    if (!changed) break;
  }
  for (int64_t i = 0; i < nl; ++i) out.count += label[static_cast<size_t>(i)] == static_cast<double>(c0 + i) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &out.count, 1, MPI_INT64_T, MPI_SUM, comm);
  return out;
}

/// L = D − A of E's weights (A = E.weight, zero diagonal), exact preallocation. Collective.
Owned<Mat> laplacian_of(const SymmetricEdges& E, MPI_Comm comm) {
  const int64_t nl = E.n_local, n = E.n_global, c0 = E.row_start, c1 = c0 + nl;
  std::vector<PetscInt> dnz(static_cast<size_t>(nl), 1), onz(static_cast<size_t>(nl), 0);
  for (int64_t i = 0; i < nl; ++i)
    for (int64_t e = E.row_ptr[i]; e < E.row_ptr[i + 1]; ++e) ++((E.col[e] >= c0 && E.col[e] < c1) ? dnz : onz)[i];
  Owned<Mat> L;
  SSDR_PETSC(MatCreate(comm, L.out()));
  SSDR_PETSC(MatSetSizes(L, static_cast<PetscInt>(nl), static_cast<PetscInt>(nl), static_cast<PetscInt>(n),
                         static_cast<PetscInt>(n)));
  SSDR_PETSC(MatSetType(L, MATAIJ));
  SSDR_PETSC(MatSeqAIJSetPreallocation(L, 0, dnz.data()));
  SSDR_PETSC(MatMPIAIJSetPreallocation(L, 0, dnz.data(), 0, onz.data()));
  SSDR_PETSC(MatSetOption(L, MAT_NO_OFF_PROC_ENTRIES, PETSC_TRUE));
  std::vector<PetscInt> cols;
  std::vector<PetscScalar> vals;
  for (int64_t i = 0; i < nl; ++i) {
    cols.clear();
    vals.clear();
    double degree = 0;
    for (int64_t e = E.row_ptr[i]; e < E.row_ptr[i + 1]; ++e) {
      const double w = E.weight[static_cast<size_t>(e)];
      degree += w;
      cols.push_back(static_cast<PetscInt>(E.col[e]));
      vals.push_back(-w);
    }
    cols.push_back(static_cast<PetscInt>(c0 + i));
    vals.push_back(degree);
    const PetscInt row = static_cast<PetscInt>(c0 + i);
    SSDR_PETSC(MatSetValues(L, 1, &row, static_cast<PetscInt>(cols.size()), cols.data(), vals.data(), INSERT_VALUES));
  }
  SSDR_PETSC(MatAssemblyBegin(L, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatAssemblyEnd(L, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatSetOption(L, MAT_SYMMETRIC, PETSC_TRUE));
  return L;
}

struct SmallestPairs {
  int64_t components = 0;      ///< connected components of the graph
  std::vector<double> values;  ///< the c + 1 smallest eigenvalues of L, ascending
  Dense F;                     ///< n_local × c: this rank's rows of c eigenvectors of the smallest
};

/// The c + 1 smallest eigenvalues of L = D − A and the local rows of c eigenvectors of the
/// smallest. L's null space is exactly spanned by the indicator vectors of the graph's
/// connected components, so those are not searched: the first min(count, c) components (by
/// smallest index) give F's first columns, 1/√|component| on their rows (the same bits on any
/// rank count), and their eigenvalues are 0. A Krylov solver started from one vector finds a
/// multiple eigenvalue's copies only through rounding (slowly, and it may miss some), so the
/// remaining c + 1 − count pairs come from Krylov–Schur on L with the indicators as its
/// deflation space (residual ‖Lx − λx‖ ≤ 10⁻¹⁰·‖L‖; options prefix "clr_"). Collective.
SmallestPairs smallest_pairs(const SymmetricEdges& E, Mat L, int c, MPI_Comm comm) {
  const int64_t nl = E.n_local, c0 = E.row_start;
  const Components C = components_of(E, comm);
  SmallestPairs out;
  out.components = C.count;
  const int64_t kept = std::min<int64_t>(C.count, c);
  // The kept components: the `kept` smallest roots over all ranks (each rank offers its own
  // first `kept`, in index order), with their sizes.
  std::vector<int64_t> mine;
  for (int64_t i = 0; i < nl && static_cast<int64_t>(mine.size()) < kept; ++i)
    if (C.label[static_cast<size_t>(i)] == static_cast<double>(c0 + i)) mine.push_back(c0 + i);
  std::vector<int64_t> roots = allgatherv(mine, comm);
  std::sort(roots.begin(), roots.end());
  roots.resize(static_cast<size_t>(kept));
  std::vector<int64_t> size(static_cast<size_t>(kept), 0);
  std::vector<int> column(static_cast<size_t>(nl), -1);
  for (int64_t i = 0; i < nl; ++i) {
    const auto it = std::lower_bound(roots.begin(), roots.end(), static_cast<int64_t>(C.label[static_cast<size_t>(i)]));
    if (it != roots.end() && static_cast<double>(*it) == C.label[static_cast<size_t>(i)]) {
      column[static_cast<size_t>(i)] = static_cast<int>(it - roots.begin());
      ++size[static_cast<size_t>(it - roots.begin())];
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, size.data(), static_cast<int>(kept), MPI_INT64_T, MPI_SUM, comm);
  out.F = Dense(nl, c);
  for (int64_t i = 0; i < nl; ++i)
    if (column[static_cast<size_t>(i)] >= 0)
      out.F(i, column[static_cast<size_t>(i)]) = 1.0 / std::sqrt(static_cast<double>(size[static_cast<size_t>(column[static_cast<size_t>(i)])]));
  out.values.assign(static_cast<size_t>(std::min<int64_t>(C.count, c + 1)), 0.0);
  const int64_t more = c + 1 - static_cast<int64_t>(out.values.size());  // nonzero eigenvalues wanted
  if (more <= 0) return out;

  std::vector<Owned<Vec>> defl(static_cast<size_t>(kept));
  std::vector<Vec> handles;
  for (int64_t q = 0; q < kept; ++q) {
    SSDR_PETSC(MatCreateVecs(L, defl[static_cast<size_t>(q)].out(), nullptr));
    PetscScalar* v = nullptr;
    SSDR_PETSC(VecGetArray(defl[static_cast<size_t>(q)], &v));
    for (int64_t i = 0; i < nl; ++i) v[i] = out.F(i, q);
    SSDR_PETSC(VecRestoreArray(defl[static_cast<size_t>(q)], &v));
    handles.push_back(defl[static_cast<size_t>(q)]);
  }
  Owned<EPS> eps;
  SSDR_PETSC(EPSCreate(comm, eps.out()));
  SSDR_PETSC(EPSSetOperators(eps, L, nullptr));
  SSDR_PETSC(EPSSetProblemType(eps, EPS_HEP));
  SSDR_PETSC(EPSSetType(eps, EPSKRYLOVSCHUR));
  SSDR_PETSC(EPSSetWhichEigenpairs(eps, EPS_SMALLEST_REAL));
  SSDR_PETSC(EPSSetDimensions(eps, static_cast<PetscInt>(more), PETSC_DEFAULT, PETSC_DEFAULT));
  // Relative to ‖L‖, not to λ: small eigenvalues have no relative accuracy to offer.
  SSDR_PETSC(EPSSetConvergenceTest(eps, EPS_CONV_NORM));
  SSDR_PETSC(EPSSetTolerances(eps, 1e-10, 100000));
  if (!handles.empty()) SSDR_PETSC(EPSSetDeflationSpace(eps, static_cast<PetscInt>(handles.size()), handles.data()));
  SSDR_PETSC(EPSSetOptionsPrefix(eps, "clr_"));
  SSDR_PETSC_OPTIONS(EPSSetFromOptions(eps));
  SSDR_PETSC(EPSSolve(eps));
  PetscInt nconv = 0;
  SSDR_PETSC(EPSGetConverged(eps, &nconv));
  SSDR_REQUIRE(nconv >= more, "CLR graph: the Laplacian's eigen-solve (options prefix 'clr_') converged " +
                                  std::to_string(nconv) + " of the " + std::to_string(more) +
                                  " smallest nonzero eigenpairs; try -clr_eps_max_it or -clr_eps_ncv");
  std::vector<double> lambda(static_cast<size_t>(nconv));
  for (PetscInt k = 0; k < nconv; ++k) {
    PetscScalar kr = 0, ki = 0;
    SSDR_PETSC(EPSGetEigenvalue(eps, k, &kr, &ki));
    lambda[static_cast<size_t>(k)] = PetscRealPart(kr);
  }
  std::vector<PetscInt> order(static_cast<size_t>(nconv));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](PetscInt x, PetscInt y) { return lambda[static_cast<size_t>(x)] < lambda[static_cast<size_t>(y)]; });
  for (int64_t k = 0; k < more; ++k) out.values.push_back(lambda[static_cast<size_t>(order[static_cast<size_t>(k)])]);
  Owned<Vec> x;
  SSDR_PETSC(MatCreateVecs(L, x.out(), nullptr));
  for (int64_t q = kept; q < c; ++q) {
    PetscScalar kr = 0, ki = 0;
    SSDR_PETSC(EPSGetEigenpair(eps, order[static_cast<size_t>(q - kept)], &kr, &ki, x, nullptr));
    const PetscScalar* xv = nullptr;
    SSDR_PETSC(VecGetArrayRead(x, &xv));
    for (int64_t i = 0; i < nl; ++i) out.F(i, q) = PetscRealPart(xv[i]);
    SSDR_PETSC(VecRestoreArrayRead(x, &xv));
  }
  return out;
}

}  // namespace

ClrResult clr_refine(const KnnLists& lists, const std::vector<double>& a, int c, MPI_Comm comm) {
  const int k = lists.k;
  const int64_t nl = lists.n_local, n = lists.n_global, c0 = lists.row_start;
  SSDR_CHECK_COLLECTIVE(comm, c >= 1 && static_cast<int64_t>(c) < n,
                        "CLR graph: the number of connected components c = " + std::to_string(c) +
                            " must be at least 1 and smaller than the " + std::to_string(n) + " graph samples");
  SSDR_CHECK(static_cast<int64_t>(a.size()) == nl * k && static_cast<int64_t>(lists.index.size()) == nl * k,
             "clr_refine: the weights do not have the lists' n_local·k entries");

  // The neighbours' rows of F this rank reads: the non-local entries of its kNN lists.
  std::vector<int64_t> ghosts;
  for (int64_t j : lists.index)
    if (j < c0 || j >= c0 + nl) ghosts.push_back(j);
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());

  auto laplacian_pairs = [&](const std::vector<double>& s, int64_t* components) {
    const SymmetricEdges E = symmetrize(lists, comm, &s);
    const Owned<Mat> L = laplacian_of(E, comm);
    SmallestPairs P = smallest_pairs(E, L, c, comm);
    *components = P.components;
    return P;
  };

  ClrResult r;
  r.lambda = kClrInitialLambda;
  int64_t comps = 0;
  SmallestPairs P = laplacian_pairs(a, &comps);  // F of the initial graph
  std::vector<double> s(a.size()), v(static_cast<size_t>(k)), ad(static_cast<size_t>(k));
  r.s = a;
  for (int it = 1; it <= kClrMaxIterations; ++it) {
    r.iterations = it;
    // v_ij = ‖f_i − f_j‖² on row i's neighbours; F's remote rows fetched once per iteration.
    std::vector<double> local(static_cast<size_t>(nl * c));
    for (int64_t i = 0; i < nl; ++i)
      for (int q = 0; q < c; ++q) local[static_cast<size_t>(i * c + q)] = P.F(i, q);
    const DistMatrix Fr = as_rows(comm, n, c0, nl, c, local);
    const std::vector<double> remote = detail::fetch_rows(Fr, ghosts);
    auto frow = [&](int64_t j) -> const double* {
      if (j >= c0 && j < c0 + nl) return local.data() + (j - c0) * c;
      const auto g = std::lower_bound(ghosts.begin(), ghosts.end(), j);
      return remote.data() + (g - ghosts.begin()) * c;
    };
    for (int64_t i = 0; i < nl; ++i) {
      const double* fi = local.data() + i * c;
      for (int h = 0; h < k; ++h) {
        const double* fj = frow(lists.index[static_cast<size_t>(i * k + h)]);
        double d2 = 0;
        for (int q = 0; q < c; ++q) d2 += (fi[q] - fj[q]) * (fi[q] - fj[q]);
        ad[static_cast<size_t>(h)] = a[static_cast<size_t>(i * k + h)] - 0.5 * r.lambda * d2;
      }
      project_simplex(ad.data(), k, s.data() + i * k);
    }
    SmallestPairs next = laplacian_pairs(s, &comps);
    r.s = s;
    r.components = comps;
    r.eigenvalues = next.values;
    if (comps < c) {  // CLR.m: fn1 > zr, too few zero eigenvalues: a stronger rank term
      r.lambda *= 2;
      P = std::move(next);
    } else if (comps > c) {  // fn2 < zr: too many; weaker, from the previous F
      r.lambda /= 2;
    } else {
      r.converged = true;
      break;
    }
  }
  return r;
}

}  // namespace ssdr::graph
