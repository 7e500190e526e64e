// Which kernels OpenBLAS runs, and restarting with better ones (see blas_kernels.hpp).
#include "ssdr/core/blas_kernels.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstring>

namespace ssdr {

std::string blas_core_name() {
  // Looked up at run time: the BLAS is whatever libblas.so.3 the Debian alternative names.
  // In the global scope for the command line; a Python extension's libraries are loaded
  // locally (RTLD_LOCAL), so there the loaded OpenBLAS is asked for by name (RTLD_NOLOAD:
  // only when it is loaded already).
  using CoreName = char* (*)();
  auto f = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  for (const char* lib : {"libopenblas.so.0", "libblas.so.3"}) {
    if (f != nullptr) break;
    if (void* h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD)) {
      f = reinterpret_cast<CoreName>(dlsym(h, "openblas_get_corename"));
      dlclose(h);  // drops the reference RTLD_NOLOAD took; the library stays loaded
    }
  }
  if (f == nullptr) return "";
  const char* name = f();
  return name ? name : "";
}

std::string suggested_openblas_coretype() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return "";
}

bool openblas_on_generic_kernels() {
  if (getenv("OPENBLAS_CORETYPE") != nullptr) return false;  // the user's choice stands
  const std::string core = blas_core_name();
  // OpenBLAS's fallbacks for a CPU it does not recognize, and the pre-AVX cores.
  static const char* const generic[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Katmai",
                                        "Coppermine", "Northwood", "Atom", "Unknown"};
  bool is_generic = false;
  for (const char* g : generic) is_generic = is_generic || core == g;
  return is_generic && !suggested_openblas_coretype().empty();
}

void reexec_with_openblas_coretype(char** argv) {
  if (getenv("SSDR_BLAS_REEXEC") != nullptr) return;  // once: never a loop
  if (!openblas_on_generic_kernels()) return;
  // The file the kernel ran (/proc/self/exe) must be the program itself: not ld.so run by
  // hand, nor valgrind or an emulator, whose argv would then start the wrong program. The
  // path as executed (AT_EXECFN) is exec'd again, so the process keeps its name (/proc/PID/
  // comm: what ps, top and a batch system show), a symbolic link's included.
  char self[4096], given[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0 || static_cast<size_t>(len) >= sizeof self - 1) return;
  self[len] = '\0';
  const char* execfn = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
  if (execfn == nullptr || realpath(execfn, given) == nullptr || std::strcmp(given, self) != 0) return;
  setenv("OPENBLAS_CORETYPE", suggested_openblas_coretype().c_str(), 1);
  setenv("SSDR_BLAS_REEXEC", "1", 1);
  execv(execfn, argv);
  // The exec failed: go on as we are (unset, so a child process is not misled).
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace ssdr
