#include "loom/jobs/slurm.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "loom/jobs/hostlist.hpp"

namespace loom::jobs {

namespace {

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

// Where a field was read: its path ("jobs[2].nodes", "job 2.NodeList") and line (0: none).
struct Where {
    std::string path;
    int line = 0;
};

// What the jobs of one Slurm output may hold together, spent job by job.
struct Budget {
    std::size_t hosts = kMaxSlurmHosts;
    std::size_t bytes = kMaxSlurmHostBytes;
};

Error tooLong(std::size_t size, const Where& at) {
    Error e{Errc::InvalidArgument, "must be at most " + std::to_string(kMaxSlurmFieldChars) +
                                       " characters, not " + std::to_string(size)};
    e.path = at.path;
    e.line = at.line;
    return e;
}

// One Slurm job's fields, whichever command printed them.
Result<Job> makeJob(const std::string& id, const std::string& name, const std::string& user,
                    const std::string& state, const std::string& partition,
                    const std::string& nodes, const Where& idAt, const Where& nodesAt,
                    Budget& budget) {
    if (id.empty()) return fail(Error::invalid("a job without a job id", idAt.path, idAt.line));
    Job j;
    j.name = "slurm-" + id;
    if (auto ok = checkJobName(j.name, idAt.path); !ok) {
        auto e = ok.error();
        e.line = idAt.line;
        return fail(std::move(e));
    }
    j.owner = user;
    j.state = slurmJobState(state);
    j.source = JobSource::Slurm;
    j.tensorParallel = kGpusPerHost;
    if (!nodes.empty() && nodes != "(null)" && nodes != "None assigned") {
        // One job: the hosts of a job document; all jobs together: the output's budget.
        auto hosts = expandHostlist(
            nodes, {.maxHosts = std::min(kMaxJobHosts, budget.hosts), .maxBytes = budget.bytes});
        if (!hosts) {
            Error e = std::move(hosts.error());
            e.message = "job " + id + ": " + e.message;
            if (e.code == Errc::TooLarge &&
                (budget.hosts < kMaxJobHosts || budget.bytes < kMaxHostlistBytes))
                e.message += " (the jobs of one Slurm output name at most " +
                             std::to_string(kMaxSlurmHosts) + " hosts of " +
                             std::to_string(kMaxSlurmHostBytes) + " characters in all)";
            e.path = nodesAt.path;
            e.line = nodesAt.line;
            return fail(std::move(e));
        }
        budget.hosts -= hosts->size();
        for (auto& h : *hosts) budget.bytes -= h.size();
        j.hosts = normalizedHosts(std::move(*hosts));
    }
    j.labels = {{"slurm.id", id},
                {"slurm.name", name},
                {"slurm.partition", partition},
                {"slurm.state", state}};
    return j;
}

}  // namespace

JobState slurmJobState(std::string_view slurmState) {
    const auto s = upper(slurmState.substr(0, slurmState.find(' ')));
    if (s == "RUNNING" || s == "COMPLETING" || s == "SUSPENDED" || s == "STAGE_OUT" ||
        s == "SIGNALING")
        return JobState::Running;
    if (s == "COMPLETED") return JobState::Completed;
    if (s == "CANCELLED" || s == "FAILED" || s == "TIMEOUT" || s == "NODE_FAIL" ||
        s == "PREEMPTED" || s == "OUT_OF_MEMORY" || s == "BOOT_FAIL" || s == "DEADLINE" ||
        s == "SPECIAL_EXIT")
        return JobState::Failed;
    return JobState::Pending;  // PENDING, CONFIGURING, REQUEUED, RESIZING, ...
}

Result<std::vector<Job>> parseSqueueJson(std::string_view text) {
    // squeue prints ~130 values per job; six of them are read. The tree keeps only those (every
    // other field is skipped while parsing), and what it keeps is bounded like every request
    // body: kMaxSlurmValues values, kMaxSlurmDepth levels.
    std::size_t kept = 0;
    bool tooDeep = false;
    // Events deeper than this are inside a value that is being skipped: neither kept nor
    // counted (INT_MAX: none is).
    int skipBelow = std::numeric_limits<int>::max();
    std::vector<nlohmann::json> captured;  // the job objects, in order
    bool jobsIsArray = false, sawJobsArray = false;
    std::size_t elements = 0;
    std::optional<std::size_t> notAnObject;  // the index of the first element that is not
    auto keep = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& v) {
        using E = nlohmann::json::parse_event_t;
        if (depth > kMaxSlurmDepth) {
            tooDeep = true;
            throw std::length_error("depth");
        }
        if (depth > skipBelow) return false;
        // {"jobs": [ {job fields} ]}: keys at depth 1 other than "jobs", at depth 3 (a job's
        // fields) other than the six read, are dropped with their values.
        if (ev == E::key) {
            skipBelow = std::numeric_limits<int>::max();
            const auto& k = v.get_ref<const std::string&>();
            bool wanted = true;
            if (depth == 1) wanted = k == "jobs";
            if (depth == 3)
                wanted = k == "job_id" || k == "name" || k == "user_name" || k == "job_state" ||
                         k == "partition" || k == "nodes";
            if (!wanted) skipBelow = depth;
            return wanted;
        }
        if (ev == E::object_end || ev == E::array_end) {
            if (depth < skipBelow) skipBelow = std::numeric_limits<int>::max();
            if (ev == E::array_end && depth == 1) jobsIsArray = false;
            // A job, whole: taken out of the tree. Left in the array, every later object's end
            // would scan the array for discarded values (quadratic in the jobs).
            if (ev == E::object_end && depth == 2 && jobsIsArray) {
                captured.push_back(std::move(v));
                return false;
            }
            return true;
        }
        if (++kept > kMaxSlurmValues) throw std::length_error("values");
        if (depth == 1 && ev == E::array_start) jobsIsArray = sawJobsArray = true;
        if (depth == 2 && jobsIsArray) {
            if (ev != E::object_start && !notAnObject) notAnObject = elements;
            ++elements;
        }
        return true;
    };
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text, keep, /*allow_exceptions=*/false);
    } catch (const std::length_error&) {
        if (tooDeep)
            return fail(Error::invalid("`squeue --json` output nested deeper than " +
                                       std::to_string(kMaxSlurmDepth) + " levels"));
        return fail(Error{Errc::TooLarge, "the body has more than " +
                                              std::to_string(kMaxSlurmValues) + " JSON values"});
    } catch (const nlohmann::json::exception& e) {
        return fail(
            Error::invalid(std::string("not the JSON object of `squeue --json`: ") + e.what()));
    }
    if (doc.is_discarded() || !doc.is_object())
        return fail(Error::invalid("not the JSON object of `squeue --json`", ""));
    auto jobsIt = doc.find("jobs");
    if (jobsIt == doc.end() || !jobsIt->is_array() || !sawJobsArray)
        return fail(Error::invalid("`squeue --json` output has no \"jobs\" array", "jobs"));
    if (notAnObject)
        return fail(Error::invalid("a job must be an object",
                                   "jobs[" + std::to_string(*notAnObject) + "]"));
    std::vector<Job> out;
    Budget budget;
    for (std::size_t i = 0; i < captured.size(); ++i) {
        const auto& o = captured[i];
        const std::string path = "jobs[" + std::to_string(i) + "]";
        auto str = [&](const char* key) -> Result<std::string> {
            auto it = o.find(key);
            if (it == o.end() || it->is_null()) return std::string();
            if (it->is_string()) return it->get<std::string>();
            if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
            return fail(Error::invalid("must be a string", path + "." + key));
        };
        std::string f[6];
        const char* keys[6] = {"job_id", "name", "user_name", "job_state", "partition", "nodes"};
        for (int k = 0; k < 6; ++k) {
            auto v = str(keys[k]);
            if (!v) return fail(v.error());
            // The owner and labels are stored and served with every job; nodes has its own
            // limits (expandHostlist).
            if (k < 5 && v->size() > kMaxSlurmFieldChars)
                return fail(tooLong(v->size(), {path + "." + keys[k]}));
            f[k] = std::move(*v);
        }
        auto j = makeJob(f[0], f[1], f[2], f[3], f[4], f[5], {path + ".job_id"}, {path + ".nodes"},
                         budget);
        if (!j) return fail(j.error());
        out.push_back(std::move(*j));
    }
    return out;
}

