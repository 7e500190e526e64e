#include "ssdr/graph/locality.hpp"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <petscis.h>

#include <petsc/private/matimpl.h>  // a MatPartitioning type of our own: its ops table

#include <mutex>
#include <string>

#include "level_order.hpp"
#include "ssdr/core/error.hpp"

namespace ssdr::graph {

namespace {

/// A function of the loaded libscotch (PETSc's dependency, not ours): from the global scope
/// (the CLI links it through PETSc), else from the loaded library itself (a Python extension
/// is loaded RTLD_LOCAL, so its dependencies are not in the global scope). nullptr when no
/// libscotch is loaded. Local.
void* scotch_symbol(const char* name) {
  if (void* f = dlsym(RTLD_DEFAULT, name)) return f;
  std::string path;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* out) {
        const std::string n = info->dlpi_name ? info->dlpi_name : "";
        const size_t slash = n.rfind('/');
        const std::string base = slash == std::string::npos ? n : n.substr(slash + 1);
        if (base.rfind("libscotch-", 0) == 0 || base.rfind("libscotch.so", 0) == 0) {
          *static_cast<std::string*>(out) = n;
          return 1;
        }
        return 0;
      },
      &path);
  if (path.empty()) return nullptr;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  return lib ? dlsym(lib, name) : nullptr;  // the reference NOLOAD took lives with the process
}

/// PT-Scotch draws from one random stream per process: reset it, so the same graph gets the
/// same partition in every fit (two fits of one data set in one sweep, or in two runs, give
/// the same bits). Looked up at run time: libscotch is PETSc's dependency, not ours.
/// PT-Scotch's threads make its partition vary from call to call; one thread (one rank per
/// core, as ssdr runs) makes it reproducible. A user's own SCOTCH_PTHREAD_NUMBER is kept.
void reset_ptscotch() {
  setenv("SCOTCH_PTHREAD_NUMBER", "1", 0);
  // SCOTCH_randomSeed also initializes the stream (a first use would otherwise seed it from the
  // clock); SCOTCH_Num is an int in Debian's libscotch (scotch.h: SCOTCH_Num is int).
  if (auto seed = reinterpret_cast<void (*)(int)>(scotch_symbol("SCOTCH_randomSeed"))) seed(1);
  if (auto reset = reinterpret_cast<void (*)()>(scotch_symbol("SCOTCH_randomReset"))) reset();
}

/// The name under which apply_levels composes the vertices' level positions (an IS, one
/// global position per local vertex) with its MatPartitioning.
constexpr const char* kLevelPositions = "ssdr_level_positions";

/// MatPartitioningApply of the "levels" type: the adjacency's vertices in their distributed
/// Cuthill–McKee level order (detail::level_order), cut into part->n contiguous ranges of
/// equal size (±1). Collective over the adjacency's communicator.
PetscErrorCode apply_levels(MatPartitioning part, IS* partitioning) {
  PetscFunctionBeginUser;
  MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(part));
  try {
    Mat adj = part->adj;
    PetscInt lo = 0, hi = 0, N = 0;
    PetscCall(MatGetOwnershipRange(adj, &lo, &hi));
    PetscCall(MatGetSize(adj, &N, nullptr));
    detail::LocalAdjacency a;
    a.lo = lo;
    a.n_global = N;
    a.offsets.assign(1, 0);
    for (PetscInt i = lo; i < hi; ++i) {
      PetscInt nc = 0;
      const PetscInt* c = nullptr;
      PetscCall(MatGetRow(adj, i, &nc, &c, nullptr));
      a.cols.insert(a.cols.end(), c, c + nc);
      PetscCall(MatRestoreRow(adj, i, &nc, &c, nullptr));
      a.offsets.push_back(static_cast<int64_t>(a.cols.size()));
    }
    const std::vector<int64_t> pos = detail::level_order(comm, a);
    PetscInt* parts = nullptr;
    PetscCall(PetscMalloc1(pos.empty() ? 1 : pos.size(), &parts));
    for (size_t i = 0; i < pos.size(); ++i)
      parts[i] = static_cast<PetscInt>(pos[i] * static_cast<int64_t>(part->n) / static_cast<int64_t>(N));
    PetscCall(ISCreateGeneral(comm, static_cast<PetscInt>(pos.size()), parts, PETSC_OWN_POINTER, partitioning));
    // The positions themselves, for renumber_for_locality: numbering the vertices by them
    // keeps the level order inside each range (kLevelPositions).
    PetscInt* at = nullptr;
    PetscCall(PetscMalloc1(pos.empty() ? 1 : pos.size(), &at));
    for (size_t i = 0; i < pos.size(); ++i) at[i] = static_cast<PetscInt>(pos[i]);
    IS positions = nullptr;
    PetscCall(ISCreateGeneral(comm, static_cast<PetscInt>(pos.size()), at, PETSC_OWN_POINTER, &positions));
    PetscCall(PetscObjectCompose(reinterpret_cast<PetscObject>(part), kLevelPositions,
                                 reinterpret_cast<PetscObject>(positions)));
    PetscCall(ISDestroy(&positions));
  } catch (const std::exception& e) {
    SETERRQ(comm, PETSC_ERR_LIB, "levels partitioning: %s", e.what());
  }
  PetscFunctionReturn(0);
}

