#include "loom/telemetry/prom_text.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "loom/inventory/input_guard.hpp"

namespace loom::telemetry {
namespace {

// Character classes, built once: the hot loops test one table entry per byte.
enum : std::uint8_t {
    kNameStart = 1,
    kNameChar = 2,
    kLabelStart = 4,
    kBlank = 8,
    kQuoteOrEscape = 16,  // '"' or '\\': where a label value's scan stops
    kDigit = 32,
    kLabelChar = 64,  // not in the table: repeats() asks isLabelChar() for it
};
constexpr std::array<std::uint8_t, 256> makeClasses() {
    std::array<std::uint8_t, 256> t{};
    for (int c = 0; c < 256; ++c) {
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        std::uint8_t v = 0;
        if (alpha || c == ':') v |= kNameStart;
        if (alpha || digit || c == ':') v |= kNameChar;
        if (alpha) v |= kLabelStart;
        if (c == ' ' || c == '\t') v |= kBlank;
        if (c == '"' || c == '\\') v |= kQuoteOrEscape;
        if (digit) v |= kDigit;
        t[c] = v;
    }
    return t;
}
constexpr auto kClass = makeClasses();

inline bool is(char c, std::uint8_t cls) { return kClass[static_cast<unsigned char>(c)] & cls; }
inline bool isLabelChar(char c) { return is(c, kNameChar) && c != ':'; }

// Whether any byte of w is '"' or '\\' (the classic has-zero-byte test on w ^ the byte).
inline bool hasQuoteOrEscape(std::uint64_t w) {
    constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
    const std::uint64_t q = w ^ (kOnes * '"'), b = w ^ (kOnes * '\\');
    return (((q - kOnes) & ~q) | ((b - kOnes) & ~b)) & kHigh;
}

std::string describe(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned char>(c));
    return std::string("byte ") + buf;
}

bool equalsNoCase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (x != b[i]) return false;
    }
    return true;
}

bool parseValue(std::string_view tok, double& out) {
    const char* b = tok.data();
    const char* e = b + tok.size();
    if (b == e) return false;
    bool neg = false;
    std::string_view rest = tok;
    if (*b == '+' || *b == '-') {
        neg = *b == '-';
        rest.remove_prefix(1);
    }
    // Fast path for plain decimals, the bulk of counters and gauges: up to 15 significant
    // digits (exact in a double), an optional fraction and an optional exponent of at most 22
    // after the fraction is taken in. Then mantissa and 10^k are both exact and one IEEE
    // multiplication or division rounds correctly: the same double as from_chars. Anything else
    // (more digits, hex-looking text, inf/nan, malformed) takes the general path below.
    if (!rest.empty() && rest.size() <= 24) {
        static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                            1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        std::uint64_t m = 0;
        std::size_t i = 0, n = rest.size();
        int digits = 0, intDigits = 0, fracDigits = 0;
        for (; i < n && is(rest[i], kDigit); ++i, ++intDigits)
            m = m * 10 + static_cast<unsigned>(rest[i] - '0');
        if (i < n && rest[i] == '.') {
            for (++i; i < n && is(rest[i], kDigit); ++i, ++fracDigits)
                m = m * 10 + static_cast<unsigned>(rest[i] - '0');
        }
        digits = intDigits + fracDigits;
        int exp = 0;
        bool ok = intDigits > 0 && digits <= 15 && (fracDigits > 0 || i == n || rest[i] != '.') &&
                  !(i < n && rest[i] == '.');
        if (ok && i < n && (rest[i] == 'e' || rest[i] == 'E')) {
            ++i;
            bool eneg = false;
            if (i < n && (rest[i] == '+' || rest[i] == '-')) eneg = rest[i++] == '-';
            int ed = 0;
            for (; i < n && is(rest[i], kDigit) && ed < 3; ++i, ++ed)
                exp = exp * 10 + (rest[i] - '0');
            ok = ed > 0;
            if (eneg) exp = -exp;
        }
        if (ok && i == n) {
            const int k = exp - fracDigits;
            if (k >= -22 && k <= 22) {
                double v = static_cast<double>(m);
                v = k >= 0 ? v * kPow10[k] : v / kPow10[-k];
                out = neg ? -v : v;
                return true;
            }
        }
    }
    if (equalsNoCase(rest, "inf") || equalsNoCase(rest, "infinity")) {
        out = neg ? -std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::infinity();
        return true;
    }
    if (equalsNoCase(rest, "nan")) {
        out = std::numeric_limits<double>::quiet_NaN();
        return true;
    }
    if (rest.empty() || !((rest[0] >= '0' && rest[0] <= '9') || rest[0] == '.')) return false;
    auto [p, ec] =
        std::from_chars(rest.data(), rest.data() + rest.size(), out, std::chars_format::general);
    // from_chars reports out-of-range for 1e999; Prometheus (Go ParseFloat) gives +-Inf there,
    // but a malformed value is more likely a bug than a real reading: reject.
    if (ec != std::errc() || p != rest.data() + rest.size()) return false;
    if (neg) out = -out;
    return true;
}

