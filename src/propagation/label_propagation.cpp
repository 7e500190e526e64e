// Label propagation with the outlier class (soda-nie2009 eq. (24)-(27)): the symmetric system
// S F_f = B_f on the free rows, solved for the c class columns by conjugate-gradient
// recurrences advanced together over one product of the graph with the n×c block per
// iteration (the outlier class's column is 1 − their sum: F·1 = 1 on free rows), or
// PETSc's KSP one column at a time (on S, or on the original M = I − I_α D⁻¹A).
#include "ssdr/propagation/label_propagation.hpp"

#include <petscksp.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/dense.hpp"
#include "ssdr/core/ordered_sum.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "block_product.hpp"
#include "width_dispatch.hpp"

namespace ssdr::propagation {

namespace {

/// A PETSc log event of the block CG, registered on first use (PetscLogEventRegister returns
/// the existing id for a known name): LPBlockProduct (the graph times the n×c block of the class columns, one
/// per iteration plus one for the right-hand side), LPBlockVector (the recurrences' passes
/// over the block with their reductions).
PetscLogEvent log_event(const char* name) {
  PetscLogEvent ev = 0;
  SSDR_PETSC(PetscLogEventRegister(name, MAT_CLASSID, &ev));
  return ev;
}

/// Logs the enclosing scope as event `ev` (-log_view). Not collective.
struct LogScope {
  PetscLogEvent ev;
  explicit LogScope(PetscLogEvent e) : ev(e) { PetscLogEventBegin(ev, 0, 0, 0, 0); }
  ~LogScope() { PetscLogEventEnd(ev, 0, 0, 0, 0); }
};

/// Whether A is exactly symmetric (the flag its builder set, else MatIsSymmetric with
/// tolerance 0, one transpose) with non-negative entries, on every rank. Collective.
bool symmetric_nonnegative(Mat A, MPI_Comm comm) {
  PetscBool set = PETSC_FALSE, sym = PETSC_FALSE;
  SSDR_PETSC(MatIsSymmetricKnown(A, &set, &sym));
  if (!set) SSDR_PETSC(MatIsSymmetric(A, 0.0, &sym));
  if (!sym) return false;
  PetscInt start = 0, end = 0;
  SSDR_PETSC(MatGetOwnershipRange(A, &start, &end));
  int ok = 1;
  for (PetscInt r = start; r < end && ok; ++r) {
    PetscInt nz = 0;
    const PetscScalar* v = nullptr;
    SSDR_PETSC(MatGetRow(A, r, &nz, nullptr, &v));
    for (PetscInt t = 0; t < nz; ++t) ok = ok && v[t] >= 0;
    SSDR_PETSC(MatRestoreRow(A, r, &nz, nullptr, &v));
  }
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  return ok == 1;
}

/// The system's pieces for the local rows (m = c + 1 columns, row-major n_local×m blocks).
/// Row i of M F = I_β Y reads F_i − (α_i/D_ii) Σ_j A_ij F_j = β_i Y_i. Where α_i = 0 (the
/// paper's labeled samples) or D_ii = 0 (M's row is the identity) it fixes F_i = β_i Y_i:
/// a known row. Every other row is free; multiplied by D_ii/α_i it becomes
///   (D_ii/α_i) F_i − Σ_{j free} A_ij F_j = (D_ii β_i/α_i) Y_i + Σ_{j known} A_ij F_j,
/// i.e. S F_f = B_f with S = diag(D/α)_ff − A_ff, symmetric when A is, and strictly
/// diagonally dominant (Σ_j A_ij ≤ D_ii < D_ii/α_i) with a positive diagonal: SPD.
struct System {
  int64_t n_local = 0, m = 0;
  std::vector<char> known;      ///< per local row
  std::vector<double> scale;    ///< D_ii/α_i on free rows, 0 on known rows
  std::vector<double> dinv;     ///< 1/S_ii = 1/(D_ii/α_i − A_ii) on free rows, 0 on known rows
  /// Row i of the right-hand side I_β Y of M F = I_β Y is β_i e_{target_i}: one value per
  /// row, not m (at 5·10⁶ rows per rank the dense n_local×m block would be 0.46 GB).
  std::vector<int> target;      ///< the label, or c (the outlier class) when unlabeled
  std::vector<double> beta;     ///< β_i = 1 − α_i
  /// (I_β Y)_ik.
  double beta_y(int64_t i, int64_t k) const {
    const size_t li = static_cast<size_t>(i);
    return k == target[li] ? beta[li] : 0.0;
  }
};

/// I_β Y as a dense n_local×m row-major block (the per-column KSP routes' right-hand sides).
std::vector<double> dense_beta_y(const System& s) {
  std::vector<double> out(static_cast<size_t>(s.n_local * s.m), 0.0);
  for (int64_t i = 0; i < s.n_local; ++i)
    out[static_cast<size_t>(i * s.m + s.target[static_cast<size_t>(i)])] = s.beta[static_cast<size_t>(i)];
  return out;
}

/// (D_ii/α_i)(I_β Y)_ik: row i's right-hand side of S F_f = B_f before the known rows'
/// term (0 on known rows, whose scale is 0). Local.
inline double scale_beta_y(const System& s, int64_t i, int64_t k) {
  return s.scale[static_cast<size_t>(i)] * s.beta_y(i, k);
}

System make_system(Mat A, const std::vector<int>& labels, int classes, const PropagationOptions& o) {
  System s;
  s.n_local = static_cast<int64_t>(labels.size());
  s.m = classes + 1;
  const std::vector<double> degree = graph::degrees(A);
  Owned<Vec> diag;
  SSDR_PETSC(MatCreateVecs(A, nullptr, diag.out()));
  SSDR_PETSC(MatGetDiagonal(A, diag));
  const PetscScalar* a = nullptr;
  SSDR_PETSC(VecGetArrayRead(diag, &a));
  s.known.assign(static_cast<size_t>(s.n_local), 0);
  s.scale.assign(static_cast<size_t>(s.n_local), 0.0);
  s.dinv.assign(static_cast<size_t>(s.n_local), 0.0);
  s.target.assign(static_cast<size_t>(s.n_local), classes);
  s.beta.assign(static_cast<size_t>(s.n_local), 0.0);
  for (int64_t i = 0; i < s.n_local; ++i) {
    const size_t li = static_cast<size_t>(i);
    const int l = labels[li];
    const double alpha = l >= 0 ? o.alpha_labeled : o.alpha_unlabeled;
    const int target = l >= 0 ? l : classes;  // unlabeled: the outlier class c+1
    s.target[li] = target;
    s.beta[li] = 1.0 - alpha;
    if (alpha == 0 || !(degree[li] > 0)) {
      s.known[li] = 1;
    } else {
      s.scale[li] = degree[li] / alpha;
      s.dinv[li] = 1.0 / (s.scale[li] - a[i]);
    }
  }
  SSDR_PETSC(VecRestoreArrayRead(diag, &a));
  return s;
}

/// The KSP tolerances the block CG honours (-<prefix>ksp_rtol, _atol, _divtol, _max_it).
struct Tolerances {
  PetscReal rtol = 0, atol = 0, dtol = 0;
  PetscInt max_it = 0;
};

/// The error of a solve that did not converge. Its advice names only what is not already in
/// effect: GMRES when another Krylov method ran, point Jacobi when another preconditioner
/// did, then a larger iteration budget (above the one in effect) and a smaller α_u. The block
/// CG is CG with point Jacobi (the defaults). Replicated (every rank has the same scalars).
[[noreturn]] void not_converged(const PropagationOptions& o, const std::string& why, const Tolerances& tol,
                                const std::string& ksp_type = KSPCG, const std::string& pc_type = PCJACOBI) {
  std::string advice;
  auto add = [&](const std::string& a) { advice += (advice.empty() ? "" : ", ") + a; };
  if (ksp_type != KSPGMRES && pc_type != PCJACOBI)
    add("-" + o.prefix + "ksp_type gmres -" + o.prefix + "pc_type jacobi");
  else if (ksp_type != KSPGMRES)
    add("-" + o.prefix + "ksp_type gmres");
  else if (pc_type != PCJACOBI)
    add("-" + o.prefix + "pc_type jacobi");
  add("a -" + o.prefix + "ksp_max_it above " + std::to_string(static_cast<long long>(tol.max_it)));
  if (o.alpha_unlabeled > 0) {
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%.10g", o.alpha_unlabeled);
    advice += std::string(" or an --alpha-u below ") + alpha;
  }
  // Every rank reaches this with the same replicated scalars: a collective error.
  throw Error("label propagation: " + why + " (options prefix -" + o.prefix + "); try " + advice, __FILE__,
              __LINE__, true);
}

#if defined(__SSE2__)
/// cg_columns' r pass in float on local rows i0 ≤ i < i1 (ChunkedColumnSums::fold_ranges):
/// r −= α((D/α)_S p − q), then ρ_k += w_i·(r·z) and ‖z_k‖² += z·z with z = D_S⁻¹r, onto acc
/// (ρ in acc[0, MW), ‖z‖² in acc[MW, 2MW)), known rows skipped (their terms are +0, and
/// sums of terms ≥ +0 are never −0). The arithmetic of the generic row loop, value for value
/// (float products, each term converted to double and added once), so the same bits in the
/// default build (x86-64-v2 has no FMA; a build for a CPU with FMA may contract w·term + sum
/// here and in the generic loop alike, each deterministically); SSE2 on pairs of columns so that
/// the 2·MW running sums stay in registers: the generic loop's sums went through memory (7.6
/// against 4.2 ms per 5·10⁵ rows, c = 10, one rank of this machine). `w`: n_local weights or
/// null (1). Local.
template <int MW>
void r_pass_pairs(int64_t i0, int64_t i1, double* acc, float* R, const float* P, const float* Q,
                  const float* scale, const float* dinv, const double* w, const char* known, const float* al) {
  static_assert(MW > 0, "r_pass_pairs: a width known at compile time");
  constexpr int H = MW / 2;
  constexpr int HS = H > 0 ? H : 1;
  // Two floats in and out through the may-alias __m128i type.
  auto load2 = [](const float* x) { return _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))); };
  __m128d rho[HS], zz[HS];
  __m128 alv[HS];
  for (int h = 0; h < H; ++h) {
    rho[h] = _mm_loadu_pd(acc + 2 * h);
    zz[h] = _mm_loadu_pd(acc + MW + 2 * h);
    alv[h] = load2(al + 2 * h);
  }
  double rho_tail = 0, zz_tail = 0;  // the last column when MW is odd
  if constexpr (MW % 2 == 1) {
    rho_tail = acc[MW - 1];
    zz_tail = acc[2 * MW - 1];
  }
  for (int64_t i = i0; i < i1; ++i) {
    if (known[i]) continue;
    float* ri = R + i * MW;
    const float* pi = P + i * MW;
    const float* qi = Q + i * MW;
    const float sci = scale[i], dii = dinv[i];
    const double wi = w != nullptr ? w[i] : 1.0;
    const __m128 sc = _mm_set1_ps(sci), di = _mm_set1_ps(dii);
    const __m128d wv = _mm_set1_pd(wi);
    for (int h = 0; h < H; ++h) {
      const __m128 rk = _mm_sub_ps(load2(ri + 2 * h),
                                   _mm_mul_ps(alv[h], _mm_sub_ps(_mm_mul_ps(sc, load2(pi + 2 * h)), load2(qi + 2 * h))));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(ri + 2 * h), _mm_castps_si128(rk));
      const __m128 z = _mm_mul_ps(rk, di);
      rho[h] = _mm_add_pd(rho[h], _mm_mul_pd(wv, _mm_cvtps_pd(_mm_mul_ps(rk, z))));
      zz[h] = _mm_add_pd(zz[h], _mm_cvtps_pd(_mm_mul_ps(z, z)));
    }
    if constexpr (MW % 2 == 1) {
      constexpr int k = MW - 1;
      const float rk = ri[k] - al[k] * (sci * pi[k] - qi[k]);
      ri[k] = rk;
      const float z = rk * dii;
      rho_tail += wi * static_cast<double>(rk * z);
      zz_tail += static_cast<double>(z * z);
    }
  }
  for (int h = 0; h < H; ++h) {
    _mm_storeu_pd(acc + 2 * h, rho[h]);
    _mm_storeu_pd(acc + MW + 2 * h, zz[h]);
  }
  if constexpr (MW % 2 == 1) {
    acc[MW - 1] = rho_tail;
    acc[2 * MW - 1] = zz_tail;
  }
}
#endif

