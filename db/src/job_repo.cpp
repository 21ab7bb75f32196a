#include "loom/db/job_repo.hpp"

#include <algorithm>
#include <pqxx/pqxx>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "copy_text.hpp"
#include "list_sql.hpp"
#include "loom/db/native.hpp"
#include "loom/inventory/json_text.hpp"
#include "loom/inventory/natural_order.hpp"
#include "loom/jobs/hostlist.hpp"

namespace loom::db {

namespace {

using detail::col;

Error toError(const std::exception& e) {
    if (auto* se = dynamic_cast<const pqxx::sql_error*>(&e); se && se->sqlstate() == "42P01")
        return Error::unavailable("the jobs table is missing: migrations not applied");
    return translateException("jobs");
}

#define LOOM_TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
// Host names are name characters only (jobs::parseJobDocument, the inventory), so a comma
// joins them unambiguously.
constexpr const char* kCols =
    "name, owner, array_to_string(ARRAY(SELECT jsonb_array_elements_text(j.hosts)), ','), "
    "nodelist, pattern, tensor_parallel, state, source, labels::text, resource_version, " LOOM_TS(
        "created_at") ", " LOOM_TS("updated_at") ", " LOOM_TS("finished_at") ", shares_hosts";
#undef LOOM_TS

StoredJob rowToJob(const pqxx::row& r) {
    StoredJob s;
    s.job.name = col(r[0]);
    s.job.owner = col(r[1]);
    std::string hosts = col(r[2]);
    for (std::size_t i = 0; i < hosts.size();) {
        auto e = hosts.find(',', i);
        if (e == std::string::npos) e = hosts.size();
        s.job.hosts.push_back(hosts.substr(i, e - i));
        i = e + 1;
    }
    s.nodelist = col(r[3]);
    s.job.pattern = fabric::parseCollective(col(r[4])).value_or(fabric::Collective::AllReduce);
    s.job.tensorParallel = r[5].as<int>();
    s.job.state = jobs::parseJobState(col(r[6])).value_or(jobs::JobState::Pending);
    s.job.source = jobs::parseJobSource(col(r[7])).value_or(jobs::JobSource::Apply);
    detail::parseLabels(col(r[8]), s.job.labels);
    s.resourceVersion = r[9].as<std::int64_t>();
    s.createdAt = col(r[10]);
    s.updatedAt = col(r[11]);
    s.finishedAt = col(r[12]);
    s.job.sharesHosts = r[13].as<bool>();
    return s;
}

void appendHostsJson(std::string& out, const std::vector<std::string>& hosts) {
    out += '[';
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        if (i) out += ',';
        appendJsonString(out, hosts[i]);
    }
    out += ']';
}

std::string hostsJson(const std::vector<std::string>& hosts) {
    std::string out;
    appendHostsJson(out, hosts);
    return out;
}

// The job's stored columns as a JSON object (the bulk sync's jsonb_to_recordset input).
void appendJobRecord(std::string& out, const jobs::Job& j) {
    out += "{\"name\":";
    appendJsonString(out, j.name);
    out += ",\"owner\":";
    appendJsonString(out, j.owner);
    out += ",\"hosts\":";
    appendHostsJson(out, j.hosts);
    out += ",\"nodelist\":";
    appendJsonString(out, jobs::formatHostlist(j.hosts));
    out += ",\"host_count\":" + std::to_string(j.hosts.size());
    out += ",\"pattern\":\"" + std::string(fabric::collectiveName(j.pattern)) + "\"";
    out += ",\"tensor_parallel\":" + std::to_string(j.tensorParallel);
    out += ",\"state\":\"" + std::string(jobs::jobStateName(j.state)) + "\"";
    out += ",\"labels\":" + detail::labelsJson(j.labels);
    out += j.sharesHosts ? ",\"shares_hosts\":true" : ",\"shares_hosts\":false";
    out += ",\"sort_key\":";  // natural order (0024)
    appendJsonString(out, naturalSortKey(j.name));
    out += "}";
}

// Two documents claiming the same hosts at once are decided one after the other (issue 34
// item 5): a transaction that makes a job running takes this lock before it looks for overlaps.
constexpr std::int64_t kJobHostsLock = 0x4c6f6f6d4a6f6273;  // "LoomJobs"

// The running jobs other than `self` that name any of `hosts` (a jsonb array): every source but
// the simulator's, whose jobs give way (the simulator moves them off racks a real job holds).
// `otherThan`: a source whose jobs are left out too (a sync replaces them).
std::vector<jobs::Job> runningJobsOnHosts(pqxx::work& tx, const std::string& self,
                                          const std::string& hosts,
                                          const std::string& otherThan = "simulator") {
    auto rows = tx.exec_params(
        "SELECT name, array_to_string(ARRAY(SELECT jsonb_array_elements_text(j.hosts)), ',') "
        "FROM jobs j WHERE state = 'running' AND source <> 'simulator' AND source <> $3 AND "
        "name <> $1 AND j.hosts ?| ARRAY(SELECT jsonb_array_elements_text($2::jsonb)) "
        "ORDER BY sort_key",
        self, hosts, otherThan);
    std::vector<jobs::Job> out;
    for (const auto& r : rows) {
        jobs::Job j;
        j.name = col(r[0]);
        std::string list = col(r[1]);
        for (std::size_t i = 0; i < list.size();) {
            auto e = list.find(',', i);
            if (e == std::string::npos) e = list.size();
            j.hosts.push_back(list.substr(i, e - i));
            i = e + 1;
        }
        out.push_back(std::move(j));
    }
    return out;
}

constexpr const char* kFinished =
    "CASE WHEN state IN ('completed', 'failed') THEN coalesce(finished_at, now()) END";

struct FilterField {
    const char* api;
    const char* sql;
};
constexpr FilterField kFilterFields[] = {
    {"name", "j.name"},
    {"owner", "j.owner"},
    {"state", "j.state"},
    {"source", "j.source"},
    {"pattern", "j.pattern"},
    {"nodelist", "j.nodelist"},
    {"hostCount", "j.host_count"},
    {"tensorParallel", "j.tensor_parallel"},
};

}  // namespace

