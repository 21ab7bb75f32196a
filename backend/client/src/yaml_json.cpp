#include "loom/client/yaml_json.hpp"

#include "loom/inventory/input_guard.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace loom::client {

namespace {

constexpr int kMaxDepth = 64;
// Request bodies are small documents (host lists, patches, phase plans); a 24k-rack phase
// plan is ~50k nodes. The limit bounds the tree a hostile body can make us build.
constexpr std::size_t kMaxNodes = 200'000;

struct TooManyValues {};

nlohmann::json scalarToJson(const YAML::Node& n) {
    const std::string& s = n.Scalar();
    // yaml-cpp tags quoted (non-plain) scalars "!": they are strings whatever they contain.
    if (n.Tag() == "!") return s;
    if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    {
        long long v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && p == s.data() + s.size()) return v;
    }
    {
        char* end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        bool numeric = end == s.c_str() + s.size() && std::isfinite(d) &&
                       s.find_first_of("0123456789") != std::string::npos &&
                       s.find_first_of("xXpP") == std::string::npos;
        if (numeric) return d;
    }
    return s;
}

Result<nlohmann::json> convert(const YAML::Node& n, const std::string& path, int depth) {
    if (depth > kMaxDepth)
        return fail(Error::invalid("nesting deeper than 64 levels", path, n.Mark().line + 1));
    switch (n.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined: return nlohmann::json(nullptr);
        case YAML::NodeType::Scalar: return scalarToJson(n);
        case YAML::NodeType::Sequence: {
            auto arr = nlohmann::json::array();
            std::size_t i = 0;
            for (const auto& item : n) {
                auto v = convert(item, path + "[" + std::to_string(i++) + "]", depth + 1);
                if (!v) return v;
                arr.push_back(std::move(*v));
            }
            return arr;
        }
        case YAML::NodeType::Map: {
            auto obj = nlohmann::json::object();
            for (const auto& kv : n) {
                if (!kv.first.IsScalar())
                    return fail(Error::invalid("mapping keys must be plain strings", path,
                                               kv.first.Mark().line + 1));
                const std::string& key = kv.first.Scalar();
                std::string sub = path.empty() ? key : path + "." + key;
                if (obj.contains(key))
                    return fail(Error::invalid("duplicate key '" + key + "'", sub,
                                               kv.first.Mark().line + 1));
                auto v = convert(kv.second, sub, depth + 1);
                if (!v) return v;
                obj[key] = std::move(*v);
            }
            return obj;
        }
    }
    return nlohmann::json(nullptr);
}

void emit(YAML::Emitter& out, const nlohmann::json& v) {
    switch (v.type()) {
        case nlohmann::json::value_t::object:
            out << YAML::BeginMap;
            for (auto it = v.begin(); it != v.end(); ++it) {
                out << YAML::Key << it.key() << YAML::Value;
                emit(out, it.value());
            }
            out << YAML::EndMap;
            break;
        case nlohmann::json::value_t::array:
            out << YAML::BeginSeq;
            for (auto& e : v) emit(out, e);
            out << YAML::EndSeq;
            break;
        case nlohmann::json::value_t::string: {
            const auto& s = v.get_ref<const std::string&>();
            // Quote strings a YAML reader would otherwise take for another type (or could not
            // read at all: a stored "[[[[..." must not throw while rendering a response).
            bool ambiguous = true;
            if (!s.empty() && s.size() < 4096 && loom::invalidUtf8At(s) == std::nullopt) {
                try {
                    auto probe = YAML::Load(s);
                    ambiguous = !probe.IsScalar() || !scalarToJson(probe).is_string() ||
                                probe.Scalar() != s;
                } catch (const YAML::Exception&) {
                }
            }
            if (ambiguous)
                out << YAML::DoubleQuoted << s;
            else
                out << s;
            break;
        }
        case nlohmann::json::value_t::boolean: out << (v.get<bool>() ? "true" : "false"); break;
        case nlohmann::json::value_t::null: out << YAML::Null; break;
        default: out << v.dump(); break;
    }
}

}  // namespace

