#include "loom/jobs/hostlist.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>
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

// A number as written in a name: its value and how many digits ("007": 7 in 3, padded).
struct Num {
    std::uint32_t value = 0;  // at most kMaxDigits (9) digits
    std::uint8_t digits = 0;
    bool padded = false;  // a leading zero
    bool operator==(const Num&) const = default;
};

void appendNum(std::string& out, const Num& n) {
    appendNumber(out, n.value, n.padded ? n.digits : 0);
}

// The numbers as bracket ranges, "lo-hi" keeping the width of lo as Slurm reads it. A padded
// number has its width; an unpadded one fits any range whose width it does not fall short of,
// so 001..099 and 100 are "001-100" and 8 9 10 are "8-10". Ranges come in the order of their
// low bound: the same set of numbers gives the same text.
std::string rangesText(std::vector<Num> numbers) {
    auto byValue = [](const Num& a, const Num& b) {
        return a.value != b.value ? a.value < b.value : a.digits < b.digits;
    };
    std::sort(numbers.begin(), numbers.end(), byValue);
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    std::vector<Range> ranges;
    // The ranges that end at the value before this one: each can take one number of this value.
    std::vector<std::size_t> endAtPrevious, endAtCurrent;
    for (std::size_t k = 0; k < numbers.size(); ++k) {
        const Num& n = numbers[k];
        if (k == 0 || n.value != numbers[k - 1].value) {
            if (k > 0 && n.value == numbers[k - 1].value + 1)
                endAtPrevious.swap(endAtCurrent);
            else
                endAtPrevious.clear();
            endAtCurrent.clear();
        }
        auto fits = [&](std::size_t r) {
            const std::size_t w = ranges[r].width;
            return w == 0 ? !n.padded : (n.padded ? n.digits == w : n.digits >= w);
        };
        auto it = std::find_if(endAtPrevious.begin(), endAtPrevious.end(), fits);
        if (it != endAtPrevious.end()) {
            ranges[*it].hi = n.value;
            endAtCurrent.push_back(*it);
            endAtPrevious.erase(it);
        } else {
            ranges.push_back({n.value, n.value, n.padded ? n.digits : std::size_t{0}});
            endAtCurrent.push_back(ranges.size() - 1);
        }
    }
    std::string out;
    for (auto& r : ranges) {
        if (!out.empty()) out += ',';
        appendNumber(out, r.lo, r.width);
        if (r.hi != r.lo) {
            out += '-';
            appendNumber(out, r.hi, r.width);
        }
    }
    return out;
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Sets of two or more numbers, one id per distinct set (its bracket text).
class NumberSets {
public:
    std::uint32_t intern(std::vector<Num> numbers) {
        std::string text = "[" + rangesText(numbers) + "]";
        auto [it, fresh] = ids_.try_emplace(text, static_cast<std::uint32_t>(texts_.size()));
        if (fresh) {
            hashes_.push_back(mix(std::hash<std::string>{}(text) ^ 0x5e75ULL));
            texts_.push_back(std::move(text));
            members_.push_back(std::move(numbers));
        }
        return it->second;
    }
    const std::string& text(std::uint32_t id) const { return texts_[id]; }
    std::uint64_t hash(std::uint32_t id) const { return hashes_[id]; }
    const std::vector<Num>& members(std::uint32_t id) const { return members_[id]; }

private:
    std::unordered_map<std::string, std::uint32_t> ids_;
    std::vector<std::string> texts_;
    std::vector<std::uint64_t> hashes_;
    std::vector<std::vector<Num>> members_;
};

// One number position of a product: a number, or a set of them.
struct Cell {
    static constexpr std::uint32_t kOne = UINT32_MAX;
    Num one;
    std::uint32_t set = kOne;
    bool operator==(const Cell&) const = default;
};

// A name cut into its texts and its numbers: digit runs of at most kMaxDigits are numbers (a
// longer run is text, as a bracket cannot hold it). texts[k] is (offset, length) in the name:
// texts[0] numbers[0] texts[1] ... texts[numbers.size()].
void cutName(const std::string& n, std::vector<std::pair<std::size_t, std::size_t>>& texts,
             std::vector<Num>& numbers) {
    texts.assign(1, {0, 0});
    numbers.clear();
    for (std::size_t i = 0; i < n.size();) {
        std::size_t e = i;
        while (e < n.size() && isDigit(n[e])) ++e;
        if (e > i && e - i <= kMaxDigits) {
            std::uint32_t value = 0;
            for (std::size_t k = i; k < e; ++k) value = value * 10 + (n[k] - '0');
            numbers.push_back({value, static_cast<std::uint8_t>(e - i), e - i > 1 && n[i] == '0'});
            texts.emplace_back(e, 0);
        } else {
            e = std::max(e, i + 1);
            texts.back().second += e - i;
        }
        i = e;
    }
}

// The names of one shape (the same texts around the same count of numbers) as products: the
// texts (those of the shape's first name) with a number or a set of numbers at each position.
// 12 bytes a number: 16,384 names of 64 numbers each, every one its own shape, is ~15 MB.
struct Shape {
    std::uint32_t name = 0;  // the first name of the shape (its texts)
    std::size_t positions = 0;
    std::vector<Cell> cells;  // row r: cells[r * positions ...]
    std::vector<std::uint32_t> rows;
};

constexpr std::uint64_t kBase = 0x9e3779b97f4a7c15ULL;

// An open-addressing table from a 64-bit key to a row index, reused by every pass.
class KeyTable {
public:
    static constexpr std::uint32_t kEmpty = UINT32_MAX;
    void clear(std::size_t n) {
        std::size_t size = 16;
        while (size < 2 * n) size *= 2;
        keys_.assign(size, 0);
        values_.assign(size, kEmpty);
    }
    // The value of key (kEmpty if new: assign to it).
    std::uint32_t& at(std::uint64_t key) {
        const std::size_t mask = keys_.size() - 1;
        for (std::size_t i = mix(key) & mask;; i = (i + 1) & mask)
            if (values_[i] == kEmpty || keys_[i] == key) {
                keys_[i] = key;
                return values_[i];
            }
    }

private:
    std::vector<std::uint64_t> keys_;
    std::vector<std::uint32_t> values_;
};

// Merges the products that differ only at position p, for each p from the last to the first:
// z1-r001-h0, z1-r001-h1, z1-r002-h0, z1-r002-h1 → z1-r001-h[0-1], z1-r002-h[0-1] →
// z1-r[001-002]-h[0-1]. Rows are grouped by a hash of their other positions (a polynomial, so
// removing one position's term is O(1)), then compared cell by cell.
void mergeProducts(Shape& s, NumberSets& sets) {
    const std::size_t P = s.positions;
    if (P == 0 || s.rows.size() < 2) return;
    auto cellHash = [&](const Cell& c) {
        return c.set == Cell::kOne
                   ? mix((std::uint64_t{c.one.value} << 9) | (std::uint64_t{c.one.digits} << 1) |
                         std::uint64_t{c.one.padded})
                   : sets.hash(c.set);
    };
    std::vector<std::uint64_t> power(P, 1);
    for (std::size_t k = 1; k < P; ++k) power[k] = power[k - 1] * kBase;
    auto row = [&](std::uint32_t r) { return s.cells.data() + std::size_t{r} * P; };
    auto rowHash = [&](std::uint32_t r) {
        std::uint64_t h = 0;
        for (std::size_t q = 0; q < P; ++q) h += cellHash(row(r)[q]) * power[P - 1 - q];
        return h;
    };
    std::vector<std::uint64_t> hash(s.cells.size() / P);
    KeyTable table;
    for (auto r : s.rows) hash[r] = rowHash(r);

    for (std::size_t p = P; p-- > 0;) {
        const Cell first = row(s.rows[0])[p];
        if (std::all_of(s.rows.begin(), s.rows.end(), [&](auto r) { return row(r)[p] == first; }))
            continue;
        // Leaders of groups: by the hash of the other positions; next[] chains equal hashes.
        table.clear(s.rows.size());
        std::vector<std::uint32_t> leaders, next;
        std::vector<std::vector<Num>> gathered;  // per leader, once a second row joins
        std::vector<std::uint32_t> gatheredOf;
        for (auto r : s.rows) {
            const std::uint64_t key = hash[r] - cellHash(row(r)[p]) * power[P - 1 - p];
            std::uint32_t& slot = table.at(key);
            const bool fresh = slot == KeyTable::kEmpty;
            std::uint32_t g = fresh ? UINT32_MAX : slot;
            while (g != UINT32_MAX) {
                const Cell* a = row(leaders[g]);
                const Cell* b = row(r);
                bool same = true;
                for (std::size_t q = 0; q < P && same; ++q) same = q == p || a[q] == b[q];
                if (same) break;
                g = next[g];
            }
            if (g == UINT32_MAX) {  // a new group
                const auto id = static_cast<std::uint32_t>(leaders.size());
                // A hash shared by rows that differ elsewhere: chain them.
                next.push_back(fresh ? UINT32_MAX : slot);
                slot = id;
                leaders.push_back(r);
                gatheredOf.push_back(UINT32_MAX);
                continue;
            }
            auto addCell = [&](std::vector<Num>& into, const Cell& c) {
                if (c.set == Cell::kOne)
                    into.push_back(c.one);
                else
                    into.insert(into.end(), sets.members(c.set).begin(), sets.members(c.set).end());
            };
            if (gatheredOf[g] == UINT32_MAX) {
                gatheredOf[g] = static_cast<std::uint32_t>(gathered.size());
                gathered.emplace_back();
                addCell(gathered.back(), row(leaders[g])[p]);
            }
            addCell(gathered[gatheredOf[g]], row(r)[p]);
        }
        for (std::size_t g = 0; g < leaders.size(); ++g) {
            if (gatheredOf[g] == UINT32_MAX) continue;
            Cell& c = row(leaders[g])[p];
            c.set = sets.intern(std::move(gathered[gatheredOf[g]]));
            c.one = {};
            hash[leaders[g]] = rowHash(leaders[g]);
        }
        s.rows = std::move(leaders);
    }
}

}  // namespace