/// Conjugate gradients with point Jacobi on S E_f = R_f for the m columns of R at once: one
/// product of A with the n×m block P per iteration (`product.apply(P, Q)`: detail::
/// BlockProduct in double, detail::SingleBlockProduct in float), m scalar recurrences; a
/// converged column is frozen (its α = 0 and p unchanged, so x and r keep their bits).
/// Column k runs if active[k] on entry and stops when ‖z_k‖₂ ≤ max(rtol[k]·‖z_k⁽⁰⁾‖₂, atol, stop_floor[k]),
/// z = D_S⁻¹r (PETSc's KSPCG with its default preconditioned norm and x⁽⁰⁾_f = 0). T is the
/// type the blocks are stored in (R, X, P, Q: n×m row-major, X with leading dimension ldx);
/// the element-wise arithmetic runs in T too (float: four values per SSE operation; the
/// reductions' terms are converted and summed in double), so T = double is the plain block
/// CG, bit for bit. Every reduction is a ChunkedColumnSums (double), so the scalars do not
/// depend on the partition beyond the products' rounding. Three passes over the block per
/// iteration besides the product (11 block-sized streams): γ = p·Sp (p, q read); r's update
/// with ρ = r·z and ‖z‖² (r, p, q read, r written); x += αp and p = z + βp (x, p, r read, x
/// and p written). On entry R holds the right-hand side on the free rows and 0 on the known
/// ones, X the start (0 on the free rows); on exit X += the solution's free rows, R is
/// overwritten and active is all 0. `dot_w` (n_local weights, or null: 1) weights the
/// reductions γ and ρ: the mixed-precision inner solve stores z = D_S⁻¹r in R (s.dinv = 1)
/// and D_S⁻¹S p (s.scale = (D/α)·D_S⁻¹, the product's rows scaled by D_S⁻¹), whose dot products
/// take the weights D_S to be PCG's r·z and p·Sp. Returns the iterations per column. `soft`: a breakdown,
/// divergence or more than max_it − its_before iterations freezes the columns concerned and
/// sets `failed` (the caller falls back to double) instead of raising. Collective.
template <int MW, class T, class Product>
std::vector<int> cg_columns(Product& product, const System& s, int64_t m, T* R, T* X, int64_t ldx, T* P, T* Q,
                            const std::vector<double>& rtol, const std::vector<double>& stop_floor,
                            std::vector<char>& active,
                            const Tolerances& tol, const PropagationOptions& o, ChunkedColumnSums& sums_m,
                            ChunkedColumnSums& sums_2m, PetscLogEvent ev_product, Progress& progress,
                            int its_before, bool soft, bool& failed, const double* dot_w = nullptr) {
  const int64_t n = s.n_local;
  const size_t mm = static_cast<size_t>(m);
  const PetscLogEvent ev_vector = log_event("LPBlockVector");
  // Element-wise arithmetic in T (float: 4 values per SSE operation, no conversions but the
  // reductions' terms; double: the block CG in double, bit for bit), the sums in double.
  std::vector<T> dinv_t(s.dinv.begin(), s.dinv.end()), scale_t(s.scale.begin(), s.scale.end());
  const T* dinv = dinv_t.data();
  const T* scale = scale_t.data();
  std::vector<double> rho(mm), znorm0(mm), alpha(mm, 0.0), zcoef(mm, 1.0), beta(mm, 0.0);
  std::vector<T> alpha_t(mm, 0), zcoef_t(mm, 1), beta_t(mm, 0);
  std::vector<int> its(mm, 0);
  {
    // P = Z = D_S⁻¹R, ρ = r·z, ‖z‖².
    LogScope scope(ev_vector);
    const std::vector<double>& t = sums_2m.template sum<2 * MW>([&](int64_t i, double* out) {
      const T* r = R + i * m;
      for (int64_t k = 0; k < m; ++k) {
        const T z = r[k] * dinv[i];
        P[i * m + k] = z;
        const double rz = static_cast<double>(r[k] * z);
        out[k] = dot_w != nullptr ? dot_w[i] * rz : rz;
        out[m + k] = static_cast<double>(z * z);
      }
    });
    for (size_t k = 0; k < mm; ++k) {
      rho[k] = t[k];
      znorm0[k] = std::sqrt(t[mm + k]);
      // A zero right-hand side converges at once.
      active[k] = active[k] && znorm0[k] > std::max(std::max(tol.atol, PetscReal(0)), stop_floor[k]);
    }
  }
  for (int it = 1; std::count(active.begin(), active.end(), 1) > 0; ++it) {
    if (its_before + it > tol.max_it) {
      if (soft) {
        failed = true;
        std::fill(active.begin(), active.end(), 0);
        break;
      }
      not_converged(o, "block CG reached -" + o.prefix + "ksp_max_it " + std::to_string(tol.max_it) +
                           " iterations", tol);
    }
    {
      LogScope scope(ev_product);
      product.apply(P, Q);
    }
    LogScope scope(ev_vector);
    // S p = (D/α) p − A p on free rows (0 on known rows, where p is 0), formed where it is
    // used (here and in the next pass) rather than stored: one stream less. γ_k = p_k·(S p)_k.
    const std::vector<double>& gamma = sums_m.template sum<MW>([&](int64_t i, double* out) {
      const T* qi = Q + i * m;
      const T* pi = P + i * m;
      if (s.known[static_cast<size_t>(i)]) {
        for (int64_t k = 0; k < m; ++k) out[k] = 0.0;
      } else {
        for (int64_t k = 0; k < m; ++k) {
          const double g = static_cast<double>(pi[k] * (scale[i] * pi[k] - qi[k]));
          out[k] = dot_w != nullptr ? dot_w[i] * g : g;
        }
      }
    });
    bool breakdown = false;
    for (size_t k = 0; k < mm; ++k) {
      alpha[k] = 0.0;
      if (!active[k]) continue;
      if (!(gamma[k] > 0)) {
        breakdown = true;
        if (soft) active[k] = 0;  // frozen where it stands
        continue;
      }
      alpha[k] = rho[k] / gamma[k];
    }
    if (breakdown && !soft) not_converged(o, "block CG broke down (pᵀSp ≤ 0: S is not positive definite)", tol);
    failed = failed || breakdown;
    // r −= α S p (α = 0 on frozen columns), ρ = r·z and ‖z‖², z = D_S⁻¹r. Known rows keep
    // r = 0. (x += α p is in the p pass, which reads p too: the same stream count either way.)
    for (size_t k = 0; k < mm; ++k) alpha_t[k] = static_cast<T>(alpha[k]);
    const T* al = alpha_t.data();
    const std::vector<double>* t_sums = nullptr;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float> && MW > 0) {
      t_sums = &sums_2m.fold_ranges([&](int64_t i0, int64_t i1, double* acc) {
        r_pass_pairs<MW>(i0, i1, acc, R, P, Q, scale, dinv, dot_w, s.known.data(), al);
      });
    }
#endif
    if (t_sums == nullptr)
      t_sums = &sums_2m.template sum<2 * MW>([&](int64_t i, double* out) {
        if (s.known[static_cast<size_t>(i)]) {
          for (int64_t k = 0; k < 2 * m; ++k) out[k] = 0.0;
          return;
        }
        T* ri = R + i * m;
        const T* pi = P + i * m;
        const T* qi = Q + i * m;
        for (int64_t k = 0; k < m; ++k) {
          const T rk = ri[k] - al[k] * (scale[i] * pi[k] - qi[k]);
          ri[k] = rk;
          const T z = rk * dinv[i];
          const double rz = static_cast<double>(rk * z);
          out[k] = dot_w != nullptr ? dot_w[i] * rz : rz;
          out[m + k] = static_cast<double>(z * z);
        }
      });
    const std::vector<double>& t = *t_sums;
    int left = 0;
    double worst = 0;
    bool diverged = false;
    for (size_t k = 0; k < mm; ++k) {
      // p ← zcoef·z + β·p: z + βp on active columns, p unchanged (0·z + 1·p) on frozen ones.
      zcoef[k] = 0.0;
      beta[k] = 1.0;
      if (!active[k]) continue;
      its[k] = it;
      const double znorm = std::sqrt(t[mm + k]);
      if (znorm <= std::max(std::max(rtol[k] * znorm0[k], tol.atol), stop_floor[k])) {
        active[k] = 0;
        continue;
      }
      if (!(znorm < tol.dtol * znorm0[k])) {
        diverged = true;
        if (soft) {
          active[k] = 0;
          continue;
        }
      }
      zcoef[k] = 1.0;
      beta[k] = t[k] / rho[k];
      rho[k] = t[k];
      worst = std::max(worst, znorm / znorm0[k]);
      ++left;
    }
    if (diverged && !soft) not_converged(o, "block CG diverged (‖z‖ ≥ divtol·‖z0‖)", tol);
    failed = failed || diverged;
    for (size_t k = 0; k < mm; ++k) {
      zcoef_t[k] = static_cast<T>(zcoef[k]);
      beta_t[k] = static_cast<T>(beta[k]);
    }
    const T* zc = zcoef_t.data();
    const T* be = beta_t.data();
    // x += α p (known rows: p = 0, x keeps their values), then p ← zcoef·z + β·p.
    for (int64_t i = 0; i < n; ++i) {
      T* xi = X + i * ldx;
      T* pi = P + i * m;
      const T* ri = R + i * m;
      for (int64_t k = 0; k < m; ++k) {
        const T pk = pi[k];
        xi[k] = xi[k] + al[k] * pk;
        pi[k] = zc[k] * (ri[k] * dinv[i]) + be[k] * pk;
      }
    }
    SSDR_PETSC(PetscLogFlops(static_cast<PetscLogDouble>(n * m) * 14.0));
    char detail[96];
    std::snprintf(detail, sizeof detail, "%d of %lld columns left, largest ‖z‖/‖z0‖ %.1e", left,
                  static_cast<long long>(m), worst);
    progress.update(its_before + it, 0, detail);
  }
  return its;
}