bool parseTimestamp(std::string_view tok, std::int64_t& out) {
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
    return ec == std::errc() && p == tok.data() + tok.size();
}

class Parser {
public:
    Parser(std::string_view body, SampleCallback cb, const PromLimits& lim)
        : body_(body), cb_(cb), lim_(lim), maxLabels_(std::min(lim.maxLabels, kMaxLabelsCap)) {}

    Result<PromStats> run() {
        if (body_.size() > lim_.maxBodyBytes)
            return fail(Error{Errc::TooLarge, "body of " + std::to_string(body_.size()) +
                                                  " bytes exceeds the limit of " +
                                                  std::to_string(lim_.maxBodyBytes) + " bytes"});
        // The exposition format is UTF-8; names and label values end up in JSON and the
        // database. One pass, ASCII 8 bytes at a time, before any sample is delivered.
        if (auto bad = invalidUtf8At(body_)) {
            line_ = static_cast<std::uint32_t>(lineAt(body_, *bad));
            auto nl = body_.rfind('\n', *bad == 0 ? 0 : *bad - 1);
            lineStart_ = body_.data() + (nl == std::string_view::npos || *bad == 0 ? 0 : nl + 1);
            return err(body_.data() + *bad, describe(body_[*bad]) + " is not valid UTF-8");
        }
        const char* p = body_.data();
        const char* end = p + body_.size();
        while (p < end) {
            const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
            const char* eol = nl ? nl : end;
            ++line_;
            ++stats_.lines;
            if (static_cast<std::size_t>(eol - p) > lim_.maxLineBytes) {
                lineStart_ = p;
                return err(p + lim_.maxLineBytes,
                           "line longer than " + std::to_string(lim_.maxLineBytes) + " bytes");
            }
            const char* le = eol;
            if (le > p && le[-1] == '\r') --le;
            lineStart_ = p;
            if (auto r = parseLine(p, le); !r) return fail(std::move(r.error()));
            p = nl ? nl + 1 : end;
        }
        return stats_;
    }

private:
    std::unexpected<Error> err(const char* at, std::string what) const {
        auto col = static_cast<long>(at - lineStart_) + 1;
        return fail(Error::invalid(
            "line " + std::to_string(line_) + ", column " + std::to_string(col) + ": " + what, {},
            static_cast<int>(line_)));
    }

    // prev.size() when [p, e) starts with `prev` (a name already validated) followed by the end
    // or a byte outside `cls`; else 0. Inline, 8 bytes at a time.
    static std::size_t repeats(const char* p, const char* e, std::string_view prev,
                               std::uint8_t cls) {
        const std::size_t n = prev.size();
        if (n == 0 || static_cast<std::size_t>(e - p) < n) return 0;
        if (p[0] != prev[0]) return 0;
        if (!sameText(std::string_view(p, n), prev)) return 0;
        if (p + n < e && (cls == kLabelChar ? isLabelChar(p[n]) : is(p[n], cls))) return 0;
        return n;
    }

    static const char* skipBlanks(const char* p, const char* e) {
        while (p < e && is(*p, kBlank)) ++p;
        return p;
    }

