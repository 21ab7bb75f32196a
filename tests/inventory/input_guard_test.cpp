// input_guard: YAML shape limits counted on parse events (aliases by what they expand to),
// UTF-8 validation and the text check every stored string passes.
#include "loom/inventory/input_guard.hpp"
#include "loom/inventory/spec.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace loom {
namespace {

// Levels of `width` aliases to the level below: width^levels scalars once expanded.
std::string aliasBomb(int levels, int width) {
    std::string y = "a0: &a0 [";
    for (int k = 0; k < width; ++k) y += k ? ", x" : "x";
    y += "]\n";
    for (int i = 1; i < levels; ++i) {
        std::string p = "*a" + std::to_string(i - 1);
        y += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
        for (int k = 0; k < width; ++k) y += k ? ", " + p : p;
        y += "]\n";
    }
    return y;
}

TEST(YamlShape, CountsEveryNodeAndKey) {
    EXPECT_TRUE(checkYamlShape("a: [1, 2, 3]\n", {.maxNodes = 6}));  // map, a, seq, 3 scalars
    auto r = checkYamlShape("a: [1, 2, 3]\n", {.maxNodes = 5});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::TooLarge);
    EXPECT_EQ(r.error().line, 1);
}

TEST(YamlShape, AliasesCountOncePerUse) {
    // 10 + 10*10 + ... : the expanded size, not the 40 nodes written.
    std::string y = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: [*a, *a, *a, *a, *a]\n";
    // map(1) + a(1) + seq(1) + 10 + b(1) + seq(1) + 5 * 11 = 70
    EXPECT_TRUE(checkYamlShape(y, {.maxNodes = 70}));
    EXPECT_FALSE(checkYamlShape(y, {.maxNodes = 69}));
}

TEST(YamlShape, AliasBombStopsAtTheLimitFast) {
    auto bomb = aliasBomb(10, 10);  // 10^10 scalars
    EXPECT_LT(bomb.size(), 600u);
    auto t0 = std::chrono::steady_clock::now();
    auto r = checkYamlShape(bomb, {.maxNodes = 200'000});
    auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::TooLarge);
    EXPECT_NE(r.error().message.find("aliases count once per use"), std::string::npos);
    EXPECT_LT(took, std::chrono::milliseconds(500));
}

TEST(YamlShape, DepthIncludesAliasedSubtrees) {
    std::string y = "a: &a [[[[x]]]]\nb: [[[*a]]]\n";  // b reaches 1 + 3 + 4 = 8 levels
    EXPECT_TRUE(checkYamlShape(y, {.maxDepth = 8}));
    auto r = checkYamlShape(y, {.maxDepth = 7});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_EQ(r.error().line, 2);
}

TEST(YamlShape, SyntaxErrorsAndDocumentsNameTheLine) {
    auto bad = checkYamlShape("a: 1\nb: [1, 2\nc: 3\n");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, Errc::InvalidArgument);
    EXPECT_EQ(bad.error().message.rfind("YAML syntax error: ", 0), 0u) << bad.error().message;
    auto two = checkYamlShape("a: 1\n---\nb: 2\n");
    ASSERT_FALSE(two);
    EXPECT_EQ(two.error().line, 2);  // the "---" that starts the second one
    EXPECT_TRUE(checkYamlShape("a: 1\n---\nb: 2\n", {.maxDocuments = 2}));
    auto undefinedAlias = checkYamlShape("a: *nope\n");
    EXPECT_FALSE(undefinedAlias);
}

TEST(YamlShape, TheSpecParserRefusesABombBeforeLoadingIt) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = inventory::parseClusterSpec("apiVersion: loom/v1\nkind: Cluster\n" + aliasBomb(12, 10));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::TooLarge);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(Utf8, ValidAndInvalidSequences) {
    EXPECT_EQ(invalidUtf8At(""), std::nullopt);
    EXPECT_EQ(invalidUtf8At("plain ascii, long enough for the 8-byte path"), std::nullopt);
    EXPECT_EQ(invalidUtf8At("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::nullopt);
    EXPECT_EQ(invalidUtf8At("abc\xff"), 3u);
    EXPECT_EQ(invalidUtf8At("0123456789abcdef\x80"), 16u);   // lone continuation after a run
    EXPECT_EQ(invalidUtf8At("\xc0\xaf"), 0u);                 // overlong '/'
    EXPECT_EQ(invalidUtf8At("\xe0\x80\xaf"), 0u);             // overlong, 3 bytes
    EXPECT_EQ(invalidUtf8At("\xed\xa0\x80"), 0u);             // UTF-16 surrogate
    EXPECT_EQ(invalidUtf8At("\xf4\x90\x80\x80"), 0u);         // above U+10FFFF
    EXPECT_EQ(invalidUtf8At("ab\xe2\x82"), 2u);               // truncated
    EXPECT_EQ(invalidUtf8At(std::string("\xff\xfe{\0\"\0", 6)), 0u);  // UTF-16 with a BOM
}

TEST(CheckText, NamesTheByteAndLine) {
    EXPECT_TRUE(checkText("tab\tand\nnewline", "x"));
    auto nul = checkText(std::string("a\0b", 3), "the value", "spec.site.description", 8);
    ASSERT_FALSE(nul);
    EXPECT_EQ(nul.error().message, "the value contains the control character 0x00 at byte 1");
    EXPECT_EQ(nul.error().path, "spec.site.description");
    EXPECT_EQ(nul.error().line, 8);
    auto del = checkText("line one\nline \x7f", "the body");
    ASSERT_FALSE(del);
    EXPECT_EQ(del.error().message,
              "the body contains the control character 0x7F at byte 14 (line 2)");
    auto bad = checkText("\xc3(", "q");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "q is not valid UTF-8 at byte 0");
}

}  // namespace
}  // namespace loom
