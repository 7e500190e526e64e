// LIBSVM/SVMlight: `label idx:val ...`, 1-based strictly increasing indices, zeros omitted.
#include "reader_internal.hpp"
#include "text_range_internal.hpp"

namespace ssdr::io::detail {

namespace {

/// Next whitespace-delimited token of `s` starting at `pos` (empty at the end).
std::string_view next_token(std::string_view s, size_t& pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  const size_t start = pos;
  while (pos < s.size() && !is_space(s[pos])) ++pos;
  return s.substr(start, pos - start);
}

}  // namespace

/// Parses one LIBSVM line. Returns the label; `max_index` is raised to the largest index.
/// When `row` is given (width d), the values are stored at index-1 (indices > d fail).
int parse_libsvm_line(std::string_view line, const Where& at, int64_t& max_index, double* row, int64_t d,
                      LabelCoder* coder, std::vector<int32_t>* cols, std::vector<double>* vals, int64_t* nnz) {
  const size_t hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  size_t pos = 0;
  // The label field; a line that starts with a feature has an empty one (unlabeled when ""
  // is a marker).
  size_t after = pos;
  const std::string_view first = next_token(line, after);
  const bool has_label = first.find(':') == std::string_view::npos;
  if (has_label) pos = after;
  const int label = coder == nullptr ? -1 : coder->code(has_label ? first : std::string_view(), at);
  int64_t prev = 0;
  for (;;) {
    const std::string_view tok = next_token(line, pos);
    if (tok.empty()) break;
    const size_t colon = tok.find(':');
    if (colon == std::string_view::npos)
      fail(at.str() + ": expected 'index:value', found '" + shown(tok) + "'");
    const std::string_view key = tok.substr(0, colon);
    if (key == "qid") continue;  // SVMlight query ids carry no feature
    int64_t idx = 0;
    const auto res = std::from_chars(key.data(), key.data() + key.size(), idx);
    if (key.empty() || res.ec != std::errc() || res.ptr != key.data() + key.size() || idx < 1)
      fail(at.str() + ": feature index '" + shown(key) + "' is not an integer >= 1");
    if (idx <= prev)
      fail(at.str() + ": feature indices must be strictly increasing (" + std::to_string(idx) +
           " after " + std::to_string(prev) + ")");
    prev = idx;
    const double v = parse_value(tok.substr(colon + 1), at, "feature", idx);
    if (row != nullptr) {
      if (idx > d) fail(at.str() + ": feature index " + std::to_string(idx) + " exceeds " +
                        std::to_string(d) + " (file changed while reading?)");
      row[idx - 1] = v;
    }
    if (nnz != nullptr && v != 0.0) ++*nnz;
    if (cols != nullptr && v != 0.0) {
      if (idx > d) fail(at.str() + ": feature index " + std::to_string(idx) + " exceeds " +
                        std::to_string(d) + " (file changed while reading?)");
      cols->push_back(static_cast<int32_t>(idx - 1));
      vals->push_back(v);
    }
  }
  max_index = std::max(max_index, prev);
  return label;
}

namespace {

/// What the first parse of a rank's lines found (gathered over the ranks).
struct LibsvmFacts {
  int64_t max_index = 0;  ///< largest feature index
  int64_t max_index_line = 0;
  int64_t nnz = 0;        ///< non-zero values
};

/// The file's facts from every rank's: the largest index (in rank order = file order: the
/// first line wins ties) with its line, and the non-zero values summed. Collective.
LibsvmFacts agree_facts(const LibsvmFacts& mine, MPI_Comm comm) {
  std::vector<LibsvmFacts> all(static_cast<size_t>(comm_size(comm)));
  MPI_Allgather(&mine, static_cast<int>(sizeof(LibsvmFacts)), MPI_BYTE, all.data(),
                static_cast<int>(sizeof(LibsvmFacts)), MPI_BYTE, comm);
  LibsvmFacts file;
  for (const LibsvmFacts& f : all) {
    if (f.max_index > file.max_index) {
      file.max_index = f.max_index;
      file.max_index_line = f.max_index_line;
    }
    file.nnz += f.nnz;
  }
  return file;
}

/// The owned lines parsed a second time into CSR rows of width d (`mine_nnz` of them on this
/// rank, `file` the whole file's facts) and placed with their labels. The text is released.
/// Collective. \throws ssdr::Error (collectively) when d passes 2³¹ − 1, the values would not
/// fit memory, or a line changed since the first parse.
Dataset place_libsvm_sparse(OwnedText& text, const std::vector<int>& labels, const LabelCoder& coder,
                            const std::vector<int64_t>& row_offset, int64_t d, int64_t mine_nnz,
                            const LibsvmFacts& file, const std::string& path, MPI_Comm comm) {
  const int64_t n = row_offset.back(), m = static_cast<int64_t>(labels.size());
  SSDR_CHECK_COLLECTIVE(comm, d < (int64_t{1} << 31),
                        path + ":" + std::to_string(file.max_index_line) + ": feature index " +
                            std::to_string(file.max_index) +
                            " is past 2^31 - 1, the largest column sparse data can have");
  const int per_node = ranks_on_host(comm);
  std::vector<int64_t> lengths;
  std::vector<int32_t> cols;
  std::vector<double> vals;
  std::string message;
  const bool ok = attempt(
      [&] {
        // 16 bytes per value (a 12-byte stored value and its share of the placement buffers).
        require_dense_fits(std::max<int64_t>(file.nnz, 1), 2, comm_size(comm), per_node,
                           path + ": " + std::to_string(file.nnz) + " non-zero values");
        lengths.reserve(static_cast<size_t>(m));
        cols.reserve(static_cast<size_t>(mine_nnz));
        vals.reserve(static_cast<size_t>(mine_nnz));
        int64_t unused = 0;
        for_each_line(text, [&](std::string_view line, int64_t no) {
          if (is_blank(line)) return true;
          const size_t before = cols.size();
          parse_libsvm_line(line, Where{&path, no}, unused, nullptr, d, nullptr, &cols, &vals);
          lengths.push_back(static_cast<int64_t>(cols.size() - before));
          return true;
        });
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  text = OwnedText();
  Dataset ds = place_sparse_rows(lengths, cols, vals, row_offset, n, d, comm);
  ds.source = path;
  ds.labels = place_labels(labels, row_offset, ds.X, comm);
  set_class_names(ds, coder);
  return ds;
}

}  // namespace

Dataset read_libsvm_ranges(const std::string& path, MPI_Comm comm, bool labeled, Sparsity sparse,
                           const LabelOptions& label) {
  const int size = comm_size(comm);
  OwnedText text = read_owned_text(path, comm, false);
  const FirstLook look = first_look(text);
  ParsedRows parsed;
  parsed.row_offset = row_offsets(allgather_counts(look.rows, comm));
  const int64_t n = parsed.row_offset.back(), m = look.rows;
  SSDR_CHECK_COLLECTIVE(comm, n > 0, path + ": empty file (no samples)");

  // Labels, and the validation of every line (d needs every rank's largest index first).
  LabelCoder coder(label);
  LibsvmFacts mine;
  parsed.labels.resize(static_cast<size_t>(m));
  std::string message;
  bool ok = attempt(
      [&] {
        int64_t i = 0;
        for_each_line(text, [&](std::string_view line, int64_t no) {
          if (is_blank(line)) return true;
          const int64_t before = mine.max_index;
          parsed.labels[static_cast<size_t>(i++)] =
              parse_libsvm_line(line, Where{&path, no}, mine.max_index, nullptr, 0, &coder, nullptr, nullptr, &mine.nnz);
          if (mine.max_index > before) mine.max_index_line = no;
          return true;
        });
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  // The classes, agreed over the ranks; this rank's codes become classes before the rows move.
  if (labeled) coder.finish(comm, path);
  coder.to_global(parsed.labels);
  const LibsvmFacts file = agree_facts(mine, comm);
  const int64_t d = file.max_index;
  SSDR_CHECK_COLLECTIVE(comm, d >= 1, path + ": no feature values in any line");
  const double dense_bytes = 8.0 * static_cast<double>(n) * static_cast<double>(d);
  const bool keep_sparse =
      sparse == Sparsity::sparse ||
      (sparse == Sparsity::automatic && dense_bytes > kSparseDenseBytes &&
       static_cast<double>(file.nnz) <= kSparseMaxDensity * static_cast<double>(n) * static_cast<double>(d));
  if (keep_sparse)
    return place_libsvm_sparse(text, parsed.labels, coder, parsed.row_offset, d, mine.nnz, file, path, comm);

  const int per_node = ranks_on_host(comm);
  parsed.d = d;
  ok = attempt(
      [&] {
        require_dense_fits(n, d, size, per_node,
                           path + ":" + std::to_string(file.max_index_line) + ": feature index " +
                               std::to_string(file.max_index));
        parsed.values.assign(static_cast<size_t>(m * d), 0.0);
        int64_t i = 0, unused = 0;
        for_each_line(text, [&](std::string_view line, int64_t no) {
          if (is_blank(line)) return true;
          parse_libsvm_line(line, Where{&path, no}, unused, parsed.values.data() + i * d, d, nullptr);
          ++i;
          return true;
        });
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  text = OwnedText();  // the text is parsed; free it before the rows are placed
  return place_dense_rows(parsed, coder, labeled, path, comm);
}

}  // namespace ssdr::io::detail