    Result<void> parseLine(const char* p, const char* e) {
        p = skipBlanks(p, e);
        if (p == e) return {};
        if (*p == '#') return parseComment(p + 1, e);
        return parseSample(p, e);
    }

    Result<void> parseComment(const char* p, const char* e) {
        ++stats_.comments;
        p = skipBlanks(p, e);
        const char* w = p;
        while (p < e && !is(*p, kBlank)) ++p;
        std::string_view word(w, p - w);
        if (word != "HELP" && word != "TYPE") return {};  // an ordinary comment
        p = skipBlanks(p, e);
        const char* n = p;
        if (p == e || !is(*p, kNameStart))
            return err(p, "expected metric name after # " + std::string(word));
        while (p < e && is(*p, kNameChar)) ++p;
        if (static_cast<std::size_t>(p - n) > lim_.maxNameBytes)
            return err(n, "metric name too long");
        if (p < e && !is(*p, kBlank))
            return err(p, "unexpected " + describe(*p) + " in metric name");
        p = skipBlanks(p, e);
        if (word == "TYPE") {
            const char* t = p;
            while (p < e && !is(*p, kBlank)) ++p;
            std::string_view type(t, p - t);
            if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
                type != "untyped")
                return err(t, "unknown metric type \"" + std::string(type.substr(0, 64)) + "\"");
            if (skipBlanks(p, e) != e)
                return err(skipBlanks(p, e), "unexpected text after metric type");
        } else {
            // Escapes are rare: memchr finds each backslash.
            while (const char* bs = static_cast<const char*>(std::memchr(p, '\\', e - p))) {
                if (bs + 1 == e || (bs[1] != '\\' && bs[1] != 'n'))
                    return err(bs, "invalid escape sequence in HELP text");
                p = bs + 2;
            }
        }
        return {};
    }

    Result<void> parseSample(const char* p, const char* e) {
        PromSample s;
        const char* n = p;
        // A family's samples follow each other: when the line starts with the previous
        // sample's name (already checked) and a byte that cannot continue a name, the name is
        // that one, as the byte loop below would find it.
        if (const auto k = repeats(p, e, prevName_, kNameChar)) {
            p += k;
        } else {
            if (!is(*p, kNameStart)) return err(p, "expected metric name, found " + describe(*p));
            ++p;
            while (p < e && is(*p, kNameChar)) ++p;
            if (static_cast<std::size_t>(p - n) > lim_.maxNameBytes)
                return err(n, "metric name too long");
        }
        s.name = std::string_view(n, p - n);
        prevName_ = s.name;
        if (p < e && *p != '{' && !is(*p, kBlank))
            return err(p, "unexpected " + describe(*p) + " in metric name");
        p = skipBlanks(p, e);
        std::size_t count = 0;
        if (p < e && *p == '{') {
            ++p;
            for (;;) {
                p = skipBlanks(p, e);
                if (p == e) return err(p, "expected label name or '}'");
                if (*p == '}') {
                    ++p;
                    break;
                }
                const char* ln = p;
                // The same label names in the same order as the previous sample: compare, do
                // not re-validate (labels_[count] still holds the previous sample's).
                if (const auto k =
                        count < prevCount_ ? repeats(p, e, labels_[count].name, kLabelChar) : 0) {
                    p += k;
                } else {
                    if (!is(*p, kLabelStart))
                        return err(p, "expected label name or '}', found " + describe(*p));
                    ++p;
                    while (p < e && isLabelChar(*p)) ++p;
                    if (static_cast<std::size_t>(p - ln) > lim_.maxNameBytes)
                        return err(ln, "label name too long");
                }
                std::string_view lname(ln, p - ln);
                p = skipBlanks(p, e);
                if (p == e || *p != '=') return err(p, "expected '=' after label name");
                p = skipBlanks(p + 1, e);
                if (p == e || *p != '"') return err(p, "expected '\"' to open the label value");
                const char* v = ++p;
                bool escaped = false;
                // Values are short (a host name, an index): one inline scan to the first '"' or
                // '\\'. A backslash (rare) goes to the general loop below, from the value's start,
                // so an escape and an unterminated value are answered as they always were.
                for (std::uint64_t w; e - p >= 8; p += 8) {
                    std::memcpy(&w, p, 8);
                    if (hasQuoteOrEscape(w)) break;
                }
                while (p < e && !is(*p, kQuoteOrEscape)) ++p;
                if (p == e) return err(v - 1, "unterminated label value");
                if (*p == '\\') {
                    p = v;
                    // Find the closing quote; memchr does the scanning.
                    for (;;) {
                        const char* q = static_cast<const char*>(std::memchr(p, '"', e - p));
                        if (!q) return err(v - 1, "unterminated label value");
                        const char* bs = static_cast<const char*>(std::memchr(p, '\\', q - p));
                        if (!bs) {
                            p = q;
                            break;
                        }
                        escaped = true;
                        if (bs + 1 == e) return err(bs, "unterminated label value");
                        char c = bs[1];
                        if (c != '\\' && c != '"' && c != 'n')
                            return err(bs, "invalid escape sequence '\\" + std::string(1, c) +
                                               "' in label value (allowed: \\\\ \\\" \\n)");
                        p = bs + 2;
                    }
                }
                if (static_cast<std::size_t>(p - v) > lim_.maxLabelValueBytes)
                    return err(v, "label value longer than " +
                                      std::to_string(lim_.maxLabelValueBytes) + " bytes");
                if (count == maxLabels_)
                    return err(ln, "more than " + std::to_string(maxLabels_) + " labels");
                for (std::size_t i = 0; i < count; ++i)
                    if (sameText(labels_[i].name, lname))
                        return err(ln, "duplicate label name \"" + std::string(lname) + "\"");
                labels_[count++] = PromLabel{lname, std::string_view(v, p - v), escaped};
                p = skipBlanks(p + 1, e);
                if (p < e && *p == ',') {
                    ++p;
                    continue;
                }
                if (p < e && *p == '}') {
                    ++p;
                    break;
                }
                return err(p, "expected ',' or '}' after label value");
            }
            p = skipBlanks(p, e);
        }
        s.labels = labels_.data();
        s.labelCount = count;
        prevCount_ = count;
        if (p == e)
            return err(
                p, "expected a value after metric \"" + std::string(s.name.substr(0, 128)) + "\"");
        const char* t = p;
        while (p < e && !is(*p, kBlank)) ++p;
        if (!parseValue(std::string_view(t, p - t), s.value))
            return err(t, "invalid value \"" +
                              std::string(std::string_view(t, p - t).substr(0, 64)) + "\"");
        p = skipBlanks(p, e);
        if (p < e) {
            const char* ts = p;
            while (p < e && !is(*p, kBlank)) ++p;
            if (!parseTimestamp(std::string_view(ts, p - ts), s.timestampMs))
                return err(ts, "invalid timestamp \"" +
                                   std::string(std::string_view(ts, p - ts).substr(0, 64)) +
                                   "\" (integer milliseconds)");
            s.hasTimestamp = true;
            p = skipBlanks(p, e);
            if (p < e) return err(p, "unexpected text after the timestamp");
        }
        s.line = line_;
        ++stats_.samples;
        cb_(s);
        return {};
    }

    std::string_view body_;
    SampleCallback cb_;
    const PromLimits& lim_;
    std::size_t maxLabels_;
    std::uint32_t line_ = 0;
    const char* lineStart_ = nullptr;
    PromStats stats_;
    std::array<PromLabel, kMaxLabelsCap> labels_;
    std::string_view prevName_;  // the previous sample's name and label count (views of body_)
    std::size_t prevCount_ = 0;
};

}  // namespace

Result<PromStats> parsePromText(std::string_view body, SampleCallback onSample,
                                const PromLimits& limits) {
    Parser p(body, onSample, limits);
    return p.run();
}

void unescapeLabelValue(std::string_view raw, std::string& out) {
    out.clear();
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        char c = raw[i];
        if (c == '\\' && i + 1 < raw.size()) {
            char n = raw[++i];
            out.push_back(n == 'n' ? '\n' : n);
        } else {
            out.push_back(c);
        }
    }
}

std::string unescapeLabelValue(std::string_view raw) {
    std::string s;
    unescapeLabelValue(raw, s);
    return s;
}

}  // namespace loom::telemetry
