// SOGE: semi-supervised orthogonal graph embedding with recursive projections
// (soge-liu2017, eq. (6)–(15), Algorithms 1 and 2). Stages documented in soge_internal.hpp.
//
// Data: the method table gives soge the paper's preprocessing — one global scale factor so
// the centered transductive samples have unit mean squared norm, then PCA keeping 95 % of
// the energy (soge-liu2017 §5.2) — because (6) is not scale-invariant (α weighs a squared
// distance in data units against the label fit; on raw digits 1-NN accuracy drops from 0.87
// to 0.72). Graph (§5.2): the paper builds L by the constrained Laplacian rank method (Nie et
// al. 2016): its adaptive-neighbours graph, k = 5 (the method table's, method_graph;
// --knn/--weight override it), refined by CLR's rank constraint until (S + Sᵀ)/2 has exactly
// c connected components (graph::clr_refine; --weight adaptive keeps the closed form).
// Recorded in info["graph"] (iterations, λ, components, the Laplacian's c + 1 smallest
// eigenvalues).
#include <algorithm>
#include <cmath>
#include <mpi.h>
#include <limits>
#include <numeric>

#include "methods/dense_route.hpp"
#include "soge_internal.hpp"
#include "methods/registry.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "ssdr/methods/common.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/solvers/eigen.hpp"

