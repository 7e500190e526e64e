#pragma once
/// \file output.hpp
/// Writing results without ever leaving a partial file behind.
#include <cstdio>
#include <string>

#include "ssdr/core/dense.hpp"

namespace ssdr::io {

/// A file written under a temporary name in the same directory ("<path>.tmp.<pid>") and
/// renamed to `path` by commit(). If commit() is never called (an exception unwinds), the
/// destructor removes the temporary file, so no partial output is ever visible. Local (one
/// rank writes).
class AtomicFile {
 public:
  /// \throws ssdr::Error naming `path` when the temporary file cannot be created.
  explicit AtomicFile(const std::string& path, bool binary = false);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  std::FILE* get() { return f_; }
  const std::string& temp_path() const { return tmp_; }
  /// Flushes, closes and renames. \throws ssdr::Error when writing or renaming failed.
  void commit();

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  bool done_ = false;
};

/// Writes a whole text file atomically from rank 0 only (other ranks do nothing). Local.
void write_text_atomic(const std::string& path, const std::string& text);

/// Writes the n×m embedding Y (rows distributed, in file order) to `path`: ".npy" → NumPy
/// float64 little-endian n×m (C order); anything else → CSV, comma-separated, no header,
/// 17 significant digits. Rank 0 receives the blocks one rank at a time and streams them,
/// so it never holds more than one rank's block. Atomic (temp + rename). Collective over
/// Y.comm. \throws ssdr::Error on every rank when the file cannot be written.
void write_embedding(const DistMatrix& Y, const std::string& path);

}  // namespace ssdr::io
