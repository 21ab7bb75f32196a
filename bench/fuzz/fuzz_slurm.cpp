// Slurm's job lists (POST /api/v1/jobs/sync/slurm, the Slurm poller): parseSqueueJson and
// parseScontrolShowJob on the same input. The bounds of issue 39 are checked on every output: a
// job names at most kMaxJobHosts hosts of at most 128 characters, all jobs together at most
// kMaxSlurmHosts (a 2 KB body stored 134 MB of names before).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "loom/jobs/hostlist.hpp"
#include "loom/jobs/slurm.hpp"

namespace {

void check(const loom::Result<std::vector<loom::jobs::Job>>& jobs) {
    if (!jobs) return;
    std::size_t hosts = 0, bytes = 0;
    for (const auto& j : *jobs) {
        if (j.hosts.size() > loom::jobs::kMaxJobHosts) std::abort();
        hosts += j.hosts.size();
        for (const auto& h : j.hosts) {
            if (h.empty() || h.size() > loom::jobs::kMaxHostNameChars) std::abort();
            bytes += h.size();
        }
    }
    if (hosts > loom::jobs::kMaxSlurmHosts || bytes > loom::jobs::kMaxSlurmHostBytes) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    check(loom::jobs::parseSqueueJson(text));
    check(loom::jobs::parseScontrolShowJob(text));
    return 0;
}
