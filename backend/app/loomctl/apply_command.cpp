// `apply -f FILE` and `diff -f FILE`: send a cluster spec to POST /api/v1/apply, or a
// `kind: Job` document to POST /api/v1/jobs (its diff and dry run compare it with the stored
// job here, field by field).
#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

#include "loom/jobs/hostlist.hpp"
#include "loom/jobs/job.hpp"

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

namespace loom::loomctl {

using nlohmann::json;

namespace {

struct ApplyOptions {
    std::string file;
    bool dryRun = false;
    bool prune = false;
    std::string output;  // "" (plan text), json or yaml
    std::string idempotencyKey;  // default: a random one per invocation
    int retries = 3;
};

std::size_t num(const json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end()) return 0;
    if (it->is_number_unsigned() || it->is_number_integer()) return it->get<std::size_t>();
    if (it->is_array()) return it->size();
    return 0;
}

// The per-kind entries of a plan: `{"kinds": [...]}` or the array itself.
json kindsOf(const json& plan) {
    if (plan.is_array()) return plan;
    if (plan.is_object() && plan.contains("kinds") && plan["kinds"].is_array()) return plan["kinds"];
    return json::array();
}

struct Totals {
    std::size_t creates = 0, updates = 0, deletes = 0, wouldDelete = 0;
    std::size_t changes() const { return creates + updates + deletes; }
};

Totals totalsOf(const json& plan) {
    Totals t;
    for (const auto& k : kindsOf(plan)) {
        t.creates += num(k, "creates");
        t.updates += num(k, "updates");
        t.deletes += num(k, "deletes");
        t.wouldDelete += num(k, "wouldDelete");
    }
    return t;
}

bool planHasChanges(const json& plan) {
    if (plan.is_object() && plan.contains("empty") && plan["empty"].is_boolean()) {
        return !plan["empty"].get<bool>();
    }
    if (plan.is_object() && plan.contains("clusterChanges") && !plan["clusterChanges"].empty()) {
        return true;
    }
    return totalsOf(plan).changes() > 0;
}

void printNames(const json& k, const char* key, std::size_t total, const char* mark,
                const std::string& kind) {
    auto it = k.find(key);
    if (it == k.end() || !it->is_array()) return;
    for (const auto& n : *it) std::cout << "  " << mark << ' ' << kind << '/' << client::scalarText(n) << '\n';
    if (total > it->size()) std::cout << "    ... and " << (total - it->size()) << " more\n";
}

// kubectl-like plan: one line per kind, then the first names with + ~ - marks, then totals.
void printPlan(const json& plan, bool applied, bool dryRun) {
    if (plan.is_object() && plan.contains("clusterChanges")) {
        for (const auto& c : plan["clusterChanges"]) {
            std::cout << "cluster " << client::field(c, "field") << ": \""
                      << client::field(c, "before") << "\" -> \"" << client::field(c, "after")
                      << "\"\n";
        }
    }
    auto kinds = kindsOf(plan);
    for (const auto& k : kinds) {
        std::size_t c = num(k, "creates"), u = num(k, "updates"), d = num(k, "deletes"),
                    w = num(k, "wouldDelete");
        if (c + u + d + w == 0) continue;
        std::string kind = singularKind(client::field(k, "kind"));
        std::cout << client::field(k, "kind") << ": " << c << " to create, " << u
                  << " to update, " << d << " to delete";
        if (w) std::cout << " (" << w << " not in the spec; --prune deletes them)";
        std::cout << '\n';
        printNames(k, "createNames", c, "+", kind);
        printNames(k, "updateNames", u, "~", kind);
        printNames(k, "deleteNames", d, "-", kind);
    }
    if (kinds.empty() && plan.is_object() && plan.contains("text")) {
        std::cout << client::field(plan, "text");
        if (!client::field(plan, "text").ends_with("\n")) std::cout << '\n';
    }
    Totals t = totalsOf(plan);
    if (!planHasChanges(plan)) {
        std::cout << "no changes: the stored inventory already matches the spec\n";
        return;
    }
    std::cout << (applied ? "applied: " : dryRun ? "plan (dry run, nothing written): " : "plan: ")
              << t.creates << " created, " << t.updates << " updated, " << t.deletes
              << " deleted\n";
}

// Sends the spec; the progress bar follows the upload, then waits for the server's answer.
// An apply carries an Idempotency-Key and is retried with the same key when the server was
// unavailable or the connection failed (the answer may have been lost after the apply
// committed: the server then returns the first result instead of applying again).
json sendSpec(client::Client& client, const std::string& file, bool dryRun, bool prune,
              std::string key = {}, int retries = 0, std::string body = {}) {
    if (body.empty()) body = readInput(file);
    if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
        failWith(Error::invalid((file == "-" ? std::string("stdin") : file) + " is empty"));
    }
    std::vector<std::pair<std::string, std::string>> q;
    if (dryRun) q.emplace_back("dryRun", "true");
    if (prune) q.emplace_back("prune", "true");
    client::RequestOptions opts;
    auto first = body.find_first_not_of(" \t\r\n");
    opts.contentType = (body[first] == '{' || body[first] == '[') ? "application/json"
                                                                  : "application/yaml";
    opts.body = std::move(body);
    ProgressBar bar("uploading " + file, stderrIsTerminal() && opts.body.size() > (256u << 10));
    opts.progress = [&](std::size_t done, std::size_t total) {
        bar.update(done, total);
        if (done == total) bar.status(dryRun ? "planning on the server..." : "applying on the server...");
    };
    if (!dryRun) opts.headers.emplace_back("Idempotency-Key", key.empty() ? client::newIdempotencyKey() : key);
    const std::string target = "/api/v1/apply" + (q.empty() ? "" : "?" + client::queryString(q));
    auto r = client.call("POST", target, opts);
    for (int attempt = 1; !dryRun && attempt <= retries && !r && r.error().code == Errc::Unavailable;
         ++attempt) {
        bar.done();
        std::cerr << "loomctl: " << r.error().message << "; retrying (" << attempt << "/"
                  << retries << ", same Idempotency-Key)\n";
        std::this_thread::sleep_for(std::chrono::seconds(attempt));
        r = client.call("POST", target, opts);
    }
    bar.done();
    if (!r) {
        // A spec error names the file as well as the place in it (file:line: path: message).
        Error e = r.error();
        if (e.code == Errc::InvalidArgument && e.line > 0) {
            std::cerr << "error: " << file << ":" << e.line << ": "
                      << (e.path.empty() ? "" : e.path + ": ") << e.message << '\n';
            exitWith(kExitUsage);
        }
        failWith(e, &client.config());
    }
    return std::move(*r);
}

