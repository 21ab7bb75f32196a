// Loom's version: the one place it is written. The top-level CMakeLists.txt reads it for
// project(VERSION); --version, the Server header, the stream's hello, the console and
// loomctl's User-Agent take it from here.
#pragma once

#include <string_view>

// A macro as well, so that literals concatenate: "loomd " LOOM_VERSION.
#define LOOM_VERSION "0.1.0"

namespace loom {
inline constexpr std::string_view kVersion = LOOM_VERSION;
}  // namespace loom
