// The web dashboard as loomd serves it (GET /, /assets/...), GET /api/v1/whoami, and the
// WebSocket token a browser sends as a Sec-WebSocket-Protocol entry. The browser itself is
// tested in tests/web (headless Chromium).
#include <zlib.h>

#include <regex>

#include "beast_client.hpp"
#include "gunzip.hpp"

namespace loom::backend::testing {
namespace {

class WebServing : public ServerFixture {};

TEST_F(WebServing, IndexAndHashedAssetsWithTheirHeaders) {
    auto& s = startServer();
    auto index = request(s.port(), "GET", "/");
    ASSERT_EQ(index.status, 200) << index.body;
    EXPECT_EQ(index.headers["Content-Type"], "text/html; charset=utf-8");
    EXPECT_EQ(index.headers["Cache-Control"], "no-cache");
    EXPECT_EQ(index.headers["X-Content-Type-Options"], "nosniff");
    EXPECT_EQ(index.headers["Referrer-Policy"], "no-referrer");
    const std::string csp = index.headers["Content-Security-Policy"];
    EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("script-src 'self';"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos) << csp;
    // No inline script or style in the page; every asset is relative and hashed.
    EXPECT_EQ(index.body.find("<script>"), std::string::npos);
    EXPECT_EQ(index.body.find("style="), std::string::npos);
    EXPECT_EQ(index.body.find("src=\"/"), std::string::npos) << "absolute URL: breaks a sub-path";
    EXPECT_EQ(index.body.find("href=\"/"), std::string::npos) << "absolute URL: breaks a sub-path";
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(index.body, m, std::regex(R"re(src="assets/(app\.[0-9a-f]{10}\.js)")re")))
        << index.body;
    const std::string app = m[1];
    const std::string hash = app.substr(4, 10);

    auto js = request(s.port(), "GET", "/assets/" + app);
    ASSERT_EQ(js.status, 200) << js.body;
    EXPECT_EQ(js.headers["Content-Type"], "text/javascript; charset=utf-8");
    EXPECT_EQ(js.headers["Cache-Control"], "public, max-age=31536000, immutable");
    EXPECT_EQ(js.headers.count("Content-Encoding"), 0u);
    // The modules import each other by hashed names too.
    EXPECT_NE(js.body.find("." + hash + ".js'"), std::string::npos);
    EXPECT_EQ(js.body.find("from './api.js'"), std::string::npos);

    auto gz = request(s.port(), "GET", "/assets/" + app, "", "",
                      {{"Accept-Encoding", "gzip, deflate, br"}});
    ASSERT_EQ(gz.status, 200);
    EXPECT_EQ(gz.headers["Content-Encoding"], "gzip");
    EXPECT_EQ(gz.headers["Vary"], "Accept-Encoding");
    EXPECT_LT(gz.body.size(), js.body.size());
    EXPECT_EQ(gunzip(gz.body), js.body);
    auto refused =
        request(s.port(), "GET", "/assets/" + app, "", "", {{"Accept-Encoding", "gzip;q=0"}});
    EXPECT_EQ(refused.headers.count("Content-Encoding"), 0u);

    auto again = request(s.port(), "GET", "/", "", "", {{"If-None-Match", index.headers["ETag"]}});
    EXPECT_EQ(again.status, 304);
    EXPECT_TRUE(again.body.empty());

