// Apply benchmark: on a fresh embedded PostgreSQL (fsync on, as users run it) measures
//   expand   - load + validate + expand the spec
//   first    - first apply into an empty database (load stored, plan, apply), and end to end
//   noop     - re-apply of the same spec: spec + content digests compared with the stored
//                 ones (db 0013); nothing loaded, planned or written
//   noop_load_and_plan - the same re-apply without the digests (spec + load + plan)
//   one_rack - apply after changing one rack (its model and its hosts' model)
//   first_log_every_create - first apply with one change_log row per created entity (a
//                 second database; the default logs summaries only above 10,000 creates)
//   raw_copy - the reference of issue 14: the rows the first apply stored, COPYed again (text,
//                 one transaction, commit with fsync) into tables with the same columns and no
//                 constraint or index (CREATE TABLE raw_x (LIKE x)); first/noop are reported
//                 as ratios to it
//   name_indexes - the name trigram indexes every caller of applyPlan builds after its commit
//   references - the like-for-like reference (the same rows into tables built to end as the
//                 real ones: keys, indexes, foreign keys added after the COPY; GINs apart) and
//                 the first apply's ratios to both references, without and with name_indexes
// and the peak RSS of this process. One JSON object per line on stdout.
//
// Per first-apply stage it prints wall, client CPU and backend CPU; for the first apply and the
// raw COPY the CPU of the whole server (WAL writer, checkpointer included) and the WAL written.
//
//   loom_bench_apply [SPEC] [--keep DIR] [--no-logall] [--first-only]
//     default SPEC: configs/clusters/meta-24k-roce.yaml; --first-only: expand, first apply and
//     the raw COPY only (for profiling)
#include "loom/db/embedded_postgres.hpp"
#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/db/migrations.hpp"
#include "loom/db/native.hpp"
#include "loom/inventory/digest.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/inventory/spec.hpp"

#include "lib/measure.hpp"

#include <pqxx/tablereader>
#include <pqxx/tablewriter>

#include <unistd.h>

#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <string>

namespace {

using loom::bench::Clock;
using loom::bench::cpuMs;
using loom::bench::msSince;
using loom::bench::peakRssMb;

[[noreturn]] void die(const std::string& what, const loom::Error& e) {
    std::cerr << "apply_bench: " << what << ": " << e.toString() << "\n";
    std::exit(1);
}

// CPU time (user + system) of a PostgreSQL backend process, from /proc.
double backendCpuMs(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream fields(stat.substr(close + 2));
    std::string f;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i)
        if (i == 14 || i == 15) ticks += std::stod(f);
    return ticks * 1000.0 / sysconf(_SC_CLK_TCK);
}

// CPU time of the whole PostgreSQL server of `pgdata` (postmaster and the processes it
// runs now: backends, checkpointer, WAL writer...): WAL flushing and checkpoints are part of
// what a write costs and do not show in the backend's own CPU.
double serverCpuMs(const std::filesystem::path& pgdata) {
    std::ifstream pidFile(pgdata / "postmaster.pid");
    int postmaster = 0;
    if (!(pidFile >> postmaster)) return 0;
    double total = backendCpuMs(postmaster);
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream fields(stat.substr(close + 2));
        std::string state;
        int ppid = 0;
        fields >> state >> ppid;
        if (ppid == postmaster) total += backendCpuMs(std::stoi(name));
    }
    return total;
}

// WAL written by the server so far (bytes since 0/0).
double walBytes(loom::db::Connection& conn) {
    pqxx::nontransaction tx(loom::db::native(conn));
    return tx.exec1("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")[0].as<double>();
}

struct Step {
    double planMs = 0, applyMs = 0, serverCpuMs = 0;
    bool digestShortcut = false;  // the stored digests proved the spec unchanged
    loom::db::ApplyResult result;
};

