// YAML <-> JSON for the HTTP layer: request bodies may be YAML, responses are YAML when asked.
//
// Errors name the line (1-based) and, for YAML structure problems, the document path, so a
// bad body gets the same kind of 400 as a bad cluster spec. Limits, enforced while parsing
// (before a tree is built): nesting depth 64, 200,000 values (YAML aliases count once per
// use, so an alias bomb stops at the limit), valid UTF-8 only.
#pragma once

#include "loom/inventory/error.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace loom::client {

// Plain YAML scalars become numbers, booleans or null when they read as such; quoted
// scalars stay strings. Multiple documents or a YAML alias cycle are rejected.
Result<nlohmann::json> yamlToJson(std::string_view text);
// JSON text; errors carry the line of the offending byte.
Result<nlohmann::json> parseJsonText(std::string_view text);
// Block-style YAML of a JSON value (keys in JSON order), ending with a newline.
std::string jsonToYaml(const nlohmann::json& value);

}  // namespace loom::client
