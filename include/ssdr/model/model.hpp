#pragma once
/// \file model.hpp
/// A fitted model: everything needed to map a new raw sample x ∈ R^{d_input} to its
/// m-dimensional embedding y = Wᵀ φ_c(Pᵀ ((x − shift) ∘ scale − mean)), saved with
/// Boost.Serialization; φ_c is the kernel feature map (identity without a kernel). This
/// header is the model and its file format; the projection itself is projector.hpp's.
///
/// Format versions: 1 = preprocessing + W; 2 adds the kernel feature map (kernels::FeatureMap:
/// kernel type and parameters, landmarks Z — for an exact map the n training samples —, M and
/// the centering terms a, soda-nie2009 eq. (40)); 3 adds the column normalization of W
/// (Normalization, provenance only: project() uses W as stored); 4 adds the
/// checksum; 5 adds the fit's labeled samples (their embeddings and labels, for `ssdr
/// predict`); 6 stores the exact kernel map's rows (z_i, M's row i, a_i) as a row section
/// after the replicated part, written and read by every rank at its own offset (MPI-IO), so
/// the exact map stays distributed (kernels::FeatureMap) and a model saved on P ranks loads
/// on any P'. Version-1 files still load (no kernel), version-1 and -2 files load with
/// normalization metric, the only scale the ssdr versions that wrote them produced for the
/// generalized eigenproblems, files before version 5 load without labeled samples, and an
/// exact map of a file before version 6 (held whole on every rank) is distributed on load.
///
/// Memory per rank of a loaded model, in doubles: the replicated part — the preprocessing
/// d_input·(3 + d'), W r×m, the labeled embeddings m×l — plus the kernel map: an exact map's
/// ⌈n/P⌉ rows of (Z, M, a), ⌈n/P⌉·(d' + r + 1) (never n·d' or n·r on one rank), a Nyström
/// map's r_z·(d' + r + 1), replicated.
#include <cstdint>
#include <string>
#include <vector>

#include "ssdr/core/dense.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/core/normalization.hpp"

namespace ssdr::model {

/// Magic string at the start of every model archive and the current format version.
inline constexpr const char* kMagic = "ssdr-model";
inline constexpr int kFormatVersion = 6;
/// The first format version that keeps the labeled samples (`ssdr predict` needs them).
inline constexpr int kFirstVersionWithLabeled = 5;

/// A fitted model (the --model file, Boost.Serialization): the method, its parameters, the
/// preprocessing (centering, scaling, PCA basis), W, the kernel map, the labeled samples.
struct Model {
  std::string method;          ///< method name from the method table ("soda", ...)
  std::string ssdr_version;    ///< version that produced it
  std::string parameters_json; ///< the parameters of the fit, as JSON text
  int64_t d_input = 0;         ///< d of the raw data
  int classes = 0;             ///< c
  std::vector<double> shift;   ///< d_input, empty = 0 (scaling: x ← (x − shift) ∘ scale)
  std::vector<double> scale;   ///< d_input, empty = 1
  std::vector<double> mean;    ///< d_input, centering after scaling (empty = 0)
  Dense basis;                 ///< d_input × d' PCA basis (0×0 = identity)
  kernels::FeatureMap kernel;  ///< φ_c: d' → r (type none: identity, r = d'); version ≥ 2
  Dense W;                     ///< r × m projection (d' × m without a kernel)
  /// How W's columns were scaled (FitResult::normalization of the fit); version ≥ 3, older
  /// files: metric.
  Normalization normalization = Normalization::metric;
  /// The fit's labeled samples for 1-NN prediction (version ≥ 5): their embeddings, m ×
  /// n_labeled (column j is the j-th labeled sample's embedding Wᵀφ(x_j), the samples in
  /// increasing global index, so the model is the same on any rank count), and their labels
  /// (n_labeled entries in 0..classes−1). Both empty: no labeled samples (older files).
  Dense labeled_embedding;
  std::vector<int> labeled_labels;
  /// The format version of the file this model was loaded from (kFormatVersion for a model
  /// built in memory). Not stored in the archive: the file header holds it.
  int format_version = kFormatVersion;
};

/// Saves `m` atomically (temp + rename): kMagic, the format version (uint32 LE), the length
/// of the replicated part (uint64 LE), the replicated part as a Boost binary archive, the
/// FNV-1a 64 checksum of all bytes so far, then the exact kernel map's row section (n rows
/// of d' + r + 1 doubles: z_i, M's row i, a_i; empty without an exact map) and its checksum
/// Σ_i FNV-1a 64(i ‖ row i) mod 2^64, which does not depend on which rank wrote which row.
/// Local: call it on one rank, for a model whose exact map (if any) holds all its rows
/// (not distributed over more than one rank; use save_collective). \throws ssdr::Error naming
/// the path, also when a shape is inconsistent or an entry is NaN/Inf.
void save(const Model& m, const std::string& path);

/// The same file written by every rank of comm: rank 0 writes the replicated part and the
/// checksums, each rank writes its own rows of a distributed exact map at their offset
/// (MPI_File_write_at_all; a map held whole on one rank: rank 0 writes all rows). The
/// kernel map must be distributed over comm (or a communicator congruent with it) or held
/// whole. A device or FIFO as path is written in place by rank 0, the rows reaching it block
/// by block. The temporary file is renamed by rank 0 once every rank has written. Collective
/// over comm. \throws ssdr::Error on every rank (one line naming the path) as save().
void save_collective(const Model& m, const std::string& path, MPI_Comm comm);

/// Loads a model (format_version set from the file) whole on this rank: an exact kernel map
/// holds all n rows (comm MPI_COMM_SELF). Local. \throws ssdr::Error with a one-line message
/// naming the path when the file is missing, is not an ssdr model (wrong magic), has an
/// unsupported format version, is truncated/corrupt, fails a checksum (format ≥ 4), has
/// inconsistent shapes (the labeled embeddings too: m rows, one label per column, labels in
/// 0..classes−1) or a NaN/Inf entry, or is not a regular file.
Model load(const std::string& path);

/// Collective load: rank 0 reads and checks the replicated part, every rank gets its bytes
/// and parses them (so every rank has the same replicated model and format_version); an
/// exact kernel map's rows are read by every rank for its block-layout share (⌈n/P⌉ or
/// ⌊n/P⌋ rows, MPI_File_read_at_all) and the map is distributed over comm, whatever the rank
/// count that wrote it. Errors are raised on every rank. \throws ssdr::Error as load().
Model load_collective(const std::string& path, MPI_Comm comm);

/// The bytes of the model file save() writes (the same format), built in memory (what an
/// estimator's pickle keeps). Local. \throws ssdr::Error as save(), and when an exact kernel
/// map is distributed over more than one rank.
std::string to_bytes(const Model& m);

/// The model of `bytes` (to_bytes, or a whole model file's contents of any format version),
/// parsed on every rank from its own copy, an exact kernel map distributed over comm in the
/// block layout as load_collective does. `what` names the bytes in messages. Collective over
/// comm. \throws ssdr::Error (collectively) as load(), and when the ranks' bytes differ.
Model from_bytes_collective(const std::string& bytes, const std::string& what, MPI_Comm comm);

}  // namespace ssdr::model
