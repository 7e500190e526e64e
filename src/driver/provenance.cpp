// Provenance of result files: version, commit, date, command line, hosts, PETSc options and
// library versions.
#include "ssdr/driver/provenance.hpp"

#include <hdf5.h>
#include <petscsys.h>
#include <slepcsys.h>
#include <unistd.h>

#include <climits>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "ssdr/core/blas_kernels.hpp"
#include "ssdr/core/version.hpp"

namespace ssdr::driver {

namespace {

struct Recorded {
  std::vector<std::string> command_line;
  nlohmann::json hosts = nlohmann::json::object();
  int ranks = 0;
};

Recorded& recorded() {
  static Recorded r;
  return r;
}

std::string first_line(const char* text) {
  std::string s(text);
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

/// The file the dynamic linker resolved libblas.so.3 to (the Debian alternative in effect).
std::string blas_file() {
  char buf[PATH_MAX];
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/libblas.so.3", "/usr/lib/aarch64-linux-gnu/libblas.so.3"})
    if (::realpath(p, buf) != nullptr) return buf;
  return "unknown";
}

}  // namespace

void record_provenance(int argc, char** argv, MPI_Comm comm) {
  Recorded& r = recorded();
  r.command_line.assign(argv, argv + argc);
  int size = 1;
  MPI_Comm_size(comm, &size);
  r.ranks = size;
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME, '\0');
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
  std::map<std::string, int> count;
  for (int q = 0; q < size; ++q) {
    const char* h = all.data() + static_cast<size_t>(q) * MPI_MAX_PROCESSOR_NAME;
    ++count[std::string(h, strnlen(h, MPI_MAX_PROCESSOR_NAME))];
  }
  r.hosts = nlohmann::json::object();
  for (const auto& [h, k] : count) r.hosts[h] = k;
}

nlohmann::json provenance() {
  nlohmann::json p;
  p["ssdr_version"] = version();
  p["git_commit"] = git_commit();
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  p["date"] = date;
  const Recorded& r = recorded();
  p["command_line"] = r.command_line;
  p["ranks"] = r.ranks;
  p["hosts"] = r.hosts;
  char* opts = nullptr;
  PetscBool init = PETSC_FALSE;
  PetscInitialized(&init);
  if (init && PetscOptionsGetAll(nullptr, &opts) == 0 && opts != nullptr) {
    p["petsc_options"] = std::string(opts);
    PetscFree(opts);
  } else {
    p["petsc_options"] = "";
  }
  char petsc[256] = {0}, slepc[256] = {0};
  PetscGetVersion(petsc, sizeof petsc);
  SlepcGetVersion(slepc, sizeof slepc);
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  p["libraries"] = {{"petsc", petsc},
                    {"slepc", slepc},
                    {"hdf5", std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel)},
                    {"mpi", first_line(mpi)},
                    {"blas", blas_file()},
                    {"blas_kernels", blas_core_name()}};  // OpenBLAS's core type ("" for another BLAS)
  return p;
}

}  // namespace ssdr::driver
