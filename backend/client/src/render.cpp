// kubectl-like rendering of API objects: tables, YAML, durations and ages.
#include "loom/client/client.hpp"

#include "loom/inventory/kinds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace loom::client {

using nlohmann::json;

std::optional<OutputFormat> parseOutputFormat(std::string_view s) {
    if (s == "table" || s.empty()) return OutputFormat::Table;
    if (s == "wide") return OutputFormat::Wide;
    if (s == "yaml") return OutputFormat::Yaml;
    if (s == "json") return OutputFormat::Json;
    if (s == "name") return OutputFormat::Name;
    return std::nullopt;
}

std::string scalarText(const json& j) {
    switch (j.type()) {
        case json::value_t::null: return "";
        case json::value_t::string: return j.get<std::string>();
        case json::value_t::boolean: return j.get<bool>() ? "true" : "false";
        case json::value_t::number_integer: return std::to_string(j.get<std::int64_t>());
        case json::value_t::number_unsigned: return std::to_string(j.get<std::uint64_t>());
        case json::value_t::number_float: {
            double d = j.get<double>();
            if (std::floor(d) == d && std::fabs(d) < 1e15) {
                return std::to_string(static_cast<std::int64_t>(d));
            }
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.4g", d);
            return buf;
        }
        case json::value_t::array:
        case json::value_t::object: {
            // Labels render as k=v,k2=v2 (as kubectl's --show-labels); other structures compact.
            if (j.is_object()) {
                std::string out;
                for (auto it = j.begin(); it != j.end(); ++it) {
                    if (!out.empty()) out += ',';
                    out += it.key() + "=" + scalarText(it.value());
                }
                return out;
            }
            std::string out;
            for (const auto& e : j) {
                if (!out.empty()) out += ',';
                out += scalarText(e);
            }
            return out;
        }
        default: return j.dump();
    }
}

std::string field(const json& obj, std::string_view key) {
    if (!obj.is_object()) return "";
    auto it = obj.find(std::string(key));
    if (it == obj.end()) return "";
    return scalarText(*it);
}

