// Plain (uncompressed) CSV and LIBSVM files read in parallel: rank r reads bytes
// [S·r/P, S·(r+1)/P) of the S-byte file with MPI-IO and owns the lines that start there (a
// line starts at byte 0 or after a '\n'); it reads on past its range to finish its last
// line. Line numbers come from an exclusive scan of the ranks' newline counts, row offsets
// from an exclusive scan of their row counts, and the parsed rows move once (Alltoallv) to
// the block layout of make_dist. No rank reads more than its share of the file plus one
// line, or holds more than its rows twice (parsed, then placed).
// This file is that machinery (text_range_internal.hpp); each format's range reader parses
// its own records: read_csv_ranges (csv_reader.cpp), read_libsvm_ranges (libsvm_reader.cpp).
#include <memory>

#include "text_range_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::io::detail {

namespace {

/// Reads bytes [off, off + len) into buf (independent reads of at most 1 GiB).
void read_bytes(MPI_File fh, int64_t off, char* buf, int64_t len, const std::string& path) {
  while (len > 0) {
    const int chunk = static_cast<int>(std::min<int64_t>(len, int64_t{1} << 30));
    MPI_Status st;
    const int rc = MPI_File_read_at(fh, static_cast<MPI_Offset>(off), buf, chunk, MPI_CHAR, &st);
    if (rc != MPI_SUCCESS) fail("cannot read '" + path + "': " + mpi_error_text(rc));
    int got = 0;
    MPI_Get_count(&st, MPI_CHAR, &got);
    if (got <= 0) fail(path + ": file ended early (changed while reading?)");
    off += got;
    buf += got;
    len -= got;
  }
}

/// This rank's row ids moved to the rows of X's layout, as place_labels moves the labels: in
/// fixed-width records of the longest id on any rank (at most kMaxIdBytes). Collective.
std::vector<std::string> place_ids(const std::vector<std::string>& mine, const std::vector<int64_t>& row_offset,
                                   const DistMatrix& X, MPI_Comm comm) {
  int64_t width = 1;
  for (const std::string& s : mine) width = std::max<int64_t>(width, static_cast<int64_t>(s.size()));
  MPI_Allreduce(MPI_IN_PLACE, &width, 1, MPI_INT64_T, MPI_MAX, comm);
  std::vector<char> from(mine.size() * static_cast<size_t>(width), '\0');
  for (size_t i = 0; i < mine.size(); ++i) std::copy(mine[i].begin(), mine[i].end(), from.begin() + static_cast<int64_t>(i) * width);
  std::vector<char> to(static_cast<size_t>(X.n_local * width), '\0');
  redistribute_rows(from.data(), row_offset[static_cast<size_t>(comm_rank(comm))], static_cast<int64_t>(mine.size()),
                    to.data(), X.row_start, X.n_local, static_cast<size_t>(width), comm);
  std::vector<std::string> ids(static_cast<size_t>(X.n_local));
  for (int64_t i = 0; i < X.n_local; ++i) {
    const char* r = to.data() + i * width;
    ids[static_cast<size_t>(i)].assign(r, strnlen(r, static_cast<size_t>(width)));
  }
  return ids;
}

/// The counts and displacements, in rows, of the exchange that moves this rank's parsed rows
/// (file rows [row_offset[rank], + m)) to their owners in X's block layout: to rank r my
/// rows inside r's block, from r its parsed rows inside mine.
struct RowExchange {
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
};

/// The RowExchange of this rank's `m` parsed rows into the layout of X (make_dist's blocks
/// of X.n_global rows). Local.
RowExchange row_exchange(const std::vector<int64_t>& row_offset, int64_t m, const DistMatrix& X, MPI_Comm comm) {
  const int rank = comm_rank(comm), size = comm_size(comm);
  const size_t ranks = static_cast<size_t>(size);
  RowExchange x{std::vector<int>(ranks, 0), std::vector<int>(ranks, 0), std::vector<int>(ranks, 0),
                std::vector<int>(ranks, 0)};
  const int64_t my_lo = row_offset[static_cast<size_t>(rank)], my_hi = my_lo + m;
  for (int r = 0; r < size; ++r) {
    int64_t s = 0, c = 0;
    owner_range(X.n_global, size, r, s, c);
    // What I send to r: my parsed rows inside r's block.
    const int64_t lo = std::max(my_lo, s), hi = std::min(my_hi, s + c);
    if (lo < hi) {
      x.send_counts[static_cast<size_t>(r)] = static_cast<int>(hi - lo);
      x.send_displs[static_cast<size_t>(r)] = static_cast<int>(lo - my_lo);
    }
    // What r sends me: its parsed rows inside my block.
    const int64_t r_lo = row_offset[static_cast<size_t>(r)], r_hi = row_offset[static_cast<size_t>(r) + 1];
    const int64_t a = std::max(r_lo, X.row_start), b = std::min(r_hi, X.row_start + X.n_local);
    if (a < b) {
      x.recv_counts[static_cast<size_t>(r)] = static_cast<int>(b - a);
      x.recv_displs[static_cast<size_t>(r)] = static_cast<int>(a - X.row_start);
    }
  }
  return x;
}

}  // namespace

