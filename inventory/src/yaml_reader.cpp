#include "loom/inventory/yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "loom/inventory/input_guard.hpp"
#include "loom/inventory/name_limits.hpp"
#include "spec_pattern.hpp"

namespace loom::inventory::yaml {

int lineOf(const YAML::Node& n) {
    if (!n.IsDefined()) return 0;
    return n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
}

[[noreturn]] void failAt(std::string message, std::string path, int line, Errc code) {
    throw Failure{Error{code, std::move(message), std::move(path), line}};
}

std::size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            auto ca = std::tolower((unsigned char)a[i - 1]);
            auto cb = std::tolower((unsigned char)b[j - 1]);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca == cb ? 0 : 1)});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string describe(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Null:
            return "null";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Map:
            return "a map";
        case YAML::NodeType::Scalar: {
            std::string s = n.Scalar();
            if (s.size() > 40) s = s.substr(0, 40) + "...";
            if (n.Tag() != "!" && n.Tag() != "?" && !n.Tag().empty())
                return "\"" + s + "\" tagged " + n.Tag();
            return (n.Tag() == "!" ? "string \"" : "\"") + s + "\"";
        }
        default:
            return "nothing";
    }
}

std::string minMessage(long long min) {
    return min == 1 ? "must be > 0" : "must be >= " + std::to_string(min);
}

void MapReader::checkName(const std::string& s, const std::string& path, int line) {
    if (s.empty()) failAt("must not be empty", path, line);
    if (s.size() > kMaxNameChars)
        failAt("must be at most " + std::to_string(kMaxNameChars) + " characters", path, line);
    for (char c : s)
        if (!detail::isNameChar(c))
            failAt("character '" + detail::showChar(c) +
                       "' is not allowed in names (use letters, digits, '-', '_', '.')",
                   path, line);
}

Labels MapReader::readLabels(const YAML::Node& v, const std::string& path) {
    if (!v.IsMap()) failAt("must be a map of strings, got " + describe(v), path, lineOf(v));
    Labels out;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!it->first.IsScalar()) failAt("label keys must be strings", path, lineOf(it->first));
        std::string key = it->first.Scalar();
        std::string kp = path + "." + key;
        if (key.empty() || key.size() > 63)
            failAt("label keys must be 1 to 63 characters", kp, lineOf(it->first));
        for (char c : key)
            if (!detail::isNameChar(c) && c != '/')
                failAt("character '" + detail::showChar(c) + "' is not allowed in label keys", kp,
                       lineOf(it->first));
        if (!it->second.IsScalar())
            failAt("label values must be strings, got " + describe(it->second), kp,
                   lineOf(it->second));
        if (it->second.Scalar().size() > 256)
            failAt("label values must be at most 256 characters", kp, lineOf(it->second));
        checkStringValue(it->second.Scalar(), kp, lineOf(it->second));
        auto pos =
            std::lower_bound(out.begin(), out.end(), key,
                             [](const auto& p, const std::string& k) { return p.first < k; });
        if (pos != out.end() && pos->first == key) failAt("duplicate label", kp, lineOf(it->first));
        out.insert(pos, {key, it->second.Scalar()});
    }
    return out;
}

int MapReader::keyLine(std::string_view key) const {
    auto in = [&](const YAML::Node& map) {
        for (auto it = map.begin(); it != map.end(); ++it)
            if (it->first.IsScalar() && it->first.Scalar() == key) return lineOf(it->first);
        return 0;
    };
    int l = in(node_);
    for (std::size_t i = 0; l == 0 && i < merged_.size(); ++i) l = in(merged_[i]);
    return l;
}

void MapReader::checkStringValue(const std::string& s, const std::string& path, int line) {
    if (auto ok = checkText(s, "the value", path, line); !ok)
        failAt(ok.error().message, path, line);
}

long long MapReader::asInt(const YAML::Node& v, const std::string& path, long long min,
                           long long max) {
    if (!v.IsScalar() || !numericTag(v, false))
        failAt("must be an integer, got " + describe(v), path, lineOf(v));
    const std::string& s = v.Scalar();
    long long x = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), x);
    if (r.ec == std::errc::result_out_of_range)
        failAt(s[0] == '-' ? minMessage(min) : "must be <= " + std::to_string(max), path,
               lineOf(v));
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty())
        failAt("must be an integer, got " + describe(v), path, lineOf(v));
    if (x < min) failAt(minMessage(min), path, lineOf(v));
    if (x > max) failAt("must be <= " + std::to_string(max), path, lineOf(v));
    return x;
}

