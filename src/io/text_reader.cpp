// Text formats (CSV, LIBSVM/SVMlight), two ways:
// - a plain file is read in parallel (read_text_ranges): each rank reads its own byte range
//   with MPI-IO, aligned to line starts, parses its lines, and the rows move once to their
//   block owners;
// - a gzip stream cannot be split (read_text_streamed): rank 0 streams it twice through zlib.
//   Pass 1 validates every line and finds n, d and the largest label; pass 2 parses chunks of
//   rows and sends each piece to the rank that owns it.
// Every error is raised collectively so that all ranks throw the same one-line message; with
// byte ranges the lowest failing rank's message wins, which is the first bad line of the file.
#include <memory>

#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::io::detail {

// ---------------------------------------------------------------------------------------
// Text formats
// ---------------------------------------------------------------------------------------

Dataset read_text_streamed(const std::string& path, Format format, MPI_Comm comm, bool labeled,
                           const LabelOptions& label) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool csv = format == Format::csv;

  // Pass 1 (rank 0): validate every line; n, d, the largest label and a fingerprint of the
  // labels (pass 2 parses them again and sends each with its row: no rank holds all n).
  int64_t dims[3] = {0, 0, -1};  // n, d, the largest label
  uint64_t label_print = 0;
  LabelCoder coder(label);
  CsvLayout layout;
  std::string message, header_note;
  bool ok = true;
  const int per_node = ranks_on_host(comm);
  if (rank == 0) {
    ok = attempt(
        [&] {
          require_regular(path);
          LineReader in(path, csv);
          std::string_view line;
          int64_t max_index = 0, max_index_line = 0;
          bool first = true;
          int code = 0;
          int64_t count = 0;
          while (in.next(line)) {
            if (is_blank(line)) continue;
            const Where at{&path, in.first_line()};
            if (csv) {
              if (first) {
                first = false;
                layout = csv_layout(line, at, label, labeled, &header_note);
                // R's or pandas' row names are skipped here (not kept as ids); a given
                // --id-column cannot be honoured.
                if (layout.id_column >= 0 && !layout.row_names)
                  fail("--id-column: '" + path + "' is gzip-compressed and streams through rank 0 without its ids; "
                       "decompress it (plain CSV is read in parallel, ids included)");
                if (layout.header_line > 0) continue;
              }
              code = parse_csv_line(line, layout, at, nullptr, coder);
            } else {
              const int64_t before = max_index;
              code = parse_libsvm_line(line, at, max_index, nullptr, 0, &coder);
              if (max_index > before) max_index_line = at.line;
            }
            ++count;
            label_print = label_print * 1099511628211ull + static_cast<uint64_t>(static_cast<int64_t>(code)) + 1;
          }
          if (count == 0 && layout.header_line > 0)
            fail(path + ": a header line alone (line " + std::to_string(layout.header_line) + "), no samples");
          if (count == 0) fail(path + ": empty file (no samples)");
          dims[0] = count;
          dims[1] = csv ? layout.values() : max_index;
          if (dims[1] < 1) fail(path + ": no feature values in any line");
          require_dense_fits(dims[0], dims[1], size, per_node,
                             csv ? path : path + ":" + std::to_string(max_index_line) + ": feature index " +
                                              std::to_string(max_index));
        },
        message);
  }
  if (rank == 0 && !header_note.empty()) say(header_note);  // before a failure: it may explain it
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  MPI_Bcast(dims, 3, MPI_INT64_T, 0, comm);
  const int64_t n = dims[0], d = dims[1];
  if (labeled) coder.finish(comm, path);  // rank 0 holds every label; the others none

  Dataset ds;
  ds.source = path;
  set_class_names(ds, coder);  // no classes without labels (the coder coded nothing)
  ds.X = make_dist(comm, n, d);
  ds.labels.assign(static_cast<size_t>(ds.X.n_local), 0);

  // Pass 2: chunks of rows parsed on rank 0 and sent to their owners.
  const int64_t chunk_rows =
      std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(d, 1), 1, 4096);
  std::vector<double> chunk;
  std::vector<int> chunk_labels;
  uint64_t again = 0;  // pass 2's fingerprint of the labels
  std::unique_ptr<LineReader> in;
  if (rank == 0) {
    ok = attempt([&] { in = std::make_unique<LineReader>(path, csv); }, message);
  }
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  const int64_t my_start = ds.X.row_start, my_end = ds.X.row_start + ds.X.n_local;
  for (int64_t a = 0; a < n; a += chunk_rows) {
    const int64_t b = std::min(n, a + chunk_rows);
    if (rank == 0) {
      ok = attempt(
          [&] {
            chunk.assign(static_cast<size_t>((b - a) * d), 0.0);
            chunk_labels.assign(static_cast<size_t>(b - a), 0);
            std::string_view line;
            int64_t max_index = 0;
            for (int64_t i = a; i < b;) {
              if (!in->next(line)) fail(path + ": file ended early (changed while reading?)");
              if (is_blank(line) || in->first_line() == layout.header_line) continue;
              const Where at{&path, in->first_line()};
              double* row = chunk.data() + (i - a) * d;
              const int code = csv ? parse_csv_line(line, layout, at, row, coder)
                                   : parse_libsvm_line(line, at, max_index, row, d, &coder);
              again = again * 1099511628211ull + static_cast<uint64_t>(static_cast<int64_t>(code)) + 1;
              if (i + 1 == n && again != label_print) fail(at.str() + ": file changed while reading");
              chunk_labels[static_cast<size_t>(i - a)] = coder.global(code);
              ++i;
            }
          },
          message);
    }
    SSDR_CHECK_COLLECTIVE(comm, ok, message);
    if (rank == 0) {
      for (int r = 0; r < size; ++r) {
        int64_t s = 0, c = 0;
        owner_range(n, size, r, s, c);
        const int64_t lo = std::max(a, s), hi = std::min(b, s + c);
        if (lo >= hi) continue;
        const double* src = chunk.data() + (lo - a) * d;
        const int* lab = chunk_labels.data() + (lo - a);
        if (r == 0) {
          std::copy(src, src + (hi - lo) * d, ds.X.row(lo - s));
          std::copy(lab, lab + (hi - lo), ds.labels.data() + (lo - s));
        } else {
          MPI_Send(src, static_cast<int>((hi - lo) * d), MPI_DOUBLE, r, 0, comm);
          MPI_Send(lab, static_cast<int>(hi - lo), MPI_INT, r, 1, comm);
        }
      }
    } else {
      const int64_t lo = std::max(a, my_start), hi = std::min(b, my_end);
      if (lo < hi) {
        MPI_Recv(ds.X.row(lo - my_start), static_cast<int>((hi - lo) * d), MPI_DOUBLE, 0, 0, comm,
                 MPI_STATUS_IGNORE);
        MPI_Recv(ds.labels.data() + (lo - my_start), static_cast<int>(hi - lo), MPI_INT, 0, 1, comm,
                 MPI_STATUS_IGNORE);
      }
    }
  }
  if (!labeled) ds.labels.clear();
  return ds;
}

}  // namespace ssdr::io::detail
