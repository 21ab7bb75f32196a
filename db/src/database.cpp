#include "loom/db/database.hpp"

#include "loom/db/native.hpp"

#include "conninfo_quote.hpp"
#include "loom/db/failover_guard.hpp"

#include <libpq-fe.h>

#include <regex>

namespace loom::db {

namespace {

// libpq's own wording (fe-misc.c, fe-secure.c, fe-connect.c) for a connection that broke.
bool isConnectionLoss(std::string_view what) {
    static constexpr std::string_view kSigns[] = {
        "server closed the connection unexpectedly",
        "no connection to the server",
        "connection not open",
        "could not receive data from server",
        "could not send data to server",
        "terminating connection",
        "SSL SYSCALL error",
        "SSL connection has been closed unexpectedly",
        "Lost connection",
        "connection to server",
    };
    for (auto sign : kSigns)
        if (what.find(sign) != std::string_view::npos) return true;
    return false;
}

}  // namespace

Error translateException(std::string_view context) {
    std::string prefix = context.empty() ? std::string() : std::string(context) + ": ";
    auto trim = [](std::string s) {
        while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
        return s;
    };
    try {
        throw;
    } catch (const pqxx::broken_connection& e) {
        return Error::unavailable(prefix + "database connection lost: " + trim(e.what()));
    } catch (const pqxx::in_doubt_error& e) {
        return Error::unavailable(prefix + "database connection lost during commit; outcome unknown (check, then retry): " +
                                  trim(e.what()));
    } catch (const pqxx::transaction_rollback& e) {
        // serialization_failure, deadlock_detected, statement_completion_unknown
        return Error::conflict(prefix + "concurrent update, retry: " + trim(e.what()));
    } catch (const pqxx::unique_violation& e) {
        return Error::conflict(prefix + "already exists: " + trim(e.what()));
    } catch (const pqxx::foreign_key_violation& e) {
        return Error::conflict(prefix + "still referenced or missing reference: " +
                               trim(e.what()));
    } catch (const pqxx::integrity_constraint_violation& e) {
        return Error::invalid(prefix + "rejected by the schema: " + trim(e.what()));
    } catch (const pqxx::data_exception& e) {
        return Error::invalid(prefix + "bad value: " + trim(e.what()));
    } catch (const pqxx::sql_error& e) {
        // Class 08 (connection exception) and 57 (operator intervention: the server shutting
        // down, restarting or crashed under us) are an unavailable database, not a bug. libpq
        // reports a connection that died mid-query with no SQLSTATE at all ("server closed
        // the connection unexpectedly"): that is a lost connection too.
        const std::string& state = e.sqlstate();
        if (state.rfind("08", 0) == 0 || state.rfind("57", 0) == 0 ||
            (state.empty() && isConnectionLoss(e.what())))
            return Error::unavailable(prefix + "database unavailable: " + trim(e.what()));
        if (state == "22P02" || state == "22023")
            return Error::invalid(prefix + "bad value: " + trim(e.what()));
        return Error::internal(prefix + "SQL error " + state + ": " + trim(e.what()));
    } catch (const std::exception& e) {
        if (isConnectionLoss(e.what()))
            return Error::unavailable(prefix + "database unavailable: " + trim(e.what()));
        return Error::internal(prefix + trim(e.what()));
    } catch (...) {
        return Error::internal(prefix + "unknown exception");
    }
}

Connection::Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&& other) noexcept {
    if (this != &other) {
        if (impl_) failover::untrack(impl_.get());
        impl_ = std::move(other.impl_);
    }
    return *this;
}
Connection::~Connection() {
    if (impl_) failover::untrack(impl_.get());
}

Result<void> Connection::exec(std::string_view sql) {
    try {
        pqxx::nontransaction tx(impl_->conn);
        tx.exec(std::string(sql));
        return {};
    } catch (...) {
        return fail(translateException("exec"));
    }
}

Result<std::optional<std::string>> Connection::queryValue(std::string_view sql) {
    try {
        pqxx::nontransaction tx(impl_->conn);
        pqxx::result r = tx.exec(std::string(sql));
        if (r.empty() || r[0][0].is_null()) return std::optional<std::string>();
        return std::optional<std::string>(r[0][0].c_str());
    } catch (...) {
        return fail(translateException("query"));
    }
}

