// Kernel feature maps: exact empirical kernel map through SLEPc/ScaLAPACK and Nyström
// (see feature_map.hpp for the equations).
#include "ssdr/kernels/feature_map.hpp"

#include <petscmat.h>
#include <slepceps.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/petsc.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/core/values.hpp"

namespace ssdr::kernels {

namespace {

constexpr double kEigenThreshold = 1e-10;  ///< keep eigenvalues > kEigenThreshold·λ_max


std::string mib(double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.0f MiB", bytes / (1024.0 * 1024.0));
  return b;
}


/// Normalizes column x (length n) and makes its entry of largest magnitude positive. Local.
void fix_sign(double* x, int64_t n) {
  double nrm2 = 0;
  for (int64_t i = 0; i < n; ++i) nrm2 += x[i] * x[i];
  const double s = largest_magnitude_sign(x, n) * (nrm2 > 0 ? 1.0 / std::sqrt(nrm2) : 1.0);
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

/// k(Z, X) for the b row-major rows X (b×d', d' = f.input_dim()) against the rz samples
/// whose coordinates are the columns of Zt (d'×rz, leading dimension ldz ≥ d'): G (rz×b,
/// column-major). RBF distances use ‖x‖² + ‖z‖² − 2xᵀz clamped at 0. Local.
void kernel_values(const FeatureMap& f, const double* Zt, int64_t ldz, int64_t rz, const double* X, int64_t b,
                   std::vector<double>& G) {
  const int64_t d = f.Zt.rows;
  G.assign(static_cast<size_t>(rz * b), 0.0);
  if (rz == 0 || b == 0) return;
  if (d > 0) blas::gemm('T', 'N', rz, b, d, 1.0, Zt, ldz, X, d, 0.0, G.data(), rz);
  switch (f.type) {
    case KernelType::linear:
      break;
    case KernelType::polynomial:
      for (double& g : G) g = std::pow(g + 1.0, f.degree);
      break;
    case KernelType::rbf: {
      std::vector<double> zz(static_cast<size_t>(rz), 0.0);
      for (int64_t j = 0; j < rz; ++j) {
        const double* z = Zt + j * ldz;
        double s = 0;
        for (int64_t t = 0; t < d; ++t) s += z[t] * z[t];
        zz[static_cast<size_t>(j)] = s;
      }
      for (int64_t i = 0; i < b; ++i) {
        const double* x = X + i * d;
        double xx = 0;
        for (int64_t t = 0; t < d; ++t) xx += x[t] * x[t];
        double* g = G.data() + i * rz;
        for (int64_t j = 0; j < rz; ++j)
          g[j] = std::exp(-std::max(0.0, xx + zz[static_cast<size_t>(j)] - 2.0 * g[j]) / f.sigma2);
      }
      break;
    }
    default:
      SSDR_THROW("kernel_block: no kernel");
  }
}

/// a_j = (1/n) Σ_i k(z_j, x_i) over the training rows of X. Collective.
std::vector<double> training_means(const FeatureMap& f, const DistMatrix& X) {
  const int64_t rz = f.Zt.cols;
  std::vector<double> a(static_cast<size_t>(rz), 0.0), G;
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(rz, 1), 1, 4096);
  for (int64_t i0 = 0; i0 < X.n_local; i0 += block) {
    const int64_t b = std::min(block, X.n_local - i0);
    kernel_block(f, X.row(i0), b, G);
    for (int64_t i = 0; i < b; ++i)
      for (int64_t j = 0; j < rz; ++j) a[static_cast<size_t>(j)] += G[static_cast<size_t>(j + i * rz)];
  }
  MPI_Allreduce(MPI_IN_PLACE, a.data(), static_cast<int>(rz), MPI_DOUBLE, MPI_SUM, X.comm);
  for (double& v : a) v /= static_cast<double>(X.n_global);
  return a;
}

/// The exact map: Zt = all training samples, M = U Λ^{-1/2} of the centered kernel (34)/(36).
void fit_exact(FeatureMap& f, const DistMatrix& X, const KernelOptions& o, nlohmann::json& info) {
  const MPI_Comm comm = X.comm;
  const int64_t n = X.n_global, d = X.cols;
  const int p = comm_size(comm);
  const double need = exact_map_bytes_per_rank(n, d, p);
  const double limit = o.max_memory_mib > 0 ? o.max_memory_mib * 1024.0 * 1024.0 : memory_limit_per_rank(comm);
  SSDR_REQUIRE(need <= limit, "the exact kernel map of n = " + std::to_string(n) + " samples needs about " +
                                  mib(need) + " per rank on " + std::to_string(p) + " ranks, more than the limit of " +
                                  mib(limit) + " per rank (--max-kernel-memory); use --landmarks r (Nystrom)");
  SSDR_REQUIRE(n * d < std::numeric_limits<int>::max(), "the exact kernel map supports n*d' < 2^31");

  // Z: the training samples, kept distributed as X (the model keeps them for out-of-sample
  // maps (40)); this rank's share of Z is its own rows.
  f.comm = comm;
  f.z_global = n;
  f.z_start = X.row_start;
  f.Zt = Dense(d, X.n_local);
  f.Zt.v = X.v;  // X's local rows (row-major n_local×d) are Zt's columns

  const PetscInt sl_local = scalapack_local_size(n, comm);
  const std::string type = choose_dense_eps_type(n, o.prefix, comm).type;
  const bool scalapack = type == EPSSCALAPACK;
  Owned<Mat> K;
  SSDR_PETSC(MatCreate(comm, K.out()));
  if (scalapack) {
    SSDR_PETSC(MatSetSizes(K, sl_local, sl_local, n, n));
    SSDR_PETSC(MatSetType(K, MATSCALAPACK));
  } else {
    SSDR_PETSC(MatSetSizes(K, X.n_local, X.n_local, n, n));
    SSDR_PETSC(MatSetType(K, MATDENSE));
  }
  SSDR_PETSC(MatSetUp(K));
  std::vector<PetscInt> rows(static_cast<size_t>(X.n_local));
  std::iota(rows.begin(), rows.end(), static_cast<PetscInt>(X.row_start));
  // K_raw(g, j) for the local rows g and every sample j: the samples travel in fixed blocks
  // (global order), each block's columns set at once; a_g = (1/n) Σ_j K_raw(g, j) summed in
  // global j order (the same on any rank count).
  f.a.assign(static_cast<size_t>(X.n_local), 0.0);
  {
    std::vector<double> G;
    std::vector<PetscInt> cols;
    PetscErrorCode set_rc = 0;  // visit must not throw: the first failure is raised after the loop
    for_each_row_block(X.v.data(), X.row_start, X.n_local, n, d, kExactBlock, comm,
                       [&](int64_t first, int64_t nb, const double* Zb) {
                         // G (nb×n_local, column-major) = row-major n_local×nb: K_raw(local rows, block).
                         kernel_values(f, Zb, d, nb, X.v.data(), X.n_local, G);
                         for (int64_t i = 0; i < X.n_local; ++i) {
                           double s = f.a[static_cast<size_t>(i)];
                           for (int64_t j = 0; j < nb; ++j) s += G[static_cast<size_t>(j + i * nb)];
                           f.a[static_cast<size_t>(i)] = s;
                         }
                         cols.resize(static_cast<size_t>(nb));
                         std::iota(cols.begin(), cols.end(), static_cast<PetscInt>(first));
                         if (X.n_local > 0 && set_rc == 0)
                           set_rc = MatSetValues(K, static_cast<PetscInt>(X.n_local), rows.data(),
                                                 static_cast<PetscInt>(nb), cols.data(), G.data(), INSERT_VALUES);
                       });
    if (set_rc != 0) SSDR_THROW(petsc_error_text(static_cast<int>(set_rc), "MatSetValues(kernel rows)"));
  }
  for (double& v : f.a) v /= static_cast<double>(n);
  SSDR_PETSC(MatAssemblyBegin(K, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatAssemblyEnd(K, MAT_FINAL_ASSEMBLY));
  // The centered kernel K = L_c K_raw L_c (34): K(g, j) = K_raw(g, j) − a_g − a_j + ā, added
  // row chunk by row chunk (a: n doubles on every rank).
  {
    const std::vector<double> a_all = allgatherv(f.a, comm);
    double abar = 0;
    for (double v : a_all) abar += v;
    abar /= static_cast<double>(n);
    std::vector<PetscInt> cols(static_cast<size_t>(n));
    std::iota(cols.begin(), cols.end(), PetscInt{0});
    std::vector<double> vals;
    const int64_t block = std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(n, 1), 1, 4096);
    for (int64_t i0 = 0; i0 < X.n_local; i0 += block) {
      const int64_t b = std::min(block, X.n_local - i0);
      vals.resize(static_cast<size_t>(b * n));
      for (int64_t i = 0; i < b; ++i) {
        const double ag = f.a[static_cast<size_t>(i0 + i)];
        for (int64_t j = 0; j < n; ++j) vals[static_cast<size_t>(i * n + j)] = abar - ag - a_all[static_cast<size_t>(j)];
      }
      SSDR_PETSC(MatSetValues(K, static_cast<PetscInt>(b), rows.data() + i0, static_cast<PetscInt>(n), cols.data(),
                              vals.data(), ADD_VALUES));
    }
  }
  SSDR_PETSC(MatAssemblyBegin(K, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatAssemblyEnd(K, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatSetOption(K, MAT_SYMMETRIC, PETSC_TRUE));

  // K = U Λ Uᵀ (36), every eigenpair (dense EPS types), largest first.
  Owned<EPS> eps;
  SSDR_PETSC(EPSCreate(comm, eps.out()));
  SSDR_PETSC(EPSSetOperators(eps, K, nullptr));
  SSDR_PETSC(EPSSetProblemType(eps, EPS_HEP));
  SSDR_PETSC(EPSSetDimensions(eps, static_cast<PetscInt>(n), PETSC_DEFAULT, PETSC_DEFAULT));
  SSDR_PETSC(EPSSetWhichEigenpairs(eps, EPS_LARGEST_REAL));
  SSDR_PETSC(EPSSetType(eps, scalapack ? EPSSCALAPACK : EPSLAPACK));
  if (!o.prefix.empty()) SSDR_PETSC(EPSSetOptionsPrefix(eps, o.prefix.c_str()));
  SSDR_PETSC_OPTIONS(EPSSetFromOptions(eps));
  SSDR_PETSC(EPSSolve(eps));
  PetscInt nconv = 0;
  SSDR_PETSC(EPSGetConverged(eps, &nconv));
  SSDR_REQUIRE(nconv >= 1, "the kernel eigen-solve (options prefix '" + o.prefix + "') converged no eigenpair");
  std::vector<double> lambda;
  for (PetscInt k = 0; k < nconv; ++k) {
    PetscScalar kr = 0, ki = 0;
    SSDR_PETSC(EPSGetEigenvalue(eps, k, &kr, &ki));
    lambda.push_back(PetscRealPart(kr));
  }
  const double lmax = *std::max_element(lambda.begin(), lambda.end());
  SSDR_REQUIRE(lmax > 0, "the centered kernel matrix is zero (all training samples are identical in feature space)");
  std::vector<PetscInt> kept;
  for (PetscInt k = 0; k < nconv; ++k)
    if (lambda[static_cast<size_t>(k)] > kEigenThreshold * lmax) kept.push_back(k);
  std::stable_sort(kept.begin(), kept.end(),
                   [&](PetscInt x, PetscInt y) { return lambda[static_cast<size_t>(x)] > lambda[static_cast<size_t>(y)]; });
  const int64_t r = static_cast<int64_t>(kept.size());
  f.M = Dense(X.n_local, r);  // this rank's rows of U Λ^{-1/2}
  Owned<Vec> x, all;
  SSDR_PETSC(MatCreateVecs(K, x.out(), nullptr));
  VecScatter ctx = nullptr;
  SSDR_PETSC(VecScatterCreateToAll(x, &ctx, all.out()));
  struct Guard {
    VecScatter* c;
    ~Guard() { VecScatterDestroy(c); }
  } guard{&ctx};
  std::vector<double> u(static_cast<size_t>(n));  // one eigenvector at a time, n doubles
  for (int64_t k = 0; k < r; ++k) {
    PetscScalar kr = 0, ki = 0;
    SSDR_PETSC(EPSGetEigenpair(eps, kept[static_cast<size_t>(k)], &kr, &ki, x, nullptr));
    SSDR_PETSC(VecScatterBegin(ctx, x, all, INSERT_VALUES, SCATTER_FORWARD));
    SSDR_PETSC(VecScatterEnd(ctx, x, all, INSERT_VALUES, SCATTER_FORWARD));
    const PetscScalar* uk = nullptr;
    SSDR_PETSC(VecGetArrayRead(all, &uk));
    std::copy(uk, uk + n, u.begin());
    SSDR_PETSC(VecRestoreArrayRead(all, &uk));
    // Uᵀ1 = 0 holds exactly only in exact arithmetic: a computed eigenvector of a tiny λ_k
    // carries O(ε·λ_max/λ_k) of the null vector 1 of K, which (★) would amplify through
    // K_raw·1 (not annihilated) and Λ^{-1/2}; project it out.
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += u[static_cast<size_t>(i)];
    mean /= static_cast<double>(n);
    for (double& v : u) v -= mean;
    fix_sign(u.data(), n);
    const double l = lambda[static_cast<size_t>(kept[static_cast<size_t>(k)])];
    const double s = 1.0 / std::sqrt(l);
    for (int64_t i = 0; i < X.n_local; ++i) f.M(i, k) = u[static_cast<size_t>(X.row_start + i)] * s;
  }
  info["eps_type"] = scalapack ? "scalapack" : type;
  info["largest_eigenvalue"] = lmax;
  info["discarded_eigenvalues"] = n - r;
}

/// Nyström landmark indices (global rows of X), reproducible from the seed and independent
/// of the rank count. Collective.
std::vector<int64_t> choose_landmarks(const DistMatrix& X, int64_t r, const std::string& seeding, uint64_t seed) {
  const int64_t n = X.n_global, d = X.cols;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> chosen;
  if (seeding == "uniform") {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), int64_t{0});
    for (int64_t k = 0; k < r; ++k) {  // partial Fisher–Yates
      std::uniform_int_distribution<int64_t> u(k, n - 1);
      std::swap(idx[static_cast<size_t>(k)], idx[static_cast<size_t>(u(rng))]);
    }
    chosen.assign(idx.begin(), idx.begin() + r);
    return chosen;
  }
  // k-means++ (D² sampling). Weights are quantized to integers so their prefix sums are
  // exact, hence the same index is drawn on any number of ranks.
  std::vector<double> dist2(static_cast<size_t>(X.n_local), std::numeric_limits<double>::infinity());
  std::vector<char> taken(static_cast<size_t>(X.n_local), 0);
  std::vector<double> c(static_cast<size_t>(d));
  std::uniform_int_distribution<int64_t> first(0, n - 1);
  int64_t next = first(rng);
  Progress progress("k-means++ landmarks", static_cast<long>(r));
  for (int64_t k = 0; k < r; ++k) {
    chosen.push_back(next);
    std::fill(c.begin(), c.end(), 0.0);
    if (next >= X.row_start && next < X.row_start + X.n_local) {
      std::copy(X.row(next - X.row_start), X.row(next - X.row_start) + d, c.begin());
      taken[static_cast<size_t>(next - X.row_start)] = 1;
    }
    MPI_Allreduce(MPI_IN_PLACE, c.data(), static_cast<int>(d), MPI_DOUBLE, MPI_SUM, X.comm);
    if (k + 1 == r) break;
    double dmax = 0;
    for (int64_t i = 0; i < X.n_local; ++i) {
      const double* xi = X.row(i);
      double s = 0;
      for (int64_t j = 0; j < d; ++j) s += (xi[j] - c[static_cast<size_t>(j)]) * (xi[j] - c[static_cast<size_t>(j)]);
      double& di = dist2[static_cast<size_t>(i)];
      di = taken[static_cast<size_t>(i)] ? 0.0 : std::min(di, s);
      dmax = std::max(dmax, di);
    }
    MPI_Allreduce(MPI_IN_PLACE, &dmax, 1, MPI_DOUBLE, MPI_MAX, X.comm);
    std::vector<uint64_t> w(static_cast<size_t>(X.n_local), 0);
    uint64_t local = 0;
    for (int64_t i = 0; i < X.n_local; ++i) {
      const double di = dist2[static_cast<size_t>(i)];
      w[static_cast<size_t>(i)] = dmax > 0 ? static_cast<uint64_t>(std::llround(di / dmax * 4294967296.0)) : 0;
      if (dmax <= 0 && !taken[static_cast<size_t>(i)]) w[static_cast<size_t>(i)] = 1;  // all points coincide
      local += w[static_cast<size_t>(i)];
    }
    uint64_t before = 0, total = 0;
    MPI_Exscan(&local, &before, 1, MPI_UINT64_T, MPI_SUM, X.comm);
    if (comm_rank(X.comm) == 0) before = 0;
    MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, X.comm);
    SSDR_REQUIRE(total > 0, "k-means++: no sample left to draw a landmark from");
    const uint64_t u = std::uniform_int_distribution<uint64_t>(0, total - 1)(rng);
    int64_t pick = -1;
    if (u >= before && u < before + local) {
      uint64_t acc = before;
      for (int64_t i = 0; i < X.n_local; ++i) {
        acc += w[static_cast<size_t>(i)];
        if (u < acc) {
          pick = X.row_start + i;
          break;
        }
      }
    }
    MPI_Allreduce(&pick, &next, 1, MPI_INT64_T, MPI_MAX, X.comm);
    progress.update(static_cast<long>(k + 1));
  }
  return chosen;
}

void rotate_to_principal_axes(FeatureMap& f, const DistMatrix& X, nlohmann::json& info);

void fit_nystrom(FeatureMap& f, const DistMatrix& X, const KernelOptions& o, nlohmann::json& info) {
  const int64_t n = X.n_global, d = X.cols;
  const int64_t r = std::min<int64_t>(o.landmarks, n);
  const std::vector<int64_t> idx = choose_landmarks(X, r, o.landmark_seeding, o.seed);
  f.Zt = Dense(d, r);
  for (int64_t k = 0; k < r; ++k) {
    const int64_t g = idx[static_cast<size_t>(k)];
    if (g >= X.row_start && g < X.row_start + X.n_local) std::copy(X.row(g - X.row_start), X.row(g - X.row_start) + d, f.Zt.col(k));
  }
  MPI_Allreduce(MPI_IN_PLACE, f.Zt.data(), static_cast<int>(d * r), MPI_DOUBLE, MPI_SUM, X.comm);

  // W_r = k(Z, Z) = V Λ Vᵀ on every rank (identical input → identical output); M = V_+ Λ_+^{-1/2}.
  std::vector<double> G;
  kernel_block(f, f.Zt.data(), r, G);
  Dense W(r, r);
  W.v = G;
  std::vector<double> lambda(static_cast<size_t>(r));
  lapack::syev(r, W.data(), r, lambda.data());
  const double lmax = lambda.empty() ? 0.0 : lambda.back();
  SSDR_REQUIRE(lmax > 0, "the Nystrom landmark kernel matrix is zero");
  std::vector<int64_t> kept;
  for (int64_t k = r - 1; k >= 0; --k)
    if (lambda[static_cast<size_t>(k)] > kEigenThreshold * lmax) kept.push_back(k);
  f.M = Dense(r, static_cast<int64_t>(kept.size()));
  for (size_t k = 0; k < kept.size(); ++k) {
    std::copy(W.col(kept[k]), W.col(kept[k]) + r, f.M.col(static_cast<int64_t>(k)));
    fix_sign(f.M.col(static_cast<int64_t>(k)), r);
    const double s = 1.0 / std::sqrt(lambda[static_cast<size_t>(kept[k])]);
    for (int64_t i = 0; i < r; ++i) f.M(i, static_cast<int64_t>(k)) *= s;
  }
  f.a = training_means(f, X);
  info["landmark_seeding"] = o.landmark_seeding;
  info["landmark_seed"] = o.seed;
  info["largest_eigenvalue"] = lmax;
  info["discarded_eigenvalues"] = r - static_cast<int64_t>(kept.size());
  rotate_to_principal_axes(f, X, info);
}

/// The Nyström map's principal axes (see fit_feature_map): Φ₀ᵀΦ₀ = VΣVᵀ, M ← M V₊.
/// Collective (one r×r all-reduce); memory n_local·r for Φ₀.
void rotate_to_principal_axes(FeatureMap& f, const DistMatrix& X, nlohmann::json& info) {
  const int64_t r = f.M.cols;
  if (r == 0) return;
  Dense G;
  {
    const DistMatrix Phi = apply(f, X);
    G = transpose_multiply(Phi, Phi);  // r×r, replicated (identical on every rank)
  }
  std::vector<double> sigma(static_cast<size_t>(r));
  lapack::syev(r, G.data(), r, sigma.data());  // ascending; G ← V
  const double smax = sigma.back();
  SSDR_REQUIRE(smax > 0, "the Nystrom feature map of the training samples is zero after centering");
  std::vector<int64_t> kept;
  for (int64_t k = r - 1; k >= 0; --k)
    if (sigma[static_cast<size_t>(k)] > kEigenThreshold * smax) kept.push_back(k);
  Dense V(r, static_cast<int64_t>(kept.size()));
  for (size_t k = 0; k < kept.size(); ++k) {
    std::copy(G.col(kept[k]), G.col(kept[k]) + r, V.col(static_cast<int64_t>(k)));
    fix_sign(V.col(static_cast<int64_t>(k)), r);
  }
  Dense M(f.M.rows, V.cols);
  if (V.cols > 0)
    blas::gemm('N', 'N', f.M.rows, V.cols, r, 1.0, f.M.data(), f.M.rows, V.data(), r, 0.0, M.data(), M.rows);
  f.M = std::move(M);
  info["principal_axes"] = true;
  info["largest_variance"] = smax;  // Σ_11 = largest eigenvalue of Φ_cΦ_cᵀ ≈ λ_max of (34)
  info["discarded_after_centering"] = r - static_cast<int64_t>(kept.size());
}

}  // namespace

