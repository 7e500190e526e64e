// CSV/TSV: an optional header line, then lines of fields separated by commas (or tabs), the
// label in one column (column 1 unless --label-column says otherwise), the other fields the
// values; every line with the same number of fields.
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
  // The label column: a 1-based number, or a name (which needs a header).
  int64_t by_number = 0;
  const std::string& col = options.column;
  const bool numbered = !col.empty() && std::all_of(col.begin(), col.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!labeled) {
    if (!col.empty()) fail("--label-column " + col + ": the data have no label column (--no-labels)");
    layout.label_column = -1;
  } else if (col.empty()) {
    layout.label_column = 0;
  } else if (numbered) {
    by_number = std::stoll(col.size() > 18 ? std::string("999999999999999999") : col);
    if (by_number < 1 || by_number > layout.fields)
      fail("--label-column " + col + ": " + at.str() + " has " + std::to_string(layout.fields) +
           " fields; expected a column number 1.." + std::to_string(layout.fields) + " or a header name");
    layout.label_column = by_number - 1;
  }
  // A header: said so, or (automatic) a value field that is not a number, or a named label
  // column.
  bool header = options.header == LabelOptions::Header::yes;
  if (options.header == LabelOptions::Header::automatic) {
    if (labeled && !col.empty() && !numbered) {
      header = true;
    } else {
      for (int64_t j = 0; j < layout.fields; ++j)
        if (j != layout.label_column && !is_number(fields[static_cast<size_t>(j)])) header = true;
    }
  }
  if (labeled && !col.empty() && !numbered) {
    if (!header)
      fail("--label-column " + col + ": a column name needs a header line (--header no was given); expected a "
           "column number 1.." + std::to_string(layout.fields));
    int64_t found = -1;
    std::string names;
    for (int64_t j = 0; j < layout.fields; ++j) {
      const std::string_view name = unquote(fields[static_cast<size_t>(j)]);
      if (name == col && found < 0) found = j;
      if (j < 12) names += (j > 0 ? ", '" : "'") + std::string(name) + "'";
    }
    if (layout.fields > 12) names += ", ...";
    if (found < 0)
      fail("--label-column " + col + ": no such column in the header of " + at.str() + " (" + names + ")");
    layout.label_column = found;
  }
  if (header) layout.header_line = at.line;
  if (labeled && layout.fields < 2)
    fail(at.str() + ": expected a label and at least one value, found 1 field");
  return layout;
}

int parse_csv_line(std::string_view line, const CsvLayout& layout, const Where& at, double* row, LabelCoder& coder) {
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
