// Job endpoints (issue 15): list/get/put/delete of training jobs, `kind: Job` documents
// (POST /api/v1/jobs, what `loomctl apply -f job.yaml` sends), each change published on the
// `jobs` stream topic. The JSON is docs/api.md's "Jobs".
#include <charconv>
#include <mutex>
#include <unordered_map>

#include "jobs_view.hpp"
#include "loom/backend/router.hpp"
#include "loom/backend/services.hpp"
#include "loom/backend/slurm_sync.hpp"
#include "loom/db/event_repo.hpp"
#include "loom/db/job_repo.hpp"
#include "loom/db/lemon_repo.hpp"
#include "loom/inventory/unix_time.hpp"
#include "loom/jobs/job.hpp"
#include "loom/jobs/lemon.hpp"

namespace loom::backend {

namespace {

constexpr std::size_t kJobBodyLimit = std::size_t{4} << 20;

nlohmann::json jobJson(const db::StoredJob& s) {
    const auto& j = s.job;
    auto labels = nlohmann::json::object();
    for (auto& [k, v] : j.labels) labels[k] = v;
    return {{"kind", "Job"},
            {"name", j.name},
            {"owner", j.owner},
            {"hosts", j.hosts},
            {"nodelist", s.nodelist},
            {"hostCount", j.hosts.size()},
            {"gpus", j.gpus()},
            {"pattern", std::string(fabric::collectiveName(j.pattern))},
            {"tensorParallel", j.tensorParallel},
            {"state", std::string(jobs::jobStateName(j.state))},
            {"source", std::string(jobs::jobSourceName(j.source))},
            {"sharesHosts", j.sharesHosts},
            {"labels", std::move(labels)},
            {"resourceVersion", s.resourceVersion},
            {"createdAt", s.createdAt},
            {"updatedAt", s.updatedAt},
            {"finishedAt", s.finishedAt.empty() ? nlohmann::json() : nlohmann::json(s.finishedAt)}};
}

Result<std::optional<std::int64_t>> ifMatchOf(const Request& req) {
    auto h = req.header("if-match");
    if (!h || *h == "*") return std::optional<std::int64_t>{};
    std::string_view v = *h;
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p != v.data() + v.size())
        return fail(
            Error::invalid("If-Match must be a quoted resourceVersion like \"7\"", "If-Match"));
    return std::optional<std::int64_t>{n};
}

Response withEtag(nlohmann::json j, std::int64_t rv, int status = 200) {
    auto r = Response::ofJson(std::move(j), status);
    r.headers.emplace_back("ETag", "\"" + std::to_string(rv) + "\"");
    return r;
}

// The straggler finder's last word on each job (services/straggler_service.hpp): its
// jobSuspects messages on the jobs topic, from this loomd or the leader through NOTIFY.
struct SuspectBoard {
    std::mutex m;
    std::unordered_map<std::string, nlohmann::json> jobs;  // name -> the message

