#pragma once
/// \file registry.hpp
/// How a built-in method enters the method table: each file of src/methods/impls/ (one
/// method family) defines its rows with SSDR_METHOD_FAMILY(stem), and the build lists the
/// files it finds (cmake/SsdrMethods.cmake generates ssdr_method_families.cpp, which calls
/// every family). Adding a file adds its methods; deleting it removes them, and nothing else
/// names them. Private to src/methods/ (not installed): a library user reaches the methods
/// through the table (methods/method.hpp: find_method, MethodInfo::make), and a method defined
/// outside the library registers its row with methods::MethodRegistration.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ssdr/methods/method.hpp"
#include "ssdr/methods/parameters.hpp"

namespace ssdr::methods {

/// The factory of a method class with a default constructor, for MethodRow's `make`.
template <class M>
std::unique_ptr<Method> make_method() {
  return std::make_unique<M>();
}

/// A row of the method table, written as its paper states it: the six fields every method
/// has, then what its paper sets. check_method_row checks the result when the table is built.
struct MethodRow {
  MethodInfo m;
  MethodRow(std::string name, std::string summary, std::string source, bool uses_unlabeled, bool projects,
            std::unique_ptr<Method> (*make)()) {
    m.name = std::move(name);
    m.summary = std::move(summary);
    m.source = std::move(source);
    m.uses_unlabeled = uses_unlabeled;
    m.projects = projects;
    m.make = make;
  }
  /// MethodInfo::parameters, by the options its fit reads.
  MethodRow&& parameters(std::vector<std::string> p) && { m.parameters = std::move(p); return std::move(*this); }
  /// MethodInfo::graph: the kNN graph its paper builds (method_graph).
  MethodRow&& graph(graph::GraphOptions g) && { m.graph = g; return std::move(*this); }
  /// MethodInfo::lnp_graph: the LNP graph its paper builds (method_lnp_graph).
  MethodRow&& lnp_graph(graph::LnpOptions g) && { m.lnp_graph = g; return std::move(*this); }
  /// MethodInfo::cv_grid: what its paper cross-validates.
  MethodRow&& cv_grid(ParameterGrid g) && { m.cv_grid = std::move(g); return std::move(*this); }
  /// MethodInfo::preprocess: its paper's preprocessing.
  MethodRow&& preprocess(data::PreprocessOptions p) && { m.preprocess = p; return std::move(*this); }
  /// MethodInfo::kernel: its paper's kernel.
  MethodRow&& kernel(kernels::KernelType type) && { m.kernel.type = type; return std::move(*this); }
  /// An eigenvector method whose solutions for smaller m are the leading columns.
  MethodRow&& nested() && { m.nested_dimensions = true; return std::move(*this); }
  /// The finished row.
  MethodInfo&& row() && { return std::move(m); }
};

/// A method family: the rows of one file of src/methods/impls/, and where they stand in
/// `ssdr methods` (families by ascending `order`, then by file name; rows in the family's
/// order). The built-in families use multiples of 10 (soda 10, sllda 20, tca 30, soge 40,
/// baselines 50, ssgda 60); a new family without a reason to stand elsewhere takes 100.
struct MethodFamily {
  int order = 100;
  std::vector<MethodInfo> rows;
  /// The parameters only this family's methods take (family_number, family_flag:
  /// parameters.hpp), which its rows list by name and its fits read from MethodOptions::own;
  /// the shared ones (graph, propagation, α, β, shrinkage, preprocessing, kernel) stay in
  /// src/methods/parameters.cpp.
  std::vector<ParameterSpec> parameters = {};
};

/// A listed family: its file's stem and its rows' function.
struct FamilyEntry {
  const char* stem;
  MethodFamily (*rows)();
};

/// Every family of src/methods/impls/, by file name (defined in the generated
/// ssdr_method_families.cpp). Local.
std::vector<FamilyEntry> method_families();

}  // namespace ssdr::methods

/// Defines the family of the file src/methods/impls/STEM.cpp: `SSDR_METHOD_FAMILY(tca) { return
/// {30, {rows...}}; }`. STEM must be the file's name without .cpp (the build checks that it is
/// a C identifier, and the link fails naming ssdr_method_family_STEM when the file defines
/// none). At namespace scope, outside any namespace.
#define SSDR_METHOD_FAMILY(stem) ::ssdr::methods::MethodFamily ssdr_method_family_##stem()
