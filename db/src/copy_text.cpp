#include "copy_text.hpp"

#include <algorithm>

namespace loom::db::detail {
namespace {

void skipSpace(std::string_view s, std::size_t& i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
}

void appendUtf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

bool parseString(std::string_view s, std::size_t& i, std::string& out) {
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    while (i < s.size()) {
        char c = s[i++];
        if (c == '"') return true;
        if (c != '\\') {
            out += c;
            continue;
        }
        if (i >= s.size()) return false;
        char e = s[i++];
        switch (e) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'u': {
                if (i + 4 > s.size()) return false;
                unsigned cp = 0;
                for (int k = 0; k < 4; ++k) {
                    char h = s[i++];
                    cp <<= 4;
                    if (h >= '0' && h <= '9') cp |= h - '0';
                    else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
                    else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
                    else return false;
                }
                appendUtf8(out, cp);
                break;
            }
            default: out += e;
        }
    }
    return false;
}

// Any JSON value that is not a string, kept as text (balanced brackets, strings skipped).
bool skipValue(std::string_view s, std::size_t& i, std::string& out) {
    std::size_t start = i;
    int depth = 0;
    while (i < s.size()) {
        char c = s[i];
        if (c == '"') {
            std::string ignored;
            if (!parseString(s, i, ignored)) return false;
            continue;
        }
        if (c == '{' || c == '[') ++depth;
        if (c == '}' || c == ']') {
            if (depth == 0) break;
            --depth;
        }
        if (c == ',' && depth == 0) break;
        ++i;
    }
    out.assign(s.substr(start, i - start));
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return true;
}

}  // namespace

bool parseLabels(std::string_view s, inventory::Labels& out) {
    out.clear();
    std::size_t i = 0;
    skipSpace(s, i);
    if (i >= s.size() || s[i] != '{') return false;
    ++i;
    skipSpace(s, i);
    if (i < s.size() && s[i] == '}') return true;
    while (i < s.size()) {
        std::string key, value;
        skipSpace(s, i);
        if (!parseString(s, i, key)) return false;
        skipSpace(s, i);
        if (i >= s.size() || s[i] != ':') return false;
        ++i;
        skipSpace(s, i);
        if (i < s.size() && s[i] == '"') {
            if (!parseString(s, i, value)) return false;
        } else if (!skipValue(s, i, value)) {
            return false;
        }
        out.emplace_back(std::move(key), std::move(value));
        skipSpace(s, i);
        if (i < s.size() && s[i] == ',') {
            ++i;
            continue;
        }
        if (i < s.size() && s[i] == '}') break;
        return false;
    }
    // jsonb orders keys by length first; the model wants them sorted by key.
    std::sort(out.begin(), out.end());
    return true;
}

void splitCopyLine(const std::string& line, std::vector<std::string>& storage,
                   std::vector<CopyField>& fields) {
    fields.clear();
    // Views point into storage: size it once so it never reallocates under them (no table
    // has more than 64 columns).
    if (storage.size() < 64) storage.resize(64);
    std::size_t used = 0;
    std::size_t start = 0;
    const std::size_t n = line.size();
    while (true) {
        std::size_t end = line.find('\t', start);
        if (end == std::string::npos) end = n;
        std::string_view raw(line.data() + start, end - start);
        if (raw == "\\N") {
            fields.push_back({{}, true});
        } else if (raw.find('\\') == std::string_view::npos) {
            fields.push_back({raw, false});
        } else {
            std::string& s = storage[used < 63 ? used++ : 63];
            s.clear();
            for (std::size_t i = 0; i < raw.size(); ++i) {
                char c = raw[i];
                if (c != '\\' || i + 1 == raw.size()) {
                    s += c;
                    continue;
                }
                char e = raw[++i];
                switch (e) {
                    case 't': s += '\t'; break;
                    case 'n': s += '\n'; break;
                    case 'r': s += '\r'; break;
                    case 'b': s += '\b'; break;
                    case 'f': s += '\f'; break;
                    case 'v': s += '\v'; break;
                    default: s += e;
                }
            }
            fields.push_back({s, false});
        }
        if (end == n) break;
        start = end + 1;
    }
}

}  // namespace loom::db::detail
