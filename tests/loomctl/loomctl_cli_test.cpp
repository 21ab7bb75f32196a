// The loomctl binary: exit codes, output formats, hints and the config verbs, against the
// in-process stub server (so the client's behaviour is tested apart from loomd's).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loom/version.hpp"
#include "process.hpp"
#include "stub_server.hpp"

namespace {

using nlohmann::json;
using loom::testing::ProcessResult;
using loom::testing::StubRequest;
using loom::testing::StubResponse;
using loom::testing::StubServer;

class LoomctlCli : public ::testing::Test {
protected:
    void SetUp() override {
#ifndef LOOMCTL_BIN
        GTEST_SKIP() << "loomctl not built";
#else
        bin_ = LOOMCTL_BIN;
        if (!std::filesystem::exists(bin_)) GTEST_SKIP() << "loomctl not built";
#endif
        char tmpl[] = "/tmp/loomctl-cli-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
    }
    void TearDown() override {
        std::error_code ec;
        if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
    }
    // Runs loomctl isolated from the user's environment and config file.
    ProcessResult run(std::vector<std::string> args, std::map<std::string, std::string> env = {},
                      const std::string& input = {}) {
        env.try_emplace("LOOM_SERVER", "");
        env.try_emplace("LOOM_TOKEN", "");
        env.try_emplace("LOOM_CONFIG", dir_ + "/config.yaml");
        return loom::testing::runProcess(bin_, args, env, input);
    }
    std::string write(const std::string& name, const std::string& text) {
        std::string p = dir_ + "/" + name;
        std::ofstream(p) << text;
        return p;
    }

