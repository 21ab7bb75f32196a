// The HTTP request parser as loomd runs it: Beast's request_parser with loomd's header limit
// and a body limit, then the target decoding and checks of every request (http_target.cpp)
// and route matching.
#include "http_target.hpp"
#include "loom/backend/router.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

using namespace loom;
using namespace loom::backend;
namespace http = boost::beast::http;

Router& router() {
    static Router r = [] {
        Router rt;
        auto ok = [](const Request&) -> Result<Response> { return Response::text("ok"); };
        for (const char* p : {"/api/v1/racks", "/api/v1/racks/{name}", "/api/v1/racks/{name}/{action}",
                              "/api/v1/fabric/routes/{switch}", "/api/v1/events", "/healthz"})
            rt.add("GET", p, Role::None, ok);
        rt.add("POST", "/api/v1/apply", Role::Operator, ok);
        return rt;
    }();
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(1 << 20);
    parser.eager(true);
    boost::beast::error_code ec;
    std::size_t used = 0;
    // Feed in two pieces, as a network read would.
    std::size_t half = size / 2;
    used += parser.put(boost::asio::buffer(data, half), ec);
    if (ec == http::error::need_more) ec = {};
    if (!ec) used += parser.put(boost::asio::buffer(data + used, size - used), ec);
    if (ec && ec != http::error::need_more) return 0;
    if (!parser.is_header_done()) return 0;
    auto& req = parser.get();
    std::string_view target(req.target().data(), req.target().size());
    auto [path, query] = splitTarget(target);
    if (auto bad = checkTarget(path, query)) {
        (void)bad->toString();
        return 0;
    }
    auto m = router().match(std::string_view(req.method_string().data(), req.method_string().size()),
                            target.substr(0, target.find('?')));
    if (m.route) (void)m.captures.size();
    return 0;
}