/// The outlier class's column: M·1 = β on every row with D_ii > 0 (row i of D⁻¹A sums to
/// 1), and I_β Y·1 = β, so F·1 = 1 on the free rows (rows with D_ii = 0 are known and have
/// no neighbours). Its value there is 1 − Σ_{k<c} F_ik, summed in column order: the c
/// solutions' errors add (≤ c·E, the tests' analysis), and no solve of its own is needed.
/// Its count: the products its values took, those of the slowest column. Local.
void derive_outlier(const System& s, DistMatrix& F, std::vector<int>& its) {
  const int64_t n = s.n_local, ld = s.m, m = s.m - 1;
  double* X = F.v.data();
  for (int64_t i = 0; i < n; ++i) {
    if (s.known[static_cast<size_t>(i)]) continue;
    double* xi = X + i * ld;
    double sum = 0.0;
    for (int64_t k = 0; k < m; ++k) sum += xi[k];
    xi[m] = 1.0 - sum;
  }
  its.push_back(m > 0 ? *std::max_element(its.begin(), its.end()) : 0);
}

/// The true residual of S F_f = B_f at F's class columns X (n_local×m, leading dimension ld,
/// the known rows' values and x_f): r_ik = (D_ii/α_i)((I_β Y)_ik − X_ik) + q_ik on the free
/// rows, q = A X (n_local×m, row-major), which is B_f − S x_f. Calls store(i·m + k, r_ik, z_ik),
/// z = D_S⁻¹r, on every local row (0, 0 on the known rows) and returns Σ_i z_ik² per column
/// (ChunkedColumnSums: the same bits on every rank). Collective.
template <int MW, class Store>
const std::vector<double>& true_residual(const System& s, int64_t m, const double* X, int64_t ld, const double* q,
                                         ChunkedColumnSums& sums, Store&& store) {
  return sums.template sum<MW>([&](int64_t i, double* out) {
    const size_t li = static_cast<size_t>(i);
    const double* xi = X + i * ld;
    for (int64_t k = 0; k < m; ++k) {
      const size_t e = static_cast<size_t>(i * m + k);
      if (s.known[li]) {
        store(e, 0.0, 0.0);
        out[k] = 0.0;
        continue;
      }
      const double r = (scale_beta_y(s, i, k) - s.scale[li] * xi[k]) + q[e];
      const double z = r * s.dinv[li];
      store(e, r, z);
      out[k] = z * z;
    }
  });
}

