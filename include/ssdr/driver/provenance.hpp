#pragma once
/// \file provenance.hpp
/// What produced a result file: every report and results.json carries `provenance`.
#include <mpi.h>

#include <nlohmann/json.hpp>

namespace ssdr::driver {

/// Records the command line and the hosts of `comm` (each host name with its rank count).
/// Collective over `comm`; call once, after PETSc is initialized (main does).
void record_provenance(int argc, char** argv, MPI_Comm comm);

/// {ssdr_version, git_commit, date (UTC, ISO 8601), command_line (argument vector), hosts,
/// ranks, petsc_options (the options database now, as PETSc prints it), libraries (PETSc,
/// SLEPc, HDF5, MPI, BLAS file)}. Local (uses what record_provenance gathered; hosts and
/// command line are empty when it was never called, e.g. in tests).
nlohmann::json provenance();

}  // namespace ssdr::driver
