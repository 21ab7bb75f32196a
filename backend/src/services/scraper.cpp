#include "loom/backend/scraper.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "loom/backend/http_url.hpp"
#include "loom/backend/services.hpp"
#include "loom/inventory/model.hpp"
#include "loom/inventory/unix_time.hpp"
#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::backend {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

namespace {

// Beast's largest single read (read_size's cap).
constexpr std::size_t kReadChunk = std::size_t{64} << 10;

std::string escapeLabel(std::string_view v) {
    std::string s;
    for (char c : v) {
        if (c == '\\' || c == '"') s += '\\';
        if (c == '\n') {
            s += "\\n";
            continue;
        }
        s += c;
    }
    return s;
}

}  // namespace

struct Scraper::Impl {
    struct Target {
        std::string kind;  // "static" for a hand-listed URL
        std::string entity;
        std::string url;
        HttpUrl u;
        bool urlOk = false;
        http::request<http::empty_body> req;  // the same GET every scrape (when urlOk)
        bool isSwitch = false;
        std::chrono::milliseconds interval{1000}, timeout{5000};
        std::size_t maxBytes = 0;
        // io thread only
        bool removed = false;
        net::steady_timer* timer = nullptr;  // the coroutine's, while it waits
        // under Impl::mutex
        ScrapeTargetStatus st;
    };

    TelemetryHub& hub;
    ScraperOptions opt;
    mutable std::mutex mutex;  // targets lists and every Target::st
    std::vector<std::shared_ptr<Target>> fixed;
    std::vector<std::shared_ptr<Target>> templated;
    bool started = false;
    // io thread only: the concurrency bound (a counting semaphore of timers).
    std::size_t inFlight = 0;
    std::deque<net::steady_timer*> waiters;
    std::jthread thread;
    net::io_context ioc;  // destroyed before everything above, with the coroutine frames it holds
    // Parse + ingest of the pages, on a thread of their own: the io thread goes on reading the
    // next pages meanwhile, so a slow parse never delays a GET. Destroyed first: work it still
    // holds (a page and the coroutine waiting for it) goes while the io_context is alive.
    net::thread_pool ingestPool{1};

    Impl(TelemetryHub& h, ScraperOptions o) : hub(h), opt(o) {}

