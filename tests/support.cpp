#include "support.hpp"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ssdr::test {

std::string data_path(const std::string& name) { return std::string(SSDR_TEST_DATA_DIR) + "/" + name; }

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void load_csv_replicated(const std::string& name, Dense& X, std::vector<int>& labels) {
  std::ifstream in(data_path(name));
  if (!in) throw std::runtime_error("cannot open " + data_path(name));
  std::vector<std::vector<double>> rows;
  labels.clear();
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::string tok;
    std::getline(ss, tok, ',');
    labels.push_back(std::stoi(tok));
    std::vector<double> r;
    while (std::getline(ss, tok, ',')) r.push_back(std::stod(tok));
    rows.push_back(std::move(r));
  }
  X = Dense(static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows.at(0).size()));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) X(static_cast<int64_t>(i), static_cast<int64_t>(j)) = rows[i][j];
}

double max_abs_diff(const Dense& A, const Dense& B) {
  if (A.rows != B.rows || A.cols != B.cols) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < A.v.size(); ++i) m = std::max(m, std::abs(A.v[i] - B.v[i]));
  return m;
}

double max_diff_up_to_column_sign(const Dense& A, const Dense& B) {
  if (A.rows != B.rows || A.cols != B.cols) return INFINITY;
  double m = 0;
  for (int64_t j = 0; j < A.cols; ++j) {
    double dot = 0;
    for (int64_t i = 0; i < A.rows; ++i) dot += A(i, j) * B(i, j);
    const double s = dot < 0 ? -1.0 : 1.0;
    for (int64_t i = 0; i < A.rows; ++i) m = std::max(m, std::abs(A(i, j) - s * B(i, j)));
  }
  return m;
}

}  // namespace ssdr::test
