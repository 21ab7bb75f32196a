#include "loom/backend/router.hpp"

#include "loom/client/yaml_json.hpp"

#include "http_target.hpp"

#include <algorithm>
#include <stdexcept>

namespace loom::backend {

std::string_view roleName(Role r) {
    switch (r) {
        case Role::None: return "none";
        case Role::Viewer: return "viewer";
        case Role::Operator: return "operator";
        case Role::Admin: return "admin";
    }
    return "none";
}

std::optional<Role> parseRole(std::string_view s) {
    if (s == "viewer") return Role::Viewer;
    if (s == "operator") return Role::Operator;
    if (s == "admin") return Role::Admin;
    return std::nullopt;
}

namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

std::vector<std::string_view> splitPath(std::string_view path) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < path.size()) {
        if (path[i] == '/') {
            ++i;
            continue;
        }
        auto j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        out.push_back(path.substr(i, j - i));
        i = j;
    }
    return out;
}

bool isCapture(std::string_view seg) {
    return seg.size() >= 2 && seg.front() == '{' && seg.back() == '}';
}

}  // namespace

std::string_view Request::param(std::string_view name) const {
    for (auto& [k, v] : captures)
        if (k == name) return v;
    return {};
}

std::optional<std::string_view> Request::queryParam(std::string_view name) const {
    for (auto& [k, v] : query)
        if (k == name) return std::string_view(v);
    return std::nullopt;
}

std::optional<std::string_view> Request::header(std::string_view name) const {
    for (auto& [k, v] : headers)
        if (iequals(k, name)) return std::string_view(v);
    return std::nullopt;
}

bool Request::bodyIsYaml() const {
    auto ct = header("content-type");
    if (!ct) return false;
    return ct->find("yaml") != std::string_view::npos;
}

Result<nlohmann::json> Request::jsonBody() const {
    if (body.empty()) return fail(Error::invalid("the request needs a body"));
    if (bodyIsYaml()) return client::yamlToJson(body);
    return client::parseJsonText(body);
}

db::Connection& Request::db() const {
    // A route registered with needsDb = false asked for the database: a programming error.
    if (!connection) throw std::logic_error("route " + std::string(route) + " has no database");
    return *connection;
}

void Router::add(std::string method, std::string pattern, Role role, Handler handler,
                 RouteOptions options) {
    if (pattern.empty() || pattern.front() != '/')
        throw std::invalid_argument("route pattern must start with '/': " + pattern);
    for (auto& r : routes_)
        if (r.method == method && r.pattern == pattern)
            throw std::invalid_argument("route registered twice: " + method + " " + pattern);
    if (options.bodyLimit > kMaxBodyLimit)
        throw std::invalid_argument("route body limit above kMaxBodyLimit: " + method + " " +
                                    pattern);
    Route r;
    r.method = std::move(method);
    r.pattern = std::move(pattern);
    r.role = role;
    r.handler = std::move(handler);
    r.options = options;
    for (auto seg : splitPath(r.pattern)) r.segments.emplace_back(seg);
    routes_.push_back(std::move(r));
}

Router::Match Router::match(std::string_view method, std::string_view rawPath) const {
    std::vector<std::string> segs;
    for (auto raw : splitPath(rawPath)) segs.push_back(percentDecode(raw, false));
    Match best;
    // Specificity: the position of the first capture segment, later is more specific; among
    // equals, fewer captures. Literal segments thus win over captures, left to right.
    auto score = [](const Route& r) {
        int firstCapture = int(r.segments.size()) + 1, captures = 0;
        for (std::size_t i = 0; i < r.segments.size(); ++i)
            if (isCapture(r.segments[i])) {
                if (captures++ == 0) firstCapture = int(i);
            }
        return std::pair{firstCapture, -captures};
    };
    std::pair<int, int> bestScore{-1, 0};
    for (auto& r : routes_) {
        if (r.segments.size() != segs.size()) continue;
        bool ok = true;
        for (std::size_t i = 0; i < segs.size() && ok; ++i)
            if (!isCapture(r.segments[i]) && r.segments[i] != segs[i]) ok = false;
        if (!ok) continue;
        if (r.method != method) {
            best.pathKnown = true;
            if (best.allowed.find(r.method) == std::string::npos) {
                if (!best.allowed.empty()) best.allowed += ", ";
                best.allowed += r.method;
            }
            continue;
        }
        auto s = score(r);
        if (best.route && s <= bestScore) continue;
        best.route = &r;
        bestScore = s;
    }
    if (best.route) {
        best.captures.clear();
        for (std::size_t i = 0; i < segs.size(); ++i) {
            auto& seg = best.route->segments[i];
            if (isCapture(seg))
                best.captures.emplace_back(seg.substr(1, seg.size() - 2), std::move(segs[i]));
        }
    }
    return best;
}

}  // namespace loom::backend
