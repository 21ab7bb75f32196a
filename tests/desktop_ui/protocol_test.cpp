#include "loom/console/api_client.hpp"
#include "loom/console/cluster_state.hpp"
#include "loom/console/protocol.hpp"
#include "loom/console/synthetic.hpp"

#include "qt_app.hpp"
#include "qt_helpers.hpp"

#include <QJsonDocument>
#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace loom::console;

namespace {

using test::obj;


// The hall of docs/api.md, written out by hand: one rack of two hosts of eight GPUs.
constexpr const char* kHall = R"({"cluster": "tiny", "fabric": "roce", "layoutVersion": 7,
 "zones": [{"name": "z1"}],
 "rows": [{"name": "z1-row01", "zone": "z1", "index": 0}],
 "racks": [{"name": "z1-r001", "row": "z1-row01", "position": 0, "state": "in_service",
            "hosts": ["z1-r001-h0", "z1-r001-h1"], "rtsw": "z1-r001-rtsw",
            "gpuOffset": 0, "gpuCount": 16}],
 "gpus": ["z1-r001-h0-gpu0","z1-r001-h0-gpu1","z1-r001-h0-gpu2","z1-r001-h0-gpu3",
          "z1-r001-h0-gpu4","z1-r001-h0-gpu5","z1-r001-h0-gpu6","z1-r001-h0-gpu7",
          "z1-r001-h1-gpu0","z1-r001-h1-gpu1","z1-r001-h1-gpu2","z1-r001-h1-gpu3",
          "z1-r001-h1-gpu4","z1-r001-h1-gpu5","z1-r001-h1-gpu6","z1-r001-h1-gpu7"],
 "links": ["z1-r001-h0/nic0/p1--z1-r001-rtsw/p1", "z1-r001-rtsw/p17--z1-ctsw01/p1"],
 "switches": [{"name": "z1-r001-rtsw", "role": "rtsw", "zone": "z1"},
              {"name": "z1-ctsw01", "role": "ctsw", "zone": "z1"}]})";

}  // namespace

TEST(ConsoleProtocol, ParsesTheHallOfTheApiDoc)
{
    auto h = parseHall(kHall);
    ASSERT_TRUE(h) << h.error().toStdString();
    EXPECT_EQ(h->cluster, "tiny");
    EXPECT_EQ(h->layoutVersion, 7);
    ASSERT_EQ(h->racks.size(), 1u);
    EXPECT_EQ(h->racks[0].zone, "z1");
    EXPECT_EQ(h->gpus.size(), 16);
    EXPECT_EQ(h->gpuRack[15], 0);
    EXPECT_EQ(h->gpuIndex("z1-r001-h1-gpu3"), 11);
    EXPECT_EQ(h->gpuIndex("z1-r001-h1-gpu9"), -1);
    EXPECT_EQ(h->rackIndex("z1-r001"), 0);
    ASSERT_EQ(h->linkEnds.size(), 2u);
    // NIC -> RTSW: the NIC end is no switch, the rack is found through the host.
    EXPECT_EQ(h->linkEnds[0].aSwitch, -1);
    EXPECT_EQ(h->linkEnds[0].bSwitch, h->switchIndex("z1-r001-rtsw"));
    EXPECT_EQ(h->linkEnds[0].rack, 0);
    EXPECT_EQ(h->linkEnds[1].aSwitch, h->switchIndex("z1-r001-rtsw"));
    EXPECT_EQ(h->linkEnds[1].bSwitch, h->switchIndex("z1-ctsw01"));
    EXPECT_EQ(h->switches[1].tier, 2);
}