KernelType parse_kernel(const std::string& name) {
  if (name == "none") return KernelType::none;
  if (name == "linear") return KernelType::linear;
  if (name == "poly" || name == "polynomial") return KernelType::polynomial;
  if (name == "rbf") return KernelType::rbf;
  SSDR_REQUIRE(false, "--kernel: expected none, linear, poly or rbf, got '" + name + "'");
  return KernelType::none;
}

std::string to_string(KernelType k) {
  switch (k) {
    case KernelType::linear: return "linear";
    case KernelType::polynomial: return "poly";
    case KernelType::rbf: return "rbf";
    default: return "none";
  }
}

nlohmann::json to_json(const KernelOptions& o) {
  return {{"type", to_string(o.type)},        {"degree", o.degree},
          {"sigma2", o.sigma2},               {"sigma_scale", o.sigma_scale}, {"landmarks", o.landmarks},
          {"landmark_seeding", o.landmark_seeding}, {"seed", o.seed},
          {"max_memory_mib", o.max_memory_mib}, {"prefix", o.prefix}};
}

KernelOptions from_json(const nlohmann::json& j) {
  KernelOptions o;
  if (!j.is_object()) return o;
  if (j.contains("type")) o.type = parse_kernel(j["type"].get<std::string>());
  if (j.contains("degree")) o.degree = j["degree"].get<double>();
  if (j.contains("sigma2")) o.sigma2 = j["sigma2"].get<double>();
  if (j.contains("sigma_scale")) o.sigma_scale = j["sigma_scale"].get<double>();
  if (j.contains("landmarks")) o.landmarks = j["landmarks"].get<int64_t>();
  if (j.contains("landmark_seeding")) o.landmark_seeding = j["landmark_seeding"].get<std::string>();
  if (j.contains("seed")) o.seed = j["seed"].get<uint64_t>();
  if (j.contains("max_memory_mib")) o.max_memory_mib = j["max_memory_mib"].get<double>();
  if (j.contains("prefix")) o.prefix = j["prefix"].get<std::string>();
  return o;
}