    net::awaitable<void> acquire() {
        if (inFlight < opt.maxInFlight) {
            ++inFlight;
            co_return;
        }
        net::steady_timer w(co_await net::this_coro::executor,
                            std::chrono::steady_clock::time_point::max());
        waiters.push_back(&w);
        // Woken by release() cancelling the wait: the slot passes to us.
        beast::error_code ec;
        co_await w.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    void release() {
        if (!waiters.empty()) {
            auto* w = waiters.front();
            waiters.pop_front();
            w->cancel();
        } else {
            --inFlight;
        }
    }

    // One scrape on `stream` (connected when `connected`): the body, or an error message.
    net::awaitable<std::pair<std::string, std::string>> fetch(Target& t, beast::tcp_stream& stream,
                                                              bool& connected) {
        stream.expires_after(t.timeout);
        if (!connected) {
            tcp::resolver resolver(co_await net::this_coro::executor);
            beast::error_code ec;
            auto eps = co_await resolver.async_resolve(t.u.host, t.u.port,
                                                       net::redirect_error(net::use_awaitable, ec));
            if (ec) co_return std::pair{std::string(), "resolve " + t.u.host + ": " + ec.message()};
            co_await stream.async_connect(eps, net::redirect_error(net::use_awaitable, ec));
            if (ec == beast::error::timeout)
                co_return std::pair{std::string(), "timed out connecting after " +
                                                       std::to_string(t.timeout.count()) + " ms"};
            if (ec) co_return std::pair{std::string(), "connect: " + ec.message()};
            connected = true;
        }
        beast::error_code ec3, ec4;
        co_await http::async_write(stream, std::as_const(t.req),
                                   net::redirect_error(net::use_awaitable, ec3));
        if (ec3) co_return std::pair{std::string(), "request: " + ec3.message()};
        http::response_parser<http::string_body> parser;
        parser.body_limit(t.maxBytes);
        // Beast reads at most the buffer's free capacity (512 bytes when it is empty): a
        // 64 KiB buffer reads a 70 KB page in a few calls, not ~140. It lives for this scrape
        // only (a response leaves nothing in it for the next one): 8k targets do not each
        // keep 64 KiB, at most maxInFlight scrapes hold one.
        beast::flat_buffer buf;
        buf.reserve(kReadChunk);
        co_await http::async_read(stream, buf, parser,
                                  net::redirect_error(net::use_awaitable, ec4));
        if (ec4 == http::error::body_limit)
            co_return std::pair{std::string(),
                                "body larger than " + std::to_string(t.maxBytes) + " bytes"};
        if (ec4 == beast::error::timeout)
            co_return std::pair{std::string(),
                                "timed out after " + std::to_string(t.timeout.count()) + " ms"};
        if (ec4) co_return std::pair{std::string(), "response: " + ec4.message()};
        if (!parser.keep_alive()) {
            beast::error_code ignore;
            stream.socket().shutdown(tcp::socket::shutdown_both, ignore);
            stream.close();
            connected = false;
        }
        if (parser.get().result_int() != 200) {
            // The exporter's own reason: its body's last line, bounded. snmp_exporter's 500 is
            // "An error has occurred while serving metrics:\n\nerror collecting metric
            // Desc{...}: error connecting to target atsw01: ... no such host"; the Desc goes.
            std::string_view why = parser.get().body();
            while (!why.empty() && (why.back() == '\n' || why.back() == '\r' || why.back() == ' '))
                why.remove_suffix(1);
            if (auto nl = why.rfind('\n'); nl != std::string_view::npos) why.remove_prefix(nl + 1);
            if (auto desc = why.rfind("}: "); desc != std::string_view::npos)
                why.remove_prefix(desc + 3);
            std::string error = "HTTP " + std::to_string(parser.get().result_int());
            if (!why.empty()) error += ": " + std::string(why.substr(0, 300));
            co_return std::pair{std::string(), std::move(error)};
        }
        co_return std::pair{std::move(parser.get().body()), std::string()};
    }

    // On the ingest thread: the page into the hub as the target's entity; samples, or the error.
    net::awaitable<std::pair<std::uint64_t, std::string>> ingest(std::shared_ptr<Target> t,
                                                                 std::string body) {
        telemetry::IngestIdentity id;
        (t->isSwitch ? id.switchName : id.host) = t->entity;
        // The target, not its URL (which may carry credentials): "scrape dcgm z1-r003-h01".
        const std::string origin = "scrape " + t->kind + (t->entity.empty() ? "" : " " + t->entity);
        id.origin = origin;
        // Its URL only hashed (sourceTag), never kept: a counter a second target also sends is
        // reported, not mixed in (issue 34).
        id.source = t->url;
        auto rep = hub.ingestText(body, unixMs(), id);
        if (!rep)
            co_return std::pair{std::uint64_t{0},
                                "unreadable exposition: " + rep.error().toString()};
        co_return std::pair{rep->samples, std::string()};
    }

    net::awaitable<void> run(std::shared_ptr<Target> t) {
        auto ex = co_await net::this_coro::executor;
        net::steady_timer timer(ex);
        beast::tcp_stream stream(ex);
        bool connected = false;
        // Spread the first scrapes over one interval, so 8k targets do not fire at once.
        const auto spread =
            std::hash<std::string>{}(t->url) %
            static_cast<std::size_t>(std::max<std::int64_t>(1, t->interval.count()));
        auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(spread);
        std::string lastLogged;
        while (!t->removed) {
            timer.expires_at(next);
            t->timer = &timer;
            beast::error_code waitEc;  // cancelled: the target was removed
            co_await timer.async_wait(net::redirect_error(net::use_awaitable, waitEc));
            t->timer = nullptr;
            if (t->removed) break;
            co_await acquire();
            if (t->removed) {  // removed while it waited for a slot: no last scrape
                release();
                break;
            }
            const auto t0 = std::chrono::steady_clock::now();
            std::string body, error;
            if (!t->urlOk) {
                error = "not an http:// URL";
            } else {
                const bool reused = connected;
                std::tie(body, error) = co_await fetch(*t, stream, connected);
                if (!error.empty() && reused && error.rfind("timed out", 0) != 0) {
                    // The exporter closed the idle keep-alive connection (its idle timeout):
                    // once more on a fresh one, as any HTTP client does.
                    stream.close();
                    connected = false;
                    std::tie(body, error) = co_await fetch(*t, stream, connected);
                }
            }
            if (!error.empty() && connected) {
                // A failed exchange leaves the connection in an unknown state: start afresh.
                stream.close();
                connected = false;
            }
            std::uint64_t samples = 0;
            if (error.empty()) {
                // The slot is held until the page is in: at most maxInFlight pages wait for the
                // ingest thread, and when it falls behind the GETs slow down with it.
                std::tie(samples, error) = co_await net::co_spawn(
                    ingestPool.get_executor(), ingest(t, std::move(body)), net::use_awaitable);
            }
            release();
            const double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            {
                std::lock_guard lk(mutex);
                auto& s = t->st;
                s.up = error.empty();
                s.seconds = secs;
                s.lastScrapeMs = unixMs();
                ++s.scrapes;
                if (error.empty())
                    s.samples = samples;
                else
                    ++s.errors;
                s.lastError = error;
            }
            if (error != lastLogged) {
                if (!error.empty())
                    spdlog::warn("scrape {}: {}", t->url, error);
                else
                    spdlog::info("scrape {}: up again", t->url);
                lastLogged = error;
            }
            next += t->interval;
            if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now();
        }
    }

    void spawn(const std::shared_ptr<Target>& t) {
        net::co_spawn(ioc, run(t), [url = t->url](std::exception_ptr e) {
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                spdlog::error("scrape {}: stopped: {}", url, ex.what());
            }
        });
    }

