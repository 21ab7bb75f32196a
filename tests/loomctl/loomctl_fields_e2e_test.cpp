// End to end, loomctl against a real loomd: what people set on objects (labels, annotations,
// a GPU's firmware) and how applies of the unchanged spec keep it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "loom/client/client.hpp"
#include "loomctl_e2e.hpp"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(LoomctlE2e, LabelsSetByHandSurviveAnApplyAndSpecLabelsStayTheSpecs) {
    const fs::path spec = state_ / "dev-small-labels.yaml";
    {
        std::ofstream out(spec);
        out << readFile(spec_)
            << "  overrides:\n    labels:\n      - {name: z1-r001, labels: {tier: gold}}\n";
    }
    auto applied = loomctl({"apply", "-f", spec.string()});
    ASSERT_EQ(applied.exitCode, 0) << applied.out << applied.err;
    auto labelsOf = [&] {
        return loomctl({"get", "racks", "z1-r001", "-o", "jsonpath={.labels.tier}/{.labels.owner}"})
            .out;
    };
    ASSERT_EQ(labelsOf(), "gold/\n");

    auto set = loomctl({"label", "rack", "z1-r001", "owner=team-a"});
    ASSERT_EQ(set.exitCode, 0) << set.err;
    EXPECT_EQ(set.out, "rack/z1-r001 labeled\n");
    EXPECT_EQ(labelsOf(), "gold/team-a\n");

    // The unchanged spec again: nothing to do, and the hand label stays.
    auto again = loomctl({"apply", "-f", spec.string()});
    ASSERT_EQ(again.exitCode, 0) << again.out << again.err;
    EXPECT_EQ(labelsOf(), "gold/team-a\n");
    EXPECT_EQ(loomctl({"diff", "-f", spec.string()}).exitCode, 0)
        << "hand labels are no difference";

    auto specOwned = loomctl({"label", "rack", "z1-r001", "tier=silver", "--overwrite"});
    EXPECT_EQ(specOwned.exitCode, 1);
    EXPECT_NE(specOwned.err.find("tier=gold"), std::string::npos) << specOwned.err;
    EXPECT_NE(specOwned.err.find("cluster spec"), std::string::npos) << specOwned.err;
    EXPECT_EQ(loomctl({"label", "rack", "z1-r001", "owner=team-b"}).exitCode, 1)
        << "needs --overwrite";
    EXPECT_EQ(loomctl({"label", "rack", "z1-r001", "owner=team-b", "--overwrite"}).exitCode, 0);
    EXPECT_EQ(labelsOf(), "gold/team-b\n");
    auto byLabel = loomctl({"get", "racks", "-l", "owner=team-b", "-o", "name"});
    EXPECT_EQ(byLabel.out, "rack/z1-r001\n") << byLabel.err;
    EXPECT_EQ(loomctl({"label", "rack", "z1-r001", "owner-"}).exitCode, 0);
    EXPECT_EQ(labelsOf(), "gold/\n");
    EXPECT_EQ(loomctl({"label", "rack", "z1-r001", "=x"}).exitCode, 2);
}

// Annotations are notes the spec never sets: `loomctl annotate` sets them (kubectl's
// --overwrite and key-), an apply of the spec keeps them, describe shows them, a bad key or more
// than 256 KiB is refused naming the field and changes nothing (issue 12 item 2).