PetscErrorCode create_levels(MatPartitioning part) {
  PetscFunctionBeginUser;
  part->ops->apply = apply_levels;
  PetscFunctionReturn(0);
}

}  // namespace

void register_partitioners() {
  static std::once_flag once;
  std::call_once(once, [] { SSDR_PETSC(MatPartitioningRegister(kLevelsPartitioner, create_levels)); });
}

Renumbering renumber_for_locality(Mat A, const std::string& prefix) {
  MPI_Comm comm = PETSC_COMM_WORLD;
  SSDR_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(A), &comm));
  Renumbering r;
  PetscObjectReference(reinterpret_cast<PetscObject>(A));
  r.B = Owned<Mat>(A);
  int size = 1;
  MPI_Comm_size(comm, &size);
  if (size == 1) {
    // Nothing to partition; the option is still read, so a script that passes it for every
    // rank count gets no "option not used" warning.
    PetscBool given = PETSC_FALSE;
    SSDR_PETSC(PetscOptionsHasName(nullptr, prefix.c_str(), "-mat_partitioning_type", &given));
    return r;
  }
  PetscInt lo = 0, hi = 0, N = 0;
  SSDR_PETSC(MatGetOwnershipRange(A, &lo, &hi));
  SSDR_PETSC(MatGetSize(A, &N, nullptr));
  // A's pattern without its diagonal, as the partitioner's adjacency (MPIAdj takes ownership
  // of the PetscMalloc'd arrays).
  const PetscInt m = hi - lo;
  PetscInt* ia = nullptr;
  SSDR_PETSC(PetscMalloc1(m + 1, &ia));
  ia[0] = 0;
  std::vector<PetscInt> cols;
  for (PetscInt i = lo; i < hi; ++i) {
    PetscInt nc = 0;
    const PetscInt* c = nullptr;
    SSDR_PETSC(MatGetRow(A, i, &nc, &c, nullptr));
    for (PetscInt k = 0; k < nc; ++k)
      if (c[k] != i) cols.push_back(c[k]);
    SSDR_PETSC(MatRestoreRow(A, i, &nc, &c, nullptr));
    ia[i - lo + 1] = static_cast<PetscInt>(cols.size());
  }
  PetscInt* ja = nullptr;
  SSDR_PETSC(PetscMalloc1(cols.empty() ? 1 : cols.size(), &ja));
  std::copy(cols.begin(), cols.end(), ja);
  cols = std::vector<PetscInt>();
  Owned<Mat> adj;
  SSDR_PETSC(MatCreateMPIAdj(comm, m, N, ia, ja, nullptr, adj.out()));
  Owned<MatPartitioning> part;
  SSDR_PETSC(MatPartitioningCreate(comm, part.out()));
  SSDR_PETSC(MatPartitioningSetAdjacency(part, adj));
  register_partitioners();
  SSDR_PETSC(MatPartitioningSetType(part, kLevelsPartitioner));
  SSDR_PETSC(PetscObjectSetOptionsPrefix(reinterpret_cast<PetscObject>(part.get()), prefix.c_str()));
  SSDR_PETSC_OPTIONS(MatPartitioningSetFromOptions(part));
  MatPartitioningType type = nullptr;
  SSDR_PETSC(PetscObjectGetType(reinterpret_cast<PetscObject>(part.get()), &type));
  if (std::string(type) == MATPARTITIONINGCURRENT) return r;
  if (std::string(type) == MATPARTITIONINGPTSCOTCH) reset_ptscotch();
  Owned<IS> target, number;
  SSDR_PETSC(MatPartitioningApply(part, target.out()));
  // The level type numbers the vertices by their level positions: its ranges are contiguous
  // in them, so each rank gets the same rows as ISPartitioningToNumbering would give it, but
  // in the level order (a Cuthill–McKee order, neighbours at nearby numbers) instead of
  // A's order. Other types: their parts, each in A's order.
  PetscObject positions = nullptr;
  SSDR_PETSC(PetscObjectQuery(reinterpret_cast<PetscObject>(part.get()), kLevelPositions, &positions));
  if (positions) {
    SSDR_PETSC(PetscObjectReference(positions));
    number = Owned<IS>(reinterpret_cast<IS>(positions));
  } else {
    SSDR_PETSC(ISPartitioningToNumbering(target, number.out()));
  }
  std::vector<PetscInt> counts(static_cast<size_t>(size));
  SSDR_PETSC(ISPartitioningCount(target, size, counts.data()));
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // number: the new global index of each of A's local rows; its inverse, distributed with the
  // new counts, lists B's local rows as A's global indices.
  SSDR_PETSC(ISInvertPermutation(number, counts[static_cast<size_t>(rank)], r.rows.out()));
  Owned<Mat> B;
  SSDR_PETSC(MatCreateSubMatrix(A, r.rows, r.rows, MAT_INITIAL_MATRIX, B.out()));
  // The same graph in another order: keep its known symmetry (no MatIsSymmetric transpose).
  PetscBool set = PETSC_FALSE, sym = PETSC_FALSE;
  SSDR_PETSC(MatIsSymmetricKnown(A, &set, &sym));
  if (set && sym) SSDR_PETSC(MatSetOption(B, MAT_SYMMETRIC, PETSC_TRUE));
  r.B = std::move(B);
  r.partitioner = type;
  SSDR_PETSC(MatCreateVecs(A, r.a_vec.out(), nullptr));
  SSDR_PETSC(MatCreateVecs(r.B, r.b_vec.out(), nullptr));
  SSDR_PETSC(VecScatterCreate(r.a_vec, r.rows, r.b_vec, nullptr, r.move.out()));
  return r;
}

