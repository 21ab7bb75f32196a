#include "loom/jobs/job.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <unordered_set>

#include "loom/inventory/input_guard.hpp"
#include "loom/inventory/yaml_reader.hpp"
#include "loom/jobs/hostlist.hpp"

namespace loom::jobs {

namespace {
constexpr std::array<std::string_view, 4> kStates{"pending", "running", "completed", "failed"};
constexpr std::array<std::string_view, 3> kSources{"apply", "slurm", "simulator"};
}  // namespace

std::string_view jobStateName(JobState s) { return kStates[static_cast<std::size_t>(s)]; }
std::optional<JobState> parseJobState(std::string_view s) {
    for (std::size_t i = 0; i < kStates.size(); ++i)
        if (kStates[i] == s) return static_cast<JobState>(i);
    return std::nullopt;
}
std::string_view jobSourceName(JobSource s) { return kSources[static_cast<std::size_t>(s)]; }
std::optional<JobSource> parseJobSource(std::string_view s) {
    for (std::size_t i = 0; i < kSources.size(); ++i)
        if (kSources[i] == s) return static_cast<JobSource>(i);
    return std::nullopt;
}

Result<void> checkJobName(std::string_view name, std::string path) {
    try {
        inventory::yaml::MapReader::checkName(std::string(name), path, 0);
    } catch (const inventory::yaml::Failure& f) {
        return fail(f.error);
    }
    return {};
}

std::vector<std::string> normalizedHosts(std::vector<std::string> hosts) {
    return naturallySortedUnique(std::move(hosts));
}

std::vector<HostOverlap> hostOverlaps(std::string_view self, const std::vector<std::string>& hosts,
                                      const std::vector<Job>& others) {
    std::vector<HostOverlap> out;
    std::unordered_set<std::string_view> mine(hosts.begin(), hosts.end());
    for (const auto& o : others) {
        if (o.name == self) continue;
        std::unordered_set<std::string_view> theirs;
        for (const auto& h : o.hosts)
            if (mine.contains(h)) theirs.insert(h);
        if (theirs.empty()) continue;
        HostOverlap ov{o.name, {}};
        for (const auto& h : hosts)
            if (theirs.contains(h)) ov.hosts.push_back(h);
        out.push_back(std::move(ov));
    }
    return out;
}

Error overlapError(const Job& job, const std::vector<HostOverlap>& overlaps) {
    std::string msg = "job '" + job.name + "' would run on ";
    if (overlaps.empty()) return Error{Errc::Conflict, msg + "no shared host", "spec.hosts"};
    const auto& first = overlaps.front();
    msg += std::to_string(first.hosts.size()) + (first.hosts.size() == 1 ? " host" : " hosts") +
           " of running job '" + first.job + "' (" + formatHostlist(first.hosts) + ")";
    if (overlaps.size() > 1)
        msg += " and of " + std::to_string(overlaps.size() - 1) + " other running job" +
               (overlaps.size() > 2 ? "s" : "") + " ('" + overlaps[1].job + "'" +
               (overlaps.size() > 2 ? ", ..." : "") + ")";
    msg += "; set spec.sharesHosts: true if it is meant to share them";
    return Error{Errc::Conflict, std::move(msg), "spec.hosts"};
}

Result<Job> parseJobDocument(std::string_view text, JobSource source) {
    namespace y = inventory::yaml;
    if (auto shape = checkYamlShape(text, {.maxNodes = 100'000, .maxDepth = 16}); !shape)
        return fail(std::move(shape.error()));
    try {
        YAML::Node root = YAML::Load(std::string(text));
        if (!root.IsDefined() || root.IsNull()) return fail(Error::invalid("empty document"));
        y::MapReader doc(root, "", {"apiVersion", "kind", "metadata", "spec"});
        if (auto v = doc.requireString("apiVersion"); v != "loom/v1")
            y::failAt("must be loom/v1, not \"" + v + "\"", "apiVersion",
                      y::lineOf(doc.get("apiVersion")));
        if (auto k = doc.requireString("kind"); k != "Job")
            y::failAt("must be Job, not \"" + k + "\"", "kind", y::lineOf(doc.get("kind")));
        y::MapReader meta(doc.require("metadata"), "metadata", {"name", "labels"});
        Job job;
        job.source = source;
        job.name = meta.name("name");
        job.labels = meta.labels("labels");
        y::MapReader spec(doc.require("spec"), "spec",
                          {"owner", "hosts", "pattern", "tensorParallel", "state", "sharesHosts"});
        job.owner = spec.string("owner");
        if (job.owner.size() > 128)
            y::failAt("must be at most 128 characters", "spec.owner", spec.keyLine("owner"));
        YAML::Node hosts = spec.require("hosts");
        if (hosts.IsScalar()) {
            // A job's hosts: the job limit, and names as every stored name (128 characters).
            auto expanded = expandHostlist(hosts.Scalar(), {.maxHosts = kMaxJobHosts});
            if (!expanded) {
                Error e = std::move(expanded.error());
                e.message = "hostlist \"" + hosts.Scalar().substr(0, 80) + "\": " + e.message;
                e.path = "spec.hosts";
                e.line = y::lineOf(hosts);
                return fail(std::move(e));
            }
            job.hosts = std::move(*expanded);
        } else {
            y::forEachItem(hosts, "spec.hosts", kMaxJobHosts,
                           [&](const YAML::Node& h, const std::string& p) {
                               std::string s = y::MapReader::asString(h, p);
                               y::MapReader::checkName(s, p, y::lineOf(h));
                               job.hosts.push_back(std::move(s));
                           });
        }
        if (job.hosts.empty())
            y::failAt("must name at least one host", "spec.hosts", y::lineOf(hosts));
        if (job.hosts.size() > kMaxJobHosts)
            y::failAt("names " + std::to_string(job.hosts.size()) + " hosts, above the limit of " +
                          std::to_string(kMaxJobHosts),
                      "spec.hosts", y::lineOf(hosts));
        job.hosts = normalizedHosts(std::move(job.hosts));
        if (spec.has("pattern")) {
            auto p = spec.string("pattern");
            auto c = fabric::parseCollective(p);
            if (!c)
                y::failAt(
                    "unknown pattern \"" + p + "\"; expected allreduce, allgather or alltoall",
                    "spec.pattern", y::lineOf(spec.get("pattern")));
            job.pattern = *c;
        }
        job.tensorParallel = static_cast<int>(spec.integer("tensorParallel", 1, 1, kGpusPerHost));
        if (kGpusPerHost % job.tensorParallel != 0)
            y::failAt("must divide the " + std::to_string(kGpusPerHost) +
                          " GPUs of a host (1, 2, 4 or 8)",
                      "spec.tensorParallel", y::lineOf(spec.get("tensorParallel")));
        if (spec.has("state")) {
            auto s = spec.string("state");
            auto st = parseJobState(s);
            if (!st)
                y::failAt(
                    "unknown state \"" + s + "\"; expected pending, running, completed or failed",
                    "spec.state", y::lineOf(spec.get("state")));
            job.state = *st;
        }
        job.sharesHosts = spec.boolean("sharesHosts", false);
        return job;
    } catch (const y::Failure& f) {
        return fail(f.error);
    } catch (const YAML::Exception& e) {
        return fail(Error::invalid(e.msg, "", e.mark.line >= 0 ? e.mark.line + 1 : 0));
    }
}

}  // namespace loom::jobs
