// The local reconstruction graph of sllda-zhao2014 §2, Table 1 (LNP weights, eq. (2),
// symmetrized and normalized).
//
// reconstruction_weights: knn_search gives each local row its k neighbors; the local rows go
// in chunks sized by a memory budget: a chunk's neighbour rows that live on other ranks are
// fetched (requests bucketed by owner, one MPI_Alltoallv for the indices and one for the
// rows), then each of its rows solves its k×k QP exactly through a (k+1)×k NNLS problem
// (Lawson–Hanson, below), and the fetched rows are freed before the next chunk.
// build_lnp_graph: the non-symmetric W (row i holds x_i's weights) as MPIAIJ, W + Wᵀ by
// MatTranspose + MatAXPY, halved, D^{-1/2}·W·D^{-1/2} by MatDiagonalScale.
#include "ssdr/graph/lnp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ssdr/core/error.hpp"
#include "ssdr/core/lapack.hpp"
#include "ssdr/graph/knn.hpp"
#include "ssdr/graph/laplacian.hpp"
#include "knn_internal.hpp"

namespace ssdr::graph {

namespace {

/// Least squares on the columns `cols` of A (m×n, column-major) by Householder QR:
/// z_P = argmin ‖A_P z − b‖, returned in z (zero outside P). Requires |P| ≤ m.
void passive_least_squares(const Dense& A, const std::vector<double>& b, const std::vector<int>& cols,
                           std::vector<double>& z) {
  const int64_t m = A.rows;
  const int64_t p = static_cast<int64_t>(cols.size());
  std::vector<double> Q(static_cast<size_t>(m * p)), c(b);
  for (int64_t j = 0; j < p; ++j)
    std::copy(A.col(cols[static_cast<size_t>(j)]), A.col(cols[static_cast<size_t>(j)]) + m, Q.data() + j * m);
  std::vector<double> diag(static_cast<size_t>(p), 0.0);
  for (int64_t j = 0; j < p && j < m; ++j) {
    double* a = Q.data() + j * m;
    double norm = 0;
    for (int64_t i = j; i < m; ++i) norm += a[i] * a[i];
    norm = std::sqrt(norm);
    if (norm == 0) continue;
    const double alpha = a[j] > 0 ? -norm : norm;
    a[j] -= alpha;  // v = a − alpha·e_j, stored in place
    double vv = 0;
    for (int64_t i = j; i < m; ++i) vv += a[i] * a[i];
    auto reflect = [&](double* y) {
      double s = 0;
      for (int64_t i = j; i < m; ++i) s += a[i] * y[i];
      s = 2 * s / vv;
      for (int64_t i = j; i < m; ++i) y[i] -= s * a[i];
    };
    for (int64_t l = j + 1; l < p; ++l) reflect(Q.data() + l * m);
    reflect(c.data());
    diag[static_cast<size_t>(j)] = alpha;
  }
  std::fill(z.begin(), z.end(), 0.0);
  std::vector<double> zp(static_cast<size_t>(p), 0.0);
  for (int64_t j = std::min(p, m) - 1; j >= 0; --j) {
    double s = c[static_cast<size_t>(j)];
    for (int64_t l = j + 1; l < p; ++l) s -= Q[static_cast<size_t>(j + l * m)] * zp[static_cast<size_t>(l)];
    const double r = diag[static_cast<size_t>(j)];
    zp[static_cast<size_t>(j)] = r != 0 ? s / r : 0.0;
  }
  for (int64_t j = 0; j < p; ++j) z[static_cast<size_t>(cols[static_cast<size_t>(j)])] = zp[static_cast<size_t>(j)];
}

/// The LNP regularization r ≥ 0, checked by each entry point before its neighbour search.
/// \throws ssdr::Error (replicated: r is the same on every rank) otherwise.
void require_regularization(double regularization) {
  SSDR_REQUIRE(regularization >= 0, "reconstruction regularization " + std::to_string(regularization) +
                                        " must be non-negative");
}

}  // namespace

/// (knn_internal.hpp) Also CLR's fetch of F's rows and component labels at the neighbours.
std::vector<double> detail::fetch_rows(const DistMatrix& X, const std::vector<int64_t>& wanted) {
  MPI_Comm comm = X.comm;
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int64_t> starts, ends;
  gather_layout(comm, X.row_start, X.n_local, starts, ends);
  for (size_t r = 0; r < ends.size(); ++r) ends[r] += starts[r];  // counts → one past the last row
  auto owner = [&](int64_t j) {
    return static_cast<int>(std::upper_bound(ends.begin(), ends.end(), j) - ends.begin());
  };
  // Requests: `wanted` is sorted and blocks are contiguous, so requests come grouped by owner.
  std::vector<int> req_count(static_cast<size_t>(size), 0), got_count(static_cast<size_t>(size));
  for (int64_t j : wanted) ++req_count[static_cast<size_t>(owner(j))];
  MPI_Alltoall(req_count.data(), 1, MPI_INT, got_count.data(), 1, MPI_INT, comm);
  std::vector<int> req_displ(static_cast<size_t>(size) + 1, 0), got_displ(static_cast<size_t>(size) + 1, 0);
  for (int r = 0; r < size; ++r) {
    req_displ[static_cast<size_t>(r) + 1] = req_displ[static_cast<size_t>(r)] + req_count[static_cast<size_t>(r)];
    got_displ[static_cast<size_t>(r) + 1] = got_displ[static_cast<size_t>(r)] + got_count[static_cast<size_t>(r)];
  }
  std::vector<int64_t> asked(static_cast<size_t>(got_displ[static_cast<size_t>(size)]));
  MPI_Alltoallv(wanted.data(), req_count.data(), req_displ.data(), MPI_INT64_T, asked.data(), got_count.data(),
                got_displ.data(), MPI_INT64_T, comm);
  // Replies: the asked rows, one MPI "row" type of d doubles each.
  const int64_t d = X.cols;
  std::vector<double> send(asked.size() * static_cast<size_t>(d));
  for (size_t q = 0; q < asked.size(); ++q) {
    const int64_t li = asked[q] - X.row_start;
    SSDR_CHECK(li >= 0 && li < X.n_local, "fetch_rows: asked for a row owned elsewhere");
    std::copy(X.row(li), X.row(li) + d, send.data() + q * static_cast<size_t>(d));
  }
  MPI_Datatype row_type;
  MPI_Type_contiguous(static_cast<int>(std::max<int64_t>(d, 1)), MPI_DOUBLE, &row_type);
  MPI_Type_commit(&row_type);
  std::vector<double> rows(wanted.size() * static_cast<size_t>(std::max<int64_t>(d, 1)));
  MPI_Alltoallv(send.data(), got_count.data(), got_displ.data(), row_type, rows.data(), req_count.data(),
                req_displ.data(), row_type, comm);
  MPI_Type_free(&row_type);
  return rows;
}

std::vector<double> nnls(const Dense& A, const std::vector<double>& b, int* iterations) {
  const int64_t m = A.rows, n = A.cols;
  SSDR_CHECK(static_cast<int64_t>(b.size()) == m,
             "nnls: b has " + std::to_string(b.size()) + " entries for " + std::to_string(m) + " rows");
  std::vector<double> x(static_cast<size_t>(n), 0.0), z(static_cast<size_t>(n), 0.0), w(static_cast<size_t>(n)),
      r(static_cast<size_t>(m));
  std::vector<char> passive(static_cast<size_t>(n), 0), rejected(static_cast<size_t>(n), 0);
  double anorm = 0;  // ‖A‖₁
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t i = 0; i < m; ++i) s += std::abs(A(i, j));
    anorm = std::max(anorm, s);
  }
  const double tol = 10 * std::numeric_limits<double>::epsilon() * anorm * static_cast<double>(std::max(m, n));
  const int max_it = 3 * static_cast<int>(n) + 30;
  int it = 0;
  auto gradient = [&] {  // w = Aᵀ(b − A x)
    for (int64_t i = 0; i < m; ++i) r[static_cast<size_t>(i)] = b[static_cast<size_t>(i)];
    for (int64_t j = 0; j < n; ++j)
      if (x[static_cast<size_t>(j)] != 0)
        for (int64_t i = 0; i < m; ++i) r[static_cast<size_t>(i)] -= A(i, j) * x[static_cast<size_t>(j)];
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t i = 0; i < m; ++i) s += A(i, j) * r[static_cast<size_t>(i)];
      w[static_cast<size_t>(j)] = s;
    }
  };
  gradient();
  for (;;) {
    // Most violated dual constraint among the active (zero) variables.
    int t = -1;
    double best = tol;
    int64_t n_passive = 0;
    for (int64_t j = 0; j < n; ++j) {
      n_passive += passive[static_cast<size_t>(j)];
      if (!passive[static_cast<size_t>(j)] && !rejected[static_cast<size_t>(j)] && w[static_cast<size_t>(j)] > best) {
        best = w[static_cast<size_t>(j)];
        t = static_cast<int>(j);
      }
    }
    if (t < 0 || n_passive >= m) break;
    SSDR_CHECK(++it <= max_it, "nnls: no convergence in " + std::to_string(max_it) + " iterations");
    passive[static_cast<size_t>(t)] = 1;
    bool first = true;
    for (;;) {
      std::vector<int> cols;
      for (int64_t j = 0; j < n; ++j)
        if (passive[static_cast<size_t>(j)]) cols.push_back(static_cast<int>(j));
      passive_least_squares(A, b, cols, z);
      if (first && z[static_cast<size_t>(t)] <= 0) {
        // Rounding made the entering variable non-positive (Lawson–Hanson's safeguard):
        // reject it until x changes.
        passive[static_cast<size_t>(t)] = 0;
        rejected[static_cast<size_t>(t)] = 1;
        break;
      }
      first = false;
      // Step towards z until the first passive variable reaches zero.
      double step = 1;
      int leaving = -1;
      for (int j : cols)
        if (z[static_cast<size_t>(j)] <= 0) {
          const double xj = x[static_cast<size_t>(j)];
          const double a = xj / (xj - z[static_cast<size_t>(j)]);
          if (leaving < 0 || a < step) {
            step = a;
            leaving = j;
          }
        }
      if (leaving < 0) {  // z is feasible: accept it
        x = z;
        std::fill(rejected.begin(), rejected.end(), 0);
        gradient();
        break;
      }
      SSDR_CHECK(++it <= max_it, "nnls: no convergence in " + std::to_string(max_it) + " iterations");
      for (int j : cols) {
        double& xj = x[static_cast<size_t>(j)];
        xj += step * (z[static_cast<size_t>(j)] - xj);
        if (j == leaving || xj <= tol) {
          xj = 0;
          passive[static_cast<size_t>(j)] = 0;
        }
      }
    }
  }
  if (iterations) *iterations = it;
  return x;
}

