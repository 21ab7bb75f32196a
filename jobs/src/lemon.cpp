#include "loom/jobs/lemon.hpp"

#include <algorithm>
#include <map>

#include "loom/inventory/natural_order.hpp"

namespace loom::jobs {

namespace {

bool isGpuCause(std::string_view c) {
    return c == "thermal_throttle" || c == "power_brake" || c == "hw_slowdown" ||
           c == "low_sm_clock" || c == "ecc_pressure" || c == "xid";
}
bool isHostCause(std::string_view c) {
    return c == "host_contention" || c == "host_slow" || c == "slow_nic";
}

}  // namespace

std::vector<LemonStrike> lemonStrikes(const std::string& job, const StragglerSuspect& suspect,
                                      const std::string& host, std::int64_t atMs) {
    std::vector<LemonStrike> out;
    if (host.empty() || job.empty()) return out;
    if (isGpuCause(suspect.cause) && !suspect.gpu.empty())
        out.push_back({suspect.gpu, "gpu", host, job, suspect.cause, atMs});
    if (isGpuCause(suspect.cause) || isHostCause(suspect.cause))
        out.push_back({host, "host", host, job, suspect.cause, atMs});
    return out;
}

std::vector<LemonStrike> failureStrikes(const std::string& job, std::string_view kind,
                                        std::string_view severity, const std::string& gpu,
                                        const std::string& host, std::int64_t atMs) {
    std::vector<LemonStrike> out;
    if (host.empty() || gpu.empty() || job.empty()) return out;
    // XIDs 13/31/43 and friends are the application's; the hub raises those as warnings.
    // A GPU gone from its host's page (gpu_missing) fell off the bus as an XID 79 does.
    const bool fails = (kind == "gpu_xid" && severity == "critical") || kind == "gpu_ecc_dbe" ||
                       kind == "gpu_row_remap_failure" || kind == "gpu_missing";
    if (!fails) return out;
    out.push_back({gpu, "gpu", host, job, std::string(kind), atMs});
    out.push_back({host, "host", host, job, std::string(kind), atMs});
    return out;
}

std::vector<Lemon> countLemons(const std::vector<LemonStrike>& strikes, std::int64_t nowMs,
                               int threshold, std::int64_t windowMs) {
    // entity -> job -> its newest strike in the window
    std::map<std::string, std::map<std::string, const LemonStrike*>> by;
    for (const auto& s : strikes) {
        if (s.atMs <= nowMs - windowMs || s.atMs > nowMs + 60'000) continue;
        auto& slot = by[s.entity][s.job];
        if (!slot || slot->atMs < s.atMs) slot = &s;
    }
    std::vector<Lemon> out;
    out.reserve(by.size());
    for (const auto& [entity, jobs] : by) {
        Lemon l;
        l.entity = entity;
        std::vector<const LemonStrike*> list;
        for (const auto& [job, s] : jobs) list.push_back(s);
        std::sort(list.begin(), list.end(), [](auto a, auto b) {
            return a->atMs != b->atMs ? a->atMs > b->atMs : a->job < b->job;
        });
        l.kind = list.front()->kind;
        l.host = list.front()->host;
        l.lastMs = list.front()->atMs;
        l.jobs = static_cast<int>(list.size());
        for (auto s : list) l.list.push_back(s->job + " (" + s->cause + ")");
        l.lemon = l.jobs >= threshold;
        out.push_back(std::move(l));
    }
    std::sort(out.begin(), out.end(), [](const Lemon& a, const Lemon& b) {
        if (a.lemon != b.lemon) return a.lemon;
        if (a.jobs != b.jobs) return a.jobs > b.jobs;
        return loom::naturalLess(a.entity, b.entity);
    });
    return out;
}

std::string lemonMessage(const Lemon& l, std::int64_t windowMs) {
    const auto days = windowMs / (24 * 3600 * 1000);
    std::string window = days >= 1 ? std::to_string(days) + (days == 1 ? " day" : " days")
                                   : std::to_string(windowMs / 1000) + " s";
    std::string m = l.entity + (l.lemon ? " is a lemon" : "") + ": the suspect or a failure in " +
                    std::to_string(l.jobs) + (l.jobs == 1 ? " job" : " jobs") + " in " + window;
    for (std::size_t i = 0; i < l.list.size() && i < 5; ++i) m += (i ? ", " : ": ") + l.list[i];
    if (l.list.size() > 5) m += ", ...";
    return m;
}

}  // namespace loom::jobs