std::string formatHostlist(std::span<const std::string> names) {
    const auto sorted = naturallySortedUnique({names.begin(), names.end()});

    // The names by shape: a name's texts (cutName), each with the length before it, are the key.
    std::unordered_map<std::string, std::size_t> shapeOf;
    std::vector<Shape> shapes;
    std::string key;
    std::vector<std::pair<std::size_t, std::size_t>> texts;
    std::vector<Num> numbers;
    for (std::size_t k = 0; k < sorted.size(); ++k) {
        const std::string& n = sorted[k];
        cutName(n, texts, numbers);
        key.clear();
        for (auto [at, length] : texts) {
            std::size_t l = length;  // the length first, 7 bits a byte
            for (; l >= 0x80; l >>= 7) key += static_cast<char>(0x80 | (l & 0x7f));
            key += static_cast<char>(l);
            key.append(n, at, length);
        }
        auto [it, fresh] = shapeOf.try_emplace(key, shapes.size());
        if (fresh) {
            shapes.emplace_back();
            shapes.back().name = static_cast<std::uint32_t>(k);
            shapes.back().positions = numbers.size();
        }
        Shape& s = shapes[it->second];
        s.rows.push_back(static_cast<std::uint32_t>(s.rows.size()));
        for (auto& num : numbers) s.cells.push_back({num, Cell::kOne});
    }
    shapeOf.clear();

    NumberSets sets;
    std::vector<std::string> pieces;
    for (auto& s : shapes) {
        mergeProducts(s, sets);
        const std::string& first = sorted[s.name];
        cutName(first, texts, numbers);
        for (auto r : s.rows) {
            std::string piece = first.substr(texts[0].first, texts[0].second);
            for (std::size_t p = 0; p < s.positions; ++p) {
                const Cell& c = s.cells[std::size_t{r} * s.positions + p];
                if (c.set == Cell::kOne)
                    appendNum(piece, c.one);
                else
                    piece += sets.text(c.set);
                piece.append(first, texts[p + 1].first, texts[p + 1].second);
            }
            pieces.push_back(std::move(piece));
        }
        s = {};  // its cells are done with
    }

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
