// The cluster spec's checks across sections, run by SpecParser (spec_parse.cpp) once every
// section is read: the naming patterns (the placeholders each may use, and those its names
// need to be unique), the size the spec expands to against SpecLimits::maxEntities, and the
// port capacity of every switch tier. Like the readers, they report a bad spec by throwing
// yaml::Failure with the document path and line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/inventory/spec.hpp"

namespace loom::inventory::detail {

// spec.naming's keys: the NamingSpec member each sets and the placeholders it may use.
struct PatternField {
    std::string_view key;
    std::string NamingSpec::*field;
    std::uint8_t allowed;
};
const std::vector<PatternField>& patternFields();

// spec.naming key -> its line in the document, for the messages.
using NamingLines = std::unordered_map<std::string, int>;

// Compiles every pattern (after defaulting naming.fsw) and checks that the patterns which
// name many things tell them apart.
void checkPatterns(ClusterSpec& spec, NamingLines& lines);
// Refuses specs that would expand to more than limits.maxEntities before expanding them.
void checkSize(const ClusterSpec& spec, const SpecLimits& limits);
// Port capacity of every tier, on the nominal layout (model overrides are checked again
// after expansion).
void checkCapacity(const ClusterSpec& spec);

}  // namespace loom::inventory::detail