OwnedText read_range(MPI_File fh, int64_t size, const std::string& path, MPI_Comm comm, std::string& message,
                     bool& ok, bool quoted) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  OwnedText t;
  // Split in 128-bit-safe arithmetic: size·rank fits int64 for any real file and rank count.
  const int64_t lo = static_cast<int64_t>((static_cast<__int128>(size) * rank) / nranks);
  const int64_t hi = static_cast<int64_t>((static_cast<__int128>(size) * (rank + 1)) / nranks);
  int64_t counts[2] = {0, 0};  // '\n' and '"' bytes in [lo, hi)
  t.base = lo > 0 ? lo - 1 : 0;  // one byte before the range tells whether lo starts a line
  const size_t off_lo = static_cast<size_t>(lo - t.base), n_hi = static_cast<size_t>(hi - t.base);
  ok = attempt(
      [&] {
        t.text.resize(static_cast<size_t>(hi - t.base));
        if (hi > t.base) read_bytes(fh, t.base, t.text.data(), hi - t.base, path);
        const char* p = t.text.data();
        counts[0] = std::count(p + off_lo, p + n_hi, '\n');
        if (quoted) counts[1] = std::count(p + off_lo, p + n_hi, '"');
      },
      message);
  int64_t before[2] = {0, 0};
  MPI_Exscan(counts, before, 2, MPI_INT64_T, MPI_SUM, comm);
  if (rank == 0) before[0] = before[1] = 0;
  int64_t quotes = counts[1];
  MPI_Allreduce(MPI_IN_PLACE, &quotes, 1, MPI_INT64_T, MPI_SUM, comm);
  t.quoted = quotes > 0;  // no quote anywhere: records are lines, found as before
  if (ok)
    ok = attempt(
        [&] {
          const std::string_view text(t.text.data(), t.text.size());
          int parity = static_cast<int>(before[1] & 1);  // inside quotes at lo
          // The first owned record starts at lo (byte lo−1 a record-ending '\n') or after the
          // first record-ending '\n' in the range.
          size_t nl = 0;
          if (lo == 0 || (text[0] == '\n' && parity == 0)) {
            t.begin = off_lo;
          } else {
            t.begin = ends_record(text, off_lo, n_hi, parity, nl) ? nl + 1 : n_hi;
          }
          if (t.begin >= n_hi) {  // no record starts in this range
            t.begin = t.end = n_hi;
            return;
          }
          // The last owned record ends at the first record-ending '\n' at or after hi − 1 (or
          // at the end of file): the quote parity at hi from the scan and this range's count
          // (a '\n' at hi − 1 leaves it as it was before that byte), then read on.
          parity = static_cast<int>((before[1] + counts[1]) & 1);
          if ((text[n_hi - 1] == '\n' && parity == 0) || hi == size) {
            t.end = n_hi;
            return;
          }
          int64_t pos = hi;
          for (;;) {
            const int64_t len = std::min<int64_t>(size - pos, int64_t{1} << 20);
            const size_t old = t.text.size();
            t.text.resize(old + static_cast<size_t>(len));
            read_bytes(fh, pos, t.text.data() + old, len, path);
            pos += len;
            const std::string_view grown(t.text.data(), t.text.size());
            if (ends_record(grown, old, grown.size(), parity, nl)) {
              t.end = nl + 1;
              break;
            }
            if (parity != 0 && t.text.size() - n_hi > kMaxQuotedRecordBytes)
              fail(path + ": a quoted field that starts before byte " + std::to_string(hi) + " runs on for more than " +
                   std::to_string(kMaxQuotedRecordBytes >> 20) +
                   " MiB; expected its closing double quote (a stray or unclosed quote?)");
            if (pos >= size) {
              t.end = t.text.size();
              break;
            }
          }
        },
        message);
  // Line numbers: the newlines before lo, and those in [lo, begin) (the tail of a record that
  // a lower rank owns).
  t.first_line = 1 + before[0] + std::count(t.text.data() + std::min(off_lo, t.begin), t.text.data() + t.begin, '\n');
  return t;
}

