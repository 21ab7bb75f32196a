// Naming patterns of the cluster spec (spec_pattern.hpp): compiling a pattern's text into
// literal and placeholder segments, with the message for what is wrong in it.
#include "spec_pattern.hpp"

namespace loom::inventory::detail {

std::optional<std::string> NamePattern::compile(std::string_view text, std::uint8_t allowed) {
    segments_.clear();
    used_ = 0;
    static constexpr std::string_view kVarNames[] = {"site", "zone", "row", "rack", "su", "n"};
    auto allowedList = [&] {
        std::string s;
        for (int v = 0; v < 6; ++v) {
            if (!(allowed & (1u << v))) continue;
            if (!s.empty()) s += ", ";
            s += '{';
            s += kVarNames[v];
            s += '}';
        }
        return s.empty() ? std::string("none") : s;
    };
    if (text.empty()) return "must not be empty";
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '{') {
            auto close = text.find('}', i);
            if (close == std::string_view::npos) return "unclosed '{' in pattern";
            std::string_view body = text.substr(i + 1, close - i - 1);
            std::string_view var = body;
            int width = 0;
            if (auto colon = body.find(':'); colon != std::string_view::npos) {
                var = body.substr(0, colon);
                std::string_view w = body.substr(colon + 1);
                auto r = std::from_chars(w.data(), w.data() + w.size(), width);
                if (w.empty() || r.ec != std::errc() || r.ptr != w.data() + w.size() || width < 0 ||
                    width > 12)
                    return "bad width in {" + std::string(body) + "}; use e.g. {n:03}";
            }
            int id = -1;
            for (int v = 0; v < 6; ++v)
                if (kVarNames[v] == var) id = v;
            if (id < 0 || !(allowed & (1u << id)))
                return "unknown placeholder {" + std::string(var) + "}; allowed: " + allowedList();
            if (width > 0 && id != int(PatternVar::N)) return "a width applies only to {n}";
            segments_.push_back(Segment{std::uint8_t(id), width, {}});
            used_ |= std::uint8_t(1u << id);
            i = close + 1;
        } else {
            if (!isNameChar(text[i]))
                return "character '" + showChar(text[i]) +
                       "' is not allowed in names (use letters, digits, '-', '_', '.')";
            if (segments_.empty() || segments_.back().var != kLiteral)
                segments_.push_back(Segment{});
            segments_.back().literal += text[i];
            ++i;
        }
    }
    return std::nullopt;
}

}  // namespace loom::inventory::detail
