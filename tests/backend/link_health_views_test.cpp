// One word for a link in every view (issue 35 item 6, docs/api.md "Link health"): a link up, one
// down, one up below its rated speed (link_speed), one in service that nothing reported, one of
// a drained rack and one of a planned rack. REST's list, the link's own object, the list filtered
// by that word, the stream's link.health (read with the words loomd serves at /api/v1/legends)
// and the web dashboard's table of those words must all say the same word for each. Before the
// rule was one, REST said `up` for the link with no data and for the drained and planned ones.
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "server_fixture.hpp"

namespace loom::backend::testing {
namespace {

using namespace std::chrono_literals;

class LinkHealthViews : public ServerFixture {
protected:
    HttpResult post(std::uint16_t port, const std::string& body) {
        return request(port, "POST", "/api/v1/telemetry", tokens_["operator"], body,
                       {{"Content-Type", "text/plain"}});
    }
    json get(std::uint16_t port, const std::string& target) {
        auto r = request(port, "GET", target, tokens_["viewer"]);
        EXPECT_EQ(r.status, 200) << target << ": " << r.body;
        return r.status == 200 ? r.j() : json::object();
    }
    static std::string encoded(const std::string& s) {
        std::string out;
        for (char c : s) out += c == '/' ? std::string("%2F") : std::string(1, c);
        return out;
    }
    // The stream's first link.health snapshot, one byte per link in /hall order.
    static std::vector<std::uint8_t> linkHealthSnapshot(std::uint16_t port,
                                                        const std::string& token) {
        WsClient c;
        c.open(port, token);
        c.send({{"op", "subscribe"}, {"topics", {"link.health"}}});
        const auto deadline = std::chrono::steady_clock::now() + 15s;
        while (std::chrono::steady_clock::now() < deadline) {
            auto m = c.readFor(1s);
            if (m && m->value("type", "") == "snapshot" && m->value("topic", "") == "link.health")
                return decodeBase64(m->value("data", ""));
        }
        return {};
    }
};

TEST_F(LinkHealthViews, RestTheStreamAndTheClientsSayTheSameWordOfEveryLink) {
    {
        // z1-r001 and z1-r002 in service, z1-r003 drained, z1-r004 planned (as applied).
        auto conn = connect();
        ASSERT_TRUE(conn.exec(
            "UPDATE racks SET state = 'in_service' WHERE name IN ('z1-r001', 'z1-r002')"));
        ASSERT_TRUE(conn.exec("UPDATE racks SET state = 'drained' WHERE name = 'z1-r003'"));
    }
    ServerConfig cfg;
    cfg.streamInterval = 200ms;
    auto& s = startServer(cfg, Routes::All);
    const auto port = s.port();
    // The hub has the racks' states once the live state followed them (links drained/active).
    std::vector<std::string> uplinks;  // z1-r001's RTSW links, in service
    std::string drained, planned;
    ASSERT_TRUE(loom::testing::eventually(
        [&] {
            const auto links = get(port, "/api/v1/links?limit=5000")["items"];
            uplinks.clear();
            drained = planned = "";
            for (const auto& l : links) {
                const std::string name = l.value("name", ""), state = l.value("state", "");
                if (name.find("z1-r001-rtsw/p") != std::string::npos && state == "active")
                    uplinks.push_back(name);
                if (name.find("z1-r003-rtsw/p") != std::string::npos && state == "drained")
                    drained = name;
                if (name.find("z1-r004-rtsw/p") != std::string::npos && state == "planned")
                    planned = name;
            }
            return uplinks.size() >= 4 && !drained.empty() && !planned.empty();
        },
        15s))
        << "the racks' cables never followed their states";
    auto portOf = [](const std::string& link) {  // "...--z1-r001-rtsw/p3" -> "p3"
        const auto at = link.find("z1-r001-rtsw/") + 13;
        const auto end = link.find("--", at);
        return link.substr(at, end == std::string::npos ? std::string::npos : end - at);
    };
    const std::string up = uplinks[0], down = uplinks[1], slow = uplinks[2], silent = uplinks[3];
    auto sample = [&](const std::string& link, int oper, double bps) {
        return "loom_port_oper_status{switch=\"z1-r001-rtsw\",port=\"" + portOf(link) + "\"} " +
               std::to_string(oper) + "\nloom_port_speed_bps{switch=\"z1-r001-rtsw\",port=\"" +
               portOf(link) + "\"} " + std::to_string(bps) + "\n";
    };
    // Every view is read while the samples are fresh, so each is sent again until they agree.
    const std::map<std::string, std::string> want{
        {up, "up"},          {down, "down"},       {slow, "degraded"},
        {silent, "no data"}, {drained, "drained"}, {planned, "not in service"}};
    const auto legends = get(port, "/api/v1/legends");
    auto words = legends.value("words", json::object()).value("link.health", json::object());
    EXPECT_EQ(words.size(), 6u) << "loomd serves the words of link.health: " << legends.dump();
    if (words.empty())  // go on with the documented words, to see what every view says
        words = {{"0", "up"},      {"1", "degraded"},       {"2", "down"},
                 {"3", "drained"}, {"4", "not in service"}, {"255", "no data"}};
    auto word = [&](int v) { return words.value(std::to_string(v), std::string("?")); };
    const auto hall = get(port, "/api/v1/hall")["links"];
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < hall.size(); ++i) index[hall[i]] = i;