namespace ssdr::methods {

namespace soge {

double stationarity(const Dense& W, const Dense& D);  // below

namespace {

/// op(A)·op(B) for replicated column-major matrices. Local.
Dense mul(const Dense& A, const Dense& B, char ta = 'N', char tb = 'N') {
  const int64_t m = ta == 'N' ? A.rows : A.cols, k = ta == 'N' ? A.cols : A.rows;
  const int64_t n = tb == 'N' ? B.cols : B.rows;
  SSDR_CHECK((tb == 'N' ? B.rows : B.cols) == k, "soge: inner dimensions differ");
  Dense C(m, n);
  if (m > 0 && n > 0 && k > 0)
    blas::gemm(ta, tb, m, n, k, 1.0, A.data(), std::max<int64_t>(A.rows, 1), B.data(),
               std::max<int64_t>(B.rows, 1), 0.0, C.data(), std::max<int64_t>(m, 1));
  return C;
}

/// tr(AᵀB) = Σ A∘B. Local.
double inner(const Dense& A, const Dense& B) {
  return std::inner_product(A.v.begin(), A.v.end(), B.v.begin(), 0.0);
}

/// Polar factor U Vᵀ of D (d×c, d ≥ c) from the thin SVD D = UΣVᵀ: the maximizer of
/// tr(DᵀW) over WᵀW = I, eq. (15). Local.
Dense polar(const Dense& D) {
  const int64_t d = D.rows, c = D.cols;
  Dense a = D, U(d, c), Vt(c, c);
  std::vector<double> s(static_cast<size_t>(c));
  lapack::gesvd(d, c, a.data(), d, s.data(), U.data(), d, Vt.data(), c);
  return mul(U, Vt);
}

/// Same bits on every rank (MPI_Allreduce need not round identically everywhere).
void broadcast(Dense& M, MPI_Comm comm) {
  MPI_Bcast(M.data(), static_cast<int>(M.v.size()), MPI_DOUBLE, 0, comm);
}

/// Z − W sym(WᵀZ): projection onto the tangent space of the Stiefel manifold at W. Local.
Dense tangent(const Dense& W, const Dense& Z) {
  const Dense WtZ = mul(W, Z, 'T', 'N');
  const int64_t c = W.cols;
  Dense S(c, c);
  for (int64_t i = 0; i < c; ++i)
    for (int64_t j = 0; j < c; ++j) S(i, j) = 0.5 * (WtZ(i, j) + WtZ(j, i));
  Dense out = Z;
  const Dense WS = mul(W, S);
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] -= WS.v[i];
  return out;
}

/// The start of Algorithm 1: the polar factor U Vᵀ of B (the maximizer of 2tr(WᵀB)). B has
/// rank ≤ c − 1 (B1_c = 0, since QU1 = 1 and X_c1 = 0), so U's columns for zero singular
/// values are arbitrary (rounding decides them, and with them the local maximum reached);
/// they are set to the eigenvectors of A with the smallest eigenvalues in the complement of
/// the other columns — the maximizers of tr(Wᵀ(λI − A)W) there — signs fixed so the entry
/// of largest magnitude is positive. Local, deterministic.
Dense start(const Dense& A, const Dense& B) {
  const int64_t d = B.rows, c = B.cols;
  Dense a = B, U(d, c), Vt(c, c);
  std::vector<double> s(static_cast<size_t>(c));
  lapack::gesvd(d, c, a.data(), d, s.data(), U.data(), d, Vt.data(), c);
  int64_t r = 0;
  while (r < c && s[static_cast<size_t>(r)] > 1e-10 * s[0]) ++r;
  if (r < c) {
    // M = P A P + big·(I − P), P = I − U_r U_rᵀ: its c − r smallest eigenvectors lie in range(P).
    double big = 1.0;
    for (double v : A.v) big += std::abs(v) * static_cast<double>(d);
    Dense Ur(d, r);
    std::copy(U.v.begin(), U.v.begin() + r * d, Ur.v.begin());
    Dense P = mul(Ur, Ur, 'N', 'T');
    for (auto& v : P.v) v = -v;
    for (int64_t i = 0; i < d; ++i) P(i, i) += 1.0;
    Dense M = mul(P, mul(A, P));
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < d; ++j) M(i, j) += big * ((i == j ? 1.0 : 0.0) - P(i, j));
    std::vector<double> ev(static_cast<size_t>(d));
    lapack::syev(d, M.data(), d, ev.data());
    for (int64_t k = 0; k < c - r; ++k) {
      const double* e = M.col(k);
      const double sign = largest_magnitude_sign(e, d);
      for (int64_t i = 0; i < d; ++i) U(i, r + k) = sign * e[i];
    }
    // Vᵀ's rows for zero singular values are equally arbitrary: fix their signs too.
    for (int64_t k = r; k < c; ++k)
      if (largest_magnitude_sign(&Vt(k, 0), c, Vt.rows) < 0)
        for (int64_t j = 0; j < c; ++j) Vt(k, j) = -Vt(k, j);
  }
  return mul(U, Vt);
}


/// Riemannian trust regions (Absil, Baker and Gallivan 2007; Manopt's RTR with its
/// preconditioned Steihaug–Toint truncated CG) for min f(W) = tr(WᵀΛW) − 2tr(WᵀB) on the
/// Stiefel manifold, A = diag(lam) in its eigenbasis (so f = λc − (13)):
///   grad f = P_W(G), G = 2(ΛW − B);  Hess f[ξ] = P_W(2Λξ − ξS), S = sym(WᵀG);
///   P_W(Z) = Z − W sym(WᵀZ); retraction polar(W + η).
/// The preconditioner inverts ξ ↦ 2Λξ − ξS exactly (S = PσPᵀ: |2 lam_i − σ_j|⁻¹ on ξP,
/// magnitudes floored at 10⁻⁶ of the largest) and projects; the Hessian is that map up to the
/// projection, so the inner CG takes a few dozen products whatever the spread of Λ — which
/// grows with α (λ_max(A) ~ α on COIL-20) and is what makes Algorithm 1's contraction
/// 1 − O(gap/λ_max). The radius is measured in the preconditioner's norm. A step is accepted
/// when it lowers f (ρ > 0.1); where the predicted decrease is below f's rounding, when it
/// cuts the relative gradient by a tenth and raises f by at most 16 roundings (five refusals
/// in a row end the iteration). Stops when the relative Riemannian gradient
/// ‖D − W sym(WᵀD)‖/‖D‖ ≤ o.tol (D = (λI − Λ)W + B), after o.max_iterations, or when no step
/// can be measured; converged is then stationarity ≤ o.stagnation_tol. Local (every rank
/// computes the same bits).
void trust_region(const std::vector<double>& lam, const Dense& Bq, double lambda, const StiefelOptions& o, Dense& W,
                  StiefelResult& r) {
  const int64_t d = W.rows, c = W.cols;
  const double eps = std::numeric_limits<double>::epsilon();
  auto f_of = [&](const Dense& V) {
    double q = 0;
    for (int64_t j = 0; j < c; ++j)
      for (int64_t i = 0; i < d; ++i) q += lam[static_cast<size_t>(i)] * V(i, j) * V(i, j);
    return q - 2.0 * inner(V, Bq);
  };
  auto D_of = [&](const Dense& V) {  // (λI − Λ)V + B, half of (13)'s gradient
    Dense D = Bq;
    for (int64_t j = 0; j < c; ++j)
      for (int64_t i = 0; i < d; ++i) D(i, j) += (lambda - lam[static_cast<size_t>(i)]) * V(i, j);
    return D;
  };
  auto J_of = [&](double f) { return lambda * static_cast<double>(c) - f; };
  double f = f_of(W);
  r.stationarity = stationarity(W, D_of(W));
  // The radius is in the preconditioner's norm, which scales as √(the scale of A and B): its
  // bound is set from that scale at the first iteration (4√c of it), so the Euclidean steps
  // allowed do not shrink as A and B grow.
  double Delta_bar = -1, Delta = -1;
  int floor_failures = 0;  // consecutive steps rejected at f's rounding level
  for (int it = 1; it <= o.max_iterations; ++it) {
    Dense G = Bq;  // 2(ΛW − B)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t i = 0; i < d; ++i) G(i, j) = 2.0 * (lam[static_cast<size_t>(i)] * W(i, j) - Bq(i, j));
    const Dense WtG = mul(W, G, 'T', 'N');
    Dense S(c, c);
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < c; ++j) S(i, j) = 0.5 * (WtG(i, j) + WtG(j, i));
    Dense P = S;
    std::vector<double> sigma(static_cast<size_t>(c));
    lapack::syev(c, P.data(), c, sigma.data());
    Dense inv(d, c);  // |2 lam_i − σ_j| here, inverted below
    double biggest = 0;
    for (int64_t j = 0; j < c; ++j)
      for (int64_t i = 0; i < d; ++i) {
        inv(i, j) = std::abs(2.0 * lam[static_cast<size_t>(i)] - sigma[static_cast<size_t>(j)]);
        biggest = std::max(biggest, inv(i, j));
      }
    // Floored at 10⁻⁶ of the largest: where the maximizer is not isolated (A with a repeated
    // bottom eigenvalue) 2λ_i − σ_j vanishes, and a smaller floor would blow rounding noise
    // in those directions up into steps.
    const double floor = std::max(1e-6 * biggest, std::numeric_limits<double>::min());
    if (Delta_bar < 0) Delta_bar = 4.0 * std::sqrt(static_cast<double>(c) * std::max(biggest, std::numeric_limits<double>::min()));
    for (double& v : inv.v) v = 1.0 / std::max(v, floor);
    auto prec = [&](const Dense& R) {
      Dense Y = mul(R, P);
      for (size_t i = 0; i < Y.v.size(); ++i) Y.v[i] *= inv.v[i];
      return tangent(W, mul(Y, P, 'N', 'T'));
    };
    auto hess = [&](const Dense& xi) {
      Dense H = mul(xi, S);
      for (int64_t j = 0; j < c; ++j)
        for (int64_t i = 0; i < d; ++i) H(i, j) = 2.0 * lam[static_cast<size_t>(i)] * xi(i, j) - H(i, j);
      return tangent(W, H);
    };
    const Dense g = tangent(W, G);
    const double gnorm = std::sqrt(inner(g, g));
    // Steihaug–Toint truncated CG in the preconditioner's norm (Manopt's tCG).
    Dense eta(d, c), Heta(d, c), rr = g, z = prec(rr), delta = z;
    for (auto& v : delta.v) v = -v;
    double z_r = inner(z, rr);
    if (Delta < 0) Delta = std::min(Delta_bar, std::sqrt(std::max(z_r, 0.0)));  // the first preconditioned step
    double e_Pe = 0, e_Pd = 0, d_Pd = z_r;
    const double r0 = gnorm;
    bool boundary = false;
    for (int j = 0; j < o.newton_cg_iterations && z_r > 0; ++j) {
      const Dense Hd = hess(delta);
      const double d_Hd = inner(delta, Hd);
      const double alpha = z_r / d_Hd;
      const double e_Pe_new = e_Pe + 2.0 * alpha * e_Pd + alpha * alpha * d_Pd;
      // Curvature at rounding level after the first step is no direction to follow to the
      // boundary (flat directions of a maximizer that is not isolated): keep the step so far.
      if (j > 0 && d_Hd <= 64 * eps * biggest * inner(delta, delta)) break;
      if (!(d_Hd > 0) || e_Pe_new >= Delta * Delta) {
        const double tau = (-e_Pd + std::sqrt(std::max(e_Pd * e_Pd + d_Pd * (Delta * Delta - e_Pe), 0.0))) / d_Pd;
        for (size_t i = 0; i < eta.v.size(); ++i) {
          eta.v[i] += tau * delta.v[i];
          Heta.v[i] += tau * Hd.v[i];
        }
        boundary = true;
        break;
      }
      e_Pe = e_Pe_new;
      for (size_t i = 0; i < eta.v.size(); ++i) {
        eta.v[i] += alpha * delta.v[i];
        Heta.v[i] += alpha * Hd.v[i];
        rr.v[i] += alpha * Hd.v[i];
      }
      const double rn = std::sqrt(inner(rr, rr));
      if (rn <= r0 * std::min(0.1, std::sqrt(r.stationarity))) break;  // superlinear, scale-free forcing term
      z = prec(rr);
      const double z_r_old = z_r;
      z_r = inner(z, rr);
      const double beta = z_r / z_r_old;
      for (size_t i = 0; i < delta.v.size(); ++i) delta.v[i] = -z.v[i] + beta * delta.v[i];
      e_Pd = beta * (e_Pd + alpha * d_Pd);
      d_Pd = z_r + beta * beta * d_Pd;
    }
    Dense Y = W;
    for (size_t i = 0; i < Y.v.size(); ++i) Y.v[i] += eta.v[i];
    Dense W_new = polar(Y);
    const double f_new = f_of(W_new);
    const double predicted = -(inner(g, eta) + 0.5 * inner(eta, Heta));
    const double actual = f - f_new;
    // Below f's rounding (|f|·u times the terms summed) a decrease cannot be measured: there
    // a step is taken when it lowers the relative gradient and raises f by no more than 16
    // roundings of |f| (Newton's quadratic finish, which f alone would stall on), and the
    // iteration ends when it does neither.
    // f's scale: |f| and the terms it is summed from (λ_max·c bounds tr(WᵀΛW)); never 1, as
    // α scales A and B (α = 10⁻⁹ makes them ~10⁻⁹).
    const double magnitude = std::abs(f) + std::abs(lambda) * static_cast<double>(c) + 2.0 * std::sqrt(inner(Bq, Bq));
    const double noise = 1e3 * eps * magnitude;
    bool accept = false;
    double stat_new = -1;
    if (predicted <= noise) {
      stat_new = stationarity(W_new, D_of(W_new));
      // A tenth off the gradient at least: smaller gains are rounding, and would run on.
      accept = stat_new < 0.9 * r.stationarity && f_new <= f + 16 * eps * magnitude;
      if (!accept) {  // a shorter step may still lower the gradient; five refusals end it
        Delta *= 0.25;
        if (++floor_failures >= 5) {
          r.converged = r.stationarity <= o.stagnation_tol;
          return;
        }
      } else {
        floor_failures = 0;
      }
    } else {
      floor_failures = 0;
      const double rho = actual / predicted;
      if (rho < 0.25) Delta *= 0.25;
      else if (rho > 0.75 && boundary) Delta = std::min(2.0 * Delta, Delta_bar);
      accept = rho > 0.1 && actual > 0;
    }
    if (accept) {
      W = std::move(W_new);
      f = f_new;
      ++r.newton_steps;
      r.stationarity = stat_new >= 0 ? stat_new : stationarity(W, D_of(W));
    }
    r.objective.push_back(J_of(f));
    r.iterations = it;
    if (r.stationarity <= o.tol) {
      r.converged = true;
      return;
    }
    if (!(Delta > 0) || Delta <= 8 * eps * std::sqrt(std::max(e_Pe, eps))) {  // no step can be measured
      r.converged = r.stationarity <= o.stagnation_tol;
      return;
    }
  }
  r.converged = r.stationarity <= o.stagnation_tol;  // o.max_iterations reached
}
}  // namespace

