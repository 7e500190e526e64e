#include "support.hpp"

#include "ssdr/core/error.hpp"
#include "ssdr/core/mpi_util.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ssdr/core/lapack.hpp"
#include "ssdr/io/dataset.hpp"

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

TempDir::TempDir(const std::string& prefix) {
  long pid = static_cast<long>(::getpid());
  MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  path_ = (std::filesystem::temp_directory_path() /
           ("ssdr_" + prefix + "_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
            std::to_string(pid)))
              .string();
  if (rank() == 0) std::filesystem::create_directories(path_);
  MPI_Barrier(MPI_COMM_WORLD);
}

TempDir::~TempDir() {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() == 0) std::filesystem::remove_all(path_);
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

double max_abs(const Dense& A) {
  double m = 0;
  for (double v : A.v) m = std::max(m, std::abs(v));
  return m;
}

double max_unit_norm_error(const Dense& W) {
  double worst = 0;
  for (int64_t j = 0; j < W.cols; ++j) {
    double s = 0;
    for (int64_t i = 0; i < W.rows; ++i) s += W(i, j) * W(i, j);
    worst = std::max(worst, std::abs(std::sqrt(s) - 1.0));
  }
  return worst;
}

Dense mul(const Dense& A, const Dense& B, char ta, char tb) {
  const int64_t m = ta == 'N' ? A.rows : A.cols, k = ta == 'N' ? A.cols : A.rows;
  const int64_t n = tb == 'N' ? B.cols : B.rows;
  Dense C(m, n);
  blas::gemm(ta, tb, m, n, k, 1.0, A.data(), A.rows, B.data(), B.rows, 0.0, C.data(), m);
  return C;
}

Dense center_columns(const Dense& X, bool scale) {
  Dense Z = X;
  for (int64_t j = 0; j < X.cols; ++j) {
    double m = 0, s = 0;
    for (int64_t i = 0; i < X.rows; ++i) m += X(i, j);
    m /= static_cast<double>(X.rows);
    for (int64_t i = 0; i < X.rows; ++i) s += (X(i, j) - m) * (X(i, j) - m);
    s = scale ? std::sqrt(s / static_cast<double>(X.rows)) : 1.0;
    for (int64_t i = 0; i < X.rows; ++i) Z(i, j) = s > 0 ? (X(i, j) - m) / s : 0.0;
  }
  return Z;
}

Dense standardize(const Dense& X) { return center_columns(X, true); }

std::vector<int> first_p_labeled(const std::vector<int>& labels, int classes, int p) {
  std::vector<int> seen(static_cast<size_t>(classes), 0), out(labels.size(), -1);
  for (size_t i = 0; i < labels.size(); ++i)
    if (seen[static_cast<size_t>(labels[i])]++ < p) out[i] = labels[i];
  return out;
}

std::vector<int> local_part(const std::vector<int>& v, const DistMatrix& X) {
  return std::vector<int>(v.begin() + X.row_start, v.begin() + X.row_start + X.n_local);
}

Problem load_problem(const std::string& name, int p, bool standardized) {
  Problem pr;
  load_csv_replicated(name, pr.X, pr.labels);
  if (standardized) pr.X = standardize(pr.X);
  pr.classes = *std::max_element(pr.labels.begin(), pr.labels.end()) + 1;
  pr.semi = first_p_labeled(pr.labels, pr.classes, p);
  return pr;
}

data::SplitSpec transductive_split(int labeled_per_class, double fraction, uint64_t seed) {
  data::SplitSpec spec;
  spec.labeled_per_class = labeled_per_class;
  spec.transductive_fraction = fraction;
  spec.seed = seed;
  return spec;
}

data::SplitSpec per_class_split(int labeled_per_class, int unlabeled_per_class, uint64_t seed) {
  data::SplitSpec spec;
  spec.labeled_per_class = labeled_per_class;
  spec.unlabeled_per_class = unlabeled_per_class;
  spec.seed = seed;
  return spec;
}

