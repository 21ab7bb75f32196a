// A reader of YAML documents that names the place of every error: the document path
// ("spec.zones[2].racks") and the 1-based line, unknown keys with "did you mean" suggestions,
// duplicate keys, the YAML merge key, typed scalars with ranges. Used by the cluster spec
// (spec_parse.cpp) and meant for every YAML document Loom reads.
//
// The readers throw yaml::Failure on bad input; the caller parses inside one try block and
// turns it into a Result (keeps field-by-field reading flat instead of threading a Result
// through a hundred reads):
//
//   try {
//       yaml::MapReader doc(root, "", {"apiVersion", "kind", "spec"});
//       auto name = doc.requireString("kind");
//       auto n = doc.integer("replicas", 1, 1, 100);   // default, min, max
//   } catch (const yaml::Failure& f) { return std::unexpected(f.error); }
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "loom/inventory/error.hpp"
#include "loom/inventory/model.hpp"

namespace loom::inventory::yaml {

// What the readers throw; carries the Error to return.
struct Failure {
    Error error;
};

int lineOf(const YAML::Node& n);  // 1-based, 0 when unknown
[[noreturn]] void failAt(std::string message, std::string path, int line,
                         Errc code = Errc::InvalidArgument);
std::size_t editDistance(std::string_view a, std::string_view b);  // case-insensitive
std::string describe(const YAML::Node& n);  // "a list", "\"abc\"", "null", ... for messages
std::string minMessage(long long min);      // "must be > 0" / "must be >= N"

// A YAML map being read: rejects unknown and duplicate keys up front, then hands out typed
// values with the document path and line of each.
class MapReader {
public:
    MapReader(const YAML::Node& node, std::string path,
              std::initializer_list<std::string_view> keys)
        : MapReader(node, std::move(path), std::vector<std::string_view>(keys)) {}

    MapReader(const YAML::Node& node, std::string path, std::vector<std::string_view> keys)
        : node_(node), path_(std::move(path)), keys_(std::move(keys)) {
        if (!node_.IsMap()) failAt("must be a map, got " + describe(node_), path_, lineOf(node_));
        checkKeys(node_, true);
    }

    const std::string& path() const { return path_; }
    int line() const { return lineOf(node_); }
    std::string at(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }
    bool has(std::string_view key) const { return find(key).IsDefined(); }
    YAML::Node get(std::string_view key) const { return find(key); }
    YAML::Node require(std::string_view key) const {
        YAML::Node v = find(key);
        if (!v.IsDefined()) failAt("missing required key", at(key), line());
        return v;
    }

    std::string string(std::string_view key, std::string def = {}) const {
        YAML::Node v = find(key);
        return v.IsDefined() ? atKeyLine(key, v, [&] { return asString(v, at(key)); }) : def;
    }
    std::string requireString(std::string_view key) const {
        YAML::Node v = require(key);
        return atKeyLine(key, v, [&] { return asString(v, at(key)); });
    }
    // A name given literally: restricted to name characters.
    std::string name(std::string_view key, bool required = true) const {
        YAML::Node v = required ? require(key) : find(key);
        if (!v.IsDefined()) return {};
        return atKeyLine(key, v, [&] {
            std::string s = asString(v, at(key));
            checkName(s, at(key), lineOf(v));
            return s;
        });
    }
    long long integer(std::string_view key, long long def, long long min, long long max) const {
        YAML::Node v = find(key);
        return v.IsDefined() ? atKeyLine(key, v, [&] { return asInt(v, at(key), min, max); }) : def;
    }
    long long requireInteger(std::string_view key, long long min, long long max) const {
        YAML::Node v = require(key);
        return atKeyLine(key, v, [&] { return asInt(v, at(key), min, max); });
    }
    double number(std::string_view key, double def, double min, double max) const {
        YAML::Node v = find(key);
        if (!v.IsDefined()) return def;
        return atKeyLine(key, v, [&] { return asDouble(v, at(key), min, max); });
    }
    bool boolean(std::string_view key, bool def) const {
        YAML::Node v = find(key);
        return v.IsDefined() ? atKeyLine(key, v, [&] { return asBool(v, at(key)); }) : def;
    }
    Labels labels(std::string_view key) const {
        YAML::Node v = find(key);
        if (!v.IsDefined()) return {};
        return atKeyLine(key, v, [&] { return readLabels(v, at(key)); });
    }
    // The line of `key` itself. yaml-cpp marks an empty value ("racks:" and nothing) with
    // the line of the token after it -- the next line -- so errors about such a value use
    // the key's line instead.
    int keyLine(std::string_view key) const;
    template <class F>
    auto atKeyLine(std::string_view key, const YAML::Node& v, F&& read) const
        -> std::invoke_result_t<F&> {
        if (!v.IsNull()) return read();
        try {
            return read();
        } catch (Failure& f) {
            if (int l = keyLine(key); l > 0) f.error.line = l;
            throw;
        }
    }

    static std::string asString(const YAML::Node& v, const std::string& path) {
        if (!v.IsScalar()) failAt("must be a string, got " + describe(v), path, lineOf(v));
        checkStringValue(v.Scalar(), path, lineOf(v));
        return v.Scalar();
    }
    // Text the database stores must be UTF-8 without NUL or raw control characters (tab and
    // newline are fine): refused here, naming the place, rather than inside COPY.
    static void checkStringValue(const std::string& s, const std::string& path, int line);
    // Plain scalars ("?"), and the explicit !!int / !!float tags, may be numbers; a quoted
    // scalar ("!") or any other tag (!!str, !custom) is a string and not a count.
    static bool numericTag(const YAML::Node& v, bool allowFloat);
    static void checkName(const std::string& s, const std::string& path, int line);
    static long long asInt(const YAML::Node& v, const std::string& path, long long min,
                           long long max);
    static double asDouble(const YAML::Node& v, const std::string& path, double min, double max);
    // true/false (also yes/no, on/off as YAML 1.1 reads them); a quoted scalar is a string.
    static bool asBool(const YAML::Node& v, const std::string& path);
    static Labels readLabels(const YAML::Node& v, const std::string& path);

private:
    static std::string trim(double d);
    // Rejects unknown and duplicate keys. The YAML merge key ("<<: *anchor" or "<<: [*a, *b]")
    // is honoured one level deep, since yaml-cpp leaves it to the application: keys written
    // in the map win over merged ones, earlier merged maps over later ones.
    void checkKeys(const YAML::Node& map, bool top);

    YAML::Node find(std::string_view key) const;
    std::string unknownKeyMessage(const std::string& key) const;

    YAML::Node node_;
    std::string path_;
    std::vector<std::string_view> keys_;
    std::vector<YAML::Node> merged_;
};

// Iterates a YAML sequence with each element's path.
template <class F>
void forEachItem(const YAML::Node& v, const std::string& path, std::size_t maxItems, F&& f) {
    if (!v.IsSequence()) failAt("must be a list, got " + describe(v), path, lineOf(v));
    if (v.size() > maxItems)
        failAt("has " + std::to_string(v.size()) + " entries, above the limit of " +
                   std::to_string(maxItems),
               path, lineOf(v));
    std::size_t i = 0;
    for (auto it = v.begin(); it != v.end(); ++it, ++i)
        f(*it, path + "[" + std::to_string(i) + "]");
}

}  // namespace loom::inventory::yaml
