#include "loom/backend/scraper.hpp"

#include "loom/backend/http_url.hpp"

#include "loom/telemetry/telemetry_hub.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace loom::backend {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

using Url = HttpUrl;

// One GET with an overall deadline: asynchronous operations on a private io_context, run for
// at most `timeout` (synchronous Beast operations have no timeout).
Result<std::string> fetch(const Url& u, std::chrono::milliseconds timeout, std::size_t maxBytes) {
    net::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    http::request<http::empty_body> req{http::verb::get, u.target, 11};
    req.set(http::field::host, u.host);
    req.set(http::field::accept, "text/plain");
    req.set(http::field::user_agent, "loomd-scraper");
    beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(maxBytes);
    beast::error_code result = net::error::timed_out;
    bool done = false;
    stream.expires_after(timeout);
    resolver.async_resolve(u.host, u.port, [&](beast::error_code ec, tcp::resolver::results_type r) {
        if (ec) {
            result = ec;
            done = true;
            return;
        }
        stream.async_connect(r, [&](beast::error_code ec2, const tcp::endpoint&) {
            if (ec2) {
            result = ec2;
            done = true;
            return;
        }
            http::async_write(stream, req, [&](beast::error_code ec3, std::size_t) {
                if (ec3) {
            result = ec3;
            done = true;
            return;
        }
                http::async_read(stream, buf, parser, [&](beast::error_code ec4, std::size_t) {
                    result = ec4;
                    done = true;
                });
            });
        });
    });
    ioc.run_for(timeout + std::chrono::milliseconds(100));
    if (!done) return fail(Error::unavailable("timed out after " + std::to_string(timeout.count()) + " ms"));
    if (result == http::error::body_limit)
        return fail(Error{Errc::TooLarge, "body larger than " + std::to_string(maxBytes) + " bytes"});
    if (result) return fail(Error::unavailable(result.message()));
    if (parser.get().result_int() != 200)
        return fail(Error::unavailable("HTTP " + std::to_string(parser.get().result_int())));
    return std::move(parser.get().body());
}

std::int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

struct Scraper::Impl {
    struct State {
        ScrapeTarget target;
        Url url;
        std::atomic<bool> up{false};
        std::atomic<double> seconds{0};
        std::atomic<std::uint64_t> samples{0}, errors{0};
        std::string lastError;  // logged on change only
    };
    TelemetryHub& hub;
    std::vector<std::unique_ptr<State>> states;
    std::vector<std::jthread> threads;
    std::mutex mutex;
    std::condition_variable_any cv;

    explicit Impl(TelemetryHub& h) : hub(h) {}

    void run(State& st, std::stop_token stop) {
        while (!stop.stop_requested()) {
            const auto t0 = std::chrono::steady_clock::now();
            auto body = fetch(st.url, st.target.timeout, st.target.maxBytes);
            std::string error;
            if (body) {
                auto rep = hub.ingestText(*body, nowMs());
                if (rep) st.samples.store(rep->samples);
                else error = "unreadable exposition: " + rep.error().toString();
            } else {
                error = body.error().message;
            }
            st.seconds.store(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            st.up.store(error.empty());
            if (!error.empty()) {
                st.errors.fetch_add(1);
                if (error != st.lastError) spdlog::warn("scrape {}: {}", st.target.url, error);
            } else if (!st.lastError.empty()) {
                spdlog::info("scrape {}: up again", st.target.url);
            }
            st.lastError = error;
            std::unique_lock lock(mutex);
            cv.wait_until(lock, stop, t0 + st.target.interval, [] { return false; });
        }
    }
};

Scraper::Scraper(TelemetryHub& hub, std::vector<ScrapeTarget> targets) : impl_(std::make_unique<Impl>(hub)) {
    for (auto& t : targets) {
        auto st = std::make_unique<Impl::State>();
        st->url = parseHttpUrl(t.url).value_or(Url{});
        st->target = std::move(t);
        impl_->states.push_back(std::move(st));
    }
}

Scraper::~Scraper() { stop(); }

void Scraper::start() {
    if (!impl_->threads.empty()) return;
    for (auto& st : impl_->states)
        impl_->threads.emplace_back([this, s = st.get()](std::stop_token stop) { impl_->run(*s, stop); });
}

void Scraper::stop() {
    for (auto& t : impl_->threads) t.request_stop();
    impl_->cv.notify_all();
    impl_->threads.clear();  // joins
}

void Scraper::appendMetrics(std::string& out) const {
    if (impl_->states.empty()) return;
    auto label = [](const std::string& url) {
        std::string s;
        for (char c : url) {
            if (c == '\\' || c == '"') s += '\\';
            s += c;
        }
        return s;
    };
    out += "# HELP loom_scrape_up Whether the last scrape of an exporter target succeeded.\n"
           "# TYPE loom_scrape_up gauge\n";
    for (const auto& st : impl_->states)
        out += "loom_scrape_up{target=\"" + label(st->target.url) + "\"} " + (st->up ? "1" : "0") + "\n";
    out += "# HELP loom_scrape_duration_seconds Duration of the last scrape of a target.\n"
           "# TYPE loom_scrape_duration_seconds gauge\n";
    for (const auto& st : impl_->states)
        out += "loom_scrape_duration_seconds{target=\"" + label(st->target.url) + "\"} " +
               std::to_string(st->seconds.load()) + "\n";
    out += "# HELP loom_scrape_samples Samples in the last successful scrape of a target.\n"
           "# TYPE loom_scrape_samples gauge\n";
    for (const auto& st : impl_->states)
        out += "loom_scrape_samples{target=\"" + label(st->target.url) + "\"} " + std::to_string(st->samples.load()) + "\n";
    out += "# HELP loom_scrape_errors_total Failed scrapes of a target.\n"
           "# TYPE loom_scrape_errors_total counter\n";
    for (const auto& st : impl_->states)
        out += "loom_scrape_errors_total{target=\"" + label(st->target.url) + "\"} " + std::to_string(st->errors.load()) + "\n";
}

}  // namespace loom::backend
