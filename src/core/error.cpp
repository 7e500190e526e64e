#include "ssdr/core/error.hpp"

#include <petscsys.h>

#include <cstdio>
#include <cstdlib>

#include <string>
#include <vector>

namespace ssdr {

namespace {
/// The message on one line: control characters (a NUL from a file would cut the text, a
/// newline would split it) become \xNN; tabs and line breaks become spaces, trailing
/// white space is dropped.
std::string one_line(const std::string& message) {
  std::string m = message;
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r' || m.back() == ' ' || m.back() == '\t')) m.pop_back();
  std::string out;
  out.reserve(m.size());
  for (unsigned char ch : m) {
    if (ch == '\t' || ch == '\n' || ch == '\r') {
      out += ' ';
    } else if (ch < 0x20 || ch == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}
}  // namespace

namespace {
/// The ranks of `comm` as ranks of MPI_COMM_WORLD, in comm's rank order.
std::vector<int> world_ranks(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return {};
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> mine(static_cast<size_t>(size)), world(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) mine[static_cast<size_t>(i)] = i;
  MPI_Group g = MPI_GROUP_NULL, w = MPI_GROUP_NULL;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  MPI_Group_translate_ranks(g, size, mine.data(), w, world.data());
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  return world;
}
}  // namespace

Error::Error(const std::string& message, const char* file, int line, bool collective)
    : std::runtime_error(one_line(message)),
      file_(file),
      line_(line),
      scope_(collective ? Scope::replicated : Scope::local) {}

Error::Error(const std::string& message, const char* file, int line, MPI_Comm comm)
    : std::runtime_error(one_line(message)),
      file_(file),
      line_(line),
      scope_(Scope::communicator),
      world_ranks_(world_ranks(comm)) {}

bool Error::collective_over(MPI_Comm comm) const {
  if (scope_ != Scope::communicator) return scope_ == Scope::replicated;
  return world_ranks(comm) == world_ranks_;
}

void abort_unless_collective(const Error& e, MPI_Comm comm) {
  if (e.collective_over(comm)) return;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // The source location only on request (SSDR_DEBUG=1): users get the message.
  if (std::getenv("SSDR_DEBUG") != nullptr)
    std::fprintf(stderr, "ssdr: error: %s (rank %d, %s)\n", e.what(), rank, e.where().c_str());
  else
    std::fprintf(stderr, "ssdr: error: %s (rank %d)\n", e.what(), rank);
  std::fflush(stderr);
  MPI_Abort(comm, 1);
}

std::string Error::where() const { return std::string(file_) + ":" + std::to_string(line_); }

void check_collective(MPI_Comm comm, bool ok, const std::string& message, const char* file,
                      int line) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int size = 1;
  MPI_Comm_size(comm, &size);
  // Lowest failing rank (or size when nobody failed).
  int mine = ok ? size : rank;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  int len = (rank == first) ? static_cast<int>(message.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  std::string text(static_cast<size_t>(len), '\0');
  if (rank == first) text = message;
  if (len > 0) MPI_Bcast(text.data(), len, MPI_CHAR, first, comm);
  throw Error(text, file, line, comm);
}

namespace {
std::string& last_petsc_message() {
  static std::string m;
  return m;
}
}  // namespace

int petsc_error_handler(MPI_Comm, int, const char*, const char*, int code, int type, const char* message, void*) {
  if (type == PETSC_ERROR_INITIAL && message != nullptr && last_petsc_message().empty())
    last_petsc_message() = message;
  return code;
}

std::string petsc_error_text(int code, const char* call) {
  std::string text = last_petsc_message();
  last_petsc_message().clear();
  if (text.empty()) {
    const char* generic = nullptr;
    PetscErrorMessage(static_cast<PetscErrorCode>(code), &generic, nullptr);
    text = generic != nullptr ? generic : "error " + std::to_string(code);
  }
  for (char& ch : text)
    if (ch == '\n') ch = ' ';
  return "PETSc: " + text + " (" + std::string(call) + ")";
}

std::string shape_message(const std::string& what, int64_t rows_a, int64_t cols_a,
                          int64_t rows_b, int64_t cols_b) {
  return what + ": expected " + std::to_string(rows_b) + "x" + std::to_string(cols_b) +
         ", got " + std::to_string(rows_a) + "x" + std::to_string(cols_a);
}

}  // namespace ssdr
