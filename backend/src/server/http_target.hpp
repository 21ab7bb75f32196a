// The request target of an HTTP request, decoded: the path and the query parameters, percent-
// decoded, and the check that what decoding produced is text (UTF-8 without NUL or control
// characters). Pure functions, no Beast or Asio: the session uses them on every request and
// bench/fuzz/fuzz_http_request.cpp feeds them hostile targets.
#pragma once

#include "loom/backend/router.hpp"
#include "loom/inventory/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace loom::backend {

// "%41" -> "A"; a '%' not followed by two hex digits stays as is; '+' is a space when asked
// (query strings).
std::string percentDecode(std::string_view s, bool plusIsSpace);
// "a=1&b=%20x&c" -> {{"a","1"},{"b"," x"},{"c",""}} (empty parts skipped).
Pairs parseQuery(std::string_view q);
// The decoded path and query of a request target such as "/api/v1/racks?limit=10".
std::pair<std::string, Pairs> splitTarget(std::string_view target);
// An InvalidArgument naming the part ("path", "query" or the parameter) when a decoded path
// or query is not text; nullopt when all is well.
std::optional<Error> checkTarget(std::string_view path, const Pairs& query);

}  // namespace loom::backend