/// The block CG in double on S F_f = B_f for the c class columns (m = c), F holding the known
/// rows (and 0 on the free ones) on entry and the solution on exit (cg_columns with T = double,
/// X = F). B_f = (D β/α) Y + A_fk F_k: one product with the known rows' values, the residual
/// at x_f = 0. Collective.
template <int MW>
std::vector<int> block_cg_double(Mat A, const System& s, const Tolerances& tol, const PropagationOptions& o,
                                 DistMatrix& F) {
  MPI_Comm comm = F.comm;
  const int64_t n = s.n_local, m = MW > 0 ? MW : s.m - 1, ld = s.m;
  const size_t mm = static_cast<size_t>(m), nm = static_cast<size_t>(n * m);
  detail::BlockProduct block_product(A, static_cast<int>(m));
  const PetscLogEvent ev_product = log_event("LPBlockProduct");
  ChunkedColumnSums sums_m(comm, n, static_cast<int>(m)), sums_2m(comm, n, static_cast<int>(2 * m));
  double* X = F.v.data();
  std::vector<double> R(nm, 0.0), P(nm), Q(nm);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < m; ++k) P[static_cast<size_t>(i * m + k)] = s.known[static_cast<size_t>(i)] ? X[i * ld + k] : 0.0;
  {
    LogScope scope(ev_product);
    block_product.apply(P.data(), Q.data());
  }
  true_residual<MW>(s, m, X, ld, Q.data(), sums_m, [&](size_t e, double r, double) { R[e] = r; });
  Progress progress("label propagation (block CG, " + std::to_string(m) + " columns)", 0);
  std::vector<char> active(mm, 1);
  bool failed = false;
  std::vector<int> its =
      cg_columns<MW, double>(block_product, s, m, R.data(), X, ld, P.data(), Q.data(), std::vector<double>(mm, tol.rtol),
                             std::vector<double>(mm, 0.0), active, tol, o, sums_m, sums_2m, ev_product, progress, 0,
                             false, failed);
  derive_outlier(s, F, its);
  return its;
}

