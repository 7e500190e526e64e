#pragma once
/// \file parameters.hpp
/// The parameters a user may set, one spec each (SLEPc's EPSSetFromOptions_<type>, mlpack's
/// PARAM_* per binding): name, the papers' symbol, help line, range or choices, setter and
/// getter. This one table generates the command-line options of `fit`/`evaluate`, checks the
/// values of the command line, job files and --grid alike, fills the report's `parameters`,
/// lists the keys a job file may use, and (with MethodInfo::parameters, each method's own
/// list) refuses a parameter the chosen method does not use.
#include <nlohmann/json.hpp>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ssdr/data/preprocess.hpp"
#include "ssdr/kernels/feature_map.hpp"
#include "ssdr/methods/method.hpp"

namespace ssdr::methods {

/// What the parameters set: a fit's method options, preprocessing and kernel.
struct ParameterTarget {
  MethodOptions& method;
  data::PreprocessOptions& preprocess;
  kernels::KernelOptions& kernel;
};
/// The same, read-only (ParameterSpec::get).
struct ConstParameterTarget {
  const MethodOptions& method;
  const data::PreprocessOptions& preprocess;
  const kernels::KernelOptions& kernel;
};

/// What a parameter accepts (its value's kind).
enum class ParameterKind {
  integer,  ///< a whole number in [lo, hi]
  real,     ///< a finite number in the range (NaN and infinities never pass)
  choice,   ///< one of `choices`
  flag,     ///< true/false (a job's yes/no or 0/1; on the command line a switch)
  choice_or_real,  ///< one of `choices` or a finite number in the range (--shrinkage auto|0.1)
};

/// Which methods take a parameter (uses_parameter).
enum class ParameterScope {
  own,          ///< the methods that list it in MethodInfo::parameters
  every,        ///< every method: preprocessing and the length of W's columns
  kernel,       ///< every method that projects (the kernel map comes before the method)
  knn_backend,  ///< every method that searches neighbours: a kNN graph (MethodInfo::graph) or an LNP graph (lnp_graph)
};

/// One row of the parameter table: name, symbol, help, kind and range, and how it is set and
/// read. The table drives --help, validation, job files, --grid and Python's __init__.
struct ParameterSpec {
  std::string name;    ///< job-file key and --grid name; the option is --name with '_' → '-'
  std::string symbol;  ///< the papers' symbol ("α_u", "μ"), empty when none
  std::string doc;     ///< one help line, with the paper and equation
  ParameterKind kind = ParameterKind::real;
  ParameterScope scope = ParameterScope::own;
  double lo = 0;  ///< integer/real: lower end of the range
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
  std::vector<std::string> choices;  ///< choice: the accepted names
  /// The command-line spelling when it is not --name ("no-pca"); a flag's option is a switch
  /// that sets `switch_value`.
  std::string option;
  bool switch_value = true;
  /// A preprocessing or kernel parameter whose default no method changes (--precision):
  /// help and docs/methods.md show that default instead of "the method's".
  bool fixed_default = false;
  /// Sets a value that passed the kind and range checks.
  std::function<void(ParameterTarget&, const nlohmann::json&)> set;
  /// The value in effect, "default" when the method's paper value applies (reports, help).
  std::function<nlohmann::json(const ConstParameterTarget&)> get;

  /// "--alpha-u" (or "--no-pca").
  std::string cli_option() const;
  /// "a number in [0, 1)", "one of heat, cosine, binary, adaptive", ...
  std::string expected() const;
};

/// A parameter one method family declares in its own file (MethodFamily::parameters): an
/// own-scoped number (kind integer or real, range [lo, hi] with open ends as flagged) whose
/// value lives in MethodOptions::own under `name`; its value in effect is `paper_default`
/// (a number, or "default" when the method computes it) until set. Local.
ParameterSpec family_number(std::string name, std::string symbol, std::string doc, ParameterKind kind, double lo,
                            bool lo_open, double hi, bool hi_open, nlohmann::json paper_default);
/// The same for a flag (a switch --NAME on the command line), false until set. Local.
ParameterSpec family_flag(std::string name, std::string doc);

/// Every parameter, in help order: the shared ones (src/methods/parameters.cpp), with the
/// method families' own (src/methods/impls/, family by family) after the shared own-scoped
/// ones. Built on first use. Local.
/// \throws ssdr::Error (replicated) when two specs share a name or a family declares one that
///   is not own-scoped.
const std::vector<ParameterSpec>& parameter_table();
/// The spec of `name` (job-file spelling), nullptr when there is none. Local.
const ParameterSpec* lookup_parameter(const std::string& name);
/// "knn, weight, ..." for help and error texts. Local.
std::string parameter_list();

/// Checks `value` against the spec of `name` (kind, range, choices) and sets it in `target`.
/// `context` starts every message ("--alpha-u", "job.yaml: line 7"). Local.
/// \throws ssdr::Error (replicated: every rank checks the same value) "CONTEXT: parameter
///   NAME: expected ..., got ..." or "CONTEXT: unknown parameter 'NAME'; expected one of ...".
void set_parameter(ParameterTarget& target, const std::string& name, const nlohmann::json& value,
                   const std::string& context);

/// The report's parameters of `method`: {name: get()} for every parameter the method uses
/// except the kernel's (the caller records the kernel as one object). Local.
nlohmann::json parameter_values(const MethodInfo& method, const ConstParameterTarget& target);

}  // namespace ssdr::methods
