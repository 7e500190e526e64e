#pragma once
/// \file commands.hpp
/// The `ssdr fit | evaluate | transform` commands behind the thin CLI in src/app.
#include <cstdint>
#include <string>

#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::driver {

/// Everything `fit` and `evaluate` take from the command line.
struct FitCommand {
  std::string data;
  io::Format format = io::Format::automatic;
  std::string split_file;     ///< --split FILE, or empty
  data::SplitSpec split;      ///< --labeled-per-class P ... --seed S
  int splits = 1;             ///< evaluate: R random splits, seeds S..S+R−1
  FitConfig config;
  std::string report, model, embedding;  ///< output paths (empty: not written)
};

struct TransformCommand {
  std::string model, data, embedding;
  io::Format format = io::Format::automatic;
};

/// Checks before any computation that each non-empty output path can be created (its
/// directory exists and is writable), so a long job does not fail at the end.
/// Collective. \throws ssdr::Error (collectively) naming the option and path.
void check_outputs(const FitCommand& cmd, MPI_Comm comm);

/// `ssdr fit`: one split; prints the accuracy table on rank 0, writes report/model/
/// embedding atomically. Collective. Returns the process exit code.
int run_fit(const FitCommand& cmd, MPI_Comm comm);
/// `ssdr evaluate`: cmd.splits random splits, mean ± std. Collective.
int run_evaluate(const FitCommand& cmd, MPI_Comm comm);
/// `ssdr transform`: applies a saved model. Collective.
int run_transform(const TransformCommand& cmd, MPI_Comm comm);

}  // namespace ssdr::driver