/// Mixed precision: iterative refinement in double around a solve in single precision, the
/// Chebyshev semi-iteration (detail::chebyshev_solve, the default; -<prefix>mixed_inner chebyshev) or
/// the block CG (-<prefix>mixed_inner cg), described here for the CG.
/// Each outer step forms the true residual r = B_f − S x_f = (D/α)(βY − x) + A X on the free
/// rows (X: the known rows' values and x_f; one double product, detail::BlockProduct) and
/// its ‖D_S⁻¹r‖ per column; a column is done when that is ≤ max(rtol·‖D_S⁻¹B_f‖, atol), the
/// block CG's own test applied to the true residual, so the answer meets the same tolerance.
/// Else the single-precision block CG runs PCG with point Jacobi on S e = r in the Jacobi-
/// scaled quantities only: z = D_S⁻¹r, p and D_S⁻¹S p, and the product with D_S⁻¹A
/// (detail::SingleBlockProduct: float values of D_S⁻¹A, entries ≤ 1, and float blocks: half
/// the bytes per product and per pass), the dot products weighted by D_S in double: the same
/// iterates as PCG on S. (r itself and S p are D-scaled: a heat-kernel graph's degrees
/// reach 10⁻²⁴⁴ on far-off vertices, whose r underflows in float while their z counts.) It
/// stops a column at inner_rtol times its z's norm, not below half its target, and x += e in
/// double. The float solve's error is about κ·ε_single ≈ 200·6·10⁻⁸ relative, so each step
/// gains ~4 digits and three or four steps reach 10⁻¹²; a step that fails to halve a
/// column's residual (or a float breakdown) hands the rest to the double block CG on the
/// residual system. Iterations: the inner iterations per column, summed. Collective.
template <int MW>
std::vector<int> block_cg_mixed(Mat A, const System& s, const Tolerances& tol, const PropagationOptions& o,
                                double inner_rtol, DistMatrix& F) {
  MPI_Comm comm = F.comm;
  const int64_t n = s.n_local, m = MW > 0 ? MW : s.m - 1, ld = s.m;
  const size_t mm = static_cast<size_t>(m), nm = static_cast<size_t>(n * m);
  // The scaled system's pieces on the free rows: D_S⁻¹ (0 on known rows) scales the product's
  // rows, (D/α)·D_S⁻¹ is its diagonal term, z = r (s.dinv = 1), and D_S weights the dot products.
  System st;  // known, scale and dinv only (cg_columns reads no more)
  st.n_local = n;
  st.m = s.m;
  st.known = s.known;
  st.scale.assign(static_cast<size_t>(n), 0.0);
  st.dinv.assign(static_cast<size_t>(n), 0.0);
  std::vector<double> dS(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const size_t li = static_cast<size_t>(i);
    st.scale[li] = s.scale[li] * s.dinv[li];
    st.dinv[li] = s.known[li] ? 0.0 : 1.0;
    dS[li] = s.known[li] ? 0.0 : 1.0 / s.dinv[li];
  }
  detail::BlockProduct dproduct(A, static_cast<int>(m));
  detail::SingleBlockProduct sproduct(A, static_cast<int>(m), s.dinv.data());
  // The inner solve: the Chebyshev semi-iteration (default) or the block CG.
  char inner_type[16] = "chebyshev";
  SSDR_PETSC(PetscOptionsGetString(nullptr, o.prefix.c_str(), "-mixed_inner", inner_type, sizeof inner_type, nullptr));
  const std::string inner_name(inner_type);
  if (inner_name != "chebyshev" && inner_name != "cg")
    throw Error("-" + o.prefix + "mixed_inner must be chebyshev or cg, got '" + inner_name + "'", __FILE__, __LINE__,
                true);
  bool chebyshev = inner_name == "chebyshev";
  // Ŝ = D_S⁻¹S on the free rows has a unit diagonal and off-diagonal row sums
  // (D_ii − A_ii)/(D_ii/α_i − A_ii) ≤ α_i (A ≥ 0, D = A·1), so by Gershgorin its spectrum
  // (real: Ŝ is similar to D_S^{-1/2} S D_S^{-1/2}) lies in [1 − α_max, 1 + α_max]. The margin,
  // 10⁻⁶, covers the float values of D_S⁻¹A (a row sum ≤ 1 within 2⁻²⁴·(entries) of the double
  // one) and the float diagonal σ_i − Â_ii of a graph with self-loops (kNN graphs have none);
  // Chebyshev tolerates a small excursion beyond the interval, and a step that does not gain
  // hands over to the CG. α_max within 10⁻⁶ of 1 leaves no interval: the CG then.
  const double alpha_max = std::max(o.alpha_unlabeled, o.alpha_labeled);
  const double cheb_lo = 1.0 - alpha_max - 1e-6, cheb_hi = 1.0 + alpha_max + 1e-6;
  const double cheb_rate = cheb_lo > 0 ? std::acosh((cheb_hi + cheb_lo) / (cheb_hi - cheb_lo)) : 0.0;
  if (!(cheb_rate > 0) || !std::isfinite(cheb_rate)) chebyshev = false;
  std::vector<float> sigma_f(st.scale.begin(), st.scale.end());
  const PetscLogEvent ev_product = log_event("LPBlockProduct"), ev_single = log_event("LPBlockProductSingle"),
                      ev_vector = log_event("LPBlockVector");
  ChunkedColumnSums sums_m(comm, n, static_cast<int>(m)), sums_2m(comm, n, static_cast<int>(2 * m));
  double* X = F.v.data();
  std::vector<double> Pd(nm), Qd(nm);
  std::vector<float> R(nm), E(nm, 0.0f), P(nm), Q(nm);
  std::vector<double> Rd, Ed;  // the double fallback's residual and correction
  std::vector<double> z0(mm, 0.0), zlast(mm, 0.0), target(mm, 0.0), half_target(mm, 0.0);
  const std::vector<double> inner_tol(mm, inner_rtol);
  std::vector<int> its(mm, 0);
  std::vector<char> active(mm, 0);
  bool single = true, after_double = false;
  int chebyshev_stalls = 0;  // Chebyshev steps that did not halve a column's residual
  // The rest in double: the float blocks go (E folded into X first), Rd and Ed come.
  auto to_double = [&] {
    single = false;
    std::vector<float>().swap(R);
    std::vector<float>().swap(E);
    std::vector<float>().swap(P);
    std::vector<float>().swap(Q);
    Rd.assign(nm, 0.0);
    Ed.assign(nm, 0.0);
  };
  // The true residual into R as z = D_S⁻¹r (single) or Rd as r (double); ‖z_k‖² per column.
  auto residual = [&]() -> const std::vector<double>& {
    LogScope scope(ev_vector);
    return true_residual<MW>(s, m, X, ld, Qd.data(), sums_m, [&](size_t e, double r, double z) {
      if (single) R[e] = static_cast<float>(z);
      else Rd[e] = r;
    });
  };
  Progress progress("label propagation (block CG, mixed precision, " + std::to_string(m) + " columns)", 0);
  for (int outer = 0;; ++outer) {
    if (outer > 100) not_converged(o, "the mixed-precision block CG made no progress in 100 refinement steps", tol);
    // x += e (single or double), and X's class columns into Pd.
    {
      LogScope scope(ev_vector);
      for (int64_t i = 0; i < n; ++i) {
        double* xi = X + i * ld;
        for (int64_t k = 0; k < m; ++k) {
          const size_t e = static_cast<size_t>(i * m + k);
          if (!E.empty()) {
            xi[k] += static_cast<double>(E[e]);
            E[e] = 0.0f;
          }
          if (!Ed.empty()) {
            xi[k] += Ed[e];
            Ed[e] = 0.0;
          }
          Pd[e] = xi[k];
        }
      }
    }
    {
      LogScope scope(ev_product);
      dproduct.apply(Pd.data(), Qd.data());
    }
    if (!single && Rd.empty()) to_double();  // after a float breakdown
    const std::vector<double>* t = &residual();
    bool stalled = false;
    for (size_t k = 0; k < mm; ++k) {
      const double z = std::sqrt((*t)[k]);
      if (!std::isfinite(z)) not_converged(o, "block CG: the residual is not finite", tol);
      if (outer == 0) {
        z0[k] = z;
        target[k] = std::max(tol.rtol * z, std::max(tol.atol, PetscReal(0)));
        half_target[k] = 0.5 * target[k];  // no further than the column needs
        active[k] = z > target[k];          // a zero right-hand side converges at once
      } else {
        const bool was = active[k];
        active[k] = z > target[k];
        if (active[k] && !(z <= 0.5 * zlast[k])) {
          if (after_double) {
            // The double block CG met its own test on this column (its recursive residual
            // ≤ half the target, as the block CG in double stops) and the true residual,
            // formed in double, cannot go lower: its rounding floor is above rtol·‖z⁽⁰⁾‖.
            active[k] = 0;
          } else {
            stalled = true;
          }
        }
        if (was && active[k] && !(z < tol.dtol * std::max(z0[k], target[k])))
          not_converged(o, "block CG diverged (‖z‖ ≥ divtol·‖z0‖)", tol);
      }
      zlast[k] = z;
    }
    if (std::count(active.begin(), active.end(), 1) == 0) break;
    if (single && stalled && chebyshev) {
      // Chebyshev's bound holds in the D_S-norm, the test is in the 2-norm, and where the
      // degrees spread over orders of magnitude a step can gain little in the 2-norm, or lose
      // (200 000 blob points: its first step took one column from 2.8 to 8.5, the next gained
      // 10⁴ on it). The first such step is let pass; at the second the float block CG, which
      // adapts to the residual, does the rest (and double after it if it stalls too).
      if (++chebyshev_stalls >= 2) chebyshev = false;
    } else if (single && stalled) {
      // The remaining digits in double, on this residual: X is unchanged, so Qd = A X holds.
      to_double();
      t = &residual();
    }
    bool failed = false;
    std::vector<int> inner;
    const int done = *std::max_element(its.begin(), its.end());
    if (single && chebyshev) {
      // Steps for the reduction each active column needs: inner_rtol, or down to half its
      // target, but at least 10× (the bound is in the D_S-norm, the test in the 2-norm).
      double need = 1;
      for (size_t k = 0; k < mm; ++k)
        if (active[k]) {
          const double z = std::sqrt((*t)[k]);
          const double f = std::min(0.1, std::max(inner_rtol, half_target[k] / z));
          need = std::max(need, std::ceil(std::acosh(1.0 / f) / cheb_rate));
        }
      // Within -ksp_max_it: steps − 1 products (the first step has none).
      const long long budget = static_cast<long long>(tol.max_it) - done;
      if (budget < 1) {
        single = false;  // out of iterations: the double block CG raises the error
      } else {
        const int steps = static_cast<int>(std::min(need, static_cast<double>(budget + 1)));
        // Converged columns keep their values: their z is set to 0 here (R is overwritten by
        // the next residual anyway), so their correction is exactly 0.
        for (size_t k = 0; k < mm; ++k)
          if (!active[k])
            for (int64_t i = 0; i < n; ++i) R[static_cast<size_t>(i) * mm + k] = 0.0f;
        detail::FlushSubnormals ftz;
        int products = 0;
        {
          LogScope scope(ev_single);
          products = detail::chebyshev_solve(sproduct, st.known, sigma_f, m, R, E, P, cheb_lo, cheb_hi, steps);
        }
        inner.assign(mm, 0);
        for (size_t k = 0; k < mm; ++k)
          if (active[k]) inner[k] = products;
        char detail[96];
        std::snprintf(detail, sizeof detail, "Chebyshev, %d steps", steps);
        progress.update(done + products, 0, detail);
      }
    }
    if (inner.empty() && single) {
      detail::FlushSubnormals ftz;
      inner = cg_columns<MW, float>(sproduct, st, m, R.data(), E.data(), m, P.data(), Q.data(), inner_tol,
                                    half_target, active, tol, o, sums_m, sums_2m, ev_single, progress, done, true,
                                    failed, dS.data());
      if (failed) single = false;  // E holds a valid partial correction, folded into X next
    } else if (inner.empty()) {
      if (Rd.empty()) {
        to_double();
        t = &residual();
      }
      inner = cg_columns<MW, double>(dproduct, s, m, Rd.data(), Ed.data(), m, Pd.data(), Qd.data(),
                                     std::vector<double>(mm, 0.0), half_target, active, tol, o, sums_m, sums_2m,
                                     ev_product, progress, done, false, failed);
      after_double = true;
    }
    for (size_t k = 0; k < mm; ++k) its[k] += inner[k];
  }
  derive_outlier(s, F, its);
  return its;
}