    void take(const nlohmann::json& msg) {
        if (!msg.is_object() || msg.value("type", std::string()) != "jobSuspects") return;
        const auto name = msg.value("name", std::string());
        const bool quiet = msg.value("suspects", nlohmann::json::array()).empty() &&
                           msg.value("straggler", nlohmann::json()).is_null();
        std::lock_guard lk(m);
        if (quiet)
            jobs.erase(name);
        else
            jobs[name] = msg;
    }
    // Adds "suspects" (best first), "stragglers" (the suspects of the job's open straggler
    // events, highest score first) and "straggler" (the first of them, or null).
    void fill(const std::string& name, nlohmann::json& j, bool detail) {
        std::lock_guard lk(m);
        auto it = jobs.find(name);
        j["straggler"] = it == jobs.end() ? nlohmann::json() : it->second["straggler"];
        if (detail) {
            j["suspects"] = it == jobs.end() ? nlohmann::json::array() : it->second["suspects"];
            j["stragglers"] = it == jobs.end()
                                  ? nlohmann::json::array()
                                  : it->second.value("stragglers", nlohmann::json::array());
        }
    }
};

// Lemons (jobs/lemon.hpp): each host or GPU with a strike in the window, lemons first.
nlohmann::json lemonJson(const jobs::Lemon& l) {
    return {{"name", l.entity},
            {"kind", l.kind},
            {"host", l.host},
            {"jobs", l.jobs},
            {"lemon", l.lemon},
            {"strikes", l.list},
            {"lastStrikeAt", db::isoTimeMs(l.lastMs)},
            {"message", jobs::lemonMessage(l)}};
}
nlohmann::json lemonRuleJson() {
    return {{"jobs", jobs::kLemonJobs}, {"windowSeconds", jobs::kLemonWindowMs / 1000}};
}

// The lemons among these strikes' hosts and GPUs (only == lemons: at the threshold).
nlohmann::json lemonsOf(const std::vector<jobs::LemonStrike>& strikes, std::int64_t nowMs,
                        bool onlyLemons) {
    auto out = nlohmann::json::array();
    for (const auto& l : jobs::countLemons(strikes, nowMs))
        if (l.lemon || !onlyLemons) out.push_back(lemonJson(l));
    return out;
}

// The lemons among these hosts and their GPUs.
Result<nlohmann::json> lemonsOn(db::Connection& c, const std::vector<std::string>& hosts,
                                bool onlyLemons) {
    const auto now = unixMs();
    auto strikes = db::strikesOnHosts(c, hosts, now - jobs::kLemonWindowMs);
    if (!strikes) return fail(strikes.error());
    return lemonsOf(*strikes, now, onlyLemons);
}

// PUT /jobs/{name} and POST /jobs: the body is a `kind: Job` document (YAML or JSON).
Result<Response> putDocument(const Request& req, Services& services,
                             const std::weak_ptr<JobsView>& view, std::string_view pathName) {
    auto job = jobs::parseJobDocument(req.body, jobs::JobSource::Apply);
    if (!job) return fail(job.error());
    if (!pathName.empty() && job->name != pathName)
        return fail(Error::invalid("metadata.name is '" + job->name + "' but the URL names '" +
                                       std::string(pathName) + "'",
                                   "metadata.name"));
    auto ifMatch = ifMatchOf(req);
    if (!ifMatch) return fail(ifMatch.error());
    auto w = db::putJob(req.db(), *job, {.ifMatch = *ifMatch, .actor = req.principal.name});
    if (!w) return fail(w.error());
    auto j = jobJson(w->stored);
    // The jobs view reloads on this message (makeJobsView), as every other loomd's does.
    if (w->changed) services.publish("jobs", {{"type", "job"}, {"job", j}});
    nlohmann::json answer = j;
    answer["created"] = w->created;
    answer["changed"] = w->changed;
    return withEtag(std::move(answer), w->stored.resourceVersion, w->created ? 201 : 200);
}

}  // namespace