// Load what is stored, plan, apply: what `loomd apply` does after reading the spec.
Step applyOnce(loom::db::Connection& conn, const loom::inventory::Inventory& desired,
               std::size_t maxCreateLogRows = 10'000, bool useDigests = true) {
    Step s;
    const double serverCpu0 = backendCpuMs(conn.backendPid());
    auto t0 = Clock::now();
    const auto digests = loom::inventory::contentDigests(desired);
    if (useDigests) {
        auto same = loom::db::storedDigestsMatch(conn, digests, false);
        if (!same) die("digests", same.error());
        if (*same) {
            s.digestShortcut = true;
            s.planMs = msSince(t0);
            s.serverCpuMs = backendCpuMs(conn.backendPid()) - serverCpu0;
            return s;
        }
    }
    auto snap = loom::db::loadSnapshot(conn);
    if (!snap) die("load", snap.error());
    auto p = loom::inventory::plan(desired, snap->inventory);
    s.planMs = msSince(t0);
    auto t1 = Clock::now();
    // Per stage (a stage ends when the next begins): wall, this process's CPU and the
    // PostgreSQL backend's CPU, printed as JSON objects; wall alone is unreadable under load.
    std::string stages, stageCpu, current;
    auto stageStart = Clock::now();
    double stageClient0 = cpuMs(), stageServer0 = backendCpuMs(conn.backendPid());
    const int backend = conn.backendPid();
    auto progress = [&](std::string_view stage, std::size_t, std::size_t) {
        if (stage == current) return;
        if (!current.empty()) {
            const double client = cpuMs(), server = backendCpuMs(backend);
            char buf[192];
            std::snprintf(buf, sizeof buf, "%s\"%s\":%.1f", stages.empty() ? "" : ",",
                          current.c_str(), msSince(stageStart));
            stages += buf;
            std::snprintf(buf, sizeof buf, "%s\"%s\":[%.0f,%.0f]", stageCpu.empty() ? "" : ",",
                          current.c_str(), client - stageClient0, server - stageServer0);
            stageCpu += buf;
            stageClient0 = client;
            stageServer0 = server;
        }
        current = stage;
        stageStart = Clock::now();
    };
    auto r = loom::db::applyPlan(conn, p, desired,
                                 {.actor = "bench", .expectedGeneration = snap->generation,
                                  .maxCreateLogRows = maxCreateLogRows, .progress = progress,
                                  .digests = useDigests ? &digests : nullptr});
    progress("end", 0, 0);
    if (!stages.empty())
        std::printf("{\"stages_ms\":{%s},\"stages_cpu_ms_client_server\":{%s}}\n",
                    stages.c_str(), stageCpu.c_str());
    if (!r) die("apply", r.error());
    s.result = *r;
    s.applyMs = msSince(t1);
    s.serverCpuMs = backendCpuMs(conn.backendPid()) - serverCpu0;
    return s;
}

// The raw COPY reference: every inventory row as stored, read out with COPY TO STDOUT, then
// timed going back in with COPY FROM STDIN into unconstrained copies of the tables.
struct RawCopy {
    double wallMs = 0, serverCpuMs = 0, clientCpuMs = 0, walMb = 0;  // the timed COPY only
    std::size_t rows = 0;
    std::vector<std::vector<std::string>> data;  // the COPY lines, per table of kTables
};
const char* const kTables[] = {"sites", "zones",    "rows",  "racks", "hosts",        "gpus",
                               "nics",  "switches", "ports", "links", "storage_nodes"};
