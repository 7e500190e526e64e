// Labels as users write them: integers or names, with unlabeled markers, coded per rank while
// a file is read and agreed over the communicator at the end (see LabelCoder in
// reader_internal.hpp).
#include <algorithm>
#include <cstring>

#include "reader_internal.hpp"
#include "ssdr/core/error.hpp"
#include "ssdr/core/progress.hpp"

namespace ssdr::io {

LabelOptions::Header parse_header(const std::string& name) {
  if (name == "auto") return LabelOptions::Header::automatic;
  if (name == "yes") return LabelOptions::Header::yes;
  if (name == "no") return LabelOptions::Header::no;
  throw Error("--header: expected auto, yes or no, got '" + name + "'", __FILE__, __LINE__, true);
}

LabelOptions::Type parse_label_type(const std::string& name) {
  if (name == "auto") return LabelOptions::Type::automatic;
  if (name == "integer") return LabelOptions::Type::integer;
  if (name == "string") return LabelOptions::Type::string;
  throw Error("--label-type: expected auto, integer or string, got '" + name + "'", __FILE__, __LINE__, true);
}

}  // namespace ssdr::io

namespace ssdr::io::detail {

bool parse_integer_label(std::string_view t, int64_t& value) {
  std::string_view num = t;
  if (!num.empty() && num.front() == '+') num.remove_prefix(1);
  if (num.empty()) return false;
  const auto res = std::from_chars(num.data(), num.data() + num.size(), value);
  if (res.ec == std::errc() && res.ptr == num.data() + num.size()) return true;
  // "3.0" (labels written by a float formatter): an integral double within int64.
  double v = 0.0;
  const auto rd = std::from_chars(num.data(), num.data() + num.size(), v);
  if (rd.ec != std::errc() || rd.ptr != num.data() + num.size() || !std::isfinite(v) || v != std::floor(v) ||
      std::fabs(v) >= 9.0e18)
    return false;
  value = static_cast<int64_t>(v);
  return true;
}

namespace {

std::string markers_text(const std::vector<std::string>& markers) {
  std::string s;
  for (const std::string& m : markers) s += (s.empty() ? "'" : ", '") + m + "'";
  return s.empty() ? "none" : s;
}

/// Fails unless `t` (a label that is not an integer) can name a class: no NUL byte, valid
/// UTF-8 (it goes to JSON reports and CSV headers), and, with `finite` (unless --label-type
/// string), not a non-finite number ("inf", "nan").
void check_class_name(std::string_view t, const Where& at, bool finite) {
  const size_t nul = t.find('\0');
  if (nul != std::string_view::npos)
    fail(at.str() + ": label has a NUL byte (byte " + std::to_string(nul + 1) +
         " of the field); expected a class name of text");
  const size_t bad = utf8_error(t);
  if (bad != std::string_view::npos)
    fail(at.str() + ": label is not valid UTF-8 (byte " + std::to_string(bad + 1) +
         " of the field); expected a class name in UTF-8");
  if (!finite) return;  // --label-type string: "Inf" may name a class
  std::string_view num = t;
  if (!num.empty() && (num.front() == '+' || num.front() == '-')) num.remove_prefix(1);
  std::string low(num);
  for (char& ch : low) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  if (low == "inf" || low == "infinity" || low == "nan")
    fail(at.str() + ": label '" + shown(t) + "' is not a finite number; expected an integer class, a name or an " +
         "unlabeled marker (--label-type string reads it as a name)");
}

}  // namespace

size_t utf8_error(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    size_t len = 0;
    unsigned min = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; }
    else return i;
    if (i + len > n) return i;
    unsigned cp = c & (0x7Fu >> len);
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;  // overlong, surrogate
    i += len;
  }
  return std::string_view::npos;
}

LabelCoder::LabelCoder(const LabelOptions& options)
    : options_(options), marker_rows_(options.unlabeled_markers.size() + 1, 0) {
  for (const std::string& m : options_.unlabeled_markers) {
    int64_t v = 0;
    if (parse_integer_label(trim(m), v)) integer_markers_.push_back(v);
  }
}

