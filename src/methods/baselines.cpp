// Placeholder: implemented by the issue-3 work on this family.
#include "ssdr/core/error.hpp"
#include "ssdr/methods/factories.hpp"

namespace ssdr::methods {
std::unique_ptr<Method> make_olda() { throw Error("method not implemented yet", __FILE__, __LINE__, true); }
std::unique_ptr<Method> make_sda() { throw Error("method not implemented yet", __FILE__, __LINE__, true); }
std::unique_ptr<Method> make_pca() { throw Error("method not implemented yet", __FILE__, __LINE__, true); }
std::unique_ptr<Method> make_one_nn() { throw Error("method not implemented yet", __FILE__, __LINE__, true); }
}  // namespace ssdr::methods
