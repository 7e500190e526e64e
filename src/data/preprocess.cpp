#include "ssdr/data/preprocess.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/ordered_sum.hpp"
#include "preprocess_internal.hpp"

namespace ssdr::data {

namespace detail {

int64_t components_to_keep(const std::vector<double>& w, const PreprocessOptions& options, int64_t count,
                           double total) {
  const int64_t r = static_cast<int64_t>(w.size());
  const double largest = r > 0 ? std::max(w.back(), 0.0) : 0.0;
  // The eigenvalues are replicated (the same bits on every rank), so this check is collective.
  SSDR_REQUIRE(largest > 0, "every feature is constant on the " + std::to_string(count) +
                                " transductive samples (zero variance): there is nothing to project");
  int64_t keep = 0;
  if (options.pca_energy > 0) {
    if (!(total > 0)) {
      total = 0;
      for (double e : w) total += std::max(e, 0.0);
    }
    double acc = 0;
    for (int64_t k = r - 1; k >= 0; --k) {
      if (w[static_cast<size_t>(k)] <= 1e-10 * largest) break;
      acc += w[static_cast<size_t>(k)];
      ++keep;
      if (acc >= options.pca_energy * total * (1 - 1e-12)) break;
    }
  } else {
    for (int64_t k = r - 1; k >= 0; --k)
      if (w[static_cast<size_t>(k)] > 1e-10 * largest) ++keep;
  }
  if (options.pca_dim > 0) keep = std::min(keep, options.pca_dim);
  return std::max<int64_t>(keep, 1);
}

}  // namespace detail

using detail::components_to_keep;

Scaling parse_scaling(const std::string& name) {
  if (name == "none") return Scaling::none;
  if (name == "minmax" || name == "unit-range") return Scaling::unit_range;
  if (name == "standardize") return Scaling::standardize;
  if (name == "global") return Scaling::global_unit;
  throw Error("--scaling: expected none, minmax, standardize or global, got '" + name + "'", __FILE__, __LINE__, true);
}

std::string to_string(Scaling s) {
  switch (s) {
    case Scaling::none: return "none";
    case Scaling::unit_range: return "minmax";
    case Scaling::standardize: return "standardize";
    case Scaling::global_unit: return "global";
  }
  return "none";
}

namespace {

/// integer_covariance: the largest magnitude of a row value, and the rows per exact chunk.
constexpr double kIntegerCovarianceMax = 255;
constexpr int64_t kIntegerChunk = 256;
/// Fit rows at which the exact route's double sums (≤ 255²·n) would pass 2⁵³: the covariance
/// takes the double route from there on.
constexpr int64_t kIntegerCovarianceRowsMax = (int64_t{1} << 53) / (255 * 255);

/// Local indices of the fit rows.
/// The rows a preprocessing reads: a DistMatrix's doubles, or typed rows (uint8, float32)
/// converted row by row into one scratch row (exactly), so every sum sees the same doubles.
struct Rows {
  MPI_Comm comm = MPI_COMM_WORLD;
  int64_t n_local = 0, cols = 0;
  const DistMatrix* dense = nullptr;
  const TypedRows* typed = nullptr;
  mutable std::vector<double> scratch;
  explicit Rows(const DistMatrix& X) : comm(X.comm), n_local(X.n_local), cols(X.cols), dense(&X) {}
  explicit Rows(const TypedRows& X)
      : comm(X.comm), n_local(X.n_local), cols(X.cols), typed(&X), scratch(static_cast<size_t>(X.cols)) {}
  /// Local row i as doubles, valid until the next call. Local.
  const double* row(int64_t i) const { return dense ? dense->row(i) : typed->row(i, scratch.data()); }
};

std::vector<int64_t> fit_rows(const std::vector<char>& fit) {
  std::vector<int64_t> idx;
  for (size_t i = 0; i < fit.size(); ++i)
    if (fit[i]) idx.push_back(static_cast<int64_t>(i));
  return idx;
}

/// Per-feature Σ over the fit rows of f(row) (f writes d values), in the rank-independent
/// order of ordered_row_sum: the same bits on any rank count, so the graph built on the
/// preprocessed data breaks distance ties the same way. Collective.
std::vector<double> ordered_column_sums(const Rows& X, const std::vector<int64_t>& rows,
                                        const std::function<void(const double*, double*)>& f) {
  const int64_t d = X.cols;
  if (d == 0) return {};
  return ordered_row_sum(
      X.comm, static_cast<int64_t>(rows.size()), d, d,
      [&](int64_t i, double* out) { f(X.row(rows[static_cast<size_t>(i)]), out); },
      [d](const double* block, int64_t n, double* out) {
        std::fill(out, out + d, 0.0);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < d; ++j) out[j] += block[i * d + j];
      });
}

/// Per-feature sums over the fit rows and their number.
void column_sums(const Rows& X, const std::vector<int64_t>& rows, std::vector<double>& sum,
                 int64_t& count) {
  const int64_t d = X.cols;
  sum = ordered_column_sums(X, rows, [d](const double* x, double* out) { std::copy_n(x, d, out); });
  count = static_cast<int64_t>(rows.size());
  MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, X.comm);
}

