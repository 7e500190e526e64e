// Placeholder: implemented by the issue-4 work on SSGDA.
#include "ssdr/core/error.hpp"
#include "ssdr/methods/factories.hpp"

namespace ssdr::methods {
std::unique_ptr<Method> make_ssgda() { throw Error("method not implemented yet", __FILE__, __LINE__, true); }
std::unique_ptr<Method> make_m_ssgda() { throw Error("method not implemented yet", __FILE__, __LINE__, true); }
}  // namespace ssdr::methods
