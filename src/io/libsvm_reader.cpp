// LIBSVM/SVMlight: `label idx:val ...`, 1-based strictly increasing indices, zeros omitted.
#include "reader_internal.hpp"

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

}  // namespace ssdr::io::detail
