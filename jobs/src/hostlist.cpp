#include "loom/jobs/hostlist.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <variant>

namespace loom::jobs {

namespace {

struct Range {
    std::uint64_t lo = 0, hi = 0;
    std::size_t width = 0;  // digits of the low bound: the padding of every number
};
using Group = std::vector<Range>;
using Part = std::variant<std::string, Group>;

constexpr std::size_t kMaxDigits = 9;

bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }

Error at(std::size_t col, std::string message) {
    return Error::invalid("column " + std::to_string(col + 1) + ": " + std::move(message));
}

std::string describeChar(char c) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
    static const char* hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

// A number of text[i..): advances i. Errors name the column.
Result<std::pair<std::uint64_t, std::size_t>> number(std::string_view text, std::size_t& i) {
    const std::size_t start = i;
    while (i < text.size() && isDigit(text[i])) ++i;
    if (i == start) {
        if (i >= text.size()) return fail(at(i, "expected a number, got the end of the hostlist"));
        return fail(at(i, "expected a number, got " + describeChar(text[i])));
    }
    if (i - start > kMaxDigits)
        return fail(at(start, "number of more than " + std::to_string(kMaxDigits) + " digits"));
    std::uint64_t v = 0;
    for (std::size_t k = start; k < i; ++k) v = v * 10 + static_cast<std::uint64_t>(text[k] - '0');
    return std::pair{v, i - start};
}

// One bracket group, text[i] == '['; leaves i after the ']'.
Result<Group> bracket(std::string_view text, std::size_t& i) {
    const std::size_t open = i++;
    Group g;
    for (;;) {
        if (i >= text.size()) return fail(at(open, "'[' is never closed"));
        if (text[i] == '[') return fail(at(i, "nested '[' (Slurm does not nest brackets)"));
        if (text[i] == ']') return fail(at(i, "empty range in brackets"));
        auto lo = number(text, i);
        if (!lo) return fail(lo.error());
        Range r{lo->first, lo->first, lo->second};
        if (i < text.size() && text[i] == '-') {
            ++i;
            auto hi = number(text, i);
            if (!hi) return fail(hi.error());
            if (hi->first < r.lo)
                return fail(at(i - hi->second, "range ends at " + std::to_string(hi->first) +
                                                   ", below its start " + std::to_string(r.lo)));
            r.hi = hi->first;
        }
        g.push_back(r);
        if (i >= text.size()) return fail(at(open, "'[' is never closed"));
        if (text[i] == '[') return fail(at(i, "nested '[' (Slurm does not nest brackets)"));
        if (text[i] == ',') {
            ++i;
            continue;
        }
        if (text[i] == ']') {
            ++i;
            return g;
        }
        return fail(at(i, "expected ',', '-' or ']' in brackets, got " + describeChar(text[i])));
    }
}

std::uint64_t groupSize(const Group& g) {
    std::uint64_t n = 0;
    for (auto& r : g) n += r.hi - r.lo + 1;
    return n;
}

std::size_t digitsOf(std::uint64_t v) {
    std::size_t d = 1;
    while (v >= 10) {
        v /= 10;
        ++d;
    }
    return d;
}

// The most characters one number of the group is written with (its padding or its digits).
std::size_t groupWidth(const Group& g) {
    std::size_t w = 0;
    for (auto& r : g) w = std::max({w, r.width, digitsOf(r.hi)});
    return w;
}

void appendNumber(std::string& out, std::uint64_t v, std::size_t width) {
    std::string digits = std::to_string(v);
    if (digits.size() < width) out.append(width - digits.size(), '0');
    out += digits;
}

// Every name of one expression, the first bracket group outermost.
void expandParts(const std::vector<Part>& parts, std::size_t k, std::string& prefix,
                 std::vector<std::string>& out) {
    if (k == parts.size()) {
        out.push_back(prefix);
        return;
    }
    const std::size_t keep = prefix.size();
    if (auto* s = std::get_if<std::string>(&parts[k])) {
        prefix += *s;
        expandParts(parts, k + 1, prefix, out);
    } else {
        for (auto& r : std::get<Group>(parts[k]))
            for (std::uint64_t v = r.lo; v <= r.hi; ++v) {
                appendNumber(prefix, v, r.width);
                expandParts(parts, k + 1, prefix, out);
                prefix.resize(keep);
            }
    }
    prefix.resize(keep);
}

}  // namespace