Result<std::vector<std::vector<std::string>>> Connection::queryRows(std::string_view sql) {
    try {
        pqxx::nontransaction tx(impl_->conn);
        pqxx::result r = tx.exec(std::string(sql));
        std::vector<std::vector<std::string>> rows;
        rows.reserve(r.size());
        for (const auto& row : r) {
            auto& out = rows.emplace_back();
            for (const auto& f : row) out.emplace_back(f.is_null() ? "" : f.c_str());
        }
        return rows;
    } catch (...) {
        return fail(translateException("query"));
    }
}

int Connection::backendPid() const { return impl_->conn.backendpid(); }

Database Database::fromUrl(std::string url) {
    Database d;
    d.conninfo_ = std::move(url);
    return d;
}


Database Database::fromSocket(std::string socketDir, int port, std::string dbname,
                              std::string user) {
    // Key=value form: quoting handles spaces in the state dir path.
    Database d;
    d.conninfo_ = "host=" + quoteConninfoValue(socketDir) + " port=" + std::to_string(port) +
                  " dbname=" + quoteConninfoValue(dbname) + " user=" + quoteConninfoValue(user);
    return d;
}

Database Database::withDatabase(std::string dbname) const {
    Database d = *this;
    d.dbnameOverride_ = std::move(dbname);
    return d;
}

Result<std::string> Database::resolvedConninfo() const {
    if (dbnameOverride_.empty()) return conninfo_;
    // Let libpq parse the URL or key=value string, replace dbname, and rebuild it as
    // key=value (a second dbname= would drop an expanded URL instead of overriding).
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo_.c_str(), &err);
    if (!opts) {
        std::string msg = err ? err : "unparsable connection string";
        if (err) PQfreemem(err);
        return fail(Error::invalid("bad database URL " + redacted() + ": " + msg, "--db"));
    }
    std::string rebuilt;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        std::string key = o->keyword;
        if (key == "dbname" || !o->val) continue;
        rebuilt += key + "=" + quoteConninfoValue(o->val) + " ";
    }
    PQconninfoFree(opts);
    return rebuilt + "dbname=" + quoteConninfoValue(dbnameOverride_);
}

std::string Database::connectionString() const {
    auto c = resolvedConninfo();
    return c ? *c : conninfo_;
}

Result<Connection> Database::connect() const {
    try {
        auto conninfo = resolvedConninfo();
        if (!conninfo) return fail(conninfo.error());
        auto impl = std::make_unique<Connection::Impl>(failover::preferred(*conninfo));
        // No parallel workers: loomd's statements are short and many run at once (50 list
        // clients on 2 cores), and a Gather forks workers per execution, whose start-up cost
        // more than the scan they share: ports?peer=<ctsw> took 16.4 ms of PostgreSQL CPU per
        // page with two workers against 4.2 ms without, links?switch=&device= 13.1 against 1.5.
        // A session setting, kept by libpqxx across a reconnect.
        impl->conn.set_variable("max_parallel_workers_per_gather", "0");
        // No JIT: PostgreSQL compiles a statement whose plan costs more than jit_above_cost
        // (100,000) before running it, and loomd's short statements over large tables cross it
        // while touching a few rows: a rack transition's zone-cable statement at 98k GPUs took
        // 166-228 ms (109 functions compiled) for 6.5 ms of work, and operator advances fell to
        // ~3 racks a second.
        impl->conn.set_variable("jit", "off");
        // On a multi-host string: cut when another server becomes the primary
        // (failover_guard.hpp; a no-op for one host).
        failover::track(impl.get(), *conninfo, impl->conn.sock(), impl->conn.hostname(),
                        impl->conn.port());
        return Connection(std::move(impl));
    } catch (...) {
        return fail(translateException("connecting to " + redacted()));
    }
}

std::string Database::redacted() const {
    static const std::regex kUrlPassword(R"((://[^:/@]*:)[^@]*@)");
    static const std::regex kKvPassword(R"((password\s*=\s*)('[^']*'|\S+))");
    std::string s = std::regex_replace(conninfo_, kUrlPassword, "$1***@");
    return std::regex_replace(s, kKvPassword, "$1***");
}

std::string quoteIdentifier(std::string_view name) {
    std::string out = "\"";
    for (char c : name) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

}  // namespace loom::db