DistMatrix center(const DistMatrix& X) {
  Dense sum(1, X.cols);
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t j = 0; j < X.cols; ++j) sum(0, j) += X(i, j);
  allreduce_sum(sum, X.comm);
  DistMatrix Xc = X;
  const double n = static_cast<double>(X.n_global);
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t j = 0; j < X.cols; ++j) Xc(i, j) -= sum(0, j) / n;
  return Xc;
}

std::vector<double> label_weights(const std::vector<int>& labels, double mu) {
  std::vector<double> u(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) u[i] = labels[i] >= 0 ? mu : 0.0;
  return u;
}

DistMatrix centered_q(Mat S, const std::vector<double>& u, double alpha, const DistMatrix& R,
                      const solvers::SparseSolveOptions& so, std::vector<int>* iterations, bool* dense_used) {
  const std::vector<double> deg = graph::degrees(S);
  SSDR_CHECK_COLLECTIVE(R.comm, deg.size() == u.size() && static_cast<int64_t>(u.size()) == R.n_local,
                        "soge: label weights, graph and right-hand sides have different local rows");
  // K₀ = L + U + αI = diag(D + u + α) − S; right-hand sides [R, U1].
  const int64_t r = R.cols;
  DistMatrix Rw = make_dist_like(R, r + 1);
  for (int64_t i = 0; i < R.n_local; ++i) {
    std::copy(R.row(i), R.row(i) + r, Rw.row(i));
    Rw(i, r) = u[static_cast<size_t>(i)];
  }
  // The route (-soge_route auto|dense|krylov, dense_route.hpp): up to n_t = 2000 one
  // replicated Cholesky of K₀, whose CG iterations grow as α shrinks (K₀ → L + U, singular
  // on every component without a labeled sample).
  const bool dense_route = dense::dense_route(dense::route_option(so.prefix), R.n_global, so.prefix);
  if (dense_used) *dense_used = dense_route;
  DistMatrix Zd = make_dist_like(R, r + 1);  // K₀⁻¹[R, U1], this rank's rows
  if (dense_route) {
    Dense M = dense::gather_graph(S, R, "soge");  // S column-major (symmetric), the same bits everywhere
    const int64_t n = M.rows;
    const std::vector<double> D = dense::column_sums(M);
    const std::vector<double> ug = allgatherv(u, R.comm);
    Dense Rg = allgather(Rw);  // n×(r+1)
    for (int64_t j = 0; j < n; ++j) {  // lower triangle of K₀ = diag(D + u + α) − S
      double* m = M.col(j);
      for (int64_t i = j; i < n; ++i) m[i] = -m[i];
      m[j] += D[static_cast<size_t>(j)] + ug[static_cast<size_t>(j)] + alpha;
    }
    if (n > 0) lapack::posv(n, r + 1, M.data(), n, Rg.data(), n);
    for (int64_t i = 0; i < R.n_local; ++i)
      for (int64_t j = 0; j <= r; ++j) Zd(i, j) = Rg(R.row_start + i, j);
    if (iterations) iterations->assign(static_cast<size_t>(r + 1), 0);
  } else {
    std::vector<double> a(deg.size()), minus_one(deg.size(), -1.0);
    for (size_t i = 0; i < deg.size(); ++i) a[i] = deg[i] + u[i] + alpha;
    Owned<Mat> K0 = graph::diagonal_plus_scaled(S, a, minus_one);
    solvers::SparseSolveResult z = solvers::solve_columns(K0, Rw, so);
    if (iterations) *iterations = z.iterations;
    Zd = std::move(z.Z);
  }
  // Column sums 1ᵀK₀⁻¹r_j and 1ᵀw.
  Dense sums(1, r + 1);
  for (int64_t i = 0; i < Zd.n_local; ++i)
    for (int64_t j = 0; j <= r; ++j) sums(0, j) += Zd(i, j);
  allreduce_sum(sums, R.comm);
  const double one_w = sums(0, r);
  SSDR_REQUIRE(one_w > 0, "soge: 1'K0^-1 U 1 = " + std::to_string(one_w) +
                              " is not positive (no labeled sample, or mu <= 0)");
  // (R1): H_c Q r = K₀⁻¹r − w (1ᵀK₀⁻¹r)/(1ᵀw).
  DistMatrix out = make_dist_like(R, r);  // every entry set below
  for (int64_t i = 0; i < R.n_local; ++i) {
    const double wi = Zd(i, r);
    for (int64_t j = 0; j < r; ++j) out(i, j) = Zd(i, j) - wi * sums(0, j) / one_w;
  }
  return out;
}