double MapReader::asDouble(const YAML::Node& v, const std::string& path, double min, double max) {
    if (!v.IsScalar() || !numericTag(v, true))
        failAt("must be a number, got " + describe(v), path, lineOf(v));
    const std::string& s = v.Scalar();
    double x = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), x);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty() || !std::isfinite(x))
        failAt("must be a number, got " + describe(v), path, lineOf(v));
    if (x < min) failAt("must be >= " + trim(min), path, lineOf(v));
    if (x > max) failAt("must be <= " + trim(max), path, lineOf(v));
    return x;
}

bool MapReader::asBool(const YAML::Node& v, const std::string& path) {
    bool b = false;
    if (!v.IsScalar() || v.Tag() == "!" || !YAML::convert<bool>::decode(v, b))
        failAt("must be true or false, got " + describe(v), path, lineOf(v));
    return b;
}

std::string MapReader::trim(double d) {
    std::ostringstream os;
    os << d;
    return os.str();
}

void MapReader::checkKeys(const YAML::Node& map, bool top) {
    std::vector<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
        const YAML::Node k = it->first;
        if (!k.IsScalar()) failAt("keys must be strings, got " + describe(k), path_, lineOf(k));
        const std::string& key = k.Scalar();
        if (std::find(seen.begin(), seen.end(), key) != seen.end())
            failAt("duplicate key", at(key), lineOf(k));
        seen.push_back(key);
        if (key == "<<" && k.Tag() != "!") {
            if (!top) failAt("nested merge keys are not supported", at(key), lineOf(k));
            const YAML::Node v = it->second;
            if (v.IsMap()) {
                merged_.push_back(v);
            } else if (v.IsSequence()) {
                for (auto m = v.begin(); m != v.end(); ++m) {
                    if (!m->IsMap())
                        failAt("merge key needs maps, got " + describe(*m), at(key), lineOf(*m));
                    merged_.push_back(*m);
                }
            } else {
                failAt("merge key needs a map or a list of maps, got " + describe(v), at(key),
                       lineOf(v));
            }
            continue;
        }
        if (std::find(keys_.begin(), keys_.end(), key) == keys_.end())
            failAt(unknownKeyMessage(key), at(key), lineOf(k));
    }
    if (top)
        for (std::size_t i = 0; i < merged_.size(); ++i) checkKeys(merged_[i], false);
}

YAML::Node MapReader::find(std::string_view key) const {
    auto in = [&](const YAML::Node& map) {
        for (auto it = map.begin(); it != map.end(); ++it)
            if (it->first.Scalar() == key && it->first.Scalar() != "<<") return it->second;
        return YAML::Node(YAML::NodeType::Undefined);
    };
    YAML::Node v = in(node_);
    for (std::size_t i = 0; !v.IsDefined() && i < merged_.size(); ++i) v = in(merged_[i]);
    return v;
}

std::string MapReader::unknownKeyMessage(const std::string& key) const {
    std::string_view best;
    std::size_t bestD = std::numeric_limits<std::size_t>::max();
    for (auto k : keys_) {
        auto d = editDistance(key, k);
        if (d < bestD) bestD = d, best = k;
    }
    std::size_t tolerance = std::max<std::size_t>(2, key.size() / 3);
    if (!best.empty() && bestD <= tolerance)
        return "unknown key; did you mean \"" + std::string(best) + "\"?";
    std::string all;
    for (auto k : keys_) {
        if (!all.empty()) all += ", ";
        all += k;
    }
    return "unknown key; valid keys: " + all;
}

bool MapReader::numericTag(const YAML::Node& v, bool allowFloat) {
    const std::string& t = v.Tag();
    return t == "?" || t.empty() || t == "tag:yaml.org,2002:int" ||
           (allowFloat && t == "tag:yaml.org,2002:float");
}

}  // namespace loom::inventory::yaml
