// The one natural order (inventory/natural_order.hpp) and its sort key: the key's bytewise
// order must be naturalLess's order for every pair, or the API's lists (sorted by PostgreSQL on
// the key) and loomctl/jobs (sorted by naturalLess) would disagree.
#include "loom/inventory/natural_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace loom {
namespace {

TEST(NaturalOrder, DigitRunsCompareAsNumbers) {
    EXPECT_TRUE(naturalLess("p2", "p10"));
    EXPECT_FALSE(naturalLess("p10", "p2"));
    EXPECT_TRUE(naturalLess("z1-r2", "z1-r10"));
    EXPECT_TRUE(naturalLess("z1-r001-rtsw/p9", "z1-r001-rtsw/p10"));
    EXPECT_TRUE(naturalLess("z1-r009-h1", "z1-r010-h0"));
    EXPECT_TRUE(naturalLess("h1", "h01"));  // equal values: the shorter run first
    EXPECT_FALSE(naturalLess("h01", "h1"));
    EXPECT_TRUE(naturalLess("a", "ab"));
    EXPECT_TRUE(naturalLess("a", "a1"));
    EXPECT_FALSE(naturalLess("a", "a"));
    EXPECT_TRUE(naturalLess("p9-", "p9a"));     // '-' < 'a', bytes as they are
    EXPECT_TRUE(naturalLess("p/", "p0"));       // '/' (0x2f) sorts before a digit...
    EXPECT_TRUE(naturalLess("p99", "p:"));      // ...and ':' (0x3a) after every number
    EXPECT_TRUE(naturalLess("x", "\xc3\xa9"));  // UTF-8 bytes are unsigned
}

TEST(NaturalOrder, SortKeyExamples) {
    EXPECT_EQ(naturalSortKey("z1-r010"), "z110-r2101");
    EXPECT_EQ(naturalSortKey("p0"), "p100");
    EXPECT_EQ(naturalSortKey("p000"), "p102");
    EXPECT_EQ(naturalSortKey("rack"), "rack");
    EXPECT_EQ(naturalSortKey(""), "");
    // A run of 9+ digits: its length written as '9', the length's own code, the length.
    EXPECT_EQ(naturalSortKey("n123456789"),
              "n91"
              "9"
              "123456789"
              "0");
    EXPECT_LT(naturalSortKey("n99999999"), naturalSortKey("n123456789"));
    EXPECT_LT(naturalSortKey("n999999999"), naturalSortKey("n1234567890"));
}

// Names from a small alphabet with digits, zero padding and separators, so that runs of every
// shape meet each other, non-digits and ends of names; 3,000 names, every pair compared.
std::vector<std::string> randomNames(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    const std::string letters = "az-/.:~";
    std::vector<std::string> out;
    while (out.size() < n) {
        std::string s;
        const int parts = 1 + int(rng() % 4);
        for (int p = 0; p < parts; ++p) {
            if (rng() % 2) {
                s += letters[rng() % letters.size()];
            } else {
                const int zeros = rng() % 5 == 0 ? int(rng() % 3) : 0;
                s.append(zeros, '0');
                const int len = rng() % 8 == 0 ? 9 + int(rng() % 14) : 1 + int(rng() % 3);
                for (int d = 0; d < len; ++d) s += char('0' + rng() % 10);
            }
        }
        out.push_back(s);
    }
    return out;
}

TEST(NaturalOrder, KeyOrderIsNaturalLessForEveryPair) {
    auto names = randomNames(3000, 12);
    std::vector<std::string> keys;
    for (auto& n : names) keys.push_back(naturalSortKey(n));
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < names.size(); ++i)
        for (std::size_t j = 0; j < names.size(); ++j)
            if (naturalLess(names[i], names[j]) != (keys[i] < keys[j])) {
                if (++mismatches <= 5)
                    ADD_FAILURE() << names[i] << " vs " << names[j] << ": naturalLess "
                                  << naturalLess(names[i], names[j]) << ", keys " << keys[i] << " "
                                  << keys[j];
            }
    EXPECT_EQ(mismatches, 0u);
}

TEST(NaturalOrder, KeysAreDistinctForDistinctNames) {
    auto names = randomNames(20000, 7);
    std::set<std::string> distinctNames(names.begin(), names.end());
    std::set<std::string> distinctKeys;
    for (auto& n : distinctNames) distinctKeys.insert(naturalSortKey(n));
    EXPECT_EQ(distinctKeys.size(), distinctNames.size());
}

TEST(NaturalOrder, SortedByKeyIsSortedNaturally) {
    std::vector<std::string> ports;
    for (int p = 20; p >= 0; --p) ports.push_back("z1-r001-rtsw/p" + std::to_string(p));
    auto byKey = ports;
    std::sort(byKey.begin(), byKey.end(),
              [](auto& a, auto& b) { return naturalSortKey(a) < naturalSortKey(b); });
    EXPECT_EQ(byKey[0], "z1-r001-rtsw/p0");
    EXPECT_EQ(byKey[2], "z1-r001-rtsw/p2");
    EXPECT_EQ(byKey[10], "z1-r001-rtsw/p10");
    EXPECT_TRUE(std::is_sorted(byKey.begin(), byKey.end(),
                               [](auto& a, auto& b) { return naturalLess(a, b); }));
}

// A job's hosts and a hostlist's names are sorted by key (naturallySortedUnique): the same list
// as naturalLess's sort without repeats, repeats and equal numbers written differently included.
TEST(NaturalOrder, SortedUniqueIsNaturalLessSortWithoutRepeats) {
    auto names = randomNames(5000, 3);
    const auto half = names.size() / 2;
    for (std::size_t i = 0; i < half; ++i) names.push_back(names[i * 2]);  // repeats
    auto want = names;
    std::sort(want.begin(), want.end(), [](auto& a, auto& b) { return naturalLess(a, b); });
    want.erase(std::unique(want.begin(), want.end()), want.end());
    EXPECT_EQ(naturallySortedUnique(names), want);
    EXPECT_TRUE(naturallySortedUnique({}).empty());
}

}  // namespace
}  // namespace loom
