// Placeholder: implemented by the issue-3 work on this family.
#include "ssdr/core/error.hpp"
#include "ssdr/methods/factories.hpp"

namespace ssdr::methods {
std::unique_ptr<Method> make_sl_lda() { throw Error("method not implemented yet", __FILE__, __LINE__, true); }
std::unique_ptr<Method> make_sl_lda_wls() { throw Error("method not implemented yet", __FILE__, __LINE__, true); }
}  // namespace ssdr::methods
