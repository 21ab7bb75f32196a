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

std::vector<std::string> AddressPlan::rackRangePrefixes(std::int32_t first, std::int32_t last) {
    std::vector<std::string> out;
    std::uint64_t lo = static_cast<std::uint64_t>(first) * 64;
    const std::uint64_t end = (static_cast<std::uint64_t>(last) + 1) * 64;
    const std::uint64_t base = (10u << 24) + (128u << 16);
    while (lo < end) {
        // The largest aligned block starting at lo that stays within [lo, end).
        std::uint64_t size = lo == 0 ? (std::uint64_t{1} << 23) : (lo & (~lo + 1));  // 10.128/9 is aligned
        while (size > end - lo) size >>= 1;
        int bits = 0;
        while ((std::uint64_t{1} << bits) < size) ++bits;
        out.push_back(ipv4(static_cast<std::uint32_t>(base + lo)) + "/" + std::to_string(32 - bits));
        lo += size;
    }
    return out;
}

}  // namespace loom::fabric
