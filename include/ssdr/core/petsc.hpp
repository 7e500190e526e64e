#pragma once
/// \file petsc.hpp
/// Owning handles for PETSc/SLEPc objects (destroyed when they go out of scope) and the
/// conversions between ssdr's dense containers and PETSc objects.
#include <petscksp.h>
#include <petscmat.h>
#include <slepceps.h>

#include <cstdint>
#include <string>
#include <utility>

#include "ssdr/core/dense.hpp"

namespace ssdr {

/// Destroys a PETSc object (Owned's deleter; one overload per handle type). Local.
inline void petsc_destroy(Mat& h) { MatDestroy(&h); }
inline void petsc_destroy(Vec& h) { VecDestroy(&h); }
inline void petsc_destroy(KSP& h) { KSPDestroy(&h); }
inline void petsc_destroy(EPS& h) { EPSDestroy(&h); }
inline void petsc_destroy(IS& h) { ISDestroy(&h); }
inline void petsc_destroy(VecScatter& h) { VecScatterDestroy(&h); }
inline void petsc_destroy(MatPartitioning& h) { MatPartitioningDestroy(&h); }

/// Owning PETSc handle: Owned<Mat> A; MatCreate(comm, A.out()); ... destroyed at scope end.
/// Copies share the object through PETSc's reference count (PetscObjectReference), so a
/// graph can be cached and handed to several methods; the object is destroyed with the
/// last copy. Shared objects are read-only by convention.
template <class H>
class Owned {
 public:
  Owned() = default;
  explicit Owned(H h) : h_(h) {}
  Owned(const Owned& o) : h_(o.h_) {
    if (h_) PetscObjectReference(reinterpret_cast<PetscObject>(h_));
  }
  Owned& operator=(const Owned& o) {
    if (this != &o) {
      reset();
      h_ = o.h_;
      if (h_) PetscObjectReference(reinterpret_cast<PetscObject>(h_));
    }
    return *this;
  }
  /// Takes the handle over; `o` is left empty.
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ~Owned() { reset(); }
  void reset() {
    if (h_) petsc_destroy(h_);
    h_ = nullptr;
  }
  H get() const { return h_; }
  operator H() const { return h_; }  // NOLINT: pass straight to PETSc calls
  /// Destroys the held object and gives the slot to a PETSc creation call (MatCreate(comm, A.out())).
  H* out() {
    reset();
    return &h_;
  }

 private:
  H h_ = nullptr;
};

/// ssdr's own PETSc options (-<prefix>mixed_inner_rtol, -<prefix>reorder, ...), read with a
/// check of their value: `value` is left as it is when the option is not given, else set
/// from it; a value that is not of the type ("-lp_mixed_inner_rtol abc") is one line naming
/// the option and what it expects (PETSc's own getters print their source text instead).
/// Returns whether the option was given. `prefix` may be empty; `name` starts with '-'.
/// Replicated (every rank reads the same options). \throws ssdr::Error (replicated).
bool petsc_option_real(const std::string& prefix, const char* name, double& value);
/// As petsc_option_real for an integer (int64 range, decimal).
bool petsc_option_int(const std::string& prefix, const char* name, int64_t& value);
/// As petsc_option_real for a boolean: true/false, yes/no, on/off, 1/0 (any case), and the
/// option alone ("-lp_reorder") is true, as PETSc takes them.
bool petsc_option_bool(const std::string& prefix, const char* name, bool& value);

/// Replicated Dense (d×d) → parallel MATDENSE on `comm` with the block row layout; each rank
/// copies its rows. Collective.
Owned<Mat> to_petsc_dense(const Dense& A, MPI_Comm comm);
/// Column j of a DistMatrix as a PETSc Vec with the same row layout (copy). Collective.
Owned<Vec> column_to_vec(const DistMatrix& X, int64_t j);
/// Copies a Vec with X's row layout into column j of X. Not collective.
void vec_to_column(Vec v, DistMatrix& X, int64_t j);
/// This rank's entries of v (its local size, in its ownership order) as a std::vector (copy).
/// Not collective.
std::vector<double> vec_local(Vec v);
/// Gathers a parallel Vec to a std::vector on every rank. Collective.
std::vector<double> vec_allgather(Vec v);

/// Local row (and column) count of a MATSCALAPACK of order n (n×n) on comm, or −1 when
/// PETSc 3.18 cannot lay one out there. MatSetUp_ScaLAPACK (MatScaLAPACKCheckLayout) wants
/// b rows on every rank but the last and r ≤ b on the last; neither PETSC_DECIDE
/// (PetscSplitOwnership, also used inside MatCreateScaLAPACK) nor PetscSplitOwnershipEqual
/// guarantees that, and for n < p(p−1) no such b may exist (e.g. n = 5 on 4 ranks). The
/// smallest b that works is taken. Not collective (arithmetic on rank and size).
PetscInt scalapack_local_size(int64_t n, MPI_Comm comm);

/// The EPS type the options database selects for `prefix` (-<prefix>eps_type), or
/// `fallback` when none is set. Not collective (the options are the same on every rank).
std::string requested_eps_type(const std::string& prefix, const char* fallback);

/// The choice between the two dense (all-eigenpairs) EPS types for a problem of order n.
struct DenseEpsChoice {
  bool scalapack_ok = false;         ///< every rank of comm can hold a MATSCALAPACK of order n
  const char* default_type = nullptr;  ///< EPSSCALAPACK when scalapack_ok, else EPSLAPACK
  std::string requested;             ///< requested_eps_type(prefix, default_type)
  std::string type;                  ///< requested, with scalapack replaced by lapack when !scalapack_ok
  bool given = false;                ///< -<prefix>eps_type is set in the options database
  /// No type was asked for and n ≤ kReplicatedEigenMax: the replicated matrix is solved by
  /// LAPACK (dsyevr, or dsyevd beyond d/4 pairs) on every rank, the same bits on any rank
  /// count (solvers::sym_eigen).
  bool replicated = false;
};

/// The largest order of a replicated dense eigenproblem solved by LAPACK on every rank by
/// default (a few seconds of dsyevr on one core; 128 MiB per copy): larger ones go to
/// ScaLAPACK through SLEPc.
inline constexpr int64_t kReplicatedEigenMax = 4096;

/// Chooses the EPS type of a dense symmetric eigenproblem of order n on comm: scalapack by
/// default, lapack when PETSc cannot lay out a MATSCALAPACK of order n on every rank (see
/// scalapack_local_size); the options database (-<prefix>eps_type) overrides the default,
/// but a scalapack request that cannot be honoured becomes lapack. Collective over comm
/// (one MPI_Allreduce); the same result on every rank.
DenseEpsChoice choose_dense_eps_type(int64_t n, const std::string& prefix, MPI_Comm comm);

}  // namespace ssdr
