#include "loom/jobs/hostlist.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace loom::jobs {
namespace {

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v) s += (s.empty() ? "" : " ") + x;
    return s;
}

std::string expanded(std::string_view text) {
    auto r = expandHostlist(text);
    EXPECT_TRUE(r.has_value()) << text << ": " << r.error().toString();
    return r ? joined(*r) : std::string();
}

// Recorded from the real Slurm: `SLURM_CONF=<a minimal slurm.conf> scontrol show hostnames X`,
// slurm-wlm 22.05.8 (Debian 12). Not run in CI: the outputs are pasted here.
TEST(Hostlist, MatchesScontrolShowHostnames) {
    struct Case {
        const char* in;
        const char* scontrol;
    } cases[] = {
        {"z1-r[001-003]-h[0-1]",
         "z1-r001-h0 z1-r001-h1 z1-r002-h0 z1-r002-h1 z1-r003-h0 z1-r003-h1"},
        {"h[08-10]", "h08 h09 h10"},
        {"h[8-10]", "h8 h9 h10"},
        {"h[1-010]", "h1 h2 h3 h4 h5 h6 h7 h8 h9 h10"},
        {"a[1-2]b[3-4],c", "a1b3 a1b4 a2b3 a2b4 c"},
        {"h[5-05]", "h5"},
        {"h,,g", "h g"},
        {"h[01-3]", "h01 h02 h03"},
        {"h[099-101]", "h099 h100 h101"},
        {"h[1-2],h1", "h1 h2 h1"},
    };
    for (auto& c : cases) EXPECT_EQ(expanded(c.in), c.scontrol) << c.in;
}

// scontrol answers "Invalid hostlist" for these (also recorded); Loom's error names the column.
TEST(Hostlist, RejectsWhatScontrolRejectsNamingTheColumn) {
    struct Case {
        const char* in;
        const char* message;
    } cases[] = {
        {"h[1-2[3-4]]", "column 6: nested '['"},
        {"h[]", "column 3: empty range"},
        {"h[3-1]", "column 5: range ends at 1, below its start 3"},
        {"h[1-3]-[a]", "column 9: expected a number, got 'a'"},
        {"h[-3]", "column 3: expected a number, got '-'"},
    };
    for (auto& c : cases) {
        auto r = expandHostlist(c.in);
        ASSERT_FALSE(r.has_value()) << c.in;
        EXPECT_EQ(r.error().code, Errc::InvalidArgument) << c.in;
        EXPECT_NE(r.error().message.find(c.message), std::string::npos)
            << c.in << " -> " << r.error().message;
    }
}

// Stricter than Slurm where Slurm guesses (it reads "h[1-3" as "h]" and "h[1-]" as "h1").
TEST(Hostlist, HostileInputIsAnErrorNamingTheColumn) {
    struct Case {
        std::string in;
        std::string message;
    } cases[] = {
        {"h[1-3", "column 2: '[' is never closed"},
        {"h[1-]", "column 5: expected a number, got ']'"},
        {"h1]", "column 3: ']' without '['"},
        {"h 1", "column 2: byte 0x20 is not allowed"},
        {std::string("h\0x", 3), "column 2: byte 0x00 is not allowed"},
        {"h[1;2]", "column 4: expected ',', '-' or ']'"},
        {"h[1234567890]", "column 3: number of more than 9 digits"},
        {"", "empty hostlist"},
        {",", "empty hostlist"},
    };
    for (auto& c : cases) {
        auto r = expandHostlist(c.in);
        ASSERT_FALSE(r.has_value()) << c.in;
        EXPECT_NE(r.error().message.find(c.message), std::string::npos)
            << c.in << " -> " << r.error().message;
    }
}

