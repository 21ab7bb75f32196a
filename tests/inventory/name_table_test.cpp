// NameTable (inventory/name_table.hpp) against std::unordered_map on the same operations: every
// name inserted once is found at its index, a second insert of a name returns the first index,
// names never inserted are not found, across growth from an empty table and with names that
// share long prefixes (as the cluster's do) or differ only in length.
#include "loom/inventory/name_table.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using loom::inventory::NameTable;

std::vector<std::string> clusterLikeNames(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) {
        switch (rng() % 4) {
            case 0:
                out.push_back("z" + std::to_string(rng() % 40) + "-r" +
                              std::to_string(rng() % 300) + "-rtsw-p" + std::to_string(rng() % 40));
                break;
            case 1:
                out.push_back(std::string(rng() % 24, 'a'));
                break;  // lengths only
            case 2:
                out.push_back("z1-r001-h1-gpu" + std::to_string(rng() % 100000));
                break;
            default: {
                std::string s(rng() % 40, ' ');
                for (char& c : s) c = static_cast<char>(rng() % 256);
                out.push_back(s);
            }
        }
    }
    return out;
}

TEST(NameTable, AgreesWithAnUnorderedMapWhileGrowing) {
    for (std::uint32_t seed : {1u, 2u, 3u}) {
        const auto names = clusterLikeNames(20'000, seed);
        NameTable table;  // no reserve: grows from empty
        std::unordered_map<std::string, std::uint32_t> ref;
        auto nameOf = [&](std::uint32_t i) { return std::string_view(names[i]); };
        for (std::uint32_t i = 0; i < names.size(); ++i) {
            auto [at, inserted] = table.insert(names[i], i, nameOf);
            auto [it, refInserted] = ref.try_emplace(names[i], i);
            ASSERT_EQ(inserted, refInserted) << "seed " << seed << " name #" << i;
            ASSERT_EQ(at, it->second) << "seed " << seed << " name #" << i;
        }
        EXPECT_EQ(table.size(), ref.size());
        for (const auto& [name, index] : ref) {
            auto found = table.find(name, nameOf);
            ASSERT_TRUE(found) << name;
            EXPECT_EQ(*found, index);
        }
        for (const auto& probe : clusterLikeNames(5'000, seed + 100)) {
            auto found = table.find(probe, nameOf);
            EXPECT_EQ(found.has_value(), ref.contains(probe)) << probe;
            if (found) {
                EXPECT_EQ(names[*found], probe);
            }
        }
    }
}

TEST(NameTable, EmptyTableAndEmptyName) {
    NameTable table;
    std::vector<std::string> names = {"", "a", "ab"};
    auto nameOf = [&](std::uint32_t i) { return std::string_view(names[i]); };
    EXPECT_FALSE(table.find("a", nameOf));
    EXPECT_TRUE(table.insert(names[0], 0, nameOf).second);
    EXPECT_TRUE(table.insert(names[1], 1, nameOf).second);
    EXPECT_TRUE(table.insert(names[2], 2, nameOf).second);
    EXPECT_EQ(table.find("", nameOf), 0u);
    EXPECT_EQ(table.find("ab", nameOf), 2u);
    EXPECT_FALSE(table.find("b", nameOf));
    EXPECT_EQ(table.insert(names[1], 7, nameOf), std::make_pair(1u, false));
}

TEST(NameTable, ReserveKeepsItAtMostHalfFull) {
    // Names differing in the last byte of a long shared prefix (hash mixing of the tail).
    std::vector<std::string> names;
    for (int i = 0; i < 4096; ++i)
        names.push_back("z32-r192-rtsw-to-ctsw18-port-" + std::to_string(i));
    NameTable table;
    table.reserve(names.size());
    auto nameOf = [&](std::uint32_t i) { return std::string_view(names[i]); };
    for (std::uint32_t i = 0; i < names.size(); ++i)
        ASSERT_TRUE(table.insert(names[i], i, nameOf).second);
    for (std::uint32_t i = 0; i < names.size(); ++i) ASSERT_EQ(table.find(names[i], nameOf), i);
}

}  // namespace