// A `kind: Job` document (YAML: a top-level "kind: Job" line; JSON: "kind": "Job").
bool isJobDocument(const std::string& body) {
    std::size_t pos = 0;
    while (pos < body.size()) {
        auto nl = body.find('\n', pos);
        std::string_view line(body.data() + pos, (nl == std::string::npos ? body.size() : nl) - pos);
        pos = nl == std::string::npos ? body.size() : nl + 1;
        if (!line.starts_with("kind:")) continue;
        line.remove_prefix(5);
        std::string v;
        for (char c : line)
            if (c != ' ' && c != '\t' && c != '\r' && c != '"' && c != '\'') v += c;
        return v == "Job";
    }
    auto k = body.find("\"kind\"");
    if (k == std::string::npos) return false;
    auto colon = body.find(':', k);
    auto q = colon == std::string::npos ? colon : body.find('"', colon);
    return q != std::string::npos && body.compare(q, 5, "\"Job\"") == 0;
}

// What applying a job document would change: "create", "update" (with the fields) or "none".
struct JobPlan {
    std::string name, action;
    json changes = json::array();  // [{"field", "before", "after"}]
    json asJson() const {
        return {{"kind", "Job"}, {"name", name}, {"action", action}, {"changes", changes}};
    }
};

// Parses the document as loomd does (the same jobs::parseJobDocument: hostlists expanded,
// errors with the file's line) and compares it with GET /api/v1/jobs/<name>.
JobPlan planJob(client::Client& client, const std::string& file, const std::string& body) {
    auto doc = jobs::parseJobDocument(body);
    if (!doc) {
        const Error& e = doc.error();
        std::cerr << "error: " << file << (e.line > 0 ? ":" + std::to_string(e.line) : "") << ": "
                  << (e.path.empty() ? "" : e.path + ": ") << e.message << '\n';
        exitWith(kExitUsage);
    }
    JobPlan plan{doc->name, "none"};
    auto stored = client.getJson("/api/v1/jobs/" + client::urlEncode(doc->name));
    if (!stored) {
        if (stored.error().code != Errc::NotFound) failWith(stored.error(), &client.config());
        plan.action = "create";
        return plan;
    }
    auto change = [&](const char* field, json before, json after) {
        if (before != after)
            plan.changes.push_back(
                {{"field", field}, {"before", std::move(before)}, {"after", std::move(after)}});
    };
    const json& s = *stored;
    change("owner", s.value("owner", ""), doc->owner);
    std::vector<std::string> hosts;
    if (auto h = s.find("hosts"); h != s.end() && h->is_array())
        for (const auto& x : *h) hosts.push_back(x.is_string() ? x.get<std::string>() : x.dump());
    if (hosts != doc->hosts)
        change("hosts", jobs::formatHostlist(hosts), jobs::formatHostlist(doc->hosts));
    change("pattern", s.value("pattern", ""), std::string(fabric::collectiveName(doc->pattern)));
    change("tensorParallel", s.value("tensorParallel", 0), doc->tensorParallel);
    change("state", s.value("state", ""), std::string(jobs::jobStateName(doc->state)));
    change("sharesHosts", s.value("sharesHosts", false), doc->sharesHosts);
    json labels = json::object();
    for (const auto& [k, v] : doc->labels) labels[k] = v;
    change("labels", s.value("labels", json::object()), labels);
    if (!plan.changes.empty()) plan.action = "update";
    return plan;
}

