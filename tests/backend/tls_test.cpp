// TLS: loomd with a certificate serves HTTPS and WSS only (a client that trusts the certificate
// gets answers, a plain-HTTP request gets none), and plain HTTP on a non-loopback address is
// refused at start unless --insecure.
#include "beast_client.hpp"

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <cstdlib>
#include <filesystem>

namespace loom::backend::testing {
namespace {

namespace ssl = net::ssl;
namespace fs = std::filesystem;

class Tls : public ServerFixture {
protected:
    void SetUp() override {
        ServerFixture::SetUp();
        dir_ = fs::temp_directory_path() / ("loom-tls-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        cert_ = (dir_ / "tls.crt").string();
        key_ = (dir_ / "tls.key").string();
        const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                                "-addext subjectAltName=IP:127.0.0.1 -keyout '" + key_ + "' -out '" +
                                cert_ + "' >/dev/null 2>&1";
        ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl could not make a test certificate";
    }
    void TearDown() override {
        ServerFixture::TearDown();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    ssl::context trustingContext() {
        ssl::context ctx(ssl::context::tls_client);
        ctx.load_verify_file(cert_);
        ctx.set_verify_mode(ssl::verify_peer);
        return ctx;
    }

    fs::path dir_;
    std::string cert_, key_;
};

TEST_F(Tls, HttpsAndWssWithATrustedCertificate) {
    ServerConfig cfg;
    cfg.tlsCert = cert_;
    cfg.tlsKey = key_;
    auto& s = startServer(cfg);

    // HTTPS with verification against the test certificate.
    {
        net::io_context ioc;
        auto ctx = trustingContext();
        beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
        beast::get_lowest_layer(stream).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
        stream.handshake(ssl::stream_base::client);
        http::request<http::string_body> req{http::verb::get, "/api/v1/racks?limit=2", 11};
        req.set(http::field::host, "127.0.0.1");
        req.set(http::field::authorization, "Bearer " + tokens_["viewer"]);
        http::write(stream, req);
        beast::flat_buffer buf;
        http::response<http::string_body> res;
        http::read(stream, buf, res);
        EXPECT_EQ(res.result_int(), 200) << res.body();
        EXPECT_NE(res.body().find("z1-r001"), std::string::npos);
    }
    // WSS: the stream's hello.
    {
        net::io_context ioc;
        auto ctx = trustingContext();
        websocket::stream<beast::ssl_stream<beast::tcp_stream>> ws(ioc, ctx);
        beast::get_lowest_layer(ws).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
        ws.next_layer().handshake(ssl::stream_base::client);
        const std::string token = tokens_["viewer"];
        ws.set_option(websocket::stream_base::decorator([token](websocket::request_type& r) {
            r.set(http::field::authorization, "Bearer " + token);
        }));
        ws.handshake("127.0.0.1", "/api/v1/stream");
        beast::flat_buffer b;
        ws.read(b);
        auto hello = json::parse(beast::buffers_to_string(b.data()));
        EXPECT_EQ(hello["type"], "hello");
    }
    // A client that does not trust the certificate fails the handshake.
    {
        net::io_context ioc;
        ssl::context ctx(ssl::context::tls_client);
        ctx.set_default_verify_paths();
        ctx.set_verify_mode(ssl::verify_peer);
        beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
        beast::get_lowest_layer(stream).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
        beast::error_code ec;
        stream.handshake(ssl::stream_base::client, ec);
        EXPECT_TRUE(ec) << "an untrusted self-signed certificate was accepted";
    }
    // Plain HTTP to the TLS port gets no HTTP answer.
    auto plain = request(s.port(), "GET", "/healthz");
    EXPECT_NE(plain.status, 200);
}

TEST_F(Tls, PlainHttpOffLoopbackNeedsInsecure) {
    ServerConfig cfg;
    cfg.host = "0.0.0.0";
    cfg.port = 0;
    Server refused(cfg, database());
    auto r = refused.start();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_NE(r.error().message.find("--insecure"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("--tls-cert"), std::string::npos) << r.error().message;

    cfg.insecure = true;
    Server allowed(cfg, database());
    auto ok = allowed.start();
    EXPECT_TRUE(ok) << ok.error().toString();
    allowed.stop();

    ServerConfig half;
    half.host = "127.0.0.1";
    half.tlsCert = cert_;  // no key
    Server broken(half, database());
    auto h = broken.start();
    ASSERT_FALSE(h);
    EXPECT_NE(h.error().message.find("go together"), std::string::npos) << h.error().message;
}

}  // namespace
}  // namespace loom::backend::testing
