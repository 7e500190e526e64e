// The method table: one row per method (name, help text, paper, factory, its own parameters,
// graph, cross-validation grid, preprocessing and kernel defaults), gathered from the method
// families of src/methods/impls/ (registry.hpp) and the rows registered from outside the
// library (MethodRegistration). It drives `ssdr methods`, --help, validation of --method and
// its parameters, --select-by cv's default grid and dispatch.
#include <algorithm>

#include "ssdr/core/error.hpp"
#include "registry.hpp"
#include "ssdr/methods/method.hpp"
#include "ssdr/methods/parameters.hpp"

namespace ssdr::methods {

namespace {

/// The built-in rows: every family of src/methods/impls/ (method_families, generated from the
/// folder) by ascending MethodFamily::order, then file name; each family's rows in its order.
MethodTable build_table() {
  struct Listed {
    int order;
    std::string stem;
    std::vector<MethodInfo> rows;
  };
  std::vector<Listed> families;
  for (const FamilyEntry& f : method_families()) {
    MethodFamily family = f.rows();
    families.push_back({family.order, f.stem, std::move(family.rows)});
  }
  std::stable_sort(families.begin(), families.end(), [](const Listed& a, const Listed& b) {
    return a.order != b.order ? a.order < b.order : a.stem < b.stem;
  });
  MethodTable table;
  for (Listed& f : families)
    for (MethodInfo& row : f.rows) table.push_back(std::move(row));
  for (const MethodInfo& m : table) check_method_row(m);
  for (size_t i = 0; i < table.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (table[i].name == table[j].name)
        throw Error("method table: " + table[i].name + " has two rows", __FILE__, __LINE__, true);
  return table;
}

MethodTable& table() {
  static MethodTable t = build_table();
  return t;
}

bool lists(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

const MethodTable& method_table() { return table(); }

FitResult MethodInfo::fit(const TrainingData& data, const MethodOptions& options, Timings& timings) const {
  return make()->fit(*this, data, options, timings);
}

std::string method_names() {
  std::string s;
  for (const auto& m : method_table()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

const MethodInfo& find_method(const std::string& name) {
  for (const auto& m : method_table())
    if (m.name == name) return m;
  throw Error("--method: unknown method '" + name + "'; expected one of " + method_names(), __FILE__,
              __LINE__, true);
}

graph::GraphOptions method_graph(const MethodInfo& method, const MethodOptions& o) {
  if (!method.graph)
    throw Error("method table: " + method.name + " builds no kNN graph (its row has none)", __FILE__, __LINE__, true);
  graph::GraphOptions g = *method.graph;
  if (o.knn_given) g.k = o.graph.k;
  if (o.weight_given) g.weight = o.graph.weight;
  if (o.graph.sigma_s != 0) {  // --sigma-s: the user asks for eq. (42) with this s
    g.sigma_s = o.graph.sigma_s;
    g.sigma_rule = graph::SigmaRule::soda_eq42;
  }
  if (o.graph.sigma != 0) g.sigma = o.graph.sigma;
  g.knn_method = o.graph.knn_method;  // the run's choices, not the paper's graph
  g.knn_seed = o.graph.knn_seed;
  g.knn_recall_sample = o.graph.knn_recall_sample;
  g.nndescent_memory_mib = o.graph.nndescent_memory_mib;
  return g;
}

graph::LnpOptions method_lnp_graph(const MethodInfo& method, const MethodOptions& o) {
  if (!method.lnp_graph)
    throw Error("method table: " + method.name + " builds no LNP graph (its row has none)", __FILE__, __LINE__, true);
  graph::LnpOptions g = *method.lnp_graph;
  if (o.knn_given) g.k = o.graph.k;
  g.knn_method = o.graph.knn_method;  // the run's search, as method_graph's
  g.knn_seed = o.graph.knn_seed;
  g.knn_recall_sample = o.graph.knn_recall_sample;
  g.nndescent_memory_mib = o.graph.nndescent_memory_mib;
  return g;
}

void check_method_row(const MethodInfo& row) {
  auto fail = [&](const std::string& what) {
    throw Error("method table: " + (row.name.empty() ? std::string("a row") : row.name) + ": " + what, __FILE__,
                __LINE__, true);
  };
  if (row.name.empty()) fail("no name");
  for (char ch : row.name)
    if (ch == ' ' || ch == '\t' || ch == '\n') fail("a name with white space");
  if (row.summary.empty() || row.source.empty()) fail("no summary or no source (undocumented)");
  if (row.make == nullptr) fail("no factory");
  for (size_t i = 0; i < row.parameters.size(); ++i) {  // a method's own parameter is an own-scoped spec
    const std::string& p = row.parameters[i];
    const ParameterSpec* spec = lookup_parameter(p);
    if (spec == nullptr || spec->scope != ParameterScope::own) fail("lists '" + p + "', which is no own parameter");
    if (std::find(row.parameters.begin(), row.parameters.begin() + static_cast<std::ptrdiff_t>(i), p) !=
        row.parameters.begin() + static_cast<std::ptrdiff_t>(i))
      fail("lists '" + p + "' twice");
  }
  const bool graph_parameters = lists(row.parameters, "knn") && lists(row.parameters, "weight") &&
                                lists(row.parameters, "sigma_s");
  if (row.graph && !graph_parameters)
    fail("has a graph but not its parameters knn, weight and sigma_s (a graph it does not build)");
  if (!row.graph && graph_parameters) fail("has the parameters knn, weight and sigma_s but no graph");
  if (!row.graph && (lists(row.parameters, "weight") || lists(row.parameters, "sigma_s")))
    fail("has weight or sigma_s but no graph");
  if (row.graph && row.lnp_graph) fail("has a kNN graph and an LNP graph");
  if (row.lnp_graph && !lists(row.parameters, "knn")) fail("has an LNP graph but not its parameter knn");
  if (lists(row.parameters, "knn") && !row.graph && !row.lnp_graph)
    fail("has the parameter knn but no graph (its k would come from nowhere)");
  for (const auto& [name, values] : row.cv_grid) {
    if (!uses_parameter(row, name)) fail("cross-validates '" + name + "', which is not one of its parameters");
    if (values.empty()) fail("cross-validates '" + name + "' over no values");
    MethodOptions mo;
    data::PreprocessOptions pre;
    kernels::KernelOptions ko;
    ParameterTarget target{mo, pre, ko};
    for (const auto& v : values) set_parameter(target, name, v, "method table: " + row.name + ": cv_grid");
  }
}

MethodRegistration::MethodRegistration(MethodInfo row) {
  check_method_row(row);
  for (const auto& m : method_table())
    if (m.name == row.name)
      throw Error("method table: " + row.name + " has a row already", __FILE__, __LINE__, true);
  table().push_back(std::move(row));
  row_ = &table().back();
}

MethodRegistration::~MethodRegistration() {
  // Registrations end in reverse order, so this row is the last: erasing it moves no other.
  MethodTable& t = table();
  for (auto it = t.begin(); it != t.end(); ++it)
    if (&*it == row_) {
      t.erase(it);
      return;
    }
}

bool uses_parameter(const MethodInfo& method, const std::string& name) {
  if (name == "dim") return true;
  const ParameterSpec* p = lookup_parameter(name);
  if (p == nullptr) return false;
  switch (p->scope) {
    case ParameterScope::every: return true;
    case ParameterScope::kernel: return method.projects;
    // The methods that search neighbours: a kNN graph's, or an LNP graph's (method_lnp_graph).
    case ParameterScope::knn_backend: return method.graph.has_value() || method.lnp_graph.has_value();
    case ParameterScope::own: return lists(method.parameters, name);
  }
  return false;
}

bool propagates_labels(const MethodInfo& method) { return lists(method.parameters, "alpha_u"); }

void require_parameter(const MethodInfo& method, const std::string& name, const std::string& spelling) {
  if (uses_parameter(method, name)) return;
  std::string own;
  for (const auto& p : method.parameters) own += (own.empty() ? "" : ", ") + p;
  throw Error(spelling + " is not a parameter of " + method.name + " (its own parameters: " +
                  (own.empty() ? "none" : own) + ")",
              __FILE__, __LINE__, true);
}

int64_t resolve_dim(int64_t requested, int classes, int64_t d) {
  const int64_t m = requested > 0 ? requested : std::min<int64_t>(std::max(classes - 1, 1), d);
  SSDR_REQUIRE(m >= 1 && m <= d, "--dim " + std::to_string(m) + " must be between 1 and the " +
                                     std::to_string(d) + " dimensions left after preprocessing");
  return m;
}

}  // namespace ssdr::methods
