// Shrunk scatter matrices (include/ssdr/scatter/shrinkage.hpp): scikit-learn's shrinkage LDA
// statistics, every one a local sum over this rank's rows and an MPI_Allreduce.
#include "ssdr/scatter/shrinkage.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"

namespace ssdr::scatter {

namespace {

constexpr int64_t kChunk = 256;

/// The Ledoit–Wolf coefficient from the standardized samples' statistics (sklearn
/// ledoit_wolf_shrinkage): n samples, p features, trC = tr(C), normC2 = ‖C‖²_F, fourth =
/// Σ_i ‖z_i‖⁴ (Σ over the entries of (z_i z_iᵀ)∘(z_i z_iᵀ) summed over i, sklearn's beta_).
double ledoit_wolf(double n, double p, double trC, double normC2, double fourth) {
  if (p <= 1 || n <= 0) return 0.0;  // one feature: the same whatever the shrinkage (sklearn: 0)
  const double mu = trC / p;
  double beta = (fourth / n - normC2) / (p * n);
  const double delta = (normC2 - 2.0 * mu * trC + p * mu * mu) / p;  // ‖C − μI‖²_F / p
  beta = std::min(beta, delta);
  if (beta == 0 || delta <= 0) return 0.0;
  return std::max(beta, 0.0) / delta;
}

}  // namespace

ShrunkScatter shrunk_scatter(const DistMatrix& X, const std::vector<int>& labels, int classes, const Dense* basis,
                             double shrinkage) {
  const int64_t d = X.cols, nl = X.n_local;
  const int c = classes;
  SSDR_CHECK(static_cast<int64_t>(labels.size()) == nl, "shrunk_scatter: one label per local row");
  SSDR_REQUIRE(shrinkage == kLedoitWolf || (shrinkage >= 0 && shrinkage <= 1),
               "--shrinkage: expected auto or a number in [0, 1]");
  SSDR_CHECK(basis == nullptr || basis->cols == d,
             "shrunk_scatter: the basis has " + std::to_string(basis ? basis->cols : 0) + " columns for " +
                 std::to_string(d) + " dimensions");
  const bool auto_lw = shrinkage == kLedoitWolf;
  const int64_t p = basis ? basis->rows : d;  // the features' count
  const double eps = std::numeric_limits<double>::epsilon();

  // Counts and sums per class (one Allreduce).
  std::vector<double> red(static_cast<size_t>(c * (1 + d)), 0.0);
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(c + 1));
  for (int64_t i = 0; i < nl; ++i) {
    const int k = labels[static_cast<size_t>(i)];
    if (k < 0 || k >= c) continue;
    rows[static_cast<size_t>(k)].push_back(i);
    rows[static_cast<size_t>(c)].push_back(i);
    red[static_cast<size_t>(k)] += 1;
    double* s = red.data() + c + static_cast<int64_t>(k) * d;
    const double* x = X.row(i);
    for (int64_t t = 0; t < d; ++t) s[t] += x[t];
  }
  MPI_Allreduce(MPI_IN_PLACE, red.data(), static_cast<int>(red.size()), MPI_DOUBLE, MPI_SUM, X.comm);
  ShrunkScatter out;
  out.class_counts.assign(red.begin(), red.begin() + c);
  double n = 0;
  for (int k = 0; k < c; ++k) {
    SSDR_REQUIRE(out.class_counts[static_cast<size_t>(k)] > 0,
                 "--shrinkage: class " + std::to_string(k) + " has no labeled sample");
    n += out.class_counts[static_cast<size_t>(k)];
  }
  // Group means: the c classes, then all labeled rows (group c).
  Dense means(d, c + 1);
  for (int k = 0; k < c; ++k)
    for (int64_t t = 0; t < d; ++t) {
      const double s = red[static_cast<size_t>(c + k * d + t)];
      means(t, k) = s / out.class_counts[static_cast<size_t>(k)];
      means(t, c) += s;
    }
  for (int64_t t = 0; t < d; ++t) means(t, c) /= n;

