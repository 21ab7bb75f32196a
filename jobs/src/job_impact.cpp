#include "loom/jobs/job_impact.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace loom::jobs {

namespace {

std::unordered_map<std::string_view, std::int32_t> hostIndex(const fabric::Topology& t) {
    std::unordered_map<std::string_view, std::int32_t> idx;
    idx.reserve(t.hostNames.size());
    for (std::size_t i = 0; i < t.hostNames.size(); ++i)
        idx.emplace(t.hostNames[i], static_cast<std::int32_t>(i));
    return idx;
}

void mapHosts(const std::unordered_map<std::string_view, std::int32_t>& idx, JobImpact& j) {
    j.hostIds.clear();
    j.unknownHosts.clear();
    for (const auto& h : j.hosts) {
        auto it = idx.find(h);
        if (it == idx.end())
            j.unknownHosts.push_back(h);
        else
            j.hostIds.push_back(it->second);
    }
}

std::string percent(double v) {
    // 62% rather than 62.4999%: what a person reads in an event list.
    auto r = std::round(v * 10) / 10;
    auto s = std::to_string(r);
    s.erase(s.find('.') + 2);
    if (s.ends_with(".0")) s.resize(s.size() - 2);
    return s + "%";
}

}  // namespace

std::string degradedMessage(const fabric::Topology& t, const JobImpact& j) {
    std::string m = "job " + j.name + " degraded to " + percent(j.busBw) + " busbw";
    if (j.downLinks.empty()) return m + " (no link it crossed is down)";
    m += j.downLinks.size() == 1 ? " by link " : " by links ";
    const std::size_t shown = std::min<std::size_t>(3, j.downLinks.size());
    for (std::size_t i = 0; i < shown; ++i) {
        auto l = j.downLinks[i];
        if (i) m += ", ";
        m += t.linkNames[l];
        m += ' ';
        switch (t.linkState[l]) {
            case fabric::LinkState::Up:
                m += "down (switch down)";
                break;
            case fabric::LinkState::NotInService:
                m += "not in service";
                break;
            default:
                m += fabric::linkStateName(t.linkState[l]);
        }
    }
    if (j.downLinks.size() > shown)
        m += " (+" + std::to_string(j.downLinks.size() - shown) + " more)";
    return m;
}

std::string recoveredMessage(const JobImpact& j) {
    return "job " + j.name + " recovered to " + percent(j.busBw) + " busbw";
}

bool JobImpactTracker::compute(RouterRef r, JobImpact& j) {
    ++recomputed_;
    const auto& t = r.topology();
    const double oldBw = j.busBw;
    const bool oldDegraded = j.degraded();
    auto oldLinks = std::move(j.links);
    auto oldDown = std::move(j.downLinks);
    j.links.clear();
    j.downLinks.clear();
    j.bottlenecks.clear();
    j.error.clear();
    j.unroutedFlows = 0;
    if (j.hostIds.empty()) {
        j.busBw = 0;
        j.error = "no host of the job is in the backend fabric";
    } else {
        auto res = r.impact(j.hostIds, j.pattern);
        if (!res) {
            j.busBw = 0;
            j.error = res.error().message;
        } else {
            j.busBw = res->busBwNormalized;
            j.unroutedFlows = res->unroutedFlows;
            j.links = std::move(res->linksCrossed);
            j.bottlenecks = std::move(res->bottlenecks);
        }
    }
    if (!j.links.empty()) {
        std::vector<std::int32_t> merged;
        merged.reserve(j.everCrossed.size() + j.links.size());
        std::set_union(j.everCrossed.begin(), j.everCrossed.end(), j.links.begin(), j.links.end(),
                       std::back_inserter(merged));
        j.everCrossed = std::move(merged);
    }
    for (auto l : j.everCrossed)
        if (!t.usable(l)) j.downLinks.push_back(l);
    // A job's NIC cables are crossed whatever their state: a NIC whose cable is down carries
    // nothing, so it never shows in the crossed set, but it is what cut the job.
    for (auto h : j.hostIds)
        for (int k = 0; k < t.hostNicCount[h]; ++k) {
            auto l = t.nicLink[t.hostFirstNic[h] + k];
            if (l != fabric::kNone && !t.usable(l) &&
                !std::binary_search(j.everCrossed.begin(), j.everCrossed.end(), l))
                j.downLinks.push_back(l);
        }
    std::sort(j.downLinks.begin(), j.downLinks.end());
    if (j.error.empty()) j.healthyBusBw = std::max(j.healthyBusBw, j.busBw);
    const bool changed = std::abs(oldBw - j.busBw) > 1e-9 || oldLinks != j.links ||
                         oldDown != j.downLinks || oldDegraded != j.degraded();
    if (changed) ++j.version;
    return changed;
}