Operators operators(const DistMatrix& Xc, Mat S, const std::vector<int>& labels, int classes,
                    double alpha, double mu, const solvers::SparseSolveOptions& so) {
  const int64_t d = Xc.cols, c = classes;
  SSDR_CHECK_COLLECTIVE(Xc.comm, static_cast<int64_t>(labels.size()) == Xc.n_local,
                        "soge: one label per local row expected");
  const std::vector<double> u = label_weights(labels, mu);
  const std::vector<double> deg = graph::degrees(S);
  // Right-hand sides [(L+U)X_cᵀ, UY] (n × (d + c)): (L+U)x = (D + U)x − Sx.
  DistMatrix R = make_dist_like(Xc, d + c);
  {
    Owned<Vec> x, y;
    SSDR_PETSC(MatCreateVecs(S, x.out(), y.out()));
    for (int64_t j = 0; j < d; ++j) {
      PetscScalar* px = nullptr;
      SSDR_PETSC(VecGetArray(x, &px));
      for (int64_t i = 0; i < Xc.n_local; ++i) px[i] = Xc(i, j);
      SSDR_PETSC(VecRestoreArray(x, &px));
      SSDR_PETSC(MatMult(S, x, y));
      const PetscScalar* py = nullptr;
      SSDR_PETSC(VecGetArrayRead(y, &py));
      for (int64_t i = 0; i < Xc.n_local; ++i) {
        const size_t li = static_cast<size_t>(i);
        R(i, j) = (deg[li] + u[li]) * Xc(i, j) - py[i];
      }
      SSDR_PETSC(VecRestoreArrayRead(y, &py));
    }
  }
  for (int64_t i = 0; i < Xc.n_local; ++i) {
    const int k = labels[static_cast<size_t>(i)];
    SSDR_CHECK(k < classes, "soge: label " + std::to_string(k) + " >= number of classes");
    if (k >= 0) R(i, d + k) = mu;
  }
  Operators op;
  DistMatrix Z = centered_q(S, u, alpha, R, so, &op.iterations, &op.dense);
  // A = α X_c (H_c Q (L+U) X_cᵀ) (R2), B = α X_c (H_c Q U Y) (12): local d×n_local GEMMs.
  // In LAPACK terms the local block of Xc is d×n_local (ld d), that of Z (d+c)×n_local.
  op.A = Dense(d, d);
  op.B = Dense(d, c);
  const int64_t ldz = d + c;
  if (Xc.n_local > 0) {
    blas::gemm('N', 'T', d, d, Xc.n_local, alpha, Xc.v.data(), d, Z.v.data(), ldz, 0.0, op.A.data(), d);
    blas::gemm('N', 'T', d, c, Xc.n_local, alpha, Xc.v.data(), d, Z.v.data() + d, ldz, 0.0, op.B.data(), d);
  }
  allreduce_sum(op.A, Xc.comm);
  allreduce_sum(op.B, Xc.comm);
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < i; ++j) op.A(i, j) = op.A(j, i) = 0.5 * (op.A(i, j) + op.A(j, i));
  broadcast(op.A, Xc.comm);
  broadcast(op.B, Xc.comm);
  return op;
}

