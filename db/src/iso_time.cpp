// ISO-8601 UTC times with milliseconds (event_repo.hpp: isoTimeMs, parseIsoTimeMs), the form
// events and rollups take in COPY lines and on the wire. Plain arithmetic on the proleptic
// Gregorian calendar (days from/to civil dates), no time zone database and no locale.
#include <charconv>
#include <cstdio>

#include "loom/db/event_repo.hpp"

namespace loom::db {
namespace {

std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace

std::string isoTimeMs(std::int64_t ms) {
    std::int64_t days = ms >= 0 ? ms / 86400000 : (ms - 86399999) / 86400000;
    std::int64_t rem = ms - days * 86400000;
    // civil_from_days
    std::int64_t z = days + 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ",
                  static_cast<long long>(y), m, d, static_cast<int>(rem / 3600000),
                  static_cast<int>(rem / 60000 % 60), static_cast<int>(rem / 1000 % 60),
                  static_cast<int>(rem % 1000));
    return buf;
}

std::optional<std::int64_t> parseIsoTimeMs(std::string_view s) {
    // Plain epoch milliseconds are accepted too.
    {
        std::int64_t v;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && p == s.data() + s.size()) return v;
    }
    auto num = [&](std::size_t pos, std::size_t len, int& out) {
        if (pos + len > s.size()) return false;
        auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, out);
        return ec == std::errc() && p == s.data() + pos + len;
    };
    int Y, M, D, h = 0, mi = 0, sec = 0, ms = 0;
    if (!num(0, 4, Y) || s.size() < 10 || s[4] != '-' || !num(5, 2, M) || s[7] != '-' ||
        !num(8, 2, D) || M < 1 || M > 12 || D < 1 || D > 31)
        return std::nullopt;
    std::size_t i = 10;
    std::int64_t offsetMin = 0;
    if (i < s.size()) {
        if (s[i] != 'T' && s[i] != 't' && s[i] != ' ') return std::nullopt;
        if (!num(i + 1, 2, h) || s.size() < i + 6 || s[i + 3] != ':' || !num(i + 4, 2, mi))
            return std::nullopt;
        i += 6;
        if (i < s.size() && s[i] == ':') {
            if (!num(i + 1, 2, sec)) return std::nullopt;
            i += 3;
            if (i < s.size() && s[i] == '.') {
                std::size_t j = i + 1;
                int digits = 0;
                while (j < s.size() && s[j] >= '0' && s[j] <= '9') {
                    if (digits < 3) ms = ms * 10 + (s[j] - '0');
                    ++digits;
                    ++j;
                }
                if (digits == 0) return std::nullopt;
                for (int k = digits; k < 3; ++k) ms *= 10;
                i = j;
            }
        }
        if (i < s.size()) {
            if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == s.size()) {
                ++i;
            } else if ((s[i] == '+' || s[i] == '-') && s.size() == i + 6 && s[i + 3] == ':') {
                int oh, om;
                if (!num(i + 1, 2, oh) || !num(i + 4, 2, om)) return std::nullopt;
                offsetMin = (s[i] == '-' ? -1 : 1) * (oh * 60 + om);
                i = s.size();
            } else {
                return std::nullopt;
            }
        }
    }
    if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
    std::int64_t days = daysFromCivil(Y, static_cast<unsigned>(M), static_cast<unsigned>(D));
    return ((days * 24 + h) * 60 + mi - offsetMin) * 60000 + sec * 1000 + ms;
}

}  // namespace loom::db
