// Tables, YAML, ages and durations as loomctl prints them.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <tuple>

#include "loom/client/client.hpp"

namespace loom::client {
namespace {

using nlohmann::json;

TEST(Render, RackTableIsAlignedNameFirstWithNoneForEmptyCells) {
    std::vector<json> racks{
        {{"name", "z1-r001"}, {"zone", "z1"}, {"row", "z1-row01"}, {"position", 0}, {"state", "in_service"}},
        {{"name", "z1-r010"}, {"zone", "z1"}, {"row", "z1-row01"}, {"position", 9}, {"state", "burn_in"}},
    };
    std::string t = renderTable(columnsForKind("racks", false), racks);
    EXPECT_EQ(t,
              "NAME      ZONE   ROW        POSITION   STATE        AGE\n"
              "z1-r001   z1     z1-row01   0          in_service   <none>\n"
              "z1-r010   z1     z1-row01   9          burn_in      <none>\n");
}

TEST(Render, WideAddsColumnsAndNoHeadersDropsTheHeader) {
    std::vector<json> sw{{{"name", "z1-r001-rtsw"}, {"role", "rtsw"}, {"zone", "z1"},
                          {"rack", "z1-r001"}, {"state", "planned"}, {"model", "Minipack2"},
                          {"portCount", 34}, {"speedGbps", 400}, {"labels", {{"a", "b"}}}}};
    std::string narrow = renderTable(columnsForKind("switches", false), sw);
    std::string wide = renderTable(columnsForKind("switches", true), sw);
    EXPECT_EQ(narrow.find("MODEL"), std::string::npos);
    EXPECT_NE(wide.find("MODEL"), std::string::npos);
    EXPECT_NE(wide.find("Minipack2"), std::string::npos);
    EXPECT_NE(wide.find("a=b"), std::string::npos);
    std::string bare = renderTable(columnsForKind("switches", false), sw, false);
    EXPECT_EQ(bare.rfind("z1-r001-rtsw", 0), 0u);
}

// The columns of every inventory kind, narrow and wide, as loomctl printed them before they
// were derived from inventory/kinds.hpp (issue 10): the description changed none of them.
TEST(Render, InventoryKindsColumnsComeFromKindsHpp) {
    auto headers = [](std::string_view kind, bool wide) {
        std::string out;
        for (const auto& c : columnsForKind(kind, wide)) out += (out.empty() ? "" : " ") + c.header;
        return out;
    };
    const std::vector<std::tuple<std::string, std::string, std::string>> expected = {
        {"sites", "NAME DESCRIPTION AGE", "NAME DESCRIPTION AGE"},
        {"zones", "NAME SITE AGE", "NAME SITE AGE"},
        {"rows", "NAME ZONE INDEX AGE", "NAME ZONE INDEX AGE"},
        {"racks", "NAME ZONE ROW POSITION STATE AGE",
         "NAME ZONE ROW POSITION STATE MODEL SERIAL LABELS AGE"},
        {"hosts", "NAME RACK SLOT STATE AGE", "NAME RACK SLOT STATE MODEL SERIAL LABELS AGE"},
        {"gpus", "NAME HOST INDEX STATE HEALTH AGE",
         "NAME HOST INDEX STATE HEALTH MODEL UUID SERIAL AGE"},
        {"nics", "NAME HOST INDEX NETWORK SPEED-GBPS STATE AGE",
         "NAME HOST INDEX NETWORK SPEED-GBPS STATE MODEL HCA-TYPE PCI MAC AGE"},
        {"switches", "NAME ROLE ZONE RACK STATE HEALTH AGE",
         "NAME ROLE ZONE RACK STATE HEALTH MODEL PORTS SPEED-GBPS SERIAL LABELS AGE"},
        {"ports", "NAME DEVICE INDEX SPEED-GBPS STATE PEER-PORT AGE",
         "NAME DEVICE INDEX SPEED-GBPS STATE PEER-PORT DEVICE-KIND LINK AGE"},
        {"links", "NAME NETWORK STATE HEALTH AGE",
         "NAME NETWORK STATE HEALTH A-PORT B-PORT MEDIUM LENGTH-M SPEED-GBPS AGE"},
        {"storage_nodes", "NAME RACK CAPACITY-TB STATE AGE",
         "NAME RACK CAPACITY-TB STATE MODEL SERIAL LABELS AGE"},
    };
    for (const auto& [kind, narrow, wide] : expected) {
        EXPECT_EQ(headers(kind, false), narrow) << kind;
        // Wide: these columns first; a field added since may follow them (before AGE).
        const std::string got = headers(kind, true);
        EXPECT_EQ(got.rfind(wide.substr(0, wide.size() - 4), 0), 0u) << kind << ": " << got;
        EXPECT_TRUE(got.ends_with(" AGE")) << kind << ": " << got;
    }
}

// A job's HEALTH is loomd's word (health.status, jobs::jobHealthStatus; its rule is tested in
// tests/jobs/job_impact_test.cpp): loomctl shows it as sent, and "unknown" when a loomd sends
// none — never "ok" from facts it did not weigh (issue 15; a job at 0 % was shown "ok").
TEST(Render, JobHealthIsLoomdsWord) {
    auto health = [](json h) {
        std::vector<json> jobs{{{"name", "llama"}, {"state", "running"}, {"health", std::move(h)}}};
        const auto columns = columnsForKind("jobs", false);
        std::string t = renderTable(columns, jobs, false);
        // The HEALTH column's cell of the one row (every cell is one word; an empty one <none>).
        std::istringstream in(t);
        std::vector<std::string> cells;
        for (std::string w; in >> w;) cells.push_back(w);
        auto at = std::find_if(columns.begin(), columns.end(),
                               [](const Column& c) { return c.header == "HEALTH"; });
        const auto i = std::size_t(at - columns.begin());
        return at != columns.end() && i < cells.size() ? cells[i] : "?" + t;
    };
    const json gpusOk = {{"total", 8}, {"ok", 8}, {"failed", 0}};
    for (const char* word : {"ok", "degraded", "gpu-failed", "links-down", "gpu-warning", "unknown"})
        EXPECT_EQ(health({{"busBw", 100}, {"degraded", false}, {"gpus", gpusOk}, {"status", word}}), word);
    EXPECT_EQ(health({{"busBw", 100}, {"degraded", false}, {"gpus", gpusOk}, {"linksDown", json::array()}}),
              "unknown");
}

TEST(Render, NoTrailingSpaces) {
    std::string t = renderRows({{"A", "LONGHEADER"}, {"xxxxxx", ""}});
    EXPECT_EQ(t, "A        LONGHEADER\nxxxxxx\n");
}

TEST(Render, UnknownKindShowsScalarFields) {
    std::vector<json> items{{{"name", "x"}, {"busBw", 97.5}, {"nested", {{"a", 1}}}}};
    auto cols = columnsForKind("widgets", false, items);
    ASSERT_EQ(cols.size(), 2u);
    EXPECT_EQ(cols[1].header, "BUS-BW");
    EXPECT_EQ(cols[1].cell(items[0]), "97.5");
}

TEST(Render, YamlRoundTripsAndQuotesAmbiguousStrings) {
    json j = {{"name", "z1-r001"}, {"serial", "0042"}, {"flag", "true"}, {"count", 16},
              {"labels", {{"team", "ml"}}}, {"hosts", {"h0", "h1"}}, {"closedAt", nullptr}};
    std::string y = toYaml(j);
    YAML::Node n = YAML::Load(y);
    EXPECT_EQ(n["name"].as<std::string>(), "z1-r001");
    EXPECT_EQ(n["serial"].Tag(), "!");  // quoted: stays a string, not the number 42
    EXPECT_EQ(n["serial"].as<std::string>(), "0042");
    EXPECT_EQ(n["flag"].Tag(), "!");
    EXPECT_EQ(n["count"].as<int>(), 16);
    EXPECT_EQ(n["labels"]["team"].as<std::string>(), "ml");
    EXPECT_EQ(n["hosts"][1].as<std::string>(), "h1");
    EXPECT_TRUE(n["closedAt"].IsNull());
}

TEST(Render, ScalarText) {
    EXPECT_EQ(scalarText(json(3.0)), "3");
    EXPECT_EQ(scalarText(json(97.25)), "97.25");
    EXPECT_EQ(scalarText(json(nullptr)), "");
    EXPECT_EQ(scalarText(json(true)), "true");
    EXPECT_EQ(scalarText(json({{"a", "1"}, {"b", "2"}})), "a=1,b=2");
    EXPECT_EQ(field(json{{"x", 1}}, "y"), "");
}

TEST(Render, AgeLikeKubectl) {
    using namespace std::chrono;
    auto now = sys_days{2026y / 11 / 22} + hours(8) + minutes(10);
    EXPECT_EQ(ageOf("2026-11-22T08:09:18Z", now), "42s");
    EXPECT_EQ(ageOf("2026-11-22T08:04:50Z", now), "5m10s");
    EXPECT_EQ(ageOf("2026-11-22T06:00:00Z", now), "2h10m");
    EXPECT_EQ(ageOf("2026-11-19T08:10:00Z", now), "3d");
    EXPECT_EQ(ageOf("2026-11-22T10:10:00+02:00", now), "0s");
    EXPECT_EQ(ageOf("2026-11-22 08:09:00.123456+00", now), "1m");
    EXPECT_EQ(ageOf("yesterday", now), "");
}

// --local: the same instant in the zone of TZ, with an RFC 3339 offset (POSIX TZ strings need no
// tzdata; their sign is west-positive).
TEST(Render, LocalTimeKeepsTheInstantAndWritesTheOffset) {
    const char* old = std::getenv("TZ");
    const std::string saved = old ? old : "";
    ::setenv("TZ", "IST-5:30", 1);
    ::tzset();
    EXPECT_EQ(localRfc3339("2026-11-22T08:10:00Z"), "2026-11-22T13:40:00+05:30");
    EXPECT_EQ(localRfc3339("2026-11-22 20:00:00.5+00"), "2026-11-23T01:30:00+05:30");
    EXPECT_EQ(localRfc3339("2026-11-22T10:10:00+02:00"), "2026-11-22T13:40:00+05:30");
    ::setenv("TZ", "EST5", 1);
    ::tzset();
    EXPECT_EQ(localRfc3339("2026-11-22T08:10:00Z"), "2026-11-22T03:10:00-05:00");
    EXPECT_EQ(localRfc3339("not a time"), "not a time");
    if (old) ::setenv("TZ", saved.c_str(), 1);
    else ::unsetenv("TZ");
    ::tzset();
}

TEST(Render, Durations) {
    EXPECT_EQ(parseDuration("90s")->count(), 90);
    EXPECT_EQ(parseDuration("15m")->count(), 900);
    EXPECT_EQ(parseDuration("1h30m")->count(), 5400);
    EXPECT_EQ(parseDuration("2d")->count(), 172800);
    EXPECT_FALSE(parseDuration(""));
    EXPECT_FALSE(parseDuration("10"));
    EXPECT_FALSE(parseDuration("h"));
    EXPECT_FALSE(parseDuration("5y"));
}

TEST(Render, OutputFormats) {
    EXPECT_EQ(parseOutputFormat("wide"), OutputFormat::Wide);
    EXPECT_EQ(parseOutputFormat("name"), OutputFormat::Name);
    EXPECT_FALSE(parseOutputFormat("xml"));
}

// -o jsonpath=: kubectl's templates, the subset its users reach for (issue 12 item 3).
TEST(JsonPath, FieldsIndexesWildcardsRangesAndLiterals) {
    const json doc = json::parse(R"({"items": [
        {"name": "z1-r001", "state": "in_service", "labels": {"owner": "a", "k.dots": "d"}, "n": 3},
        {"name": "z1-r002", "state": "planned", "labels": {}, "n": 1.5}]})");
    auto r = [&](std::string_view t) {
        auto out = renderJsonPath(doc, t);
        EXPECT_TRUE(out) << t << ": " << out.error().toString();
        return out ? *out : std::string("<error>");
    };
    EXPECT_EQ(r("{.items[*].name}"), "z1-r001 z1-r002");
    EXPECT_EQ(r("{.items[0].labels.owner}"), "a");
    EXPECT_EQ(r("{.items[-1].name}"), "z1-r002");
    EXPECT_EQ(r("{$.items[0].labels['k.dots']}"), "d");
    EXPECT_EQ(r("{.items[0].labels}"), R"({"k.dots":"d","owner":"a"})");
    EXPECT_EQ(r("{.items[*].n}"), "3 1.5");
    EXPECT_EQ(r("{range .items[*]}{.name}{\"\\t\"}{.state}{\"\\n\"}{end}"),
              "z1-r001\tin_service\nz1-r002\tplanned\n");
    EXPECT_EQ(r("names: {.items[*].name}!"), "names: z1-r001 z1-r002!");
    EXPECT_EQ(r("{.items[0].missing}"), "") << "a missing key prints nothing, as kubectl's default";
    EXPECT_EQ(r("{.items[7].name}"), "");
}

