#include "config_diff.hpp"

#include <zlib.h>

#include <algorithm>
#include <functional>
#include <string_view>
#include <vector>

namespace loom::backend {

// A line diff in unified style without context: common prefix and suffix trimmed, the middle
// matched by LCS when small enough (configs change a few stanzas at a time).
std::string lineDiff(const std::string& a, const std::string& b) {
    auto split = [](const std::string& s) {
        std::vector<std::string_view> out;
        std::size_t i = 0;
        while (i < s.size()) {
            auto j = s.find('\n', i);
            if (j == std::string::npos) j = s.size();
            out.emplace_back(s.data() + i, j - i);
            i = j + 1;
        }
        return out;
    };
    const auto x = split(a), y = split(b);
    std::size_t pre = 0;
    while (pre < x.size() && pre < y.size() && x[pre] == y[pre]) ++pre;
    std::size_t suf = 0;
    while (suf < x.size() - pre && suf < y.size() - pre &&
           x[x.size() - 1 - suf] == y[y.size() - 1 - suf])
        ++suf;
    const std::size_t n = x.size() - pre - suf, m = y.size() - pre - suf;
    std::string out;
    if (n == 0 && m == 0) return out;
    out += "@@ -" + std::to_string(pre + 1) + "," + std::to_string(n) + " +" +
           std::to_string(pre + 1) + "," + std::to_string(m) + " @@\n";
    if (n * m > 4'000'000 || n == 0 || m == 0) {
        for (std::size_t i = 0; i < n; ++i) out += "-" + std::string(x[pre + i]) + "\n";
        for (std::size_t j = 0; j < m; ++j) out += "+" + std::string(y[pre + j]) + "\n";
        return out;
    }
    std::vector<std::uint32_t> L((n + 1) * (m + 1), 0);
    auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return L[i * (m + 1) + j]; };
    for (std::size_t i = n; i-- > 0;)
        for (std::size_t j = m; j-- > 0;)
            at(i, j) = x[pre + i] == y[pre + j] ? at(i + 1, j + 1) + 1
                                                : std::max(at(i + 1, j), at(i, j + 1));
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && x[pre + i] == y[pre + j]) {
            ++i, ++j;
        } else if (j < m && (i == n || at(i, j + 1) >= at(i + 1, j))) {
            out += "+" + std::string(y[pre + j++]) + "\n";
        } else {
            out += "-" + std::string(x[pre + i++]) + "\n";
        }
    }
    return out;
}

PackedConfig::PackedConfig(std::string_view text)
    : size_(text.size()), hash_(std::hash<std::string_view>{}(text)) {
    if (text.empty()) return;
    uLongf n = compressBound(static_cast<uLong>(text.size()));
    deflated_.resize(n);
    if (compress2(reinterpret_cast<Bytef*>(deflated_.data()), &n,
                  reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                  Z_BEST_SPEED) != Z_OK) {
        deflated_.assign(text);  // kept as is (size_ == deflated_.size(): see text())
        size_ = static_cast<std::size_t>(-1);
        return;
    }
    deflated_.resize(n);
    deflated_.shrink_to_fit();
}

std::string PackedConfig::text() const {
    if (size_ == static_cast<std::size_t>(-1)) return deflated_;
    std::string out(size_, '\0');
    if (size_ == 0) return out;
    uLongf n = static_cast<uLongf>(size_);
    if (uncompress(reinterpret_cast<Bytef*>(out.data()), &n,
                   reinterpret_cast<const Bytef*>(deflated_.data()),
                   static_cast<uLong>(deflated_.size())) != Z_OK)
        return {};
    out.resize(n);
    return out;
}

bool PackedConfig::equals(std::string_view text) const {
    if (size_ == static_cast<std::size_t>(-1)) return deflated_ == text;
    if (text.size() != size_ || std::hash<std::string_view>{}(text) != hash_) return false;
    return this->text() == text;
}

}  // namespace loom::backend
