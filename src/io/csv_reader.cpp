// CSV: no header; each line `label,x_1,...,x_d`, every line with the same number of fields.
#include "reader_internal.hpp"

namespace ssdr::io::detail {

/// Counts the comma-separated fields of a line.
int64_t count_fields(std::string_view line) {
  return 1 + static_cast<int64_t>(std::count(line.begin(), line.end(), ','));
}

/// Parses one CSV line with `fields` fields (label + fields-1 values). Values go to `row`
/// when it is not null.
int parse_csv_line(std::string_view line, int64_t fields, const Where& at, double* row) {
  const int64_t found = count_fields(line);
  if (found != fields)
    fail(at.str() + ": expected " + std::to_string(fields) + " fields (label + " +
         std::to_string(fields - 1) + " values), found " + std::to_string(found));
  size_t comma = line.find(',');
  const int label = parse_label(line.substr(0, comma), at);
  int64_t j = 0;
  while (comma != std::string_view::npos) {
    const size_t start = comma + 1;
    comma = line.find(',', start);
    const std::string_view tok =
        line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const double v = parse_value(tok, at, "column", j + 2);
    if (row != nullptr) row[j] = v;
    ++j;
  }
  return label;
}

}  // namespace ssdr::io::detail
