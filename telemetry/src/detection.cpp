#include "loom/telemetry/detection.hpp"

namespace loom::telemetry {

std::string_view severityName(Severity s) {
    switch (s) {
        case Severity::Info: return "info";
        case Severity::Warning: return "warning";
        case Severity::Critical: return "critical";
    }
    return "info";
}

std::optional<Severity> parseSeverity(std::string_view s) {
    if (s == "info") return Severity::Info;
    if (s == "warning") return Severity::Warning;
    if (s == "critical") return Severity::Critical;
    return std::nullopt;
}

}  // namespace loom::telemetry