std::vector<double> simplex_reconstruction_weights(const Dense& G, double regularization, int* iterations) {
  if (iterations) *iterations = 0;
  SSDR_CHECK(G.rows == G.cols && G.rows >= 1, shape_message("reconstruction Gram matrix", G.rows, G.cols, G.rows, G.rows));
  SSDR_CHECK(regularization >= 0, "reconstruction regularization must be non-negative");
  const int64_t k = G.rows;
  double tr = 0;
  for (int64_t i = 0; i < k; ++i) tr += G(i, i);
  if (!(tr > 0)) return std::vector<double>(static_cast<size_t>(k), 1.0 / static_cast<double>(k));
  // The minimizer is invariant to scaling G: scale to tr = k so the NNLS data are O(1).
  const double scale = static_cast<double>(k) / tr;
  Dense C(k, k);
  for (int64_t j = 0; j < k; ++j)
    for (int64_t i = 0; i < k; ++i) C(i, j) = G(i, j) * scale;
  for (int64_t i = 0; i < k; ++i) C(i, i) += regularization;  // r·scale = regularization
  SSDR_CHECK(lapack::potrf(k, C.data(), k), "reconstruction Gram matrix G + rI is not positive definite");
  // A = [Lᵀ; 1ᵀ] ((k+1)×k), b = [0; 1].
  Dense A(k + 1, k);
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t i = 0; i <= j; ++i) A(i, j) = C(j, i);
    A(k, j) = 1.0;
  }
  std::vector<double> b(static_cast<size_t>(k + 1), 0.0);
  b[static_cast<size_t>(k)] = 1.0;
  std::vector<double> v = nnls(A, b, iterations);
  double s = 0;
  for (double x : v) s += x;
  SSDR_CHECK(s > 0, "reconstruction weights: NNLS returned v = 0");
  for (double& x : v) x /= s;
  return v;
}

