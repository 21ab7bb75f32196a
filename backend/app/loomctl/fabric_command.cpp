// `fabric export|verify|simulate -f SPEC`: the fabric engine offline, on a cluster spec file
// (no server). The live variants (routes, config, impact, degradation) are in
// fabric_server_command.cpp.
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "loom/fabric/export.hpp"
#include "loom/fabric/impact.hpp"
#include "loom/fabric/routing.hpp"
#include "loom/fabric/verify.hpp"
#include "loom/inventory/spec.hpp"
#include "loomctl/commands.hpp"

namespace loom::loomctl {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Offline {
    std::string spec;
    std::vector<std::string> failLinks, failSwitches;
};

bool onTerminal() { return ::isatty(STDERR_FILENO) != 0; }

void progress(const std::string& msg) {
    if (onTerminal()) std::cerr << "\r\033[K" << msg << std::flush;
}
void progressDone() {
    if (onTerminal()) std::cerr << "\r\033[K" << std::flush;
}

double msSince(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Loads the spec as a topology; prints errors as `file:line: path: message` and exits 2.
fabric::Topology loadTopology(const Offline& o) {
    progress("loading " + o.spec + " ...");
    auto inv = inventory::loadClusterSpecFile(o.spec);
    if (!inv) {
        progressDone();
        const auto& e = inv.error();
        std::cerr << o.spec << ':' << e.line << ": " << (e.path.empty() ? "" : e.path + ": ")
                  << e.message << '\n';
        throw CLI::RuntimeError(2);
    }
    progress("building the topology graph ...");
    auto topo = fabric::buildTopology(*inv, {.plannedIsUp = true});
    if (!topo) {
        progressDone();
        const auto& e = topo.error();
        std::cerr << o.spec << ": " << (e.path.empty() ? "" : e.path + ": ") << e.message << '\n';
        throw CLI::RuntimeError(2);
    }
    return std::move(*topo);
}

// Routes the topology (a Router, or a SummaryRouter: the summarised RoCE tables alone) with the
// --fail-link/--fail-switch failures; exits 2 naming an unknown link or switch.
template <class R = fabric::Router>
R route(const Offline& o, fabric::Topology topo) {
    progress("routing " + std::to_string(topo.switchCount()) + " switches, " +
             std::to_string(topo.linkCount()) + " links ...");
    R router(std::move(topo));
    const auto& t = router.topology();
    for (const auto& name : o.failLinks) {
        auto l = t.findLink(name);
        if (l == fabric::kNone) {
            progressDone();
            std::cerr << "--fail-link: no backend link named " << name << '\n';
            throw CLI::RuntimeError(2);
        }
        router.setLinkState(l, fabric::LinkState::Down);
    }
    for (const auto& name : o.failSwitches) {
        auto s = t.findSwitch(name);
        if (s == fabric::kNone) {
            progressDone();
            std::cerr << "--fail-switch: no backend switch named " << name << '\n';
            throw CLI::RuntimeError(2);
        }
        router.setSwitchUp(s, false);
    }
    progressDone();
    return router;
}

fabric::Router loadAndRoute(const Offline& o) { return route(o, loadTopology(o)); }

void addOfflineOptions(CLI::App* cmd, Offline& o) {
    cmd->add_option("-f,--filename,--file", o.spec, "Cluster spec (YAML)")->required();
    cmd->add_option("--fail-link", o.failLinks, "Treat this backend link as down (repeatable)");
    cmd->add_option("--fail-switch", o.failSwitches, "Treat this backend switch as down (repeatable)");
}

// Writes the streamed export under a directory; with gzip every file gets `.gz` and every
// chunk becomes one gzip member, compressed on the exporter's threads (a file of members is
// one valid gzip stream: gunzip / zcat read it whole).
class DirectorySink : public fabric::ExportSink {
public:
    DirectorySink(fs::path dir, bool gzip) : dir_(std::move(dir)), gzip_(gzip) {}
    ~DirectorySink() override {
        if (file_) std::fclose(file_);
    }

    Result<void> open(const std::string& name) override {
        path_ = dir_ / (gzip_ ? name + ".gz" : name);
        std::error_code ec;
        fs::create_directories(path_.parent_path(), ec);
        if (ec) return fail(Error::internal(path_.parent_path().string() + ": " + ec.message()));
        file_ = std::fopen(path_.c_str(), "wb");
        if (!file_) return fail(Error::internal(path_.string() + ": " + std::strerror(errno)));
        std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
        ++files_;
        if (files_ % 64 == 0) progress("writing file " + std::to_string(files_));
        return {};
    }
    void encode(std::string& chunk) override {
        if (!gzip_ || chunk.empty()) return;
        z_stream z{};
        // windowBits 15 + 16: a gzip header and trailer; level 1: the dump is repetitive text,
        // speed matters more than the last few percent.
        if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            chunk.clear();
            failedEncode_ = true;
            return;
        }
        std::string out(deflateBound(&z, chunk.size()), '\0');
        z.next_in = reinterpret_cast<Bytef*>(chunk.data());
        z.avail_in = static_cast<uInt>(chunk.size());
        z.next_out = reinterpret_cast<Bytef*>(out.data());
        z.avail_out = static_cast<uInt>(out.size());
        int rc = deflate(&z, Z_FINISH);
        out.resize(z.total_out);
        deflateEnd(&z);
        if (rc != Z_STREAM_END) failedEncode_ = true;
        chunk = std::move(out);
    }
    Result<void> write(std::string_view chunk) override {
        if (failedEncode_) return fail(Error::internal(path_.string() + ": gzip compression failed"));
        if (std::fwrite(chunk.data(), 1, chunk.size(), file_) != chunk.size())
            return fail(Error::internal(path_.string() + ": " + std::strerror(errno)));
        bytes_ += chunk.size();
        return {};
    }
    Result<void> close() override {
        int rc = std::fclose(file_);
        file_ = nullptr;
        if (rc != 0) return fail(Error::internal(path_.string() + ": " + std::strerror(errno)));
        return {};
    }

    std::size_t files() const { return files_; }
    std::size_t bytes() const { return bytes_; }

private:
    fs::path dir_;
    bool gzip_;
    fs::path path_;
    std::FILE* file_ = nullptr;
    std::size_t files_ = 0, bytes_ = 0;
    bool failedEncode_ = false;
};

void runExport(const Offline& o, const std::string& formatName, const std::string& outDir,
               bool gzip, int threads, bool names, bool lidsOnly, const std::string& frrVersion,
               bool perRack) {
    auto format = fabric::parseExportFormat(formatName);
    if (!format) {
        std::cerr << "--format: must be one of frr, opensm, slurm, json (got " << formatName << ")\n";
        throw CLI::RuntimeError(2);
    }
    if (threads < 0) {
        std::cerr << "--threads: must be 0 (one per core) or more (got " << threads << ")\n";
        throw CLI::RuntimeError(2);
    }
    auto t0 = Clock::now();
    auto topo = loadTopology(o);
    // RoCE frr/json/slurm are written from the summarised tables alone (SummaryRouter): the same
    // bytes as from a full Router, without its switches × racks tables (~400 MB at 98k).
    std::optional<fabric::Router> router;
    std::optional<fabric::SummaryRouter> summary;
    if (topo.type == inventory::FabricType::Roce && *format != fabric::ExportFormat::Opensm)
        summary.emplace(route<fabric::SummaryRouter>(o, std::move(topo)));
    else
        router.emplace(route(o, std::move(topo)));
    std::error_code ec;
    fs::create_directories(outDir, ec);
    if (ec) {
        std::cerr << outDir << ": " << ec.message() << '\n';
        throw CLI::RuntimeError(1);
    }
    auto t1 = Clock::now();
    DirectorySink sink(outDir, gzip);
    const fabric::ExportOptions options{.threads = threads,
                                        .opensmNames = names && !lidsOnly,
                                        .opensmGuids = !lidsOnly,
                                        .frrVersion = frrVersion,
                                        .summarise = !perRack};
    auto ok = summary ? fabric::writeExport(*summary, *format, sink, options)
                      : fabric::writeExport(*router, *format, sink, options);
    progressDone();
    if (!ok) {
        std::cerr << ok.error().toString() << '\n';
        throw CLI::RuntimeError(ok.error().code == Errc::InvalidArgument ? 2 : 1);
    }
    std::cout << "wrote " << sink.files() << " " << formatName << " file(s)" << (gzip ? " (gzip)" : "")
              << ", " << sink.bytes() << " bytes, to " << outDir << " in "
              << static_cast<long>(msSince(t0)) << " ms (writing " << static_cast<long>(msSince(t1))
              << " ms)\n";
}

// RoCE is checked on the summarised tables (SummaryRouter, what loomd holds) unless perRack:
// at 98k the full tables are 41.5 M entries and ~7 s of routing, the summarised ones 0.3 s.
void runVerify(const Offline& o, bool perRack) {
    auto topo = loadTopology(o);
    std::optional<fabric::Router> router;
    std::optional<fabric::SummaryRouter> summary;
    if (topo.type == inventory::FabricType::Roce && !perRack)
        summary.emplace(route<fabric::SummaryRouter>(o, std::move(topo)));
    else
        router.emplace(route(o, std::move(topo)));
    const auto& t = summary ? summary->topology() : router->topology();
    auto t0 = Clock::now();
    auto rep = summary ? fabric::verify(*summary) : fabric::verify(*router);
    std::cout << "fabric " << inventory::fabricTypeName(t.type) << ": " << t.switchCount()
              << " switches, " << t.linkCount() << " links, " << t.nicCount() << " NIC ports\n"
              << (summary ? "summarised entries checked " : "entries checked ")
              << rep.entriesChecked << ", rack pairs " << rep.rackPairs << " (unreachable "
              << rep.rackPairsUnreachable << "), host pairs " << rep.hostPairs << " (unreachable "
              << rep.hostPairsUnreachable << ")\n"
              << "loops " << rep.loops << ", down-then-up turns " << rep.downUpTurns << '\n'
              << "routes per fabric link: max " << rep.maxLinkRoutes << ", avg "
              << rep.avgLinkRoutes << '\n';
    for (const auto& p : rep.problems) std::cout << "  " << p << '\n';
    if (rep.nonUniformUpGroups > 0)
        std::cout << "warning: " << rep.nonUniformUpGroups
                  << " switch(es) with up-groups of unequal width:\n";
    for (const auto& w : rep.warnings) std::cout << "  warning: " << w << '\n';
    std::cout << (rep.ok() ? "OK" : "FAILED") << " (" << static_cast<long>(msSince(t0)) << " ms)\n";
    if (!rep.ok()) throw CLI::RuntimeError(1);
}

std::vector<std::string> splitList(const std::vector<std::string>& in) {
    std::vector<std::string> out;
    for (const auto& s : in) {
        std::stringstream ss(s);
        std::string item;
        while (std::getline(ss, item, ','))
            if (!item.empty()) out.push_back(item);
    }
    return out;
}

void runSimulate(const Offline& o, const std::vector<std::string>& hostArgs,
                 const std::string& collectiveName) {
    auto c = fabric::parseCollective(collectiveName);
    if (!c) {
        std::cerr << "--collective: must be allreduce, allgather or alltoall (got "
                  << collectiveName << ")\n";
        throw CLI::RuntimeError(2);
    }
    auto router = loadAndRoute(o);
    auto hosts = splitList(hostArgs);
    if (hosts.empty()) hosts = router.topology().hostNames;  // the whole cluster
    auto res = fabric::impactByName(router, hosts, *c);
    if (!res) {
        std::cerr << res.error().toString() << '\n';
        throw CLI::RuntimeError(2);
    }
    std::cout << fabric::collectiveName(*c) << " over " << hosts.size() << " hosts ("
              << res->flows << " flows): busbw " << res->busBwGbps << " Gb/s, normalized "
              << res->busBwNormalized << "/100";
    if (res->unroutedFlows) std::cout << ", " << res->unroutedFlows << " flows unroutable";
    std::cout << '\n';
    for (const auto& b : res->bottlenecks)
        std::cout << "  bottleneck " << b.name << ": " << b.flows << " flows, " << b.gbpsPerFlow
                  << " Gb/s each\n";
}

}  // namespace