void kernel_block(const FeatureMap& f, const double* X, int64_t b, std::vector<double>& G) {
  kernel_values(f, f.Zt.data(), std::max<int64_t>(f.Zt.rows, 1), f.Zt.cols, X, b, G);
}

double mean_pairwise_squared_distance(const DistMatrix& X) {
  const int64_t n = X.n_global, d = X.cols;
  SSDR_REQUIRE(n >= 2, "the RBF kernel width needs at least 2 training samples");
  std::vector<double> mean(static_cast<size_t>(d), 0.0);
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t j = 0; j < d; ++j) mean[static_cast<size_t>(j)] += X(i, j);
  MPI_Allreduce(MPI_IN_PLACE, mean.data(), static_cast<int>(d), MPI_DOUBLE, MPI_SUM, X.comm);
  for (double& m : mean) m /= static_cast<double>(n);
  double s = 0;
  for (int64_t i = 0; i < X.n_local; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const double t = X(i, j) - mean[static_cast<size_t>(j)];
      s += t * t;
    }
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, X.comm);
  return 2.0 * s / static_cast<double>(n - 1);  // = 2n/(n−1) · (1/n)Σ‖x_i − x̄‖²
}

double mean_pairwise_distance(const DistMatrix& X) {
  const int64_t n = X.n_global, d = X.cols;
  SSDR_REQUIRE(n >= 2, "the mean pairwise distance needs at least 2 samples");
  const MPI_Comm comm = X.comm;
  const int p = comm_size(comm), rank = comm_rank(comm);
  std::vector<int64_t> starts, counts;
  gather_layout(comm, X.row_start, X.n_local, starts, counts);
  int64_t most = 0;
  for (int64_t c : counts) most = std::max(most, c);
  // The travelling block: rank (rank − s) mod p's rows at step s.
  std::vector<double> block(static_cast<size_t>(most * d)), next(block.size());
  std::copy(X.v.begin(), X.v.end(), block.begin());
  double sum = 0;
  for (int s = 0; s < p; ++s) {
    const int owner = (rank - s + p) % p;
    const int64_t nb = counts[static_cast<size_t>(owner)];
    for (int64_t i = 0; i < X.n_local; ++i) {
      const double* x = X.row(i);
      for (int64_t j = 0; j < nb; ++j) {
        const double* y = block.data() + j * d;
        double d2 = 0;
        for (int64_t t = 0; t < d; ++t) d2 += (x[t] - y[t]) * (x[t] - y[t]);
        sum += std::sqrt(d2);  // the pair (i, i) adds 0
      }
    }
    if (s + 1 < p) {
      const int to = (rank + 1) % p, from = (rank - 1 + p) % p;
      const int64_t nin = counts[static_cast<size_t>((rank - s - 1 + 2 * p) % p)];
      MPI_Sendrecv(block.data(), static_cast<int>(nb * d), MPI_DOUBLE, to, 0, next.data(), static_cast<int>(nin * d),
                   MPI_DOUBLE, from, 0, comm, MPI_STATUS_IGNORE);
      std::swap(block, next);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
  return sum / (static_cast<double>(n) * static_cast<double>(n - 1));
}

void check_kernel_range(const DistMatrix& X, const KernelOptions& o) {
  if (o.type != KernelType::linear && o.type != KernelType::polynomial) return;  // RBF values lie in (0, 1]
  // |xᵀz| ≤ R² (Cauchy–Schwarz) with R the largest row norm, so |k(x, z)| ≤ (R² + 1)^p for
  // the polynomial kernel (1 + xᵀz)^p and ≤ R² for the linear one; compared in log2.
  double r2 = 0;
  for (int64_t i = 0; i < X.n_local; ++i) {
    double s = 0;
    for (int64_t j = 0; j < X.cols; ++j) s += X(i, j) * X(i, j);
    r2 = std::max(r2, s);
  }
  MPI_Allreduce(MPI_IN_PLACE, &r2, 1, MPI_DOUBLE, MPI_MAX, X.comm);
  const bool poly = o.type == KernelType::polynomial;
  const double log2_bound = poly ? o.degree * std::log2(r2 + 1.0) : std::log2(r2);
  const double limit = std::log2(kMaxAbsValue);
  char buf[64], degree[32];
  std::snprintf(buf, sizeof buf, "2^%.0f", log2_bound);
  std::snprintf(degree, sizeof degree, "%g", o.degree);
  SSDR_REQUIRE(log2_bound <= limit,
               std::string("the ") + (poly ? "polynomial kernel (degree " + std::string(degree) + ")" : "linear kernel") +
                   " reaches " + (poly ? "(1 + max |x|^2)^degree" : "max |x|^2") + " = " + buf +
                   " on these training samples, beyond 2^448 (its sums would overflow); " +
                   (poly ? "lower --degree or " : "") + "scale the data (--scaling standardize)");
}

double exact_map_bytes_per_rank(int64_t n, int64_t d, int p) {
  const double nn = static_cast<double>(n) * static_cast<double>(n);
  return 8.0 * (static_cast<double>(n) * static_cast<double>(d) + 5.0 * nn) / std::max(p, 1);
}

FeatureMap fit_feature_map(const DistMatrix& X, const KernelOptions& o, nlohmann::json* info_out) {
  SSDR_REQUIRE(o.type != KernelType::none, "fit_feature_map: no kernel selected");
  SSDR_REQUIRE(X.n_global >= 2, "a kernel map needs at least 2 training samples");
  SSDR_REQUIRE(X.cols >= 1, "a kernel map needs at least one feature");
  SSDR_REQUIRE(o.type != KernelType::polynomial || o.degree > 0, "--degree must be positive");
  SSDR_REQUIRE(o.sigma2 >= 0, "--sigma2 must be >= 0 (0: mean pairwise squared distance)");
  SSDR_REQUIRE(o.landmarks >= 0, "--landmarks must be >= 0 (0: exact kernel map)");
  SSDR_REQUIRE(o.landmark_seeding == "uniform" || o.landmark_seeding == "kmeans++",
               "--landmark-seeding: expected uniform or kmeans++, got '" + o.landmark_seeding + "'");
  check_kernel_range(X, o);
  FeatureMap f;
  f.type = o.type;
  f.degree = o.degree;
  f.exact = o.landmarks == 0;
  nlohmann::json info;
  info["kernel"] = to_string(o.type);
  if (o.type == KernelType::polynomial) info["degree"] = o.degree;
  SSDR_REQUIRE(o.sigma_scale >= 0, "--sigma-scale must be >= 0 (0: not used)");
  if (o.type == KernelType::rbf) {
    if (o.sigma_scale > 0) {
      const double sigma0 = o.sigma0 > 0 ? o.sigma0 : mean_pairwise_distance(X);
      f.sigma2 = (o.sigma_scale * sigma0) * (o.sigma_scale * sigma0);
      info["sigma0"] = sigma0;
      info["sigma_scale"] = o.sigma_scale;
      info["sigma2_source"] = "(sigma_scale * mean pairwise distance)^2";
    } else {
      f.sigma2 = o.sigma2 > 0 ? o.sigma2 : mean_pairwise_squared_distance(X);
      info["sigma2_source"] = o.sigma2 > 0 ? "--sigma2" : "mean pairwise squared distance";
    }
    SSDR_REQUIRE(f.sigma2 > 0, "the RBF width sigma^2 is 0 (all training samples coincide); pass --sigma2");
    info["sigma2"] = f.sigma2;
  }
  info["map"] = f.exact ? "exact" : "nystrom";
  if (f.exact) fit_exact(f, X, o, info);
  else fit_nystrom(f, X, o, info);
  if (!f.exact) f.z_global = f.Zt.cols;
  info["landmarks"] = f.landmarks();
  info["feature_dim"] = f.dim();
  if (info_out) *info_out = info;
  return f;
}

void apply_rows(const FeatureMap& f, const double* X, int64_t b, double* Phi) {
  SSDR_CHECK(!f.exact, "apply_rows: the exact map's samples are distributed; use kernels::apply (collective)");
  const int64_t rz = f.Zt.cols, r = f.M.cols;
  std::vector<double> G;
  kernel_block(f, X, b, G);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < rz; ++j) G[static_cast<size_t>(j + i * rz)] -= f.a[static_cast<size_t>(j)];
  // Row-major Φ block (b×r) = column-major r×b = Mᵀ (r×r_z) · G (r_z×b).
  if (r > 0 && b > 0) blas::gemm('T', 'N', r, b, rz, 1.0, f.M.data(), rz, G.data(), rz, 0.0, Phi, r);
}

DistMatrix apply(const FeatureMap& f, const DistMatrix& X) {
  SSDR_CHECK(X.cols == f.input_dim(), "the kernel map expects " + std::to_string(f.input_dim()) +
                                          " features, the data has " + std::to_string(X.cols));
  DistMatrix Phi = make_dist_like(X, f.dim());
  if (f.exact) {
    std::vector<const double*> rows(static_cast<size_t>(X.n_local));
    for (int64_t i = 0; i < X.n_local; ++i) rows[static_cast<size_t>(i)] = X.row(i);
    apply_exact(f, nullptr, rows.data(), X.n_local, Phi.v.data());
    return Phi;
  }
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(f.Zt.cols, 1), 1, 4096);
  for (int64_t i0 = 0; i0 < X.n_local; i0 += block) {
    const int64_t b = std::min(block, X.n_local - i0);
    apply_rows(f, X.row(i0), b, Phi.row(i0));
  }
  return Phi;
}