Result<std::vector<Job>> parseScontrolShowJob(std::string_view text) {
    std::vector<Job> out;
    // What scontrol prints when there is nothing to show (alone: a job's name or comment may say
    // it too).
    if (const auto t = text.substr(std::min(text.size(), text.find_first_not_of(" \t\r\n")));
        t.starts_with("No jobs in the system"))
        return out;
    // Records are blank-line separated "Key=Value" words; JobName takes the rest of its line
    // (a name may hold spaces).
    std::size_t pos = 0, record = 0;
    struct Field {
        std::string value;
        int line = 0;
    };
    std::map<std::string, Field> f;
    Budget budget;
    int line = 0;
    auto flush = [&]() -> Result<void> {
        if (f.empty()) return {};
        // An error names the record and the scontrol key, at the key's line.
        auto at = [&](const char* key) {
            return Where{"job " + std::to_string(record) + "." + key, f[key].line};
        };
        for (const char* key : {"JobId", "JobName", "UserId", "JobState", "Partition"})
            if (auto it = f.find(key);
                it != f.end() && it->second.value.size() > kMaxSlurmFieldChars)
                return fail(tooLong(it->second.value.size(), at(key)));
        std::string user = f["UserId"].value;
        user = user.substr(0, user.find('('));
        auto j =
            makeJob(f["JobId"].value, f["JobName"].value, user, f["JobState"].value,
                    f["Partition"].value, f["NodeList"].value, at("JobId"), at("NodeList"), budget);
        f.clear();
        ++record;
        if (!j) return fail(j.error());
        out.push_back(std::move(*j));
        return {};
    };
    while (pos <= text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view l = text.substr(pos, nl - pos);
        pos = nl + 1;
        ++line;
        if (l.find_first_not_of(" \t\r") == std::string_view::npos) {
            if (auto r = flush(); !r) return fail(r.error());
            continue;
        }
        std::size_t i = 0;
        while (i < l.size()) {
            while (i < l.size() && (l[i] == ' ' || l[i] == '\t' || l[i] == '\r')) ++i;
            if (i >= l.size()) break;
            auto end = l.find(' ', i);
            if (end == std::string_view::npos) end = l.size();
            std::string_view word = l.substr(i, end - i);
            const auto eq = word.find('=');
            if (eq == std::string_view::npos || eq == 0) {
                if (!f.empty()) {  // a value with spaces (Reason=..., Comment=...): skip it
                    i = end;
                    continue;
                }
                return fail(Error::invalid(
                    "expected Key=Value, found '" + std::string(word.substr(0, 40)) + "'",
                    "line " + std::to_string(line)));
            }
            std::string key(word.substr(0, eq));
            if (key == "JobName") {
                auto& v = f[key] = {std::string(l.substr(i + eq + 1)), line};
                while (!v.value.empty() && (v.value.back() == '\r' || v.value.back() == ' '))
                    v.value.pop_back();
                break;
            }
            f[key] = {std::string(word.substr(eq + 1)), line};
            i = end;
        }
        if (f.size() && !f.contains("JobId"))
            return fail(
                Error::invalid("a record must start with JobId=", "line " + std::to_string(line)));
    }
    if (auto r = flush(); !r) return fail(r.error());
    return out;
}

}  // namespace loom::jobs