OwnedText read_owned_text(const std::string& path, MPI_Comm comm, bool quoted) {
  int64_t file_bytes = 0;
  if (comm_rank(comm) == 0) file_bytes = file_size(path);
  MPI_Bcast(&file_bytes, 1, MPI_INT64_T, 0, comm);
  if (file_bytes == 0) SSDR_CHECK_COLLECTIVE(comm, false, path + ": empty file (no samples)");
  MpiFile fh;
  const int rc = fh.open(comm, path);
  SSDR_CHECK_COLLECTIVE(comm, rc == MPI_SUCCESS, "cannot open '" + path + "': " + mpi_error_text(rc));
  std::string message;
  bool ok = true;
  OwnedText text = read_range(fh.get(), file_bytes, path, comm, message, ok, quoted);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  return text;
}

FirstLook first_look(const OwnedText& t) {
  FirstLook look;
  for_each_line(t, [&](std::string_view line, int64_t no) {
    if (is_blank(line)) return true;
    if (look.rows == 0) {
      look.first_line = no;
      look.first_text = line;
    }
    ++look.rows;
    return true;
  });
  return look;
}

std::vector<int64_t> allgather_counts(int64_t mine, MPI_Comm comm) {
  std::vector<int64_t> all(static_cast<size_t>(comm_size(comm)));
  MPI_Allgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, comm);
  return all;
}

std::vector<int64_t> row_offsets(const std::vector<int64_t>& rows) {
  std::vector<int64_t> row_offset(rows.size() + 1, 0);
  for (size_t r = 0; r < rows.size(); ++r) row_offset[r + 1] = row_offset[r] + rows[r];
  return row_offset;
}

std::vector<int> place_labels(const std::vector<int>& mine, const std::vector<int64_t>& row_offset, const DistMatrix& X,
                              MPI_Comm comm) {
  return redistribute_rows(mine, row_offset[static_cast<size_t>(comm_rank(comm))], X.row_start, X.n_local, comm);
}

