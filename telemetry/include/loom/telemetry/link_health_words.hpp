// A link's health in one word, the same in every view (docs/api.md, "Link health"): REST's
// `health` of a backend link is the stream's link.health value (telemetry_hub.hpp,
// LinkHealthValue) in these words, and loomd serves them to the clients (GET /api/v1/legends,
// `words`) so the console and the web name the values alike.
//
//   linkHealthWord(kLinkDrained) == "drained"; parseLinkHealthWord("no data") == kNoData
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace loom::telemetry {

// up, degraded, down, drained, not in service; anything else (255) is "no data".
std::string_view linkHealthWord(std::uint8_t value);
// The value of a word, also "ok" (up) and "failed" (down), the words REST used before; nullopt
// for any other word.
std::optional<std::uint8_t> parseLinkHealthWord(std::string_view word);

}  // namespace loom::telemetry