    std::map<std::string, std::map<std::string, std::string>> seen;  // link -> view -> word
    const bool agreed = loom::testing::eventually(
        [&] {
            EXPECT_EQ(
                post(port, sample(up, 1, 400e9) + sample(down, 2, 400e9) + sample(slow, 1, 200e9))
                    .status,
                200);
            seen.clear();
            const auto all = get(port, "/api/v1/links?limit=5000");
            for (const auto& l : all["items"])
                if (want.contains(l.value("name", "")))
                    seen[l["name"]]["list"] = l.value("health", "");
            for (const auto& [link, w] : want) {
                seen[link]["object"] =
                    get(port, "/api/v1/links/" + encoded(link)).value("health", std::string("?"));
                // The list filtered by the word holds the link.
                std::string q = w;
                for (auto& c : q)
                    if (c == ' ') c = '+';
                bool listed = false;
                const auto r =
                    request(port, "GET", "/api/v1/links?limit=5000&health=" + q, tokens_["viewer"]);
                const auto filtered = r.status == 200 ? r.j() : json::object();
                for (const auto& l : filtered.value("items", json::array()))
                    listed = listed || l.value("name", "") == link;
                seen[link]["filter"] =
                    listed ? w : "not listed (HTTP " + std::to_string(r.status) + ")";
            }
            // Each word's filter, and its negation, list exactly the links the list says that
            // word of (loomd sends SQL the shorter list of names: those that pass `health=up`
            // are most links, those that pass `health=down` one).
            std::map<std::string, std::string> wordOf;
            for (const auto& l : all.value("items", json::array()))
                wordOf[l.value("name", "")] = l.value("health", "");
            for (const auto& [link, w] : want) {
                std::string q = w;
                for (auto& c : q)
                    if (c == ' ') c = '+';
                for (const bool negated : {false, true}) {
                    const auto page = get(port, "/api/v1/links?limit=5000&health" +
                                                    std::string(negated ? "__n=" : "=") + q);
                    std::set<std::string> got, expected;
                    for (const auto& l : page.value("items", json::array()))
                        got.insert(l.value("name", ""));
                    for (const auto& [name, said] : wordOf)
                        if ((said == w) != negated) expected.insert(name);
                    if (got != expected)
                        seen[link][negated ? "health__n set" : "health set"] =
                            std::to_string(got.size()) + " listed, " +
                            std::to_string(expected.size()) + " say it";
                }
            }
            const auto snap = linkHealthSnapshot(port, tokens_["viewer"]);
            for (const auto& [link, w] : want)
                seen[link]["stream"] = index.contains(link) && index[link] < snap.size()
                                           ? word(snap[index[link]])
                                           : "absent";
            for (const auto& [link, w] : want)
                for (const auto& [view, said] : seen[link])
                    if (said != w) return false;
            return true;
        },
        20s);
    std::ostringstream report;
    for (const auto& [link, views] : seen) {
        report << link << " (want " << want.at(link) << "):";
        for (const auto& [view, said] : views) report << " " << view << "=" << said;
        report << "\n";
    }
    EXPECT_TRUE(agreed) << report.str();

    // The clients name the stream's values with loomd's words: the legend swatches they colour
    // and name links with (GET /api/v1/legends `colours.linkHealth`) say the same words, and
    // whatever the web dashboard's own table holds before it has them agrees.
    for (const auto& w : legends["colours"].value("linkHealth", json::array()))
        EXPECT_EQ(w.value("name", ""), word(w.value("value", -1))) << w.dump();
    std::ifstream js(std::string(LOOM_SOURCE_DIR) + "/backend/web/palette.js");
    ASSERT_TRUE(js);
    const std::string text((std::istreambuf_iterator<char>(js)), {});
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(kLinkHealthNames = \{([^}]*)\})")));
    const std::string table = m[1];
    const std::regex entry(R"((\d+): '([^']*)')");
    for (auto it = std::sregex_iterator(table.begin(), table.end(), entry);
         it != std::sregex_iterator(); ++it)
        EXPECT_EQ((*it)[2].str(), word(std::stoi((*it)[1].str())))
            << "palette.js kLinkHealthNames: " << table;

    // A misspelt word is a 400 naming the filter.
    auto bad = request(port, "GET", "/api/v1/links?health=broken", tokens_["viewer"]);
    EXPECT_EQ(bad.status, 400) << bad.body;
}

}  // namespace
}  // namespace loom::backend::testing
