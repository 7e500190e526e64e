// Distributed NN-descent (Dong, Charikar, Li 2011). Placeholder until the backend lands.
#include "ssdr/graph/nndescent.hpp"

#include "ssdr/core/error.hpp"

namespace ssdr::graph {

KnnLists nndescent_search(const DistMatrix& X, int, const NNDescentOptions&) {
  SSDR_CHECK_COLLECTIVE(X.comm, false, "--knn-method nndescent: not available in this build");
  return {};
}

}  // namespace ssdr::graph
