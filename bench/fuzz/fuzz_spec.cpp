// The cluster spec parser and expansion (inventory/src/spec_parse.cpp, expand.cpp): any bytes
// must give a spec or an Error, within the limits, never a crash, a hang or unbounded memory.
#include "loom/inventory/spec.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    loom::inventory::SpecLimits limits;
    // Expansion of a valid 24k spec takes ~1 s; keep each run short, the parser is the target.
    limits.maxEntities = 50'000;
    // yaml-cpp can emit 200k events for a 418-byte malformed document (a regression seed in
    // seeds/spec); the node guard stops it at maxNodes: 40 ms in a release build, 1.6 s under
    // ASan. A tenth of the limit keeps such runs well under the 1 s hang threshold.
    limits.maxNodes = 20'000;
    auto inv = loom::inventory::loadClusterSpec(text, limits);
    if (!inv) (void)inv.error().toString();
    return 0;
}
