#include "loom/inventory/natural_order.hpp"

#include <algorithm>
#include <utility>

namespace loom {
namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// A count written so that bytewise order is numeric order and no code is a prefix of another:
// 0..8 as one digit, 9 and more as '9', then the code of the count's number of digits, then
// its digits (digit runs' lengths and leading zeros both; almost always one byte).
void appendCount(std::string& out, std::size_t n) {
    if (n < 9) {
        out += static_cast<char>('0' + n);
        return;
    }
    const std::string digits = std::to_string(n);
    out += '9';
    appendCount(out, digits.size());
    out += digits;
}

}  // namespace

bool naturalLess(std::string_view a, std::string_view b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (isDigit(a[i]) && isDigit(b[j])) {
            std::size_t ie = i, je = j;
            while (ie < a.size() && isDigit(a[ie])) ++ie;
            while (je < b.size() && isDigit(b[je])) ++je;
            // Compare by value: strip leading zeros, then length, then digits.
            std::size_t is = i, js = j;
            while (is + 1 < ie && a[is] == '0') ++is;
            while (js + 1 < je && b[js] == '0') ++js;
            if (ie - is != je - js) return ie - is < je - js;
            if (auto c = a.substr(is, ie - is).compare(b.substr(js, je - js)); c != 0) return c < 0;
            if (ie - i != je - j) return ie - i < je - j;  // h1 before h01
            i = ie;
            j = je;
            continue;
        }
        if (a[i] != b[j])
            return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j;
}

std::string naturalSortKey(std::string_view name) {
    std::string out;
    out.reserve(name.size() + 8);
    appendNaturalSortKey(out, name);
    return out;
}

void appendNaturalSortKey(std::string& out, std::string_view name) {
    std::size_t i = 0;
    while (i < name.size()) {
        if (!isDigit(name[i])) {
            out += name[i++];
            continue;
        }
        std::size_t end = i;
        while (end < name.size() && isDigit(name[end])) ++end;
        std::size_t start = i;
        while (start + 1 < end && name[start] == '0') ++start;
        appendCount(out, end - start);
        out.append(name.substr(start, end - start));
        appendCount(out, start - i);
        i = end;
    }
}

std::vector<std::string> naturallySortedUnique(std::vector<std::string> names) {
    std::vector<std::pair<std::string, std::string>> keyed;  // key, name
    keyed.reserve(names.size());
    for (auto& n : names) keyed.emplace_back(naturalSortKey(n), std::move(n));
    std::sort(keyed.begin(), keyed.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    names.clear();
    for (auto& [key, name] : keyed)  // distinct names have distinct keys
        if (names.empty() || names.back() != name) names.push_back(std::move(name));
    return names;
}

}  // namespace loom
