// CSV/TSV: an optional header line, then records of fields separated by commas (or tabs), the
// label in one column (column 1 unless --label-column says otherwise), the other fields the
// values; every record with the same number of fields. Fields follow RFC 4180: a field may be
// quoted ("..."), and a quoted field may hold the delimiter, line breaks and doubled quotes
// (""), as R's write.csv, pandas' to_csv and spreadsheets write them.
#include <climits>

#include "reader_internal.hpp"
#include "ssdr/core/progress.hpp"
#include "text_range_internal.hpp"

namespace ssdr::io::detail {

namespace {

/// "field 3" for messages (1-based).
std::string field_text(size_t k) { return "field " + std::to_string(k + 1); }

}  // namespace

void split_record(std::string_view rec, char delimiter, const Where& at, std::vector<std::string_view>& out,
                  std::string& scratch) {
  out.clear();
  if (rec.find('"') == std::string_view::npos) {  // the common case: no quoting at all
    size_t start = 0;
    for (;;) {
      const size_t stop = rec.find(delimiter, start);
      out.push_back(rec.substr(start, stop == std::string_view::npos ? std::string_view::npos : stop - start));
      if (stop == std::string_view::npos) return;
      start = stop + 1;
    }
  }
  // Unquoted text never grows, so the views into scratch stay valid while it fills.
  scratch.clear();
  scratch.reserve(rec.size());
  size_t pos = 0;
  for (;;) {
    size_t q = pos;
    while (q < rec.size() && (rec[q] == ' ' || rec[q] == '\t') && rec[q] != delimiter) ++q;
    if (q < rec.size() && rec[q] == '"') {
      // A quoted field: up to the quote not followed by another; "" is one quote.
      size_t p = q + 1;
      bool doubled = false;
      for (;;) {
        const size_t close = rec.find('"', p);
        if (close == std::string_view::npos)
          fail(at.str() + ": " + field_text(out.size()) +
               " opens a double quote that is never closed; expected a closing '\"' (RFC 4180: a quote inside "
               "a quoted field is written twice)");
        if (close + 1 < rec.size() && rec[close + 1] == '"') {
          doubled = true;
          p = close + 2;
          continue;
        }
        std::string_view content = rec.substr(q + 1, close - q - 1);
        if (doubled) {
          const size_t begin = scratch.size();
          for (size_t i = 0; i < content.size(); ++i) {
            scratch.push_back(content[i]);
            if (content[i] == '"') ++i;  // the second quote of a pair
          }
          content = std::string_view(scratch.data() + begin, scratch.size() - begin);
        }
        out.push_back(content);
        p = close + 1;
        break;
      }
      while (p < rec.size() && rec[p] != delimiter && is_space(rec[p])) ++p;
      if (p == rec.size()) return;
      if (rec[p] != delimiter)
        fail(at.str() + ": " + field_text(out.size() - 1) + " has text after its closing double quote ('" +
             shown(rec.substr(q, std::min<size_t>(p + 8, rec.size()) - q)) +
             "'); expected the delimiter after a quoted field (RFC 4180)");
      pos = p + 1;
      continue;
    }
    const size_t stop = rec.find(delimiter, pos);
    const std::string_view field =
        rec.substr(pos, stop == std::string_view::npos ? std::string_view::npos : stop - pos);
    if (field.find('"') != std::string_view::npos)
      fail(at.str() + ": " + field_text(out.size()) + " ('" + shown(field) +
           "') has a double quote inside an unquoted field; expected the whole field quoted, with inner quotes "
           "doubled (RFC 4180: \"5\"\" disk\")");
    out.push_back(field);
    if (stop == std::string_view::npos) return;
    pos = stop + 1;
  }
}

namespace {

bool is_number(std::string_view tok) {
  std::string_view t = trim(tok);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  double v = 0.0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  return !t.empty() && res.ptr == t.data() + t.size() &&
         (res.ec == std::errc() || res.ec == std::errc::result_out_of_range);
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

/// A missing value as data files write it ("?", "NA", "nan", ...): says nothing of a header.
bool is_missing(std::string_view t) {
  static const char* const words[] = {"", "?", "NA", "N/A", "na", "nan", "NaN", "NAN", "null", "NULL", "-"};
  return std::any_of(std::begin(words), std::end(words), [&](const char* w) { return t == w; });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return out;
}

}  // namespace

CsvLayout csv_layout(std::string_view first, const Where& at, const LabelOptions& options, bool labeled,
                     std::string* note) {
  CsvLayout layout;
  // The delimiter: a tab in a .tsv file, or when the record has more tabs than commas outside
  // quotes (pandas does not quote a comma in a tab-separated file); else a comma.
  {
    bool quoted = false;
    int64_t tabs = 0, commas = 0;
    for (char ch : first) {
      if (ch == '"') quoted = !quoted;
      else if (!quoted && ch == '\t') ++tabs;
      else if (!quoted && ch == ',') ++commas;
    }
    const bool tsv = ends_with(*at.path, ".tsv") || ends_with(*at.path, ".tsv.gz");
    layout.delimiter = (tsv && tabs > 0) || tabs > commas ? '\t' : ',';
  }
  std::vector<std::string_view> raw;
  std::string scratch;
  split_record(first, layout.delimiter, at, raw, scratch);
  std::vector<std::string_view> fields(raw.size());
  for (size_t j = 0; j < raw.size(); ++j) fields[j] = trim(raw[j]);
  layout.fields = static_cast<int64_t>(fields.size());
  const std::string& col = options.column;
  if (!labeled && !col.empty()) fail("--label-column " + col + ": the data have no label column (--no-labels)");
  const auto out_of_range = [&](const std::string& spec, const char* option) {
    fail(std::string(option) + " " + spec + ": " + at.str() + " has " + std::to_string(layout.fields) +
         " fields; expected a column number 1.." + std::to_string(layout.fields) + " or a header name");
  };
  // A column given by 1-based number: "#5" always; "5" when the file has no column named 5
  // (−2: a name; −3: a number past the last column, unless a header names it).
  const auto number_of = [&](const std::string& spec, const char* option) -> int64_t {
    const std::string digits = spec.size() > 1 && spec[0] == '#' ? spec.substr(1) : spec;
    if (!all_digits(digits)) {
      if (spec[0] == '#') fail(std::string(option) + " " + spec + ": expected '#' and a column number 1.." +
                               std::to_string(layout.fields));
      return -2;
    }
    const int64_t k = digits.size() > 18 ? INT64_MAX : std::stoll(digits);
    if (k < 1 || k > layout.fields) {
      if (spec[0] != '#') return -3;  // maybe a header's name; refused below if not
      out_of_range(spec, option);
    }
    return k - 1;
  };
  const auto named_in_line = [&](const std::string& name) -> int64_t {
    for (size_t j = 0; j < fields.size(); ++j)
      if (fields[j] == name) return static_cast<int64_t>(j);
    return -1;
  };
  // First the columns by position where the spec is a number (a header may rename them below).
  layout.label_default = labeled && col.empty();
  layout.label_column = !labeled ? -1 : col.empty() ? 0 : number_of(col, "--label-column");
  layout.id_column = options.id_column.empty() ? -1 : number_of(options.id_column, "--id-column");
  const bool named_spec = layout.label_column == -2 || layout.id_column == -2;
  // A header: said so, or (automatic) a value field that is not a number, or a named column.
  bool header = options.header == LabelOptions::Header::yes;
  std::vector<size_t> numeric, words;  // the value fields that are numbers and those that are not
  for (size_t j = 0; j < fields.size(); ++j) {
    const auto jj = static_cast<int64_t>(j);
    if (jj == layout.label_column || jj == layout.id_column) continue;
    if (is_missing(fields[j])) continue;  // a first row with a missing value is no header
    (is_number(fields[j]) ? numeric : words).push_back(j);
  }
  if (options.header == LabelOptions::Header::automatic) {
    // A column by name (or by a number past the last column: only a name can mean it).
    header = named_spec || !words.empty();
    // Not obvious: some value fields are numbers and some are not (a header with numbered
    // columns, or a first row with a missing value).
    if (note != nullptr && layout.label_column != -2 && layout.id_column != -2 && !words.empty() &&
        !numeric.empty()) {
      std::string w;
      for (size_t k = 0; k < words.size() && k < 3; ++k) w += (k > 0 ? ", '" : "'") + shown(fields[words[k]]) + "'";
      *note = at.str() + " read as a header: " + std::to_string(words.size()) + " of its " +
              std::to_string(words.size() + numeric.size()) + " value fields are not numbers (" + w +
              (words.size() > 3 ? ", ..." : "") + "); --header no reads it as data";
    }
  }
  // Duplicate names would make a column by name ambiguous: refused in a header; a line with
  // duplicates is never a header of numbers (0/1 data).
  bool duplicates = false;
  {
    std::unordered_map<std::string_view, size_t> seen;
    for (size_t j = 0; j < fields.size(); ++j) {
      if (fields[j].empty()) continue;  // pandas' unnamed index column, R's row names
      const auto [it, fresh] = seen.emplace(fields[j], j);
      if (fresh) continue;
      duplicates = true;
      if (header)
        fail(at.str() + ": the header names column " + std::to_string(it->second + 1) + " and column " +
             std::to_string(j + 1) + " both '" + shown(fields[j]) + "'; expected unique column names");
    }
  }
  const auto by_name = [&](const std::string& name, const char* option) -> int64_t {
    if (!header)
      fail(std::string(option) + " " + name + ": a column name needs a header line (--header no was given); " +
           "expected a column number 1.." + std::to_string(layout.fields) + " ('#3' is column 3)");
    const int64_t found = named_in_line(name);
    if (found >= 0) return found;
    std::string close;  // the same name in another case
    for (size_t j = 0; j < fields.size() && close.empty(); ++j)
      if (lower(fields[j]) == lower(name)) close = std::string(fields[j]);
    std::string names;
    for (size_t j = 0; j < fields.size() && names.size() < 300; ++j)
      names += (j > 0 ? ", '" : "'") + shown(fields[j]) + "'";
    if (names.size() >= 300 && fields.size() > 1) names += ", ...";
    fail(std::string(option) + " " + name + ": no such column in the header of " + at.str() +
         (close.empty() ? " (" + names + ")" : "; names match case: did you mean '" + close + "'?"));
  };
  // A header's names come before numbers: "--label-column 5" is the column named 5 when the
  // header has one, column number 5 otherwise ("#5" is always the number).
  const auto resolve = [&](const std::string& spec, int64_t by_number, const char* option) -> int64_t {
    if (spec.empty() || spec[0] == '#') return by_number;
    if (by_number == -2) return by_name(spec, option);
    if (header) {
      const int64_t named = named_in_line(spec);
      if (named >= 0) return named;
    }
    if (by_number == -3) out_of_range(spec, option);
    if (!header && options.header == LabelOptions::Header::automatic) {
      // A numeric first line that names this column elsewhere: a header of numbers, or data
      // whose value happens to equal the spec. Either reading could be silently wrong.
      const int64_t named = named_in_line(spec);
      if (named >= 0 && named != by_number && !duplicates)
        fail(std::string(option) + " " + spec + " is ambiguous: " + at.str() +
             " is all numbers, so it reads as data with column " + spec + " the label, but its column " +
             std::to_string(named + 1) + " is '" + spec + "', as a header naming it would be; expected " + option +
             " '#" + spec + "' (column number " + spec + ") or --header yes (the column named " + spec + ")");
    }
    return by_number;
  };
  layout.label_column = !labeled ? -1 : resolve(col, layout.label_column, "--label-column");
  layout.id_column = resolve(options.id_column, layout.id_column, "--id-column");
  // R's write.csv and pandas' to_csv write the row names first, under an empty header name
  // (in a header with real names): they are the rows' ids, not a feature, and never labels.
  const bool row_names = header && fields.size() > 2 && fields[0].empty() && (!words.empty() || named_spec);
  if (row_names && layout.label_column == 0)
    fail("--label-column: " + at.str() + (layout.label_default ? ": column 1, the default label column," : ": column 1") +
         " has no name in the header (row names, as R's write.csv and pandas' to_csv write them); expected "
         "--label-column NAME naming the label column");
  if (row_names && options.id_column.empty()) {
    layout.id_column = 0;
    layout.row_names = true;
    if (note != nullptr)
      *note = (note->empty() ? "" : *note + "; ") + at.str() +
              ": column 1 has no name in the header: read as the rows' ids (row names, as R's write.csv and "
              "pandas' to_csv write them), not as a feature";
  }
  if (layout.id_column >= 0 && layout.id_column == layout.label_column)
    fail("--id-column " + options.id_column + " and --label-column " + (col.empty() ? std::string("1") : col) +
         " name the same column of " + at.str() + "; expected two different columns");
  if (header) layout.header_line = at.line;
  if (labeled && layout.fields - (layout.id_column >= 0 ? 1 : 0) < 2)
    fail(at.str() + ": expected a label and at least one value, found " + std::to_string(layout.fields) + " field" +
         (layout.fields == 1 ? "" : "s") + (layout.id_column >= 0 ? " with the id" : ""));
  if (layout.values() < 1) fail(at.str() + ": no value fields besides the label and id columns");
  return layout;
}

int parse_csv_line(std::string_view line, const CsvLayout& layout, const Where& at, double* row, LabelCoder& coder,
                   std::string* id) {
  thread_local std::vector<std::string_view> fields;
  thread_local std::string scratch;
  split_record(line, layout.delimiter, at, fields, scratch);
  const bool labeled = layout.label_column >= 0;
  const auto found = static_cast<int64_t>(fields.size());
  if (found != layout.fields)
    fail(at.str() + ": expected " + std::to_string(layout.fields) + " fields (" +
         (labeled ? "label + " + std::to_string(layout.fields - 1) + " values" : "values, no label: --no-labels") +
         "), found " + std::to_string(found));
  int label = -1;
  int64_t j = 0;  // values stored
  for (int64_t field = 0; field < layout.fields; ++field) {
    const std::string_view tok = fields[static_cast<size_t>(field)];
    if (field == layout.label_column) {
      try {
        label = coder.code(tok, at);
      } catch (const LocalFailure& f) {
        // A file of values alone is read as one whose first value is the label.
        if (!is_finite_number(tok)) throw;
        fail(f.message + (layout.label_default ? "; column 1 was taken as the label: --label-column names the label "
                                                 "column, --no-labels reads data without one (transform, predict)"
                                               : "; data without a label column: --no-labels (transform, predict)"));
      }
    } else if (field == layout.id_column) {
      const std::string_view t = trim(tok);
      if (t.size() > kMaxIdBytes)
        fail(at.str() + ": the id in column " + std::to_string(field + 1) + " has " + std::to_string(t.size()) +
             " bytes; expected at most " + std::to_string(kMaxIdBytes));
      if (id != nullptr) id->assign(t);
    } else {
      // Column numbers count from 1 in the file.
      double v = 0.0;
      try {
        v = parse_value(tok, at, "column", field + 1);
      } catch (const LocalFailure& f) {
        if (!layout.label_default) throw;
        fail(f.message + " (column 1 was taken as the label; --label-column names the label column)");
      }
      if (row != nullptr) row[j] = v;
      ++j;
    }
  }
  return label;
}

bool ends_record(std::string_view text, size_t from, size_t to, int& parity, size_t& nl) {
  const char* p = text.data();
  while (from < to) {
    const void* hit = std::memchr(p + from, '\n', to - from);
    const size_t stop = hit == nullptr ? to : static_cast<size_t>(static_cast<const char*>(hit) - p);
    parity ^= static_cast<int>(std::count(p + from, p + stop, '"') & 1);
    if (hit == nullptr) return false;
    if (parity == 0) {
      nl = stop;
      return true;
    }
    from = stop + 1;
  }
  return false;
}

namespace {

/// The CSV layout (delimiter, header, label column) from the file's first non-blank record,
/// decided by the lowest rank that has records (`look`, every rank's count in `rows`) and
/// broadcast; what the header detection decided, when it was not obvious, is said once. A
/// header line leaves its rank's count in `rows`. Collective. \throws ssdr::Error
/// (collectively) when no rank has a record or the first record is refused (csv_layout).
CsvLayout agree_csv_layout(const FirstLook& look, std::vector<int64_t>& rows, const std::string& path,
                           const LabelOptions& label, bool labeled, MPI_Comm comm) {
  const int rank = comm_rank(comm), size = comm_size(comm);
  int owner = -1;
  for (int r = 0; r < size && owner < 0; ++r)
    if (rows[static_cast<size_t>(r)] > 0) owner = r;
  SSDR_CHECK_COLLECTIVE(comm, owner >= 0, path + ": empty file (no samples)");
  CsvLayout layout;
  std::string note;  // what the header detection decided, when it was not obvious
  std::string message;
  bool ok = true;
  if (rank == owner)
    ok = attempt([&] { layout = csv_layout(look.first_text, Where{&path, look.first_line}, label, labeled, &note); },
                 message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  MPI_Bcast(&layout, static_cast<int>(sizeof layout), MPI_BYTE, owner, comm);
  note = bcast_string(note, owner, comm);
  if (rank == 0 && !note.empty()) say(note);
  if (layout.header_line > 0) --rows[static_cast<size_t>(owner)];
  return layout;
}

}  // namespace

Dataset read_csv_ranges(const std::string& path, MPI_Comm comm, bool labeled, const LabelOptions& label) {
  const int rank = comm_rank(comm), size = comm_size(comm);
  OwnedText text = read_owned_text(path, comm, true);
  // First look: rows, and this rank's first non-blank record; the layout from the file's first.
  const FirstLook look = first_look(text);
  std::vector<int64_t> rows = allgather_counts(look.rows, comm);
  const CsvLayout layout = agree_csv_layout(look, rows, path, label, labeled, comm);
  ParsedRows parsed;
  parsed.row_offset = row_offsets(rows);
  const int64_t n = parsed.row_offset.back();
  SSDR_CHECK_COLLECTIVE(comm, n > 0 || layout.header_line == 0,
                        path + ": a header line alone (line " + std::to_string(layout.header_line) + "), no samples");
  SSDR_CHECK_COLLECTIVE(comm, n > 0, path + ": empty file (no samples)");
  const int64_t m = rows[static_cast<size_t>(rank)], d = layout.values();
  parsed.d = d;
  std::string message;
  bool ok = true;
  const int per_node = ranks_on_host(comm);
  ok = attempt([&] { require_dense_fits(n, d, size, per_node, path); }, message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);

  // Every record parsed into its row and label (blank lines and the header carry no row).
  LabelCoder coder(label);
  parsed.labels.resize(static_cast<size_t>(m));
  parsed.has_ids = layout.id_column >= 0;
  parsed.ids.resize(parsed.has_ids ? static_cast<size_t>(m) : 0);
  ok = attempt(
      [&] {
        parsed.values.assign(static_cast<size_t>(m * d), 0.0);
        int64_t i = 0;
        for_each_line(text, [&](std::string_view line, int64_t no) {
          if (is_blank(line) || no == layout.header_line) return true;
          parsed.labels[static_cast<size_t>(i)] =
              parse_csv_line(line, layout, Where{&path, no}, parsed.values.data() + i * d, coder,
                             parsed.has_ids ? &parsed.ids[static_cast<size_t>(i)] : nullptr);
          ++i;
          return true;
        });
      },
      message);
  SSDR_CHECK_COLLECTIVE(comm, ok, message);
  // The classes, agreed over the ranks; this rank's codes become classes before the rows move.
  if (labeled) coder.finish(comm, path);
  coder.to_global(parsed.labels);
  text = OwnedText();  // the text is parsed; free it before the rows are placed
  return place_dense_rows(parsed, coder, labeled, path, comm);
}

}  // namespace ssdr::io::detail
