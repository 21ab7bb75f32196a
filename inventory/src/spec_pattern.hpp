// Naming patterns of the cluster spec ("{zone}-r{n:03}"), compiled once and formatted many
// times during expansion, so the 24k expansion pays no parsing per name.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::inventory::detail {

enum class PatternVar : std::uint8_t { Site, Zone, Row, Rack, Su, N };
inline constexpr std::uint8_t varBit(PatternVar v) { return std::uint8_t(1u << unsigned(v)); }

struct PatternArgs {
    std::string_view site, zone, row, rack, su;
    long n = 0;
};

class NamePattern {
public:
    // Compiles `text`, accepting only the placeholders in `allowed` (a mask of varBit()).
    // On error returns a message (unknown placeholder, bad width, characters not allowed in
    // a name) and leaves the pattern empty.
    std::optional<std::string> compile(std::string_view text, std::uint8_t allowed);

    bool uses(PatternVar v) const { return (used_ & varBit(v)) != 0; }

    void appendTo(std::string& out, const PatternArgs& a) const {
        for (const Segment& s : segments_) {
            switch (s.var) {
                case kLiteral:
                    out += s.literal;
                    break;
                case std::uint8_t(PatternVar::Site):
                    out += a.site;
                    break;
                case std::uint8_t(PatternVar::Zone):
                    out += a.zone;
                    break;
                case std::uint8_t(PatternVar::Row):
                    out += a.row;
                    break;
                case std::uint8_t(PatternVar::Rack):
                    out += a.rack;
                    break;
                case std::uint8_t(PatternVar::Su):
                    out += a.su;
                    break;
                default:
                    appendNumber(out, a.n, s.width);
                    break;
            }
        }
    }
    std::string format(const PatternArgs& a) const {
        std::string out;
        out.reserve(32);
        appendTo(out, a);
        return out;
    }

    static void appendNumber(std::string& out, long n, int width) {
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, n);
        auto len = int(r.ptr - buf);
        for (int i = len; i < width; ++i) out += '0';
        out.append(buf, std::size_t(len));
    }

private:
    static constexpr std::uint8_t kLiteral = 0xff;
    struct Segment {
        std::uint8_t var = kLiteral;
        int width = 0;
        std::string literal;
    };
    std::vector<Segment> segments_;
    std::uint8_t used_ = 0;
};

// Characters allowed in entity names: they end up in port names ("<device>/p3") and link
// names ("<a>--<b>"), in URLs and in file names of exported configs.
inline bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

// A character for an error message: itself if printable, else \xNN.
inline std::string showChar(char c) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string(1, c);
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
}

}  // namespace loom::inventory::detail