TEST_F(LoomctlE2e, AnnotationsSetByHandSurviveAnApplyAndAreBounded) {
    auto annotationsOf = [&] { return loomctl({"get", "hosts", "z1-r001-h0", "-o", "json"}); };
    auto set = loomctl(
        {"annotate", "host", "z1-r001-h0", "loom.io/ticket=INC-1234", "note=reseated NIC 3 = ok"});
    ASSERT_EQ(set.exitCode, 0) << set.err;
    EXPECT_EQ(set.out, "host/z1-r001-h0 annotated\n");
    auto host = nlohmann::json::parse(annotationsOf().out, nullptr, false);
    ASSERT_TRUE(host.is_object());
    EXPECT_EQ(host["annotations"],
              (nlohmann::json{{"loom.io/ticket", "INC-1234"}, {"note", "reseated NIC 3 = ok"}}));
    EXPECT_EQ(host["labels"].count("note"), 0u) << "annotations are not labels";

    // The unchanged spec again: nothing to do, the annotations stay, diff sees no difference.
    auto again = loomctl({"apply", "-f", spec_});
    ASSERT_EQ(again.exitCode, 0) << again.out << again.err;
    EXPECT_EQ(nlohmann::json::parse(annotationsOf().out)["annotations"].size(), 2u);
    EXPECT_EQ(loomctl({"diff", "-f", spec_}).exitCode, 0);

    auto described = loomctl({"describe", "host", "z1-r001-h0"});
    ASSERT_EQ(described.exitCode, 0) << described.err;
    const auto annotations = described.out.find("Annotations:");
    ASSERT_NE(annotations, std::string::npos) << described.out;
    EXPECT_EQ(described.out.find("loom.io/ticket: INC-1234\n", annotations),
              described.out.find_first_not_of(' ', annotations + 12))
        << described.out;
    EXPECT_NE(described.out.find("note: reseated NIC 3 = ok\n"), std::string::npos)
        << described.out;

    EXPECT_EQ(loomctl({"annotate", "host", "z1-r001-h0", "note=other"}).exitCode, 1)
        << "needs --overwrite";
    EXPECT_EQ(loomctl({"annotate", "host", "z1-r001-h0", "note=other", "--overwrite"}).exitCode, 0);
    EXPECT_EQ(loomctl({"annotate", "host", "z1-r001-h0", "loom.io/ticket-"}).exitCode, 0);
    EXPECT_EQ(nlohmann::json::parse(annotationsOf().out)["annotations"],
              (nlohmann::json{{"note", "other"}}));

    auto badKey = loomctl({"annotate", "host", "z1-r001-h0", "bad key=x"});
    EXPECT_EQ(badKey.exitCode, 2);
    EXPECT_NE(badKey.err.find("annotations.bad key"), std::string::npos) << badKey.err;
    // Three values of 100 KiB (one argument may not pass 128 KiB on Linux): 300 KiB in all.
    const std::string blob(100 * 1024, 'x');
    auto big = loomctl({"annotate", "host", "z1-r001-h0", "a=" + blob, "b=" + blob, "c=" + blob});
    EXPECT_EQ(big.exitCode, 2);
    EXPECT_NE(big.err.find("at most 262144"), std::string::npos) << big.err.substr(0, 500);
    EXPECT_EQ(nlohmann::json::parse(annotationsOf().out)["annotations"],
              (nlohmann::json{{"note", "other"}}))
        << "a refused change changes nothing";

    // --local: describe's timestamps in the local zone (TZ), the same instant as the UTC text.
    auto inZone = [&](std::vector<std::string> args) {
        return runProcess(LOOMCTL_BIN, args,
                          {{"LOOM_SERVER", url_},
                           {"LOOM_TOKEN", loomd_.token},
                           {"HOME", state_},
                           {"TZ", "IST-5:30"}});
    };
    auto utc = inZone({"describe", "host", "z1-r001-h0"});
    auto local = inZone({"describe", "host", "z1-r001-h0", "--local"});
    ASSERT_EQ(local.exitCode, 0) << local.err;
    auto createdLine = [](const std::string& text) {
        auto at = text.find("Created At:");
        return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
    };
    EXPECT_EQ(createdLine(utc.out).find("+05:30"), std::string::npos) << utc.out;
    EXPECT_NE(createdLine(local.out).find("+05:30"), std::string::npos) << local.out;

    // The last one removed: the object shows no annotations at all, as Kubernetes omits them.
    EXPECT_EQ(loomctl({"annotate", "host", "z1-r001-h0", "note-"}).exitCode, 0);
    EXPECT_FALSE(nlohmann::json::parse(annotationsOf().out).contains("annotations"));
}