    auto stale = request(s.port(), "GET", "/assets/app.0000000000.js");
    EXPECT_EQ(stale.status, 404);
    EXPECT_NE(stale.body.find("no dashboard asset"), std::string::npos) << stale.body;
}

// Large API answers go gzipped to clients that accept it (the dashboard's GET /api/v1/hall is
// 2.9 MB at 24k); others get them as before.
TEST_F(WebServing, LargeApiAnswersAreGzippedForClientsThatAcceptIt) {
    auto& s = startServer();
    auto plain = request(s.port(), "GET", "/api/v1/gpus?limit=5000", tokens_["viewer"]);
    ASSERT_EQ(plain.status, 200) << plain.body;
    ASSERT_GT(plain.body.size(), 8u << 10) << "the sample answer should be above the threshold";
    EXPECT_EQ(plain.headers.count("Content-Encoding"), 0u);
    auto gz = request(s.port(), "GET", "/api/v1/gpus?limit=5000", tokens_["viewer"], "",
                      {{"Accept-Encoding", "gzip, deflate"}});
    ASSERT_EQ(gz.status, 200);
    EXPECT_EQ(gz.headers["Content-Encoding"], "gzip");
    EXPECT_EQ(gz.headers["Vary"], "Accept-Encoding");
    EXPECT_LT(gz.body.size() * 3, plain.body.size());
    EXPECT_EQ(gunzip(gz.body), plain.body);
    // Small answers and errors stay as they are.
    auto small = request(s.port(), "GET", "/api/v1/whoami", tokens_["viewer"], "",
                         {{"Accept-Encoding", "gzip"}});
    EXPECT_EQ(small.headers.count("Content-Encoding"), 0u);
    EXPECT_EQ(small.j()["role"], "viewer");
}

TEST_F(WebServing, WhoamiNamesTheTokenAndItsRole) {
    auto& s = startServer();
    auto anon = request(s.port(), "GET", "/api/v1/whoami");
    EXPECT_EQ(anon.status, 401);
    auto v = request(s.port(), "GET", "/api/v1/whoami", tokens_["viewer"]);
    ASSERT_EQ(v.status, 200) << v.body;
    EXPECT_EQ(v.j()["role"], "viewer");
    EXPECT_EQ(v.j()["name"], "viewer-token");
    auto o = request(s.port(), "GET", "/api/v1/whoami", tokens_["operator"]);
    EXPECT_EQ(o.j()["role"], "operator");
}

// A browser's WebSocket: the token as `loom.bearer.<token>` beside `loom.v1`; the answer names
// loom.v1 only (never the token).
TEST_F(WebServing, StreamTakesTheTokenAsASubprotocol) {
    auto& s = startServer();
    auto open = [&](const std::string& protocols, std::string* answered) {
        net::io_context ioc;
        websocket::stream<beast::tcp_stream> ws{ioc};
        beast::get_lowest_layer(ws).connect(
            tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
        ws.set_option(websocket::stream_base::decorator([protocols](websocket::request_type& r) {
            r.set(http::field::sec_websocket_protocol, protocols);
        }));
        websocket::response_type res;
        beast::error_code ec;
        ws.handshake(res, "127.0.0.1", "/api/v1/stream", ec);
        if (answered) *answered = std::string(res[http::field::sec_websocket_protocol]);
        if (ec) return std::string("refused ") + std::to_string(res.result_int());
        beast::flat_buffer b;
        ws.read(b, ec);
        if (ec) return std::string("read failed");
        auto hello = json::parse(beast::buffers_to_string(b.data()));
        return hello["type"].get<std::string>() + " " + hello["role"].get<std::string>();
    };
    std::string answered;
    EXPECT_EQ(open("loom.v1, loom.bearer." + tokens_["operator"], &answered), "hello operator");
    EXPECT_EQ(answered, "loom.v1");
    EXPECT_EQ(open("loom.bearer." + tokens_["viewer"] + ",loom.v1", &answered), "hello viewer");
    EXPECT_EQ(answered, "loom.v1");
    // Refusals, read as plain HTTP answers to an upgrade request (what a browser gets; the
    // status tells which).
    auto refusal = [&](const std::string& protocols) {
        return request(s.port(), "GET", "/api/v1/stream", "", "",
                       {{"Connection", "Upgrade"},
                        {"Upgrade", "websocket"},
                        {"Sec-WebSocket-Version", "13"},
                        {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                        {"Sec-WebSocket-Protocol", protocols}});
    };
    EXPECT_EQ(refusal("loom.v1, loom.bearer.loom_not_a_token").status, 401);
    EXPECT_EQ(refusal("loom.v1").status, 401);
    // Without loom.v1 the server could only echo the token: refused, naming the header.
    auto noV1 = refusal("loom.bearer." + tokens_["viewer"]);
    EXPECT_EQ(noV1.status, 400);
    EXPECT_NE(noV1.body.find("Sec-WebSocket-Protocol"), std::string::npos) << noV1.body;
    EXPECT_EQ(noV1.body.find(tokens_["viewer"]), std::string::npos) << "the token is echoed";
}

}  // namespace
}  // namespace loom::backend::testing