JobChange JobImpactTracker::changeOf(RouterRef r, const JobImpact& j, bool wasDegraded) const {
    JobChange c{j.name};
    if (j.degraded() && !wasDegraded) {
        c.degradation = Degradation::Opened;
        c.message = degradedMessage(r.topology(), j);
    } else if (!j.degraded() && wasDegraded) {
        c.degradation = Degradation::Closed;
        c.message = recoveredMessage(j);
    }
    return c;
}

std::vector<JobChange> JobImpactTracker::setJobs(RouterRef r, std::vector<JobImpactInput> in) {
    std::vector<JobChange> out;
    const auto idx = hostIndex(r.topology());
    std::vector<JobImpact> next;
    std::unordered_map<std::string, std::size_t> nextByName;
    next.reserve(in.size());
    for (auto& job : in) {
        if (nextByName.contains(job.name)) continue;
        auto old = byName_.find(job.name);
        if (old != byName_.end()) {
            auto& prev = jobs_[old->second];
            if (prev.hosts == job.hosts && prev.pattern == job.pattern) {
                nextByName.emplace(job.name, next.size());
                next.push_back(std::move(prev));
                continue;
            }
        }
        JobImpact j;
        j.name = std::move(job.name);
        j.hosts = std::move(job.hosts);
        j.pattern = job.pattern;
        j.healthyBusBw = 0;
        mapHosts(idx, j);
        // A job replaced in place keeps its open degradation until the new hosts say otherwise.
        const bool wasDegraded = old != byName_.end() && jobs_[old->second].degraded();
        if (wasDegraded) j.healthyBusBw = jobs_[old->second].healthyBusBw;
        compute(r, j);
        if (wasDegraded && !j.degraded()) {
            out.push_back({j.name, Degradation::Closed, recoveredMessage(j)});
        } else {
            out.push_back(changeOf(r, j, wasDegraded));
        }
        nextByName.emplace(j.name, next.size());
        next.push_back(std::move(j));
    }
    for (auto& j : jobs_) {
        if (j.name.empty() || nextByName.contains(j.name)) continue;
        if (j.degraded())
            out.push_back({j.name, Degradation::Closed, "job " + j.name + " is gone"});
    }
    jobs_ = std::move(next);
    byName_ = std::move(nextByName);
    return out;
}

std::vector<JobChange> JobImpactTracker::linksChanged(RouterRef r,
                                                      std::span<const std::int32_t> links) {
    std::vector<JobChange> out;
    const auto& t = r.topology();
    bool anyUp = false;
    for (auto l : links) anyUp |= t.usable(l);
    for (auto& j : jobs_) {
        bool touched = anyUp;
        for (std::size_t i = 0; !touched && i < links.size(); ++i)
            touched = std::binary_search(j.everCrossed.begin(), j.everCrossed.end(), links[i]) ||
                      std::binary_search(j.downLinks.begin(), j.downLinks.end(), links[i]);
        // A NIC cable that went down was crossed; one that was down all along was not.
        if (!touched)
            for (auto l : links) {
                auto a = t.linkA[l];
                if (t.isSwitch(a)) continue;
                auto h = t.nicHost[a - t.switchCount()];
                touched |= std::find(j.hostIds.begin(), j.hostIds.end(), h) != j.hostIds.end();
            }
        if (!touched) continue;
        const bool was = j.degraded();
        if (compute(r, j)) out.push_back(changeOf(r, j, was));
    }
    return out;
}

std::vector<JobChange> JobImpactTracker::recomputeAll(RouterRef r) {
    std::vector<JobChange> out;
    const auto idx = hostIndex(r.topology());
    for (auto& j : jobs_) {
        const bool was = j.degraded();
        mapHosts(idx, j);
        j.everCrossed.clear();
        if (compute(r, j)) out.push_back(changeOf(r, j, was));
    }
    return out;
}

const JobImpact* JobImpactTracker::find(std::string_view name) const {
    auto it = byName_.find(std::string(name));
    return it == byName_.end() ? nullptr : &jobs_[it->second];
}

std::string_view jobHealthStatus(const JobHealthFacts& f) {
    if (f.degraded) return "degraded";
    if (f.gpusFailed > 0) return "gpu-failed";
    if (f.modelError) return "unknown";
    if (f.linksDown > 0) return "links-down";
    if (f.gpusWarning > 0 || f.gpusQuarantined > 0) return "gpu-warning";
    return "ok";
}

}  // namespace loom::jobs