Dataset place_dense_rows(const ParsedRows& parsed, const LabelCoder& coder, bool labeled, const std::string& path,
                         MPI_Comm comm) {
  const std::vector<int64_t>& row_offset = parsed.row_offset;
  const int64_t n = row_offset.back(), d = parsed.d, m = static_cast<int64_t>(parsed.labels.size());
  // The labels of X's local rows (moved with the rows to their block owner).
  Dataset ds;
  ds.source = path;
  set_class_names(ds, coder);  // no classes without labels (the coder coded nothing)
  ds.X = make_dist(comm, n, d);
  ds.labels = place_labels(parsed.labels, row_offset, ds.X, comm);
  if (!labeled) ds.labels.clear();
  if (parsed.has_ids) ds.ids = place_ids(parsed.ids, row_offset, ds.X, comm);

  // Rows [row_offset[rank], +m) to their owners in the block layout: counts in rows of d
  // doubles (a contiguous datatype), so no count exceeds an int for any n·d that fits memory.
  MPI_Datatype row_type = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(static_cast<int>(d), MPI_DOUBLE, &row_type);
  MPI_Type_commit(&row_type);
  const RowExchange x = row_exchange(row_offset, m, ds.X, comm);
  MPI_Alltoallv(parsed.values.data(), x.send_counts.data(), x.send_displs.data(), row_type, ds.X.v.data(),
                x.recv_counts.data(), x.recv_displs.data(), row_type, comm);
  MPI_Type_free(&row_type);
  return ds;
}

Dataset place_sparse_rows(std::vector<int64_t>& lengths, std::vector<int32_t>& cols, std::vector<double>& vals,
                          const std::vector<int64_t>& row_offset, int64_t n, int64_t d, MPI_Comm comm) {
  const int size = comm_size(comm);
  Dataset ds;
  ds.sparse = true;
  ds.X = make_dist(comm, n, 0);  // shape and layout only
  ds.X.cols = d;
  SparseRows& S = ds.Xs;
  S.comm = comm;
  S.n_global = n;
  S.row_start = ds.X.row_start;
  S.n_local = ds.X.n_local;
  S.cols = d;
  const int64_t m = static_cast<int64_t>(lengths.size());
  // Rows: what I send to r are my parsed rows inside r's block; r sends me its rows in mine.
  const RowExchange x = row_exchange(row_offset, m, ds.X, comm);
  const std::vector<int>& sc = x.send_counts;
  const std::vector<int>& sd = x.send_displs;
  const std::vector<int>& rc = x.recv_counts;
  const std::vector<int>& rd = x.recv_displs;
  std::vector<int64_t> my_lengths(static_cast<size_t>(S.n_local));
  MPI_Alltoallv(lengths.data(), sc.data(), sd.data(), MPI_INT64_T, my_lengths.data(), rc.data(), rd.data(), MPI_INT64_T,
                comm);
  // The same exchange in values: counts are sums of row lengths.
  std::vector<int64_t> start(static_cast<size_t>(m) + 1, 0);
  for (int64_t i = 0; i < m; ++i) start[static_cast<size_t>(i) + 1] = start[static_cast<size_t>(i)] + lengths[static_cast<size_t>(i)];
  S.row_ptr.assign(static_cast<size_t>(S.n_local) + 1, 0);
  for (int64_t i = 0; i < S.n_local; ++i) S.row_ptr[static_cast<size_t>(i) + 1] = S.row_ptr[static_cast<size_t>(i)] + my_lengths[static_cast<size_t>(i)];
  bool fits = true;
  std::vector<int> vsc(static_cast<size_t>(size), 0), vsd(static_cast<size_t>(size), 0), vrc(static_cast<size_t>(size), 0),
      vrd(static_cast<size_t>(size), 0);
  for (int r = 0; r < size; ++r) {
    const size_t q = static_cast<size_t>(r);
    const int64_t s_lo = start[static_cast<size_t>(sd[q])], s_hi = start[static_cast<size_t>(sd[q] + sc[q])];
    const int64_t r_lo = S.row_ptr[static_cast<size_t>(rd[q])], r_hi = S.row_ptr[static_cast<size_t>(rd[q] + rc[q])];
    fits = fits && s_hi < (int64_t{1} << 31) && r_hi < (int64_t{1} << 31);
    vsc[q] = static_cast<int>(s_hi - s_lo);
    vsd[q] = static_cast<int>(s_lo);
    vrc[q] = static_cast<int>(r_hi - r_lo);
    vrd[q] = static_cast<int>(r_lo);
  }
  SSDR_CHECK_COLLECTIVE(comm, fits, "sparse data: a rank holds 2^31 or more non-zero values; use more ranks");
  S.col.resize(static_cast<size_t>(S.row_ptr.back()));
  MPI_Alltoallv(cols.data(), vsc.data(), vsd.data(), MPI_INT32_T, S.col.data(), vrc.data(), vrd.data(), MPI_INT32_T, comm);
  std::vector<int32_t>().swap(cols);
  S.val.resize(static_cast<size_t>(S.row_ptr.back()));
  MPI_Alltoallv(vals.data(), vsc.data(), vsd.data(), MPI_DOUBLE, S.val.data(), vrc.data(), vrd.data(), MPI_DOUBLE, comm);
  std::vector<double>().swap(vals);
  std::vector<int64_t>().swap(lengths);
  return ds;
}

