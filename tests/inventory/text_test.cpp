// Text, the inventory's string field: what a copy shares, what a literal shares, and that it
// reads and compares as the string it holds.

#include "loom/inventory/text.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "loom/inventory/model.hpp"
#include "loom/inventory/spec.hpp"

namespace {

using loom::inventory::Text;

TEST(Text, ReadsAsTheStringItHolds) {
    const std::string s = "z01-r0001-rtsw/p17";
    const Text t = s;
    EXPECT_EQ(t.size(), s.size());
    EXPECT_EQ(t.view(), s);
    EXPECT_STREQ(t.c_str(), s.c_str());
    EXPECT_EQ(t.str(), s);
    EXPECT_EQ(std::string(t), s);
    EXPECT_EQ(t, s);
    EXPECT_EQ(t, "z01-r0001-rtsw/p17");
    EXPECT_EQ(std::string_view(s), t);
    EXPECT_NE(t, "z01-r0001-rtsw/p1");
    EXPECT_TRUE(t.starts_with("z01-"));
    EXPECT_TRUE(t.ends_with("/p17"));
    EXPECT_EQ(t.find('/'), s.find('/'));
    EXPECT_EQ(t.substr(4, 5), "r0001");
    EXPECT_EQ(t.back(), '7');
    EXPECT_EQ(t + "--" + t, s + "--" + s);
    EXPECT_EQ("a:" + t, "a:" + s);
    EXPECT_EQ(std::hash<Text>{}(t), std::hash<std::string_view>{}(s));
    std::ostringstream os;
    os << t;
    EXPECT_EQ(os.str(), s);
}

TEST(Text, EmptyIsNoBlock) {
    const Text a, b = "", c = std::string();
    for (const Text* t : {&a, &b, &c}) {
        EXPECT_TRUE(t->empty());
        EXPECT_EQ(t->size(), 0u);
        EXPECT_STREQ(t->c_str(), "");
        EXPECT_EQ(*t, "");
        EXPECT_FALSE(t->sharesWith(a));
    }
}

TEST(Text, OrdersAsStrings) {
    std::vector<std::string> words = {"b", "a10", "a9", "", "a", "ab"};
    std::set<Text> texts(words.begin(), words.end());
    std::set<std::string> strings(words.begin(), words.end());
    ASSERT_EQ(texts.size(), strings.size());
    auto it = strings.begin();
    for (const Text& t : texts) EXPECT_EQ(t, *it++);
    EXPECT_LT(Text("a"), std::string("b"));
    EXPECT_GT(Text("b"), std::string_view("a"));
}

TEST(Text, ACopySharesTheBlockAndOutlivesTheOriginal) {
    Text copy;
    {
        Text name = std::string("z01-r0001-h0-nic3/p1");
        copy = name;
        EXPECT_TRUE(copy.sharesWith(name));
        EXPECT_EQ(copy.c_str(), name.c_str());
        Text moved = std::move(name);
        EXPECT_TRUE(moved.sharesWith(copy));
        EXPECT_TRUE(name.empty());  // NOLINT: a moved-from Text is empty
    }
    EXPECT_EQ(copy, "z01-r0001-h0-nic3/p1");
    // Assigning gives a new block; the other holder keeps the old value.
    Text other = copy;
    other = std::string("z01-r0001-h0-nic3/p2");
    EXPECT_FALSE(other.sharesWith(copy));
    EXPECT_EQ(copy, "z01-r0001-h0-nic3/p1");
    EXPECT_EQ(other, "z01-r0001-h0-nic3/p2");
}

TEST(Text, SharedValuesAreOneBlockPerValue) {
    const Text a = Text::shared("in_service"), b = Text::shared(std::string("in_service"));
    EXPECT_TRUE(a.sharesWith(b));
    EXPECT_FALSE(Text::shared("drained").sharesWith(a));
    // Characters not asked to be shared (a name) are a block of their own.
    EXPECT_FALSE(Text(std::string("in_service")).sharesWith(a));
    EXPECT_FALSE(Text("in_service").sharesWith(a));
    // Model defaults are shared: a million default ports hold one "planned".
    loom::inventory::Port p, q;
    EXPECT_TRUE(p.state.sharesWith(q.state));
}

TEST(Text, CopiesAndDropsOnManyThreads) {
    const Text name = std::string("z01-r0001-rtsw--z01-ctsw01/p1");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 20000; ++i) {
                std::vector<Text> v(8, name);
                Text s = Text::shared("planned");
                ASSERT_EQ(v.back(), name);
                ASSERT_EQ(s, "planned");
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(name, "z01-r0001-rtsw--z01-ctsw01/p1");
}

TEST(Text, AnExpandedSpecSharesReferencesWithTheirNames) {
    auto inv = loom::inventory::loadClusterSpecFile(std::string(LOOM_SOURCE_DIR) +
                                                    "/configs/clusters/dev-small.yaml");
    ASSERT_TRUE(inv) << inv.error().toString();
    std::unordered_map<std::string_view, const Text*> ports;
    for (const auto& p : inv->ports) ports.emplace(p.name, &p.name);
    ASSERT_FALSE(inv->links.empty());
    for (const auto& l : inv->links) {
        EXPECT_EQ(l.name, l.aPort + "--" + l.bPort);
        EXPECT_TRUE(l.aPort.sharesWith(*ports.at(l.aPort))) << l.name;
        EXPECT_TRUE(l.bPort.sharesWith(*ports.at(l.bPort))) << l.name;
    }
    for (const auto& g : inv->gpus) EXPECT_TRUE(g.model.sharesWith(inv->gpus[0].model));
}

// Last: it fills the process-wide table (ctest runs each test in a process of its own).
TEST(Text, TheSharedTableIsBounded) {
    // Values past kMaxShared still come back right; they just are not kept.
    std::vector<Text> kept;
    for (std::size_t i = 0; i < Text::kMaxShared + 10; ++i)
        kept.push_back(Text::shared("bounded-" + std::to_string(i)));
    for (std::size_t i = 0; i < kept.size(); ++i)
        EXPECT_EQ(kept[i], "bounded-" + std::to_string(i));
    const Text late = Text::shared("bounded-late-value");
    EXPECT_FALSE(Text::shared("bounded-late-value").sharesWith(late));
}

}  // namespace
