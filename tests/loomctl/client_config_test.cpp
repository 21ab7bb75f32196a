// Config precedence (flag > environment > file > default), the config file, URLs.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "loom/client/client.hpp"

namespace loom::client {
namespace {

namespace fs = std::filesystem;

struct TempDir {
    fs::path path;
    TempDir() {
        char tmpl[] = "/tmp/loomctl-test-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

TEST(ClientConfig, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
    ConfigInputs in;
    in.file = {"http://file:1", "file-token"};
    EXPECT_EQ(resolveClientConfig(in)->server, "http://file:1");
    EXPECT_EQ(resolveClientConfig(in)->token, "file-token");

    in.envServer = "http://env:2";
    in.envToken = "env-token";
    EXPECT_EQ(resolveClientConfig(in)->server, "http://env:2");
    EXPECT_EQ(resolveClientConfig(in)->token, "env-token");

    in.flagServer = "http://flag:3/";
    in.flagToken = "flag-token";
    EXPECT_EQ(resolveClientConfig(in)->server, "http://flag:3");  // trailing slash dropped
    EXPECT_EQ(resolveClientConfig(in)->token, "flag-token");

    // Each setting resolves on its own: a flag for the server leaves the token to the env.
    in.flagToken.reset();
    EXPECT_EQ(resolveClientConfig(in)->token, "env-token");
}

TEST(ClientConfig, NothingSetGivesTheDefaultServerAndNoToken) {
    auto cfg = resolveClientConfig(ConfigInputs{});
    ASSERT_TRUE(cfg);
    EXPECT_EQ(cfg->server, kDefaultServer);
    EXPECT_TRUE(cfg->token.empty());
}

TEST(ClientConfig, EmptyValuesCountAsUnset) {
    ConfigInputs in;
    in.flagServer = "";
    in.envServer = "";
    in.file.server = "http://file:1";
    EXPECT_EQ(resolveClientConfig(in)->server, "http://file:1");
}

TEST(ClientConfig, BadServerUrlIsAnInputError) {
    ConfigInputs in;
    in.flagServer = "ftp://x";
    auto cfg = resolveClientConfig(in);
    ASSERT_FALSE(cfg);
    EXPECT_EQ(cfg.error().code, Errc::InvalidArgument);
    EXPECT_NE(cfg.error().message.find("http://"), std::string::npos);
}

TEST(ClientConfig, FromEnvironmentReadsLoomServerAndToken) {
    TempDir d;
    ::setenv("LOOM_SERVER", "http://envhost:9", 1);
    ::setenv("LOOM_TOKEN", "tok-env", 1);
    auto in = ConfigInputs::fromEnvironment(std::nullopt, std::nullopt,
                                            (d.path / "missing.yaml").string());
    ::unsetenv("LOOM_SERVER");
    ::unsetenv("LOOM_TOKEN");
    ASSERT_TRUE(in);
    auto cfg = resolveClientConfig(*in);
    EXPECT_EQ(cfg->server, "http://envhost:9");
    EXPECT_EQ(cfg->token, "tok-env");
}

TEST(ConfigFile, SaveWritesMode0600AndLoadReadsItBack) {
    TempDir d;
    auto path = (d.path / "sub" / "config.yaml").string();
    ASSERT_TRUE(saveConfigFile(path, {"https://loomd.example:8443", "s3cret"}));
    struct stat st{};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600);
    auto f = loadConfigFile(path);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->server, "https://loomd.example:8443");
    EXPECT_EQ(f->token, "s3cret");
}

TEST(ConfigFile, SaveTightensAWiderExistingMode) {
    TempDir d;
    auto path = (d.path / "config.yaml").string();
    std::ofstream(path) << "server: http://a:1\n";
    ::chmod(path.c_str(), 0644);
    ASSERT_TRUE(saveConfigFile(path, {"http://a:1", "t"}));
    struct stat st{};
    ::stat(path.c_str(), &st);
    EXPECT_EQ(st.st_mode & 0777, 0600);
}

TEST(ConfigFile, MissingFileIsEmpty) {
    auto f = loadConfigFile("/nonexistent/loom/config.yaml");
    ASSERT_TRUE(f);
    EXPECT_TRUE(f->server.empty());
    EXPECT_TRUE(f->token.empty());
}

TEST(ConfigFile, MalformedFileNamesTheFileAndLine) {
    TempDir d;
    auto path = (d.path / "config.yaml").string();
    std::ofstream(path) << "server: http://a:1\ntoken: [unclosed\n";
    auto f = loadConfigFile(path);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error().code, Errc::InvalidArgument);
    EXPECT_NE(f.error().message.find(path), std::string::npos);
    EXPECT_GT(f.error().line, 0);
}

TEST(ConfigFile, NonStringValueIsAnError) {
    TempDir d;
    auto path = (d.path / "config.yaml").string();
    std::ofstream(path) << "server:\n  nested: x\n";
    auto f = loadConfigFile(path);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error().path, "server");
    EXPECT_EQ(f.error().line, 2);
}

TEST(Url, ParsesSchemeHostPortAndBase) {
    auto u = parseUrl("https://loomd.example/base/");
    ASSERT_TRUE(u);
    EXPECT_TRUE(u->tls);
    EXPECT_EQ(u->host, "loomd.example");
    EXPECT_EQ(u->port, "443");
    EXPECT_EQ(u->basePath, "/base");

    u = parseUrl("http://127.0.0.1:8480");
    ASSERT_TRUE(u);
    EXPECT_FALSE(u->tls);
    EXPECT_EQ(u->port, "8480");

    u = parseUrl("http://[::1]:9000");
    ASSERT_TRUE(u);
    EXPECT_EQ(u->host, "::1");
    EXPECT_EQ(u->port, "9000");

    EXPECT_FALSE(parseUrl("127.0.0.1:8480"));
    EXPECT_FALSE(parseUrl("http://"));
    EXPECT_FALSE(parseUrl("http://host:80x"));
}

TEST(Url, QueryStringEncodes) {
    EXPECT_EQ(queryString({{"label.team", "a b"}, {"since", "2026-11-22T08:00:00Z"}}),
              "label.team=a%20b&since=2026-11-22T08%3A00%3A00Z");
}

}  // namespace
}  // namespace loom::client