    static std::shared_ptr<Target> makeTarget(std::string kind, std::string entity, std::string url,
                                              bool isSwitch, std::chrono::milliseconds interval,
                                              std::chrono::milliseconds timeout,
                                              std::size_t maxBytes) {
        auto t = std::make_shared<Target>();
        t->kind = std::move(kind);
        t->entity = std::move(entity);
        t->url = std::move(url);
        t->isSwitch = isSwitch;
        t->interval = interval;
        t->timeout = timeout;
        t->maxBytes = maxBytes;
        if (auto u = parseHttpUrl(t->url)) {
            t->u = *u;
            t->urlOk = true;
            t->req = {http::verb::get, t->u.target, 11};
            t->req.set(http::field::host, t->u.host + ":" + t->u.port);
            t->req.set(http::field::accept, "text/plain");
            t->req.set(http::field::user_agent, "loomd-scraper");
            t->req.keep_alive(true);
        }
        t->st.kind = t->kind;
        t->st.entity = t->entity;
        t->st.url = t->url;
        return t;
    }
};

Scraper::Scraper(TelemetryHub& hub, std::vector<ScrapeTarget> targets, ScraperOptions options)
    : impl_(std::make_unique<Impl>(hub, options)) {
    for (auto& t : targets)
        impl_->fixed.push_back(Impl::makeTarget("static", "", std::move(t.url), false, t.interval,
                                                t.timeout, t.maxBytes));
}

Scraper::~Scraper() { stop(); }

void Scraper::start() {
    std::lock_guard lk(impl_->mutex);
    if (impl_->started) return;
    impl_->started = true;
    for (auto& t : impl_->fixed) impl_->spawn(t);
    for (auto& t : impl_->templated) impl_->spawn(t);
    // The io_context runs until stop(): a work guard keeps it alive with no target at all.
    impl_->thread = std::jthread([impl = impl_.get()] {
        auto guard = net::make_work_guard(impl->ioc);
        impl->ioc.run();
    });
}

void Scraper::stop() {
    impl_->ioc.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
    // A page being ingested finishes; its coroutine's resumption stays queued in the stopped
    // io_context, destroyed with it.
    impl_->ingestPool.stop();
    impl_->ingestPool.join();
}

void Scraper::setTargets(std::vector<ExporterTarget> targets) {
    auto& I = *impl_;
    std::vector<std::shared_ptr<Impl::Target>> next, gone, fresh;
    {
        std::lock_guard lk(I.mutex);
        using Key = std::tuple<std::string_view, std::string_view, std::string_view>;
        std::map<Key, std::shared_ptr<Impl::Target>> old;
        // Views of the targets' own strings (a `std::tuple{...}` of them would copy the strings
        // into a temporary and leave the key's views dangling: ASan's heap-use-after-free).
        for (auto& t : I.templated) old.emplace(Key(t->kind, t->entity, t->url), t);
        for (auto& e : targets) {
            const auto kind = exporterKindName(e.kind);
            const auto interval = e.interval.count() > 0 ? e.interval : I.opt.interval;
            const auto timeout = e.timeout.count() > 0 ? e.timeout : I.opt.timeout;
            auto it =
                old.find(std::tuple{kind, std::string_view(e.entity), std::string_view(e.url)});
            if (it != old.end() && it->second->interval == interval &&
                it->second->timeout == timeout) {
                next.push_back(it->second);
                old.erase(it);
                continue;
            }
            auto t =
                Impl::makeTarget(std::string(kind), std::move(e.entity), std::move(e.url),
                                 e.kind == ExporterKind::Snmp, interval, timeout, I.opt.maxBytes);
            next.push_back(t);
            fresh.push_back(t);
        }
        for (auto& [k, t] : old) gone.push_back(t);
        I.templated = std::move(next);
        if (!I.started) return;  // start() spawns them
    }
    // Coroutines and their flags belong to the io thread. The io_context is the Impl's: a
    // handler it never ran (stopped) is destroyed with it, so a plain pointer is enough.
    net::post(I.ioc, [impl = &I, gone = std::move(gone), fresh = std::move(fresh)] {
        for (auto& t : gone) {
            t->removed = true;
            if (t->timer) t->timer->cancel();
        }
        for (auto& t : fresh) impl->spawn(t);
    });
}