Dataset read_text(const std::string& path, Format format, MPI_Comm comm, bool labeled, Sparsity sparse,
                  const LabelOptions& label) {
  // A regular file (never block on a FIFO) that is not gzip-compressed goes by byte ranges.
  int gz = 0;
  attempt_on_root(comm, [&] {
    require_data_file(path);
    gz = is_gzip(path) ? 1 : 0;
  });
  MPI_Bcast(&gz, 1, MPI_INT, 0, comm);
  SSDR_CHECK_COLLECTIVE(comm, gz == 0 || sparse != Sparsity::sparse,
                        "--sparse yes: '" + path + "' is gzip-compressed and is read through rank 0 densified; "
                        "decompress it (plain files are read sparse, by byte ranges)");
  return gz != 0 ? read_text_streamed(path, format, comm, labeled, label)
                 : read_text_ranges(path, format, comm, labeled, sparse, label);
}

Dataset read_text_ranges(const std::string& path, Format format, MPI_Comm comm, bool labeled, Sparsity sparse,
                         const LabelOptions& label) {
  return format == Format::csv ? read_csv_ranges(path, comm, labeled, label)
                               : read_libsvm_ranges(path, comm, labeled, sparse, label);
}

}  // namespace ssdr::io::detail

namespace ssdr::io {

LineCodes read_line_codes(const std::string& path, const std::string& expected,
                          const std::function<char(std::string_view line)>& code, MPI_Comm comm) {
  using namespace detail;
  int64_t file_bytes = 0;
  attempt_on_root(comm, [&] {
    require_data_file(path);
    file_bytes = file_size(path);
  });
  MPI_Bcast(&file_bytes, 1, MPI_INT64_T, 0, comm);
  LineCodes out;
  std::string message;
  bool ok = true;
  int64_t count = 0;
  if (file_bytes > 0) {
    MpiFile fh;
    const int rc = fh.open(comm, path);
    SSDR_CHECK_COLLECTIVE(comm, rc == MPI_SUCCESS, "cannot open '" + path + "': " + mpi_error_text(rc));
    OwnedText text = read_range(fh.get(), file_bytes, path, comm, message, ok);
    SSDR_CHECK_COLLECTIVE(comm, ok, message);
    for_each_line(text, [&](std::string_view line, int64_t no) {
      const std::string_view t = trim(line);
      if (t.empty()) return true;
      const char c = code(t);
      if (c == 0) {  // the lowest failing rank's message is the file's first bad line
        ok = false;
        message = path + ":" + std::to_string(no) + ": expected " + expected + ", found '" + std::string(t) + "'";
        return false;
      }
      out.codes.push_back(c);
      return true;
    });
    SSDR_CHECK_COLLECTIVE(comm, ok, message);
    count = static_cast<int64_t>(out.codes.size());
  }
  MPI_Exscan(&count, &out.first, 1, MPI_INT64_T, MPI_SUM, comm);
  if (comm_rank(comm) == 0) out.first = 0;
  MPI_Allreduce(&count, &out.total, 1, MPI_INT64_T, MPI_SUM, comm);
  return out;
}

}  // namespace ssdr::io
