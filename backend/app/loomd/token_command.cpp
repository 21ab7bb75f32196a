// loomd token create --role R [--name N]: makes an API token directly in the database and prints
// it once (the database keeps only its SHA-256). Also `token list` and `token revoke NAME`.
#include "loomd/commands.hpp"

#include "loom/backend/auth.hpp"
#include "loom/backend/db_options.hpp"
#include "loom/db/token_repo.hpp"

#include <ctime>
#include <iostream>
#include <memory>

namespace loom::loomd {
namespace {

struct TokenArgs {
    std::string name, role = "viewer";
    backend::DbOptions db;
};

int withConnection(const backend::DbOptions& opts,
                   const std::function<int(db::Connection&)>& fn) {
    auto d = backend::openDatabase(opts);
    if (!d) {
        std::cerr << "loomd token: " << d.error().toString() << "\n";
        return 1;
    }
    auto c = d->database.connect();
    if (!c) {
        std::cerr << "loomd token: " << c.error().toString() << "\n";
        return 1;
    }
    return fn(*c);
}

int code(const Error& e) { return e.code == Errc::InvalidArgument ? 2 : 1; }

}  // namespace

void addTokenCommand(CLI::App& app) {
    auto* token = app.add_subcommand("token", "manage API tokens directly in the database");
    token->require_subcommand(1);

    auto create = std::make_shared<TokenArgs>();
    auto* c = token->add_subcommand("create", "create a token and print it once");
    c->add_option("--name", create->name,
                  "unique token name (default: <role>-<UTC time>, e.g. admin-20261123-211500)");
    c->add_option("--role", create->role, "viewer, operator or admin")
        ->required()
        ->check(CLI::IsMember({"viewer", "operator", "admin"}));
    backend::addDbOptions(*c, create->db);
    c->callback([create] {
        throw CLI::RuntimeError(withConnection(create->db, [&](db::Connection& conn) {
            if (create->name.empty()) {
                const std::time_t now = std::time(nullptr);
                char stamp[32];
                std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
                create->name = create->role + "-" + stamp;
            }
            auto secret = backend::generateTokenSecret();
            auto t = db::createToken(conn, create->name, create->role, backend::hashToken(secret),
                                     "loomd token create");
            if (!t) {
                std::cerr << "loomd token create: " << t.error().toString() << "\n";
                return code(t.error());
            }
            std::cerr << "token '" << t->name << "' (" << t->role
                      << ") created; it is shown only this once:\n";
            std::cout << secret << std::endl;
            return 0;
        }));
    });

    auto list = std::make_shared<TokenArgs>();
    auto* l = token->add_subcommand("list", "list tokens (never their secrets)");
    backend::addDbOptions(*l, list->db);
    l->callback([list] {
        throw CLI::RuntimeError(withConnection(list->db, [&](db::Connection& conn) {
            auto ts = db::listTokens(conn);
            if (!ts) {
                std::cerr << "loomd token list: " << ts.error().toString() << "\n";
                return 1;
            }
            std::cout << "NAME\tROLE\tCREATED\tLAST USED\tREVOKED\n";
            for (auto& t : *ts)
                std::cout << t.name << '\t' << t.role << '\t' << t.createdAt << '\t'
                          << (t.lastUsedAt.empty() ? "-" : t.lastUsedAt) << '\t'
                          << (t.revokedAt.empty() ? "-" : t.revokedAt) << '\n';
            return 0;
        }));
    });

    auto revoke = std::make_shared<TokenArgs>();
    auto* r = token->add_subcommand("revoke", "revoke a token by name");
    r->add_option("name", revoke->name, "token name")->required();
    backend::addDbOptions(*r, revoke->db);
    r->callback([revoke] {
        throw CLI::RuntimeError(withConnection(revoke->db, [&](db::Connection& conn) {
            auto t = db::revokeToken(conn, revoke->name);
            if (!t) {
                std::cerr << "loomd token revoke: " << t.error().toString() << "\n";
                return code(t.error());
            }
            std::cout << "revoked " << t->name << "\n";
            return 0;
        }));
    });
}

}  // namespace loom::loomd
