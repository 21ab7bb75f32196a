// The client side of the loomd API (docs/api.md): what loomctl and the end-to-end tests use
// to talk to a running `loomd serve` over HTTP(S) and the WebSocket stream.
//
//   auto cfg = resolveClientConfig(ConfigInputs::fromEnvironment(flagServer, flagToken));
//   Client client(*cfg);
//   auto racks = client.list("racks", {{"state", "in_service"}});   // follows nextCursor
//   if (!racks) std::cerr << "error: " << racks.error().toString() << '\n';
//
// Synchronous on purpose: one request at a time is all a CLI needs, and it keeps the error
// path linear. Everything the server says in an error body (message, document path, line)
// is kept in the returned loom::Error so the CLI can print it as the server wrote it.
//
// Limits: a response body is capped at kMaxResponseBytes (256 MiB); each request has one
// overall timeout (ClientConfig::timeout, default 60 s) covering connect, write and read.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/inventory/error.hpp"
#include "loom/inventory/natural_order.hpp"  // naturalLess, the order of sortByJsonPath

namespace loom::client {

inline constexpr std::string_view kDefaultServer = "http://127.0.0.1:8480";
inline constexpr std::size_t kMaxResponseBytes = 256u << 20;

// ---- configuration -------------------------------------------------------------------------

struct ClientConfig {
    std::string server = std::string(kDefaultServer);
    std::string token;
    bool insecureSkipTlsVerify = false;
    std::chrono::milliseconds timeout{60'000};
};

// What ~/.config/loom/config.yaml holds (`server:` and `token:`; unknown keys are kept out).
struct ConfigFile {
    std::string server;
    std::string token;
};

// $LOOM_CONFIG, else $XDG_CONFIG_HOME/loom/config.yaml, else $HOME/.config/loom/config.yaml.
std::string defaultConfigPath();
// A missing file is an empty config, not an error; a malformed one is (with its line).
Result<ConfigFile> loadConfigFile(const std::string& path);
// Creates the directory if needed and writes the file with mode 0600 (it holds a token).
Result<void> saveConfigFile(const std::string& path, const ConfigFile& cfg);

// Every source of a setting, highest precedence first: flag, environment, config file.
struct ConfigInputs {
    std::optional<std::string> flagServer;
    std::optional<std::string> flagToken;
    std::optional<std::string> envServer;  // LOOM_SERVER
    std::optional<std::string> envToken;   // LOOM_TOKEN
    ConfigFile file;

    // Reads LOOM_SERVER / LOOM_TOKEN and the config file at `configPath` (default path if
    // empty). Fails only when the config file exists and cannot be parsed.
    static Result<ConfigInputs> fromEnvironment(std::optional<std::string> flagServer,
                                                std::optional<std::string> flagToken,
                                                const std::string& configPath = {});
};

// Applies the precedence; empty strings count as unset. Fails on a server URL that is not
// http:// or https://.
Result<ClientConfig> resolveClientConfig(const ConfigInputs& in);

struct Url {
    bool tls = false;
    std::string host;
    std::string port;      // always set: 80/443 when the URL has none
    std::string basePath;  // without a trailing slash, usually empty
};
Result<Url> parseUrl(std::string_view url);

// Percent-encodes a query value or path segment.
std::string urlEncode(std::string_view s);
// "a=1&b=x%20y" from pairs, in order.
std::string queryString(const std::vector<std::pair<std::string, std::string>>& params);

// ---- HTTP ------------------------------------------------------------------------------------

struct HttpResponse {
    int status = 0;
    std::string body;
    std::map<std::string, std::string> headers;  // lower-case names

    std::string header(const std::string& lowerName) const;
};

// Called while a request body is written: bytes sent so far and the total.
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

struct RequestOptions {
    std::string body;
    std::string contentType;  // for the body
    std::string accept = "application/json";
    std::vector<std::pair<std::string, std::string>> headers;
    ProgressFn progress;
};

// A 4xx/5xx response as a loom::Error: code from the status, message/path/line from the
// server's `{"error": {...}}` body, or the raw body when it is not that shape.
Error errorFromResponse(const HttpResponse& r);

// Whether an error came from not reaching the server at all (DNS, refused, timeout, TLS).
bool isConnectionError(const Error& e);

// A random Idempotency-Key (32 hex digits): one per logical request, sent again unchanged on
// that request's retries so the server answers a retry with the first result.
std::string newIdempotencyKey();

class Client {
public:
    explicit Client(ClientConfig cfg);

    const ClientConfig& config() const { return cfg_; }

