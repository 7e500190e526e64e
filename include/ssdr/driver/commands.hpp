#pragma once
/// \file commands.hpp
/// The `ssdr fit | evaluate | transform | predict | convert` commands behind the thin CLI in src/app.
#include <cstdint>
#include <string>

#include "ssdr/data/split.hpp"
#include "ssdr/driver/pipeline.hpp"
#include "ssdr/driver/selection.hpp"
#include "ssdr/io/dataset.hpp"

namespace ssdr::driver {

/// Everything `fit` and `evaluate` take from the command line.
struct FitCommand {
  std::string data;
  io::Format format = io::Format::automatic;
  io::ReadOptions read;       ///< --hdf5-data, --hdf5-labels, --labels
  std::string split_file;     ///< --split FILE, or empty
  data::SplitSpec split;      ///< --labeled-per-class P ... --seed S
  /// Neither --split nor --labeled-per-class: the data's own labeled rows are labeled and its
  /// unlabeled rows (unlabeled markers) transductive (data::roles_from_labels).
  bool roles_from_data = false;
  int splits = 1;             ///< evaluate: R random splits, seeds S..S+R−1
  FitConfig config;
  std::string select_by = "none";  ///< --select-by none|cv
  int cv_folds = 5;                ///< --cv-folds k
  Grid grid;                       ///< --grid NAME=v1,...; empty → default_grid(config)
  /// --cv-table: the CSV of the candidates --method auto or --select-by cv scored
  /// (cv_table_csv); empty: not written.
  std::string cv_table;
  std::string report, model, embedding;  ///< output paths (empty: not written)
  /// --soft-labels: the propagated soft labels F (n_t × (c+1), the transductive samples in
  /// file order, the outlier class last) of a method that propagates labels; empty: not written.
  std::string soft_labels;
  /// --graph-out: the kNN lists of the transductive samples (graph::write_knn_lists); empty:
  /// not written. --graph-in: such lists used instead of the search; empty: search.
  std::string graph_out, graph_in;
  /// --plot: a PNG/SVG scatter of the embedding at the end of the fit (run_plot); empty: none.
  std::string plot;
};

/// `ssdr transform` and `ssdr predict`: a saved model applied to new samples.
struct TransformCommand {
  std::string model, data, embedding;
  io::Format format = io::Format::automatic;
  io::ReadOptions read;  ///< labels optional (NPY, HDF5; CSV with --no-labels): transform does not use them
};

/// `ssdr predict`: labels every sample of `data` by 1-NN in the model's embedding against
/// the fit's labeled samples (model::Model::labeled_embedding) and writes one label per line
/// in file order to `output` (".npy": a 1-D int64 array).
struct PredictCommand {
  std::string model, data, output;
  io::Format format = io::Format::automatic;
  io::ReadOptions read;  ///< labels optional: with them the accuracy is printed
};

/// `ssdr convert`: reads any format (in parallel where the format allows) and writes it as
/// HDF5 (data sets /X float64 n×d and /y n, collectively) or NPY (X by MPI-IO; the labels to
/// `labels_output`, a 1-D NPY), so a text or IDX data set is converted once and then read in
/// parallel by every run. The labels keep their class names: integer classes as their
/// integers (int32 /y, int64 NPY; −1 unlabeled), named classes as strings (fixed-length
/// UTF-8 /y, '<U' NPY; "" unlabeled), so reading the output gives the same class_names.
struct ConvertCommand {
  std::string data, output, labels_output;
  io::Format format = io::Format::automatic;
  io::ReadOptions read;
};

/// `ssdr plot`: a 2-D scatter of an embedding file (CSV from ssdr with its label column, NPY,
/// HDF5) coloured by class name, unlabeled rows grey, written as PNG or SVG.
struct PlotCommand {
  std::string embedding, output;
  std::string labels;   ///< --labels: an NPY file of labels for an NPY/HDF5 embedding
  std::string title;    ///< --title (default: the embedding's file name)
  bool pca = false;     ///< --pca: the first two principal components instead of y1, y2
};

/// Checks before any computation that each non-empty output path can be created (its
/// directory exists and is writable), so a long job does not fail at the end.
/// Collective. \throws ssdr::Error (collectively) naming the option and path.
void check_outputs(const FitCommand& cmd, MPI_Comm comm);

/// `ssdr fit`: one split; with select_by "cv" the grid (or default_grid) is first chosen by
/// select_by_cv on the split's labeled samples (folds seeded by the split's seed) and
/// recorded in the report's info["selection"]; prints the accuracy table on rank 0, writes
/// report/model/embedding atomically. Collective. Returns the process exit code.
int run_fit(const FitCommand& cmd, MPI_Comm comm);
/// `ssdr evaluate`: cmd.splits random splits, mean ± std; with select_by "cv" the selection
/// runs inside every split (per_split[i].info.selection; the choices in "selection").
/// Collective.
int run_evaluate(const FitCommand& cmd, MPI_Comm comm);
/// `ssdr transform`: applies a saved model. Collective.
int run_transform(const TransformCommand& cmd, MPI_Comm comm);
/// `ssdr predict`: see PredictCommand. Projects with model::project, classifies with
/// evaluation::nearest_labels (a distance tie goes to the smaller labeled index, as in the
/// fit's evaluation), writes the labels atomically and, when the data has labels, prints the
/// accuracy on rank 0. Collective. \throws ssdr::Error (collectively) naming the option when
/// the model predates format 5 (no labeled samples: refit it), the data's width is not the
/// model's, or the output cannot be written.
int run_predict(const PredictCommand& cmd, MPI_Comm comm);
/// `ssdr plot`: runs the plotting script (src/app/plot_embedding.py, matplotlib) on rank 0
/// with an argument vector (never a shell) and the Python CMake found; the other ranks wait
/// for its outcome. Collective. \throws ssdr::Error (collectively) with the script's one-line
/// message (bad file, bad output name) or naming the missing interpreter or script.
int run_plot(const PlotCommand& cmd, MPI_Comm comm);
/// `ssdr convert`: see ConvertCommand. Collective. \throws ssdr::Error naming the option.
int run_convert(const ConvertCommand& cmd, MPI_Comm comm);

}  // namespace ssdr::driver
