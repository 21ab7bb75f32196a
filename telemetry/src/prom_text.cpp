#include "loom/telemetry/prom_text.hpp"

#include "loom/inventory/input_guard.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace loom::telemetry {
namespace {

// Character classes, built once: the hot loops test one table entry per byte.
enum : std::uint8_t { kNameStart = 1, kNameChar = 2, kLabelStart = 4, kBlank = 8 };
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
        t[c] = v;
    }
    return t;
}
constexpr auto kClass = makeClasses();

inline bool is(char c, std::uint8_t cls) { return kClass[static_cast<unsigned char>(c)] & cls; }
inline bool isLabelChar(char c) { return is(c, kNameChar) && c != ':'; }

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
    // Fast path for plain non-negative integers, the bulk of counters and gauges.
    if (!rest.empty() && rest.size() <= 15) {
        std::uint64_t v = 0;
        std::size_t i = 0;
        for (; i < rest.size(); ++i) {
            unsigned d = static_cast<unsigned char>(rest[i]) - '0';
            if (d > 9) break;
            v = v * 10 + d;
        }
        if (i == rest.size()) {
            out = neg ? -static_cast<double>(v) : static_cast<double>(v);
            return true;
        }
    }
    if (equalsNoCase(rest, "inf") || equalsNoCase(rest, "infinity")) {
        out = neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
        return true;
    }
    if (equalsNoCase(rest, "nan")) {
        out = std::numeric_limits<double>::quiet_NaN();
        return true;
    }
    if (rest.empty() || !((rest[0] >= '0' && rest[0] <= '9') || rest[0] == '.')) return false;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), out,
                                   std::chars_format::general);
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
            return fail(Error{Errc::TooLarge,
                              "body of " + std::to_string(body_.size()) + " bytes exceeds the limit of " +
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
        return fail(Error::invalid("line " + std::to_string(line_) + ", column " +
                                       std::to_string(col) + ": " + what,
                                   {}, static_cast<int>(line_)));
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
        if (p == e || !is(*p, kNameStart)) return err(p, "expected metric name after # " + std::string(word));
        while (p < e && is(*p, kNameChar)) ++p;
        if (static_cast<std::size_t>(p - n) > lim_.maxNameBytes) return err(n, "metric name too long");
        if (p < e && !is(*p, kBlank)) return err(p, "unexpected " + describe(*p) + " in metric name");
        p = skipBlanks(p, e);
        if (word == "TYPE") {
            const char* t = p;
            while (p < e && !is(*p, kBlank)) ++p;
            std::string_view type(t, p - t);
            if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
                type != "untyped")
                return err(t, "unknown metric type \"" + std::string(type.substr(0, 64)) + "\"");
            if (skipBlanks(p, e) != e) return err(skipBlanks(p, e), "unexpected text after metric type");
        } else {
            for (; p < e; ++p)
                if (*p == '\\') {
                    if (p + 1 == e || (p[1] != '\\' && p[1] != 'n'))
                        return err(p, "invalid escape sequence in HELP text");
                    ++p;
                }
        }
        return {};
    }

    Result<void> parseSample(const char* p, const char* e) {
        PromSample s;
        const char* n = p;
        if (!is(*p, kNameStart)) return err(p, "expected metric name, found " + describe(*p));
        ++p;
        while (p < e && is(*p, kNameChar)) ++p;
        if (static_cast<std::size_t>(p - n) > lim_.maxNameBytes) return err(n, "metric name too long");
        s.name = std::string_view(n, p - n);
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
                if (!is(*p, kLabelStart)) return err(p, "expected label name or '}', found " + describe(*p));
                const char* ln = p;
                ++p;
                while (p < e && isLabelChar(*p)) ++p;
                if (static_cast<std::size_t>(p - ln) > lim_.maxNameBytes) return err(ln, "label name too long");
                std::string_view lname(ln, p - ln);
                p = skipBlanks(p, e);
                if (p == e || *p != '=') return err(p, "expected '=' after label name");
                p = skipBlanks(p + 1, e);
                if (p == e || *p != '"') return err(p, "expected '\"' to open the label value");
                const char* v = ++p;
                bool escaped = false;
                // Find the closing quote; memchr does the scanning, escapes are rare.
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
                if (static_cast<std::size_t>(p - v) > lim_.maxLabelValueBytes)
                    return err(v, "label value longer than " + std::to_string(lim_.maxLabelValueBytes) +
                                      " bytes");
                if (count == maxLabels_)
                    return err(ln, "more than " + std::to_string(maxLabels_) + " labels");
                for (std::size_t i = 0; i < count; ++i)
                    if (labels_[i].name == lname)
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
        if (p == e) return err(p, "expected a value after metric \"" + std::string(s.name.substr(0, 128)) + "\"");
        const char* t = p;
        while (p < e && !is(*p, kBlank)) ++p;
        if (!parseValue(std::string_view(t, p - t), s.value))
            return err(t, "invalid value \"" + std::string(std::string_view(t, p - t).substr(0, 64)) + "\"");
        p = skipBlanks(p, e);
        if (p < e) {
            const char* ts = p;
            while (p < e && !is(*p, kBlank)) ++p;
            if (!parseTimestamp(std::string_view(ts, p - ts), s.timestampMs))
                return err(ts, "invalid timestamp \"" + std::string(std::string_view(ts, p - ts).substr(0, 64)) +
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