int LabelCoder::add(Key key) {
  if (key.integer) {
    auto it = by_value_.find(key.value);
    if (it != by_value_.end()) return it->second;
    const int code = static_cast<int>(keys_.size());
    by_value_.emplace(key.value, code);
    keys_.push_back(std::move(key));
    return code;
  }
  auto it = by_text_.find(key.text);
  if (it != by_text_.end()) return it->second;
  const int code = static_cast<int>(keys_.size());
  by_text_.emplace(key.text, code);
  keys_.push_back(std::move(key));
  return code;
}

int LabelCoder::code(std::string_view token, const Where& at) {
  const std::string_view t = trim(token);
  // An empty field is always unlabeled, whatever the markers: no class has an empty name.
  if (t.empty()) {
    ++marker_rows_.back();
    return -1;
  }
  for (size_t m = 0; m < options_.unlabeled_markers.size(); ++m)
    if (t == trim(options_.unlabeled_markers[m])) {
      ++marker_rows_[m];
      return -1;
    }
  Key key;
  int64_t v = 0;
  if (options_.type != LabelOptions::Type::string && parse_integer_label(t, v)) {
    key.integer = true;
    key.value = v;
    if (first_integer_ < 0) {
      first_integer_ = at.line;
      first_integer_token_ = shown(t);
    }
    ++integer_rows_;
  } else {
    if (options_.type == LabelOptions::Type::integer)
      fail(at.str() + ": label '" + shown(t) + "' is not an integer (--label-type integer); expected an integer " +
           "class or an unlabeled marker (" + markers_text(options_.unlabeled_markers) + ")");
    // Not an integer, but a number: a fraction ("0.25", "1e-3").
    if (options_.type == LabelOptions::Type::automatic && is_finite_number(t))
      fail(at.str() + ": label '" + shown(t) + "' is a fractional number; expected an integer class, a name or an " +
           "unlabeled marker (" + markers_text(options_.unlabeled_markers) +
           "; --label-type string reads it as a name)");
    check_class_name(t, at, options_.type != LabelOptions::Type::string);
    key.text = std::string(t);
    if (first_name_ < 0) {
      first_name_ = at.line;
      first_name_token_ = shown(t);
    }
    ++name_rows_;
  }
  return add(std::move(key));
}

int LabelCoder::code_integer(int64_t value, int64_t row) {
  rows_are_lines_ = false;
  if (std::find(integer_markers_.begin(), integer_markers_.end(), value) != integer_markers_.end()) return -1;
  Key key;
  if (options_.type == LabelOptions::Type::string) {
    key.text = std::to_string(value);
    if (first_name_ < 0) first_name_ = row + 1;
    ++name_rows_;
  } else {
    key.integer = true;
    key.value = value;
    if (first_integer_ < 0) first_integer_ = row + 1;
    ++integer_rows_;
  }
  return add(std::move(key));
}

