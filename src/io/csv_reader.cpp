// CSV: no header; each line `label,x_1,...,x_d` (or `x_1,...,x_d` without labels), every
// line with the same number of fields.
#include "reader_internal.hpp"

namespace ssdr::io::detail {

/// Counts the comma-separated fields of a line.
int64_t count_fields(std::string_view line) {
  return 1 + static_cast<int64_t>(std::count(line.begin(), line.end(), ','));
}

/// Parses one CSV line with `fields` fields (label + fields-1 values, or `fields` values
/// when not `labeled`). Values go to `row` when it is not null. Returns the label (−1 when
/// not `labeled`).
int parse_csv_line(std::string_view line, int64_t fields, const Where& at, double* row, bool labeled) {
  const int64_t found = count_fields(line);
  if (found != fields)
    fail(at.str() + ": expected " + std::to_string(fields) + " fields (" +
         (labeled ? "label + " + std::to_string(fields - 1) + " values" : "values, no label: --no-labels") +
         "), found " + std::to_string(found));
  int label = -1;
  size_t comma = std::string_view::npos;
  size_t start = 0;
  if (labeled) {
    comma = line.find(',');
    try {
      label = parse_label(line.substr(0, comma), at);
    } catch (const LocalFailure& f) {
      // A file of values alone is read as one whose first value is the label.
      fail(f.message + "; data without a label column: --no-labels (transform, predict)");
    }
    if (comma == std::string_view::npos) return label;
    start = comma + 1;
  }
  int64_t j = 0;
  for (;;) {
    comma = line.find(',', start);
    const std::string_view tok =
        line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    // Column numbers count from 1 in the file: the label is column 1 when there is one.
    const double v = parse_value(tok, at, "column", j + (labeled ? 2 : 1));
    if (row != nullptr) row[j] = v;
    ++j;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return label;
}

}  // namespace ssdr::io::detail
