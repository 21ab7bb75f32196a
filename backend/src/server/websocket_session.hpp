// WebSocket session of the stream (/api/v1/stream): one per client, on the connection's
// strand. A reader coroutine handles subscribe requests; a writer coroutine drains a bounded
// queue. A slow client's stale data frames are dropped and replaced by a fresh snapshot; one
// whose queue filled and was not drained within wsSlowTicks intervals gets {"type":"bye"} and
// is closed (the TCP connection is cut when even the bye cannot be written). Nothing a
// client does touches another client's queue or strand.
#pragma once

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>

#include "loom/version.hpp"
#include "shared_state.hpp"

namespace loom::backend {

namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;

template <class Stream>
class WsSession : public WsClient, public std::enable_shared_from_this<WsSession<Stream>> {
public:
    // `subprotocol`: the Sec-WebSocket-Protocol to answer ("loom.v1"), empty for none.
    WsSession(Server::Impl& s, Stream&& stream, Principal principal, std::string subprotocol = {})
        : s_(s), ws_(std::move(stream)), principal_(std::move(principal)),
          subprotocol_(std::move(subprotocol)), signal_(ws_.get_executor()) {
        signal_.expires_at(std::chrono::steady_clock::time_point::max());
    }

    net::awaitable<void> run(beast::http::request<beast::http::string_body> req) {
        using net::use_awaitable;
        ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
        ws_.read_message_max(s_.config.wsMaxMessage);
        // One frame per message, written in one go: with Beast's default auto-fragmenting
        // (4 KiB frames) a 24k snapshot was ~15 socket writes and completions per client, and
        // the fan-out to 100 clients took ~100 ms per tick (bench/server, ws_fanout).
        ws_.auto_fragment(false);
        // permessage-deflate, negotiated only with a client that offers it: the 98k snapshots
        // are ~1 MB of base64 per connect and ~0.2-0.3 MB/s per client after
        // (bench/server/run_scale_live.sh); each connection keeps its own zlib streams.
        if (s_.config.wsDeflateLevel > 0) {
            websocket::permessage_deflate pmd;
            pmd.server_enable = true;
            pmd.compLevel = s_.config.wsDeflateLevel;
            ws_.set_option(pmd);
        }
        ws_.set_option(websocket::stream_base::decorator(
            [protocol = subprotocol_](websocket::response_type& res) {
                res.set(beast::http::field::server, "loomd " LOOM_VERSION);
                if (!protocol.empty()) res.set(beast::http::field::sec_websocket_protocol, protocol);
            }));
        beast::error_code ec;
        co_await ws_.async_accept(req, net::redirect_error(use_awaitable, ec));
        if (ec) co_return;
        s_.metrics.wsClients.fetch_add(1);
        auto self = this->shared_from_this();
        s_.addClient(self);
        nlohmann::json hello{{"type", "hello"},
                             {"seq", s_.nextSeq()},
                             {"server", "loomd " LOOM_VERSION},
                             {"role", roleName(principal_.role)},
                             {"layoutVersion", s_.layoutVersion.load()},
                             {"eventSeq", s_.currentEventSeq()},
                             {"intervalMs", s_.config.streamInterval.count()},
                             {"topics", s_.dataTopics}};
        enqueue(StreamFrame{std::make_shared<const std::string>(hello.dump()), "", false, {}});
        // The writer runs beside the reader on the same strand; its end ends the session.
        net::co_spawn(ws_.get_executor(), writer(self), [](std::exception_ptr e) {
            if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) {
                    spdlog::warn("stream writer: {}", x.what());
                }
        });
        co_await reader();
        closed_ = true;
        signal_.cancel();
        s_.metrics.wsClients.fetch_sub(1);
        // The queue's frames are freed by now (or with the writer's last one); a session that
        // held megabytes gives them back to the system instead of leaving them in this I/O
        // thread's malloc arena (20 flooding clients left +335 MB resident).
        if (peakQueuedBytes_ >= kTrimAfterQueueBytes) {
            queue_.clear();
            queuedBytes_ = 0;
            ::malloc_trim(0);
        }
    }

    void deliver(StreamFrame frame) override {
        auto self = this->shared_from_this();
        net::post(ws_.get_executor(), [self, f = std::move(frame)]() mutable {
            self->enqueue(std::move(f));
        });
    }

    void close(const std::string& reason) override {
        auto self = this->shared_from_this();
        net::post(ws_.get_executor(), [self, reason] { self->sayBye(reason); });
    }

    bool wants(const std::string& topic) const override {
        std::lock_guard lock(topicsMutex_);
        return topics_.count(topic) > 0;
    }

private:
    // A client's queue holds at most this many bytes of frames (shared frames counted for
    // each client): beyond, it is too slow and is cut like one whose queue stays full.
    static constexpr std::size_t kMaxQueueBytes = std::size_t{32} << 20;
    static constexpr std::size_t kTrimAfterQueueBytes = std::size_t{4} << 20;

    // On the strand: queuedBytes_ after frames were dropped from the queue.
    void recount() {
        queuedBytes_ = 0;
        for (const auto& q : queue_) queuedBytes_ += q.text ? q.text->size() : 0;
    }