ReconstructionWeights reconstruction_weights(const DistMatrix& X, int k, double regularization) {
  require_regularization(regularization);
  return reconstruction_weights(X, knn_search(X, k), regularization);  // knn_search checks k collectively
}

int64_t detail::reconstruction_chunk_rows(int k, int64_t d, int ranks, double memory_mib) {
  // A chunk of c local rows fetches at most c·k remote rows (d doubles each) and answers
  // at most c·k requests from each of the other ranks: at most ranks·c·k·d·8 bytes.
  const double per_row = static_cast<double>(std::max(ranks, 1)) * std::max(k, 1) *
                         static_cast<double>(std::max<int64_t>(d, 1)) * sizeof(double);
  // At most as many rows as keep one exchange's element counts (c·k·d per rank pair, and
  // (ranks − 1)·c·k·d in all) within MPI's int counts; an infinite budget gives that cap.
  const double cap = static_cast<double>(std::numeric_limits<int>::max() / 2) /
                     (static_cast<double>(std::max(ranks - 1, 1)) * std::max(k, 1) * static_cast<double>(std::max<int64_t>(d, 1)));
  const double rows = std::min(memory_mib * (1 << 20) / per_row, cap);
  return std::max<int64_t>(1, static_cast<int64_t>(rows));
}

