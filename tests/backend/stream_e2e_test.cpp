// Telemetry in, failure out, over the public API only: Prometheus text POSTed to
// /api/v1/telemetry opens an event (stored, listed by /api/v1/events) and a WebSocket client
// subscribed to `events`, `gpu.health` and `link.health` receives the event and a health delta
// for exactly the GPU or link concerned; recovery closes the event. Also the hall's ETag.
#include "beast_client.hpp"

#include <map>
#include <optional>

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

class StreamE2e : public ServerFixture {
protected:
    Server& start() {
        ServerConfig cfg;
        cfg.streamInterval = 200ms;
        return startServer(cfg, Routes::All);
    }

    // Reads stream messages until `want` accepts one (true) or 15 s pass.
    std::optional<json> readUntil(WsClient& c, const std::function<bool(const json&)>& want) {
        const auto deadline = std::chrono::steady_clock::now() + 15s;
        while (std::chrono::steady_clock::now() < deadline) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            auto m = c.readFor(std::max(left, std::chrono::milliseconds(1)));
            if (!m) return std::nullopt;
            if (want(*m)) return m;
        }
        return std::nullopt;
    }

    // The value a data message (snapshot or u8pairs delta) of `topic` carries for `index`.
    static std::optional<int> valueAt(const json& m, const std::string& topic, std::size_t index) {
        if (m.value("topic", "") != topic) return std::nullopt;
        auto bytes = decodeBase64(m.value("data", ""));
        if (m.value("type", "") == "snapshot")
            return index < bytes.size() ? std::optional<int>(bytes[index]) : std::nullopt;
        if (m.value("type", "") == "delta") {
            for (std::size_t i = 0; i + 5 <= bytes.size(); i += 5) {
                std::size_t idx = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) |
                                  (std::size_t(bytes[i + 3]) << 24);
                if (idx == index) return bytes[i + 4];
            }
        }
        return std::nullopt;
    }

    json openEvents(std::uint16_t port, const std::string& location) {
        auto r = request(port, "GET", "/api/v1/events?location=" + location, tokens_["viewer"]);
        EXPECT_EQ(r.status, 200) << r.body;
        return r.j();
    }
};

