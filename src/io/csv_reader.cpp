// CSV/TSV: an optional header line, then lines of fields separated by commas (or tabs), the
// label in one column (column 1 unless --label-column says otherwise), the other fields the
// values; every line with the same number of fields.
#include <climits>

#include "reader_internal.hpp"

namespace ssdr::io::detail {

int64_t count_fields(std::string_view line, char delimiter) {
  return 1 + static_cast<int64_t>(std::count(line.begin(), line.end(), delimiter));
}

namespace {

/// The fields of a line (views into it).
std::vector<std::string_view> split_fields(std::string_view line, char delimiter) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t stop = line.find(delimiter, start);
    out.push_back(line.substr(start, stop == std::string_view::npos ? std::string_view::npos : stop - start));
    if (stop == std::string_view::npos) break;
    start = stop + 1;
  }
  return out;
}

/// A header field, without blanks and surrounding double quotes.
std::string_view unquote(std::string_view f) {
  f = trim(f);
  if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
  return f;
}

bool is_number(std::string_view tok) {
  std::string_view t = trim(tok);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  double v = 0.0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  return !t.empty() && res.ptr == t.data() + t.size() &&
         (res.ec == std::errc() || res.ec == std::errc::result_out_of_range);
}

}  // namespace

CsvLayout csv_layout(std::string_view first, const Where& at, const LabelOptions& options, bool labeled) {
  CsvLayout layout;
  layout.delimiter = first.find('\t') != std::string_view::npos && first.find(',') == std::string_view::npos ? '\t' : ',';
  const std::vector<std::string_view> fields = split_fields(first, layout.delimiter);
  layout.fields = static_cast<int64_t>(fields.size());
  const auto numbered = [](const std::string& col) {
    return !col.empty() && std::all_of(col.begin(), col.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  // A column by 1-based number now; by name once the header is known (−2: by name).
  const auto by_number = [&](const std::string& col, const char* option) -> int64_t {
    if (col.empty()) return -1;
    if (!numbered(col)) return -2;
    const int64_t k = col.size() > 18 ? INT64_MAX : std::stoll(col);
    if (k < 1 || k > layout.fields)
      fail(std::string(option) + " " + col + ": " + at.str() + " has " + std::to_string(layout.fields) +
           " fields; expected a column number 1.." + std::to_string(layout.fields) + " or a header name");
    return k - 1;
  };
  const std::string& col = options.column;
  if (!labeled && !col.empty()) fail("--label-column " + col + ": the data have no label column (--no-labels)");
  layout.label_column = !labeled ? -1 : col.empty() ? 0 : by_number(col, "--label-column");
  layout.id_column = by_number(options.id_column, "--id-column");
  // A header: said so, or (automatic) a value field that is not a number, or a named column.
  bool header = options.header == LabelOptions::Header::yes;
  if (options.header == LabelOptions::Header::automatic) {
    if (layout.label_column == -2 || layout.id_column == -2) {
      header = true;
    } else {
      for (int64_t j = 0; j < layout.fields; ++j)
        if (j != layout.label_column && j != layout.id_column && !is_number(fields[static_cast<size_t>(j)]))
          header = true;
    }
  }
  const auto by_name = [&](const std::string& name, const char* option) -> int64_t {
    if (!header)
      fail(std::string(option) + " " + name + ": a column name needs a header line (--header no was given); " +
           "expected a column number 1.." + std::to_string(layout.fields));
    std::string names;
    int64_t found = -1;
    for (int64_t j = 0; j < layout.fields; ++j) {
      const std::string_view h = unquote(fields[static_cast<size_t>(j)]);
      if (h == name && found < 0) found = j;
      if (j < 12) names += (j > 0 ? ", '" : "'") + std::string(h) + "'";
    }
    if (layout.fields > 12) names += ", ...";
    if (found < 0) fail(std::string(option) + " " + name + ": no such column in the header of " + at.str() + " (" + names + ")");
    return found;
  };
  if (layout.label_column == -2) layout.label_column = by_name(col, "--label-column");
  if (layout.id_column == -2) layout.id_column = by_name(options.id_column, "--id-column");
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
  const bool labeled = layout.label_column >= 0;
  const int64_t found = count_fields(line, layout.delimiter);
  if (found != layout.fields)
    fail(at.str() + ": expected " + std::to_string(layout.fields) + " fields (" +
         (labeled ? "label + " + std::to_string(layout.fields - 1) + " values" : "values, no label: --no-labels") +
         "), found " + std::to_string(found));
  int label = -1;
  size_t start = 0;
  int64_t j = 0;  // values stored
  for (int64_t field = 0; field < layout.fields; ++field) {
    const size_t stop = line.find(layout.delimiter, start);
    const std::string_view tok =
        line.substr(start, stop == std::string_view::npos ? std::string_view::npos : stop - start);
    if (field == layout.label_column) {
      try {
        label = coder.code(tok, at);
      } catch (const LocalFailure& f) {
        // A file of values alone is read as one whose first value is the label.
        fail(f.message + "; data without a label column: --no-labels (transform, predict)");
      }
    } else if (field == layout.id_column) {
      const std::string_view t = trim(tok);
      if (t.size() > kMaxIdBytes)
        fail(at.str() + ": the id in column " + std::to_string(field + 1) + " has " + std::to_string(t.size()) +
             " bytes; expected at most " + std::to_string(kMaxIdBytes));
      if (id != nullptr) id->assign(t);
    } else {
      // Column numbers count from 1 in the file.
      const double v = parse_value(tok, at, "column", field + 1);
      if (row != nullptr) row[j] = v;
      ++j;
    }
    start = stop + 1;
  }
  return label;
}

}  // namespace ssdr::io::detail