void apply_exact(const FeatureMap& f, const Dense* W, const double* const* rows, int64_t b, double* out) {
  SSDR_REQUIRE(f.exact, "apply_exact: the map is not the exact one");
  const int64_t d = f.input_dim(), r = f.dim(), nl = f.Zt.cols;
  SSDR_REQUIRE(W == nullptr || W->rows == r, "apply_exact: W has " + std::to_string(W ? W->rows : 0) +
                                                 " rows, the map has " + std::to_string(r) + " features");
  SSDR_CHECK(f.M.rows == nl && static_cast<int64_t>(f.a.size()) == nl, "apply_exact: the map's local rows disagree");
  const int64_t q = W ? W->cols : r, w = d + q + 1;
  // The travelling rows [z_j, R_j, a_j], R_j = M_j W (k in increasing order) or M_j.
  std::vector<double> mine(static_cast<size_t>(nl * w));
  for (int64_t j = 0; j < nl; ++j) {
    double* row = mine.data() + j * w;
    std::copy_n(f.Zt.col(j), d, row);
    for (int64_t c = 0; c < q; ++c) {
      if (W == nullptr) {
        row[d + c] = f.M(j, c);
        continue;
      }
      double s = 0;
      for (int64_t k = 0; k < r; ++k) s += f.M(j, k) * (*W)(k, c);
      row[d + c] = s;
    }
    row[d + q] = f.a[static_cast<size_t>(j)];
  }
  std::fill(out, out + b * q, 0.0);
  const int64_t T = kExactTile, tiles = (b + T - 1) / T;
  std::vector<double> tile(static_cast<size_t>(T * d)), G, S(static_cast<size_t>(q * T));
  for_each_row_block(mine.data(), f.z_start, nl, f.z_global, w, kExactBlock, f.comm,
                     [&](int64_t /*first*/, int64_t nb, const double* P) {
                       // P: column-major w×nb, column j = [z_j; R_j; a_j].
                       for (int64_t t = 0; t < tiles; ++t) {
                         const int64_t i0 = t * T, bt = std::min(T, b - i0);
                         std::fill(tile.begin(), tile.end(), 0.0);
                         for (int64_t i = 0; i < bt; ++i) std::copy_n(rows[i0 + i], d, tile.data() + i * d);
                         kernel_values(f, P, w, nb, tile.data(), T, G);  // nb×T
                         for (int64_t i = 0; i < T; ++i)
                           for (int64_t j = 0; j < nb; ++j) G[static_cast<size_t>(j + i * nb)] -= P[j * w + d + q];
                         // S (q×T) = R_bᵀ (q×nb, the rows d..d+q−1 of P) · G (nb×T).
                         if (q > 0)
                           blas::gemm('N', 'N', q, T, nb, 1.0, P + d, w, G.data(), nb, 0.0, S.data(), q);
                         for (int64_t i = 0; i < bt; ++i)
                           for (int64_t c = 0; c < q; ++c) out[(i0 + i) * q + c] += S[static_cast<size_t>(c + i * q)];
                       }
                     });
}

void distribute(FeatureMap& f, MPI_Comm comm) {
  SSDR_CHECK(f.exact && f.z_start == 0 && f.Zt.cols == f.z_global && f.M.rows == f.z_global &&
                 static_cast<int64_t>(f.a.size()) == f.z_global,
             "distribute: expected an exact map holding all its samples");
  const Layout l = block_layout(f.z_global, comm);
  const int64_t d = f.Zt.rows, r = f.M.cols;
  Dense Zt(d, l.n_local), M(l.n_local, r);
  std::copy_n(f.Zt.col(l.start), d * l.n_local, Zt.data());
  for (int64_t k = 0; k < r; ++k) std::copy_n(f.M.col(k) + l.start, l.n_local, M.col(k));
  f.Zt = std::move(Zt);
  f.M = std::move(M);
  f.a = std::vector<double>(f.a.begin() + l.start, f.a.begin() + l.start + l.n_local);
  f.z_start = l.start;
  f.comm = comm;
}

}  // namespace ssdr::kernels
