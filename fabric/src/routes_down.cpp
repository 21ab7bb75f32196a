#include "loom/fabric/routes_down.hpp"

#include <algorithm>

namespace loom::fabric {

bool routesDown(const SummaryRouter& r, std::int32_t sw, std::int32_t target) {
    const auto g = r.groupOf(sw, target);
    if (g < 0) return false;
    const auto hops = r.group(g);
    const auto down = r.topology().downLinks(sw);
    return !hops.empty() && std::all_of(hops.begin(), hops.end(), [&](const NextHop& h) {
        return std::find(down.begin(), down.end(), h.link) != down.end();
    });
}

}  // namespace loom::fabric
