// `jobs place --gpus N [--pattern allreduce]`: where a new training job should run (issue 15
// item 4). Prints the proposed racks as a Slurm nodelist on stdout (`srun -w "$(loomctl jobs
// place --gpus 4096)"`), and on stderr what it expects of them against first fit by name.
#include <iostream>
#include <memory>

#include "loomctl/commands.hpp"
#include "loomctl/context.hpp"

namespace loom::loomctl {

using nlohmann::json;

void addJobsCommands(CLI::App& app) {
    auto* jobs = app.add_subcommand("jobs", "Training jobs: placement (list them with get jobs)");
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
        if (o->gpus <= 0) failWith(Error::invalid("--gpus must be positive", "--gpus"));
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
}

}  // namespace loom::loomctl
