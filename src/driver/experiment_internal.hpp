#pragma once
/// \file experiment_internal.hpp
/// Private to src/driver (not installed): what the run of `ssdr experiment`
/// (experiment.cpp) and its summaries (summary.cpp) share.
#include <string>
#include <vector>

#include "job_internal.hpp"

namespace ssdr::driver::detail {

/// Creates `path` and its missing parents (mkdir -p; errors show up at the first write).
/// Defined in experiment.cpp.
void make_dirs(const std::string& path);

/// A number for tables and progress lines with printf format `f`; NaN → "-".
/// Defined in summary.cpp.
std::string fmt(double v, const char* f = "%.4f");

/// Writes results.json, summary.csv, summary.md and the plots (PNG and SVG, through
/// gnuplot) of `results` into `out_dir`, then prints the table. Rank 0 of the world only.
/// Defined in summary.cpp.
void summarize(const Job& job, const std::string& out_dir, const std::vector<json>& results, double sweep_seconds,
               int groups, int ranks);

}  // namespace ssdr::driver::detail
