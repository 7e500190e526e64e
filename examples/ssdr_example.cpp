// ssdr as a library: every rank of MPI_COMM_WORLD reads its part of a labeled CSV, SODA is
// fitted on a stratified split (5 labeled samples per class, half of the data transductive)
// through the method table, and rank 0 prints the 1-NN accuracy on the unlabeled and unseen
// samples. Usage: mpiexec -n P ssdr_example DATA.csv   (tests/data/iris.csv)
#include <slepcsys.h>

#include <cstdio>

#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"
#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/io/dataset.hpp"
#include "ssdr/methods/method.hpp"

int main(int argc, char** argv) {
  if (SlepcInitialize(&argc, &argv, nullptr, nullptr) != 0) return 1;  // MPI, PETSc, SLEPc
  int rank = 0, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ssdr::set_quiet(true);  // no per-phase progress lines (the command line's --quiet)
  try {
    SSDR_REQUIRE(argc == 2, "usage: ssdr_example DATA.csv");
    const ssdr::io::Dataset ds = ssdr::io::read_dataset(argv[1], ssdr::io::Format::csv, MPI_COMM_WORLD);
    ssdr::data::SplitSpec spec;
    spec.labeled_per_class = 5;
    spec.transductive_fraction = 0.5;
    spec.seed = 1;  // the split depends on the labels and the seed only, not on the ranks
    const auto roles = ssdr::data::make_split(ds.labels, ds.classes, spec);
    const ssdr::methods::MethodInfo& soda = ssdr::methods::find_method("soda");
    ssdr::driver::FitConfig config;
    config.method = soda.name;
    config.preprocess = soda.preprocess;  // the paper's preprocessing, as `ssdr fit` applies it
    const auto out = ssdr::driver::fit_and_evaluate(ds, roles, config, false);
    if (rank == 0)
      std::printf("%s on %s: %lld x %lld, dim %lld, accuracy unlabeled %.4f unseen %.4f\n", soda.name.c_str(),
                  argv[1], static_cast<long long>(ds.X.n_global), static_cast<long long>(ds.X.cols),
                  static_cast<long long>(out.dim), out.accuracy.unlabeled, out.accuracy.unseen);
  } catch (const ssdr::Error& e) {
    const bool everywhere = e.collective_over(MPI_COMM_WORLD);  // raised on every rank alike
    if (rank == 0 || !everywhere) std::fprintf(stderr, "ssdr_example: error: %s\n", e.what());
    if (!everywhere) MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks would wait forever
    code = 1;
  }
  SlepcFinalize();
  return code;
}
