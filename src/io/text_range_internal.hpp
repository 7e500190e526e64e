#pragma once
/// \file text_range_internal.hpp
/// Private to src/io (not installed): the byte-range machinery of the plain-text readers
/// (text_range_reader.cpp), shared by the CSV range reader (read_csv_ranges, csv_reader.cpp)
/// and the LIBSVM one (read_libsvm_ranges, libsvm_reader.cpp).
///
/// Rank r reads bytes [S·r/P, S·(r+1)/P) of the S-byte file with MPI-IO and owns the lines
/// that start there; line numbers come from an exclusive scan of the ranks' newline counts,
/// row offsets from the ranks' row counts in rank order, and the parsed rows move once to
/// the block layout of make_dist.
#include <string>
#include <string_view>
#include <vector>

#include "reader_internal.hpp"

namespace ssdr::io::detail {

/// This rank's lines: text[0, size) holds file bytes [base, base + size); the owned lines are
/// text[begin, end). `first_line` is the 1-based line number of text[begin].
struct OwnedText {
  std::vector<char> text;
  int64_t base = 0;
  size_t begin = 0, end = 0;
  int64_t first_line = 1;
  /// Records may span lines: the file is CSV/TSV and has a double quote somewhere.
  bool quoted = false;
};

/// Reads this rank's byte range of a file of `size` bytes and aligns it to line starts. With
/// `quoted` (CSV/TSV), to record starts: a line break inside double quotes is not one, and each
/// rank's quote state at its range start comes from an exclusive scan of the ranks' quote
/// counts (exact for RFC 4180 text, where quotes inside a quoted field come in pairs; a stray
/// quote fails at its own record on the rank that parses it, the lowest such rank, whose
/// message wins). Collective (the scans). A local failure sets `ok` false and `message`.
OwnedText read_range(MPI_File fh, int64_t size, const std::string& path, MPI_Comm comm, std::string& message,
                     bool& ok, bool quoted = false);

/// Opens the plain file `path` with MPI-IO and reads this rank's part of it (read_range,
/// `quoted` for CSV/TSV). Collective. \throws ssdr::Error (collectively) when the file is
/// empty, cannot be opened or cannot be read.
OwnedText read_owned_text(const std::string& path, MPI_Comm comm, bool quoted);

/// Calls f(record, line_no) for every owned record (line, or with t.quoted a CSV record whose
/// quoted fields may span lines), without its "\n" / "\r\n" (a UTF-8 byte order mark
/// removed from line 1); line_no is the record's first line. Stops early when f returns false.
template <class F>
void for_each_line(const OwnedText& t, F&& f) {
  const bool quoted = t.quoted;
  const std::string_view text(t.text.data(), t.text.size());
  size_t pos = t.begin;
  int64_t line_no = t.first_line;
  while (pos < t.end) {
    size_t stop = t.end;
    if (quoted) {
      int parity = 0;
      size_t nl = 0;
      if (ends_record(text, pos, t.end, parity, nl)) stop = nl;
    } else {
      const void* nl = std::memchr(text.data() + pos, '\n', t.end - pos);
      if (nl != nullptr) stop = static_cast<size_t>(static_cast<const char*>(nl) - text.data());
    }
    std::string_view line = text.substr(pos, stop - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    if (!f(line, line_no)) return;
    line_no += 1 + (quoted ? std::count(line.begin(), line.end(), '\n') : 0);
    pos = stop + 1;
  }
}

/// The first look at this rank's records: how many are not blank, and the first of them.
struct FirstLook {
  int64_t rows = 0;              ///< non-blank records
  int64_t first_line = 0;        ///< the first one's line number (0: none)
  std::string_view first_text;   ///< the first one (a view into the OwnedText)
};

/// Counts this rank's non-blank records and finds the first. Local.
FirstLook first_look(const OwnedText& t);

/// Every rank's `mine`, in rank order. Collective.
std::vector<int64_t> allgather_counts(int64_t mine, MPI_Comm comm);

/// The rows of every rank in file order: size + 1 entries, rank r's rows are
/// [offsets[r], offsets[r + 1]) of the file (exclusive prefix sums of `rows`). Local.
std::vector<int64_t> row_offsets(const std::vector<int64_t>& rows);

/// This rank's labels (rows [row_offset[rank], + mine.size()) of the file) moved to the rows
/// of X's layout (the rows' block owner): n_local labels, nothing of size n. Collective.
std::vector<int> place_labels(const std::vector<int>& mine, const std::vector<int64_t>& row_offset, const DistMatrix& X,
                              MPI_Comm comm);

/// What a dense range reader parsed on this rank, rows [row_offset[rank], row_offset[rank + 1])
/// of the file, before they move to their block owners.
struct ParsedRows {
  std::vector<int64_t> row_offset;  ///< row_offsets of every rank's rows (size + 1 entries)
  int64_t d = 0;                    ///< values per row
  std::vector<int> labels;          ///< the rows' class codes (after LabelCoder::to_global)
  std::vector<double> values;       ///< the rows, m×d row-major
  bool has_ids = false;             ///< CSV: the file has an id column (on every rank)
  std::vector<std::string> ids;     ///< CSV: the rows' ids
};

/// The dense data set of the parsed rows: X (n×d, n = row_offset.back()) in the block
/// layout of make_dist, its labels (cleared unless `labeled`), its ids with has_ids, the
/// classes from `coder`; `path` is its source. Rows move in rows of d doubles (a contiguous
/// datatype), so no count exceeds an int for any n·d that fits memory. Collective.
Dataset place_dense_rows(const ParsedRows& parsed, const LabelCoder& coder, bool labeled, const std::string& path,
                         MPI_Comm comm);

/// Moves the parsed CSR rows (global rows [row_offset[rank], +lengths.size()), their value
/// counts in `lengths`) to their owners in the block layout of make_dist(n): one
/// Alltoallv of the row lengths, one of the columns and one of the values, in file order.
/// The inputs are released. Collective. \throws ssdr::Error (collectively) when a rank
/// would send or receive 2³¹ or more values in one message.
Dataset place_sparse_rows(std::vector<int64_t>& lengths, std::vector<int32_t>& cols, std::vector<double>& vals,
                          const std::vector<int64_t>& row_offset, int64_t n, int64_t d, MPI_Comm comm);

/// A plain CSV/TSV file by byte ranges (csv_reader.cpp): the layout (delimiter, header,
/// label and id columns) from the file's first non-blank record, every record parsed by the
/// rank that owns it. `labeled` false: no label column, no labels. Collective over `comm`.
Dataset read_csv_ranges(const std::string& path, MPI_Comm comm, bool labeled, const LabelOptions& label);

/// A plain LIBSVM file by byte ranges (libsvm_reader.cpp): d is the largest feature index
/// of any rank; the rows are kept in CSR form as `sparse` says (Sparsity::automatic: when
/// dense rows would be large and few values are non-zero). Collective over `comm`.
Dataset read_libsvm_ranges(const std::string& path, MPI_Comm comm, bool labeled, Sparsity sparse,
                           const LabelOptions& label);

}  // namespace ssdr::io::detail
