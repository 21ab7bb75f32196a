// Issue 39 item 5: every action body is validated before anything changes. A rack's advance or
// fail and a host's quarantine with a truncated, `null`, non-object or non-UTF-8 body (or a
// field that is not `reason`) get a 400 naming the place, and the rack's state and its audit
// trail are as they were. Also: a malformed chunk size gets an answer, and gpus = 2^63 is
// refused with the number as sent.
#include <boost/asio/write.hpp>

#include "beast_client.hpp"

namespace loom::backend::testing {
namespace {

class ActionBodies : public ServerFixture {
protected:
    std::string rackState(Server& s, const std::string& rack) {
        auto hall = request(s.port(), "GET", "/api/v1/hall", tokens_["viewer"]).j();
        for (const auto& r : hall["racks"])
            if (r.value("name", "") == rack) return r.value("state", "");
        return "";
    }
    std::size_t auditRows(Server& s, const std::string& entity) {
        auto a = request(s.port(), "GET", "/api/v1/provisioning/audit?entity=" + entity,
                         tokens_["viewer"])
                     .j();
        return a["items"].size();
    }
};

TEST_F(ActionBodies, MalformedBodiesAre400AndChangeNothing) {
    auto& s = startServer({}, Routes::All);
    const std::string rack = "z1-r001", host = "z1-r001-h0";
    const std::string stateBefore = rackState(s, rack);
    ASSERT_FALSE(stateBefore.empty());
    const auto rackAudit = auditRows(s, rack), hostAudit = auditRows(s, host);

    struct Case {
        std::string name, body, contentType, path, says;
    };
    const std::vector<Case> cases = {
        {"truncated JSON", R"({"reason": "dock)", "application/json", "", "malformed JSON"},
        {"truncated object", R"({"reason": "x",)", "application/json", "", "malformed JSON"},
        {"null", "null", "application/json", "", "not null"},
        {"array", R"(["reason"])", "application/json", "", "not array"},
        {"string", R"("reason")", "application/json", "", "not string"},
        {"invalid UTF-8", "{\"reason\": \"\xff\xfe\"}", "application/json", "", "UTF-8"},
        {"invalid UTF-8 key", "{\"\xc3\x28\": 1}", "application/json", "", "UTF-8"},
        {"reason not a string", R"({"reason": 5})", "application/json", "reason", "string"},
        {"unknown field", R"({"reason": "x", "force": true})", "application/json", "force",
         "unknown field 'force'"},
        {"NUL in the reason", R"({"reason": "a\u0000b"})", "application/json", "reason", ""},
        {"YAML null", "~\n", "application/yaml", "", "not null"},
        {"YAML syntax error", "reason: [x\n", "application/yaml", "", "malformed YAML"},
    };
    for (const auto& c : cases) {
        for (const std::string target :
             {"/api/v1/racks/" + rack + "/advance", "/api/v1/racks/" + rack + "/fail",
              "/api/v1/hosts/" + host + "/quarantine"}) {
            auto r = request(s.port(), "POST", target, tokens_["operator"], c.body,
                             {{"Content-Type", c.contentType}});
            const std::string what = target + " with " + c.name;
            EXPECT_EQ(r.status, 400) << what << ": " << r.body;
            auto err = r.j()["error"];
            EXPECT_EQ(err.value("path", ""), c.path) << what << ": " << r.body;
            if (!c.says.empty()) {
                EXPECT_NE(err.value("message", "").find(c.says), std::string::npos)
                    << what << ": " << r.body;
            }
        }
    }
    EXPECT_EQ(rackState(s, rack), stateBefore);
    EXPECT_EQ(auditRows(s, rack), rackAudit);
    EXPECT_EQ(auditRows(s, host), hostAudit);

    // The bodies that are meant still work: none, {} and a reason.
    for (const std::string body :
         {"", "{}", R"({"reason": "on the dock"})", R"({"reason": null})"}) {
        auto r = request(s.port(), "POST", "/api/v1/racks/" + rack + "/advance",
                         tokens_["operator"], body);
        EXPECT_EQ(r.status, 200) << "advance with '" << body << "': " << r.body;
    }
    EXPECT_NE(rackState(s, rack), stateBefore);
}

// A malformed chunk size was answered with nothing (the connection just closed).
TEST_F(ActionBodies, AMalformedChunkSizeGetsAnAnswer) {
    auto& s = startServer({}, Routes::All);
    net::io_context ioc;
    tcp::socket sock(ioc);
    sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), s.port()));
    const std::string req =
        "POST /api/v1/placement HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tokens_["viewer"] +
        "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        "zz\r\n{\"gpus\": 8}\r\n0\r\n\r\n";
    net::write(sock, net::buffer(req));
    std::string got;
    char buf[4096];
    beast::error_code ec;
    while (got.find("}\n") == std::string::npos && got.find("}}") == std::string::npos && !ec)
        got.append(buf, sock.read_some(net::buffer(buf), ec));
    EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << "read: " << ec.message() << "; got: " << got;
    EXPECT_NE(got.find("chunk"), std::string::npos) << got;
}

// gpus = 2^63 parses as an unsigned number; it was refused as "-9223372036854775808".
TEST_F(ActionBodies, HugeGpuCountsAreRefusedAsSent) {
    auto& s = startServer({}, Routes::All);
    for (const std::string n :
         {"9223372036854775808", "18446744073709551615", "0", "-1", "1000001"}) {
        auto r = request(s.port(), "POST", "/api/v1/placement", tokens_["viewer"],
                         R"({"gpus": )" + n + "}");
        EXPECT_EQ(r.status, 400) << n << ": " << r.body;
        EXPECT_EQ(r.j()["error"].value("path", ""), "gpus") << r.body;
        EXPECT_NE(r.j()["error"].value("message", "").find("not " + n), std::string::npos)
            << r.body;
    }
}

}  // namespace
}  // namespace loom::backend::testing
