// Phase plans (provisioning/src/phase_plan.cpp), as POST /api/v1/phaseplans receives them:
// parsed, then assigned to a small hall (selectors, globs).
#include "loom/provisioning/phase_plan.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto plan = loom::provisioning::parsePhasePlan(text);
    if (!plan) return 0;
    static const std::vector<loom::provisioning::RackRef> racks = {
        {"z1-r001", "z1"}, {"z1-r002", "z1"}, {"z2-r001", "z2"}, {"z2-r002", "z2"}};
    (void)loom::provisioning::assignRacks(*plan, racks);
    return 0;
}