std::shared_ptr<solvers::BlockLanczos> operators_lanczos_start(const DistMatrix& Xc, Mat S,
                                                               const std::vector<int>& labels, int classes, double mu) {
  const int64_t d = Xc.cols, c = classes;
  SSDR_CHECK_COLLECTIVE(Xc.comm, static_cast<int64_t>(labels.size()) == Xc.n_local,
                        "soge: one label per local row expected");
  const std::vector<double> u = label_weights(labels, mu);
  std::vector<double> h = graph::degrees(S);
  SSDR_CHECK_COLLECTIVE(Xc.comm, h.size() == u.size(), "soge: label weights and graph have different local rows");
  for (size_t i = 0; i < h.size(); ++i) h[i] += u[i];  // H = L + U = diag(D + u) − S
  SSDR_CHECK_COLLECTIVE(Xc.comm, std::all_of(labels.begin(), labels.end(), [&](int k) { return k < classes; }),
                        "soge: a label is >= the number of classes " + std::to_string(classes));
  DistMatrix V = make_dist_like(Xc, d + c);
  for (int64_t i = 0; i < Xc.n_local; ++i) {
    std::copy(Xc.row(i), Xc.row(i) + d, V.row(i));
    const int k = labels[static_cast<size_t>(i)];
    if (k >= 0) V(i, d + k) = mu;
  }
  solvers::BlockLanczosOptions o;
  o.prefix = "soge_";
  o.unit_columns = true;  // UY's columns (μ·√l_k) against X_c's
  return std::make_shared<solvers::BlockLanczos>(S, std::move(h), V, o);
}

std::optional<Operators> operators_lanczos(solvers::BlockLanczos& lanczos, const DistMatrix& Xc, Mat S,
                                           const std::vector<int>& labels, int classes, double alpha, double mu,
                                           const solvers::SparseSolveOptions& so, int* steps, int* new_steps) {
  const int64_t d = Xc.cols, c = classes;
  SSDR_CHECK(lanczos.width() == d + c, "soge: the recurrence's block is not [X_c, UY]");
  const int before = lanczos.steps();
  // Both forms at once: they share the forward block LU of αI + T_k.
  const auto both = lanczos.forms({solvers::QuadratureForm::resolvent, solvers::QuadratureForm::smoothed}, alpha, 1.0);
  const std::optional<solvers::QuadratureResult>&fr = both[0], &fs = both[1];
  if (!fr || !fs) return std::nullopt;
  if (steps) *steps = std::max(fr->steps, fs->steps);
  if (new_steps) *new_steps = lanczos.steps() - before;
  // X_cᵀw with w = K₀⁻¹U1 = Σ_k K₀⁻¹(UY)_k. It is also 1ᵀK₀⁻¹HX_c: H1 = U1 and H commutes
  // with K₀⁻¹, so (K₀⁻¹1)ᵀH = (K₀⁻¹U1)ᵀ = wᵀ; A's correction is the symmetric xw·xwᵀ/1ᵀw.
  std::vector<double> xw(static_cast<size_t>(d), 0.0);
  for (int64_t k = 0; k < c; ++k)
    for (int64_t i = 0; i < d; ++i) xw[static_cast<size_t>(i)] += fr->form(i, d + k);
  // z = K₀⁻¹1 (one CG solve) for 1ᵀK₀⁻¹UY = zᵀUY and 1ᵀw = zᵀU1. (1 is not in the block: H1
  // = U1 lies in span(UY), which would make the recurrence's next block rank deficient; and
  // z = (1 − w)/α would cancel as α → 0, where w → 1.)
  const std::vector<double> u = label_weights(labels, mu);
  const std::vector<double> deg = graph::degrees(S);
  std::vector<double> a(deg.size()), minus_one(deg.size(), -1.0);
  for (size_t i = 0; i < deg.size(); ++i) a[i] = deg[i] + u[i] + alpha;
  Owned<Mat> K0 = graph::diagonal_plus_scaled(S, a, minus_one);
  DistMatrix ones = make_dist_like(Xc, 1);
  std::fill(ones.v.begin(), ones.v.end(), 1.0);
  const solvers::SparseSolveResult zr = solvers::solve_columns(K0, ones, so);
  Dense t(1, c + 1);  // zᵀUY, zᵀu
  for (int64_t i = 0; i < Xc.n_local; ++i) {
    const size_t li = static_cast<size_t>(i);
    const int k = labels[li];
    if (k >= 0) t(0, k) += mu * zr.Z(i, 0);
    t(0, c) += u[li] * zr.Z(i, 0);
  }
  allreduce_sum(t, Xc.comm);
  broadcast(t, Xc.comm);  // every rank the same bits (its sum order may differ)
  const double one_w = t(0, c);
  SSDR_REQUIRE(one_w > 0, "soge: 1'K0^-1 U 1 = " + std::to_string(one_w) +
                              " is not positive (no labeled sample, or mu <= 0)");
  Operators op;
  op.iterations = zr.iterations;
  op.A = Dense(d, d);
  op.B = Dense(d, c);
  for (int64_t j = 0; j < d; ++j)
    for (int64_t i = 0; i < d; ++i)
      op.A(i, j) = alpha * (fs->form(i, j) - xw[static_cast<size_t>(i)] * xw[static_cast<size_t>(j)] / one_w);
  for (int64_t k = 0; k < c; ++k)
    for (int64_t i = 0; i < d; ++i)
      op.B(i, k) = alpha * (fr->form(i, d + k) - xw[static_cast<size_t>(i)] * t(0, k) / one_w);
  return op;
}

double objective13(const Dense& A, const Dense& B, double lambda_max, const Dense& W) {
  const Dense AW = mul(A, W);
  return lambda_max * static_cast<double>(W.cols) - inner(W, AW) + 2.0 * inner(W, B);
}

