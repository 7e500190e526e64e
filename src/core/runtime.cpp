#include "ssdr/core/runtime.hpp"

#include <stdlib.h>

#include <slepcsys.h>

#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr {

namespace {
bool g_initialized_here = false;
}  // namespace

bool initialize(int* argc, char*** argv, bool signal_handler) {
  // PT-Scotch (PETSc's graph partitioner, graph::renumber_for_locality) single-threaded: one
  // rank per core, and a reproducible partition. Set before any thread starts; a user's own
  // value is kept.
  setenv("SCOTCH_PTHREAD_NUMBER", "1", 0);
  PetscBool done = PETSC_FALSE;
  SlepcInitialized(&done);
  if (done) return false;
  if (SlepcInitialize(argc, argv, nullptr, nullptr) != 0)
    throw Error("PETSc/SLEPc initialization failed", __FILE__, __LINE__, true);
  g_initialized_here = true;
  elapsed_since_start();  // the progress clock starts now
  if (!signal_handler) PetscPopSignalHandler();
  // PETSc/SLEPc errors become ssdr::Error (SSDR_PETSC) with one line, not a traceback.
  PetscPushErrorHandler(reinterpret_cast<PetscErrorCode (*)(MPI_Comm, int, const char*, const char*, PetscErrorCode,
                                                            PetscErrorType, const char*, void*)>(&petsc_error_handler),
                        nullptr);
  return true;
}

int finalize() {
  if (!g_initialized_here) return 0;
  g_initialized_here = false;
  return static_cast<int>(SlepcFinalize());
}

}  // namespace ssdr
