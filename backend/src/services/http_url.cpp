#include "loom/backend/http_url.hpp"

#include <algorithm>
#include <cctype>

namespace loom::backend {

Result<HttpUrl> parseHttpUrl(std::string_view url) {
    constexpr std::string_view scheme = "http://";
    const std::string quoted =
        "'" + std::string(url.substr(0, 200)) + (url.size() > 200 ? "...'" : "'");
    if (!url.starts_with(scheme))
        return fail(Error::invalid("exporter URL must start with http:// (got " + quoted + ")"));
    if (std::any_of(url.begin(), url.end(), [](unsigned char c) { return c <= ' ' || c == 0x7f; }))
        return fail(Error::invalid("exporter URL has a space or control character: " + quoted));
    std::string_view rest = url.substr(scheme.size());
    const auto slash = rest.find('/');
    const std::string_view authority = rest.substr(0, slash);
    HttpUrl u;
    u.target = slash == std::string_view::npos ? "/metrics" : std::string(rest.substr(slash));
    const auto colon = authority.rfind(':');
    u.host = std::string(colon == std::string_view::npos ? authority : authority.substr(0, colon));
    u.port = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
    if (u.host.empty()) return fail(Error::invalid("exporter URL has no host: " + quoted));
    if (u.port.empty() || u.port.size() > 5 ||
        !std::all_of(u.port.begin(), u.port.end(), ::isdigit) || std::stoi(u.port) > 65535 ||
        std::stoi(u.port) == 0)
        return fail(Error::invalid("exporter URL's port must be 1-65535: " + quoted));
    return u;
}

}  // namespace loom::backend
