// loomd apply -f FILE [--dry-run] [--prune] [--db URL] [--state-dir DIR]: expands a cluster
// spec, diffs it against the stored inventory, prints the plan and applies it in one
// transaction, directly on the database (no server needed).
#include "loomd/commands.hpp"

#include "loom/backend/db_options.hpp"
#include "loom/client/progress.hpp"
#include "loom/db/inventory_query.hpp"
#include "loom/db/inventory_repository.hpp"
#include "loom/inventory/digest.hpp"
#include "loom/inventory/plan.hpp"
#include "loom/inventory/spec.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>

namespace loom::loomd {
namespace {

struct ApplyArgs {
    std::string file;
    bool dryRun = false;
    bool prune = false;
    std::string actor;
    backend::DbOptions db;
};

int exitCodeFor(const Error& e) { return e.code == Errc::InvalidArgument || e.code == Errc::TooLarge ? 2 : 1; }

int runApply(const ApplyArgs& args) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    client::ProgressBar bar;

    bar.update("reading " + args.file);
    auto desired = inventory::loadClusterSpecFile(args.file);
    if (!desired) {
        bar.finish();
        const Error& e = desired.error();
        // file:line: path: message, the form editors and CI logs link to.
        std::cerr << args.file;
        if (e.line > 0) std::cerr << ':' << e.line;
        std::cerr << ": ";
        if (!e.path.empty()) std::cerr << e.path << ": ";
        std::cerr << e.message << "\n";
        return exitCodeFor(e);
    }

    bar.update("opening the database");
    auto db = backend::openDatabase(args.db);
    if (!db) {
        bar.finish();
        std::cerr << "loomd apply: " << db.error().toString() << "\n";
        return 1;
    }
    auto conn = db->database.connect();
    if (!conn) {
        bar.finish();
        std::cerr << "loomd apply: " << conn.error().toString() << "\n";
        return 1;
    }

    // A spec whose content digests all equal those the last apply stored changes nothing:
    // no need to load and plan the stored inventory (db 0013; a missing digest, e.g. after
    // another writer, means the full path).
    const auto digests = inventory::contentDigests(*desired);
    if (auto same = db::storedDigestsMatch(*conn, digests, args.prune); same && *same) {
        bar.finish();
        std::cout << "no changes\n";
        if (args.dryRun) std::cout << "dry run: nothing applied\n";
        return 0;
    }

    bar.update("loading the stored inventory");
    auto snap = db::loadSnapshot(*conn);
    if (!snap) {
        bar.finish();
        std::cerr << "loomd apply: " << snap.error().toString() << "\n";
        return 1;
    }
    bar.update("planning");
    inventory::Plan plan = inventory::plan(*desired, snap->inventory, {.prune = args.prune});
    bar.finish();
    std::cout << formatPlan(plan) << std::flush;
    if (plan.hasDuplicates()) {
        std::cerr << args.file << ": the spec expands to duplicate names (see above)\n";
        return 2;
    }
    if (args.dryRun) {
        std::cout << "dry run: nothing applied\n";
        return 0;
    }
    if (plan.empty()) {  // formatPlan said "no changes"; store the digests for next time
        (void)db::applyPlan(*conn, plan, *desired,
                            {.actor = args.actor, .expectedGeneration = snap->generation, .digests = &digests});
        return 0;
    }

    auto result = db::applyPlan(
        *conn, plan, *desired,
        {.actor = args.actor,
         .expectedGeneration = snap->generation,
         .progress = [&](std::string_view stage, std::size_t done, std::size_t total) {
             bar.update(stage, done, total);
         },
         .digests = &digests});
    bar.finish();
    if (!result) {
        std::cerr << "loomd apply: " << result.error().toString() << "\n";
        return exitCodeFor(result.error());
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    // The name search indexes a bulk apply leaves to after its commit are built by `loomd
    // serve` in its background (at start, or when it sees this apply's commit): lists are
    // correct without them, and this command does not wait for them.
    std::cout << "applied: " << result->created << " created, " << result->updated
              << " updated, " << result->deleted << " deleted in " << ms << " ms (generation "
              << result->generation << ")\n";
    return 0;
}

}  // namespace

void addApplyCommand(CLI::App& app) {
    auto args = std::make_shared<ApplyArgs>();
    const char* user = std::getenv("USER");
    args->actor = user && *user ? user : "loomd";
    CLI::App* cmd = app.add_subcommand(
        "apply", "Apply a cluster spec to the inventory: plan, print, write in one transaction");
    cmd->add_option("-f,--filename,--file", args->file, "cluster spec (YAML or JSON)")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_flag("--dry-run", args->dryRun, "print the plan, write nothing");
    cmd->add_flag("--prune", args->prune, "delete what the spec no longer names");
    cmd->add_option("--actor", args->actor, "name recorded in the change log (default: $USER)");
    backend::addDbOptions(*cmd, args->db);
    cmd->callback([args] { throw CLI::RuntimeError(runApply(*args)); });
}

}  // namespace loom::loomd