TEST(Hostlist, ExpansionIsBoundedBeforeAnyNameIsBuilt) {
    // scontrol: "Too many hosts in range `0-70000'"; here TooLarge, counted before expanding.
    for (std::string in : {"h[0-70000]", "a[0-999999999]b[0-999999999]c[0-999999999]",
                           "x[1-40000],y[1-40000]", "a[0-999]b[0-999]"}) {
        auto r = expandHostlist(in);
        ASSERT_FALSE(r.has_value()) << in;
        EXPECT_EQ(r.error().code, Errc::TooLarge) << in;
        EXPECT_NE(r.error().message.find("more than 65536 hosts"), std::string::npos)
            << r.error().message;
    }
    auto ok = expandHostlist("h[1-65536]");
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(ok->size(), kMaxHostlistHosts);
    EXPECT_EQ(ok->back(), "h65536");
}

// Issue 39: bounded in bytes too, before any name is built. A 16 KB document (16,000
// characters times [1-65536]) grew loomd to 1 GB before it was refused.
TEST(Hostlist, ExpansionIsBoundedInBytesBeforeAnyNameIsBuilt) {
    // Names longer than a stored name (128): the column of the expression.
    for (auto [in, col] : {std::pair{std::string(16'000, 'a') + "[1-65536]", 1},
                           std::pair{"ok,z" + std::string(124, 'b') + "[1-10000]", 4},
                           std::pair{std::string(120, 'c') + "[1-3][000000001-000000002]", 1}}) {
        auto r = expandHostlist(in);
        ASSERT_FALSE(r.has_value()) << in.size();
        EXPECT_EQ(r.error().code, Errc::InvalidArgument);
        EXPECT_NE(r.error().message.find("column " + std::to_string(col) +
                                         ": names of more than 128 characters"),
                  std::string::npos)
            << r.error().message;
    }
    // 128 characters is a name.
    auto longest = expandHostlist(std::string(123, 'h') + "[00001-16384]");
    ASSERT_TRUE(longest.has_value()) << longest.error().message;
    EXPECT_EQ(longest->size(), 16384u);
    EXPECT_EQ(longest->back().size(), 128u);
    // The bytes of all names: 65,536 names of 64 characters are 4 MiB, above 2 MiB.
    auto bytes = expandHostlist(std::string(59, 'd') + "[00001-65536]");
    ASSERT_FALSE(bytes.has_value());
    EXPECT_EQ(bytes.error().code, Errc::TooLarge);
    EXPECT_NE(bytes.error().message.find("more than 2097152 characters"), std::string::npos)
        << bytes.error().message;
    // A caller's own limits.
    auto job = expandHostlist("h[1-16385]", {.maxHosts = 16384});
    ASSERT_FALSE(job.has_value());
    EXPECT_NE(job.error().message.find("more than 16384 hosts"), std::string::npos);
}

TEST(Hostlist, FormatsTheReferenceRackNamesInTwoDimensions) {
    std::vector<std::string> names;
    for (int r = 16; r >= 1; --r)
        for (int h = 0; h < 2; ++h) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "z1-r%03d-h%d", r, h);
            names.push_back(buf);
        }
    EXPECT_EQ(formatHostlist(names), "z1-r[001-016]-h[0-1]");
    // One host per rack, and a hole.
    EXPECT_EQ(formatHostlist(std::vector<std::string>{"z1-r001-h0", "z1-r002-h0", "z1-r004-h0"}),
              "z1-r[001-002,004]-h0");
    EXPECT_EQ(formatHostlist(std::vector<std::string>{"h8", "h9", "h10", "h08", "login"}),
              "h[8-10,08],login");
    EXPECT_EQ(formatHostlist(std::vector<std::string>{"h1"}), "h1");
    EXPECT_EQ(formatHostlist(std::vector<std::string>{}), "");
}