    std::string bin_;
    std::string dir_;
};

const json kRacks = {{"items",
                      {{{"name", "z1-r001"}, {"zone", "z1"}, {"row", "z1-row01"}, {"position", 0},
                        {"state", "in_service"}, {"createdAt", "2026-11-22T08:00:00Z"}},
                       {{"name", "z1-r002"}, {"zone", "z1"}, {"row", "z1-row01"}, {"position", 1},
                        {"state", "burn_in"}, {"createdAt", "2026-11-22T08:00:00Z"}}}}};

TEST_F(LoomctlCli, UsageErrorsExitTwo) {
    EXPECT_EQ(run({}).exitCode, 2);
    EXPECT_EQ(run({"get"}).exitCode, 2);
    EXPECT_EQ(run({"no-such-verb"}).exitCode, 2);
    auto r = run({"get", "widgets"});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_NE(r.err.find("unknown kind \"widgets\""), std::string::npos) << r.err;
    EXPECT_EQ(run({"get", "racks", "-o", "xml", "--server", "http://127.0.0.1:1"}).exitCode, 2);
    EXPECT_EQ(run({"get", "racks", "--server", "127.0.0.1:1"}).exitCode, 2);  // no scheme
    EXPECT_EQ(run({"apply", "-f", dir_ + "/missing.yaml"}).exitCode, 2);
    EXPECT_EQ(run({"events", "--since", "yesterday"}).exitCode, 2);
}

TEST_F(LoomctlCli, HelpOnEveryVerbExitsZero) {
    for (auto verb : std::vector<std::vector<std::string>>{
             {"--help"}, {"apply", "--help"}, {"diff", "--help"}, {"get", "--help"},
             {"describe", "--help"}, {"events", "--help"}, {"fabric", "routes", "--help"},
             {"fabric", "impact", "--help"}, {"fabric", "degradation", "--help"},
             {"token", "create", "--help"}, {"rack", "advance", "--help"},
             {"host", "quarantine", "--help"}, {"phase", "list", "--help"},
             {"config", "set-server", "--help"}, {"version", "--help"}}) {
        auto r = run(verb);
        EXPECT_EQ(r.exitCode, 0) << verb[0];
        EXPECT_NE(r.out.find("Usage"), std::string::npos) << verb[0] << r.out;
    }
}

// The version is the project's (CMakeLists.txt's VERSION through loom/version.hpp), and the
// new verbs have --help too.
TEST_F(LoomctlCli, VersionIsTheProjectsAndAnnotateHasHelp) {
    auto v = run({"--version"});
    EXPECT_EQ(v.exitCode, 0);
    EXPECT_EQ(v.out, "loomctl " LOOM_VERSION "\n");
    auto loomd = loom::testing::runProcess(LOOMD_BIN, {"--version"});
    EXPECT_EQ(loomd.out, "loomd " LOOM_VERSION "\n");
    auto annotate = run({"annotate", "--help"});
    EXPECT_EQ(annotate.exitCode, 0);
    EXPECT_NE(annotate.out.find("--overwrite"), std::string::npos) << annotate.out;
}

TEST_F(LoomctlCli, UnreachableServerExitsOneWithAHint) {
    std::string url;
    { StubServer s([](const StubRequest&) { return StubResponse{}; }); url = s.url(); }
    auto r = run({"get", "racks"}, {{"LOOM_SERVER", url}});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.err.find("error: cannot reach " + url), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is loomd running? set --server or LOOM_SERVER"), std::string::npos);
}

TEST_F(LoomctlCli, GetRendersTableJsonYamlAndName) {
    StubServer s([](const StubRequest&) { return StubResponse{200, kRacks.dump()}; });
    auto t = run({"get", "rack", "--server", s.url()});
    ASSERT_EQ(t.exitCode, 0) << t.err;
    EXPECT_EQ(t.out.substr(0, t.out.find('\n')), "NAME      ZONE   ROW        POSITION   STATE        AGE");
    EXPECT_NE(t.out.find("z1-r002   z1     z1-row01   1          burn_in"), std::string::npos) << t.out;

    auto j = run({"get", "racks", "-o", "json", "--server", s.url()});
    ASSERT_EQ(j.exitCode, 0);
    EXPECT_EQ(json::parse(j.out)["items"].size(), 2u);

    auto y = run({"get", "racks", "-o", "yaml", "--server", s.url()});
    EXPECT_NE(y.out.find("- createdAt: 2026-11-22T08:00:00Z"), std::string::npos) << y.out;

    auto n = run({"get", "racks", "-o", "name", "--server", s.url()});
    EXPECT_EQ(n.out, "rack/z1-r001\nrack/z1-r002\n");
}

TEST_F(LoomctlCli, GetSendsFiltersAndTheTokenFromTheEnvironment) {
    StubServer s([](const StubRequest&) { return StubResponse{200, kRacks.dump()}; });
    auto r = run({"get", "hosts", "-l", "team=ml", "--field", "state=in_service", "--limit", "7"},
                 {{"LOOM_SERVER", s.url()}, {"LOOM_TOKEN", "envtok"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto reqs = s.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].target, "/api/v1/hosts?label.team=ml&state=in_service&limit=7");
    EXPECT_EQ(reqs[0].authorization, "Bearer envtok");
}

TEST_F(LoomctlCli, UnauthorizedAndForbiddenExitOneWithHints) {
    int status = 401;
    StubServer s([&](const StubRequest&) {
        return StubResponse{status, status == 401
                                        ? R"({"error":{"code":"unauthorized","message":"a bearer token is required"}})"
                                        : R"({"error":{"code":"forbidden","message":"needs role operator; token has viewer"}})"};
    });
    auto r = run({"get", "racks", "--server", s.url()});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.err.find("error: a bearer token is required"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("hint: no token is set"), std::string::npos) << r.err;
    status = 403;
    r = run({"rack", "advance", "z1-r001", "--server", s.url(), "--token", "t"});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.err.find("error: needs role operator; token has viewer"), std::string::npos);
    EXPECT_NE(r.err.find("hint: the token's role is not enough"), std::string::npos);
}

TEST_F(LoomctlCli, ApplyPrintsTheServersSpecErrorWithFileAndLine) {
    StubServer s([](const StubRequest&) {
        return StubResponse{400, R"({"error":{"code":"invalid_argument","message":"must be > 0",)"
                                 R"("path":"spec.zones[2].racks","line":14}})"};
    });
    auto spec = write("bad.yaml", "apiVersion: loom/v1\nkind: Cluster\n");
    auto r = run({"apply", "-f", spec, "--server", s.url()});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_EQ(r.err, "error: " + spec + ":14: spec.zones[2].racks: must be > 0\n");
    EXPECT_EQ(s.requests()[0].contentType, "application/yaml");
}

const json kPlan = {
    {"applied", false},
    {"plan", {{"kinds", {{{"kind", "racks"}, {"creates", 4}, {"updates", 0}, {"deletes", 0},
                          {"createNames", {"z1-r001", "z1-r002"}}}}}}}};
const json kEmptyPlan = {{"applied", false},
                         {"plan", {{"kinds", json::array()}, {"empty", true}}}};

TEST_F(LoomctlCli, ApplyFromStdinPrintsThePlan) {
    StubServer s([](const StubRequest& r) {
        json p = kPlan;
        p["applied"] = r.target.find("dryRun") == std::string::npos;
        return StubResponse{200, p.dump()};
    });
    auto r = run({"apply", "-f", "-", "--server", s.url()}, {}, "{\"kind\": \"Cluster\"}");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out,
              "racks: 4 to create, 0 to update, 0 to delete\n"
              "  + rack/z1-r001\n  + rack/z1-r002\n    ... and 2 more\n"
              "applied: 4 created, 0 updated, 0 deleted\n");
    EXPECT_EQ(s.requests()[0].contentType, "application/json");
    EXPECT_EQ(s.requests()[0].target, "/api/v1/apply");

