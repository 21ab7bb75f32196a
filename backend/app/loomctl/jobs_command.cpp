// `jobs place --gpus N [--pattern allreduce]`: where a new training job should run (issue 15
// item 4). Prints the proposed racks as a Slurm nodelist on stdout (`srun -w "$(loomctl jobs
// place --gpus 4096)"`), and on stderr what it expects of them against first fit by name.
// `jobs sync-slurm [-f squeue.json | --from-command [CMD]]`: Slurm's jobs into Loom (issue 15
// item 1) through POST /api/v1/jobs/sync/slurm.
#include <sys/wait.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

namespace loom::loomctl {

using nlohmann::json;

void addJobsCommands(CLI::App& app) {
    auto* jobs = app.add_subcommand(
        "jobs", "Training jobs: placement, Slurm sync (list them with get jobs)");
    jobs->require_subcommand(1);
    struct PlaceOpts {
        int gpus = 0;
        std::string pattern = "allreduce", output;
    };
    auto o = std::make_shared<PlaceOpts>();
    auto* place = jobs->add_subcommand(
        "place",
        "Propose racks (in service, healthy, not in a job) that maximise a new job's "
        "expected busbw; prints a Slurm nodelist");
    place->add_option("--gpus", o->gpus, "GPUs the job needs (whole racks are proposed)")
        ->required();
    place->add_option("--pattern", o->pattern, "allreduce (default), allgather or alltoall");
    place->add_option("-o,--output", o->output, "json or yaml: the server's full answer")
        ->check(CLI::IsMember({"json", "yaml"}));
    place->callback([o] {
        if (o->gpus <= 0) failWith(Error::invalid("must be a positive number of GPUs", "--gpus"));
        auto client = makeClient();
        auto r = orExit(
            client.postJson("/api/v1/placement", json{{"gpus", o->gpus}, {"pattern", o->pattern}}),
            client);
        if (o->output == "json") {
            std::cout << r.dump(2) << '\n';
            return;
        }
        if (o->output == "yaml") {
            std::cout << client::toYaml(r);
            return;
        }
        std::cerr << client::field(r, "gpusPlaced") << " GPUs in " << r["racks"].size()
                  << " racks, " << client::field(r, "zones") << " zone(s): expected busbw "
                  << client::field(r, "busBw")
                  << "% (first fit by name: " << client::field(r["firstFit"], "busBw") << "%)\n";
        std::cout << client::field(r, "nodelist") << '\n';
    });

    struct SyncOpts {
        std::string file, command;
        bool fromCommand = false;
        std::string output;
    };
    auto so = std::make_shared<SyncOpts>();
    auto* sync = jobs->add_subcommand(
        "sync-slurm",
        "Make Loom's jobs of source slurm what `squeue --json -t all` lists (jobs gone from it "
        "end as completed)");
    sync->add_option("-f,--file", so->file, "the output of `squeue --json -t all` (- for stdin)");
    auto* fromCmd = sync->add_option("--from-command", so->command,
                                     "run this command here for it (default: squeue --json -t all)")
                        ->expected(0, 1)
                        ->default_str("squeue --json -t all");
    sync->add_option("-o,--output", so->output, "json or yaml: the server's full answer")
        ->check(CLI::IsMember({"json", "yaml"}));
    sync->callback([so, fromCmd] {
        so->fromCommand = fromCmd->count() > 0;
        if (so->fromCommand == !so->file.empty())
            failWith(Error::invalid("give either -f FILE or --from-command", "-f"));
        std::string body, source;
        if (so->fromCommand) {
            if (so->command.empty()) so->command = "squeue --json -t all";
            source = "'" + so->command + "'";
            std::FILE* p = ::popen(so->command.c_str(), "r");
            if (!p) failWith(Error::unavailable("cannot run " + source));
            char buf[65536];
            for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) body.append(buf, n);
            const int st = ::pclose(p);
            if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                failWith(Error::unavailable(
                    source + " failed (exit " +
                    std::to_string(st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1) +
                    "); nothing was synced"));
        } else {
            source = so->file == "-" ? std::string("stdin") : so->file;
            body = readInput(so->file);
        }
        if (body.find_first_not_of(" \t\r\n") == std::string::npos)
            failWith(Error::invalid(source + " is empty"));
        auto client = makeClient();
        client::RequestOptions opts;
        opts.contentType = "application/json";
        opts.body = std::move(body);
        auto r = client.call("POST", "/api/v1/jobs/sync/slurm", opts);
        if (!r) {
            Error e = r.error();
            if (e.code == Errc::InvalidArgument) {
                std::cerr << "error: " << source << ": " << (e.path.empty() ? "" : e.path + ": ")
                          << e.message << '\n';
                exitWith(kExitUsage);
            }
            failWith(e, &client.config());
        }
        if (so->output == "json") {
            std::cout << r->dump(2) << '\n';
            return;
        }
        if (so->output == "yaml") {
            std::cout << client::toYaml(*r);
            return;
        }
        std::cout << "slurm: " << client::field(*r, "jobs") << " jobs, "
                  << client::field(*r, "created") << " new, " << client::field(*r, "updated")
                  << " updated, " << client::field(*r, "finished") << " ended\n";
    });
}

}  // namespace loom::loomctl