// Waits until the server is quiet: no autovacuum worker (the tables a step loaded get vacuumed
// and analysed after it) and a checkpoint done. A step measured by the whole server's CPU
// otherwise pays the previous step's background work: the raw COPY, timed after the first apply
// and the name indexes, was charged their autovacuum and checkpoint, which made the first
// apply's ratio to it look 0.5 better or worse depending on when they ran (issue 37).
void settle(loom::db::Connection& conn) {
    pqxx::connection& c = loom::db::native(conn);
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    for (;;) {
        pqxx::nontransaction tx(c);
        const auto busy = tx.exec("SELECT count(*) FROM pg_stat_activity "
                                  "WHERE backend_type = 'autovacuum worker'")[0][0]
                              .as<int>();
        if (busy == 0 || Clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    pqxx::nontransaction tx(c);
    tx.exec("CHECKPOINT");
}

RawCopy rawCopy(loom::db::Connection& conn, const std::filesystem::path& pgdata) {
    RawCopy out;
    std::size_t& rows = out.rows;
    pqxx::connection& c = loom::db::native(conn);
    auto& data = out.data;
    rows = 0;
    {
        pqxx::work tx(c);
        for (const char* t : kTables) {
            auto& lines = data.emplace_back();
            pqxx::tablereader r(tx, t);
            std::string line;
            while (r.get_raw_line(line)) lines.push_back(line);
            r.complete();
            rows += lines.size();
        }
        tx.commit();
    }
    settle(conn);
    const double wal0 = walBytes(conn), cpu0 = serverCpuMs(pgdata), client0 = cpuMs();
    auto t0 = Clock::now();
    {
        pqxx::work tx(c);
        for (std::size_t i = 0; i < std::size(kTables); ++i) {
            std::string raw = std::string("raw_") + kTables[i];
            tx.exec("CREATE TABLE " + raw + " (LIKE " + kTables[i] + ")");
            pqxx::tablewriter w(tx, raw);
            for (const auto& line : data[i]) w.write_raw_line(line);
            w.complete();
        }
        tx.commit();
    }
    out.wallMs = msSince(t0);
    out.serverCpuMs = serverCpuMs(pgdata) - cpu0;
    out.clientCpuMs = cpuMs() - client0;
    out.walMb = (walBytes(conn) - wal0) / 1048576.0;
    return out;
}

// The like-for-like reference (step 4 of issue 14's apply work): the same rows into tables that
// end as the real ones do, loaded the fastest way a loader knows: new tables in schema `ref`
// (the real columns, defaults and CHECK constraints), COPY, then each table's primary key and
// unique constraints, its plain indexes (sorted builds) and its foreign keys (one validating
// join each) added after the load, one transaction, commit. The trigram GINs (built after the
// apply's commit) are timed apart, so both ratios can be read.
struct LikeForLike {
    double wallMs = 0, serverCpuMs = 0, clientCpuMs = 0;  // everything but the GINs
    double ginWallMs = 0, ginServerCpuMs = 0;             // the trigram GINs alone
    double copyServerMs = 0, keysServerMs = 0, indexServerMs = 0, fkServerMs = 0;  // backend
};
LikeForLike likeForLike(loom::db::Connection& conn, const std::filesystem::path& pgdata,
                        const RawCopy& raw) {
    LikeForLike out;
    pqxx::connection& c = loom::db::native(conn);
    struct Def {
        std::string table, sql;
    };
    std::vector<Def> keys, indexes, gins, fks;
    {
        pqxx::work tx(c);
        for (const char* t : kTables) {
            const std::string rt = std::string("ref.") + t;
            for (const auto& row : tx.exec_params(
                     "SELECT conname, pg_get_constraintdef(oid), contype FROM pg_constraint "
                     "WHERE conrelid = $1::regclass AND contype IN ('p', 'u', 'f') "
                     "ORDER BY contype, conname",
                     std::string(t))) {
                std::string sql = "ALTER TABLE " + rt + " ADD CONSTRAINT " +
                                  tx.quote_name(row[0].c_str()) + " " + row[1].c_str();
                (row[2].c_str()[0] == 'f' ? fks : keys).push_back({t, sql});
            }
            for (const auto& row : tx.exec_params(
                     "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i "
                     "WHERE i.indrelid = $1::regclass AND NOT i.indisunique AND NOT "
                     "i.indisprimary AND NOT EXISTS (SELECT 1 FROM pg_constraint c "
                     "WHERE c.conindid = i.indexrelid) ORDER BY 1",
                     std::string(t))) {
                std::string sql = row[0].c_str();
                auto on = sql.find(" ON public.");
                if (on != std::string::npos) sql.replace(on, 11, " ON ref.");
                (sql.find("USING gin") != std::string::npos ? gins : indexes).push_back({t, sql});
            }
        }
    }
    settle(conn);
    const int backend = conn.backendPid();
    const double cpu0 = serverCpuMs(pgdata), client0 = cpuMs();
    auto t0 = Clock::now();
    double stage0 = backendCpuMs(backend);
    auto stage = [&](double& into) {
        const double now = backendCpuMs(backend);
        into += now - stage0;
        stage0 = now;
    };
    {
        pqxx::work tx(c);
        tx.exec("CREATE SCHEMA ref");
        // REFERENCES x(id) in the foreign keys' text names ref.x first.
        tx.exec("SET LOCAL search_path = ref, public");
        tx.exec("SET LOCAL maintenance_work_mem = '256MB'");
        tx.exec("SET LOCAL work_mem = '64MB'");
        for (std::size_t i = 0; i < std::size(kTables); ++i) {
            const std::string rt = std::string("ref.") + kTables[i];
            tx.exec("CREATE TABLE " + rt + " (LIKE public." + kTables[i] +
                    " INCLUDING DEFAULTS INCLUDING CONSTRAINTS)");
            pqxx::tablewriter w(tx, rt);
            for (const auto& line : raw.data[i]) w.write_raw_line(line);
            w.complete();
        }
        stage(out.copyServerMs);
        for (const auto& k : keys) tx.exec(k.sql);
        stage(out.keysServerMs);
        for (const auto& k : indexes) tx.exec(k.sql);
        stage(out.indexServerMs);
        for (const auto& k : fks) tx.exec(k.sql);
        stage(out.fkServerMs);
        tx.commit();
    }
    out.wallMs = msSince(t0);
    out.serverCpuMs = serverCpuMs(pgdata) - cpu0;
    out.clientCpuMs = cpuMs() - client0;
    const double gin0 = serverCpuMs(pgdata);
    t0 = Clock::now();
    {
        pqxx::work tx(c);
        tx.exec("SET LOCAL search_path = ref, public");
        for (const auto& k : gins) tx.exec(k.sql);
        tx.commit();
    }
    out.ginWallMs = msSince(t0);
    out.ginServerCpuMs = serverCpuMs(pgdata) - gin0;
    pqxx::work tx(c);
    tx.exec("DROP SCHEMA ref CASCADE");
    tx.commit();
    return out;
}

void print(const char* step, double wallMs, double cpu, const Step* s, std::size_t entities) {
    std::printf("{\"step\":\"%s\",\"wall_ms\":%.1f,\"cpu_ms\":%.1f", step, wallMs, cpu);
    if (s)
        std::printf(",\"server_cpu_ms\":%.1f,\"load_plan_ms\":%.1f,\"apply_ms\":%.1f,"
                    "\"created\":%zu,\"updated\":%zu,\"deleted\":%zu,\"digest_shortcut\":%s",
                    s->serverCpuMs, s->planMs, s->applyMs, s->result.created, s->result.updated,
                    s->result.deleted, s->digestShortcut ? "true" : "false");
    std::printf(",\"entities\":%zu,\"peak_rss_mb\":%ld}\n", entities, peakRssMb());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    std::string spec = std::string(LOOM_SOURCE_DIR) + "/configs/clusters/meta-24k-roce.yaml";
    std::string keep;
    bool logAll = true;  // --no-logall: skip the first_log_every_create step (big specs)
    bool firstOnly = false;  // --first-only: the first apply and the raw COPY, nothing else
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--keep" && i + 1 < argc) keep = argv[++i];
        else if (a == "--no-logall") logAll = false;
        else if (a == "--first-only") firstOnly = true, logAll = false;
        else spec = a;
    }
    namespace fs = std::filesystem;
    fs::path dir = keep;
    if (dir.empty()) {
        char tmpl[] = "/tmp/loom-bench-XXXXXX";
        if (!mkdtemp(tmpl)) return 1;
        dir = tmpl;
    }
    auto pg = loom::db::EmbeddedPostgres::start({.stateDir = dir, .fsync = true});
    if (!pg) die("start", pg.error());
    auto conn = (*pg)->database().connect();
    if (!conn) die("connect", conn.error());
    if (auto m = loom::db::migrate(*conn); !m) die("migrate", m.error());

    auto finish = [&] {
        std::printf("{\"step\":\"peak\",\"peak_rss_mb\":%ld,\"load\":\"%s\"}\n", peakRssMb(),
                    loom::bench::loadAverage().c_str());
        if (keep.empty()) {
            conn = loom::fail(loom::Error::internal("closed"));
            (void)(*pg)->stop();
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
        return 0;
    };
    std::printf("{\"step\":\"start\",\"load\":\"%s\"}\n", loom::bench::loadAverage().c_str());

    // expand + validate
    auto t = Clock::now();
    double c = cpuMs();
    auto desired = loom::inventory::loadClusterSpecFile(spec);
    if (!desired) die(spec, desired.error());
    const std::size_t n = desired->totalEntities();
    const double expandCpu = cpuMs() - c;
    print("expand", msSince(t), expandCpu, nullptr, n);

    // first apply (end to end = spec already expanded above + load + plan + apply)
    double expandMs = msSince(t);
    const auto pgdata = dir / "pgdata";
    settle(*conn);  // the migrations' writes
    double wal0 = walBytes(*conn), all0 = serverCpuMs(pgdata);
    t = Clock::now();
    c = cpuMs();
    Step first = applyOnce(*conn, *desired);
    double firstMs = msSince(t);
    print("first", firstMs, cpuMs() - c, &first, n);
    const double firstCpu = expandCpu + (cpuMs() - c) + (serverCpuMs(pgdata) - all0);
    std::printf("{\"step\":\"first_end_to_end\",\"wall_ms\":%.1f,\"all_server_cpu_ms\":%.1f,"
                "\"cpu_ms_client_and_server\":%.1f,\"wal_mb\":%.1f,\"load\":\"%s\"}\n",
                expandMs + firstMs, serverCpuMs(pgdata) - all0, firstCpu,
                (walBytes(*conn) - wal0) / 1048576.0, loom::bench::loadAverage().c_str());
    std::fflush(stdout);

    // The name trigram indexes: every caller of applyPlan (loomd apply, POST /apply) builds them
    // after the apply's commit and before it answers, so they are part of the user's wait.
    const double names0 = serverCpuMs(pgdata), namesClient0 = cpuMs();
    t = Clock::now();
    if (auto built = loom::db::buildNameIndexes(*conn); !built) die("name indexes", built.error());
    const double namesMs = msSince(t);
    const double namesCpu = (serverCpuMs(pgdata) - names0) + (cpuMs() - namesClient0);
    std::printf("{\"step\":\"name_indexes\",\"wall_ms\":%.1f,\"cpu_ms_client_and_server\":%.1f,"
                "\"load\":\"%s\"}\n",
                namesMs, namesCpu, loom::bench::loadAverage().c_str());
    std::fflush(stdout);

    // Both references against the first apply, without and with the name indexes.
    auto references = [&](const RawCopy& raw) {
        const LikeForLike ll = likeForLike(*conn, pgdata, raw);
        const double firstWall = expandMs + firstMs, rawCpu = raw.serverCpuMs + raw.clientCpuMs;
        const double llCpu = ll.serverCpuMs + ll.clientCpuMs;
        std::printf(
            "{\"step\":\"references\",\"first_wall_ms\":%.1f,\"first_cpu_ms\":%.1f,"
            "\"name_indexes_wall_ms\":%.1f,\"name_indexes_cpu_ms\":%.1f,"
            "\"raw_wall_ms\":%.1f,\"raw_cpu_ms\":%.1f,\"like_wall_ms\":%.1f,\"like_cpu_ms\":%.1f,"
            "\"like_gin_wall_ms\":%.1f,\"like_gin_cpu_ms\":%.1f,"
            "\"like_backend_cpu_ms_copy_keys_index_fk\":[%.0f,%.0f,%.0f,%.0f],"
            "\"vs_raw\":{\"cpu\":%.2f,\"wall\":%.2f,\"cpu_with_name_indexes\":%.2f,"
            "\"wall_with_name_indexes\":%.2f},"
            "\"vs_like_for_like\":{\"cpu\":%.2f,\"wall\":%.2f,\"cpu_with_name_indexes\":%.2f,"
            "\"wall_with_name_indexes\":%.2f},\"load\":\"%s\"}\n",
            firstWall, firstCpu, namesMs, namesCpu, raw.wallMs, rawCpu, ll.wallMs, llCpu,
            ll.ginWallMs, ll.ginServerCpuMs, ll.copyServerMs, ll.keysServerMs, ll.indexServerMs,
            ll.fkServerMs, firstCpu / rawCpu, firstWall / raw.wallMs, (firstCpu + namesCpu) / rawCpu,
            (firstWall + namesMs) / raw.wallMs, firstCpu / llCpu, firstWall / ll.wallMs,
            (firstCpu + namesCpu) / (llCpu + ll.ginServerCpuMs),
            (firstWall + namesMs) / (ll.wallMs + ll.ginWallMs), loom::bench::loadAverage().c_str());
        std::fflush(stdout);
    };
    if (firstOnly) {
        const RawCopy raw = rawCopy(*conn, pgdata);
        std::printf("{\"step\":\"raw_copy\",\"wall_ms\":%.1f,\"rows\":%zu,\"first_ratio\":%.2f,"
                    "\"all_server_cpu_ms\":%.1f,\"client_cpu_ms\":%.1f,\"first_cpu_ratio\":%.2f,"
                    "\"wal_mb\":%.1f,\"load\":\"%s\"}\n",
                    raw.wallMs, raw.rows, (expandMs + firstMs) / raw.wallMs, raw.serverCpuMs,
                    raw.clientCpuMs, firstCpu / (raw.serverCpuMs + raw.clientCpuMs), raw.walMb,
                    loom::bench::loadAverage().c_str());
        references(raw);
        return finish();
    }

    // no-op: spec again + load + plan (nothing written)
    t = Clock::now();
    c = cpuMs();
    auto again = loom::inventory::loadClusterSpecFile(spec);
    if (!again) die(spec, again.error());
    Step noop = applyOnce(*conn, *again);
    const double noopMs = msSince(t);
    const double noopCpu = (cpuMs() - c) + noop.serverCpuMs;
    print("noop", noopMs, cpuMs() - c, &noop, n);

    // the same no-op the long way (load + plan, digests not consulted), for comparison
    t = Clock::now();
    c = cpuMs();
    auto again2 = loom::inventory::loadClusterSpecFile(spec);
    if (!again2) die(spec, again2.error());
    Step noopFull = applyOnce(*conn, *again2, 10'000, false);
    const double noopFullMs = msSince(t);
    print("noop_load_and_plan", noopFullMs, cpuMs() - c, &noopFull, n);
    again2 = loom::fail(loom::Error::internal("freed"));

    // one rack changed: the rack's model and its hosts' model
    auto changed = std::move(*again);
    const std::string rack = changed.racks[changed.racks.size() / 2].name.str();
    auto& changedRack = changed.racks[changed.racks.size() / 2];
    changedRack.model = changedRack.model + "-v2";
    for (auto& h : changed.hosts)
        if (h.rack == rack) h.model = h.model + "-v2";
    t = Clock::now();
    c = cpuMs();
    Step one = applyOnce(*conn, changed);
    print("one_rack", msSince(t), cpuMs() - c, &one, n);

    // the raw COPY reference, same rows, same server, same run
    const RawCopy raw = rawCopy(*conn, pgdata);
    const double rawMs = raw.wallMs;
    std::printf("{\"step\":\"raw_copy\",\"wall_ms\":%.1f,\"rows\":%zu,\"first_ratio\":%.2f,"
                "\"noop_ratio\":%.2f,\"noop_load_and_plan_ratio\":%.2f,"
                "\"all_server_cpu_ms\":%.1f,\"client_cpu_ms\":%.1f,\"first_cpu_ratio\":%.2f,"
                "\"noop_cpu_ratio\":%.2f,\"wal_mb\":%.1f,\"load\":\"%s\"}\n",
                rawMs, raw.rows, (expandMs + firstMs) / rawMs, noopMs / rawMs, noopFullMs / rawMs,
                raw.serverCpuMs, raw.clientCpuMs, firstCpu / (raw.serverCpuMs + raw.clientCpuMs),
                noopCpu / (raw.serverCpuMs + raw.clientCpuMs), raw.walMb,
                loom::bench::loadAverage().c_str());
    std::fflush(stdout);
    references(raw);

    // first apply without per-entity change_log rows, into a second database
    loom::Result<loom::db::Connection> conn2 = loom::fail(loom::Error::internal("not opened"));
    if (logAll) {
        if (auto r = conn->exec("CREATE DATABASE loom_logall"); !r) die("createdb", r.error());
        conn2 = (*pg)->database().withDatabase("loom_logall").connect();
        if (!conn2) die("connect", conn2.error());
        if (auto m = loom::db::migrate(*conn2); !m) die("migrate", m.error());
        t = Clock::now();
        c = cpuMs();
        Step nolog = applyOnce(*conn2, *desired, SIZE_MAX);
        print("first_log_every_create", msSince(t), cpuMs() - c, &nolog, n);
    }

    conn2 = loom::fail(loom::Error::internal("closed"));
    return finish();
}