Result<nlohmann::json> yamlToJson(std::string_view text) {
    if (auto bad = invalidUtf8At(text))
        return fail(Error::invalid("the body is not valid UTF-8 (byte " + std::to_string(*bad) +
                                       ")",
                                   "", lineAt(text, *bad)));
    // Count nodes on parse events (aliases by what they expand to) before building a tree.
    if (auto shape = checkYamlShape(text, {.maxNodes = kMaxNodes, .maxDepth = kMaxDepth});
        !shape) {
        Error e = std::move(shape.error());
        if (e.message.starts_with("YAML syntax error: "))
            e.message = "malformed YAML: " + e.message.substr(19);
        return fail(std::move(e));
    }
    std::vector<YAML::Node> docs;
    try {
        docs = YAML::LoadAll(std::string(text));
    } catch (const YAML::Exception& e) {
        return fail(Error::invalid("malformed YAML: " + e.msg, "", e.mark.line + 1));
    }
    if (docs.empty()) return fail(Error::invalid("the YAML body is empty"));
    if (docs.size() > 1)
        return fail(Error::invalid("expected one YAML document, got " +
                                   std::to_string(docs.size())));
    try {
        return convert(docs.front(), "", 0);
    } catch (const YAML::Exception& e) {
        return fail(Error::invalid("malformed YAML: " + e.msg, "", e.mark.line + 1));
    }
}

Result<nlohmann::json> parseJsonText(std::string_view text) {
    if (auto bad = invalidUtf8At(text)) {
        std::string what = "the body is not valid UTF-8 (byte " + std::to_string(*bad) + ")";
        if (text.size() >= 2 && (std::uint8_t(text[0]) == 0xFF || std::uint8_t(text[0]) == 0xFE ||
                                 text[0] == 0 || text[1] == 0))
            what += "; send JSON as UTF-8, not UTF-16";
        return fail(Error::invalid(std::move(what), "", lineAt(text, *bad)));
    }
    std::size_t values = 0;
    int deepest = 0;
    // Stops the parse at the limits instead of building an unbounded tree first.
    auto guard = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json&) {
        deepest = std::max(deepest, depth);
        if (depth > kMaxDepth) throw TooManyValues{};
        if (ev == nlohmann::json::parse_event_t::value ||
            ev == nlohmann::json::parse_event_t::object_start ||
            ev == nlohmann::json::parse_event_t::array_start)
            if (++values > kMaxNodes) throw TooManyValues{};
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), guard);
    } catch (const TooManyValues&) {
        if (deepest > kMaxDepth)
            return fail(Error::invalid("JSON nested deeper than " + std::to_string(kMaxDepth) +
                                       " levels"));
        return fail(Error{Errc::TooLarge,
                          "the body has more than " + std::to_string(kMaxNodes) + " JSON values"});
    } catch (const nlohmann::json::parse_error& e) {
        int line = 1;
        std::size_t upto = std::min<std::size_t>(e.byte, text.size());
        for (std::size_t i = 0; i + 1 < upto; ++i)
            if (text[i] == '\n') ++line;
        std::string msg = e.what();
        // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, ...: ".
        if (auto p = msg.find("]"); p != std::string::npos) msg = msg.substr(p + 2);
        return fail(Error::invalid("malformed JSON: " + msg, "", line));
    } catch (const nlohmann::json::exception& e) {
        // out_of_range 406: a number too large for a double ("1e999"); found by fuzz_json_body.
        std::string msg = e.what();
        if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
        return fail(Error::invalid("malformed JSON: " + msg));
    }
}

std::string jsonToYaml(const nlohmann::json& value) {
    YAML::Emitter out;
    emit(out, value);
    std::string s = out.c_str();
    s += '\n';
    return s;
}

}  // namespace loom::client
