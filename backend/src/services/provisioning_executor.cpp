// The provisioning executor chosen by loomd.yaml, --simulate and the LOOM_PROVISIONING_*
// environment (scripts and tests). Split from provisioning_service.cpp.
#include <chrono>
#include <cstdlib>
#include <string>

#include "loom/backend/provisioning_service.hpp"

namespace loom::backend {
namespace prov = loom::provisioning;

namespace {

std::string envOr(const char* name, std::string def) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : def;
}

}  // namespace

Result<ExecutorSettings> executorSettings(ExecutorSettings out, bool simulate) {
    if (out.kind.empty()) out.kind = simulate ? "simulated" : "off";
    // Environment overrides (scripts and tests).
    out.kind = envOr("LOOM_PROVISIONING_EXECUTOR", out.kind);
    if (out.kind != "off" && out.kind != "simulated" && out.kind != "command")
        return fail(
            Error::invalid("LOOM_PROVISIONING_EXECUTOR must be off, simulated or command, not '" +
                           out.kind + "'"));
    if (auto v = envOr("LOOM_PROVISIONING_SEED", ""); !v.empty())
        out.simulated.seed = std::strtoull(v.c_str(), nullptr, 10);
    if (auto v = envOr("LOOM_PROVISIONING_FAIL_RATE", ""); !v.empty())
        out.simulated.hostDiagFailRate = std::atof(v.c_str());
    if (auto v = envOr("LOOM_PROVISIONING_DELAY_MS", ""); !v.empty()) {
        const std::chrono::milliseconds d(std::atoi(v.c_str()));
        out.simulated.physicalDelay = out.simulated.cablingDelay = out.simulated.burnInDelay = d;
    }
    for (double r : {out.simulated.hostDiagFailRate, out.simulated.miscablingRate})
        if (r < 0 || r > 1)
            return fail(Error::invalid("failure rates must be between 0 and 1", "provisioning"));
    return out;
}

std::shared_ptr<prov::Executor> makeExecutor(const ExecutorSettings& s) {
    if (s.kind == "simulated") return std::make_shared<prov::SimulatedExecutor>(s.simulated);
    if (s.kind == "command") return std::make_shared<prov::CommandExecutor>(s.command);
    return nullptr;
}

}  // namespace loom::backend
