#include "loom/backend/db_options.hpp"

#include "loom/db/migrations.hpp"

namespace loom::backend {

void addDbOptions(CLI::App& app, DbOptions& options) {
    app.add_option("--db", options.url,
                   "PostgreSQL URL (postgresql://user@host/db); default: an embedded server")
        ->envname("LOOM_DB");
    app.add_option("--state-dir", options.stateDir,
                   "state directory of the embedded PostgreSQL (default: $LOOM_STATE_DIR or "
                   "~/.local/state/loom)");
}

Result<OpenedDatabase> openDatabase(const DbOptions& options) {
    OpenedDatabase out;
    if (!options.url.empty()) {
        out.database = db::Database::fromUrl(options.url);
        out.description = out.database.redacted();
    } else {
        db::EmbeddedOptions eo;
        eo.stateDir = options.stateDir.empty() ? db::defaultStateDir()
                                               : std::filesystem::path(options.stateDir);
        eo.verbose = options.verbose;
        auto pg = db::EmbeddedPostgres::start(std::move(eo));
        if (!pg) return fail(pg.error());
        out.embedded = std::move(*pg);
        out.database = out.embedded->database();
        out.description = "embedded PostgreSQL in " + out.embedded->stateDir().string();
    }
    auto conn = out.database.connect();
    if (!conn) return fail(conn.error());
    auto m = db::migrate(*conn);
    if (!m) return fail(m.error());
    return out;
}

}  // namespace loom::backend