Result<std::vector<std::string>> expandHostlist(std::string_view text,
                                                const HostlistLimits& limits) {
    if (text.size() > kMaxHostlistChars)
        return fail(Error{Errc::TooLarge, "hostlist of " + std::to_string(text.size()) +
                                              " characters, above the limit of " +
                                              std::to_string(kMaxHostlistChars)});
    std::vector<std::vector<Part>> exprs;
    // Names and their characters, counted before any name is built: each factor is <= 1e9 and
    // each product is checked against the limits before it grows again, so nothing overflows.
    std::uint64_t total = 0, bytes = 0;
    auto tooMany = [&](std::size_t col) {
        return fail(Error{Errc::TooLarge, "column " + std::to_string(col + 1) +
                                              ": the hostlist names more than " +
                                              std::to_string(limits.maxHosts) + " hosts"});
    };
    std::size_t i = 0;
    while (i <= text.size()) {
        std::vector<Part> parts;
        std::string literal;
        std::uint64_t count = 1;
        std::size_t nameChars = 0;  // the longest name this expression makes
        const std::size_t exprStart = i;
        bool any = false;
        auto checkNameChars = [&](std::size_t col) -> Result<void> {
            if (nameChars > limits.maxNameChars)
                return fail(at(col, "names of more than " + std::to_string(limits.maxNameChars) +
                                        " characters (a host name has at most " +
                                        std::to_string(limits.maxNameChars) + ")"));
            return {};
        };
        while (i < text.size() && text[i] != ',') {
            const char c = text[i];
            if (c == '[') {
                if (!literal.empty()) parts.emplace_back(std::move(literal));
                literal.clear();
                const std::size_t open = i;
                auto g = bracket(text, i);
                if (!g) return fail(g.error());
                count *= groupSize(*g);
                if (count > limits.maxHosts || total + count > limits.maxHosts)
                    return tooMany(open);
                nameChars += groupWidth(*g);
                if (auto ok = checkNameChars(exprStart); !ok) return fail(ok.error());
                parts.emplace_back(std::move(*g));
                any = true;
            } else if (c == ']') {
                return fail(at(i, "']' without '['"));
            } else if (isNameChar(c)) {
                literal += c;
                ++nameChars;
                if (auto ok = checkNameChars(exprStart); !ok) return fail(ok.error());
                any = true;
                ++i;
            } else {
                return fail(at(i, describeChar(c) +
                                      " is not allowed in a host name (letters, digits, '.', "
                                      "'_', '-')"));
            }
        }
        if (!literal.empty()) parts.emplace_back(std::move(literal));
        // Empty entries (",,", a trailing comma) are skipped, as Slurm skips them.
        if (any) {
            total += count;
            bytes += count * nameChars;  // <= maxHosts * maxNameChars: no overflow
            if (bytes > limits.maxBytes)
                return fail(Error{Errc::TooLarge, "column " + std::to_string(exprStart + 1) +
                                                      ": the hostlist's names come to more than " +
                                                      std::to_string(limits.maxBytes) +
                                                      " characters"});
            exprs.push_back(std::move(parts));
        }
        ++i;  // past the ',' (or the end)
    }
    if (exprs.empty()) return fail(Error::invalid("empty hostlist: no host names"));
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(total));
    std::string prefix;
    for (auto& parts : exprs) expandParts(parts, 0, prefix, out);
    return out;
}