void registerJobRoutes(Router& router, Services& services) {
    // The live health of running jobs (jobs_view.hpp): "health" in lists and GET.
    std::weak_ptr<JobsView> view = makeJobsView(services);
    auto board = std::make_shared<SuspectBoard>();
    services.onPublish("jobs", [board](const nlohmann::json& m) { board->take(m); });
    router.add(
        "GET", "/api/v1/jobs", Role::Viewer, [view, board](const Request& req) -> Result<Response> {
            db::JobQuery q;
            for (auto& [k, v] : req.query) {
                if (k == "limit") {
                    int n = 0;
                    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
                    if (ec != std::errc() || p != v.data() + v.size())
                        return fail(
                            Error::invalid("limit must be an integer, not '" + v + "'", "limit"));
                    q.limit = n;
                } else if (k == "cursor") {
                    q.cursor = v;
                } else if (k != "token") {
                    q.filters.emplace_back(k, v);
                }
            }
            auto page = db::listJobs(req.db(), q);
            if (!page) return fail(page.error());
            auto items = nlohmann::json::array();
            for (auto& s : page->items) {
                auto j = jobJson(s);
                if (auto v = view.lock()) j["health"] = v->health(s.job.name);
                board->fill(s.job.name, j, false);
                items.push_back(std::move(j));
            }
            nlohmann::json out{{"items", std::move(items)}};
            if (!page->nextCursor.empty()) out["nextCursor"] = page->nextCursor;
            return Response::ofJson(std::move(out));
        });
    router.add("GET", "/api/v1/jobs/{name}", Role::Viewer,
               [view, board](const Request& req) -> Result<Response> {
                   auto s = db::getJob(req.db(), std::string(req.param("name")));
                   if (!s) return fail(s.error());
                   auto j = jobJson(*s);
                   if (auto v = view.lock()) j["health"] = v->health(s->job.name, /*detail=*/true);
                   board->fill(s->job.name, j, true);
                   // The lemons among its hosts and GPUs (issue 34 item 6).
                   auto lemons = lemonsOn(req.db(), s->job.hosts, /*onlyLemons=*/true);
                   if (!lemons) return fail(lemons.error());
                   j["lemons"] = std::move(*lemons);
                   return withEtag(std::move(j), s->resourceVersion);
               });
    // A job document lists at most 16,384 hosts of 128 characters (~2.2 MB as a YAML list).
    const RouteOptions documentLimits{.bodyLimit = kJobBodyLimit};
    router.add(
        "PUT", "/api/v1/jobs/{name}", Role::Operator,
        [&services, view](const Request& req) {
            return putDocument(req, services, view, req.param("name"));
        },
        documentLimits);
    router.add(
        "POST", "/api/v1/jobs", Role::Operator,
        [&services, view](const Request& req) { return putDocument(req, services, view, {}); },
        documentLimits);
    // Slurm's jobs (backend/slurm_sync.hpp): the body is `squeue --json -t all` output; the
    // jobs of source `slurm` become what it lists (`loomctl jobs sync-slurm`).
    router.add("POST", "/api/v1/jobs/sync/slurm", Role::Operator,
               [&services](const Request& req) -> Result<Response> {
                   if (req.body.empty())
                       return fail(Error::invalid(
                           "the body must be the output of `squeue --json -t all`, not empty"));
                   auto r = syncSlurmJobs(req.db(), services, req.body);
                   if (!r) return fail(r.error());
                   return Response::ofJson(std::move(*r));
               });
    // Where a new job should run (jobs/placement.hpp): {"gpus": 4096, "pattern": "allreduce"}.
    router.add(
        "POST", "/api/v1/placement", Role::Viewer, [view](const Request& req) -> Result<Response> {
            auto body = req.jsonBody();
            if (!body) return fail(body.error());
            if (!body->is_object())
                return fail(Error::invalid("the body must be an object like {\"gpus\": 4096}"));
            auto g = body->find("gpus");
            if (g == body->end() || !g->is_number_integer())
                return fail(Error::invalid("gpus must be an integer", "gpus"));
            // The number as sent: 2^63 and above parse as unsigned and must not read as
            // negative in the answer.
            if (g->is_number_unsigned()
                    ? g->get<std::uint64_t>() - 1 >= 1'000'000
                    : g->get<std::int64_t>() <= 0 || g->get<std::int64_t>() > 1'000'000)
                return fail(Error::invalid("gpus must be 1..1000000, not " + g->dump(), "gpus"));
            const auto gpus = g->get<std::int64_t>();
            auto pattern = fabric::Collective::AllReduce;
            if (auto p = body->find("pattern"); p != body->end()) {
                auto c =
                    p->is_string() ? fabric::parseCollective(p->get<std::string>()) : std::nullopt;
                if (!c)
                    return fail(Error::invalid("pattern must be allreduce, allgather or alltoall",
                                               "pattern"));
                pattern = *c;
            }
            auto v = view.lock();
            if (!v) return fail(Error::unavailable("loomd is stopping"));
            auto r = v->place(static_cast<int>(gpus), pattern);
            if (!r) return fail(r.error());
            return Response::ofJson(std::move(*r));
        });
    // Lemons (jobs/lemon.hpp): every host and GPU with a strike in the window (lemons first),
    // or those of one host (?host=NAME: the host and its GPUs) or of one rack (?rack=NAME: its
    // hosts and their GPUs — one request for a rack view, not one per host).
    router.add("GET", "/api/v1/lemons", Role::Viewer, [](const Request& req) -> Result<Response> {
        std::string host, rack;
        for (auto& [k, v] : req.query) {
            if (k == "host" || k == "rack") {
                if (auto ok = jobs::checkJobName(v, k); !ok) return fail(ok.error());
                (k == "host" ? host : rack) = v;
            } else if (k != "token") {
                return fail(Error::invalid("unknown parameter '" + k + "'; valid: host, rack", k));
            }
        }
        if (!host.empty() && !rack.empty())
            return fail(Error::invalid("give host or rack, not both", "rack"));
        const auto now = unixMs();
        const auto since = now - jobs::kLemonWindowMs;
        auto strikes = !host.empty()   ? db::strikesOnHosts(req.db(), {host}, since)
                       : !rack.empty() ? db::strikesInRack(req.db(), rack, since)
                                       : db::strikesSince(req.db(), since);
        if (!strikes) return fail(strikes.error());
        return Response::ofJson(
            {{"rule", lemonRuleJson()}, {"items", lemonsOf(*strikes, now, /*onlyLemons=*/false)}});
    });
    router.add(
        "DELETE", "/api/v1/jobs/{name}", Role::Operator,
        [&services](const Request& req) -> Result<Response> {
            auto s = db::deleteJob(req.db(), std::string(req.param("name")));
            if (!s) return fail(s.error());
            services.publish("jobs", {{"type", "job"}, {"name", s->job.name}, {"deleted", true}});
            return Response::ofJson({{"deleted", jobJson(*s)}});
        });
}

}  // namespace loom::backend
