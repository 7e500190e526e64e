#pragma once
// Helpers shared by the tests: data paths, small dense references, comparisons.
#include <mpi.h>

#include <string>

#include "ssdr/core/dense.hpp"

namespace ssdr::test {

/// Absolute path of a file in tests/data.
std::string data_path(const std::string& name);
int rank();
int size();
/// Loads a CSV data set from tests/data serially on every rank (label first column):
/// X is n×d replicated (column-major Dense), labels n. For serial references only.
void load_csv_replicated(const std::string& name, Dense& X, std::vector<int>& labels);
/// Max |A - B| after flipping each column of B to match the sign of A's column (|A·B| sign).
double max_diff_up_to_column_sign(const Dense& A, const Dense& B);
/// Max |A - B|.
double max_abs_diff(const Dense& A, const Dense& B);

}  // namespace ssdr::test
