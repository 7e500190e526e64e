// The dense route of n_t×n_t graph systems (dense_route.hpp).
#include "dense_route.hpp"

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"
#include "ssdr/core/petsc.hpp"

namespace ssdr::methods::dense {

Route route_option(const std::string& prefix) {
  char text[32] = "auto";
  SSDR_PETSC(PetscOptionsGetString(nullptr, prefix.c_str(), "-route", text, sizeof text, nullptr));
  const std::string name(text);
  if (name == "auto") return Route::automatic;
  if (name == "dense") return Route::dense;
  if (name == "krylov") return Route::krylov;
  throw Error("-" + prefix + "route must be auto, dense or krylov, got '" + name + "'", __FILE__, __LINE__, true);
}

bool dense_route(Route route, int64_t n, const std::string& prefix) {
  if (route == Route::dense)
    SSDR_REQUIRE(n <= kDenseRouteLimit, "the dense route (-" + prefix + "route dense) holds n_t^2 doubles per rank; " +
                                            std::to_string(n) + " transductive samples exceed its limit of " +
                                            std::to_string(kDenseRouteLimit) + " (use -" + prefix + "route krylov)");
  return route == Route::dense || (route == Route::automatic && n <= kDenseRouteMaxSamples);
}

const char* to_string(Route route) {
  switch (route) {
    case Route::dense: return "dense";
    case Route::krylov: return "krylov";
    case Route::automatic: break;
  }
  return "auto";
}

Dense gather_graph(Mat A, const DistMatrix& like, const char* who) {
  PetscInt rs = 0, re = 0, rows = 0, cols = 0;
  SSDR_PETSC(MatGetOwnershipRange(A, &rs, &re));
  SSDR_PETSC(MatGetSize(A, &rows, &cols));
  SSDR_CHECK_COLLECTIVE(like.comm,
                        re - rs == like.n_local && rows == like.n_global && cols == rows && rs == like.row_start,
                        std::string(who) + ": samples and graph have different row layouts");
  const int64_t n = rows;
  std::vector<double> local(static_cast<size_t>(like.n_local * n), 0.0);
  for (PetscInt i = rs; i < re; ++i) {
    PetscInt nc = 0;
    const PetscInt* ci = nullptr;
    const PetscScalar* cv = nullptr;
    SSDR_PETSC(MatGetRow(A, i, &nc, &ci, &cv));
    for (PetscInt k = 0; k < nc; ++k) local[static_cast<size_t>((i - rs) * n + ci[k])] = cv[k];
    SSDR_PETSC(MatRestoreRow(A, i, &nc, &ci, &cv));
  }
  Dense M;
  M.rows = M.cols = n;
  M.v = allgatherv(local.data(), like.n_local * n, like.comm);
  return M;
}

std::vector<double> column_sums(const Dense& M) {
  std::vector<double> D(static_cast<size_t>(M.cols), 0.0);
  for (int64_t i = 0; i < M.cols; ++i) {
    double s = 0;
    const double* a = M.col(i);
    for (int64_t j = 0; j < M.rows; ++j) s += a[j];
    D[static_cast<size_t>(i)] = s;
  }
  return D;
}

}  // namespace ssdr::methods::dense