// `events`: a rack transition is in the history; `events ack|close ID` against the real server.
// The README's demo step 2: `loomd token create --role admin` with no --name makes a token
// named after its role and the time; the secret is printed once, the list shows the name.

TEST_F(LoomctlE2e, GpuFirmwareIsPatchedListedShownAndKeptByAnApply) {
    client::ClientConfig cfg;
    cfg.server = url_;
    cfg.token = loomd_.token;
    client::Client c(cfg);
    const std::string gpu = "z1-r004-h1-gpu7", fw = "96.00.9F.00.04";
    client::RequestOptions req;
    req.body = nlohmann::json{{"firmware", fw}}.dump();
    req.contentType = "application/json";
    auto patched = c.call("PATCH", "/api/v1/gpus/" + gpu, req);
    ASSERT_TRUE(patched) << patched.error().toString();

    auto got = c.getJson("/api/v1/gpus/" + gpu);
    ASSERT_TRUE(got) << got.error().toString();
    EXPECT_EQ((*got)["firmware"], fw) << got->dump();
    auto other = c.getJson("/api/v1/gpus/z1-r004-h1-gpu6");
    ASSERT_TRUE(other) << other.error().toString();
    EXPECT_EQ((*other)["firmware"], "") << "the column's default";

    auto listed = c.getJson("/api/v1/gpus?firmware=" + client::urlEncode(fw));
    ASSERT_TRUE(listed) << listed.error().toString();
    ASSERT_EQ((*listed)["items"].size(), 1u) << listed->dump();
    EXPECT_EQ((*listed)["items"][0]["name"], gpu);
    auto prefixed = c.getJson("/api/v1/gpus?firmware__isw=96.00&limit=500");
    ASSERT_TRUE(prefixed) << prefixed.error().toString();
    EXPECT_EQ((*prefixed)["items"].size(), 1u);

    auto wide = loomctl({"get", "gpus", "-o", "wide"});
    ASSERT_EQ(wide.exitCode, 0) << wide.err;
    ASSERT_NE(wide.out.find("FIRMWARE"), std::string::npos) << wide.out.substr(0, 300);
    auto row = wide.out.substr(wide.out.find(gpu + " "));
    row = row.substr(0, row.find('\n'));
    EXPECT_NE(row.find(fw), std::string::npos) << row;
    auto narrow = loomctl({"get", "gpus"});
    EXPECT_EQ(narrow.out.find("FIRMWARE"), std::string::npos) << "a -o wide column";
    auto byField = loomctl({"get", "gpus", "--field", "firmware=" + fw, "-o", "name"});
    EXPECT_EQ(byField.exitCode, 0) << byField.err;
    EXPECT_EQ(byField.out, "gpu/" + gpu + "\n");

    // A new GPU model in the spec: the apply rewrites every GPU's spec columns, not firmware.
    std::ifstream in(spec_);
    std::string text(std::istreambuf_iterator<char>(in), {});
    const std::string from = "gpuModel: H100-SXM5-80GB";
    ASSERT_NE(text.find(from), std::string::npos);
    text.replace(text.find(from), from.size(), "gpuModel: H200-SXM5-141GB");
    const auto changed = state_ / "h200.yaml";
    std::ofstream(changed) << text;
    auto applied = loomctl({"apply", "-f", changed.string()});
    ASSERT_EQ(applied.exitCode, 0) << applied.out << applied.err;
    got = c.getJson("/api/v1/gpus/" + gpu);
    ASSERT_TRUE(got) << got.error().toString();
    EXPECT_EQ((*got)["model"], "H200-SXM5-141GB") << "the apply updated the GPU";
    EXPECT_EQ((*got)["firmware"], fw) << "and kept its firmware";

    // Only GPUs have it: PATCHing a host's firmware is a 400 naming the field.
    auto refused = c.call("PATCH", "/api/v1/hosts/z1-r004-h1", req);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("firmware"), std::string::npos)
        << refused.error().toString();
}

}  // namespace
}  // namespace loom::testing
