#include "loom/telemetry/prom_text.hpp"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace loom::telemetry {
namespace {

struct Got {
    std::string name;
    std::vector<std::pair<std::string, std::string>> labels;
    double value;
    bool hasTs;
    std::int64_t ts;
    std::uint32_t line;
};

Result<std::vector<Got>> parseAll(std::string_view body, const PromLimits& lim = {}) {
    std::vector<Got> out;
    auto r = parsePromText(
        body,
        [&](const PromSample& s) {
            Got g{std::string(s.name), {}, s.value, s.hasTimestamp, s.timestampMs, s.line};
            for (std::size_t i = 0; i < s.labelCount; ++i)
                g.labels.emplace_back(std::string(s.labels[i].name),
                                      unescapeLabelValue(s.labels[i].value));
            out.push_back(std::move(g));
        },
        lim);
    if (!r) return fail(r.error());
    return out;
}

TEST(PromText, DcgmExporterOutput) {
    const char* body = R"(# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-abc",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="z1-r001-h0",DCGM_FI_DRIVER_VERSION="535.104.12"} 97
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-def",Hostname="z1-r001-h0"} 61.5 1700000000000

# a plain comment
loom_port_in_octets_total{switch="z1-r001-rtsw",port="p17",} 1.5e12
)";
    auto r = parseAll(body);
    ASSERT_TRUE(r) << r.error().toString();
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0].name, "DCGM_FI_DEV_GPU_UTIL");
    EXPECT_EQ((*r)[0].labels.size(), 6u);
    EXPECT_EQ((*r)[0].labels[4].first, "Hostname");
    EXPECT_EQ((*r)[0].labels[4].second, "z1-r001-h0");
    EXPECT_EQ((*r)[0].value, 97);
    EXPECT_EQ((*r)[0].line, 3u);
    EXPECT_FALSE((*r)[0].hasTs);
    EXPECT_EQ((*r)[1].value, 61.5);
    EXPECT_TRUE((*r)[1].hasTs);
    EXPECT_EQ((*r)[1].ts, 1700000000000);
    EXPECT_EQ((*r)[2].value, 1.5e12);
    EXPECT_EQ((*r)[2].labels.size(), 2u);
    EXPECT_EQ((*r)[2].line, 7u);
}

TEST(PromText, SpecialValuesEscapesBlanksCrlf) {
    auto r = parseAll("a NaN\nb +Inf\nc -Inf\nd inf\ne -0.5\nf 1e-3\ng{x=\"q\\\"\\\\\\n\"} 2\r\n"
                      "h  {  y = \"1\" , z=\"2\" }\t3\t-5\ni{} 4\nj 0x10\n" + std::string("k .5\n"));
    ASSERT_FALSE(r);  // 0x10 is not a Prometheus float
    EXPECT_EQ(r.error().line, 10);
    r = parseAll("a NaN\nb +Inf\nc -Inf\nd inf\ne -0.5\nf 1e-3\ng{x=\"q\\\"\\\\\\n\"} 2\r\n"
                 "h  {  y = \"1\" , z=\"2\" }\t3\t-5\ni{} 4\nk .5");
    ASSERT_TRUE(r) << r.error().toString();
    ASSERT_EQ(r->size(), 10u);
    EXPECT_TRUE(std::isnan((*r)[0].value));
    EXPECT_EQ((*r)[1].value, INFINITY);
    EXPECT_EQ((*r)[2].value, -INFINITY);
    EXPECT_EQ((*r)[3].value, INFINITY);
    EXPECT_EQ((*r)[4].value, -0.5);
    EXPECT_EQ((*r)[5].value, 1e-3);
    EXPECT_EQ((*r)[6].labels[0].second, "q\"\\\n");
    EXPECT_EQ((*r)[7].labels[1].second, "2");
    EXPECT_EQ((*r)[7].ts, -5);
    EXPECT_EQ((*r)[8].labels.size(), 0u);
    EXPECT_EQ((*r)[9].value, 0.5);
}

TEST(PromText, EmptyBodyAndCommentsOnly) {
    auto r = parseAll("");
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->empty());
    r = parseAll("\n\n# just a comment\n#\n");
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->empty());
}

struct BadCase {
    const char* body;
    const char* message;  // exact
};

class PromTextMalformed : public ::testing::TestWithParam<BadCase> {};

