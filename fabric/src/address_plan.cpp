// AddressPlan: the deterministic ASNs, loopbacks and rack prefixes of a RoCE fabric
// (routing.hpp), and the zone aggregates of summarised routing (summary.hpp).
#include "loom/fabric/routing.hpp"

namespace loom::fabric {

std::uint32_t AddressPlan::asn(const Topology& t, std::int32_t sw) {
    switch (t.switchTier[sw]) {
        case 3: return 4200000000u;
        case 2:
            return 4200000001u + static_cast<std::uint32_t>(
                                     t.switchZone[sw] != kNone ? t.switchZone[sw]
                                                               : 500 + t.switchOrdinal[sw]);
        default: return 4200001000u + static_cast<std::uint32_t>(t.switchOrdinal[sw]);
    }
}

std::string AddressPlan::loopback(std::int32_t sw) {
    return "10.254." + std::to_string((sw >> 8) & 255) + "." + std::to_string(sw & 255);
}

namespace {
std::string ipv4(std::uint32_t a) {
    return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
           std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255);
}
}  // namespace

std::string AddressPlan::rackPrefix(std::int32_t ordinal) {
    return ipv4((10u << 24) + (128u << 16) + 64u * static_cast<std::uint32_t>(ordinal)) + "/26";
}
std::string AddressPlan::rackGateway(std::int32_t ordinal) {
    return ipv4((10u << 24) + (128u << 16) + 64u * static_cast<std::uint32_t>(ordinal) + 62) +
           "/26";
}

}  // namespace loom::fabric
