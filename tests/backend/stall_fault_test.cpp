// Fault suite (issue 18, item 4): a WebSocket client that stops reading is cut within
// wsSlowTicks intervals of its queue filling, while a healthy client keeps its pace. The
// stalled client is real: it shrinks its socket receive buffer and never reads again, so the
// server's socket buffers and then its bounded queue fill up.
#include "beast_client.hpp"

#include <atomic>
#include <regex>

namespace loom::backend::testing {
namespace {

class StallFault : public ServerFixture {};

// A metric's value from /metrics (0 when absent).
double metric(std::uint16_t port, const std::string& token, const std::string& name) {
    auto m = request(port, "GET", "/metrics", token);
    std::smatch match;
    std::regex re("\n" + name + " ([0-9.e+]+)");
    if (!std::regex_search(m.body, match, re)) return 0;
    return std::stod(match[1]);
}

TEST_F(StallFault, StalledClientIsCutWithinFiveIntervalsOfItsQueueFilling) {
    using namespace std::chrono;
    // Every tick changes a 64 Ki-value array completely: frames of tens of KB, so a client that
    // stops reading fills the kernel buffers and then its queue in a few seconds.
    auto counter = std::make_shared<std::atomic<int>>(0);
    topicSource_ = [counter](std::string_view, std::vector<std::uint8_t>& out) {
        out.assign(64 * 1024, std::uint8_t(counter->fetch_add(1) % 100));
        return true;
    };
    ServerConfig cfg;
    cfg.streamInterval = milliseconds(100);
    cfg.wsQueueFrames = 8;
    cfg.wsSlowTicks = 5;
    auto& s = startServer(cfg);
    const std::string token = tokens_["viewer"];

    WsClient stalled, healthy;
    stalled.open(s.port(), token);
    beast::get_lowest_layer(stalled.raw().ws).socket().set_option(
        net::socket_base::receive_buffer_size(4096));
    stalled.read();  // hello
    stalled.send({{"op", "subscribe"}, {"topics", {"gpu.util"}}});
    healthy.open(s.port(), token);
    healthy.read();
    healthy.send({{"op", "subscribe"}, {"topics", {"gpu.util"}}});

    // The healthy client reads on its own thread the whole time and records when each data
    // frame arrived.
    std::atomic<bool> stop{false};
    std::vector<steady_clock::time_point> arrivals;
    std::thread reader([&] {
        while (!stop) {
            auto m = healthy.readFor(milliseconds(200));
            if (m && ((*m)["type"] == "snapshot" || (*m)["type"] == "delta"))
                arrivals.push_back(steady_clock::now());
        }
    });

    // The queue has filled when the server first drops a frame; then the cut must follow.
    const auto deadline = steady_clock::now() + seconds(40);
    std::optional<steady_clock::time_point> filled, bye, cut;
    while (steady_clock::now() < deadline && !cut) {
        auto now = steady_clock::now();
        if (!filled && metric(s.port(), token, "loom_ws_dropped_frames_total") > 0) filled = now;
        if (filled && !bye && metric(s.port(), token, "loom_ws_slow_disconnects_total") >= 1)
            bye = now;
        // The stalled client's TCP connection is gone when only the healthy one is counted.
        if (bye && metric(s.port(), token, "loom_ws_clients") == 1) cut = now;
        std::this_thread::sleep_for(milliseconds(20));
    }
    stop = true;
    reader.join();

    ASSERT_TRUE(filled) << "the stalled client's queue never filled";
    ASSERT_TRUE(bye) << "the stalled client was not given up on";
    ASSERT_TRUE(cut) << "the stalled client's connection was not closed";
    auto toBye = duration_cast<milliseconds>(*bye - *filled);
    auto toCut = duration_cast<milliseconds>(*cut - *filled);
    std::cout << "[ figures ] queue full -> bye " << toBye.count() << " ms, -> TCP closed "
              << toCut.count() << " ms (interval 100 ms, slowTicks 5)\n";
    // 5 intervals (500 ms) and slack for polling /metrics on a loaded machine; the cut
    // follows the unread bye by 1 s.
    EXPECT_LE(toBye, milliseconds(5 * 100 + 1000));
    EXPECT_LE(toCut, toBye + milliseconds(1000 + 1000));

    // The healthy client kept getting ticks all along: no gap of more than a few intervals
    // around the stall and the cut.
    ASSERT_GE(arrivals.size(), 10u);
    milliseconds worstGap{0};
    for (std::size_t i = 1; i < arrivals.size(); ++i)
        worstGap = std::max(worstGap, duration_cast<milliseconds>(arrivals[i] - arrivals[i - 1]));
    // (generous for a loaded 2-core CI machine; the stall itself would show as seconds)
    EXPECT_LE(worstGap, milliseconds(1000)) << "the healthy client was held up";
    auto span = duration_cast<milliseconds>(arrivals.back() - arrivals.front());
    EXPECT_GE(arrivals.size(), std::size_t(span.count() / 100 / 2))
        << "the healthy client got fewer than half the ticks";
    std::cout << "[ figures ] healthy client: " << arrivals.size() << " data frames in "
              << span.count() << " ms, worst gap " << worstGap.count() << " ms\n";

    // (The stalled client is not drained here: through its 4 KiB window, with the sender's
    // zero-window probes backed off, the megabytes under way take minutes to arrive; the
    // server's count of connected clients above is the proof that it closed the connection.)
}

}  // namespace
}  // namespace loom::backend::testing