TEST(ConsoleProtocol, HallErrorsNameThePlace)
{
    auto bad = parseHall("{\"racks\": [");
    ASSERT_FALSE(bad);
    EXPECT_TRUE(bad.error().contains("invalid JSON at offset")) << bad.error().toStdString();

    auto row = parseHall(R"({"rows": [], "racks": [{"name": "r", "row": "nope", "gpuOffset": 0, "gpuCount": 0}]})");
    ASSERT_FALSE(row);
    EXPECT_EQ(row.error(), "hall: racks[0].row names unknown row 'nope'");

    auto range = parseHall(R"({"rows": [{"name": "a", "zone": "z"}], "gpus": ["g0"],
        "racks": [{"name": "r", "row": "a", "gpuOffset": 0, "gpuCount": 1},
                  {"name": "s", "row": "a", "gpuOffset": 1, "gpuCount": 16}]})");
    ASSERT_FALSE(range);
    EXPECT_TRUE(range.error().startsWith("hall: racks[1].gpuOffset 1 + gpuCount 16 exceeds the 1 GPUs"))
        << range.error().toStdString();

    auto overlap = parseHall(R"({"rows": [{"name": "a", "zone": "z"}], "gpus": ["g0", "g1"],
        "racks": [{"name": "r", "row": "a", "gpuOffset": 0, "gpuCount": 2},
                  {"name": "s", "row": "a", "gpuOffset": 1, "gpuCount": 1}]})");
    ASSERT_FALSE(overlap);
    EXPECT_TRUE(overlap.error().contains("already in rack 'r'")) << overlap.error().toStdString();
}

TEST(ConsoleProtocol, SnapshotAndDeltaFramesAsWritten)
{
    // Hand-encoded: bytes 10 20 30 -> "ChQe"; pair (1, 77) = 01 00 00 00 4d -> "AQAAAE0=".
    auto snap = decodeSnapshot(obj(R"({"type":"snapshot","seq":5,"topic":"gpu.util","encoding":"u8","count":3,"data":"ChQe"})"), 3);
    ASSERT_TRUE(snap) << snap.error().toStdString();
    std::vector<std::uint8_t> v(snap->begin(), snap->end());
    EXPECT_EQ(v, (std::vector<std::uint8_t>{10, 20, 30}));
    auto n = applyDelta(v, obj(R"({"type":"delta","seq":6,"topic":"gpu.util","encoding":"u8pairs","data":"AQAAAE0="})"));
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 1);
    EXPECT_EQ(v, (std::vector<std::uint8_t>{10, 77, 30}));
}

TEST(ConsoleProtocol, BadFramesAreReportedAndLeaveStateAlone)
{
    auto count = decodeSnapshot(obj(R"({"topic":"gpu.util","count":4,"data":"ChQe"})"), 4);
    ASSERT_FALSE(count);
    EXPECT_EQ(count.error(), "snapshot gpu.util: count 4 but 3 bytes of data");
    auto layout = decodeSnapshot(obj(R"({"topic":"gpu.util","count":3,"data":"ChQe"})"), 64);
    ASSERT_FALSE(layout);
    EXPECT_TRUE(layout.error().contains("the hall layout has 64"));
    EXPECT_FALSE(decodeSnapshot(obj(R"({"topic":"gpu.util","data":"!!!"})"), 3));
    EXPECT_FALSE(decodeSnapshot(obj(R"({"topic":"gpu.util","encoding":"zstd","data":""})"), 0));

    std::vector<std::uint8_t> v{1, 2, 3};
    // Index 1 then index 9 (beyond 3 values): nothing applied.
    const auto bytes = encodeU8Pairs({{1, 50}, {9, 60}});
    QJsonObject d{{"topic", "gpu.util"}, {"data", QString::fromLatin1(bytes.toBase64())}};
    auto r = applyDelta(v, d);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().contains("pair 1 has index 9 beyond 3 values")) << r.error().toStdString();
    EXPECT_EQ(v, (std::vector<std::uint8_t>{1, 2, 3}));
    QJsonObject odd{{"topic", "gpu.util"}, {"data", QString::fromLatin1(QByteArray("abcdef").toBase64())}};
    EXPECT_FALSE(applyDelta(v, odd));
}

