// A method family written exactly as a built-in one (docs/design.md, "Adding a method"): this
// file, copied into src/methods/impls/, adds the method `first-coordinates` to ssdr. The test
// binary lists tests/methods/ with the generator that lists src/methods/impls/
// (cmake/SsdrMethods.cmake, as test_method_families()), and tests/unit/added_method_test.cpp
// fits and predicts it through the Estimator and the pipeline of `ssdr fit`.
//
// The method: the first m centered input coordinates, W = the first m columns of the d'×d'
// identity (m = c − 1 by default). Unit columns.
#include <memory>

#include "methods/registry.hpp"
#include "ssdr/methods/method.hpp"

namespace ssdr::methods {
namespace {

class FirstCoordinates final : public Method {
 public:
  FitResult fit(const MethodInfo& row, const TrainingData& data, const MethodOptions& o, Timings&) override {
    const int64_t m = resolve_dim(o.dim, data.classes, data.X.cols);
    FitResult out;
    out.W = Dense(data.X.cols, m);
    for (int64_t j = 0; j < m; ++j) out.W(j, j) = 1.0;
    out.info["fitted_as"] = row.name;
    return out;
  }
};

/// Its preprocessing centers without PCA, so the coordinates are the input's.
data::PreprocessOptions no_pca() {
  data::PreprocessOptions p;
  p.pca = false;
  return p;
}

}  // namespace
}  // namespace ssdr::methods

/// Its one row: no own parameters, no graph, nothing to cross-validate.
SSDR_METHOD_FAMILY(first_coordinates) {
  using namespace ssdr::methods;
  return {100,
          {
              MethodRow("first-coordinates", "the first m centered input coordinates (a method defined by a test)",
                        "tests/methods/first_coordinates.cpp", false, true, &make_method<FirstCoordinates>)
                  .preprocess(no_pca()).row(),
          }};
}