inline double transformed(const Preprocessor& p, const double* x, int64_t j) {
  double v = x[j];
  if (!p.shift.empty()) v -= p.shift[static_cast<size_t>(j)];
  if (!p.scale.empty()) v *= p.scale[static_cast<size_t>(j)];
  return v;
}

/// True on every rank when every value of every fit row (on every rank) is an integer of
/// magnitude at most kIntegerCovarianceMax: the rows integer_covariance sums exactly. uint8
/// rows are, without a pass. Collective over X.comm (one MPI_Allreduce), so every rank takes
/// the same route.
bool small_integer_rows(const Rows& X, const std::vector<int64_t>& rows) {
  int ok = 1;
  if (!(X.typed && X.typed->type == ElementType::u8)) {
    const int64_t d = X.cols;
    for (size_t i = 0; i < rows.size() && ok; ++i) {
      const double* x = X.row(rows[i]);
      for (int64_t j = 0; j < d; ++j)
        if (!(std::abs(x[j]) <= kIntegerCovarianceMax) || x[j] != std::trunc(x[j])) {
          ok = 0;
          break;
        }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, X.comm);
  return ok == 1;
}

/// The covariance of the transformed fit rows, C = Σ (z − m)(z − m)ᵀ / n_fit with z the
/// scaled row (z_j = (x_j − shift_j)·scale_j), for rows of integers |x_j| ≤ 255, from exact
/// integer sums: per chunk of kIntegerChunk rows one SSYRK of the rows as floats, whose
/// every product (≤ 255² = 65 025) and partial sum (≤ 256·65 025 < 2²⁴) is an integer that
/// float holds exactly, so the chunk's Gram is exact whatever order or FMA the kernel uses;
/// the chunks' Grams G = Σ x xᵀ and the column sums s = Σ x are added in double, exact for
/// integers below 2⁵³ (the caller keeps n_fit below kIntegerCovarianceRowsMax, 1.4·10¹¹),
/// then over the ranks (exact in any order). Then
///   C_ij = (n·G_ij − s_i·s_j) / n² · scale_i·scale_j
/// with the numerator an exact 128-bit integer: C_ij carries at most 4 roundings (the
/// numerator's conversion, the division by n², exact for n_fit < 9.4·10⁷, one more rounding
/// above, and the two scale factors), |δC_ij| ≤ 4u|C_ij| (u = 2⁻⁵³), where the double
/// route's DSYRKs of centered rows carry γ_256-size errors per chunk and the tree's sums. Exact sums do not depend on the
/// order, so C has the same bits on any rank count and layout without ordered_row_sum's
/// tree, and single precision runs the SSYRK at about twice the DSYRK's rate: the whole
/// preprocessing of 1.05 M Fashion-MNIST rows (F = 1, 2 ranks, PCA to 95 %) took 8.6 s
/// against 13.2 s. Memory: d² floats + d² doubles + kIntegerChunk·d floats per rank.
/// Collective over X.comm.
Dense integer_covariance(const Rows& X, const std::vector<int64_t>& rows, const Preprocessor& p, int64_t count) {
  static_assert(kIntegerChunk * kIntegerCovarianceMax * kIntegerCovarianceMax < (1 << 24),
                "a chunk's Gram must be exact in float");
  const int64_t d = X.cols, n = static_cast<int64_t>(rows.size());
  std::vector<float> block(static_cast<size_t>(kIntegerChunk * d)), gram(static_cast<size_t>(d * d));
  // [G's lower triangle by columns (d×d storage, upper part unused) | s]: one reduction.
  std::vector<double> acc(static_cast<size_t>(d * d + d), 0.0);
  double* G = acc.data();
  double* s = acc.data() + d * d;
  for (int64_t i0 = 0; i0 < n; i0 += kIntegerChunk) {
    const int64_t b = std::min(kIntegerChunk, n - i0);
    for (int64_t i = 0; i < b; ++i) {
      const double* x = X.row(rows[static_cast<size_t>(i0 + i)]);
      float* f = block.data() + i * d;
      for (int64_t j = 0; j < d; ++j) {
        f[j] = static_cast<float>(x[j]);
        s[j] += x[j];
      }
    }
    // block is row-major b×d = column-major d×b: gram = block·blockᵀ (lower triangle).
    blas::syrk('L', 'N', d, b, 1.0f, block.data(), d, 0.0f, gram.data(), d);
    for (int64_t j = 0; j < d; ++j) {
      const float* g = gram.data() + j * d;
      double* a = G + j * d;
      for (int64_t i = j; i < d; ++i) a[i] += static_cast<double>(g[i]);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, acc.data(), static_cast<int>(acc.size()), MPI_DOUBLE, MPI_SUM, X.comm);
  __extension__ typedef __int128 int128;
  const double n2 = static_cast<double>(count) * static_cast<double>(count);
  Dense C(d, d);
  for (int64_t j = 0; j < d; ++j)
    for (int64_t i = j; i < d; ++i) {
      // Every factor is an integer held exactly (|G_ij| ≤ 65 025·n, |s_i| ≤ 255·n).
      const int128 num = static_cast<int128>(count) * static_cast<int128>(static_cast<int64_t>(G[i + j * d])) -
                         static_cast<int128>(static_cast<int64_t>(s[i])) * static_cast<int128>(static_cast<int64_t>(s[j]));
      double v = static_cast<double>(num) / n2;
      if (!p.scale.empty()) v = v * p.scale[static_cast<size_t>(i)] * p.scale[static_cast<size_t>(j)];
      C(i, j) = v;
    }
  return C;
}

/// The PCA basis through the n_fit×n_fit Gram matrix G = ZZᵀ/n_fit of the centered fit rows
/// Z (C = ZᵀZ/n_fit has the same nonzero eigenvalues; v = Zᵀu/‖Zᵀu‖). Each rank in turn
/// broadcasts its fit rows; every rank computes G's entries between its rows and those in
/// 64×64 GEMM tiles of one fixed shape (zero-padded), so an entry's bits do not depend on
/// the partition; the rows of G are then gathered (G replicated, lower triangle taken) and
/// eigen-decomposed by LAPACK on every rank; Zᵀu is summed by ordered_row_sum. Collective.
void gram_basis(const Rows& X, const std::vector<int64_t>& rows, const Preprocessor& pre, int64_t count,
                const PreprocessOptions& options, Preprocessor& p) {
  constexpr int64_t kTile = 64;
  const int64_t d = X.cols;
  const int64_t nl = static_cast<int64_t>(rows.size());
  int size = 1, me = 0;
  MPI_Comm_size(X.comm, &size);
  MPI_Comm_rank(X.comm, &me);
  // Z: this rank's centered fit rows, row-major nl×d, zero-padded to whole tiles.
  const int64_t nl_pad = (nl + kTile - 1) / kTile * kTile;
  std::vector<double> Z(static_cast<size_t>(nl_pad * d), 0.0);
  for (int64_t i = 0; i < nl; ++i) {
    const double* x = X.row(rows[static_cast<size_t>(i)]);
    for (int64_t j = 0; j < d; ++j) Z[static_cast<size_t>(i * d + j)] = transformed(pre, x, j) - pre.mean[static_cast<size_t>(j)];
  }
  std::vector<int64_t> counts(static_cast<size_t>(size));
  MPI_Allgather(&nl, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, X.comm);
  std::vector<int64_t> offsets(static_cast<size_t>(size) + 1, 0);
  for (int q = 0; q < size; ++q) offsets[static_cast<size_t>(q) + 1] = offsets[static_cast<size_t>(q)] + counts[static_cast<size_t>(q)];
  const int64_t nf = offsets.back();
  // My rows of G (nl × nf, row-major).
  std::vector<double> mine(static_cast<size_t>(nl * nf), 0.0);
  std::vector<double> other, tile(static_cast<size_t>(kTile * kTile));
  for (int q = 0; q < size; ++q) {
    const int64_t nq = counts[static_cast<size_t>(q)];
    if (nq == 0) continue;
    const int64_t nq_pad = (nq + kTile - 1) / kTile * kTile;
    const double* Zq = nullptr;
    if (q == me) {
      Zq = Z.data();
    } else {
      other.assign(static_cast<size_t>(nq_pad * d), 0.0);
      Zq = other.data();
    }
    // Broadcast in pieces of at most 2^30 doubles (MPI counts are int).
    for (int64_t at = 0; at < nq * d; at += int64_t{1} << 30) {
      const int64_t len = std::min<int64_t>(int64_t{1} << 30, nq * d - at);
      MPI_Bcast(const_cast<double*>(Zq) + at, static_cast<int>(len), MPI_DOUBLE, q, X.comm);
    }
    for (int64_t i0 = 0; i0 < nl; i0 += kTile)
      for (int64_t j0 = 0; j0 < nq; j0 += kTile) {
        // Column-major tile (kTile×kTile) = Z_i·Z_jᵀ: rows of Z are columns of a d×n matrix.
        blas::gemm('T', 'N', kTile, kTile, d, 1.0, Z.data() + i0 * d, d, Zq + j0 * d, d, 0.0, tile.data(), kTile);
        for (int64_t a = 0; a < kTile && i0 + a < nl; ++a)
          for (int64_t b = 0; b < kTile && j0 + b < nq; ++b)
            mine[static_cast<size_t>((i0 + a) * nf + offsets[static_cast<size_t>(q)] + j0 + b)] =
                tile[static_cast<size_t>(a + b * kTile)];
      }
  }
  other.clear();
  other.shrink_to_fit();
  // G replicated: gather the rows (global fit order), keep the lower triangle (entry (i, j),
  // i ≥ j, as computed by the owner of row i) and mirror it.
  Dense G(nf, nf);
  {
    SSDR_REQUIRE(nf * nf < (int64_t{1} << 31), "PCA by the Gram route: " + std::to_string(nf) +
                                                  " transductive samples give a Gram matrix too large for one rank");
    const std::vector<double> all = allgatherv(mine, X.comm);  // my nl rows of G, in fit order
    for (int64_t i = 0; i < nf; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        const double g = all[static_cast<size_t>(i * nf + j)] / static_cast<double>(count);
        G(i, j) = g;
        G(j, i) = g;
      }
  }
  std::vector<double> w(static_cast<size_t>(nf));
  lapack::syev(nf, G.data(), nf, w.data());  // ascending; G now holds the eigenvectors U
  const int64_t keep = components_to_keep(w, options, count);
  p.route = "gram";
  for (double e : w) p.total_variance += std::max(e, 0.0);
  // Zᵀ U_keep (d × keep), summed over fit rows in ordered_row_sum's fixed order.
  const int64_t width = d + keep;
  std::vector<double> ZU = ordered_row_sum(
      X.comm, nl, width, d * keep,
      [&](int64_t i, double* out) {
        std::copy_n(Z.data() + i * d, d, out);
        const int64_t g = offsets[static_cast<size_t>(me)] + i;
        for (int64_t c = 0; c < keep; ++c) out[d + c] = G(g, nf - 1 - c);
      },
      [&](const double* block, int64_t n, double* out) {
        blas::gemm('N', 'T', d, keep, n, 1.0, block, width, block + d, width, 0.0, out, d);
      });
  p.basis = Dense(d, keep);
  p.eigenvalues.resize(static_cast<size_t>(keep));
  for (int64_t c = 0; c < keep; ++c) {
    p.eigenvalues[static_cast<size_t>(c)] = w[static_cast<size_t>(nf - 1 - c)];
    double norm2 = 0;
    for (int64_t i = 0; i < d; ++i) norm2 += ZU[static_cast<size_t>(i + c * d)] * ZU[static_cast<size_t>(i + c * d)];
    const double inv = norm2 > 0 ? 1.0 / std::sqrt(norm2) : 0.0;
    for (int64_t i = 0; i < d; ++i) p.basis(i, c) = ZU[static_cast<size_t>(i + c * d)] * inv;
  }
  canonicalize_signs(p.basis);
}

}  // namespace

namespace {
Preprocessor fit_preprocessor_rows(const Rows& X, const std::vector<char>& fit, const PreprocessOptions& options);
}  // namespace

Dense detail::integer_covariance(const DistMatrix& X, const std::vector<char>& fit, const std::vector<double>& scale) {
  SSDR_CHECK(static_cast<int64_t>(fit.size()) == X.n_local, "integer_covariance: mask length");
  SSDR_CHECK(scale.empty() || static_cast<int64_t>(scale.size()) == X.cols, "integer_covariance: scale length");
  const Rows rows_of(X);
  const std::vector<int64_t> rows = fit_rows(fit);
  int64_t count = static_cast<int64_t>(rows.size());
  MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, X.comm);
  SSDR_REQUIRE(count > 0 && count < kIntegerCovarianceRowsMax, "integer_covariance: no fit row, or too many for exact sums");
  SSDR_REQUIRE(small_integer_rows(rows_of, rows), "integer_covariance: a fit value is not an integer of magnitude <= 255");
  Preprocessor p;
  p.scale = scale;
  Dense C = ssdr::data::integer_covariance(rows_of, rows, p, count);
  blas::symmetrize('L', X.cols, C.data(), X.cols);
  return C;
}