void printJobPlan(const JobPlan& p) {
    if (p.action == "none") {
        std::cout << "no changes: the stored job " << p.name << " already matches\n";
        return;
    }
    std::cout << (p.action == "create" ? "+ job/" : "~ job/") << p.name << '\n';
    for (const auto& c : p.changes)
        std::cout << "    " << client::field(c, "field") << ": " << c["before"].dump() << " -> "
                  << c["after"].dump() << '\n';
}

// Jobs go to POST /api/v1/jobs (create or replace); printed as kubectl does.
void applyJob(client::Client& client, const ApplyOptions& o, std::string body) {
    if (o.prune) failWith(Error::invalid("--prune is for cluster specs, not jobs"));
    if (o.dryRun) {
        const JobPlan p = planJob(client, o.file, body);
        if (o.output == "json")
            std::cout << p.asJson().dump(2) << '\n';
        else if (o.output == "yaml")
            std::cout << client::toYaml(p.asJson());
        else {
            printJobPlan(p);
            if (p.action != "none")
                std::cout << "plan (dry run, nothing written): job/" << p.name << ' '
                          << (p.action == "create" ? "created" : "configured") << '\n';
        }
        return;
    }
    client::RequestOptions opts;
    auto first = body.find_first_not_of(" \t\r\n");
    opts.contentType = body[first] == '{' ? "application/json" : "application/yaml";
    opts.body = std::move(body);
    auto r = client.call("POST", "/api/v1/jobs", opts);
    if (!r) {
        Error e = r.error();
        if (e.code == Errc::InvalidArgument && e.line > 0) {
            std::cerr << "error: " << o.file << ":" << e.line << ": "
                      << (e.path.empty() ? "" : e.path + ": ") << e.message << '\n';
            exitWith(kExitUsage);
        }
        failWith(e, &client.config());
    }
    if (o.output == "json") {
        std::cout << r->dump(2) << '\n';
        return;
    }
    if (o.output == "yaml") {
        std::cout << client::toYaml(*r);
        return;
    }
    std::cout << "job/" << client::field(*r, "name") << ' '
              << (r->value("created", false)   ? "created"
                  : r->value("changed", false) ? "configured"
                                               : "unchanged")
              << '\n';
}