std::vector<std::string> jobFilterFields() {
    std::vector<std::string> out;
    for (auto& f : kFilterFields) out.emplace_back(f.api);
    out.emplace_back("host");
    return out;
}

Result<PutJobResult> putJob(Connection& c, const jobs::Job& job, const PutJobOptions& o) {
    if (auto ok = jobs::checkJobName(job.name, "name"); !ok) return fail(ok.error());
    if (job.hosts.empty()) return fail(Error::invalid("a job needs at least one host", "hosts"));
    const std::string hosts = hostsJson(job.hosts);
    const std::string nodelist = jobs::formatHostlist(job.hosts);
    const std::string pattern(fabric::collectiveName(job.pattern));
    const std::string state(jobs::jobStateName(job.state));
    const std::string source(jobs::jobSourceName(job.source));
    const std::string labels = detail::labelsJson(job.labels);
    try {
        pqxx::work tx(native(c));
        if (job.state == jobs::JobState::Running && !job.sharesHosts && o.refuseOverlap)
            tx.exec_params("SELECT pg_advisory_xact_lock($1)", kJobHostsLock);
        auto cur = tx.exec_params(
            "SELECT resource_version, to_jsonb(j) - 'id' - 'sort_key', state, "
            "array_to_string(ARRAY(SELECT jsonb_array_elements_text(j.hosts)), ',') "
            "FROM jobs j WHERE name = $1 FOR UPDATE",
            job.name);
        if (job.state == jobs::JobState::Running && !job.sharesHosts && o.refuseOverlap) {
            // Only the hosts it newly claims: a job already running on a host keeps it even if
            // a sharing job came there since (re-applying the same document changes nothing).
            std::vector<std::string> claimed = job.hosts;
            if (!cur.empty() && col(cur[0][2]) == "running") {
                std::string held = "," + col(cur[0][3]) + ",";
                std::erase_if(claimed, [&](const std::string& h) {
                    return held.find("," + h + ",") != std::string::npos;
                });
            }
            if (!claimed.empty()) {
                auto others = runningJobsOnHosts(tx, job.name, hostsJson(claimed));
                if (auto ov = jobs::hostOverlaps(job.name, claimed, others); !ov.empty())
                    return fail(jobs::overlapError(job, ov));
            }
        }
        PutJobResult out;
        if (cur.empty()) {
            if (o.ifMatch)
                return fail(Error{Errc::PreconditionFailed, "job '" + job.name +
                                                                "' does not exist, If-Match said " +
                                                                std::to_string(*o.ifMatch)});
            auto r = tx.exec_params(
                std::string("INSERT INTO jobs AS j (name, owner, hosts, nodelist, host_count, "
                            "pattern, tensor_parallel, state, source, labels, finished_at, "
                            "sort_key, shares_hosts) "
                            "VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8, $9, $10::jsonb, "
                            "CASE WHEN $8 IN ('completed', 'failed') THEN now() END, $11, $12) "
                            "RETURNING ") +
                    kCols,
                job.name, job.owner, hosts, nodelist, static_cast<int>(job.hosts.size()), pattern,
                job.tensorParallel, state, source, labels, naturalSortKey(job.name),
                job.sharesHosts);
            tx.exec_params(
                "INSERT INTO change_log (actor, kind, name, action, after) "
                "SELECT $1, 'job', $2, 'create', to_jsonb(j) - 'id' - 'sort_key' FROM jobs j "
                "WHERE name = $2",
                o.actor, job.name);
            out.stored = rowToJob(r[0]);
            out.created = out.changed = true;
        } else {
            auto rv = cur[0][0].as<std::int64_t>();
            if (o.ifMatch && *o.ifMatch != rv)
                return fail(Error{Errc::PreconditionFailed, "resourceVersion of job '" + job.name +
                                                                "' is " + std::to_string(rv) +
                                                                ", If-Match said " +
                                                                std::to_string(*o.ifMatch)});
            auto r = tx.exec_params(
                std::string("UPDATE jobs j SET owner = $2, hosts = $3::jsonb, nodelist = $4, "
                            "host_count = $5, pattern = $6, tensor_parallel = $7, state = $8, "
                            "source = $9, labels = $10::jsonb, shares_hosts = $11, "
                            "resource_version = resource_version + 1, updated_at = now(), "
                            "finished_at = CASE WHEN $8 IN ('completed', 'failed') THEN "
                            "coalesce(finished_at, now()) END "
                            "WHERE name = $1 AND (owner, hosts, pattern, tensor_parallel, state, "
                            "source, labels, shares_hosts) IS DISTINCT FROM ($2, $3::jsonb, $6, "
                            "$7, $8, $9, $10::jsonb, $11) RETURNING ") +
                    kCols,
                job.name, job.owner, hosts, nodelist, static_cast<int>(job.hosts.size()), pattern,
                job.tensorParallel, state, source, labels, job.sharesHosts);
            if (r.empty()) {
                auto same = tx.exec_params(
                    std::string("SELECT ") + kCols + " FROM jobs j WHERE name = $1", job.name);
                out.stored = rowToJob(same[0]);
            } else {
                tx.exec_params(
                    "INSERT INTO change_log (actor, kind, name, action, before, after) "
                    "SELECT $1, 'job', $2, 'update', $3::jsonb, to_jsonb(j) - 'id' - 'sort_key' "
                    "FROM jobs j WHERE name = $2",
                    o.actor, job.name, cur[0][1].as<std::string>());
                out.stored = rowToJob(r[0]);
                out.changed = true;
            }
        }
        tx.commit();
        return out;
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<StoredJob> getJob(Connection& c, const std::string& name) {
    try {
        pqxx::read_transaction tx(native(c));
        auto r =
            tx.exec_params(std::string("SELECT ") + kCols + " FROM jobs j WHERE name = $1", name);
        if (r.empty()) return fail(Error::notFound("job '" + name + "' not found"));
        return rowToJob(r[0]);
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<StoredJob> deleteJob(Connection& c, const std::string& name) {
    try {
        pqxx::work tx(native(c));
        auto r = tx.exec_params(
            std::string("DELETE FROM jobs j WHERE name = $1 RETURNING ") + kCols, name);
        if (r.empty()) return fail(Error::notFound("job '" + name + "' not found"));
        tx.commit();
        return rowToJob(r[0]);
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<JobPage> listJobs(Connection& c, const JobQuery& q) {
    if (q.limit < 1 || q.limit > 5000)
        return fail(Error::invalid("limit must be between 1 and 5000", "limit"));
    if (q.filters.size() > 32) return fail(Error::invalid("at most 32 filters"));
    std::vector<std::string> params;
    std::string where;
    auto addCond = [&](const std::string& cond) {
        where += where.empty() ? " WHERE " : " AND ";
        where += cond;
    };
    if (!q.cursor.empty()) {
        auto after = detail::decodeCursor(q.cursor);
        if (!after) return fail(Error::invalid("malformed cursor", "cursor"));
        // The page after the previous one's last name, in natural order (0024).
        params.push_back(naturalSortKey(*after));
        addCond("j.sort_key > $" + std::to_string(params.size()));
    }
    for (const auto& [field, value] : q.filters) {
        if (field.rfind("label.", 0) == 0) {
            std::string key = field.substr(6);
            if (key.empty()) return fail(Error::invalid("empty label key", field));
            params.push_back(key);
            params.push_back(value);
            addCond("j.labels ->> $" + std::to_string(params.size() - 1) + " = $" +
                    std::to_string(params.size()));
            continue;
        }
        if (field == "host") {
            params.push_back(value);
            addCond("j.hosts ? $" + std::to_string(params.size()));
            continue;
        }
        std::string base = field, op;
        if (auto dunder = field.rfind("__"); dunder != std::string::npos && dunder > 0) {
            base = field.substr(0, dunder);
            op = field.substr(dunder + 2);
        }
        const char* expr = nullptr;
        for (auto& f : kFilterFields)
            if (base == f.api) expr = f.sql;
        if (!expr) {
            std::string valid;
            for (auto& f : jobFilterFields()) valid += (valid.empty() ? "" : ", ") + f;
            return fail(Error::invalid("unknown filter '" + base + "' for jobs; valid: " + valid +
                                           ", label.<key>; lookups: field__" + detail::kLookups,
                                       field));
        }
        auto cond = detail::lookupCondition(std::string("(") + expr + ")", op, value, params);
        if (!cond) return fail(Error::invalid(cond.error().message, field));
        addCond(*cond);
    }
    std::string sql = std::string("SELECT ") + kCols + " FROM jobs j" + where +
                      " ORDER BY j.sort_key LIMIT " + std::to_string(q.limit + 1);
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
        JobPage page;
        std::size_t n = std::min<std::size_t>(rows.size(), std::size_t(q.limit));
        for (std::size_t i = 0; i < n; ++i) page.items.push_back(rowToJob(rows[i]));
        if (rows.size() > std::size_t(q.limit))
            page.nextCursor = detail::encodeCursor(page.items.back().job.name);
        return page;
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<std::vector<StoredJob>> jobsInState(Connection& c, jobs::JobState state) {
    try {
        pqxx::read_transaction tx(native(c));
        auto rows = tx.exec_params(
            std::string("SELECT ") + kCols + " FROM jobs j WHERE state = $1 ORDER BY sort_key",
            std::string(jobs::jobStateName(state)));
        std::vector<StoredJob> out;
        out.reserve(rows.size());
        for (const auto& r : rows) out.push_back(rowToJob(r));
        return out;
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

Result<SyncResult> syncJobs(Connection& c, jobs::JobSource source,
                            const std::vector<jobs::Job>& running, int keepFinishedSeconds) {
    const std::string src(jobs::jobSourceName(source));
    try {
        pqxx::work tx(native(c));
        // Slurm's word on its nodes is final (it gives one node's GPUs to several jobs, with or
        // without OverSubscribe): a job of the list on hosts another running job holds (of the
        // list, or stored from another source) is stored as sharing them, never refused. The
        // simulator's jobs never share (it keeps off racks real jobs hold).
        std::vector<char> shared(running.size(), 0);
        if (source != jobs::JobSource::Simulator) {
            std::unordered_map<std::string_view, int> holders;
            std::vector<std::string> all;
            for (const auto& j : running)
                if (j.state == jobs::JobState::Running)
                    for (const auto& h : j.hosts)
                        if (++holders[h] == 1) all.push_back(h);
            std::unordered_set<std::string> elsewhere;
            if (!all.empty())
                for (const auto& o : runningJobsOnHosts(tx, "", hostsJson(all), src))
                    elsewhere.insert(o.hosts.begin(), o.hosts.end());
            for (std::size_t i = 0; i < running.size(); ++i) {
                if (running[i].state != jobs::JobState::Running) continue;
                for (const auto& h : running[i].hosts)
                    if (holders[h] > 1 || elsewhere.contains(h)) {
                        shared[i] = 1;
                        break;
                    }
            }
        }
        std::string records = "[";
        for (std::size_t i = 0; i < running.size(); ++i) {
            if (i) records += ',';
            if (shared[i] && !running[i].sharesHosts) {
                auto j = running[i];
                j.sharesHosts = true;
                appendJobRecord(records, j);
            } else {
                appendJobRecord(records, running[i]);
            }
        }
        records += ']';
        // One statement for every job: insert the new, update the changed (a job of another
        // source keeps its name: ON CONFLICT ... WHERE leaves it untouched).
        auto up = tx.exec_params(
            std::string(
                "INSERT INTO jobs AS j (name, owner, hosts, nodelist, host_count, pattern, "
                "tensor_parallel, state, source, labels, finished_at, sort_key, shares_hosts) "
                "SELECT x.name, x.owner, x.hosts, x.nodelist, x.host_count, x.pattern, "
                "x.tensor_parallel, x.state, $2, x.labels, "
                "CASE WHEN x.state IN ('completed', 'failed') THEN now() END, x.sort_key, "
                "x.shares_hosts "
                "FROM jsonb_to_recordset($1::jsonb) AS x(name text, owner text, hosts jsonb, "
                "nodelist text, host_count integer, pattern text, tensor_parallel integer, "
                "state text, labels jsonb, sort_key text, shares_hosts boolean) "
                "ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, hosts = EXCLUDED.hosts, "
                "nodelist = EXCLUDED.nodelist, host_count = EXCLUDED.host_count, "
                "pattern = EXCLUDED.pattern, tensor_parallel = EXCLUDED.tensor_parallel, "
                "state = EXCLUDED.state, labels = EXCLUDED.labels, "
                "shares_hosts = EXCLUDED.shares_hosts, "
                "resource_version = j.resource_version + 1, updated_at = now(), "
                "finished_at = CASE WHEN EXCLUDED.state IN ('completed', 'failed') THEN "
                "coalesce(j.finished_at, now()) END "
                "WHERE j.source = $2 AND (j.owner, j.hosts, j.pattern, j.tensor_parallel, j.state, "
                "j.labels, j.shares_hosts) IS DISTINCT FROM (EXCLUDED.owner, EXCLUDED.hosts, "
                "EXCLUDED.pattern, EXCLUDED.tensor_parallel, EXCLUDED.state, EXCLUDED.labels, "
                "EXCLUDED.shares_hosts) "
                "RETURNING (xmax = 0)"),
            records, src);
        SyncResult out;
        for (const auto& r : up) (r[0].as<bool>() ? out.created : out.updated)++;
        auto fin = tx.exec_params(
            std::string("UPDATE jobs j SET state = 'completed', finished_at = now(), updated_at = "
                        "now(), resource_version = resource_version + 1 WHERE source = $2 AND "
                        "state IN ('pending', 'running') AND NOT EXISTS (SELECT 1 FROM "
                        "jsonb_array_elements($1::jsonb) e WHERE e ->> 'name' = j.name)"),
            records, src);
        out.finished = static_cast<int>(fin.affected_rows());
        tx.exec_params(
            "DELETE FROM jobs WHERE source = $1 AND finished_at < now() - $2 * "
            "interval '1 second'",
            src, keepFinishedSeconds);
        tx.commit();
        return out;
    } catch (const std::exception& e) {
        return fail(toError(e));
    }
}

}  // namespace loom::db
