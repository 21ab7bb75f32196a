// appendJsonString: the one hand-written JSON string escaper (db bulk rows, fabric exports).
#include "loom/inventory/json_text.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace {

std::string asJsonString(std::string_view s) {
    std::string out;
    loom::appendJsonString(out, s);
    return out;
}

TEST(JsonText, EscapesQuotesBackslashesAndControlCharacters) {
    EXPECT_EQ(asJsonString("z1-r001"), "\"z1-r001\"");
    EXPECT_EQ(asJsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
    EXPECT_EQ(asJsonString("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
    EXPECT_EQ(asJsonString(std::string_view("\0\x01\x1f", 3)), "\"\\u0000\\u0001\\u001f\"");
    EXPECT_EQ(asJsonString("héllo <img src=x>"), "\"héllo <img src=x>\"");  // UTF-8 and markup as is
}

TEST(JsonText, EveryByteStringRoundTripsThroughAJsonParser) {
    // All 256 byte values outside the high half (which must be valid UTF-8 for a parser).
    std::string all;
    for (int c = 0; c < 0x80; ++c) all += static_cast<char>(c);
    all += "ünïcödé ✓";
    const auto parsed = nlohmann::json::parse(asJsonString(all));
    EXPECT_EQ(parsed.get<std::string>(), all);
}

}  // namespace