// Each number that varies is bracketed wherever it is in the name, not only the last one
// (which often is an interface or a constant: gpu001-ib0).
TEST(Hostlist, BracketsEveryNumberThatVariesWhereverItIs) {
    auto formatted = [](std::string_view text) {
        auto names = expandHostlist(text);
        EXPECT_TRUE(names.has_value()) << text;
        return names ? formatHostlist(*names) : std::string();
    };
    EXPECT_EQ(formatted("gpu[001-100]-ib0"), "gpu[001-100]-ib0");
    EXPECT_EQ(formatted("x[1-3]y[1-2]z5"), "x[1-3]y[1-2]z5");
    EXPECT_EQ(formatted("rack[1-3]-node[01-04]-ib0"), "rack[1-3]-node[01-04]-ib0");
    EXPECT_EQ(formatted("z[1-4]-r[001-192]-h[0-1]"), "z[1-4]-r[001-192]-h[0-1]");
    // A range keeps the width of its low bound: 100 and 1000 fit a width of 3.
    EXPECT_EQ(formatted("a[003-2015]b"), "a[003-2015]b");
    EXPECT_EQ(formatted("h[098-101],h[98-101]"), "h[98-101,098-099]");  // 100 and 101 once
    // Not a product: what merges, merges.
    EXPECT_EQ(formatted("z1-r001-h[0-1],z1-r002-h0"), "z1-r001-h[0-1],z1-r002-h0");
    // Digit runs of more than 9 digits stay text (a bracket cannot hold them).
    EXPECT_EQ(formatted("a1234567890b[1-3]"), "a1234567890b[1-3]");
    // The job-document fuzzer's find: 12,078 names whose last number is the same in all. They
    // were written out one by one, 919,000 characters, and the nodelist did not expand again
    // under the 1 MiB hostlist limit.
    const std::string fuzzed = "z1-rSt9ex" + std::string(48, 'V') +
                               "ception[003-2015]kkkkkkkkptio1[002-004]-h[0-1]N4loom12_GLO";
    const std::string text = formatted(fuzzed);
    EXPECT_EQ(text, "z1-rSt9ex" + std::string(48, 'V') +
                        "ception[003-2015]kkkkkkkkptio[1002-1004]-h[0-1]N4loom12_GLO");
    auto back = expandHostlist(text);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->size(), 2013u * 3 * 2);
}

TEST(Hostlist, RoundTripsRandomSetsOfNames) {
    std::mt19937 rng(15);
    for (int round = 0; round < 300; ++round) {
        std::set<std::string> want;
        const int n = 1 + static_cast<int>(rng() % 200);
        for (int i = 0; i < n; ++i) {
            char buf[64];
            const int zone = 1 + static_cast<int>(rng() % 3);
            const int rack = static_cast<int>(rng() % (round % 2 ? 200 : 12));
            const int host = static_cast<int>(rng() % 3);
            switch (rng() % 6) {
                case 0:
                    std::snprintf(buf, sizeof buf, "z%d-r%03d-h%d", zone, rack, host);
                    break;
                case 1:
                    std::snprintf(buf, sizeof buf, "z%d-r%d-h%d", zone, rack, host);
                    break;
                case 2:
                    std::snprintf(buf, sizeof buf, "node%02d", rack);
                    break;
                case 3:
                    std::snprintf(buf, sizeof buf, "gpu%d.rack%03d", host, rack);
                    break;
                case 4:  // the varying number before a constant one
                    std::snprintf(buf, sizeof buf, "n%03d-ib0", rack);
                    break;
                default:
                    std::snprintf(buf, sizeof buf, "r%d-n%02d-eth%d", zone, rack, host % 2);
                    break;
            }
            want.insert(buf);
        }
        std::vector<std::string> in(want.begin(), want.end());
        std::shuffle(in.begin(), in.end(), rng);
        const std::string text = formatHostlist(in);
        auto back = expandHostlist(text);
        ASSERT_TRUE(back.has_value()) << text << ": " << back.error().toString();
        EXPECT_EQ(std::set<std::string>(back->begin(), back->end()), want) << text;
        EXPECT_EQ(back->size(), want.size()) << text;  // no name twice
        EXPECT_EQ(formatHostlist(*back), text);        // a fixed point
    }
}

TEST(Hostlist, NaturalOrder) {
    EXPECT_TRUE(naturalLess("h2", "h10"));
    EXPECT_TRUE(naturalLess("h1", "h01"));
    EXPECT_FALSE(naturalLess("h01", "h1"));
    EXPECT_TRUE(naturalLess("z1-r009-h1", "z1-r010-h0"));
    EXPECT_TRUE(naturalLess("a", "ab"));
    EXPECT_FALSE(naturalLess("a", "a"));
}

}  // namespace
}  // namespace loom::jobs
