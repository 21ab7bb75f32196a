#include "http_target.hpp"

#include "loom/inventory/input_guard.hpp"

namespace loom::backend {

std::string percentDecode(std::string_view s, bool plusIsSpace) {
    std::string out;
    out.reserve(s.size());
    auto hexval = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            int a = hexval(s[i + 1]), b = hexval(s[i + 2]);
            if (a >= 0 && b >= 0) {
                out += char(a * 16 + b);
                i += 2;
                continue;
            }
        }
        out += (plusIsSpace && s[i] == '+') ? ' ' : s[i];
    }
    return out;
}

Pairs parseQuery(std::string_view q) {
    Pairs out;
    std::size_t i = 0;
    while (i <= q.size() && !q.empty()) {
        auto j = q.find('&', i);
        if (j == std::string_view::npos) j = q.size();
        auto part = q.substr(i, j - i);
        if (!part.empty()) {
            auto eq = part.find('=');
            if (eq == std::string_view::npos)
                out.emplace_back(percentDecode(part, true), "");
            else
                out.emplace_back(percentDecode(part.substr(0, eq), true),
                                 percentDecode(part.substr(eq + 1), true));
        }
        if (j >= q.size()) break;
        i = j + 1;
    }
    return out;
}

// Percent-decoding can make any byte: a path or query that is not UTF-8 text (or carries
// NUL or control characters) is refused here, naming the part, before any handler or the
// database sees it.
std::optional<Error> checkTarget(std::string_view path, const Pairs& query) {
    if (auto bad = checkText(path, "the request path (percent-decoded)", "path"); !bad)
        return bad.error();
    for (auto& [k, v] : query) {
        if (auto bad = checkText(k, "a query parameter name (percent-decoded)", "query"); !bad)
            return bad.error();
        if (auto bad = checkText(v, "query parameter '" + k + "' (percent-decoded)", k); !bad)
            return bad.error();
    }
    return std::nullopt;
}

std::pair<std::string, Pairs> splitTarget(std::string_view target) {
    auto qpos = target.find('?');
    std::string path = percentDecode(target.substr(0, qpos), false);
    Pairs query = qpos == std::string_view::npos ? Pairs{} : parseQuery(target.substr(qpos + 1));
    return {std::move(path), std::move(query)};
}

}  // namespace loom::backend
