#pragma once
/// \file blas_kernels.hpp
/// Which kernels OpenBLAS runs on this CPU, and the fix when it falls back to its generic ones.
///
/// Debian 12's OpenBLAS (0.3.21, built for every x86-64 CPU) picks its kernels from the CPU's
/// model number. A model it does not know (seen here: a virtual "Intel(R) Xeon(R) Processor"
/// with AVX-512) gets its generic Prescott (SSE3) kernels: dgemm ran at 10.6 GFLOP/s per core
/// against 74 with the SkylakeX kernels that OPENBLAS_CORETYPE=SkylakeX selects on the same
/// core (2026-11-28). Every dense stage of a fit (eigen-solves, PCA, scatter GEMMs) pays that.
/// OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded: the command line therefore starts
/// itself again with it set (reexec_with_openblas_coretype), jobs/env.sh sets it, and a
/// process that cannot restart (Python) is told what to set.
#include <string>

namespace ssdr {

/// The kernels OpenBLAS chose (openblas_get_corename(): "SkylakeX", "Haswell", "Prescott", …),
/// or "" when the BLAS in use is not OpenBLAS. Local.
std::string blas_core_name();

/// The OPENBLAS_CORETYPE this CPU's features call for: "SkylakeX" with AVX-512 (F, CD, BW, DQ,
/// VL), "Haswell" with AVX2 and FMA, else "" (OpenBLAS's own choice stands). Local.
std::string suggested_openblas_coretype();

/// True when OpenBLAS fell back to generic kernels (a core name of Prescott or older) on a CPU
/// for which suggested_openblas_coretype() names faster ones, and the user has not set
/// OPENBLAS_CORETYPE. Local.
bool openblas_on_generic_kernels();

/// When openblas_on_generic_kernels(): sets OPENBLAS_CORETYPE to the suggested kernels and
/// replaces the process by itself (execv of the path it was started by, with the same argv;
/// the PID, the process name, the environment and the open files stay); not when that path
/// is not the running program (ld.so started by hand, valgrind, an emulator). Returns only when there is nothing to do or the
/// exec failed (the run goes on with the generic kernels). Call it first in main, before
/// MPI_Init (every rank decides alike: the same CPU model and environment on a node). Local.
void reexec_with_openblas_coretype(char** argv);

}  // namespace ssdr