TEST(ConsoleClusterState, FollowsTheStream)
{
    test::qtApp();
    ClusterState s;
    auto h = parseHall(kHall);
    ASSERT_TRUE(h);
    s.setLayout(std::move(*h));
    QSignalSpy metrics(&s, &ClusterState::metricsUpdated);
    QSignalSpy racks(&s, &ClusterState::rackStateChanged);
    QSignalSpy stale(&s, &ClusterState::layoutStale);

    ASSERT_TRUE(s.handleMessage(obj(R"({"type":"hello","seq":1,"server":"loomd 0.1.0","role":"viewer","layoutVersion":7,"intervalMs":1000})")));
    EXPECT_EQ(s.role(), "viewer");
    EXPECT_EQ(stale.count(), 0);
    EXPECT_EQ(s.values(Topic::GpuUtil)[0], kNoData);
    std::vector<std::uint8_t> util(16, 40);
    ASSERT_TRUE(s.handleMessage(makeSnapshotMessage(2, Topic::GpuUtil, util)));
    EXPECT_TRUE(s.hasSnapshot(Topic::GpuUtil));
    EXPECT_DOUBLE_EQ(s.meanGpuUtil(), 40.0);
    ASSERT_TRUE(s.handleMessage(makeDeltaMessage(3, Topic::GpuUtil, {{0, 90}, {15, 0}})));
    EXPECT_EQ(s.values(Topic::GpuUtil)[0], 90);
    EXPECT_EQ(s.values(Topic::GpuUtil)[15], 0);
    EXPECT_EQ(metrics.count(), 2);
    EXPECT_GE(s.dataAgeMs(), 0);

    ASSERT_TRUE(s.handleMessage(obj(R"({"type":"event","seq":4,"event":{"id":17,"severity":"critical","kind":"gpu_xid",
        "location":"z1-r001-h0-gpu3","rack":"z1-r001","message":"XID 79","openedAt":"2026-11-22T08:00:00Z","closedAt":null}})")));
    ASSERT_EQ(s.events().size(), 1u);
    EXPECT_TRUE(s.events().front().open());
    EXPECT_EQ(s.openFailures(), 1);
    ASSERT_TRUE(s.handleMessage(obj(R"({"type":"event","seq":5,"event":{"id":17,"severity":"critical","kind":"gpu_xid",
        "location":"z1-r001-h0-gpu3","rack":"z1-r001","message":"XID 79","openedAt":"2026-11-22T08:00:00Z","closedAt":"2026-11-22T08:05:00Z"}})")));
    ASSERT_EQ(s.events().size(), 1u);  // the same event, now closed
    EXPECT_EQ(s.openFailures(), 0);

    ASSERT_TRUE(s.handleMessage(obj(R"({"type":"provisioning","seq":6,"rack":"z1-r001","from":"in_service","to":"draining","phase":"phase-1"})")));
    EXPECT_EQ(s.layout().racks[0].state, "draining");
    EXPECT_EQ(racks.count(), 1);
    auto unknownRack = s.handleMessage(obj(R"({"type":"provisioning","seq":7,"rack":"nope","to":"x"})"));
    ASSERT_FALSE(unknownRack);
    EXPECT_EQ(unknownRack.error(), "seq 7: provisioning message for unknown rack 'nope'");

    ASSERT_TRUE(s.handleMessage(obj(R"({"type":"inventory","seq":8,"layoutVersion":8})")));
    EXPECT_EQ(stale.count(), 1);
    EXPECT_TRUE(s.handleMessage(obj(R"({"type":"something_new","seq":9})")));  // forward compatible
    EXPECT_EQ(s.lastSeq(), 9);

    auto bad = s.handleMessage(obj(R"({"type":"snapshot","seq":10,"topic":"gpu.health","encoding":"u8","count":3,"data":"ChQe"})"));
    ASSERT_FALSE(bad);
    EXPECT_TRUE(bad.error().startsWith("seq 10: snapshot gpu.health: 3 values but the hall layout has 16"));
    EXPECT_FALSE(s.hasSnapshot(Topic::GpuHealth));
}

TEST(ConsoleApiClient, ServerErrorsAreShownAsWritten)
{
    const QByteArray body = R"({"error": {"code": "conflict", "message": "rack z1-r001 is in_service; allowed next: draining, failed", "path": "spec.racks[3]", "line": 14}})";
    EXPECT_EQ(ApiClient::formatError(409, body, "x"),
              "409 conflict: rack z1-r001 is in_service; allowed next: draining, failed (at spec.racks[3], line 14)");
    EXPECT_EQ(ApiClient::formatError(502, "bad gateway", "x"), "HTTP 502: bad gateway");
    EXPECT_EQ(ApiClient::formatError(0, {}, "http://h/api: Connection refused"), "http://h/api: Connection refused");
}

TEST(ConsoleSynthetic, The24kShapeParses)
{
    const SyntheticShape shape;
    auto h = parseHall(syntheticHallJson(shape));
    ASSERT_TRUE(h) << h.error().toStdString();
    EXPECT_EQ(h->gpus.size(), 24576);
    EXPECT_EQ(h->racks.size(), 1536u);
    EXPECT_EQ(h->switches.size(), 1536u + 144u + 36u);
    EXPECT_EQ(h->links.size(), 24576 + 27648 + 3456);
}
