// The Prometheus text exposition parser (telemetry/src/prom_text.cpp), as POST /api/v1/telemetry
// and the scraper feed it.
#include "loom/telemetry/prom_text.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    std::size_t labels = 0;
    std::string scratch;
    auto r = loom::telemetry::parsePromText(text, [&](const loom::telemetry::PromSample& s) {
        labels += s.labelCount;
        for (std::size_t i = 0; i < s.labelCount; ++i)
            loom::telemetry::unescapeLabelValue(s.labels[i].value, scratch);
    });
    if (!r) (void)r.error().toString();
    return 0;
}
