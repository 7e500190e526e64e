#pragma once
/// ssdr version, set by CMake from project(VERSION).
#define SSDR_VERSION_STRING "0.1.0"
namespace ssdr {
inline constexpr const char* version() { return SSDR_VERSION_STRING; }
}  // namespace ssdr