    auto d = run({"apply", "-f", "-", "--dry-run", "--prune", "--server", s.url()}, {}, "kind: Cluster\n");
    EXPECT_EQ(s.requests()[1].target, "/api/v1/apply?dryRun=true&prune=true");
    EXPECT_NE(d.out.find("plan (dry run, nothing written): 4 created"), std::string::npos) << d.out;
}

TEST_F(LoomctlCli, DiffExitCodes) {
    const json* answer = &kPlan;
    int status = 200;
    StubServer s([&](const StubRequest&) { return StubResponse{status, answer->dump()}; });
    auto spec = write("spec.yaml", "kind: Cluster\n");
    auto r = run({"diff", "-f", spec, "--server", s.url()});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.out.find("+ rack/z1-r001"), std::string::npos);
    EXPECT_NE(s.requests()[0].target.find("dryRun=true"), std::string::npos);

    // -o json / yaml: the plan as data, same exit codes.
    auto j = run({"diff", "-f", spec, "-o", "json", "--server", s.url()});
    EXPECT_EQ(j.exitCode, 1);
    EXPECT_EQ(json::parse(j.out), kPlan.contains("plan") ? kPlan["plan"] : kPlan) << j.out;
    auto y = run({"diff", "-f", spec, "-o", "yaml", "--server", s.url()});
    EXPECT_EQ(y.exitCode, 1);
    EXPECT_NE(y.out.find("z1-r001"), std::string::npos) << y.out;
    EXPECT_EQ(run({"diff", "-f", spec, "-o", "table", "--server", s.url()}).exitCode, 2);

    answer = &kEmptyPlan;
    r = run({"diff", "-f", spec, "--server", s.url()});
    EXPECT_EQ(r.exitCode, 0);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(run({"diff", "-f", spec, "-o", "json", "--server", s.url()}).exitCode, 0);

    status = 503;
    r = run({"diff", "-f", spec, "--server", s.url()});
    EXPECT_GT(r.exitCode, 1);
    EXPECT_GT(run({"diff", "-f", dir_ + "/missing.yaml", "--server", s.url()}).exitCode, 1);
    EXPECT_GT(run({"diff"}).exitCode, 1);
}

