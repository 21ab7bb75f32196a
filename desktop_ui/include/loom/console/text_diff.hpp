// Line diff of two texts (a switch's previous and current config): the longest common
// subsequence of lines after the common head and tail are cut off, shown as hunks with a few
// lines of context, as `diff -u` does. Bounded: when the differing middle is too large for the
// table (more than kMaxCells line pairs) it is reported as replaced whole.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

namespace loom::console {

struct DiffLine {
    enum Kind { Same, Removed, Added, Gap };  // Gap: unchanged lines left out between hunks
    Kind kind = Same;
    QString text;
};

inline constexpr long long kMaxDiffCells = 4'000'000;

// Every line of `before` and `after` in order, each marked Same, Removed or Added.
std::vector<DiffLine> diffLines(const QStringList& before, const QStringList& after);
// Only the changes with `context` unchanged lines around each; runs left out become one Gap.
std::vector<DiffLine> diffHunks(const std::vector<DiffLine>& all, int context = 2);
// Counts of removed and added lines.
std::pair<int, int> diffCounts(const std::vector<DiffLine>& all);

}  // namespace loom::console