TEST_P(PromTextMalformed, ExactLineAndColumn) {
    auto r = parseAll(GetParam().body);
    ASSERT_FALSE(r) << GetParam().body;
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_EQ(r.error().message, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PromTextMalformed,
    ::testing::Values(
        BadCase{"ok 1\nfoo{bar} 1\n", "line 2, column 8: expected '=' after label name"},
        BadCase{"foo{bar=1} 1", "line 1, column 9: expected '\"' to open the label value"},
        BadCase{"foo{bar=\"1} 1", "line 1, column 9: unterminated label value"},
        BadCase{"foo{bar=\"1\" baz=\"2\"} 1",
                "line 1, column 13: expected ',' or '}' after label value"},
        BadCase{"foo{bar=\"\\t\"} 1",
                "line 1, column 10: invalid escape sequence '\\t' in label value (allowed: \\\\ "
                "\\\" \\n)"},
        BadCase{"foo{a=\"1\",a=\"2\"} 1", "line 1, column 11: duplicate label name \"a\""},
        BadCase{"foo{1a=\"1\"} 1", "line 1, column 5: expected label name or '}', found '1'"},
        BadCase{"foo{", "line 1, column 5: expected label name or '}'"},
        BadCase{"foo", "line 1, column 4: expected a value after metric \"foo\""},
        BadCase{"foo abc", "line 1, column 5: invalid value \"abc\""},
        BadCase{"foo 1 12.5", "line 1, column 7: invalid timestamp \"12.5\" (integer milliseconds)"},
        BadCase{"foo 1 2 3", "line 1, column 9: unexpected text after the timestamp"},
        BadCase{"9foo 1", "line 1, column 1: expected metric name, found '9'"},
        BadCase{"foo-bar 1", "line 1, column 4: unexpected '-' in metric name"},
        BadCase{"# TYPE foo gauge\n# TYPE foo widget\n",
                "line 2, column 12: unknown metric type \"widget\""},
        BadCase{"# HELP\n", "line 1, column 7: expected metric name after # HELP"},
        BadCase{"a 1\nb 2\n\x01\x02\x03", "line 3, column 1: expected metric name, found byte 0x01"},
        BadCase{"foo{x=\"a\"}\x00 1", "line 1, column 11: expected a value after metric \"foo\""},
        // Not UTF-8: found in one pass before any sample, named by line and column.
        BadCase{"a 1\nfoo{x=\"\xff\"} 1\n", "line 2, column 8: byte 0xff is not valid UTF-8"},
        BadCase{"\xc3\x28 1", "line 1, column 1: byte 0xc3 is not valid UTF-8"},
        BadCase{"a 1\n# HELP a caf\xe9\n", "line 2, column 13: byte 0xe9 is not valid UTF-8"}),
    // Stable names: the default would print the parameter's bytes (pointers, which change
    // from run to run, so ctest's discovered names would match nothing).
    [](const ::testing::TestParamInfo<BadCase>& info) { return "case" + std::to_string(info.index); });

TEST(PromText, LimitsAreEnforced) {
    PromLimits lim;
    lim.maxLineBytes = 100;
    auto r = parseAll("a 1\n" + std::string(200, 'x') + " 1\n", lim);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "line 2, column 101: line longer than 100 bytes");
    EXPECT_EQ(r.error().line, 2);

    lim = {};
    lim.maxBodyBytes = 10;
    r = parseAll("a 1\nb 2\nc 3\n", lim);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::TooLarge);

    lim = {};
    lim.maxLabelValueBytes = 4;
    r = parseAll("a{x=\"12345\"} 1", lim);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "line 1, column 6: label value longer than 4 bytes");
}

TEST(PromText, HostileInputs) {
    // A million labels on one line: stopped by the line limit, not by memory.
    std::string many = "m{";
    for (int i = 0; i < 1000000; ++i) many += "l" + std::to_string(i) + "=\"v\",";
    many += "} 1\n";
    auto r = parseAll(many);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("line longer than"), std::string::npos);
    // ...and by the label cap when the line limit is lifted.
    PromLimits lim;
    lim.maxLineBytes = many.size();
    r = parseAll(many, lim);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "line 1, column 505: more than 64 labels");

    // A huge single line without newline.
    std::string huge(8u << 20, 'a');
    r = parseAll(huge);
    ASSERT_FALSE(r);

    // Random binary garbage never crashes and always reports a line.
    std::mt19937 rng(42);
    for (int round = 0; round < 2000; ++round) {
        std::string g(rng() % 300, '\0');
        for (auto& c : g) c = static_cast<char>(rng());
        auto rr = parseAll(g);
        if (!rr) { EXPECT_GT(rr.error().line, 0); }
    }
    // Mutations of a valid body: every prefix and every one-byte corruption is handled.
    std::string good = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"h\\\"x\"} 97 123\n";
    for (std::size_t i = 0; i <= good.size(); ++i) (void)parseAll(good.substr(0, i));
    for (std::size_t i = 0; i < good.size(); ++i)
        for (char c : {'"', '\\', '{', '}', ',', '=', ' ', '\n', '\0', '#'}) {
            std::string m = good;
            m[i] = c;
            (void)parseAll(m);
        }
}

}  // namespace
}  // namespace loom::telemetry