/// The block CG with the solved width c (= m − 1) fixed at compile time for the widths met
/// in practice (detail::with_width: every loop over a row's c values unrolls, and the
/// reductions' sums stay in registers; ChunkedColumnSums::sum), else at run time. The same arithmetic in the
/// same order either way. Mixed precision unless -<prefix>mixed_precision false (or
/// PropagationOptions::mixed_precision); -<prefix>mixed_inner_rtol sets the inner
/// tolerance (default 1e-4). Collective.
std::vector<int> block_cg(Mat A, const System& s, const Tolerances& tol, const PropagationOptions& o,
                          DistMatrix& F) {
  bool mixed = o.mixed_precision;
  petsc_option_bool(o.prefix, "-mixed_precision", mixed);
  double inner_rtol = 1e-4;
  petsc_option_real(o.prefix, "-mixed_inner_rtol", inner_rtol);
  if (!(inner_rtol > 0 && inner_rtol < 1))
    throw Error("-" + o.prefix + "mixed_inner_rtol must be in (0, 1), got " + std::to_string(inner_rtol), __FILE__,
                __LINE__, true);
  return detail::with_width(static_cast<int>(s.m - 1), [&](auto width) {
    constexpr int W = decltype(width)::value;
    return mixed ? block_cg_mixed<W>(A, s, tol, o, inner_rtol, F) : block_cg_double<W>(A, s, tol, o, F);
  });
}

/// F (n_local×m) holding the known rows' values F_i = β_i Y_i, zero elsewhere: every
/// solver's start. Local.
DistMatrix initial_soft_labels(const System& s, MPI_Comm comm) {
  DistMatrix F = make_dist_local(comm, s.n_local, s.m);
  for (int64_t i = 0; i < s.n_local; ++i)
    if (s.known[static_cast<size_t>(i)])
      for (int64_t k = 0; k < s.m; ++k) F(i, k) = s.beta_y(i, k);
  return F;
}