ReconstructionWeights reconstruction_weights(const DistMatrix& X, const KnnLists& knn, double regularization,
                                             double memory_mib) {
  SSDR_CHECK_COLLECTIVE(X.comm, memory_mib > 0,
                        "reconstruction weights: memory budget " + std::to_string(memory_mib) +
                            " MiB must be positive");
  int size = 1;
  MPI_Comm_size(X.comm, &size);
  return detail::reconstruction_weights(X, knn, regularization,
                                        detail::reconstruction_chunk_rows(knn.k, X.cols, size, memory_mib));
}

ReconstructionWeights detail::reconstruction_weights(const DistMatrix& X, const KnnLists& knn, double regularization,
                                                     int64_t chunk_rows) {
  MPI_Comm comm = X.comm;
  require_regularization(regularization);
  SSDR_CHECK_COLLECTIVE(comm,
                        knn.k >= 1 && knn.n_local == X.n_local &&
                            knn.index.size() == static_cast<size_t>(X.n_local) * static_cast<size_t>(knn.k),
                        "reconstruction weights: the neighbor lists do not match the rows' layout (" +
                            std::to_string(knn.n_local) + " rows of " + std::to_string(knn.k) + " neighbors, " +
                            std::to_string(X.n_local) + " local rows)");
  SSDR_CHECK_COLLECTIVE(comm, chunk_rows >= 1,
                        "reconstruction weights: chunks of " + std::to_string(chunk_rows) + " rows");
  const int k = knn.k;
  const int64_t nl = X.n_local, d = X.cols;
  ReconstructionWeights out;
  out.k = k;
  out.n_global = X.n_global;
  out.row_start = X.row_start;
  out.n_local = nl;
  out.index = knn.index;
  out.weight.assign(static_cast<size_t>(nl * k), 0.0);

  // Every rank takes part in every fetch (detail::fetch_rows is collective): as many rounds
  // as the rank with the most chunks; a rank past its last chunk, or stopped by an error,
  // asks for nothing.
  const int64_t chunks = nl > 0 ? 1 + (nl - 1) / chunk_rows : 0;
  int64_t rounds = chunks;
  MPI_Allreduce(MPI_IN_PLACE, &rounds, 1, MPI_INT64_T, MPI_MAX, comm);
  std::vector<int64_t> wanted;
  std::vector<double> remote;
  Dense Z(d, k), G(k, k);
  bool ok = true;
  std::string why;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t i0 = round < chunks ? round * chunk_rows : nl;  // no overflow past the last chunk
    const int64_t i1 = ok ? i0 + std::min(chunk_rows, nl - i0) : i0;
    // This chunk's remote neighbour rows, deduplicated; the last chunk's are freed first.
    wanted.clear();
    std::vector<double>().swap(remote);
    for (int64_t e = i0 * k; e < i1 * k; ++e) {
      const int64_t j = knn.index[static_cast<size_t>(e)];
      if (j < X.row_start || j >= X.row_start + nl) wanted.push_back(j);
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    remote = detail::fetch_rows(X, wanted);
    auto row_of = [&](int64_t j) -> const double* {
      if (j >= X.row_start && j < X.row_start + nl) return X.row(j - X.row_start);
      const auto it = std::lower_bound(wanted.begin(), wanted.end(), j);
      return remote.data() + static_cast<size_t>(it - wanted.begin()) * static_cast<size_t>(d);
    };
    for (int64_t i = i0; i < i1 && ok; ++i) {
      const double* xi = X.row(i);
      for (int j = 0; j < k; ++j) {
        const double* xj = row_of(knn.index[static_cast<size_t>(i * k + j)]);
        double* zc = Z.col(j);
        for (int64_t t = 0; t < d; ++t) zc[t] = xi[t] - xj[t];
      }
      // G = Zᵀ Z (k×k), G_jl = (x_i − x_j)ᵀ(x_i − x_l).
      blas::syrk('U', 'T', k, d, 1.0, Z.data(), d, 0.0, G.data(), k);
      blas::symmetrize('U', k, G.data(), k);
      try {
        int it = 0;
        const std::vector<double> w = simplex_reconstruction_weights(G, regularization, &it);
        out.max_nnls_iterations = std::max(out.max_nnls_iterations, it);
        std::copy(w.begin(), w.end(), out.weight.begin() + i * k);
      } catch (const Error& e) {
        ok = false;
        why = "reconstruction weights of sample " + std::to_string(X.row_start + i) + ": " + e.what();
      }
    }
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, why);
  return out;
}

