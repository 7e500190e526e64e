#include "ssdr/data/preprocess.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"

namespace ssdr::data {

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

/// Per-feature reductions over the fit rows.
void column_sums(const DistMatrix& X, const std::vector<char>& fit, std::vector<double>& sum,
                 int64_t& count) {
  const int64_t d = X.cols;
  sum.assign(static_cast<size_t>(d), 0.0);
  count = 0;
  for (int64_t i = 0; i < X.n_local; ++i) {
    if (!fit[static_cast<size_t>(i)]) continue;
    ++count;
    const double* x = X.row(i);
    for (int64_t j = 0; j < d; ++j) sum[static_cast<size_t>(j)] += x[j];
  }
  MPI_Allreduce(MPI_IN_PLACE, sum.data(), static_cast<int>(d), MPI_DOUBLE, MPI_SUM, X.comm);
  MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT64_T, MPI_SUM, X.comm);
}

inline double transformed(const Preprocessor& p, const double* x, int64_t j) {
  double v = x[j];
  if (!p.shift.empty()) v -= p.shift[static_cast<size_t>(j)];
  if (!p.scale.empty()) v *= p.scale[static_cast<size_t>(j)];
  return v;
}

}  // namespace

Preprocessor fit_preprocessor(const DistMatrix& X, const std::vector<char>& fit,
                              const PreprocessOptions& options) {
  SSDR_CHECK(static_cast<int64_t>(fit.size()) == X.n_local, "fit_preprocessor: mask length");
  SSDR_REQUIRE(options.pca_energy <= 1.0,
             "--pca-energy must be in (0, 1], got " + std::to_string(options.pca_energy));
  const int64_t d = X.cols;
  Preprocessor p;
  std::vector<double> sum;
  int64_t count = 0;
  column_sums(X, fit, sum, count);
  SSDR_REQUIRE(count > 0, "no transductive sample to fit the preprocessing on");

  if (options.scaling == Scaling::unit_range) {
    std::vector<double> lo(static_cast<size_t>(d), INFINITY), hi(static_cast<size_t>(d), -INFINITY);
    for (int64_t i = 0; i < X.n_local; ++i) {
      if (!fit[static_cast<size_t>(i)]) continue;
      for (int64_t j = 0; j < d; ++j) {
        lo[static_cast<size_t>(j)] = std::min(lo[static_cast<size_t>(j)], X(i, j));
        hi[static_cast<size_t>(j)] = std::max(hi[static_cast<size_t>(j)], X(i, j));
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
    std::vector<double> ss(static_cast<size_t>(d), 0.0);
    for (int64_t i = 0; i < X.n_local; ++i) {
      if (!fit[static_cast<size_t>(i)]) continue;
      for (int64_t j = 0; j < d; ++j) {
        const double t = X(i, j) - p.shift[static_cast<size_t>(j)];
        ss[static_cast<size_t>(j)] += t * t;
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, ss.data(), static_cast<int>(d), MPI_DOUBLE, MPI_SUM, X.comm);
    p.scale.resize(static_cast<size_t>(d));
    for (int64_t j = 0; j < d; ++j) {
      const double sd = std::sqrt(ss[static_cast<size_t>(j)] / static_cast<double>(count));
      p.scale[static_cast<size_t>(j)] = sd > 0 ? 1.0 / sd : 1.0;
    }
  } else if (options.scaling == Scaling::global_unit) {
    double ss = 0;
    for (int64_t i = 0; i < X.n_local; ++i) {
      if (!fit[static_cast<size_t>(i)]) continue;
      for (int64_t j = 0; j < d; ++j) {
        const double t = X(i, j) - sum[static_cast<size_t>(j)] / static_cast<double>(count);
        ss += t * t;
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, &ss, 1, MPI_DOUBLE, MPI_SUM, X.comm);
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

  // Covariance C = Σ (x − m)(x − m)ᵀ / n_fit, local DSYRK on row chunks, then Allreduce.
  Dense C(d, d);
  const int64_t chunk = 1024;
  std::vector<double> buf(static_cast<size_t>(chunk * d));
  int64_t filled = 0;
  auto flush = [&]() {
    if (filled == 0) return;
    // buf is row-major filled×d = column-major d×filled: C += buf·bufᵀ.
    blas::syrk('L', 'N', d, filled, 1.0, buf.data(), d, 1.0, C.data(), d);
    filled = 0;
  };
  for (int64_t i = 0; i < X.n_local; ++i) {
    if (!fit[static_cast<size_t>(i)]) continue;
    const double* x = X.row(i);
    double* b = buf.data() + filled * d;
    for (int64_t j = 0; j < d; ++j) b[j] = transformed(p, x, j) - p.mean[static_cast<size_t>(j)];
    if (++filled == chunk) flush();
  }
  flush();
  blas::symmetrize('L', d, C.data(), d);
  allreduce_sum(C, X.comm);
  for (double& c : C.v) c /= static_cast<double>(count);

  std::vector<double> w(static_cast<size_t>(d));
  lapack::syev(d, C.data(), d, w.data());  // ascending
  const double largest = std::max(w.back(), 0.0);
  int64_t keep = 0;
  if (options.pca_energy > 0) {
    double total = 0;
    for (double e : w) total += std::max(e, 0.0);
    double acc = 0;
    for (int64_t k = d - 1; k >= 0; --k) {
      if (w[static_cast<size_t>(k)] <= 1e-10 * largest) break;
      acc += w[static_cast<size_t>(k)];
      ++keep;
      if (acc >= options.pca_energy * total * (1 - 1e-12)) break;
    }
  } else {
    for (int64_t k = d - 1; k >= 0; --k)
      if (w[static_cast<size_t>(k)] > 1e-10 * largest) ++keep;
  }
  keep = std::max<int64_t>(keep, 1);
  p.basis = Dense(d, keep);
  p.eigenvalues.resize(static_cast<size_t>(keep));
  for (int64_t c = 0; c < keep; ++c) {
    const int64_t src = d - 1 - c;
    p.eigenvalues[static_cast<size_t>(c)] = w[static_cast<size_t>(src)];
    int64_t arg = 0;
    for (int64_t i = 1; i < d; ++i)
      if (std::abs(C(i, src)) > std::abs(C(arg, src))) arg = i;
    const double s = C(arg, src) < 0 ? -1.0 : 1.0;
    for (int64_t i = 0; i < d; ++i) p.basis(i, c) = s * C(i, src);
  }
  return p;
}

DistMatrix apply(const Preprocessor& p, const DistMatrix& X) {
  const int64_t d = X.cols;
  SSDR_CHECK(p.mean.empty() || static_cast<int64_t>(p.mean.size()) == d,
             "preprocessing was fitted on " + std::to_string(p.mean.size()) +
                 " features, data has " + std::to_string(d));
  DistMatrix Z = X;
  for (int64_t i = 0; i < X.n_local; ++i) {
    double* z = Z.row(i);
    const double* x = X.row(i);
    for (int64_t j = 0; j < d; ++j)
      z[j] = transformed(p, x, j) - (p.mean.empty() ? 0.0 : p.mean[static_cast<size_t>(j)]);
  }
  if (p.basis.rows == 0) return Z;
  return multiply(Z, p.basis);
}

}  // namespace ssdr::data