TEST(JsonPath, WhatIsNotSupportedIsAnErrorNamingTheColumn) {
    const json doc = json::object();
    for (std::string_view t : {"{.items[?(@.a==1)]}", "{..name}", "{.items[0:2]}", "{.a", ".a}",
                               "{range .items[*]}{.name}", "{end}", "{\"open}"}) {
        auto out = renderJsonPath(doc, t);
        ASSERT_FALSE(out) << t;
        EXPECT_NE(out.error().message.find("column"), std::string::npos) << out.error().message;
    }
}

TEST(JsonPath, SortByIsNaturalForNamesNumericForNumbersMissingLast) {
    EXPECT_TRUE(naturalLess("p2", "p10"));
    EXPECT_FALSE(naturalLess("p10", "p2"));
    EXPECT_TRUE(naturalLess("z1-r001-rtsw/p9", "z1-r001-rtsw/p10"));
    EXPECT_TRUE(naturalLess("a", "b"));
    EXPECT_FALSE(naturalLess("p2", "p2"));
    std::vector<json> items = {json{{"name", "p10"}, {"n", 2}}, json{{"name", "p2"}, {"n", 10}},
                               json{{"name", "p1"}}, json{{"name", "p02"}, {"n", 1}}};
    ASSERT_TRUE(sortByJsonPath(items, ".name"));
    EXPECT_EQ(items[0]["name"], "p1");
    EXPECT_EQ(items[1]["name"], "p2");
    EXPECT_EQ(items[2]["name"], "p02");
    EXPECT_EQ(items[3]["name"], "p10");
    ASSERT_TRUE(sortByJsonPath(items, "{.n}"));
    EXPECT_EQ(items[0]["n"], 1);
    EXPECT_EQ(items[2]["n"], 10);
    EXPECT_FALSE(items[3].contains("n")) << "missing last";
    EXPECT_FALSE(sortByJsonPath(items, "{.a}{.b}"));
}

// Units in headers: every quantity column says its unit (issue 12 item 3).
TEST(Render, QuantityColumnsNameTheirUnit) {
    for (std::string_view kind : {"nics", "switches", "ports", "links", "storage_nodes"}) {
        for (const auto& col : columnsForKind(kind, true)) {
            if (col.header.find("SPEED") != std::string::npos) EXPECT_EQ(col.header, "SPEED-GBPS") << kind;
            if (col.header.find("CAPACITY") != std::string::npos) EXPECT_EQ(col.header, "CAPACITY-TB") << kind;
            if (col.header.find("LENGTH") != std::string::npos) EXPECT_EQ(col.header, "LENGTH-M") << kind;
        }
    }
}

}  // namespace
}  // namespace loom::client