namespace {

// A name split around its last digit run: prefix, number (as written), suffix.
struct Split {
    std::string prefix, digits, suffix;
};
bool splitLastNumber(std::string_view s, Split& out) {
    std::size_t e = s.size();
    while (e > 0 && !isDigit(s[e - 1])) --e;
    if (e == 0) return false;
    std::size_t b = e;
    while (b > 0 && isDigit(s[b - 1])) --b;
    if (e - b > kMaxDigits) return false;
    out = {std::string(s.substr(0, b)), std::string(s.substr(b, e - b)), std::string(s.substr(e))};
    return true;
}

// Consecutive numbers of one width run together: "1-3,10,01". Padded numbers (a leading zero)
// keep their width; unpadded ones have none, so 8 9 10 is one range, as Slurm writes it.
std::string rangesText(std::vector<std::string> numbers) {
    auto widthOf = [](const std::string& d) { return d.size() > 1 && d[0] == '0' ? d.size() : 0; };
    // Unpadded numbers first, then each padding width: each class runs in value order.
    std::sort(numbers.begin(), numbers.end(), [&](auto& a, auto& b) {
        const auto wa = widthOf(a), wb = widthOf(b);
        return wa != wb ? wa < wb : naturalLess(a, b);
    });
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    std::string out;
    std::size_t k = 0;
    while (k < numbers.size()) {
        const std::size_t w = widthOf(numbers[k]);
        const std::uint64_t lo = std::stoull(numbers[k]);
        std::uint64_t hi = lo;
        std::size_t n = k + 1;
        // A padded range keeps one width ("08-10" is fine: 10 has the width too); an unpadded
        // range takes only unpadded numbers.
        while (n < numbers.size() && std::stoull(numbers[n]) == hi + 1 &&
               (w == 0 ? widthOf(numbers[n]) == 0 : numbers[n].size() == w)) {
            ++hi;
            ++n;
        }
        if (!out.empty()) out += ',';
        appendNumber(out, lo, w);
        if (hi != lo) {
            out += '-';
            appendNumber(out, hi, w);
        }
        k = n;
    }
    return out;
}

struct Compressed {
    std::string prefix, ranges, suffix;  // prefix[ranges]suffix
    bool single = false;                 // one number: written without brackets
    std::string bracketed() const { return single ? ranges : "[" + ranges + "]"; }
    std::string text() const { return prefix + bracketed() + suffix; }
};

// Groups entries that differ only in one number (the last digit run of each entry's
// `prefix`) and share the rest into prefix[ranges]rest.
std::vector<Compressed> compress(const std::vector<std::pair<Split, std::string>>& items) {
    // key: (prefix, rest) → numbers
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> groups;
    for (auto& [sp, rest] : items) groups[{sp.prefix, rest}].push_back(sp.digits);
    std::vector<Compressed> out;
    for (auto& [key, numbers] : groups) {
        auto text = rangesText(numbers);
        const bool single = text.find_first_of(",-") == std::string::npos;
        out.push_back({key.first, std::move(text), key.second, single});
    }
    return out;
}

}  // namespace

std::string formatHostlist(std::span<const std::string> names) {
    const auto sorted = naturallySortedUnique({names.begin(), names.end()});

    // Pass 1: the last number of each name.
    std::vector<std::string> plain;
    std::vector<std::pair<Split, std::string>> numbered;
    for (auto& n : sorted) {
        Split sp;
        if (splitLastNumber(n, sp))
            numbered.emplace_back(sp, sp.suffix);
        else
            plain.push_back(n);
    }
    auto first = compress(numbered);

    // Pass 2: merge entries whose bracket and tail are equal and whose prefixes differ in
    // their last number (z1-r001-h[0-1], z1-r002-h[0-1] → z1-r[001-002]-h[0-1]).
    std::vector<std::string> pieces = plain;
    std::vector<std::pair<Split, std::string>> second;
    for (auto& c : first) {
        Split sp;
        if (splitLastNumber(c.prefix, sp)) {
            std::string rest = sp.suffix + c.bracketed() + c.suffix;
            sp.suffix.clear();
            second.emplace_back(std::move(sp), std::move(rest));
        } else {
            pieces.push_back(c.text());
        }
    }
    for (auto& c : compress(second)) pieces.push_back(c.text());

    // Output in natural order of the first name each piece expands to (its text compares the
    // same way up to the first bracket).
    std::sort(pieces.begin(), pieces.end(), [](auto& a, auto& b) { return naturalLess(a, b); });
    std::string out;
    for (auto& p : pieces) {
        if (!out.empty()) out += ',';
        out += p;
    }
    return out;
}

}  // namespace loom::jobs