  out.Sw = Dense(d, d);
  out.class_coefficients.assign(static_cast<size_t>(c), 0.0);
  std::vector<double> yb(static_cast<size_t>(kChunk * d)), tb(static_cast<size_t>(kChunk * d));
  // Centered rows [j0, j0 + b) of group g into yb (column-major d×b).
  auto centered = [&](const std::vector<int64_t>& r, size_t j0, int64_t b, const double* m) {
    for (int64_t j = 0; j < b; ++j) {
      const double* x = X.row(r[j0 + static_cast<size_t>(j)]);
      double* y = yb.data() + j * d;
      for (int64_t t = 0; t < d; ++t) y[t] = x[t] - m[t];
    }
  };
  // The targets' diagonals in the features' coordinates, weighted and summed over the classes
  // (S_w) and for the total (S_t): Σ_g w_g s_g μ_g V D_g² Vᵀ is Vᵀdiag(Σ_g w_g s_g μ_g D_g²)V,
  // one product with the basis for all the classes instead of one per class.
  std::vector<double> target_w(static_cast<size_t>(p), 0.0), target_t(static_cast<size_t>(p), 0.0);
  const std::vector<int> group_counts = [&] {
    std::vector<int> k(static_cast<size_t>(c + 1));
    for (int g = 0; g <= c; ++g) k[static_cast<size_t>(g)] = static_cast<int>(rows[static_cast<size_t>(g)].size());
    return k;
  }();
  for (int g = 0; g <= c; ++g) {
    const std::vector<int64_t>& r = rows[static_cast<size_t>(g)];
    const double ng = g < c ? out.class_counts[static_cast<size_t>(g)] : n;
    const double* m = means.col(g);
    // Σ_g = (1/n_g) Σ (x − m_g)(x − m_g)ᵀ.
    Dense S(d, d);
    for (size_t j0 = 0; j0 < r.size(); j0 += kChunk) {
      const int64_t b = std::min<int64_t>(kChunk, static_cast<int64_t>(r.size() - j0));
      centered(r, j0, b, m);
      blas::syrk('L', 'N', d, b, 1.0, yb.data(), d, 1.0, S.data(), d);
    }
    blas::symmetrize('L', d, S.data(), d);
    allreduce_sum(S, X.comm);
    for (double& v : S.v) v /= ng;

    double s = 0, mu_target = 0;
    std::vector<double> sa2;  // the target's diagonal D_g² in the features' coordinates (auto)
    if (auto_lw) {
      // The features' variances diag(VΣVᵀ) (diag Σ without a basis) and means V m (of the
      // centered features). sklearn's StandardScaler takes a feature as constant (scale 1)
      // when its two-pass variance is within the rounding bound n·ε·var + (n·ε·mean)² of the
      // raw feature's mean. Here the features are centered (the raw mean is the
      // preprocessing's) and their rows went through V, which adds rounding of the size of
      // the largest variance: the mean term is (n·ε)²·(mean² + v_max), v_max the largest
      // variance along X's columns (the features' scale). A variance computed through V,
      // diag(VΣVᵀ)_a = Σ_pq V_ap Σ_pq V_aq, cancels to zero for a feature constant in the
      // group (a pixel always 0 in one class) but keeps the rounding of its terms and of Σ:
      // at most about (d' + 2)·ε·Σ_pq |V_ap||Σ_pq||V_aq| ≤ (d' + 2)·ε·(Σ_p |V_ap| √Σ_pp)²,
      // taken 16 times as the rotation's bound; and a feature outside the span of V (its
      // row of V is the eigen-solver's leakage, a constant feature whose direction the PCA
      // dropped) has a variance of the order of that leakage: below 16·(d' + 2)·ε·v_max it
      // counts as constant too. So a feature is constant here when its variance is below
      // about 16·(d' + 2)·ε of the group's largest or total variance (10⁻¹¹ for d' = 60;
      // the PCA itself drops directions below 10⁻¹⁰ of the largest), where sklearn's rule
      // looks at the feature's own mean: the rules differ only for a feature 10¹¹ times
      // quieter than the data.
      double var_max = 0;
      std::vector<double> sd(static_cast<size_t>(d));
      for (int64_t q = 0; q < d; ++q) {
        var_max = std::max(var_max, S(q, q));
        sd[static_cast<size_t>(q)] = std::sqrt(std::max(S(q, q), 0.0));
      }
      const double rotation = 16.0 * static_cast<double>(d + 2) * eps;
      auto scale_of = [&](double v, double mu, double bound) {
        const bool constant = v <= ng * eps * v + (ng * eps) * (ng * eps) * (mu * mu + var_max) + bound;
        return constant ? 1.0 : std::sqrt(v);
      };
      sa2.assign(static_cast<size_t>(p), 1.0);
      double trC = 0, normC2 = 0, fourth = 0;
      const int64_t n_group = group_counts[static_cast<size_t>(g)];
      int64_t n_all = n_group;
      MPI_Allreduce(MPI_IN_PLACE, &n_all, 1, MPI_INT64_T, MPI_SUM, X.comm);
      if (basis && n_all < d && n_all <= 4096) {
        // Few rows (fewer than d'): Σ has rank < n_g, so everything is computed from the
        // group's rows mapped to the features, W = V·Yᵀ (p×n_g; Y the n_g centered rows,
        // gathered in global order on every rank: n_g·d' < d'² values), instead of through
        // G = VᵀD⁻²V (p·d'² per group): Z = D⁻¹W, tr C = ‖Z‖²_F/n_g,
        // ‖C‖²_F = ‖ZᵀZ‖²_F/n_g², Σ_i ‖z_i‖⁴ = Σ_i (ZᵀZ)_ii². O(p·d'·n_g) time.
        std::vector<double> mine(static_cast<size_t>(n_group * d));
        for (int64_t j = 0; j < n_group; ++j) {
          const double* x = X.row(r[static_cast<size_t>(j)]);
          for (int64_t t = 0; t < d; ++t) mine[static_cast<size_t>(j * d + t)] = x[t] - m[t];
        }
        const std::vector<double> Y = allgatherv(mine, X.comm);  // d × n_all, column-major
        // K = ZᵀZ accumulated over blocks of 256 rows of V (Z's rows: one feature each, whose
        // scale needs only that row): memory 256·n_g + n_g², never p·n_g.
        std::vector<double> K(static_cast<size_t>(n_all * n_all), 0.0);
        constexpr int64_t kRows = 256;
        const int64_t rb = std::min<int64_t>(kRows, p);
        std::vector<double> Wb(static_cast<size_t>(rb * n_all));
        for (int64_t a0 = 0; a0 < p; a0 += kRows) {
          const int64_t b = std::min<int64_t>(kRows, p - a0);
          blas::gemm('N', 'N', b, n_all, d, 1.0, basis->data() + a0, p, Y.data(), d, 0.0, Wb.data(), rb);
          for (int64_t a = 0; a < b; ++a) {
            double v = 0, e = 0, mu = 0;
            for (int64_t j = 0; j < n_all; ++j) v += Wb[static_cast<size_t>(a + j * rb)] * Wb[static_cast<size_t>(a + j * rb)];
            v /= ng;
            for (int64_t q = 0; q < d; ++q) {
              const double vq = (*basis)(a0 + a, q);
              e += std::abs(vq) * sd[static_cast<size_t>(q)];
              mu += vq * m[q];
            }
            const double sa = scale_of(v, mu, rotation * (e * e + var_max));
            sa2[static_cast<size_t>(a0 + a)] = sa * sa;
            for (int64_t j = 0; j < n_all; ++j) Wb[static_cast<size_t>(a + j * rb)] /= sa;
          }
          blas::syrk('L', 'T', n_all, b, 1.0, Wb.data(), rb, 1.0, K.data(), n_all);
        }
        for (int64_t i = 0; i < n_all; ++i) {
          const double kii = K[static_cast<size_t>(i + i * n_all)];
          trC += kii;
          fourth += kii * kii;
          normC2 += kii * kii;
          for (int64_t j = i + 1; j < n_all; ++j) normC2 += 2.0 * K[static_cast<size_t>(j + i * n_all)] * K[static_cast<size_t>(j + i * n_all)];
        }
        trC /= ng;
        normC2 /= ng * ng;
      } else {
        // Then G = VᵀD⁻²V (d'×d': ‖z‖² = (x − m)ᵀG(x − m)), accumulated over blocks of the
        // basis' rows (no p×d' copy: p may be a sparse data set's 10⁶ features).
        Dense G(d, d);
        if (basis) {
          constexpr int64_t kRows = 256;
          const int64_t rb = std::min<int64_t>(kRows, p);
          Dense A(rb, d), B(rb, d);
          for (int64_t a0 = 0; a0 < p; a0 += kRows) {
            const int64_t b = std::min<int64_t>(kRows, p - a0);
            const double* V = basis->data() + a0;  // rows a0.. of V (leading dimension p)
            blas::gemm('N', 'N', b, d, d, 1.0, V, p, S.data(), d, 0.0, A.data(), rb);  // V_blk Σ
            for (int64_t a = 0; a < b; ++a) {
              double v = 0, e = 0, mu = 0;
              for (int64_t q = 0; q < d; ++q) {
                const double vq = V[a + q * p];
                v += A(a, q) * vq;
                e += std::abs(vq) * sd[static_cast<size_t>(q)];
                mu += vq * m[q];
              }
              const double sa = scale_of(v, mu, rotation * (e * e + var_max));
              sa2[static_cast<size_t>(a0 + a)] = sa * sa;
              for (int64_t q = 0; q < d; ++q) B(a, q) = V[a + q * p] / sa;
            }
            blas::syrk('L', 'T', d, b, 1.0, B.data(), rb, 1.0, G.data(), d);
          }
          blas::symmetrize('L', d, G.data(), d);
        } else {
          for (int64_t a = 0; a < d; ++a) {
            const double sa = scale_of(S(a, a), m[a], 0.0);
            G(a, a) = 1.0 / (sa * sa);
            sa2[static_cast<size_t>(a)] = sa * sa;
          }
        }
        // C = D⁻¹VΣVᵀD⁻¹ has tr C = tr(ΣG) and ‖C‖²_F = tr(ΣGΣG).
        Dense H(d, d);
        blas::gemm('N', 'N', d, d, d, 1.0, S.data(), d, G.data(), d, 0.0, H.data(), d);
        for (int64_t i = 0; i < d; ++i) {
          trC += H(i, i);
          for (int64_t j = 0; j < d; ++j) normC2 += H(i, j) * H(j, i);
        }
        // Σ_i ‖z_i‖⁴ = Σ_i ((x_i − m)ᵀG(x_i − m))².
        for (size_t j0 = 0; j0 < r.size(); j0 += kChunk) {
          const int64_t b = std::min<int64_t>(kChunk, static_cast<int64_t>(r.size() - j0));
          centered(r, j0, b, m);
          blas::gemm('N', 'N', d, b, d, 1.0, G.data(), d, yb.data(), d, 0.0, tb.data(), d);
          for (int64_t j = 0; j < b; ++j) {
            double q = 0;
            for (int64_t t = 0; t < d; ++t) q += yb[static_cast<size_t>(j * d + t)] * tb[static_cast<size_t>(j * d + t)];
            fourth += q * q;
          }
        }
        MPI_Allreduce(MPI_IN_PLACE, &fourth, 1, MPI_DOUBLE, MPI_SUM, X.comm);
      }
      s = ledoit_wolf(ng, static_cast<double>(p), trC, normC2, fourth);
      mu_target = trC / static_cast<double>(p);
    } else {
      s = shrinkage;
      double tr = 0;
      for (int64_t i = 0; i < d; ++i) tr += S(i, i);
      mu_target = tr / static_cast<double>(p);  // the target tr Σ/p·I: VᵀIV = I
    }
    const double w = g < c ? ng / n : 1.0;  // the class's prior in S_w; the total alone in S_t
    std::vector<double>& acc = g < c ? target_w : target_t;
    if (auto_lw) {
      for (int64_t a = 0; a < p; ++a) acc[static_cast<size_t>(a)] += w * s * mu_target * sa2[static_cast<size_t>(a)];
    } else {
      for (int64_t a = 0; a < p; ++a) acc[static_cast<size_t>(a)] += w * s * mu_target;
    }
    for (double& v : S.v) v *= 1 - s;
    if (g < c) {
      out.class_coefficients[static_cast<size_t>(g)] = s;
      for (size_t i = 0; i < S.v.size(); ++i) out.Sw.v[i] += w * S.v[i];
    } else {
      out.total_coefficient = s;
      out.St = std::move(S);
    }
  }
  // + Vᵀdiag(target)V: with a basis over blocks of its rows; without one (V = I) the
  // diagonal itself. A fixed coefficient's target tr Σ/p·I is the identity's multiple in
  // either coordinates (VᵀV = I), added as such.
  for (int which = 0; which < 2; ++which) {
    const std::vector<double>& t = which == 0 ? target_w : target_t;
    Dense& M = which == 0 ? out.Sw : out.St;
    if (basis && auto_lw) {
      constexpr int64_t kRows = 256;
      const int64_t rb = std::min<int64_t>(kRows, p);
      Dense B(rb, d), T(d, d);
      for (int64_t a0 = 0; a0 < p; a0 += kRows) {
        const int64_t b = std::min<int64_t>(kRows, p - a0);
        const double* V = basis->data() + a0;
        for (int64_t a = 0; a < b; ++a) {
          const double root = std::sqrt(std::max(t[static_cast<size_t>(a0 + a)], 0.0));
          for (int64_t q = 0; q < d; ++q) B(a, q) = V[a + q * p] * root;
        }
        blas::syrk('L', 'T', d, b, 1.0, B.data(), rb, 1.0, T.data(), d);
      }
      blas::symmetrize('L', d, T.data(), d);
      for (size_t i = 0; i < M.v.size(); ++i) M.v[i] += T.v[i];
    } else if (auto_lw) {
      for (int64_t a = 0; a < d; ++a) M(a, a) += t[static_cast<size_t>(a)];
    } else {
      for (int64_t a = 0; a < d; ++a) M(a, a) += t[0];
    }
  }
  out.Sb = Dense(d, d);
  for (size_t i = 0; i < out.Sb.v.size(); ++i) out.Sb.v[i] = out.St.v[i] - out.Sw.v[i];
  for (int64_t j = 0; j < d; ++j)  // exact symmetry (the eigen-solver reads one triangle)
    for (int64_t i = j + 1; i < d; ++i) {
      out.Sb(i, j) = out.Sb(j, i) = 0.5 * (out.Sb(i, j) + out.Sb(j, i));
      out.Sw(i, j) = out.Sw(j, i) = 0.5 * (out.Sw(i, j) + out.Sw(j, i));
    }
  return out;
}

}  // namespace ssdr::scatter