namespace {

/// Broadcasts a Dense (shape and entries) from rank 0 of `comm`.
void broadcast(Dense& A, MPI_Comm comm) {
  int64_t shape[2] = {A.rows, A.cols};
  MPI_Bcast(shape, 2, MPI_INT64_T, 0, comm);
  if (shape[0] != A.rows || shape[1] != A.cols) A = Dense(shape[0], shape[1]);
  MPI_Bcast(A.data(), static_cast<int>(A.v.size()), MPI_DOUBLE, 0, comm);
}

}  // namespace

std::vector<data::Role> local_part(const std::vector<data::Role>& v, const DistMatrix& X) {
  return std::vector<data::Role>(v.begin() + X.row_start, v.begin() + X.row_start + X.n_local);
}

std::vector<int> all_labels(const io::Dataset& ds) { return allgatherv(ds.labels, ds.X.comm); }

std::vector<data::Role> split(const io::Dataset& ds, const data::SplitSpec& spec) {
  return data::make_split(ds.labels, ds.X.row_start, ds.classes, spec, ds.X.comm);
}

std::vector<data::Role> split_all(const std::string& path, io::Format format, const data::SplitSpec& spec) {
  const io::Dataset one = io::read_dataset(path, format, MPI_COMM_SELF);
  return data::make_split(one.labels, 0, one.classes, spec, MPI_COMM_SELF);
}

driver::FitOutcome fit_problem(const Problem& p, const DistMatrix& X, const driver::FitConfig& config) {
  io::Dataset ds;
  ds.X = X;
  ds.classes = p.classes;
  ds.labels = local_part(p.labels, X);
  std::vector<data::Role> roles(p.semi.size(), data::Role::unlabeled);
  for (size_t i = 0; i < p.semi.size(); ++i)
    if (p.semi[i] >= 0) roles[i] = data::Role::labeled;
  return driver::fit_and_evaluate(ds, local_part(roles, X), config, true);
}

SerialAndDistributed fit_serial_and_distributed(const std::string& file, const data::SplitSpec& spec,
                                                const driver::FitConfig& config, bool keep_embedding) {
  SerialAndDistributed r;
  const std::string path = data_path(file);
  const io::Dataset ds = io::read_dataset(path, io::Format::csv, MPI_COMM_WORLD);
  r.classes = ds.classes;
  r.roles = split_all(path, io::Format::csv, spec);
  const std::vector<data::Role> mine = split(ds, spec);
  SSDR_CHECK(mine == local_part(r.roles, ds.X), "the distributed split differs from the serial one");
  r.dist = driver::fit_and_evaluate(ds, mine, config, keep_embedding);
  if (keep_embedding) r.Y_dist = allgather(r.dist.embedding);

  std::string info;
  if (rank() == 0) {
    const io::Dataset one = io::read_dataset(path, io::Format::csv, MPI_COMM_SELF);
    const driver::FitOutcome s = driver::fit_and_evaluate(one, r.roles, config, keep_embedding);
    r.serial_accuracy = s.accuracy;
    r.serial_trace_ratio = s.trace_ratio;
    if (keep_embedding) r.Y_serial = allgather(s.embedding);
    r.W_serial = s.model.W;
    info = s.info.dump();
  }
  MPI_Bcast(&r.serial_accuracy, static_cast<int>(sizeof(r.serial_accuracy)), MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&r.serial_trace_ratio, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  broadcast(r.Y_serial, MPI_COMM_WORLD);
  broadcast(r.W_serial, MPI_COMM_WORLD);
  int64_t length = static_cast<int64_t>(info.size());
  MPI_Bcast(&length, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  info.resize(static_cast<size_t>(length));
  MPI_Bcast(info.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD);
  r.serial_info = nlohmann::json::parse(info);
  return r;
}

double dist2_convention(const Dense& X, int64_t i, int64_t j) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t t = 0; t < X.cols; ++t) {
    const double diff = X(i, t) - X(j, t);
    lane[t % 8] += diff * diff;
  }
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

}  // namespace ssdr::test
