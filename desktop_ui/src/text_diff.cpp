#include "loom/console/text_diff.hpp"

#include <algorithm>
#include <cstdint>

namespace loom::console {

std::vector<DiffLine> diffLines(const QStringList& before, const QStringList& after) {
    std::vector<DiffLine> out;
    const qsizetype n = before.size(), m = after.size();
    qsizetype head = 0;
    while (head < n && head < m && before[head] == after[head]) ++head;
    qsizetype tail = 0;
    while (tail < n - head && tail < m - head && before[n - 1 - tail] == after[m - 1 - tail])
        ++tail;
    for (qsizetype i = 0; i < head; ++i) out.push_back({DiffLine::Same, before[i]});
    const qsizetype a = n - head - tail, b = m - head - tail;
    if (static_cast<long long>(a) * static_cast<long long>(b) > kMaxDiffCells) {
        for (qsizetype i = 0; i < a; ++i) out.push_back({DiffLine::Removed, before[head + i]});
        for (qsizetype j = 0; j < b; ++j) out.push_back({DiffLine::Added, after[head + j]});
    } else {
        // lcs[i][j]: the longest common subsequence of before[head+i..] and after[head+j..].
        const auto w = static_cast<size_t>(b + 1);
        std::vector<std::uint32_t> lcs(static_cast<size_t>(a + 1) * w, 0);
        for (qsizetype i = a - 1; i >= 0; --i)
            for (qsizetype j = b - 1; j >= 0; --j)
                lcs[static_cast<size_t>(i) * w + static_cast<size_t>(j)] =
                    before[head + i] == after[head + j]
                        ? lcs[static_cast<size_t>(i + 1) * w + static_cast<size_t>(j + 1)] + 1
                        : std::max(lcs[static_cast<size_t>(i + 1) * w + static_cast<size_t>(j)],
                                   lcs[static_cast<size_t>(i) * w + static_cast<size_t>(j + 1)]);
        qsizetype i = 0, j = 0;
        while (i < a || j < b) {
            if (i < a && j < b && before[head + i] == after[head + j]) {
                out.push_back({DiffLine::Same, before[head + i]});
                ++i;
                ++j;
            } else if (i < a &&
                       (j == b ||
                        lcs[static_cast<size_t>(i + 1) * w + static_cast<size_t>(j)] >=
                            lcs[static_cast<size_t>(i) * w + static_cast<size_t>(j + 1)])) {
                // Removals before additions on a tie, as diff -u prints a changed line.
                out.push_back({DiffLine::Removed, before[head + i]});
                ++i;
            } else {
                out.push_back({DiffLine::Added, after[head + j]});
                ++j;
            }
        }
    }
    for (qsizetype i = n - tail; i < n; ++i) out.push_back({DiffLine::Same, before[i]});
    return out;
}

std::vector<DiffLine> diffHunks(const std::vector<DiffLine>& all, int context) {
    const auto n = all.size();
    std::vector<char> keep(n, 0);
    for (size_t i = 0; i < n; ++i)
        if (all[i].kind != DiffLine::Same) {
            const size_t lo =
                i >= static_cast<size_t>(context) ? i - static_cast<size_t>(context) : 0;
            const size_t hi = std::min(n, i + static_cast<size_t>(context) + 1);
            std::fill(keep.begin() + static_cast<std::ptrdiff_t>(lo),
                      keep.begin() + static_cast<std::ptrdiff_t>(hi), 1);
        }
    std::vector<DiffLine> out;
    for (size_t i = 0; i < n; ++i) {
        if (keep[i]) {
            out.push_back(all[i]);
        } else if (out.empty() || out.back().kind != DiffLine::Gap) {
            out.push_back({DiffLine::Gap, {}});
        }
    }
    // A gap at either end says nothing the reader needs.
    if (!out.empty() && out.back().kind == DiffLine::Gap) out.pop_back();
    if (!out.empty() && out.front().kind == DiffLine::Gap) out.erase(out.begin());
    return out;
}

std::pair<int, int> diffCounts(const std::vector<DiffLine>& all) {
    int removed = 0, added = 0;
    for (const auto& l : all) {
        removed += l.kind == DiffLine::Removed;
        added += l.kind == DiffLine::Added;
    }
    return {removed, added};
}

}  // namespace loom::console
