// `kind: Job` documents (PUT /api/v1/jobs/<name>, POST /api/v1/jobs): parseJobDocument with its
// YAML shape limits and bounded hostlist expansion, then the stored form's hostlist compression.
// The bound checked here is what issue 39 asked for: whatever the document, the hosts of a parsed
// job are at most kMaxJobHosts names of at most 128 characters (a 16 KB document expanded to
// 1 GB before).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "loom/jobs/hostlist.hpp"
#include "loom/jobs/job.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto job = loom::jobs::parseJobDocument(text);
    if (!job) return 0;
    if (job->hosts.empty() || job->hosts.size() > loom::jobs::kMaxJobHosts) std::abort();
    for (const auto& h : job->hosts)
        if (h.empty() || h.size() > loom::jobs::kMaxHostNameChars) std::abort();
    // What the db stores beside the hosts (the nodelist) must name the same hosts again.
    const auto nodelist = loom::jobs::formatHostlist(job->hosts);
    auto back = loom::jobs::expandHostlist(nodelist);
    if (!back || loom::jobs::normalizedHosts(std::move(*back)) != job->hosts) std::abort();
    return 0;
}
