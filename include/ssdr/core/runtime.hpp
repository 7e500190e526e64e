#pragma once
/// \file runtime.hpp
/// Starting and stopping the libraries ssdr runs on (PETSc and SLEPc, on an MPI the caller or
/// they start), the one way the command line (src/app) and the Python module both do it.
#include <mpi.h>

namespace ssdr {

/// Initializes SLEPc (hence PETSc; and MPI when nobody has yet) with the PETSc options in
/// argc/argv (may both be null: then only the PETSC_OPTIONS environment variable and
/// ~/.petscrc are read), starts the progress clock and installs ssdr's PETSc error handler
/// (PETSc errors become one-line ssdr::Error messages instead of a traceback). Does nothing
/// when SLEPc is already initialized (by the caller, petsc4py or an earlier call).
/// `signal_handler` false removes PETSc's own signal handler (a host such as Python keeps
/// its own SIGINT/SIGSEGV handling). Collective over MPI_COMM_WORLD.
/// \returns true when this call initialized SLEPc (then finalize() ends it), false when it
///   was initialized already. \throws ssdr::Error (replicated) when SlepcInitialize fails.
bool initialize(int* argc, char*** argv, bool signal_handler = true);

/// Finalizes SLEPc and PETSc when initialize() started them (MPI stays, unless PETSc started
/// it); idempotent. Collective over MPI_COMM_WORLD. \returns PETSc's error code (0: fine);
/// PETSc writes -log_view and its other reports here, which may fail.
int finalize();

}  // namespace ssdr