std::vector<ScrapeTargetStatus> Scraper::status(
    const std::function<bool(const ScrapeTargetStatus&)>& keep) const {
    std::lock_guard lk(impl_->mutex);
    std::vector<ScrapeTargetStatus> out;
    // Copied only when kept: `?entity=` of 8k targets copies one, not 8k.
    for (const auto* list : {&impl_->fixed, &impl_->templated})
        for (const auto& t : *list)
            if (!keep || keep(t->st)) out.push_back(t->st);
    return out;
}

void Scraper::appendMetrics(std::string& out) const {
    std::lock_guard lk(impl_->mutex);
    const auto& fixed = impl_->fixed;
    if (!fixed.empty()) {
        auto each = [&](std::string_view name, std::string_view help, std::string_view type,
                        auto value) {
            out += "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
                   std::string(name) + " " + std::string(type) + "\n";
            for (const auto& t : fixed)
                out += std::string(name) + "{target=\"" + escapeLabel(t->url) + "\"} " +
                       value(t->st) + "\n";
        };
        each("loom_scrape_up", "Whether the last scrape of a hand-listed target succeeded.",
             "gauge", [](const ScrapeTargetStatus& s) { return std::string(s.up ? "1" : "0"); });
        each("loom_scrape_duration_seconds", "Duration of the last scrape of a target.", "gauge",
             [](const ScrapeTargetStatus& s) { return std::to_string(s.seconds); });
        each("loom_scrape_samples", "Samples in the last successful scrape of a target.", "gauge",
             [](const ScrapeTargetStatus& s) { return std::to_string(s.samples); });
        each("loom_scrape_errors_total", "Failed scrapes of a target.", "counter",
             [](const ScrapeTargetStatus& s) { return std::to_string(s.errors); });
    }
    struct Sum {
        std::uint64_t targets = 0, up = 0, errors = 0, samples = 0;
        double maxSeconds = 0;
    };
    std::map<std::string, Sum> kinds;
    for (auto k : {ExporterKind::Dcgm, ExporterKind::Node, ExporterKind::Snmp})
        kinds[std::string(exporterKindName(k))];
    for (const auto& t : impl_->templated) {
        auto& s = kinds[t->kind];
        ++s.targets;
        s.up += t->st.up ? 1 : 0;
        s.errors += t->st.errors;
        s.samples += t->st.samples;
        s.maxSeconds = std::max(s.maxSeconds, t->st.seconds);
    }
    auto perKind = [&](std::string_view name, std::string_view help, std::string_view type,
                       auto value) {
        out += "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
               std::string(name) + " " + std::string(type) + "\n";
        for (const auto& [k, s] : kinds)
            out += std::string(name) + "{kind=\"" + k + "\"} " + value(s) + "\n";
    };
    perKind("loom_scrape_targets", "Exporter targets from telemetry.targets, per kind.", "gauge",
            [](const Sum& s) { return std::to_string(s.targets); });
    perKind("loom_scrape_targets_up", "Targets whose last scrape succeeded, per kind.", "gauge",
            [](const Sum& s) { return std::to_string(s.up); });
    perKind("loom_scrape_kind_errors_total", "Failed scrapes of templated targets, per kind.",
            "counter", [](const Sum& s) { return std::to_string(s.errors); });
    perKind("loom_scrape_kind_samples", "Samples in the last scrape of every target, per kind.",
            "gauge", [](const Sum& s) { return std::to_string(s.samples); });
    perKind("loom_scrape_duration_seconds_max", "Slowest last scrape of a target, per kind.",
            "gauge", [](const Sum& s) { return std::to_string(s.maxSeconds); });
}

void followInventory(Scraper& scraper, Services& services, const TargetTemplates& templates) {
    if (templates.dcgm.empty() && templates.node.empty() && templates.snmp.empty()) return;
    auto apply = [&scraper, &services, templates] {
        auto inv = services.inventory();
        if (!inv) return;
        std::vector<ExporterTarget> all;
        for (auto k : {ExporterKind::Dcgm, ExporterKind::Node, ExporterKind::Snmp}) {
            auto ts = expandTargets(templates, *inv, k);
            std::move(ts.begin(), ts.end(), std::back_inserter(all));
        }
        scraper.setTargets(std::move(all));
    };
    services.onLiveChange(apply);
    apply();  // the live state may have loaded before the hook was set
}

}  // namespace loom::backend