    // On the strand.
    void enqueue(StreamFrame f) {
        if (closed_ || byeQueued_) return;
        if (f.data && queue_.size() >= s_.config.wsQueueFrames) {
            // Full: drop stale data frames; what is sent instead is self-contained. The client
            // now counts as behind until the writer has emptied the queue (caughtUp()).
            std::size_t before = queue_.size();
            std::erase_if(queue_, [](const StreamFrame& q) { return q.data; });
            recount();
            s_.metrics.wsDropped.fetch_add(before - queue_.size());
            if (!behind_) {
                behind_ = true;
                behindSinceTick_ = s_.metrics.streamTicks.load();
                behindSince_ = std::chrono::steady_clock::now();
            }
            resync_ = true;
        }
        if (f.data && resync_ && f.snapshot) {
            // Until the client caught up, send snapshots: earlier deltas were dropped.
            f.text = f.snapshot;
            f.snapshot.reset();
            s_.metrics.wsSnapshotsResent.fetch_add(1);
        }
        if (f.data && behind_) {
            // Emptying the queue on each overflow let a stalled client stay for ~5 x 64 frames
            // (~135 s at 1 s ticks). Count intervals since the queue filled instead: the queue
            // is not drained, so the client has not read a whole frame's worth since.
            auto ticks = s_.metrics.streamTicks.load() - behindSinceTick_;
            auto limit = s_.config.streamInterval * s_.config.wsSlowTicks;
            if (ticks >= static_cast<std::uint64_t>(s_.config.wsSlowTicks) ||
                std::chrono::steady_clock::now() - behindSince_ >= limit) {
                s_.metrics.wsSlowDisconnects.fetch_add(1);
                sayBye("client too slow: its queue stayed full for " + std::to_string(ticks) +
                       " intervals");
                return;
            }
            // A snapshot supersedes every queued frame of its topic: memory stays flat.
            if (!f.snapshot) {
                std::size_t before = queue_.size();
                std::erase_if(queue_, [&](const StreamFrame& q) {
                    return q.data && q.topic == f.topic;
                });
                recount();
                s_.metrics.wsDropped.fetch_add(before - queue_.size());
            }
        }
        if (queue_.size() >= s_.config.wsQueueFrames * 4) {
            s_.metrics.wsSlowDisconnects.fetch_add(1);
            sayBye("client too slow: " + std::to_string(queue_.size()) + " frames behind");
            return;
        }
        const std::size_t bytes = f.text ? f.text->size() : 0;
        if (!queue_.empty() && queuedBytes_ + bytes > kMaxQueueBytes) {
            s_.metrics.wsSlowDisconnects.fetch_add(1);
            sayBye("client too slow: " + std::to_string((queuedBytes_ + bytes) >> 20) +
                   " MiB queued");
            return;
        }
        queue_.push_back(std::move(f));
        queuedBytes_ += bytes;
        peakQueuedBytes_ = std::max(peakQueuedBytes_, queuedBytes_);
        signal_.cancel();
    }

    // On the strand, after a completed write: an empty queue means the client kept up.
    void caughtUp() {
        if (!queue_.empty()) return;
        behind_ = false;
        resync_ = false;
    }

    void sayBye(const std::string& reason) {
        if (closed_ || byeQueued_) return;
        queue_.clear();
        queuedBytes_ = 0;
        nlohmann::json bye{{"type", "bye"}, {"reason", reason}};
        queue_.push_back(StreamFrame{std::make_shared<const std::string>(bye.dump()), "", false,
                                     {}});
        byeQueued_ = true;
        byeReason_ = reason;
        signal_.cancel();
        // A client that does not read at all never lets the bye out: cut the TCP connection
        // if the close has not happened a few seconds later.
        auto self = this->shared_from_this();
        auto timer = std::make_shared<net::steady_timer>(ws_.get_executor());
        timer->expires_after(std::chrono::seconds(1));
        timer->async_wait([self, timer](beast::error_code) {
            if (!self->closed_) {
                beast::error_code ignored;
                beast::get_lowest_layer(self->ws_).socket().close(ignored);
            }
        });
    }

    net::awaitable<void> writer(std::shared_ptr<WsSession> self) {
        using net::use_awaitable;
        beast::error_code ec;
        for (;;) {
            while (queue_.empty() && !closed_) {
                signal_.expires_at(std::chrono::steady_clock::time_point::max());
                co_await signal_.async_wait(net::redirect_error(use_awaitable, ec));
            }
            if (closed_) break;
            StreamFrame f = std::move(queue_.front());
            queue_.pop_front();
            queuedBytes_ -= std::min(queuedBytes_, f.text ? f.text->size() : 0);
            ws_.text(true);
            co_await ws_.async_write(net::buffer(*f.text), net::redirect_error(use_awaitable, ec));
            if (ec) break;
            caughtUp();
            s_.metrics.wsFramesSent.fetch_add(1);
            s_.metrics.wsBytesSent.fetch_add(f.text->size());
            if (byeQueued_ && queue_.empty()) {
                co_await ws_.async_close(websocket::close_reason(websocket::close_code::policy_error,
                                                                 byeReason_.substr(0, 120)),
                                         net::redirect_error(use_awaitable, ec));
                break;
            }
        }
        closed_ = true;
    }