TEST_F(StreamE2e, GpuXidBecomesAnEventAndAHealthDelta) {
    auto& s = start();
    auto hall = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"]).j();
    const auto& gpus = hall["gpus"];
    std::size_t index = gpus.size();
    for (std::size_t i = 0; i < gpus.size(); ++i)
        if (gpus[i] == "z1-r002-h1-gpu3") index = i;
    ASSERT_LT(index, gpus.size()) << "z1-r002-h1-gpu3 is not in the hall";

    WsClient c;
    c.open(s.port(), tokens_["viewer"]);
    c.send({{"op", "subscribe"}, {"topics", {"events", "gpu.health"}}});
    auto snap = readUntil(c, [](const json& m) { return m.value("type", "") == "snapshot"; });
    ASSERT_TRUE(snap);
    const int before = valueAt(*snap, "gpu.health", index).value_or(-1);

    const std::string op = tokens_["operator"];
    auto post = request(s.port(), "POST", "/api/v1/telemetry", op,
                        "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\",Hostname=\"z1-r002-h1\"} 97\n"
                        "DCGM_FI_DEV_XID_ERRORS{gpu=\"3\",Hostname=\"z1-r002-h1\"} 79\n"
                        "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"no-such-host\"} 5\n",
                        {{"Content-Type", "text/plain; version=0.0.4"}});
    ASSERT_LT(post.status, 300) << post.body;

    // The event message, then the health of exactly that GPU changes.
    std::optional<int> after;
    bool sawEvent = false;
    auto got = readUntil(c, [&](const json& m) {
        if (m.value("type", "") == "event" && m["event"].value("location", "") == "z1-r002-h1-gpu3") {
            sawEvent = true;
            EXPECT_EQ(m["event"].value("kind", ""), "gpu_xid");
            EXPECT_EQ(m["event"].value("severity", ""), "critical");
            EXPECT_EQ(m["event"].value("rack", ""), "z1-r002");
        }
        if (auto v = valueAt(m, "gpu.health", index); v && *v != before) after = v;
        return sawEvent && after.has_value();
    });
    ASSERT_TRUE(got) << "event seen: " << sawEvent << ", health delta seen: " << after.has_value();

    // Stored: the events endpoint lists it, open.
    auto listed = openEvents(s.port(), "z1-r002-h1-gpu3");
    ASSERT_EQ(listed["items"].size(), 1u) << listed.dump();
    EXPECT_TRUE(listed["items"][0]["closedAt"].is_null());
    EXPECT_NE(listed["items"][0].value("message", "").find("XID 79"), std::string::npos);

    // Unknown hosts are counted, not fatal.
    auto metrics = request(s.port(), "GET", "/metrics", tokens_["viewer"]);
    EXPECT_NE(metrics.body.find("unknown_host"), std::string::npos) << "no unknown-host counter";

    // Recovery (the XID field back to 0): the event closes and the health goes back.
    request(s.port(), "POST", "/api/v1/telemetry", op,
            "DCGM_FI_DEV_XID_ERRORS{gpu=\"3\",Hostname=\"z1-r002-h1\"} 0\n");
    auto closed = readUntil(c, [&](const json& m) {
        return m.value("type", "") == "event" && m["event"].value("location", "") == "z1-r002-h1-gpu3" &&
               !m["event"]["closedAt"].is_null();
    });
    ASSERT_TRUE(closed) << "no closing event message";
    for (int i = 0; i < 50; ++i) {
        auto l = openEvents(s.port(), "z1-r002-h1-gpu3");
        if (!l["items"].empty() && !l["items"][0]["closedAt"].is_null()) return;
        std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "the stored event never closed";
}

// permessage-deflate (issue 14 item 5: stream frames sized for 98k): a client that offers it
// (Beast with client_enable, as browsers do) gets it negotiated and decodes exactly the frames
// a plain client gets: the same snapshots, and the very same delta message (one text shared by
// every subscriber: seq and ts included). A client that does not offer it (Qt WebSockets 6.4,
// the console; the first client here) gets no extension and plain frames.
TEST_F(StreamE2e, ADeflatedStreamDecodesToThePlainFrames) {
    auto& s = start();
    auto hall = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"]).j();
    std::size_t index = hall["gpus"].size();
    for (std::size_t i = 0; i < hall["gpus"].size(); ++i)
        if (hall["gpus"][i] == "z1-r002-h1-gpu3") index = i;
    ASSERT_LT(index, hall["gpus"].size());

    auto connect = [&](WsClient& c, bool deflate) {
        beast::get_lowest_layer(c.raw().ws).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
        if (deflate) {
            websocket::permessage_deflate pmd;
            pmd.client_enable = true;
            c.raw().ws.set_option(pmd);
        }
        c.raw().ws.set_option(websocket::stream_base::decorator([token = tokens_["viewer"]](websocket::request_type& r) {
            r.set(http::field::authorization, "Bearer " + token);
        }));
        websocket::response_type res;
        c.raw().ws.handshake(res, "127.0.0.1", "/api/v1/stream");
        return std::string(res[http::field::sec_websocket_extensions]);
    };
    WsClient plain, z;
    EXPECT_EQ(connect(plain, false), "");
    EXPECT_NE(connect(z, true).find("permessage-deflate"), std::string::npos);
    const std::vector<std::string> topics{"gpu.util", "gpu.health", "link.health"};
    for (auto* c : {&plain, &z}) {
        ASSERT_EQ(c->read().value("type", ""), "hello");
        c->send({{"op", "subscribe"}, {"topics", topics}});
    }
    std::map<std::string, json> snapPlain, snapZ;
    for (auto [c, out] : {std::pair{&plain, &snapPlain}, std::pair{&z, &snapZ}})
        ASSERT_TRUE(readUntil(*c, [&](const json& m) {
            if (m.value("type", "") == "snapshot") (*out)[m.value("topic", "")] = m;
            return out->size() == topics.size();
        })) << "snapshots missing";
    for (const auto& t : topics) {
        ASSERT_GT(snapPlain[t].value("data", "").size(), 40u) << t;
        EXPECT_EQ(snapZ[t]["data"], snapPlain[t]["data"]) << t;
        EXPECT_EQ(snapZ[t]["count"], snapPlain[t]["count"]) << t;
        EXPECT_EQ(snapZ[t]["encoding"], snapPlain[t]["encoding"]) << t;
    }

    auto post = request(s.port(), "POST", "/api/v1/telemetry", tokens_["operator"],
                        "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\",Hostname=\"z1-r002-h1\"} 77\n",
                        {{"Content-Type", "text/plain; version=0.0.4"}});
    ASSERT_LT(post.status, 300) << post.body;
    auto isUtil77 = [&](const json& m) {
        return m.value("type", "") != "snapshot" && valueAt(m, "gpu.util", index) == 77;
    };
    auto dPlain = readUntil(plain, isUtil77);
    auto dZ = readUntil(z, isUtil77);
    ASSERT_TRUE(dPlain && dZ) << "no gpu.util delta with 77 on " << (dPlain ? "the deflate client" : "the plain client");
    EXPECT_EQ(*dZ, *dPlain) << "the same message, decoded from a compressed frame";
}

TEST_F(StreamE2e, PortDownBecomesALinkEventAndAHealthDelta) {
    // Link alarms are for links in service (a planned cable that is down is not a failure):
    // the racks are in service, and the leader's live sync brings their cables with them.
    ASSERT_TRUE(connect().exec("UPDATE racks SET state = 'in_service'"));
    auto& s = start();
    auto hall = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"]).j();
    // A link of z1-r003's RTSW: "<switch>/p<N>--<peer>".
    std::size_t index = hall["links"].size();
    std::string port;
    for (std::size_t i = 0; i < hall["links"].size(); ++i) {
        std::string name = hall["links"][i];
        if (name.rfind("z1-r003-rtsw/p", 0) == 0) {
            index = i;
            port = name.substr(std::string("z1-r003-rtsw/").size(), name.find("--") - std::string("z1-r003-rtsw/").size());
            break;
        }
    }
    ASSERT_LT(index, hall["links"].size()) << hall["links"].dump();

    WsClient c;
    c.open(s.port(), tokens_["viewer"]);
    c.send({{"op", "subscribe"}, {"topics", {"events", "link.health"}}});
    auto snap = readUntil(c, [](const json& m) { return m.value("type", "") == "snapshot"; });
    ASSERT_TRUE(snap);
    const int before = valueAt(*snap, "link.health", index).value_or(-1);

    const std::string op = tokens_["operator"];
    auto up = request(s.port(), "POST", "/api/v1/telemetry", op,
                      "loom_port_oper_status{switch=\"z1-r003-rtsw\",port=\"" + port + "\"} 1\n");
    ASSERT_LT(up.status, 300) << up.body;
    std::this_thread::sleep_for(300ms);
    auto down = request(s.port(), "POST", "/api/v1/telemetry", op,
                        "loom_port_oper_status{switch=\"z1-r003-rtsw\",port=\"" + port + "\"} 0\n"
                        "loom_port_oper_status{switch=\"z1-r003-rtsw\",port=\"p999\"} 0\n");
    ASSERT_LT(down.status, 300) << down.body;

    bool sawEvent = false;
    std::optional<int> after;
    auto got = readUntil(c, [&](const json& m) {
        if (m.value("type", "") == "event" && m["event"].value("kind", "") == "link_down")
            sawEvent = true;
        if (auto v = valueAt(m, "link.health", index); v && *v != before) after = v;
        return sawEvent && after.has_value();
    });
    ASSERT_TRUE(got) << "link_down event: " << sawEvent << ", link.health delta: " << after.has_value();

    // Back up: the event closes.
    request(s.port(), "POST", "/api/v1/telemetry", op,
            "loom_port_oper_status{switch=\"z1-r003-rtsw\",port=\"" + port + "\"} 1\n");
    auto closed = readUntil(c, [&](const json& m) {
        return m.value("type", "") == "event" && m["event"].value("kind", "") == "link_down" &&
               !m["event"]["closedAt"].is_null();
    });
    EXPECT_TRUE(closed) << "no closing link_down event";
}

TEST_F(StreamE2e, HallCarriesAnETagAndAnswersNotModified) {
    auto& s = start();
    auto first = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"]);
    ASSERT_EQ(first.status, 200);
    ASSERT_TRUE(first.headers.contains("ETag"));
    const std::string etag = first.headers["ETag"];
    auto again = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"], "", {{"If-None-Match", etag}});
    EXPECT_EQ(again.status, 304);
    EXPECT_TRUE(again.body.empty());
    auto other = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"], "", {{"If-None-Match", "\"x\""}});
    EXPECT_EQ(other.status, 200);
    EXPECT_EQ(other.body, first.body);
}

}  // namespace
}  // namespace loom::backend::testing
