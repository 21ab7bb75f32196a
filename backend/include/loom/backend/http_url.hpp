// An http:// URL as the scraper fetches it: "http://host[:port][/path?query]". Only plain
// HTTP: exporters sit on the management network (put TLS in front with a proxy if needed).
//
//   auto u = parseHttpUrl("http://gpu-host-1:9400/metrics");   // {gpu-host-1, 9400, /metrics}
#pragma once

#include <string>
#include <string_view>

#include "loom/inventory/error.hpp"

namespace loom::backend {

struct HttpUrl {
    std::string host, port, target;  // port "80" and target "/metrics" when the URL has none
};

// Errors say what is wrong with the URL and quote it.
Result<HttpUrl> parseHttpUrl(std::string_view url);

}  // namespace loom::backend
