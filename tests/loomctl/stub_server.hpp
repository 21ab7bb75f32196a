// A tiny HTTP + WebSocket server for client tests: answers each request with a handler, one
// connection at a time, on 127.0.0.1 with a port chosen by the kernel. It stands in for loomd
// only where the client's own behaviour is under test (pagination, error bodies, exit codes);
// the end-to-end tests run against the real loomd.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace loom::testing {

struct StubRequest {
    std::string method;
    std::string target;
    std::string body;
    std::string authorization;
    std::string contentType;
    std::string accept;
};

struct StubResponse {
    int status = 200;
    std::string body;
    std::string contentType = "application/json";
};

class StubServer {
public:
    using Handler = std::function<StubResponse(const StubRequest&)>;
    // Frames sent to a WebSocket client of /api/v1/stream after its subscribe message.
    std::vector<std::string> streamFrames;
    std::string lastSubscribe;

    explicit StubServer(Handler h) : handler_(std::move(h)), acceptor_(ioc_) {
        namespace net = boost::asio;
        using tcp = net::ip::tcp;
        tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
        acceptor_.open(ep.protocol());
        acceptor_.set_option(net::socket_base::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen();
        port_ = acceptor_.local_endpoint().port();
        thread_ = std::thread([this] { run(); });
    }

    ~StubServer() {
        stopping_ = true;
        // Wake the blocking accept with a connection of our own.
        boost::system::error_code ec;
        boost::asio::ip::tcp::socket s(ioc_);
        s.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
        thread_.join();
    }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    std::vector<StubRequest> requests() {
        std::lock_guard lock(mu_);
        return requests_;
    }

private:
    void run() {
        namespace beast = boost::beast;
        namespace http = beast::http;
        namespace websocket = beast::websocket;
        while (!stopping_) {
            boost::asio::ip::tcp::socket sock(ioc_);
            boost::system::error_code ec;
            acceptor_.accept(sock, ec);
            if (ec || stopping_) continue;
            beast::flat_buffer buf;
            for (;;) {
                http::request<http::string_body> req;
                http::read(sock, buf, req, ec);
                if (ec) break;
                StubRequest r{std::string(req.method_string()), std::string(req.target()),
                              req.body(), std::string(req[http::field::authorization]),
                              std::string(req[http::field::content_type]),
                              std::string(req[http::field::accept])};
                {
                    std::lock_guard lock(mu_);
                    requests_.push_back(r);
                }
                if (websocket::is_upgrade(req)) {
                    websocket::stream<boost::asio::ip::tcp::socket> ws(std::move(sock));
                    ws.accept(req, ec);
                    if (ec) break;
                    beast::flat_buffer in;
                    ws.read(in, ec);
                    if (ec) break;
                    lastSubscribe = beast::buffers_to_string(in.data());
                    for (const auto& f : streamFrames) {
                        ws.text(true);
                        ws.write(boost::asio::buffer(f), ec);
                    }
                    ws.close(websocket::close_code::normal, ec);
                    // Drain until the client's close reply arrives.
                    beast::flat_buffer drain;
                    ws.read(drain, ec);
                    break;
                }
                StubResponse s = handler_(r);
                http::response<http::string_body> res{static_cast<http::status>(s.status), 11};
                res.set(http::field::content_type, s.contentType);
                res.set(http::field::server, "stub");
                res.body() = s.body;
                res.keep_alive(req.keep_alive());
                res.prepare_payload();
                http::write(sock, res, ec);
                if (ec || !req.keep_alive()) break;
            }
            sock.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
        }
    }

    Handler handler_;
    boost::asio::io_context ioc_;
    boost::asio::ip::tcp::acceptor acceptor_;
    unsigned short port_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
    std::mutex mu_;
    std::vector<StubRequest> requests_;
};

}  // namespace loom::testing
