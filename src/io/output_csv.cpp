// The CSV writers: the embedding as a table (id, label, values; write_csv_table) and labels
// as text, one per line, both streamed through rank 0; every id, class name and column name
// as csv_field() quotes it (RFC 4180). Committed by the layer of output.cpp.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "output_internal.hpp"

namespace ssdr::io {

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char ch : field) {
    if (ch == '"') quoted.push_back('"');
    quoted.push_back(ch);
  }
  quoted.push_back('"');
  return quoted;
}

namespace detail {

void write_csv_table(const DistMatrix& Y, const std::string& path, const TableColumns& table) {
  const int64_t cols = Y.cols;
  // CSV: each row as a record (its id as text, its label code, its values), formatted on
  // rank 0: ids are the data's --id-column texts or the rows' sample indices.
  SSDR_CHECK(table.columns.empty() || static_cast<int64_t>(table.columns.size()) == cols,
             "write_embedding: " + std::to_string(table.columns.size()) + " column names for " + std::to_string(cols) +
                 " columns");
  const bool with_label = table.labels != nullptr;
  const int64_t start = first_row(Y);
  std::vector<std::string> texts(static_cast<size_t>(Y.n_local));
  int64_t id_width = 1;
  for (int64_t i = 0; i < Y.n_local; ++i) {
    std::string& t = texts[static_cast<size_t>(i)];
    t = table.id_names != nullptr ? csv_field((*table.id_names)[static_cast<size_t>(i)])
        : std::to_string(table.ids != nullptr ? (*table.ids)[static_cast<size_t>(i)] : start + i);
    id_width = std::max<int64_t>(id_width, static_cast<int64_t>(t.size()));
  }
  MPI_Allreduce(MPI_IN_PLACE, &id_width, 1, MPI_INT64_T, MPI_MAX, Y.comm);
  const int64_t width = id_width + 4 + 8 * cols;  // bytes per record
  std::vector<char> records(static_cast<size_t>(Y.n_local * width), '\0');
  for (int64_t i = 0; i < Y.n_local; ++i) {
    char* r = records.data() + i * width;
    const std::string& t = texts[static_cast<size_t>(i)];
    std::copy(t.begin(), t.end(), r);
    const int32_t code = with_label ? (*table.labels)[static_cast<size_t>(i)] : -1;
    std::memcpy(r + id_width, &code, 4);
    if (cols > 0) std::memcpy(r + id_width + 4, Y.row(i), static_cast<size_t>(8 * cols));
  }
  texts = {};
  std::string header = "id";
  if (with_label) header += "," + csv_field(table.label_column);
  for (int64_t j = 0; j < cols; ++j)
    header += "," + (table.columns.empty() ? "y" + std::to_string(j + 1) : csv_field(table.columns[static_cast<size_t>(j)]));
  header += "\n";
  // The class names as fields, quoted once here rather than per row.
  std::vector<std::string> label_text;
  if (with_label && table.names != nullptr)
    for (const std::string& name : *table.names) label_text.push_back(csv_field(name));
  const int64_t rows_per_msg = std::max<int64_t>(1, (int64_t{1} << 29) / width);
  stream_rows_through_root<char>(
      records.data(), Y.n_local, width, rows_per_msg, 7, path, false, [&](int64_t) { return header; },
      [&](std::FILE* f, const char* v, int64_t k) {
        std::string line;
        char num[40];
        for (int64_t i = 0; i < k; ++i) {
          const char* r = v + i * width;
          line.assign(r, strnlen(r, static_cast<size_t>(id_width)));
          if (with_label) {
            int32_t code = -1;
            std::memcpy(&code, r + id_width, 4);
            line.push_back(',');
            if (code >= 0)
              line += code < static_cast<int32_t>(label_text.size()) ? label_text[static_cast<size_t>(code)]
                                                                       : std::to_string(code);
          }
          for (int64_t j = 0; j < cols; ++j) {
            double x = 0;
            std::memcpy(&x, r + id_width + 4 + 8 * j, 8);
            const int len = std::snprintf(num, sizeof num, "%.17g", x);
            line.push_back(',');
            line.append(num, static_cast<size_t>(len));
          }
          line.push_back('\n');
          if (std::fwrite(line.data(), 1, line.size(), f) != line.size()) return false;
        }
        return true;
      },
      Y.comm);
}

void write_text_labels(const std::vector<int>& labels, const std::string& path, MPI_Comm comm,
                       const std::vector<std::string>* names) {
  const auto name_of = [&](int v) -> std::string {
    if (v < 0) return "";
    return names != nullptr && v < static_cast<int>(names->size()) ? (*names)[static_cast<size_t>(v)] : std::to_string(v);
  };
  stream_rows_through_root<int>(
      labels.data(), static_cast<int64_t>(labels.size()), 1, int64_t{1} << 24, 8, path, false,
      [&](int64_t) { return std::string(); },
      [&](std::FILE* f, const int* v, int64_t k) {
        std::string text;
        for (int64_t i = 0; i < k; ++i) {
          text += csv_field(name_of(v[i]));  // one name per line, even with a line break in it
          text.push_back('\n');
        }
        return std::fwrite(text.data(), 1, text.size(), f) == text.size();
      },
      comm);
}

}  // namespace detail

}  // namespace ssdr::io