std::vector<int> to_renumbered(const Renumbering& r, const std::vector<int>& v) {
  if (!r.renumbered()) return v;
  PetscInt na = 0;
  SSDR_PETSC(VecGetLocalSize(r.a_vec, &na));
  SSDR_CHECK(static_cast<PetscInt>(v.size()) == na, "to_renumbered: one value per local row of A expected");
  PetscScalar* a = nullptr;
  SSDR_PETSC(VecGetArray(r.a_vec, &a));
  for (size_t i = 0; i < v.size(); ++i) a[i] = v[i];
  SSDR_PETSC(VecRestoreArray(r.a_vec, &a));
  SSDR_PETSC(VecScatterBegin(r.move, r.a_vec, r.b_vec, INSERT_VALUES, SCATTER_FORWARD));
  SSDR_PETSC(VecScatterEnd(r.move, r.a_vec, r.b_vec, INSERT_VALUES, SCATTER_FORWARD));
  PetscInt nb = 0;
  SSDR_PETSC(VecGetLocalSize(r.b_vec, &nb));
  const PetscScalar* b = nullptr;
  SSDR_PETSC(VecGetArrayRead(r.b_vec, &b));
  std::vector<int> out(static_cast<size_t>(nb));
  for (PetscInt i = 0; i < nb; ++i) out[static_cast<size_t>(i)] = static_cast<int>(b[i]);
  SSDR_PETSC(VecRestoreArrayRead(r.b_vec, &b));
  return out;
}

DistMatrix from_renumbered(const Renumbering& r, const DistMatrix& X, MPI_Comm comm) {
  if (!r.renumbered()) {
    DistMatrix out = X;
    out.comm = comm;
    return out;
  }
  PetscInt na = 0;
  SSDR_PETSC(VecGetLocalSize(r.a_vec, &na));
  DistMatrix out = make_dist_local(comm, na, X.cols);
  for (int64_t j = 0; j < X.cols; ++j) {
    PetscScalar* b = nullptr;
    SSDR_PETSC(VecGetArray(r.b_vec, &b));
    for (int64_t i = 0; i < X.n_local; ++i) b[i] = X(i, j);
    SSDR_PETSC(VecRestoreArray(r.b_vec, &b));
    SSDR_PETSC(VecScatterBegin(r.move, r.b_vec, r.a_vec, INSERT_VALUES, SCATTER_REVERSE));
    SSDR_PETSC(VecScatterEnd(r.move, r.b_vec, r.a_vec, INSERT_VALUES, SCATTER_REVERSE));
    vec_to_column(r.a_vec, out, j);
  }
  return out;
}

}  // namespace ssdr::graph
