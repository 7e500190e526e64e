#pragma once
/// \file error.hpp
/// Errors raised by ssdr. Every error carries a one-line user message (what()) and the
/// source file and line that raised it (where()), as Ginkgo's exceptions do.
#include <mpi.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ssdr {

/// The one exception type of ssdr. what() is a single line meant for the user
/// ("digits.csv:17: expected 65 fields, found 64"); where() is "file.cpp:123" for developers.
///
/// An error knows which ranks raised it (its scope), so a catch site can tell whether every
/// rank of its communicator leaves together (clean exit, or a recorded failure of one
/// experiment group) or only some do (then the world must be aborted, or others would hang):
///  - local: raised on this rank alone (SSDR_THROW, SSDR_CHECK);
///  - replicated: a check on data every rank of the calling collective holds alike (options,
///    replicated labels or split; SSDR_REQUIRE), so every rank of that collective raises it;
///  - communicator: raised by check_collective on every rank of that communicator, whose
///    ranks (as ranks of MPI_COMM_WORLD) the error keeps.
class Error : public std::runtime_error {
 public:
  /// Which ranks raise the error (see the class comment).
  enum class Scope { local, replicated, communicator };
  /// `collective` true: Scope::replicated, else Scope::local.
  Error(const std::string& message, const char* file, int line, bool collective = false);
  /// Scope::communicator over `comm` (every rank of comm raises it). Local (no communication).
  Error(const std::string& message, const char* file, int line, MPI_Comm comm);
  /// Raised on more than this rank (replicated or communicator scope).
  bool collective() const { return scope_ != Scope::local; }
  /// Whether every rank of `comm` raised this error: a replicated error, or one raised over
  /// a communicator with exactly comm's ranks. Local (no communication).
  bool collective_over(MPI_Comm comm) const;
  Scope scope() const { return scope_; }
  /// Source location that raised the error, "file:line".
  std::string where() const;
  const char* file() const { return file_; }
  int line() const { return line_; }

 private:
  const char* file_;
  int line_;
  Scope scope_;
  std::vector<int> world_ranks_;  ///< Scope::communicator: the communicator's ranks in MPI_COMM_WORLD
};

/// Collective check. Every rank of `comm` must call it. If `ok` is false on any rank,
/// every rank throws ssdr::Error with the message of the lowest failing rank, so all
/// ranks leave the collective code path together and nobody hangs. The error's scope is
/// `comm` (Error::collective_over).
/// \throws ssdr::Error on every rank when any rank passed ok == false.
void check_collective(MPI_Comm comm, bool ok, const std::string& message, const char* file,
                      int line);

/// The catch site's step for an error that only some ranks of `comm` may have raised: when
/// e is not collective over comm (Error::collective_over), prints "ssdr: error: MESSAGE
/// (rank R)" on stderr (with the source location when SSDR_DEBUG is set) and aborts comm, as
/// the other ranks would otherwise wait forever; otherwise returns and the caller reports the
/// error once. Local (MPI_Abort when it does not return).
void abort_unless_collective(const Error& e, MPI_Comm comm);

/// Runs `body` on rank 0 of comm only (writing a file every rank computed, for instance) and
/// raises its failure, any std::exception, on every rank with rank 0's message. Collective.
/// \throws ssdr::Error (collectively over comm) with body's message.
template <class F>
void on_root(MPI_Comm comm, F&& body) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  bool ok = true;
  std::string message;
  if (rank == 0) {
    try {
      body();
    } catch (const std::exception& e) {
      ok = false;
      message = e.what();
    }
  }
  check_collective(comm, ok, message, __FILE__, __LINE__);
}

/// "PETSc: <PETSc's message of the failed call> (<call>)": the message recorded by
/// petsc_error_handler since the last call (then cleared), or PETSc's text for `code`.
std::string petsc_error_text(int code, const char* call);

/// A PETSc error handler (PetscPushErrorHandler) that prints nothing and keeps the first
/// message of each error for petsc_error_text, so PETSc's traceback becomes ssdr's one line.
int petsc_error_handler(MPI_Comm comm, int line, const char* fun, const char* file, int code, int type,
                        const char* message, void* ctx);

/// Formats "what: expected A×B, got C×D" for shape mismatches.
std::string shape_message(const std::string& what, int64_t rows_a, int64_t cols_a,
                          int64_t rows_b, int64_t cols_b);

}  // namespace ssdr

#define SSDR_THROW(msg) throw ::ssdr::Error((msg), __FILE__, __LINE__)
/// Check of a condition that every rank evaluates identically (options, replicated labels
/// or split): the error is marked collective, so main() exits cleanly on every rank.
#define SSDR_REQUIRE(cond, msg)                                              \
  do {                                                                       \
    if (!(cond)) throw ::ssdr::Error((msg), __FILE__, __LINE__, true);       \
  } while (0)
#define SSDR_CHECK(cond, msg) \
  do {                        \
    if (!(cond)) SSDR_THROW(msg); \
  } while (0)
/// Collective check (see ssdr::check_collective); `msg` is only evaluated where it is needed.
#define SSDR_CHECK_COLLECTIVE(comm, ok, msg)                                   \
  do {                                                                          \
    const bool ssdr_ok_ = static_cast<bool>(ok);                                \
    ::ssdr::check_collective((comm), ssdr_ok_, ssdr_ok_ ? std::string() : std::string(msg), \
                             __FILE__, __LINE__);                               \
  } while (0)
/// Throws when two shapes differ: SSDR_CHECK_SHAPE("Sb vs Sw", r1, c1, r2, c2).
#define SSDR_CHECK_SHAPE(what, ra, ca, rb, cb)                                      \
  do {                                                                              \
    if ((ra) != (rb) || (ca) != (cb))                                               \
      SSDR_THROW(::ssdr::shape_message((what), (ra), (ca), (rb), (cb)));            \
  } while (0)
/// Wraps a PETSc/SLEPc call: a non-zero error code becomes ssdr::Error with PETSc's own
/// message (kept by petsc_error_handler) and the call.
#define SSDR_PETSC(call)                                                            \
  do {                                                                              \
    const int ssdr_ierr_ = static_cast<int>(call);                                  \
    if (ssdr_ierr_ != 0) SSDR_THROW(::ssdr::petsc_error_text(ssdr_ierr_, #call));   \
  } while (0)
/// Like SSDR_PETSC for the ...SetFromOptions calls: the options database is the same on
/// every rank, so a bad option (-lp_ksp_type bogus) fails on every rank alike and the
/// error is collective (one line, clean exit everywhere).
#define SSDR_PETSC_OPTIONS(call)                                                    \
  do {                                                                              \
    const int ssdr_ierr_ = static_cast<int>(call);                                  \
    if (ssdr_ierr_ != 0)                                                            \
      throw ::ssdr::Error(::ssdr::petsc_error_text(ssdr_ierr_, #call), __FILE__, __LINE__, true); \
  } while (0)
