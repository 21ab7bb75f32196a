#include "loom/telemetry/detection.hpp"

#include <yaml-cpp/yaml.h>

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

namespace {

int lineOf(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

Error bad(const YAML::Node& n, const std::string& path, const std::string& what) {
    return Error::invalid(what, path, lineOf(n));
}

Result<void> number(const YAML::Node& parent, const char* key, const std::string& path, double& out,
                    double min, double max) {
    auto n = parent[key];
    if (!n) return {};
    std::string p = path + "." + key;
    double v;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v))
        return fail(bad(n, p, "must be a number"));
    if (v < min || v > max)
        return fail(bad(n, p, "must be between " + std::to_string(static_cast<long long>(min)) +
                                  " and " + std::to_string(static_cast<long long>(max))));
    out = v;
    return {};
}

Result<void> boolean(const YAML::Node& parent, const char* key, const std::string& path, bool& out) {
    auto n = parent[key];
    if (!n) return {};
    bool v;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
        return fail(bad(n, path + "." + key, "must be true or false"));
    out = v;
    return {};
}

Result<void> intList(const YAML::Node& parent, const char* key, const std::string& path,
                     std::vector<int>& out) {
    auto n = parent[key];
    if (!n) return {};
    std::string p = path + "." + key;
    if (!n.IsSequence()) return fail(bad(n, p, "must be a list of XID codes"));
    std::vector<int> v;
    for (std::size_t i = 0; i < n.size(); ++i) {
        int x;
        if (!n[i].IsScalar() || !YAML::convert<int>::decode(n[i], x) || x <= 0 || x > 1000)
            return fail(bad(n[i], p + "[" + std::to_string(i) + "]", "must be an XID code (1-1000)"));
        v.push_back(x);
    }
    out = std::move(v);
    return {};
}

Result<void> onlyKeys(const YAML::Node& n, const std::string& path,
                      std::initializer_list<std::string_view> keys) {
    if (!n.IsMap()) return fail(bad(n, path, "must be a mapping"));
    for (auto it = n.begin(); it != n.end(); ++it) {
        auto k = it->first.as<std::string>();
        bool ok = false;
        for (auto key : keys) ok = ok || key == k;
        if (!ok) return fail(bad(it->first, path + "." + k, "unknown key"));
    }
    return {};
}

}  // namespace

Result<DetectionConfig> DetectionConfig::fromYaml(const YAML::Node& d) {
    DetectionConfig c;
    if (!d || d.IsNull()) return c;
    const std::string P = "detection";
    try {
        if (auto r = onlyKeys(d, P,
                              {"xid", "temperature", "eccDoubleBit", "rowRemapFailure",
                               "nvlinkCrcPerSecond", "linkDown", "flapping", "linkErrorsPerSecond",
                               "pfcPausePerSecond", "staleAfterSeconds"});
            !r)
            return fail(r.error());
        if (auto x = d["xid"]) {
            if (auto r = onlyKeys(x, P + ".xid", {"critical", "ignore"}); !r) return fail(r.error());
            if (auto r = intList(x, "critical", P + ".xid", c.criticalXids); !r) return fail(r.error());
            if (auto r = intList(x, "ignore", P + ".xid", c.ignoredXids); !r) return fail(r.error());
        }
        if (auto t = d["temperature"]) {
            const std::string tp = P + ".temperature";
            if (auto r = onlyKeys(t, tp, {"warningC", "criticalC", "hysteresisC"}); !r) return fail(r.error());
            if (auto r = number(t, "warningC", tp, c.tempWarningC, 0, 200); !r) return fail(r.error());
            if (auto r = number(t, "criticalC", tp, c.tempCriticalC, 0, 200); !r) return fail(r.error());
            if (auto r = number(t, "hysteresisC", tp, c.tempHysteresisC, 0, 50); !r) return fail(r.error());
            if (c.tempCriticalC < c.tempWarningC)
                return fail(bad(t, tp + ".criticalC", "must be >= warningC"));
        }
        if (auto r = boolean(d, "eccDoubleBit", P, c.eccDoubleBit); !r) return fail(r.error());
        if (auto r = boolean(d, "rowRemapFailure", P, c.rowRemapFailure); !r) return fail(r.error());
        if (auto r = boolean(d, "linkDown", P, c.linkDown); !r) return fail(r.error());
        if (auto r = number(d, "nvlinkCrcPerSecond", P, c.nvlinkCrcPerSecond, 0, 1e12); !r) return fail(r.error());
        if (auto r = number(d, "linkErrorsPerSecond", P, c.linkErrorsPerSecond, 0, 1e12); !r) return fail(r.error());
        if (auto r = number(d, "pfcPausePerSecond", P, c.pfcPausePerSecond, 0, 1e12); !r) return fail(r.error());
        if (auto r = number(d, "staleAfterSeconds", P, c.staleAfterSeconds, 1, 86400); !r) return fail(r.error());
        if (auto f = d["flapping"]) {
            const std::string fp = P + ".flapping";
            if (auto r = onlyKeys(f, fp, {"transitions", "windowSeconds", "quietIntervals", "intervalSeconds"});
                !r)
                return fail(r.error());
            double tr = c.flapTransitions;
            if (auto r = number(f, "transitions", fp, tr, 0, 1000); !r) return fail(r.error());
            c.flapTransitions = static_cast<int>(tr);
            if (auto r = number(f, "windowSeconds", fp, c.flapWindowSeconds, 1, 86400); !r) return fail(r.error());
            double qi = c.flapQuietIntervals;
            if (auto r = number(f, "quietIntervals", fp, qi, 1, 1000); !r) return fail(r.error());
            if (qi != static_cast<int>(qi))
                return fail(bad(f["quietIntervals"], fp + ".quietIntervals", "must be a whole number"));
            c.flapQuietIntervals = static_cast<int>(qi);
            if (auto r = number(f, "intervalSeconds", fp, c.flapIntervalSeconds, 0.1, 3600); !r)
                return fail(r.error());
        }
    } catch (const YAML::Exception& e) {
        return fail(Error::invalid(e.msg, P, e.mark.line >= 0 ? e.mark.line + 1 : 0));
    }
    return c;
}

Result<DetectionConfig> DetectionConfig::fromLoomdYaml(std::string_view text) {
    try {
        YAML::Node root = YAML::Load(std::string(text));
        if (!root || root.IsNull()) return DetectionConfig{};
        if (!root.IsMap()) return fail(Error::invalid("must be a mapping", "", 1));
        return fromYaml(root["detection"]);
    } catch (const YAML::Exception& e) {
        return fail(Error::invalid(e.msg, "", e.mark.line >= 0 ? e.mark.line + 1 : 0));
    }
}

}  // namespace loom::telemetry