void addFabricCommands(CLI::App& fabric) {
    auto ex = std::make_shared<Offline>();
    auto format = std::make_shared<std::string>();
    auto outDir = std::make_shared<std::string>();
    auto* exportCmd = fabric.add_subcommand(
        "export", "Route a cluster spec offline and write frr|opensm|slurm|json configs to a directory");
    addOfflineOptions(exportCmd, *ex);
    exportCmd->add_option("--format", *format, "frr, opensm, slurm or json")->required();
    exportCmd->add_option("-d,--output-dir,-o,--output", *outDir,
                          "Output directory (-o/--output: the older spelling, kept for scripts)")
        ->required();
    auto gzip = std::make_shared<bool>(false);
    auto threads = std::make_shared<int>(0);
    exportCmd->add_flag("--gzip", *gzip, "Compress every file (name.gz)");
    exportCmd->add_option("--threads", *threads,
                          "Threads formatting the opensm dump (0: one per core)");
    // opensm: names go once into node-name-map; --names puts them on every LFT line as
    // OpenSM's own dump does (twice the bytes). --no-names is the default since issue 37,
    // still accepted for scripts.
    auto names = std::make_shared<bool>(false);
    auto noNames = std::make_shared<bool>(false);
    auto* namesFlag = exportCmd->add_flag(
        "--names", *names,
        "opensm: every LFT line ends in OpenSM's `Channel Adapter …: 'name'` comment, as "
        "OpenSM's own dump (twice the bytes; by default the names are in node-name-map)");
    auto* noNamesFlag = exportCmd->add_flag(
        "--no-names", *noNames, "opensm: LFT lines without the node names (the default)");
    auto lidsOnly = std::make_shared<bool>(false);
    auto* lidsOnlyFlag = exportCmd->add_flag(
        "--lids-only", *lidsOnly,
        "opensm: LFT lines of LID and port only (a quarter of the default; OpenSM takes the "
        "LIDs as they are: start it with the exported guid2lid)");
    namesFlag->excludes(noNamesFlag)->excludes(lidsOnlyFlag);
    auto frrVersion = std::make_shared<std::string>("8.4");
    exportCmd->add_option("--frr-version", *frrVersion,
                          "frr: the FRR version the configs are for (default 8.4, Debian 12)");
    auto perRack = std::make_shared<bool>(false);
    exportCmd->add_flag("--per-rack", *perRack,
                        "json/frr (RoCE): one route per rack and no zone aggregates (the output "
                        "before routes were summarised)");
    exportCmd->callback([=] {
        runExport(*ex, *format, *outDir, *gzip, *threads, *names, *lidsOnly, *frrVersion, *perRack);
        throw CLI::RuntimeError(0);
    });

    auto vo = std::make_shared<Offline>();
    auto* verifyCmd = fabric.add_subcommand(
        "verify", "Route a cluster spec offline and check reachability, loops, turns and balance");
    addOfflineOptions(verifyCmd, *vo);
    auto verifyPerRack = std::make_shared<bool>(false);
    verifyCmd->add_flag("--per-rack", *verifyPerRack,
                        "RoCE: route and check the full per-rack tables (the default checks the "
                        "summarised tables loomd holds)");
    verifyCmd->callback([=] {
        runVerify(*vo, *verifyPerRack);
        throw CLI::RuntimeError(0);
    });

    auto so = std::make_shared<Offline>();
    auto hosts = std::make_shared<std::vector<std::string>>();
    auto coll = std::make_shared<std::string>("allreduce");
    auto* simCmd = fabric.add_subcommand(
        "simulate", "Offline failure impact: bus bandwidth of a collective over hosts of a spec");
    addOfflineOptions(simCmd, *so);
    simCmd->add_option("--hosts", *hosts, "Host names (comma separated; default: all hosts)");
    simCmd->add_option("--collective", *coll, "allreduce, allgather or alltoall");
    simCmd->callback([=] {
        runSimulate(*so, *hosts, *coll);
        throw CLI::RuntimeError(0);
    });
}

}  // namespace loom::loomctl