void runApply(const ApplyOptions& o) {
    auto client = makeClient();
    std::string body = readInput(o.file);
    if (isJobDocument(body)) return applyJob(client, o, std::move(body));
    json r = sendSpec(client, o.file, o.dryRun, o.prune, o.idempotencyKey, o.retries,
                      std::move(body));
    if (o.output == "json") {
        std::cout << r.dump(2) << '\n';
        return;
    }
    if (o.output == "yaml") {
        std::cout << client::toYaml(r);
        return;
    }
    bool applied = r.is_object() && r.value("applied", false);
    printPlan(r.contains("plan") ? r["plan"] : r, applied, o.dryRun);
}

void runDiff(const std::string& file, bool prune, const std::string& output) {
    auto client = makeClient();
    // diff's contract (as kubectl's): 0 no differences, 1 differences, >1 an error.
    auto orTwo = [](auto&& f) {
        try {
            return f();
        } catch (const CLI::RuntimeError& e) {
            exitWith(e.get_exit_code() == kExitOk ? kExitOk : 2);
        }
    };
    std::string body = orTwo([&] { return readInput(file); });
    if (isJobDocument(body)) {
        const JobPlan p = orTwo([&] {
            if (prune) failWith(Error::invalid("--prune is for cluster specs, not jobs"));
            return planJob(client, file, body);
        });
        if (output == "json")
            std::cout << p.asJson().dump(2) << '\n';
        else if (output == "yaml")
            std::cout << client::toYaml(p.asJson());
        else if (p.action != "none")
            printJobPlan(p);
        exitWith(p.action == "none" ? kExitOk : 1);
    }
    json r = orTwo(
        [&] { return sendSpec(client, file, /*dryRun=*/true, prune, {}, 0, std::move(body)); });
    const json& plan = r.contains("plan") ? r["plan"] : r;
    const bool changes = planHasChanges(plan);
    // -o: the plan itself (kinds with their create/update/delete names and changed fields), for
    // scripts; the exit code keeps diff's contract either way.
    if (output == "json")
        std::cout << plan.dump(2) << '\n';
    else if (output == "yaml")
        std::cout << client::toYaml(plan);
    else if (changes)
        printPlan(plan, false, true);
    exitWith(changes ? 1 : 0);
}

}  // namespace

void addApplyCommands(CLI::App& app) {
    auto o = std::make_shared<ApplyOptions>();
    auto* apply = app.add_subcommand(
        "apply",
        "Make the stored inventory match a cluster spec, or create/replace a kind: Job (YAML or "
        "JSON; - for stdin)");
    apply->add_option("-f,--filename", o->file, "cluster spec or kind: Job file, or - for stdin")
        ->required();
    apply->add_flag("--dry-run", o->dryRun, "print the plan, write nothing");
    apply->add_flag("--prune", o->prune, "delete what the spec no longer names");
    apply->add_option("-o,--output", o->output, "json or yaml: the server's full answer")
        ->check(CLI::IsMember({"json", "yaml"}));
    apply->add_option("--idempotency-key", o->idempotencyKey,
                      "the request's Idempotency-Key (default: a random one per invocation); "
                      "the same key again returns the first result instead of applying twice");
    apply->add_option("--retries", o->retries,
                      "retries with the same key when the server is unavailable (default 3)")
        ->check(CLI::Range(0, 20));
    apply->callback([o] { runApply(*o); });

    auto file = std::make_shared<std::string>();
    auto prune = std::make_shared<bool>(false);
    auto* diff = app.add_subcommand(
        "diff", "Show what apply would change; exit 0 no differences, 1 differences, >1 error");
    diff->add_option("-f,--filename", *file, "cluster spec or kind: Job file, or - for stdin")
        ->required();
    diff->add_flag("--prune", *prune, "count deletions of what the spec no longer names");
    auto output = std::make_shared<std::string>();
    diff->add_option("-o,--output", *output, "json or yaml: the plan as data (default: text)")
        ->check(CLI::IsMember({"json", "yaml"}));
    diff->callback([file, prune, output] { runDiff(*file, *prune, *output); });
}

}  // namespace loom::loomctl