namespace {

std::optional<std::chrono::system_clock::time_point> parseRfc3339(std::string_view s) {
    int y, mo, d, h, mi;
    double sec = 0;
    if (s.size() < 19) return std::nullopt;
    std::string str(s);
    if (std::sscanf(str.c_str(), "%4d-%2d-%2d%*1[T ]%2d:%2d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6) {
        return std::nullopt;
    }
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = static_cast<int>(sec);
    std::time_t t = timegm(&tm);
    // A numeric offset ("+02:00") after the seconds moves the instant; Z or none is UTC.
    auto tail = str.find_first_of("+-", 19);
    if (tail != std::string::npos) {
        int oh = 0, om = 0;
        if (std::sscanf(str.c_str() + tail + 1, "%2d:%2d", &oh, &om) >= 1) {
            int off = (oh * 3600 + om * 60) * (str[tail] == '+' ? 1 : -1);
            t -= off;
        }
    }
    return std::chrono::system_clock::from_time_t(t);
}

std::string col(const json& o, std::string_view key) { return field(o, key); }

Column c(std::string header, std::string key) {
    return Column{std::move(header), [key = std::move(key)](const json& o) { return col(o, key); }};
}

Column ageColumn() {
    return Column{"AGE", [](const json& o) { return ageOf(field(o, "createdAt")); }};
}

Column labelsColumn() {
    return Column{"LABELS", [](const json& o) { return field(o, "labels"); }};
}

}  // namespace

std::string formatRfc3339(std::chrono::system_clock::time_point t) {
    std::time_t tt = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string localRfc3339(std::string_view rfc3339) {
    auto t = parseRfc3339(rfc3339);
    if (!t) return std::string(rfc3339);
    std::time_t tt = std::chrono::system_clock::to_time_t(*t);
    std::tm tm{};
    localtime_r(&tt, &tm);
    char buf[40];
    std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
    std::string out(buf, n);
    // strftime's %z is "+0530"; RFC 3339 writes "+05:30".
    if (out.size() >= 5 && (out[out.size() - 5] == '+' || out[out.size() - 5] == '-'))
        out.insert(out.size() - 2, ":");
    return out;
}

std::string ageOf(std::string_view rfc3339, std::chrono::system_clock::time_point now) {
    auto t = parseRfc3339(rfc3339);
    if (!t) return "";
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(now - *t).count();
    if (secs < 0) secs = 0;
    // kubectl's style: two most significant units for short spans, one for long ones.
    std::int64_t d = secs / 86400, h = (secs % 86400) / 3600, m = (secs % 3600) / 60,
                 s = secs % 60;
    if (d >= 10) return std::to_string(d) + "d";
    if (d > 0) return std::to_string(d) + "d" + (h ? std::to_string(h) + "h" : "");
    if (h >= 10) return std::to_string(h) + "h";
    if (h > 0) return std::to_string(h) + "h" + (m ? std::to_string(m) + "m" : "");
    if (m >= 10) return std::to_string(m) + "m";
    if (m > 0) return std::to_string(m) + "m" + (s ? std::to_string(s) + "s" : "");
    return std::to_string(s) + "s";
}

std::optional<std::chrono::seconds> parseDuration(std::string_view s) {
    if (s.empty()) return std::nullopt;
    std::int64_t total = 0;
    std::size_t i = 0;
    while (i < s.size()) {
        std::int64_t n = 0;
        std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            n = n * 10 + (s[i] - '0');
            if (n > 100'000'000) return std::nullopt;
            ++i;
        }
        if (i == start || i == s.size()) return std::nullopt;
        switch (s[i]) {
            case 's': total += n; break;
            case 'm': total += n * 60; break;
            case 'h': total += n * 3600; break;
            case 'd': total += n * 86400; break;
            case 'w': total += n * 7 * 86400; break;
            default: return std::nullopt;
        }
        ++i;
    }
    return std::chrono::seconds(total);
}

std::string jobHealthWord(const json& h) {
    // loomd's word (health.status, jobs::jobHealthStatus): the rule is loomd's alone.
    if (!h.is_object()) return "";
    auto s = h.find("status");
    return s != h.end() && s->is_string() ? s->get<std::string>() : std::string("unknown");
}

std::vector<Column> columnsForKind(std::string_view kind, bool wide,
                                   const std::vector<json>& sample) {
    std::vector<Column> cols{c("NAME", "name")};
    auto add = [&](std::initializer_list<Column> more) {
        cols.insert(cols.end(), more.begin(), more.end());
    };
    // Inventory kinds: the columns their description in inventory/kinds.hpp names.
    std::optional<inventory::Kind> inventoryKind;
    for (inventory::Kind k : inventory::kAllKinds)
        if (inventory::kindPlural(k) == kind) inventoryKind = k;
    if (inventoryKind) {
        const auto& info = inventory::kindInfo(*inventoryKind);
        auto addNames = [&](std::string_view names) {
            while (!names.empty()) {
                auto end = names.find(' ');
                std::string_view name = names.substr(0, end);
                if (!name.empty()) cols.push_back(c(inventory::columnHeader(info, name), std::string(name)));
                names = end == std::string_view::npos ? std::string_view() : names.substr(end + 1);
            }
        };
        addNames(info.columns);
        if (wide) addNames(info.wide);
    } else if (kind == "jobs") {
        // BUSBW: the expected bus bandwidth now, % of the NIC rate (issue 15); HEALTH: degraded
        // while a failure holds it below its healthy value (or cuts part of it off), gpu-failed
        // while a GPU of it is, links-down while a link it crosses is down without costing
        // busbw (yet), unknown when the impact model refused it; ok only when none holds.
        // EVENTS: its open events as loomd counts them (health.openEvents, issue 39): the
        // number the console, the web and `describe job` show.
        auto health = [](const json& o) -> const json* {
            auto it = o.find("health");
            return it != o.end() && it->is_object() ? &*it : nullptr;
        };
        add({c("OWNER", "owner"), c("GPUS", "gpus"), c("PATTERN", "pattern"), c("STATE", "state"),
             Column{"BUSBW",
                    [health](const json& o) {
                        auto* h = health(o);
                        return h && h->contains("busBw") ? scalarText((*h)["busBw"]) + "%"
                                                         : std::string();
                    }},
             Column{"HEALTH",
                    [health](const json& o) -> std::string {
                        auto* h = health(o);
                        return h ? jobHealthWord(*h) : std::string();
                    }},
             Column{"EVENTS", [health](const json& o) -> std::string {
                        auto* h = health(o);
                        return h && h->contains("openEvents") ? scalarText((*h)["openEvents"])
                                                              : std::string();
                    }}});
        if (wide) add({c("SOURCE", "source"), c("NODELIST", "nodelist"), labelsColumn()});
    } else {
        // Not an inventory kind: show every scalar field the objects have, in first-seen order.
        std::vector<std::string> keys;
        std::set<std::string> seen{"name"};
        for (const auto& o : sample) {
            if (!o.is_object()) continue;
            for (auto it = o.begin(); it != o.end(); ++it) {
                if (it.value().is_structured() && !wide) continue;
                if (seen.insert(it.key()).second) keys.push_back(it.key());
            }
        }
        for (const auto& k : keys) cols.push_back(c(inventory::headerOf(k), k));
        return cols;
    }
    cols.push_back(ageColumn());
    return cols;
}

std::string renderRows(const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width;
    for (const auto& r : rows) {
        if (width.size() < r.size()) width.resize(r.size(), 0);
        for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    }
    std::string out;
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t i = 0; i < r.size(); ++i) {
            line += r[i];
            if (i + 1 < r.size()) line.append(width[i] - r[i].size() + 3, ' ');
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line;
        out += '\n';
    }
    return out;
}