    // One request; `target` is the path and query under the server URL ("/api/v1/racks?x=y").
    // Returns the response for any status; transport failures are errors.
    Result<HttpResponse> send(std::string_view method, std::string_view target,
                              RequestOptions opts = {});

    // As send(), but a status >= 400 becomes errorFromResponse() and the body is parsed JSON.
    Result<nlohmann::json> getJson(std::string_view target);
    Result<nlohmann::json> postJson(std::string_view target, const nlohmann::json& body);
    Result<nlohmann::json> deleteJson(std::string_view target);
    Result<nlohmann::json> call(std::string_view method, std::string_view target,
                                RequestOptions opts);

    // GET /api/v1/<kind>?<filters>&limit=..., following nextCursor until `max` items (0 = all)
    // have been read. `pageSize` is the per-request limit (server max 5000).
    Result<std::vector<nlohmann::json>> list(
        std::string_view kindPlural,
        const std::vector<std::pair<std::string, std::string>>& filters = {},
        std::size_t max = 0, std::size_t pageSize = 500);

    // Connects to /api/v1/stream, sends a subscribe for `topics`, then calls onMessage for each
    // JSON text frame (binary frames are skipped) until it returns false or the server closes.
    // A `bye` frame ends the stream with an Unavailable error carrying its reason.
    Result<void> stream(const std::vector<std::string>& topics,
                        std::optional<std::int64_t> resumeFrom,
                        const std::function<bool(const nlohmann::json&)>& onMessage);

private:
    ClientConfig cfg_;
    Url url_;
    std::optional<Error> urlError_;
};

// ---- rendering (kubectl-like output) ---------------------------------------------------------

enum class OutputFormat { Table, Wide, Yaml, Json, Name };
std::optional<OutputFormat> parseOutputFormat(std::string_view s);

// Columns of a table: header and how to read the cell from an object.
struct Column {
    std::string header;
    std::function<std::string(const nlohmann::json&)> cell;
};

// Columns for an inventory kind (plural name); `wide` adds the secondary fields. Unknown
// kinds get NAME plus every scalar top-level field.
std::vector<Column> columnsForKind(std::string_view kindPlural, bool wide,
                                   const std::vector<nlohmann::json>& sample = {});

// Aligned like kubectl: upper-case headers, left-aligned, three spaces between columns, no
// trailing spaces. Empty cells print as "<none>".
std::string renderTable(const std::vector<Column>& cols, const std::vector<nlohmann::json>& rows,
                        bool headers = true);
// Plain rows of strings (first row is the header when `headers`).
std::string renderRows(const std::vector<std::vector<std::string>>& rows);

// kubectl's JSONPath templates ({.name}, {.items[*].name}, {range .items[*]}...{end}, {"\n"});
// the supported subset and its limits are at the top of jsonpath.cpp. Errors name the column.
Result<std::string> renderJsonPath(const nlohmann::json& doc, std::string_view tmpl);
// Sorts by one path (".name", "{.labels.owner}"): numbers numerically, text naturally (p2
// before p10), missing values last; stable.
Result<void> sortByJsonPath(std::vector<nlohmann::json>& items, std::string_view path);

// Block-style YAML of any JSON value (keys sorted, as kubectl prints them).
std::string toYaml(const nlohmann::json& j);

// A JSON scalar as text: strings unquoted, null and missing as "".
std::string scalarText(const nlohmann::json& j);
// A running job's health in one word, as `get jobs` HEALTH and `describe job` say it: loomd's
// `health.status` (jobs::jobHealthStatus: degraded, gpu-failed, unknown, links-down,
// gpu-warning, ok); "unknown" when a loomd sends none.
std::string jobHealthWord(const nlohmann::json& health);
// obj[key] as text if present; "" otherwise.
std::string field(const nlohmann::json& obj, std::string_view key);
// "3d4h", "17m", "42s" from an RFC 3339 timestamp relative to now; "" if unparsable.
std::string ageOf(std::string_view rfc3339,
                  std::chrono::system_clock::time_point now = std::chrono::system_clock::now());
// Parses "90s", "15m", "1h", "2d" into seconds.
std::optional<std::chrono::seconds> parseDuration(std::string_view s);
// A point in time as RFC 3339 UTC ("2026-11-22T08:10:00Z").
std::string formatRfc3339(std::chrono::system_clock::time_point t);
// An RFC 3339 timestamp in the local time zone (TZ), with its offset, to the second
// ("2026-11-22T13:40:00+05:30"); the text unchanged if it is not a timestamp.
std::string localRfc3339(std::string_view rfc3339);

}  // namespace loom::client
