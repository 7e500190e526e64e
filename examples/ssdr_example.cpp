// ssdr as a library: every rank of MPI_COMM_WORLD reads its part of a labeled CSV, keeps the
// label of the first 5 samples of each class (the others get -1: unlabeled), fits SODA (m = 2,
// seed 1) with ssdr::Estimator on the rows of all ranks, labels its own rows by 1-NN against the
// labeled ones, and rank 0 prints the accuracy on the unlabeled rows: the line
// examples/ssdr_example.py prints. Usage: mpiexec -n P ssdr_example DATA.csv (tests/data/iris.csv)
#include <algorithm>
#include <cstdio>
#include <vector>

#include "ssdr/core/error.hpp"
#include "ssdr/core/runtime.hpp"
#include "ssdr/driver/estimator.hpp"
#include "ssdr/io/dataset.hpp"

int main(int argc, char** argv) {
  ssdr::initialize(&argc, &argv);  // MPI, PETSc, SLEPc (PETSc options from argv); PETSc errors as ssdr::Error
  int rank = 0, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    SSDR_REQUIRE(argc == 2, "usage: ssdr_example DATA.csv");
    ssdr::io::Dataset ds = ssdr::io::read_dataset(argv[1], ssdr::io::Format::csv, MPI_COMM_WORLD);
    // ds.labels holds this rank's rows' labels (nothing of size n on any rank); the samples
    // of each class before this rank's rows are counted by an exclusive scan over the ranks.
    std::vector<int> mine(static_cast<size_t>(ds.classes), 0), seen(mine.size(), 0), y, hidden;
    for (int label : ds.labels) ++mine[static_cast<size_t>(label)];
    MPI_Exscan(mine.data(), seen.data(), ds.classes, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::fill(seen.begin(), seen.end(), 0);  // MPI_Exscan leaves rank 0's undefined
    for (int label : ds.labels) {
      const bool labeled = seen[static_cast<size_t>(label)]++ < 5;
      y.push_back(labeled ? label : -1);
      hidden.push_back(labeled ? -1 : label);  // score counts the rows given a label
    }
    ssdr::Estimator soda("soda", {{"dim", 2}, {"seed", 1}});  // quiet unless {"verbose", true}
    soda.fit(ds.X, y);  // a copy of X: it is used again below (std::move(ds.X) would save it)
    const double accuracy = soda.score(ds.X, hidden);
    if (rank == 0)
      std::printf("soda on %s: %lld x %lld, dim %lld, accuracy unlabeled %.4f\n", argv[1],
                  static_cast<long long>(ds.X.n_global), static_cast<long long>(ds.X.cols),
                  static_cast<long long>(soda.model().W.cols), accuracy);
  } catch (const ssdr::Error& e) {
    const bool everywhere = e.collective_over(MPI_COMM_WORLD);  // raised on every rank alike
    if (rank == 0 || !everywhere) std::fprintf(stderr, "ssdr_example: error: %s\n", e.what());
    if (!everywhere) MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks would wait forever
    code = 1;
  }
  ssdr::finalize();
  return code;
}