std::string renderTable(const std::vector<Column>& cols, const std::vector<json>& rows,
                        bool headers) {
    std::vector<std::vector<std::string>> cells;
    cells.reserve(rows.size() + 1);
    if (headers) {
        std::vector<std::string> h;
        for (const auto& col : cols) h.push_back(col.header);
        cells.push_back(std::move(h));
    }
    for (const auto& r : rows) {
        std::vector<std::string> line;
        line.reserve(cols.size());
        for (const auto& col : cols) {
            std::string v = col.cell(r);
            line.push_back(v.empty() ? "<none>" : std::move(v));
        }
        cells.push_back(std::move(line));
    }
    return renderRows(cells);
}

namespace {

// Strings that a YAML reader would take for another type are quoted.
bool needsQuotes(const std::string& s) {
    if (s.empty()) return true;
    static const std::set<std::string> kWords{"true",  "false", "yes", "no", "on", "off", "null",
                                              "True",  "False", "Yes", "No", "On", "Off", "Null",
                                              "TRUE",  "FALSE", "NULL", "~", "YES", "NO"};
    if (kWords.count(s)) return true;
    char* end = nullptr;
    std::strtod(s.c_str(), &end);
    if (end != s.c_str() && *end == '\0') return true;
    return false;
}

void emit(YAML::Emitter& out, const json& j) {
    switch (j.type()) {
        case json::value_t::object:
            out << YAML::BeginMap;
            for (auto it = j.begin(); it != j.end(); ++it) {
                out << YAML::Key << it.key() << YAML::Value;
                emit(out, it.value());
            }
            out << YAML::EndMap;
            break;
        case json::value_t::array:
            out << YAML::BeginSeq;
            for (const auto& e : j) emit(out, e);
            out << YAML::EndSeq;
            break;
        case json::value_t::string: {
            const auto& s = j.get_ref<const std::string&>();
            if (needsQuotes(s)) out << YAML::DoubleQuoted << s;
            else out << s;
            break;
        }
        case json::value_t::null: out << YAML::Null; break;
        default: out << scalarText(j); break;
    }
}

}  // namespace

std::string toYaml(const json& j) {
    YAML::Emitter out;
    emit(out, j);
    std::string s = out.c_str();
    if (s.empty() || s.back() != '\n') s += '\n';
    return s;
}

}  // namespace loom::client