TEST_F(LoomctlCli, ConfigSetWritesA0600FileThatLaterCommandsUse) {
    StubServer s([](const StubRequest&) { return StubResponse{200, kRacks.dump()}; });
    ASSERT_EQ(run({"config", "set-server", s.url()}).exitCode, 0);
    auto t = run({"config", "set-token", "-"}, {}, "filetok\n");
    ASSERT_EQ(t.exitCode, 0) << t.err;
    struct stat st{};
    ASSERT_EQ(::stat((dir_ + "/config.yaml").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600);

    auto r = run({"get", "racks"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(s.requests().back().authorization, "Bearer filetok");

    auto v = run({"config", "view"}, {{"LOOM_TOKEN", "envtok"}});
    EXPECT_NE(v.out.find("server:      " + s.url()), std::string::npos) << v.out;
    EXPECT_NE(v.out.find("(from LOOM_TOKEN)"), std::string::npos) << v.out;
    EXPECT_EQ(v.out.find("envtok"), std::string::npos) << "the token must be redacted";

    EXPECT_EQ(run({"config", "set-server", "not-a-url"}).exitCode, 2);
}

TEST_F(LoomctlCli, EventsFollowPrintsStreamedEvents) {
    StubServer s([](const StubRequest& r) {
        return StubResponse{200, R"({"items":[{"id":1,"severity":"warning","kind":"link_flap",)"
                                 R"("location":"z1-r001-rtsw/p17","message":"3 flaps in 60s"}]})"};
    });
    s.streamFrames = {
        R"({"type":"hello","seq":1})",
        R"({"type":"event","seq":2,"event":{"id":2,"severity":"critical","kind":"gpu_xid","location":"z1-r001-h0-gpu3","message":"XID 79"}})",
        R"({"type":"event","seq":3,"event":{"id":3,"severity":"info","kind":"gpu_temp","location":"z1-r001-h0-gpu1","message":"cool"}})"};
    // The stub closes the stream after its frames: loomctl reconnects (and gets the same frames
    // again) until --for ends it; each event is printed once, in the header's columns.
    auto r = run({"events", "--follow", "--for", "3s", "--since", "1h", "--server", s.url()});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("link_flap"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("reconnecting"), std::string::npos) << r.err;
    auto header = r.out.substr(0, r.out.find('\n'));
    auto row = r.out.find("XID 79");
    ASSERT_NE(row, std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("XID 79", row + 1), std::string::npos) << "printed twice:\n" << r.out;
    auto rowStart = r.out.rfind('\n', row) + 1;
    auto rowText = r.out.substr(rowStart, r.out.find('\n', row) - rowStart);
    EXPECT_EQ(rowText.find("gpu_xid"), header.find("KIND")) << header << "\n" << rowText;
    EXPECT_EQ(rowText.find("z1-r001-h0-gpu3"), header.find("LOCATION")) << header << "\n" << rowText;
    EXPECT_NE(s.requests()[0].target.find("since=2026"), std::string::npos) << s.requests()[0].target;

    auto f = run({"events", "--follow", "--for", "2s", "--severity", "critical", "-o", "json", "--server", s.url()});
    EXPECT_NE(f.out.find("\"XID 79\""), std::string::npos);
    EXPECT_EQ(f.out.find("cool"), std::string::npos) << "filtered by severity";
    for (std::size_t at = 0, next; at < f.out.size(); at = next + 1) {  // one object per line
        next = f.out.find('\n', at);
        if (next == std::string::npos) next = f.out.size();
        if (next > at) EXPECT_TRUE(json::parse(f.out.substr(at, next - at)).is_object());
    }
}

TEST_F(LoomctlCli, TokenCreatePrintsTheSecretLastAndRackActionsPostReasons) {
    StubServer s([](const StubRequest& r) {
        if (r.target == "/api/v1/tokens") {
            return StubResponse{201, R"({"name":"ci","role":"operator","token":"loom_abc123"})"};
        }
        return StubResponse{200, R"({"name":"z1-r001","from":"burn_in","to":"validated"})"};
    });
    auto t = run({"token", "create", "--name", "ci", "--role", "operator", "--server", s.url()});
    ASSERT_EQ(t.exitCode, 0) << t.err;
    EXPECT_EQ(t.out, "loom_abc123\n");
    EXPECT_EQ(json::parse(s.requests()[0].body), (json{{"name", "ci"}, {"role", "operator"}}));

    auto a = run({"rack", "advance", "z1-r001", "--reason", "burn-in passed", "--server", s.url()});
    ASSERT_EQ(a.exitCode, 0) << a.err;
    EXPECT_EQ(a.out, "rack/z1-r001 advanced: burn_in -> validated\n");
    EXPECT_EQ(s.requests()[1].target, "/api/v1/racks/z1-r001/advance");
    EXPECT_EQ(json::parse(s.requests()[1].body)["reason"], "burn-in passed");
    EXPECT_EQ(run({"token", "create", "--name", "x", "--role", "root", "--server", s.url()}).exitCode, 2);
}

// `completion bash` is generated from the command tree: sourcing it completes subcommands,
// options, the kinds after `get` and file names after -f, as kubectl's does (issue 12 item 3).
TEST_F(LoomctlCli, BashCompletionCompletesCommandsKindsAndOptions) {
    auto script = run({"completion", "bash"});
    ASSERT_EQ(script.exitCode, 0) << script.err;
    const auto file = std::filesystem::temp_directory_path() / ("loomctl-completion-" + std::to_string(::getpid()));
    {
        std::ofstream out(file);
        out << script.out;
    }
    auto complete = [&](const std::string& line) {
        auto r = loom::testing::runProcess("/bin/bash", {"-c", "source '" + file.string() + "'; COMP_WORDS=(" + line +
                                                    "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _loomctl; "
                                                    "echo \"${COMPREPLY[*]}\""});
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return r.out.substr(0, r.out.find('\n'));
    };
    EXPECT_EQ(complete("loomctl get ra"), "racks");
    EXPECT_EQ(complete("loomctl describe li"), "links");
    EXPECT_EQ(complete("loomctl fa"), "fabric");
    EXPECT_EQ(complete("loomctl fabric ex"), "export");
    EXPECT_EQ(complete("loomctl get --ou"), "--output");
    EXPECT_EQ(complete("loomctl get racks z1"), "") << "a kind is given: no more kinds";
    EXPECT_EQ(complete("loomctl --server http://x get --no-h"), "--no-headers") << "a global option's value is skipped";
    std::filesystem::remove(file);
    EXPECT_EQ(run({"completion", "tcsh"}).exitCode, 2);
    auto fish = run({"completion", "fish"});
    EXPECT_NE(fish.out.find("complete -c loomctl -n '__fish_use_subcommand' -a fabric"), std::string::npos) << fish.out;
}

}  // namespace
