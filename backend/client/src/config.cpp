// Client configuration: the config file, precedence of flags/environment/file, URLs.
#include "loom/client/client.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

namespace loom::client {

namespace {

std::optional<std::string> envVar(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
}

bool isSet(const std::optional<std::string>& s) { return s && !s->empty(); }

}  // namespace

std::string defaultConfigPath() {
    if (auto p = envVar("LOOM_CONFIG")) return *p;
    if (auto x = envVar("XDG_CONFIG_HOME")) return *x + "/loom/config.yaml";
    if (auto h = envVar("HOME")) return *h + "/.config/loom/config.yaml";
    return ".loom-config.yaml";
}

Result<ConfigFile> loadConfigFile(const std::string& path) {
    ConfigFile cfg;
    std::ifstream in(path);
    if (!in) return cfg;  // no file yet: nothing configured
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        YAML::Node root = YAML::Load(ss.str());
        if (!root || root.IsNull()) return cfg;
        if (!root.IsMap()) {
            return fail(Error::invalid(path + ": expected a mapping with server: and token:", "",
                                       root.Mark().line + 1));
        }
        for (const char* key : {"server", "token"}) {
            YAML::Node n = root[key];
            if (!n) continue;
            if (!n.IsScalar()) {
                return fail(Error::invalid(path + ": must be a string", key, n.Mark().line + 1));
            }
            (std::string_view(key) == "server" ? cfg.server : cfg.token) = n.as<std::string>();
        }
    } catch (const YAML::Exception& e) {
        return fail(Error::invalid(path + ": " + e.msg, "", e.mark.line + 1));
    }
    return cfg;
}

Result<void> saveConfigFile(const std::string& path, const ConfigFile& cfg) {
    std::error_code ec;
    auto dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) {
        std::filesystem::create_directories(dir, ec);
        if (ec) return fail(Error{Errc::Unavailable, "cannot create " + dir.string() + ": " +
                                                         ec.message()});
    }
    YAML::Emitter out;
    out << YAML::BeginMap;
    if (!cfg.server.empty()) out << YAML::Key << "server" << YAML::Value << cfg.server;
    if (!cfg.token.empty()) out << YAML::Key << "token" << YAML::Value << cfg.token;
    out << YAML::EndMap;
    std::string text = std::string(out.c_str()) + "\n";

    // Written to a temporary file created 0600 and renamed, so the token is never readable
    // by others, not even for a moment, and a crash never leaves half a file.
    std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return fail(Error{Errc::Unavailable, "cannot write " + tmp + ": " +
                                                         std::strerror(errno)});
    ::fchmod(fd, 0600);  // the file may have existed with a wider mode
    std::size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(fd, text.data() + off, text.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            ::close(fd);
            return fail(Error{Errc::Unavailable, "cannot write " + tmp + ": " +
                                                     std::strerror(err)});
        }
        off += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
        return fail(Error{Errc::Unavailable, "cannot write " + path + ": " + std::strerror(errno)});
    }
    return {};
}

Result<ConfigInputs> ConfigInputs::fromEnvironment(std::optional<std::string> flagServer,
                                                   std::optional<std::string> flagToken,
                                                   const std::string& configPath) {
    ConfigInputs in;
    in.flagServer = std::move(flagServer);
    in.flagToken = std::move(flagToken);
    in.envServer = envVar("LOOM_SERVER");
    in.envToken = envVar("LOOM_TOKEN");
    auto file = loadConfigFile(configPath.empty() ? defaultConfigPath() : configPath);
    if (!file) return fail(file.error());
    in.file = std::move(*file);
    return in;
}

Result<ClientConfig> resolveClientConfig(const ConfigInputs& in) {
    ClientConfig cfg;
    if (isSet(in.flagServer)) cfg.server = *in.flagServer;
    else if (isSet(in.envServer)) cfg.server = *in.envServer;
    else if (!in.file.server.empty()) cfg.server = in.file.server;

    if (isSet(in.flagToken)) cfg.token = *in.flagToken;
    else if (isSet(in.envToken)) cfg.token = *in.envToken;
    else cfg.token = in.file.token;

    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    if (auto u = parseUrl(cfg.server); !u) return fail(u.error());
    return cfg;
}

Result<Url> parseUrl(std::string_view url) {
    Url u;
    std::string_view rest;
    if (url.starts_with("http://")) {
        rest = url.substr(7);
    } else if (url.starts_with("https://")) {
        u.tls = true;
        rest = url.substr(8);
    } else {
        return fail(Error::invalid("server URL must start with http:// or https:// (got \"" +
                                   std::string(url) + "\")"));
    }
    auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        u.basePath = std::string(rest.substr(slash));
        while (!u.basePath.empty() && u.basePath.back() == '/') u.basePath.pop_back();
    }
    if (authority.empty()) return fail(Error::invalid("server URL has no host: " + std::string(url)));
    if (authority.front() == '[') {  // [::1]:8480
        auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return fail(Error::invalid("server URL has an unterminated IPv6 address: " +
                                       std::string(url)));
        }
        u.host = std::string(authority.substr(1, close - 1));
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') {
                return fail(Error::invalid("bad server URL: " + std::string(url)));
            }
            u.port = std::string(authority.substr(close + 2));
        }
    } else {
        auto colon = authority.rfind(':');
        u.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) u.port = std::string(authority.substr(colon + 1));
    }
    if (u.host.empty()) return fail(Error::invalid("server URL has no host: " + std::string(url)));
    if (u.port.empty()) u.port = u.tls ? "443" : "80";
    for (char c : u.port) {
        if (c < '0' || c > '9') {
            return fail(Error::invalid("server URL has a bad port \"" + u.port + "\""));
        }
    }
    return u;
}

std::string urlEncode(std::string_view s) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

std::string queryString(const std::vector<std::pair<std::string, std::string>>& params) {
    std::string q;
    for (const auto& [k, v] : params) {
        if (!q.empty()) q += '&';
        q += urlEncode(k);
        q += '=';
        q += urlEncode(v);
    }
    return q;
}

}  // namespace loom::client
