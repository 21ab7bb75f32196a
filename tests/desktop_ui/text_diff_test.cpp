// The line diff behind a switch's config diff (issue 17 item 2).
#include "loom/console/text_diff.hpp"

#include <gtest/gtest.h>

using namespace loom::console;

namespace {
QString render(const std::vector<DiffLine>& lines) {
    QString out;
    for (const auto& l : lines)
        out += (l.kind == DiffLine::Same      ? QStringLiteral("  ")
                : l.kind == DiffLine::Removed ? QStringLiteral("- ")
                : l.kind == DiffLine::Added   ? QStringLiteral("+ ")
                                              : QStringLiteral("~~")) +
               l.text + u'\n';
    return out;
}
}  // namespace

TEST(ConsoleTextDiff, MarksRemovedAndAddedLinesInOrder) {
    const QStringList before{"a", "b", "c", "d", "e"};
    const QStringList after{"a", "c", "x", "d", "e", "f"};
    const auto all = diffLines(before, after);
    EXPECT_EQ(render(all), "  a\n- b\n  c\n+ x\n  d\n  e\n+ f\n");
    EXPECT_EQ(diffCounts(all), std::make_pair(1, 2));
    // Same texts: nothing changed, no hunks.
    EXPECT_EQ(diffCounts(diffLines(before, before)), std::make_pair(0, 0));
    EXPECT_TRUE(diffHunks(diffLines(before, before)).empty());
    // From and to nothing.
    EXPECT_EQ(render(diffLines({}, {"x"})), "+ x\n");
    EXPECT_EQ(render(diffLines({"x"}, {})), "- x\n");
}

TEST(ConsoleTextDiff, HunksKeepContextAndMarkWhatIsLeftOut) {
    QStringList before, after;
    for (int i = 0; i < 40; ++i) before << QStringLiteral("interface swp%1").arg(i);
    after = before;
    after[10] = "interface swp10 (drained)";
    after[30] = "interface swp30 (drained)";
    const auto hunks = diffHunks(diffLines(before, after), 1);
    EXPECT_EQ(
        render(hunks),
        "  interface swp9\n- interface swp10\n+ interface swp10 (drained)\n  interface swp11\n~~\n"
        "  interface swp29\n- interface swp30\n+ interface swp30 (drained)\n  interface swp31\n");
}

TEST(ConsoleTextDiff, ATooLargeMiddleIsReplacedWhole) {
    QStringList before, after;
    for (int i = 0; i < 2100; ++i) {
        before << QStringLiteral("old %1").arg(i);
        after << QStringLiteral("new %1").arg(i);
    }
    before.prepend("head");
    after.prepend("head");
    const auto all = diffLines(before, after);  // 2,100 x 2,100 > kMaxDiffCells
    EXPECT_EQ(diffCounts(all), std::make_pair(2100, 2100));
    EXPECT_EQ(all.front().kind, DiffLine::Same);
    EXPECT_EQ(all[1].text, "old 0");
    EXPECT_EQ(all[2101].text, "new 0");
}
