// The loomd.yaml readers: detection rules, simulator, scrape targets (configs/loomd.yaml).
#include "loom/telemetry/detection.hpp"
#include "loom/telemetry/simulator.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)loom::telemetry::DetectionConfig::fromLoomdYaml(text);
    (void)loom::telemetry::SimulatorConfig::fromLoomdYaml(text);
    return 0;
}
