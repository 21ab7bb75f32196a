// List helpers shared by the repositories that serve API lists (internal to db/): opaque
// keyset cursors and NetBox's lookups (field__ic=..., __gte, __empty, ...) as SQL conditions
// whose values are always parameters.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "loom/inventory/error.hpp"

namespace loom::db::detail {

// Cursors are the last name of the previous page, hex-encoded so they are URL-safe.
inline std::string encodeCursor(const std::string& name) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    out.reserve(name.size() * 2);
    for (unsigned char c : name) {
        out += hex[c >> 4];
        out += hex[c & 15];
    }
    return out;
}

inline std::optional<std::string> decodeCursor(const std::string& c) {
    if (c.size() % 2) return std::nullopt;
    std::string out;
    auto val = [](char ch) -> int {
        if (ch >= '0' && ch <= '9') return ch - '0';
        if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < c.size(); i += 2) {
        int a = val(c[i]), b = val(c[i + 1]);
        if (a < 0 || b < 0) return std::nullopt;
        out += char(a * 16 + b);
    }
    return out;
}

inline constexpr const char* kLookups = "n, ic, nic, isw, iew, ie, gt, gte, lt, lte, empty";

// `value` escaped for LIKE (backslash is PostgreSQL's default escape character).
inline std::string likeEscaped(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == '%' || c == '_' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

inline bool isNumber(const std::string& v) {
    if (v.empty() || v.size() > 40) return false;
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    return *end == '\0' && v.find_first_of("xXnN") == std::string::npos;  // no hex, inf, nan
}

// One filter as SQL on `expr` with its value as a parameter (never spliced): exact by default
// (the value compared as text), or one of NetBox's lookups.
inline Result<std::string> lookupCondition(const std::string& expr, const std::string& op,
                                           const std::string& value,
                                           std::vector<std::string>& params) {
    const std::string text = expr + "::text";
    auto param = [&](std::string v) {
        params.push_back(std::move(v));
        return "$" + std::to_string(params.size());
    };
    if (op.empty()) return text + " = " + param(value);
    if (op == "n") return "(" + text + " IS DISTINCT FROM " + param(value) + ")";
    if (op == "ie") return "lower(" + text + ") = lower(" + param(value) + ")";
    // Case-insensitive patterns as lower(x) LIKE lower(p): the name trigram indexes are on
    // lower(name) (migration 0032), so they serve these and never an equality on the name.
    const std::string lowered = "lower(" + text + ")";
    if (op == "ic") return lowered + " LIKE '%' || lower(" + param(likeEscaped(value)) + ") || '%'";
    if (op == "nic")
        return "NOT coalesce(" + lowered + " LIKE '%' || lower(" + param(likeEscaped(value)) +
               ") || '%', false)";
    if (op == "isw") return lowered + " LIKE lower(" + param(likeEscaped(value)) + ") || '%'";
    if (op == "iew") return lowered + " LIKE '%' || lower(" + param(likeEscaped(value)) + ")";
    if (op == "empty") {
        if (value != "true" && value != "false")
            return fail(Error::invalid("__empty takes true or false, not '" + value + "'"));
        std::string isEmpty = "(" + expr + " IS NULL OR " + text + " = '')";
        return value == "true" ? isEmpty : "NOT " + isEmpty;
    }
    const char* cmp = op == "gt"    ? ">"
                      : op == "gte" ? ">="
                      : op == "lt"  ? "<"
                      : op == "lte" ? "<="
                                    : nullptr;
    if (!cmp) return fail(Error::invalid("unknown lookup '__" + op + "'; lookups: " + kLookups));
    if (isNumber(value))  // numerically, on the values that are numbers
        return "(CASE WHEN " + text + " ~ '^-?[0-9]+(\\.[0-9]+)?$' THEN " + text + "::numeric " +
               cmp + " " + param(value) + "::numeric ELSE false END)";
    return text + " " + cmp + " " + param(value);
}

}  // namespace loom::db::detail