/// ‖D − W sym(WᵀD)‖_F / ‖D‖_F: zero exactly at a fixed point of (15) (the Riemannian
/// gradient of (13) on the Stiefel manifold, relative). Local.
double stationarity(const Dense& W, const Dense& D) {
  const int64_t c = W.cols;
  const Dense WtD = mul(W, D, 'T', 'N');
  Dense S(c, c);
  for (int64_t i = 0; i < c; ++i)
    for (int64_t j = 0; j < c; ++j) S(i, j) = 0.5 * (WtD(i, j) + WtD(j, i));
  const Dense WS = mul(W, S);
  double num = 0, den = 0;
  for (size_t i = 0; i < D.v.size(); ++i) {
    num += (D.v[i] - WS.v[i]) * (D.v[i] - WS.v[i]);
    den += D.v[i] * D.v[i];
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

StiefelResult maximize_on_stiefel(const Dense& A, const Dense& B, const StiefelOptions& o, MPI_Comm comm) {
  const int64_t d = A.rows, c = B.cols;
  SSDR_CHECK(A.cols == d && B.rows == d, shape_message("soge: A vs B rows", A.rows, A.cols, B.rows, B.cols));
  SSDR_CHECK(c >= 1 && c <= d, "soge: c = " + std::to_string(c) + " columns need 1 <= c <= d = " + std::to_string(d));
  StiefelResult r;
  r.lambda_max = solvers::sym_eigen(A, nullptr, 1, solvers::Which::largest, o.eigen_prefix, comm).values.at(0);
  const double lambda = r.lambda_max;
  // J(W) and D(W) = (λI − A)W + B share AW.
  auto evaluate = [&](const Dense& W, Dense* D) {
    Dense AW = mul(A, W);
    const double J = lambda * static_cast<double>(c) - inner(W, AW) + 2.0 * inner(W, B);
    if (D) {
      *D = B;
      for (size_t i = 0; i < D->v.size(); ++i) D->v[i] += lambda * W.v[i] - AW.v[i];
    }
    return J;
  };
  Dense W = start(A, B), D;
  double J = evaluate(W, &D);
  r.objective.push_back(J);
  if (o.newton) {
    // Riemannian trust regions in the eigenbasis of A = QΛQᵀ (LAPACK, the same bits on every
    // rank): (13) and the constraint are invariant under W ↦ QᵀW, and there AW costs O(dc).
    Dense Q = A;
    std::vector<double> lam(static_cast<size_t>(d));
    lapack::syev(d, Q.data(), d, lam.data());
    Dense Wq = mul(Q, W, 'T', 'N');
    trust_region(lam, mul(Q, B, 'T', 'N'), lambda, o, Wq, r);
    W = mul(Q, Wq);
    // The stationarity reported is the returned W's, in A's own basis.
    const Dense AW = mul(A, W);
    Dense DW = B;
    for (size_t i = 0; i < DW.v.size(); ++i) DW.v[i] += lambda * W.v[i] - AW.v[i];
    r.stationarity = stationarity(W, DW);
    r.W = std::move(W);
    return r;
  }
  double beta = 0.5;  // extrapolation weight, adapted
  for (int it = 1; it <= o.max_iterations; ++it) {
    // Algorithm 1 step, eq. (14)–(15).
    Dense W1 = polar(D), D1;
    double J1 = evaluate(W1, &D1);
    if (o.extrapolate) {
      Dense E = W1;
      for (size_t i = 0; i < E.v.size(); ++i) E.v[i] += beta * (W1.v[i] - W.v[i]);
      Dense W2 = polar(E), D2;
      const double J2 = evaluate(W2, &D2);
      if (J2 > J1) {
        W1 = std::move(W2);
        D1 = std::move(D2);
        J1 = J2;
        ++r.extrapolated;
        beta = std::min(2.0 * beta, 64.0);
      } else {
        beta = std::max(0.5 * beta, 0.5);
      }
    }
    const double increase = J1 - J;
    W = std::move(W1);
    D = std::move(D1);
    J = J1;
    r.objective.push_back(J);
    r.iterations = it;
    // Stop on stationarity (the gradient's size, which bounds W's distance to the
    // maximizer), not on the objective's change: (13) is flat near its maximum, so a change
    // of 1e-10 leaves W wrong by ~1e-5, and by an amount that depends on rounding (CPU, rank
    // count). Also stop when (13) no longer grows by more than its rounding (2ε|J|): W is
    // then as accurate as double precision allows.
    r.stationarity = stationarity(W, D);
    if (r.stationarity <= o.tol) {
      r.converged = true;
      break;
    }
    if (increase <= 2.0 * std::numeric_limits<double>::epsilon() * std::max(std::abs(J), 1e-300)) {
      r.converged = r.stationarity <= o.stagnation_tol;
      break;
    }
  }
  if (o.max_iterations < 1 || r.iterations == 0) r.stationarity = stationarity(W, D);
  r.W = std::move(W);
  return r;
}

Recursion recursive_projections(const Dense& A, const Dense& B, int K, const StiefelOptions& o, MPI_Comm comm) {
  const int64_t d = A.rows, c = B.cols;
  SSDR_REQUIRE(K >= 1 && K * c <= d, "soge: --recursions " + std::to_string(K) + " needs K*c = " +
                                         std::to_string(K * c) + " <= d' = " + std::to_string(d) +
                                         " dimensions after preprocessing");
  Recursion out;
  out.W = Dense(d, K * c);
  Dense fold = Dense::identity(d);   // P_1 ⋯ P_{k−1}
  Dense learned(d, 0);               // [W_1, …, W_{k−1}]
  for (int k = 0; k < K; ++k) {
    Dense V;  // orthonormal basis of range(I − learned·learnedᵀ), d × (d − kc)
    if (k == 0) {
      V = Dense::identity(d);
    } else {
      Dense P = mul(learned, learned, 'N', 'T');
      for (auto& x : P.v) x = -x;
      for (int64_t i = 0; i < d; ++i) P(i, i) += 1.0;
      std::vector<double> ev(static_cast<size_t>(d));
      lapack::syev(d, P.data(), d, ev.data());  // ascending: k·c zeros, then ones
      const int64_t keep = d - k * c;
      V = Dense(d, keep);
      std::copy(P.v.begin() + (d - keep) * d, P.v.end(), V.v.begin());
    }
    const Dense Ak = mul(V, mul(A, V), 'T', 'N');  // Vᵀ(PAP)V = VᵀAV
    const Dense Bk = mul(V, B, 'T', 'N');          // Vᵀ(PB) = VᵀB
    StiefelResult r = maximize_on_stiefel(Ak, Bk, o, comm);
    Dense Wk = mul(V, r.W);
    const Dense block = mul(fold, Wk);  // the k-th block acts on X̃_k = P_{k−1}⋯P_1 X
    std::copy(block.v.begin(), block.v.end(), out.W.v.begin() + k * c * d);
    // fold ← fold·(I − W_kW_kᵀ); learned ← [learned, W_k].
    const Dense FW = mul(fold, Wk);
    const Dense FWWt = mul(FW, Wk, 'N', 'T');
    for (size_t i = 0; i < fold.v.size(); ++i) fold.v[i] -= FWWt.v[i];
    Dense grown(d, (k + 1) * c);
    std::copy(learned.v.begin(), learned.v.end(), grown.v.begin());
    std::copy(Wk.v.begin(), Wk.v.end(), grown.v.begin() + k * c * d);
    learned = std::move(grown);
    out.blocks.push_back(std::move(Wk));
    out.results.push_back(std::move(r));
  }
  return out;
}

}  // namespace soge

namespace {

/// Reads -<prefix>stiefel_tol, _max_it, _extrapolate and _newton into st through
/// PetscOptionsBegin/End, so `-help` lists them with their defaults. Collective over comm.
PetscErrorCode stiefel_options_from_petsc(MPI_Comm comm, const char* prefix, soge::StiefelOptions& st) {
  PetscReal tol = st.tol;
  PetscInt max_it = st.max_iterations;
  PetscBool extrapolate = st.extrapolate ? PETSC_TRUE : PETSC_FALSE, newton = st.newton ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionBeginUser;
  PetscOptionsBegin(comm, prefix, "SOGE Stiefel iteration (soge-liu2017 Algorithm 1)", "SOGE");
  PetscCall(PetscOptionsReal("-stiefel_tol", "stop at this relative Riemannian gradient norm", "", tol, &tol, nullptr));
  PetscCall(PetscOptionsInt("-stiefel_max_it", "maximum number of iterations", "", max_it, &max_it, nullptr));
  PetscCall(PetscOptionsBool("-stiefel_extrapolate", "without -stiefel_newton: try an extrapolated step when it beats the plain one", "",
                             extrapolate, &extrapolate, nullptr));
  PetscCall(PetscOptionsBool("-stiefel_newton", "Riemannian trust regions (preconditioned Newton); false: the paper's Algorithm 1", "", newton,
                             &newton, nullptr));
  PetscOptionsEnd();
  st.tol = tol;
  st.max_iterations = static_cast<int>(max_it);
  st.extrapolate = extrapolate == PETSC_TRUE;
  st.newton = newton == PETSC_TRUE;
  PetscFunctionReturn(0);
}

class Soge final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings& t) override {
    const int c = data.classes;
    const int64_t d = data.X.cols;
    const double alpha = or_default(o.alpha, 1.0);  // paper grid {1e-9, …, 1e9}; Table 1 mostly 10⁰
    const double mu = o.own_number("mu", 100.0);      // §5.2: μ = 100 on every data set
    const bool recursions_given = o.own.contains("recursions");
    const int K = static_cast<int>(o.own_number("recursions", 1));  // Algorithm 1 with one block by default
    SSDR_REQUIRE(K >= 1, "--recursions must be >= 1");
    SSDR_REQUIRE(std::isfinite(alpha) && alpha > 0, "--alpha must be positive for soge (paper grid 1e-9 ... 1e9)");
    SSDR_REQUIRE(std::isfinite(mu) && mu > 0, "--mu must be positive for soge (paper: 100)");
    SSDR_REQUIRE(o.dim == 0 || o.dim == static_cast<int64_t>(K) * c,
                 "--dim does not apply to soge: its dimension is K*c = " + std::to_string(K * c) +
                     " (c = " + std::to_string(c) + " classes, --recursions K = " + std::to_string(K) + ")");
    // Fewer features than classes (d' < c, with the default one recursion): W ∈ R^{d'×c} cannot
    // have orthonormal columns, so the samples are taken in R^c with c − d' zero features (the
    // same graph, Laplacian and soft labels; A and B of (11)–(12) gain zero rows and columns).
    // The rows of W on those features multiply zeros: the model keeps the first d' rows, and
    // Wᵀx is the padded problem's embedding exactly.
    const int64_t padded = !recursions_given && c > d ? c - d : 0;
    SSDR_REQUIRE(static_cast<int64_t>(K) * c <= d + padded,
                 "soge: --recursions " + std::to_string(K) + " gives K*c = " + std::to_string(K * c) +
                     " dimensions, more than the d' = " + std::to_string(d) + " left after preprocessing");

    const graph::GraphOptions go = method_graph(row, o);
    graph::Graph g = knn_graph(data, go, t);
    solvers::SparseSolveOptions so;
    so.prefix = "soge_";
    so.ksp_type = "cg";
    soge::Operators op;
    nlohmann::json lanczos_info = nlohmann::json::object();
    double t_ops = 0, t_stiefel = 0;
    {
      Phase phase("scatter", &t);  // the operators A, B of eq. (11)–(12)
      // In a sweep (data.cache) on the Krylov route: one block Lanczos recurrence on L + U
      // serves every α (kept in the cache under the graph, the rows and μ); CG per α
      // otherwise (a single fit, -soge_ksp_* given, or a broken-down recurrence).
      std::optional<soge::Operators> lz_op;
      const bool krylov = !dense::dense_route(dense::route_option(so.prefix), data.X.n_global, so.prefix);
      const int64_t width = d + c;
      if (data.cache != nullptr && krylov && solvers::column_route(so) == solvers::SparseSolveRoute::lockstep) {
        if (solvers::BlockLanczos::fits(data.X.comm, data.X.n_local, width, so.memory_mib)) {
          char block[64];
          std::snprintf(block, sizeof block, "soge mu %a", mu);
          const QuadratureKey key = quadrature_key(resolved_graph_key(data, go), data.features, block, width);
          std::shared_ptr<solvers::BlockLanczos> lz = block_lanczos(data, key, [&] {
            return soge::operators_lanczos_start(soge::center(data.X.doubles()), g.A, data.labels, c, mu);
          });
          int steps = 0, new_steps = 0;
          lz_op = soge::operators_lanczos(*lz, soge::center(data.X.doubles()), g.A, data.labels, c, alpha, mu, so,
                                          &steps, &new_steps);
          if (lz_op) {
            lanczos_info["krylov_method"] = "block_lanczos";
            lanczos_info["lanczos_steps"] = steps;
            lanczos_info["lanczos_new_steps"] = new_steps;
          } else {
            lanczos_info["lanczos_breakdown"] = lz->why();
          }
        }
      }
      if (lz_op)
        op = std::move(*lz_op);
      else
        op = soge::operators(soge::center(data.X.doubles()), g.A, data.labels, c, alpha, mu, so);
      if (padded > 0) {
        Dense A(d + padded, d + padded), B(d + padded, op.B.cols);
        for (int64_t j = 0; j < d; ++j) std::copy_n(op.A.col(j), d, A.col(j));
        for (int64_t j = 0; j < op.B.cols; ++j) std::copy_n(op.B.col(j), d, B.col(j));
        op.A = std::move(A);
        op.B = std::move(B);
      }
      t_ops = phase.stop();
    }
    soge::StiefelOptions st;
    st.eigen_prefix = o.eigen_prefix;
    // PETSc options database overrides: -soge_stiefel_tol, -soge_stiefel_max_it,
    // -soge_stiefel_extrapolate, -soge_stiefel_newton (registered, so -help lists them).
    // Their values checked first (one line naming the option, not PETSc's source text).
    {
      double tol = st.tol;
      int64_t max_it = st.max_iterations;
      bool flag = false;
      petsc_option_real(so.prefix, "-stiefel_tol", tol);
      petsc_option_int(so.prefix, "-stiefel_max_it", max_it);
      petsc_option_bool(so.prefix, "-stiefel_extrapolate", flag);
      petsc_option_bool(so.prefix, "-stiefel_newton", flag);
      SSDR_REQUIRE(max_it >= 1 && max_it <= 1000000000,
                   "-" + so.prefix + "stiefel_max_it must be in [1, 10^9], got " + std::to_string(max_it));
    }
    SSDR_PETSC(stiefel_options_from_petsc(data.X.comm, so.prefix.c_str(), st));
    SSDR_REQUIRE(st.tol >= 0 && st.max_iterations >= 1, "-soge_stiefel_tol must be >= 0 and -soge_stiefel_max_it >= 1");
    soge::Recursion rec;
    {
      Phase phase("eigensolve", &t);  // Algorithm 1 per recursion
      rec = soge::recursive_projections(op.A, op.B, K, st, data.X.comm);
      t_stiefel = phase.stop();
    }

    FitResult out;
    out.W = Dense(d, rec.W.cols);  // without the padded features' rows
    for (int64_t j = 0; j < rec.W.cols; ++j) std::copy_n(rec.W.col(j), d, out.W.col(j));
    auto& info = out.info;
    if (padded > 0) info["padded_features"] = padded;
    info["alpha"] = alpha;
    info["mu"] = mu;
    info["recursions"] = K;
    info["dim"] = K * c;
    info["preprocessing_note"] = "paper default: global scaling to unit mean squared norm, PCA 95% energy";
    graph_info(g, go, info);
    info["ksp_prefix"] = so.prefix;
    info["ksp_iterations_total"] = std::accumulate(op.iterations.begin(), op.iterations.end(), 0L);
    info["ksp_iterations_max"] = op.iterations.empty() ? 0 : *std::max_element(op.iterations.begin(), op.iterations.end());
    info["right_hand_sides"] = op.iterations.size();
    info["solver_route"] = op.dense ? "dense" : "krylov";
    if (!op.dense) info["cg_route"] = solvers::route_name(solvers::column_route(so));  // lockstep or ksp
    if (!op.dense) info["krylov_method"] = "cg";
    for (const auto& [k, v] : lanczos_info.items()) info[k] = v;
    info["solver_route_crossover"] = dense::kDenseRouteMaxSamples;
    info["seconds_operators"] = t_ops;
    info["seconds_stiefel"] = t_stiefel;
    info["tolerance"] = st.tol;
    info["max_iterations"] = st.max_iterations;
    info["extrapolate"] = st.extrapolate;
    info["newton"] = st.newton;
    nlohmann::json blocks = nlohmann::json::array();
    for (const auto& r : rec.results) {
      blocks.push_back({{"lambda_max", r.lambda_max},
                        {"iterations", r.iterations},
                        {"converged", r.converged},
                        {"objective13", r.objective.back()},
                        {"objective13_start", r.objective.front()},
                        {"objective10", static_cast<double>(r.W.cols) * r.lambda_max - r.objective.back()},
                        {"stationarity", r.stationarity},
                        {"extrapolated_steps", r.extrapolated},
                        {"newton_steps", r.newton_steps}});
    }
    info["recursion"] = blocks;
    info["iterations"] = rec.results.front().iterations;
    info["objective"] = rec.results.front().objective.back();
    return out;
  }
};

