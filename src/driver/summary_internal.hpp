#pragma once
/// \file summary_internal.hpp
/// Private to src/driver (not installed): what the summary's aggregation (summary.cpp) hands
/// its plots (summary_plots.cpp).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "experiment_internal.hpp"

namespace ssdr::driver::detail {

/// Mean and sample std of the values that are not NaN, and their count.
struct Stat {
  double mean = NAN, std = NAN;
  int n = 0;
};

/// Mean and sample std over the splits of one setting: a point of a plot.
struct Point {
  Stat unlabeled, unseen;
};
/// A method's accuracy by dimension at its best parameters (accuracy-vs-dimension plot); one
/// point only (one m, or no embedding: lp) makes it a horizontal reference line there.
struct DimCurve {
  std::map<int64_t, Point> points;
  std::string fixed;  ///< its parameters held fixed, as the title names them
};
/// A method's accuracy against one swept parameter, m and the other parameters at their best.
struct ParamCurve {
  std::map<double, Point> points;
  std::string fixed;
};

/// Per (data set, p): method → its accuracy by dimension at its best non-dim parameters.
using DimCurves = std::map<std::pair<std::string, int>, std::map<std::string, DimCurve>>;
/// Per (data set, p, method, parameter): value → accuracy at the best dimension and other
/// parameters.
using ParamCurves = std::map<std::tuple<std::string, int, std::string, std::string>, ParamCurve>;

/// A JSON value as titles show it: a string as its text, anything else as JSON. Local.
/// Defined in summary.cpp.
std::string value_text(const json& v);

/// `parts` joined by `sep`. Local. Defined in summary.cpp.
std::string join(const std::vector<std::string>& parts, const std::string& sep);

/// Writes the plots of the curves into the folder `plots` (made when missing): one of
/// accuracy against m per (data set, p) where a method has several m, one per swept numeric
/// parameter with two or more values; each as its data (.dat), its gnuplot script (.gp), and
/// PNG and SVG through gnuplot (said and skipped when gnuplot is missing). Removes the plot
/// files there that this summary did not make. Returns the number of plots. Local (rank 0).
/// Defined in summary_plots.cpp.
size_t write_plots(const Job& job, const std::string& plots, const DimCurves& by_dim, const ParamCurves& by_param);

}  // namespace ssdr::driver::detail