LnpGraph build_lnp_graph(const DistMatrix& X, const LnpOptions& options) {
  MPI_Comm comm = X.comm;
  require_regularization(options.regularization);  // before the neighbour search
  // The neighbors by the run's backend (the kNN graph's --knn-method): knn_lists checks k.
  GraphOptions search;
  search.knn_method = options.knn_method;
  search.knn_seed = options.knn_seed;
  search.nndescent_memory_mib = options.nndescent_memory_mib;
  const KnnMethod backend = resolve(options.knn_method, X.n_global);
  ReconstructionWeights rw;
  double recall = 1.0;
  {
    const KnnLists lists = knn_lists(RowsView(X), options.k, search);
    if (backend != KnnMethod::exact)
      recall = knn_recall(RowsView(X), lists, options.knn_recall_sample, options.knn_seed);
    rw = reconstruction_weights(X, lists, options.regularization, options.nndescent_memory_mib);
  }
  const int64_t nl = rw.n_local, n = rw.n_global, k = rw.k;
  const int64_t c0 = rw.row_start, c1 = rw.row_start + nl;

  // Non-symmetric W: row i holds x_i's reconstruction weights (exact zeros left out).
  std::vector<PetscInt> dnz(static_cast<size_t>(nl), 0), onz(static_cast<size_t>(nl), 0);
  for (int64_t i = 0; i < nl; ++i)
    for (int64_t m = 0; m < k; ++m)
      if (rw.weight[static_cast<size_t>(i * k + m)] > 0) {
        const int64_t j = rw.index[static_cast<size_t>(i * k + m)];
        ++((j >= c0 && j < c1) ? dnz : onz)[static_cast<size_t>(i)];
      }
  Owned<Mat> W;
  SSDR_PETSC(MatCreateAIJ(comm, static_cast<PetscInt>(nl), static_cast<PetscInt>(nl), static_cast<PetscInt>(n),
                          static_cast<PetscInt>(n), 0, dnz.data(), 0, onz.data(), W.out()));
  SSDR_PETSC(MatSetOption(W, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  SSDR_PETSC(MatSetOption(W, MAT_NO_OFF_PROC_ENTRIES, PETSC_TRUE));
  std::vector<PetscInt> cols;
  std::vector<PetscScalar> vals;
  for (int64_t i = 0; i < nl; ++i) {
    cols.clear();
    vals.clear();
    for (int64_t m = 0; m < k; ++m) {
      const double w = rw.weight[static_cast<size_t>(i * k + m)];
      if (w > 0) {
        cols.push_back(static_cast<PetscInt>(rw.index[static_cast<size_t>(i * k + m)]));
        vals.push_back(w);
      }
    }
    const PetscInt row = static_cast<PetscInt>(c0 + i);
    SSDR_PETSC(MatSetValues(W, 1, &row, static_cast<PetscInt>(cols.size()), cols.data(), vals.data(), INSERT_VALUES));
  }
  SSDR_PETSC(MatAssemblyBegin(W, MAT_FINAL_ASSEMBLY));
  SSDR_PETSC(MatAssemblyEnd(W, MAT_FINAL_ASSEMBLY));

  // W ← (W + Wᵀ)/2: w_ij + w_ji is the same sum from both sides, so S is exactly symmetric.
  LnpGraph g;
  SSDR_PETSC(MatTranspose(W, MAT_INITIAL_MATRIX, g.W.out()));
  SSDR_PETSC(MatAXPY(g.W, 1.0, W, DIFFERENT_NONZERO_PATTERN));
  SSDR_PETSC(MatScale(g.W, 0.5));
  W.reset();

  // W̃ = D^{-1/2} W D^{-1/2}, D_ii = Σ_j W_ij ≥ 1/2 (row i of the non-symmetric W sums to 1).
  g.degree = degrees(g.W);
  Owned<Vec> s;
  SSDR_PETSC(MatCreateVecs(g.W, s.out(), nullptr));
  {
    PetscScalar* p = nullptr;
    SSDR_PETSC(VecGetArray(s, &p));
    for (int64_t i = 0; i < nl; ++i) p[i] = 1.0 / std::sqrt(g.degree[static_cast<size_t>(i)]);
    SSDR_PETSC(VecRestoreArray(s, &p));
  }
  SSDR_PETSC(MatDiagonalScale(g.W, s, s));
  // MatDiagonalScale gives (w_ij s_i) s_j and (w_ji s_j) s_i, which may differ in the last bit:
  // average once more so W̃ is exactly symmetric, and say so. The propagation takes its block
  // CG only on an exactly symmetric graph (propagation::propagate); without this SL-LDA's ran
  // one GMRES solve per column.
  {
    Owned<Mat> T;
    SSDR_PETSC(MatTranspose(g.W, MAT_INITIAL_MATRIX, T.out()));
    SSDR_PETSC(MatAXPY(g.W, 1.0, T, DIFFERENT_NONZERO_PATTERN));  // the same pattern, as PETSc cannot assume
    SSDR_PETSC(MatScale(g.W, 0.5));
  }
  SSDR_PETSC(MatSetOption(g.W, MAT_SYMMETRIC, PETSC_TRUE));  // as knn.cpp: not ETERNAL

  MatInfo info;
  SSDR_PETSC(MatGetInfo(g.W, MAT_GLOBAL_SUM, &info));
  g.edges = static_cast<int64_t>(info.nz_used + 0.5) / 2;
  int worst = 0;
  MPI_Allreduce(&rw.max_nnls_iterations, &worst, 1, MPI_INT, MPI_MAX, comm);
  g.max_nnls_iterations = worst;
  g.knn_method = backend;
  g.knn_recall = recall;
  return g;
}

}  // namespace ssdr::graph