void LabelCoder::finish(MPI_Comm comm, const std::string& what) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // A mix of integers and names: refused at the first line of the rarer kind (a name among
  // integers is most likely a missing-value marker the options do not know).
  int64_t counts[2] = {integer_rows_, name_rows_}, total[2] = {0, 0};
  MPI_Allreduce(counts, total, 2, MPI_INT64_T, MPI_SUM, comm);
  const bool mixed = total[0] > 0 && total[1] > 0;
  if (mixed) {
    const bool names_rarer = total[1] <= total[0];
    const int64_t mine = names_rarer ? first_name_ : first_integer_;
    int64_t key[2] = {mine < 0 ? std::numeric_limits<int64_t>::max() : mine, rank}, best[2] = {0, 0};
    // The smallest line over the ranks (lines are global), then the lowest rank.
    std::vector<int64_t> all(2 * static_cast<size_t>(size));
    MPI_Allgather(key, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, comm);
    best[0] = all[0];
    best[1] = all[1];
    for (int r = 1; r < size; ++r)
      if (all[2 * static_cast<size_t>(r)] < best[0]) {
        best[0] = all[2 * static_cast<size_t>(r)];
        best[1] = all[2 * static_cast<size_t>(r) + 1];
      }
    std::string message;
    if (best[1] == rank) {
      const std::string where = rows_are_lines_ ? what + ":" + std::to_string(best[0])
                                                : what + ": label " + std::to_string(best[0]);
      message = names_rarer
                    ? where + ": label '" + first_name_token_ + "' is a name among " + std::to_string(total[0]) +
                          " integer labels; expected an integer or an unlabeled marker (" +
                          markers_text(options_.unlabeled_markers) +
                          "; --unlabeled-marker sets them, --label-type string reads every label as a name)"
                    : where + ": label '" + first_integer_token_ + "' is an integer among " +
                          std::to_string(total[1]) + " names; expected a name or an unlabeled marker (" +
                          markers_text(options_.unlabeled_markers) +
                          "; --label-type string reads every label as a name)";
    }
    SSDR_CHECK_COLLECTIVE(comm, best[1] != rank, message);
  }
  integers_ = total[1] == 0;
  // Among names, a default marker word may be a class a user meant ("NA" is North America, a
  // gene): say how many rows each marker made unlabeled, and how to keep it.
  MPI_Allreduce(MPI_IN_PLACE, marker_rows_.data(), static_cast<int>(marker_rows_.size()), MPI_INT64_T, MPI_SUM, comm);
  if (!integers_ && rank == 0 && options_.unlabeled_markers == LabelOptions().unlabeled_markers) {
    std::string counts, keep, word;
    for (size_t m = 0; m + 1 < marker_rows_.size(); ++m) {
      const std::string marker(trim(options_.unlabeled_markers[m]));
      if (marker.empty()) continue;
      if (marker_rows_[m] > 0) {
        counts += (counts.empty() ? "" : ", ") + std::to_string(marker_rows_[m]) + " labeled '" + marker + "'";
        if (word.empty()) word = marker;
      }
    }
    for (const std::string& m : options_.unlabeled_markers) {
      const std::string marker(trim(m));
      if (!marker.empty() && marker != word) keep += " --unlabeled-marker '" + marker + "'";
    }
    if (!word.empty())
      say(what + ": " + counts + " read as unlabeled rows (unlabeled markers), besides " +
          std::to_string(marker_rows_.back()) + " empty labels; to keep '" + word + "' as a class name:" +
          (keep.empty() ? std::string(" --unlabeled-marker ''") : keep) +
          " (the markers given replace the defaults; an empty label is always unlabeled)");
  }
  // Every rank's distinct labels as text ("value" for integers), gathered in rank order.
  std::string mine;
  for (const Key& k : keys_) {
    const std::string text = k.integer ? std::to_string(k.value) : k.text;
    mine += text;
    mine.push_back('\0');
  }
  const std::vector<char> gathered = allgatherv(std::vector<char>(mine.begin(), mine.end()), comm);
  std::vector<std::string> all;
  for (size_t p = 0; p < gathered.size();) {
    const size_t len = std::strlen(gathered.data() + p);
    all.emplace_back(gathered.data() + p, len);
    p += len + 1;
  }
  if (integers_) {
    std::vector<int64_t> values;
    values.reserve(all.size());
    for (const std::string& s : all) values.push_back(std::stoll(s));
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    names_.clear();
    for (int64_t v : values) names_.push_back(std::to_string(v));
    remap_.resize(keys_.size());
    for (size_t k = 0; k < keys_.size(); ++k)
      remap_[k] = static_cast<int>(std::lower_bound(values.begin(), values.end(), keys_[k].value) - values.begin());
  } else {
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    names_ = std::move(all);
    remap_.resize(keys_.size());
    for (size_t k = 0; k < keys_.size(); ++k)
      remap_[k] = static_cast<int>(std::lower_bound(names_.begin(), names_.end(), keys_[k].text) - names_.begin());
  }
}

}  // namespace ssdr::io::detail

namespace ssdr::io::detail {

void set_class_names(Dataset& ds, const LabelCoder& coder) {
  ds.class_names = coder.names();
  ds.classes = static_cast<int>(ds.class_names.size());
  ds.integer_labels = coder.integers();
}

void set_classes(Dataset& ds, const LabelCoder& coder, std::vector<int> local_codes) {
  coder.to_global(local_codes);
  ds.labels = std::move(local_codes);
  set_class_names(ds, coder);
}

void code_integer_labels(Dataset& ds, const std::vector<int64_t>& raw, const LabelOptions& label,
                         const std::string& what, MPI_Comm comm) {
  LabelCoder coder(label);
  std::vector<int> codes(raw.size());
  for (size_t i = 0; i < raw.size(); ++i)
    codes[i] = coder.code_integer(raw[i], ds.X.row_start + static_cast<int64_t>(i));
  coder.finish(comm, what);
  set_classes(ds, coder, std::move(codes));
}

}  // namespace ssdr::io::detail
