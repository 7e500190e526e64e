#pragma once
/// \file factories.hpp
/// One factory per method; table.cpp lists them by name. Each method lives in its own
/// src/methods/<family>.cpp. Private to src/methods/ (not installed): a library user reaches
/// the methods through the method table (methods/method.hpp: find_method, MethodInfo::make).
#include <memory>

#include "ssdr/methods/method.hpp"

namespace ssdr::methods {

// soda-nie2009 (src/methods/soda.cpp)
/// The method objects of the method table, one factory per method (each documented in its
/// source file and in docs/methods.md). Local.
std::unique_ptr<Method> make_soda();
std::unique_ptr<Method> make_oda();
std::unique_ptr<Method> make_lda();
std::unique_ptr<Method> make_lp();
// sllda-zhao2014 (src/methods/sllda.cpp)
std::unique_ptr<Method> make_sl_lda();
std::unique_ptr<Method> make_sl_lda_wls();
// tca-liu2008 (src/methods/tca.cpp)
std::unique_ptr<Method> make_tca();
std::unique_ptr<Method> make_otca();
// soge-liu2017 (src/methods/soge.cpp)
std::unique_ptr<Method> make_soge();
// baselines (src/methods/baselines.cpp)
std::unique_ptr<Method> make_olda();
std::unique_ptr<Method> make_sda();
std::unique_ptr<Method> make_pca();
std::unique_ptr<Method> make_one_nn();
// ssgda-zhang-yeung (src/methods/ssgda.cpp)
std::unique_ptr<Method> make_ssgda();
std::unique_ptr<Method> make_m_ssgda();

}  // namespace ssdr::methods