    net::awaitable<void> reader() {
        using net::use_awaitable;
        beast::flat_buffer buf;
        beast::error_code ec;
        for (;;) {
            buf.clear();
            co_await ws_.async_read(buf, net::redirect_error(use_awaitable, ec));
            if (ec) break;
            std::string text = beast::buffers_to_string(buf.data());
            try {
                handleClientMessage(text);
            } catch (const std::exception& e) {
                // A message the checks below did not foresee still gets an answer.
                sendError(std::string("malformed message: ") + e.what());
            }
        }
    }

    void sendError(const std::string& message) {
        nlohmann::json e{{"type", "error"}, {"message", message}};
        // The message may quote client bytes that are not UTF-8.
        auto text = e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        enqueue(StreamFrame{std::make_shared<const std::string>(std::move(text)), "", false, {}});
    }

    void handleClientMessage(const std::string& text) {
        auto msg = nlohmann::json::parse(text, nullptr, false);
        if (msg.is_discarded() || !msg.is_object()) return sendError("expected a JSON object");
        auto opField = msg.find("op");
        if (opField == msg.end() || !opField->is_string())
            return sendError("op must be a string: subscribe, unsubscribe or ping");
        auto op = opField->get<std::string>();
        if (op == "ping") {
            nlohmann::json p{{"type", "pong"}, {"seq", s_.seq.load()}};
            return enqueue(StreamFrame{std::make_shared<const std::string>(p.dump()), "", false, {}});
        }
        if (op != "subscribe" && op != "unsubscribe")
            return sendError("unknown op '" + op + "'; expected subscribe, unsubscribe or ping");
        if (!msg.contains("topics") || !msg["topics"].is_array())
            return sendError("topics must be an array of topic names");
        static const std::set<std::string> kMessageTopics{"events", "provisioning", "inventory",
                                                          "phase", "jobs"};
        std::vector<std::string> topics;
        for (auto& t : msg["topics"]) {
            if (!t.is_string()) return sendError("topics must be strings");
            auto name = t.get<std::string>();
            bool known = kMessageTopics.count(name) > 0 ||
                         std::find(s_.dataTopics.begin(), s_.dataTopics.end(), name) !=
                             s_.dataTopics.end();
            if (!known) return sendError("unknown topic '" + name + "'");
            topics.push_back(name);
        }
        if (op == "unsubscribe") {
            std::lock_guard lock(topicsMutex_);
            for (auto& t : topics) topics_.erase(t);
            return;
        }
        {
            // Subscribing and taking the snapshot are one step for the tick (shared_state.hpp):
            // the snapshot is the base of the next delta this client is sent.
            std::lock_guard base(s_.streamBaseMutex);
            {
                std::lock_guard lock(topicsMutex_);
                for (auto& t : topics) topics_.insert(t);
                // "provisioning" includes phase progress messages.
                if (std::find(topics.begin(), topics.end(), "provisioning") != topics.end())
                    topics_.insert("phase");
            }
            for (auto& t : topics) {
                if (kMessageTopics.count(t)) continue;
                // A fresh snapshot supersedes every queued frame of its topic: subscribing again
                // and again (2,000 frames a connection) queues one snapshot per topic, not one
                // per request.
                std::erase_if(queue_, [&](const StreamFrame& q) { return q.topic == t; });
                recount();
                if (auto snap = s_.snapshotBase(t)) enqueue(StreamFrame{snap, t, false, {}});
            }
        }
        if (msg.contains("resumeFrom") && msg["resumeFrom"].is_number_unsigned()) {
            auto missed = s_.replayAfter(msg["resumeFrom"].get<std::uint64_t>());
            if (!missed) {
                nlohmann::json r{{"type", "resync"},
                                 {"seq", s_.nextSeq()},
                                 {"reason", "missed messages are no longer buffered"}};
                enqueue(StreamFrame{std::make_shared<const std::string>(r.dump()), "", false, {}});
            } else {
                for (auto& f : *missed)
                    if (wants(f.topic)) enqueue(f);
            }
        }
    }

    Server::Impl& s_;
    websocket::stream<Stream> ws_;
    Principal principal_;
    std::string subprotocol_;
    net::steady_timer signal_;
    std::deque<StreamFrame> queue_;
    std::size_t queuedBytes_ = 0, peakQueuedBytes_ = 0;
    mutable std::mutex topicsMutex_;
    std::set<std::string> topics_;
    bool closed_ = false, byeQueued_ = false, resync_ = false;
    std::string byeReason_;
    // Set when the queue filled, cleared when the writer drained it (caughtUp()).
    bool behind_ = false;
    std::uint64_t behindSinceTick_ = 0;
    std::chrono::steady_clock::time_point behindSince_;
};

}  // namespace loom::backend