/// The block CG on B = A(π, π), graph::rcm_reorder: each rank's rows renumbered by reverse
/// Cuthill–McKee of its diagonal block. In A's own order (the data file's, for a kNN graph)
/// a row's neighbours lie anywhere in the block: each product gathers rows from all over it
/// (cache misses). After RCM, neighbours have nearby numbers and the gathers hit the cache.
/// (Which rows share a rank, and so the halo, is the partition of graph::
/// renumber_for_locality, applied before.) Labels go to B's order and F back by VecScatters.
/// A itself when o.reorder is false or -<prefix>reorder false is given. `own`, when not
/// null, is the caller's reference to A: it is dropped as soon as B exists, so that only one
/// copy of the graph lives during the solve (A is freed then unless another reference holds
/// it). Returns F (n_local×(c+1), A's layout); `its` gets the iterations per column.
/// Collective.
DistMatrix block_cg_reordered(Mat A, Owned<Mat>* own, const std::vector<int>& labels, int classes,
                              const Tolerances& tol, const PropagationOptions& o, std::vector<int>& its) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  const int64_t n_local = static_cast<int64_t>(labels.size()), m = classes + 1;
  PetscInt N = 0;
  SSDR_PETSC(MatGetSize(A, &N, nullptr));
  bool reorder = o.reorder;
  petsc_option_bool(o.prefix, "-reorder", reorder);
  if (!reorder || N < 3) {
    const System s = make_system(A, labels, classes, o);
    DistMatrix F = initial_soft_labels(s, comm);
    its = block_cg(A, s, tol, o, F);
    return F;
  }
  graph::Reordered re = graph::rcm_reorder(A);
  if (own != nullptr) own->reset();  // A is not read again: B and its layout (A's) suffice
  Mat B = re.B;
  IS is = nullptr, isb = nullptr;
  SSDR_PETSC(ISCreateGeneral(comm, static_cast<PetscInt>(n_local), re.rows.data(), PETSC_COPY_VALUES, &is));
  SSDR_PETSC(ISCreateBlock(comm, static_cast<PetscInt>(m), static_cast<PetscInt>(n_local), re.rows.data(),
                           PETSC_COPY_VALUES, &isb));
  struct Destroy {
    IS* a;
    IS* b;
    ~Destroy() {
      ISDestroy(a);
      ISDestroy(b);
    }
  } destroy{&is, &isb};

  // Labels in B's order: one scatter of the labels as scalars (B has A's row layout).
  std::vector<int> labels_b(static_cast<size_t>(n_local));
  {
    Owned<Vec> from, to;
    SSDR_PETSC(MatCreateVecs(B, from.out(), to.out()));
    PetscScalar* v = nullptr;
    SSDR_PETSC(VecGetArrayWrite(from, &v));
    for (int64_t i = 0; i < n_local; ++i) v[i] = labels[static_cast<size_t>(i)];
    SSDR_PETSC(VecRestoreArrayWrite(from, &v));
    VecScatter sc = nullptr;
    SSDR_PETSC(VecScatterCreate(from, is, to, nullptr, &sc));
    PetscErrorCode ierr = VecScatterBegin(sc, from, to, INSERT_VALUES, SCATTER_FORWARD);
    if (!ierr) ierr = VecScatterEnd(sc, from, to, INSERT_VALUES, SCATTER_FORWARD);
    VecScatterDestroy(&sc);
    SSDR_PETSC(ierr);
    const PetscScalar* t = nullptr;
    SSDR_PETSC(VecGetArrayRead(to, &t));
    for (int64_t i = 0; i < n_local; ++i) labels_b[static_cast<size_t>(i)] = static_cast<int>(PetscRealPart(t[i]));
    SSDR_PETSC(VecRestoreArrayRead(to, &t));
  }
  DistMatrix Fb;
  {
    const System sb = make_system(B, labels_b, classes, o);
    Fb = initial_soft_labels(sb, comm);
    its = block_cg(B, sb, tol, o, Fb);
  }
  re.B.reset();

  // F back to A's order: the block scatter (m values per row) reversed, between Vecs over
  // Fb's and F's own arrays (no copies).
  DistMatrix F = make_dist_local(comm, n_local, m);
  {
    Owned<Vec> from, to;
    SSDR_PETSC(VecCreateMPIWithArray(comm, 1, static_cast<PetscInt>(n_local * m), PETSC_DETERMINE, F.v.data(),
                                     from.out()));
    SSDR_PETSC(VecCreateMPIWithArray(comm, 1, static_cast<PetscInt>(n_local * m), PETSC_DETERMINE, Fb.v.data(),
                                     to.out()));
    VecScatter sc = nullptr;
    SSDR_PETSC(VecScatterCreate(from, isb, to, nullptr, &sc));
    PetscErrorCode ierr = VecScatterBegin(sc, to, from, INSERT_VALUES, SCATTER_REVERSE);
    if (!ierr) ierr = VecScatterEnd(sc, to, from, INSERT_VALUES, SCATTER_REVERSE);
    VecScatterDestroy(&sc);
    SSDR_PETSC(ierr);
  }
  return F;
}

/// One KSPSolve per column of `rhs` (n_local×m, row-major) on the KSP's operator, from x0
/// (n_local×m, or empty for zero) into F. Returns the iterations per column. Collective.
std::vector<int> ksp_columns(KSP ksp, const std::vector<double>& rhs, const std::vector<double>& x0,
                             const PropagationOptions& o, DistMatrix& F) {
  const int64_t n = F.n_local, m = F.cols;
  Mat op = nullptr;
  SSDR_PETSC(KSPGetOperators(ksp, &op, nullptr));
  Owned<Vec> b, x;
  SSDR_PETSC(MatCreateVecs(op, x.out(), b.out()));
  SSDR_PETSC(KSPSetInitialGuessNonzero(ksp, x0.empty() ? PETSC_FALSE : PETSC_TRUE));
  std::vector<int> its;
  Progress progress("label propagation", static_cast<long>(m));
  for (int64_t k = 0; k < m; ++k) {
    progress.update(static_cast<long>(k));
    PetscScalar* pb = nullptr;
    PetscScalar* px = nullptr;
    SSDR_PETSC(VecGetArrayWrite(b, &pb));
    SSDR_PETSC(VecGetArrayWrite(x, &px));
    for (int64_t i = 0; i < n; ++i) {
      pb[i] = rhs[static_cast<size_t>(i * m + k)];
      px[i] = x0.empty() ? 0.0 : x0[static_cast<size_t>(i * m + k)];
    }
    SSDR_PETSC(VecRestoreArrayWrite(x, &px));
    SSDR_PETSC(VecRestoreArrayWrite(b, &pb));
    SSDR_PETSC(KSPSolve(ksp, b, x));
    KSPConvergedReason reason;
    SSDR_PETSC(KSPGetConvergedReason(ksp, &reason));
    if (reason <= 0) {
      Tolerances tol;
      SSDR_PETSC(KSPGetTolerances(ksp, &tol.rtol, &tol.atol, &tol.dtol, &tol.max_it));
      KSPType ksp_type = nullptr;
      PCType pc_type = nullptr;
      PC pc = nullptr;
      SSDR_PETSC(KSPGetType(ksp, &ksp_type));
      SSDR_PETSC(KSPGetPC(ksp, &pc));
      SSDR_PETSC(PCGetType(pc, &pc_type));
      PetscInt done = 0;
      SSDR_PETSC(KSPGetIterationNumber(ksp, &done));
      not_converged(o, std::string("KSP did not converge (") + KSPConvergedReasons[reason] + " after " +
                           std::to_string(static_cast<long long>(done)) + " iterations)", tol,
                    ksp_type ? ksp_type : "", pc_type ? pc_type : "");
    }
    PetscInt it = 0;
    SSDR_PETSC(KSPGetIterationNumber(ksp, &it));
    its.push_back(static_cast<int>(it));
    vec_to_column(x, F, k);
  }
  return its;
}