Preprocessor fit_preprocessor(const DistMatrix& X, const std::vector<char>& fit, const PreprocessOptions& options) {
  return fit_preprocessor_rows(Rows(X), fit, options);
}

Preprocessor fit_preprocessor(const TypedRows& X, const std::vector<char>& fit, const PreprocessOptions& options) {
  return fit_preprocessor_rows(Rows(X), fit, options);
}

namespace {
Preprocessor fit_preprocessor_rows(const Rows& X, const std::vector<char>& fit, const PreprocessOptions& options) {
  SSDR_CHECK(static_cast<int64_t>(fit.size()) == X.n_local, "fit_preprocessor: mask length");
  // −1 (any value ≤ 0 from code) means "drop the null space only"; the option itself takes
  // (0, 1] (checked where it is parsed: 0 or NaN must not mean "default").
  SSDR_REQUIRE(!(options.pca_energy > 1.0) && !std::isnan(options.pca_energy),
             "--pca-energy must be in (0, 1], got " + std::to_string(options.pca_energy));
  SSDR_REQUIRE(options.pca_dim >= 0, "--pca-dim must be >= 0, got " + std::to_string(options.pca_dim));
  const int64_t d = X.cols;
  Preprocessor p;
  const std::vector<int64_t> rows = fit_rows(fit);
  std::vector<double> sum;
  int64_t count = 0;
  column_sums(X, rows, sum, count);
  SSDR_REQUIRE(count > 0, "no transductive sample to fit the preprocessing on");

  if (options.scaling == Scaling::unit_range) {
    std::vector<double> lo(static_cast<size_t>(d), INFINITY), hi(static_cast<size_t>(d), -INFINITY);
    for (int64_t i = 0; i < X.n_local; ++i) {
      if (!fit[static_cast<size_t>(i)]) continue;
      const double* x = X.row(i);
      for (int64_t j = 0; j < d; ++j) {
        lo[static_cast<size_t>(j)] = std::min(lo[static_cast<size_t>(j)], x[j]);
        hi[static_cast<size_t>(j)] = std::max(hi[static_cast<size_t>(j)], x[j]);
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, lo.data(), static_cast<int>(d), MPI_DOUBLE, MPI_MIN, X.comm);
    MPI_Allreduce(MPI_IN_PLACE, hi.data(), static_cast<int>(d), MPI_DOUBLE, MPI_MAX, X.comm);
    p.shift = lo;
    p.scale.resize(static_cast<size_t>(d));
    for (int64_t j = 0; j < d; ++j) {
      const double r = hi[static_cast<size_t>(j)] - lo[static_cast<size_t>(j)];
      p.scale[static_cast<size_t>(j)] = r > 0 ? 1.0 / r : 1.0;
    }
  } else if (options.scaling == Scaling::standardize) {
    p.shift.resize(static_cast<size_t>(d));
    for (int64_t j = 0; j < d; ++j) p.shift[static_cast<size_t>(j)] = sum[static_cast<size_t>(j)] / static_cast<double>(count);
    const std::vector<double> ss = ordered_column_sums(X, rows, [&](const double* x, double* out) {
      for (int64_t j = 0; j < d; ++j) {
        const double t = x[j] - p.shift[static_cast<size_t>(j)];
        out[j] = t * t;
      }
    });
    p.scale.resize(static_cast<size_t>(d));
    for (int64_t j = 0; j < d; ++j) {
      const double sd = std::sqrt(ss[static_cast<size_t>(j)] / static_cast<double>(count));
      p.scale[static_cast<size_t>(j)] = sd > 0 ? 1.0 / sd : 1.0;
    }
  } else if (options.scaling == Scaling::global_unit) {
    const std::vector<double> css = ordered_column_sums(X, rows, [&](const double* x, double* out) {
      for (int64_t j = 0; j < d; ++j) {
        const double t = x[j] - sum[static_cast<size_t>(j)] / static_cast<double>(count);
        out[j] = t * t;
      }
    });
    double ss = 0;
    for (double v : css) ss += v;
    const double ms = ss / static_cast<double>(count);
    p.scale.assign(static_cast<size_t>(d), ms > 0 ? 1.0 / std::sqrt(ms) : 1.0);
  }

  // Mean of the scaled fit samples.
  p.mean.resize(static_cast<size_t>(d));
  for (int64_t j = 0; j < d; ++j) {
    double m = sum[static_cast<size_t>(j)] / static_cast<double>(count);
    if (!p.shift.empty()) m -= p.shift[static_cast<size_t>(j)];
    if (!p.scale.empty()) m *= p.scale[static_cast<size_t>(j)];
    p.mean[static_cast<size_t>(j)] = m;
  }
  if (!options.pca) return p;

  const bool gram = options.route == PcaRoute::gram || (options.route == PcaRoute::automatic && count < d);
  if (gram) {
    gram_basis(X, rows, p, count, options, p);
    return p;
  }

  // Covariance C = Σ (x − m)(x − m)ᵀ / n_fit. Rows of small integers (uint8 images, and
  // their double or float copies) take the exact route; other rows one DSYRK per fixed chunk
  // of fit rows, chunks added in ordered_row_sum's fixed tree (bitwise the same C on any
  // rank count).
  Dense C(d, d);
  if (d > 0 && count < kIntegerCovarianceRowsMax && small_integer_rows(X, rows)) {
    C = integer_covariance(X, rows, p, count);
    p.route = "covariance-exact";
  } else if (d > 0) {
    C.v = ordered_row_sum(
        X.comm, static_cast<int64_t>(rows.size()), d, d * d,
        [&](int64_t i, double* out) {
          const double* x = X.row(rows[static_cast<size_t>(i)]);
          for (int64_t j = 0; j < d; ++j) out[j] = transformed(p, x, j) - p.mean[static_cast<size_t>(j)];
        },
        [d](const double* block, int64_t n, double* out) {
          // block is row-major n×d = column-major d×n: out = block·blockᵀ (lower triangle).
          std::fill(out, out + d * d, 0.0);
          blas::syrk('L', 'N', d, n, 1.0, block, d, 0.0, out, d);
        });
    for (double& c : C.v) c /= static_cast<double>(count);
  }
  blas::symmetrize('L', d, C.data(), d);

  std::vector<double> w(static_cast<size_t>(d));
  lapack::syev(d, C.data(), d, w.data());  // ascending
  const int64_t keep = components_to_keep(w, options, count);
  if (p.route.empty()) p.route = "covariance";
  for (double e : w) p.total_variance += std::max(e, 0.0);
  p.basis = Dense(d, keep);
  p.eigenvalues.resize(static_cast<size_t>(keep));
  for (int64_t c = 0; c < keep; ++c) {
    const int64_t src = d - 1 - c;
    p.eigenvalues[static_cast<size_t>(c)] = w[static_cast<size_t>(src)];
    for (int64_t i = 0; i < d; ++i) p.basis(i, c) = C(i, src);
  }
  canonicalize_signs(p.basis);
  return p;
}
}  // namespace

DistMatrix apply(const Preprocessor& p, const DistMatrix& X) {
  const int64_t d = X.cols;
  SSDR_CHECK(p.mean.empty() || static_cast<int64_t>(p.mean.size()) == d,
             "preprocessing was fitted on " + std::to_string(p.mean.size()) + " features, data has " + std::to_string(d));
  DistMatrix Y = make_dist_like(X, output_dim(p, d));
  std::vector<double> Z, T;
  for (int64_t i0 = 0; i0 < X.n_local; i0 += kApplyTile)
    apply_tile(p, X.row(i0), std::min(kApplyTile, X.n_local - i0), d, Y.row(i0), Z, T);
  return Y;
}

void apply_tile(const Preprocessor& p, const double* x, int64_t b, int64_t d, double* out, std::vector<double>& Z,
                std::vector<double>& T) {
  SSDR_CHECK(b >= 0 && b <= kApplyTile, "apply_tile: " + std::to_string(b) + " rows, at most " + std::to_string(kApplyTile));
  SSDR_CHECK(p.mean.empty() || static_cast<int64_t>(p.mean.size()) == d,
             "preprocessing was fitted on " + std::to_string(p.mean.size()) + " features, data has " + std::to_string(d));
  const bool project = p.basis.rows > 0;
  SSDR_CHECK(!project || p.basis.rows == d,
             "preprocessing: the PCA basis has " + std::to_string(p.basis.rows) + " rows, data has " + std::to_string(d));
  const int64_t out_cols = output_dim(p, d);
  if (b == 0) return;
  double* z = out;  // without PCA the centered rows are the result
  if (project) {
    Z.assign(static_cast<size_t>(kApplyTile * d), 0.0);
    z = Z.data();
  }
  for (int64_t i = 0; i < b; ++i) {
    const double* xi = x + i * d;
    double* zi = z + i * d;
    for (int64_t j = 0; j < d; ++j) zi[j] = transformed(p, xi, j) - (p.mean.empty() ? 0.0 : p.mean[static_cast<size_t>(j)]);
  }
  if (!project) return;
  T.resize(static_cast<size_t>(kApplyTile * out_cols));
  if (out_cols > 0 && d > 0)
    blas::gemm('T', 'N', out_cols, kApplyTile, d, 1.0, p.basis.data(), p.basis.rows, Z.data(), d, 0.0, T.data(), out_cols);
  std::copy_n(T.data(), b * out_cols, out);
}

namespace {
template <class T>
DistMatrixT<T> apply_rows(const Preprocessor& p, const Rows& X, const std::vector<char>& keep);
}  // namespace

DistMatrix apply(const Preprocessor& p, const DistMatrix& X, const std::vector<char>& keep) {
  return apply_rows<double>(p, Rows(X), keep);
}

DistMatrix apply(const Preprocessor& p, const TypedRows& X, const std::vector<char>& keep) {
  return apply_rows<double>(p, Rows(X), keep);
}

DistMatrixF apply_single(const Preprocessor& p, const DistMatrix& X, const std::vector<char>& keep) {
  return apply_rows<float>(p, Rows(X), keep);
}

DistMatrixF apply_single(const Preprocessor& p, const TypedRows& X, const std::vector<char>& keep) {
  return apply_rows<float>(p, Rows(X), keep);
}

namespace {
template <class T>
DistMatrixT<T> apply_rows(const Preprocessor& p, const Rows& X, const std::vector<char>& keep) {
  const int64_t d = X.cols;
  SSDR_CHECK(static_cast<int64_t>(keep.size()) == X.n_local,
             "apply: " + std::to_string(keep.size()) + " row flags for " + std::to_string(X.n_local) + " local rows");
  SSDR_CHECK(p.mean.empty() || static_cast<int64_t>(p.mean.size()) == d,
             "preprocessing was fitted on " + std::to_string(p.mean.size()) + " features, data has " +
                 std::to_string(d));
  int64_t kept = 0;
  for (char k : keep) kept += k != 0;
  const int64_t out_cols = output_dim(p, d);
  DistMatrixT<T> Y = dist_layout<T>(X.comm, layout_from_local(kept, X.comm), out_cols);
  Y.v.assign(static_cast<size_t>(kept * out_cols), T(0));
  // Kept rows gathered into 64-row tiles: a row's bits do not depend on where it sits in
  // its tile or on how many rows this rank holds.
  // Float output (--precision single): each tile computed in double, then rounded once.
  std::vector<double> in(static_cast<size_t>(kApplyTile * d)), Z, Tb, o;
  if (!std::is_same<T, double>::value) o.resize(static_cast<size_t>(kApplyTile * out_cols));
  int64_t filled = 0, written = 0;
  auto flush = [&] {
    if constexpr (std::is_same<T, double>::value) {
      apply_tile(p, in.data(), filled, d, Y.v.data() + written * out_cols, Z, Tb);
    } else {
      apply_tile(p, in.data(), filled, d, o.data(), Z, Tb);
      std::copy_n(o.data(), filled * out_cols, Y.v.data() + written * out_cols);  // rounds to T
    }
    written += filled;
    filled = 0;
  };
  for (int64_t i = 0; i < X.n_local; ++i) {
    if (!keep[static_cast<size_t>(i)]) continue;
    std::copy_n(X.row(i), d, in.data() + filled * d);
    if (++filled == kApplyTile) flush();
  }
  flush();
  return Y;
}
}  // namespace

namespace {

/// Returns the whole pages of [begin, end) to the system (their contents are dead; a later
/// write gets a zero page). Linux: madvise(MADV_DONTNEED); elsewhere nothing.
void release_pages(void* begin, void* end) {
#if defined(__linux__) && defined(MADV_DONTNEED)
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t b = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t e = reinterpret_cast<uintptr_t>(end) / page * page;
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
#else
  (void)begin;
  (void)end;
#endif
}

}  // namespace

SplitRows apply_split(const Preprocessor& p, DistMatrix&& X, const std::vector<char>& keep, bool single) {
  const int64_t d = X.cols, nl = X.n_local;
  SSDR_CHECK(static_cast<int64_t>(keep.size()) == nl,
             "apply_split: " + std::to_string(keep.size()) + " row flags for " + std::to_string(nl) + " local rows");
  SSDR_CHECK(p.mean.empty() || static_cast<int64_t>(p.mean.size()) == d,
             "preprocessing was fitted on " + std::to_string(p.mean.size()) + " features, data has " +
                 std::to_string(d));
  const int64_t out_cols = output_dim(p, d);
  int64_t kept = 0;
  for (char k : keep) kept += k != 0;
  SplitRows s;
  MPI_Comm comm = X.comm;
  if (out_cols > d) {  // a map that widens the rows cannot be written in place
    std::vector<char> other(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) other[i] = !keep[i];
    if (single) s.kept32 = apply_single(p, X, keep);
    else s.kept = apply(p, X, keep);
    s.other = apply(p, X, other);
    X = DistMatrix{};
    X.comm = comm;
    return s;
  }
  const Layout lk = layout_from_local(kept, comm), lo = layout_from_local(nl - kept, comm);
  std::vector<double> buf = std::move(X.v);
  X = DistMatrix{};
  X.comm = comm;
  std::vector<double> kv;
  std::vector<float> kv32;  // single: the kept rows rounded once (apply_single's bits)
  if (single) kv32.reserve(static_cast<size_t>(kept * out_cols));
  else kv.reserve(static_cast<size_t>(kept * out_cols));  // pages are touched as rows arrive
  std::vector<double> Z, T, tile(static_cast<size_t>(kApplyTile * out_cols));
  int64_t w = 0;  // other rows written back into buf
  double* base = buf.data();
  double* released = base;  // buf below this was returned already (or still holds rows)
  constexpr int64_t kReleaseBytes = int64_t{32} << 20;
  for (int64_t i0 = 0; i0 < nl; i0 += kApplyTile) {
    const int64_t b = std::min(kApplyTile, nl - i0);
    apply_tile(p, base + i0 * d, b, d, tile.data(), Z, T);
    for (int64_t r = 0; r < b; ++r) {
      const double* t = tile.data() + r * out_cols;
      if (keep[static_cast<size_t>(i0 + r)]) {
        if (single) kv32.insert(kv32.end(), t, t + out_cols);
        else kv.insert(kv.end(), t, t + out_cols);
      }
      else std::copy_n(t, out_cols, base + (w++) * out_cols);  // (w+1)·d' ≤ (i0+b)·d: read already
    }
    // Dead bytes: after the other rows written, before the first row not yet read.
    double* dead_begin = std::max(released, base + w * out_cols);
    double* dead_end = base + (i0 + b) * d;
    if ((dead_end - dead_begin) * static_cast<int64_t>(sizeof(double)) >= kReleaseBytes || i0 + b == nl) {
      release_pages(dead_begin, dead_end);
      released = dead_end;
    }
  }
  if (w == 0) std::vector<double>().swap(buf);
  else buf.resize(static_cast<size_t>(w * out_cols));  // no reallocation: the pages past it are released
  if (single) {
    s.kept.comm = comm;
    s.kept32 = dist_layout<float>(comm, lk, out_cols);
    s.kept32.v = std::move(kv32);
  } else {
    s.kept = dist_layout<double>(comm, lk, out_cols);
    s.kept.v = std::move(kv);
  }
  s.other = dist_layout<double>(comm, lo, out_cols);
  s.other.v = std::move(buf);
  return s;
}

}  // namespace ssdr::data
