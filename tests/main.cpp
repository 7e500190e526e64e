// Test driver: GoogleTest first (it strips its own flags), then SLEPc/PETSc/MPI. Only rank 0
// prints; every rank's result is reduced so the process exit code agrees across ranks.
#include <gtest/gtest.h>
#include <slepcsys.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (SlepcInitialize(&argc, &argv, nullptr, nullptr) != 0) return 1;
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int local = RUN_ALL_TESTS();
  int global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, PETSC_COMM_WORLD);
  SlepcFinalize();
  return global;
}