/// propagate, with `own` (or null) the caller's reference to A that the block CG may drop
/// (block_cg_reordered). Collective.
PropagationResult propagate_graph(Mat A, Owned<Mat>* own, const std::vector<int>& labels, int classes,
                                  const PropagationOptions& options) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  PetscInt n_local = 0;
  SSDR_PETSC(MatGetLocalSize(A, &n_local, nullptr));
  SSDR_REQUIRE(options.alpha_unlabeled >= 0 && options.alpha_unlabeled < 1,
               "--alpha-u must be in [0, 1), got " + std::to_string(options.alpha_unlabeled));
  SSDR_REQUIRE(options.alpha_labeled >= 0 && options.alpha_labeled < 1,
               "alpha on labeled samples must be in [0, 1)");
  SSDR_REQUIRE(classes >= 1, "propagate: classes must be positive");
  bool ok = static_cast<PetscInt>(labels.size()) == n_local;
  for (int l : labels) ok = ok && l >= -1 && l < classes;
  SSDR_CHECK_COLLECTIVE(comm, ok, "propagate: labels must be one per local graph row, in -1..c-1");

  const bool symmetric = symmetric_nonnegative(A, comm);
  const int64_t m = classes + 1;

  // Defaults that do not depend on the partition: point Jacobi (PETSc's own default, block
  // Jacobi + ILU, changes with the rank count), rtol options.rtol; CG on the symmetric
  // system where A is symmetric and non-negative, else GMRES on M. -lp_ksp_type and
  // -lp_pc_type override; the block CG runs for CG with plain point Jacobi.
  Owned<KSP> ksp;
  SSDR_PETSC(KSPCreate(comm, ksp.out()));
  SSDR_PETSC(KSPSetType(ksp, symmetric ? KSPCG : KSPGMRES));
  PC pc = nullptr;
  SSDR_PETSC(KSPGetPC(ksp, &pc));
  SSDR_PETSC(PCSetType(pc, PCJACOBI));
  SSDR_PETSC(KSPSetTolerances(ksp, options.rtol, 1e-300, PETSC_DEFAULT, 10000));
  SSDR_PETSC(KSPSetOptionsPrefix(ksp, options.prefix.c_str()));
  SSDR_PETSC_OPTIONS(KSPSetFromOptions(ksp));
  KSPType ksp_type = nullptr;
  PCType pc_type = nullptr;
  SSDR_PETSC(KSPGetType(ksp, &ksp_type));
  SSDR_PETSC(PCGetType(pc, &pc_type));
  PetscBool is_cg = PETSC_FALSE, is_jacobi = PETSC_FALSE, jacobi_abs = PETSC_FALSE;
  SSDR_PETSC(PetscStrcmp(ksp_type, KSPCG, &is_cg));
  SSDR_PETSC(PetscStrcmp(pc_type, PCJACOBI, &is_jacobi));
  PCJacobiType jacobi_type = PC_JACOBI_DIAGONAL;
  if (is_jacobi) {
    SSDR_PETSC(PCJacobiGetType(pc, &jacobi_type));
    SSDR_PETSC(PCJacobiGetUseAbs(pc, &jacobi_abs));
  }
  KSPNormType norm = KSP_NORM_DEFAULT;
  SSDR_PETSC(KSPGetNormType(ksp, &norm));
  const bool plain_jacobi = is_jacobi && jacobi_type == PC_JACOBI_DIAGONAL && !jacobi_abs;
  const bool preconditioned_norm = norm == KSP_NORM_DEFAULT || norm == KSP_NORM_PRECONDITIONED;

  PropagationResult result;
  if (symmetric && is_cg && plain_jacobi && preconditioned_norm && options.block) {
    Tolerances tol;
    SSDR_PETSC(KSPGetTolerances(ksp, &tol.rtol, &tol.atol, &tol.dtol, &tol.max_it));
    result.solver = "block-cg";
    result.F = block_cg_reordered(A, own, labels, classes, tol, options, result.iterations);
    return result;
  }
  const System s = make_system(A, labels, classes, options);
  result.F = initial_soft_labels(s, comm);
  if (symmetric && is_cg) {
    // S with the known rows and columns replaced by identity rows (MatZeroRowsColumns keeps
    // it symmetric); their right-hand side and initial guess are the known values, so the
    // residual is zero there and CG works on the free rows alone.
    std::vector<double> a(static_cast<size_t>(n_local), 1.0), sc(static_cast<size_t>(n_local), 0.0);
    std::vector<PetscInt> known_rows;
    PetscInt start = 0;
    SSDR_PETSC(MatGetOwnershipRange(A, &start, nullptr));
    for (int64_t i = 0; i < n_local; ++i) {
      if (s.known[static_cast<size_t>(i)]) {
        known_rows.push_back(start + static_cast<PetscInt>(i));
      } else {
        a[static_cast<size_t>(i)] = s.scale[static_cast<size_t>(i)];
        sc[static_cast<size_t>(i)] = -1.0;
      }
    }
    Owned<Mat> S = graph::diagonal_plus_scaled(A, a, sc);
    // B_f = (D β/α) Y + A_fk F_k, the second term as A times the known rows.
    Owned<Mat> Am;
    SSDR_PETSC(MatCreateMAIJ(A, static_cast<PetscInt>(m), Am.out()));
    Owned<Vec> K, T;
    SSDR_PETSC(MatCreateVecs(Am, K.out(), T.out()));
    PetscScalar* pk = nullptr;
    SSDR_PETSC(VecGetArrayWrite(K, &pk));
    std::copy(result.F.v.begin(), result.F.v.end(), pk);
    SSDR_PETSC(VecRestoreArrayWrite(K, &pk));
    SSDR_PETSC(MatMult(Am, K, T));
    std::vector<double> rhs = result.F.v;
    const PetscScalar* pt = nullptr;
    SSDR_PETSC(VecGetArrayRead(T, &pt));
    for (int64_t i = 0; i < n_local; ++i)
      if (!s.known[static_cast<size_t>(i)])
        for (int64_t k = 0; k < m; ++k) {
          const size_t e = static_cast<size_t>(i * m + k);
          rhs[e] = s.scale[static_cast<size_t>(i)] * s.beta_y(i, k) + pt[e];
        }
    SSDR_PETSC(VecRestoreArrayRead(T, &pt));
    SSDR_PETSC(MatZeroRowsColumns(S, static_cast<PetscInt>(known_rows.size()), known_rows.data(), 1.0, nullptr,
                                  nullptr));
    SSDR_PETSC(KSPSetOperators(ksp, S, S));
    SSDR_PETSC(KSPSetUp(ksp));
    result.solver = std::string(ksp_type) + "-symmetric";
    const std::vector<double> x0 = result.F.v;
    result.iterations = ksp_columns(ksp, rhs, x0, options, result.F);
  } else {
    // M = I − diag(α_i / D_ii) A (rows with D_ii = 0 are identity rows), one KSPSolve per
    // column of I_β Y from x = 0.
    const std::vector<double> degree = graph::degrees(A);
    std::vector<double> scale(static_cast<size_t>(n_local));
    for (PetscInt i = 0; i < n_local; ++i) {
      const size_t li = static_cast<size_t>(i);
      const double alpha = labels[li] >= 0 ? options.alpha_labeled : options.alpha_unlabeled;
      scale[li] = degree[li] > 0 ? -alpha / degree[li] : 0.0;
    }
    Owned<Mat> M = graph::diagonal_plus_scaled(A, std::vector<double>(static_cast<size_t>(n_local), 1.0), scale);
    SSDR_PETSC(KSPSetOperators(ksp, M, M));
    SSDR_PETSC(KSPSetUp(ksp));
    result.solver = ksp_type;
    result.iterations = ksp_columns(ksp, dense_beta_y(s), {}, options, result.F);
  }
  return result;
}

}  // namespace

PropagationResult propagate(Mat A, const std::vector<int>& labels, int classes,
                            const PropagationOptions& options) {
  return propagate_graph(A, nullptr, labels, classes, options);
}

PropagationResult propagate(Owned<Mat> A, const std::vector<int>& labels, int classes,
                            const PropagationOptions& options) {
  Mat a = A;
  return propagate_graph(a, &A, labels, classes, options);
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
