// COPY text format and jsonb label helpers shared by the repositories, the raw-line COPY writer
// and the nullable-text reader (internal to db/).
#pragma once

#include "loom/inventory/json_text.hpp"
#include "loom/inventory/model.hpp"

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::db::detail {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// COPY ... FROM STDIN of preformatted text lines. libpqxx 6.4's stream_to keeps its raw-line
// writer private (rows go through per-field tuple escaping); tablewriter, deprecated in 6.4
// but the same wire path, takes raw lines, so rows are formatted once, by the caller.
// Lines are gathered into chunks of ~64 KB sent as one CopyData message each (the protocol does
// not tie messages to rows): per line, a copy into the reused chunk instead of a string built
// by libpqxx and a libpq call.
class CopyIn {
public:
    CopyIn(pqxx::transaction_base& tx, const std::string& table,
           const std::vector<std::string>& columns)
        : writer_(tx, table, columns.begin(), columns.end()) {
        chunk_.reserve(kChunk + 4096);
    }
    // One row in COPY text format, without its newline.
    void line(std::string_view l) {
        if (!chunk_.empty()) chunk_ += '\n';
        chunk_ += l;
        if (chunk_.size() >= kChunk) flush();
    }
    void complete() {
        flush();
        writer_.complete();
    }

private:
    static constexpr std::size_t kChunk = 64 * 1024;
    // libpqxx ends what it is given with the newline of the chunk's last line.
    void flush() {
        if (chunk_.empty()) return;
        writer_.write_raw_line(chunk_);
        chunk_.clear();
    }
    pqxx::tablewriter writer_;
    std::string chunk_;
};
#pragma GCC diagnostic pop

// A nullable text column as a string ("" for NULL).
inline std::string col(const pqxx::field& f) { return f.is_null() ? std::string() : f.c_str(); }

// Appends `s` escaped for COPY text format (backslash, tab, newline, carriage return).
inline void copyEscape(std::string& out, std::string_view s) {
    for (char c : s) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\t': out += "\\t"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            default: out += c;
        }
    }
}

// A PostgreSQL text[] literal ({"a","b\\"c"}), passed as ONE parameter ($1::text[]) and never
// spliced into SQL: every element double-quoted with " and \ escaped, so any text survives.
template <class Range>
std::string pgTextArray(const Range& items) {
    std::string out = "{";
    bool first = true;
    for (const auto& item : items) {
        if (!first) out += ',';
        first = false;
        out += '"';
        for (char c : std::string_view(item)) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        out += '"';
    }
    return out + "}";
}

inline std::string labelsJson(const inventory::Labels& labels) {
    if (labels.empty()) return "{}";
    std::string out = "{";
    for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i) out += ',';
        appendJsonString(out, labels[i].first);
        out += ':';
        appendJsonString(out, labels[i].second);
    }
    return out + "}";
}

// Parses the text form of a jsonb object of strings ({"a": "b"}) into sorted Labels. Non
// string values are kept as their JSON text. Returns false on malformed input.
bool parseLabels(std::string_view json, inventory::Labels& out);

// Splits one COPY text line into fields, unescaping in place into `storage`. A NULL field
// (\N) becomes an empty view with isNull set.
struct CopyField {
    std::string_view text;
    bool isNull = false;
};
void splitCopyLine(const std::string& line, std::vector<std::string>& storage,
                   std::vector<CopyField>& fields);

inline std::int64_t toInt(std::string_view s) {
    std::int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}
inline double toDouble(std::string_view s) {
    double v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

}  // namespace loom::db::detail
