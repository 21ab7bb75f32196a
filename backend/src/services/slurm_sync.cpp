#include "loom/backend/slurm_sync.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "loom/backend/services.hpp"
#include "loom/db/database.hpp"
#include "loom/db/job_repo.hpp"
#include "loom/jobs/slurm.hpp"
#include "loom/provisioning/executor.hpp"

namespace loom::backend {

Result<nlohmann::json> syncSlurmJobs(db::Connection& conn, Services& services,
                                     std::string_view squeueJson) {
    auto jobs = jobs::parseSqueueJson(squeueJson);
    if (!jobs) return fail(jobs.error());
    auto r = db::syncJobs(conn, jobs::JobSource::Slurm, *jobs);
    if (!r) return fail(r.error());
    nlohmann::json out{{"source", "slurm"},
                       {"jobs", jobs->size()},
                       {"created", r->created},
                       {"updated", r->updated},
                       {"finished", r->finished}};
    // Every loomd's jobs view and straggler finder reload their list on this message.
    if (r->created || r->updated || r->finished) {
        auto msg = out;
        msg["type"] = "jobsSynced";
        services.publish("jobs", std::move(msg));
    }
    return out;
}

struct SlurmPoller::Impl {
    Services& services;
    SlurmSyncConfig cfg;
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping = false;
    std::thread thread;
    std::optional<db::Connection> conn;

    std::atomic<std::uint64_t> syncs{0}, failures{0};
    std::atomic<std::int64_t> jobs{-1}, lastSuccessMs{0};
    std::atomic<double> lastSeconds{0};
    std::string lastError;  // logged once until it changes

    Impl(Services& s, SlurmSyncConfig c) : services(s), cfg(std::move(c)) {}

    void failed(const std::string& what) {
        failures.fetch_add(1);
        if (what != lastError) spdlog::warn("slurm sync: {}", what);
        lastError = what;
    }

    void once() {
        const auto start = std::chrono::steady_clock::now();
        auto run = provisioning::runCommand(
            cfg.command, std::chrono::duration_cast<std::chrono::milliseconds>(cfg.timeout),
            std::size_t{256} << 20, provisioning::CommandStderr::Separate);
        if (run.timedOut)
            return failed("'" + cfg.command + "' did not finish within " +
                          std::to_string(cfg.timeout.count()) + " s");
        if (run.exitCode != 0) {
            auto err = run.errorOutput.empty() ? run.output : run.errorOutput;
            if (err.size() > 500) err.resize(500);
            while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
            return failed("'" + cfg.command + "' exited with " + std::to_string(run.exitCode) +
                          (err.empty() ? std::string() : ": " + err));
        }
        if (run.truncated) return failed("'" + cfg.command + "' printed more than 256 MiB");
        if (!conn) {
            auto c = db::Database::fromUrl(services.databaseUrl()).connect();
            if (!c) return failed(c.error().toString());
            conn.emplace(std::move(*c));
        }
        auto r = syncSlurmJobs(*conn, services, run.output);
        if (!r) {
            if (r.error().code != Errc::InvalidArgument) conn.reset();
            return failed("the output of '" + cfg.command + "': " + r.error().toString());
        }
        if (!lastError.empty()) spdlog::info("slurm sync: working again");
        lastError.clear();
        syncs.fetch_add(1);
        jobs.store((*r)["jobs"].get<std::int64_t>());
        lastSuccessMs.store(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
        lastSeconds.store(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if ((*r)["created"].get<int>() || (*r)["finished"].get<int>())
            spdlog::info("slurm sync: {} jobs, {} new, {} updated, {} ended", (*r)["jobs"].dump(),
                         (*r)["created"].dump(), (*r)["updated"].dump(), (*r)["finished"].dump());
    }

    void loop() {
        std::unique_lock lock(mutex);
        while (!stopping) {
            lock.unlock();
            // Only the leader asks Slurm: one poll per cluster of loomds.
            if (services.isLeader()) once();
            lock.lock();
            wake.wait_for(lock, cfg.interval, [&] { return stopping; });
        }
    }
};

SlurmPoller::SlurmPoller(Services& services, SlurmSyncConfig config)
    : impl_(std::make_unique<Impl>(services, std::move(config))) {}

SlurmPoller::~SlurmPoller() { stop(); }

void SlurmPoller::start() {
    if (!impl_->cfg.enabled() || impl_->thread.joinable()) return;
    spdlog::info("slurm sync: '{}' every {} s (leader only)", impl_->cfg.command,
                 impl_->cfg.interval.count());
    impl_->thread = std::thread([this] { impl_->loop(); });
}

void SlurmPoller::stop() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
    }
    impl_->wake.notify_all();
    if (impl_->thread.joinable()) impl_->thread.join();
}

void SlurmPoller::appendMetrics(std::string& out) const {
    if (!impl_->cfg.enabled()) return;
    auto line = [&](const char* name, const char* type, const char* help, const std::string& v) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
               name + " " + v + "\n";
    };
    line("loom_slurm_syncs_total", "counter", "Slurm job syncs done by this loomd (leader only).",
         std::to_string(impl_->syncs.load()));
    line("loom_slurm_sync_failures_total", "counter",
         "Slurm job syncs that failed (command error or timeout, bad output, database).",
         std::to_string(impl_->failures.load()));
    line("loom_slurm_jobs", "gauge", "Jobs in the last Slurm output synced (-1: none yet).",
         std::to_string(impl_->jobs.load()));
    line("loom_slurm_last_sync_timestamp_seconds", "gauge",
         "When the last Slurm sync succeeded (Unix time; 0: never).",
         std::to_string(impl_->lastSuccessMs.load() / 1000));
    line("loom_slurm_sync_seconds", "gauge",
         "Time of the last successful Slurm sync (command "
         "and database).",
         std::to_string(impl_->lastSeconds.load()));
}

}  // namespace loom::backend