/// soge-liu2017 §5.2 builds L by the constrained Laplacian rank method (Nie et al. 2016):
/// its adaptive-neighbours graph, k = 5 (the default of the CLR authors' constructW_PKN;
/// neither paper states k), refined until L has exactly c zero eigenvalues (weight clr, c =
/// the number of classes). --weight adaptive keeps the closed-form graph without the rank
/// constraint.
graph::GraphOptions soge_graph() {
  graph::GraphOptions g;
  g.k = 5;
  g.weight = graph::EdgeWeight::clr;
  return g;
}

data::PreprocessOptions soge_preprocess() {
  data::PreprocessOptions p;
  p.scaling = data::Scaling::global_unit;  // SOGE is not scale-invariant (soge-liu2017)
  p.pca_energy = 0.95;
  return p;
}

}  // namespace
}  // namespace ssdr::methods

/// soge-liu2017: SOGE with its recursive projections.
SSDR_METHOD_FAMILY(soge) {
  using namespace ssdr::methods;
  return {40,
          {
              MethodRow("soge", "semi-supervised orthogonal graph embedding with recursive projections",
                        "soge-liu2017 eq. (7)-(13), Algorithm 1; CLR rank-constrained graph (Nie et al. 2016)", true,
                        true, &make_method<Soge>)
                  .parameters({"knn", "weight", "sigma_s", "alpha", "mu", "recursions"}).graph(soge_graph())
                  .preprocess(soge_preprocess()).row(),
          },
          {
              family_number("mu", "mu", "SOGE: weight of the labeled samples in U (soge-liu2017 eq. (6), sec. 5.2: 100)",
                            ParameterKind::real, 0, false, std::numeric_limits<double>::infinity(), false, "default"),
              family_number("recursions", "K", "SOGE: recursive projections (soge-liu2017 Algorithm 1; W is d x Kc)",
                            ParameterKind::integer, 1, false, 1e4, false, 1),
          }};
}
