#include "loom/provisioning/phase_plan.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace loom::provisioning {
namespace {

int lineOf(const YAML::Node& n) { return n.IsDefined() ? n.Mark().line + 1 : 0; }

std::size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

// Rejects keys not in `known`, suggesting the nearest one: typos in a plan must not be
// silently ignored (a misspelt `concurency` would otherwise roll out at the default).
Result<void> checkKeys(const YAML::Node& map, std::initializer_list<std::string_view> known,
                       const std::string& path) {
    if (!map.IsMap()) return fail(Error::invalid("must be a mapping", path, lineOf(map)));
    for (const auto& kv : map) {
        const auto key = kv.first.as<std::string>();
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        std::string_view best;
        std::size_t bestD = 1000;
        for (auto k : known)
            if (auto d = editDistance(key, k); d < bestD) bestD = d, best = k;
        std::string msg = "unknown key '" + key + "'";
        if (bestD <= 3) msg += " (did you mean '" + std::string(best) + "'?)";
        return fail(Error::invalid(msg, path.empty() ? key : path + "." + key,
                                   kv.first.Mark().line + 1));
    }
    return {};
}

std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

Result<std::string> getString(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) return fail(Error::invalid("must be a string", path, lineOf(n)));
    return n.as<std::string>();
}

Result<double> getNumber(const YAML::Node& n, const std::string& path, double lo, double hi) {
    if (!n.IsScalar()) return fail(Error::invalid("must be a number", path, lineOf(n)));
    double v = 0;
    if (!YAML::convert<double>::decode(n, v) || !std::isfinite(v))
        return fail(Error::invalid("must be a number, got '" + n.Scalar() + "'", path, lineOf(n)));
    if (v < lo || v > hi)
        return fail(Error::invalid("must be between " + std::to_string(lo) + " and " +
                                       std::to_string(hi) + ", got " + n.Scalar(),
                                   path, lineOf(n)));
    return v;
}

Result<int> getInt(const YAML::Node& n, const std::string& path, int lo, int hi) {
    if (!n.IsScalar()) return fail(Error::invalid("must be an integer", path, lineOf(n)));
    long long v = 0;
    if (!YAML::convert<long long>::decode(n, v))
        return fail(Error::invalid("must be an integer, got '" + n.Scalar() + "'", path, lineOf(n)));
    if (v < lo || v > hi)
        return fail(Error::invalid("must be between " + std::to_string(lo) + " and " +
                                       std::to_string(hi) + ", got " + n.Scalar(),
                                   path, lineOf(n)));
    return static_cast<int>(v);
}

Result<bool> getBool(const YAML::Node& n, const std::string& path) {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
        return fail(Error::invalid("must be true or false", path, lineOf(n)));
    return v;
}

constexpr std::int64_t kMaxDurationMs = 30LL * 24 * 3600 * 1000;

Result<std::int64_t> getDuration(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) return fail(Error::invalid("must be a duration", path, lineOf(n)));
    auto d = parseDuration(n.Scalar());
    if (!d)
        return fail(Error::invalid("must be a duration like 90s, 15m, 2h or 1d, got '" +
                                       n.Scalar() + "'",
                                   path, lineOf(n)));
    if (*d > kMaxDurationMs)
        return fail(Error::invalid("must be at most 30d", path, lineOf(n)));
    return *d;
}

Result<std::vector<std::string>> getStringList(const YAML::Node& n, const std::string& path) {
    if (!n.IsSequence()) return fail(Error::invalid("must be a list of strings", path, lineOf(n)));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n.size(); ++i) {
        auto s = getString(n[i], path + "[" + std::to_string(i) + "]");
        if (!s) return fail(s.error());
        out.push_back(std::move(*s));
    }
    return out;
}

#define LOOM_TRY(lhs, expr)                   \
    do {                                      \
        auto _r = (expr);                     \
        if (!_r) return fail(_r.error());     \
        lhs = std::move(*_r);                 \
    } while (0)

#define LOOM_CHECK(expr)                          \
    do {                                          \
        auto _r = (expr);                         \
        if (!_r) return fail(_r.error());         \
    } while (0)

Result<void> parseRetry(const YAML::Node& n, const std::string& path, RetryPolicy& r) {
    LOOM_CHECK(checkKeys(n, {"maxAttempts", "backoff"}, path));
    if (n["maxAttempts"]) {
        LOOM_TRY(r.maxAttempts, getInt(n["maxAttempts"], join(path, "maxAttempts"), 1, 100));
    }
    if (auto b = n["backoff"]) {
        const auto bp = join(path, "backoff");
        LOOM_CHECK(checkKeys(b, {"initial", "max", "multiplier", "jitter"}, bp));
        if (b["initial"]) { LOOM_TRY(r.initialMs, getDuration(b["initial"], join(bp, "initial"))); }
        if (b["max"]) { LOOM_TRY(r.maxMs, getDuration(b["max"], join(bp, "max"))); }
        if (b["multiplier"]) {
            LOOM_TRY(r.multiplier, getNumber(b["multiplier"], join(bp, "multiplier"), 1.0, 10.0));
        }
        if (b["jitter"]) { LOOM_TRY(r.jitter, getNumber(b["jitter"], join(bp, "jitter"), 0.0, 1.0)); }
        if (r.maxMs < r.initialMs)
            return fail(Error::invalid("must be ≥ initial", join(bp, "max"), lineOf(b["max"])));
    }
    return {};
}

Result<void> parseBurnIn(const YAML::Node& n, const std::string& path, BurnInPolicy& b) {
    LOOM_CHECK(checkKeys(n, {"gpuDiagLevel", "minBusBwGBps", "maxQuarantinedHosts"}, path));
    if (n["gpuDiagLevel"]) {
        LOOM_TRY(b.gpuDiagLevel, getInt(n["gpuDiagLevel"], join(path, "gpuDiagLevel"), 1, 4));
    }
    if (n["minBusBwGBps"]) {
        LOOM_TRY(b.minBusBwGBps,
                 getNumber(n["minBusBwGBps"], join(path, "minBusBwGBps"), 0.0, 10000.0));
    }
    if (n["maxQuarantinedHosts"]) {
        LOOM_TRY(b.maxQuarantinedHosts,
                 getInt(n["maxQuarantinedHosts"], join(path, "maxQuarantinedHosts"), 0, 64));
    }
    return {};
}

Result<void> parseTimeouts(const YAML::Node& n, const std::string& path,
                           std::vector<StateTimeout>& out) {
    if (!n.IsMap()) return fail(Error::invalid("must be a mapping of state: duration", path, lineOf(n)));
    for (const auto& kv : n) {
        const auto key = kv.first.as<std::string>();
        auto st = parseRackState(key);
        if (!st)
            return fail(Error::invalid("unknown rack state '" + key + "'", join(path, key),
                                       kv.first.Mark().line + 1));
        std::int64_t ms = 0;
        LOOM_TRY(ms, getDuration(kv.second, join(path, key)));
        std::erase_if(out, [&](const StateTimeout& t) { return t.state == *st; });
        out.push_back({*st, ms});
    }
    return {};
}

// Settings that may appear in spec.defaults and in each phase (the phase wins).
Result<void> parseSettings(const YAML::Node& n, const std::string& path, Phase& p) {
    if (n["concurrency"]) {
        LOOM_TRY(p.concurrency, getInt(n["concurrency"], join(path, "concurrency"), 1, 100000));
    }
    if (n["canary"]) { LOOM_TRY(p.canary, getInt(n["canary"], join(path, "canary"), 0, 100000)); }
    if (n["successThreshold"]) {
        LOOM_TRY(p.successThreshold,
                 getNumber(n["successThreshold"], join(path, "successThreshold"), 0.0, 100.0));
    }
    if (n["burnIn"]) LOOM_CHECK(parseBurnIn(n["burnIn"], join(path, "burnIn"), p.burnIn));
    if (n["retry"]) LOOM_CHECK(parseRetry(n["retry"], join(path, "retry"), p.retry));
    if (n["timeouts"]) LOOM_CHECK(parseTimeouts(n["timeouts"], join(path, "timeouts"), p.timeouts));
    return {};
}

Result<void> parseSelector(const YAML::Node& n, const std::string& path, RackSelector& s) {
    LOOM_CHECK(checkKeys(n, {"zones", "names", "pattern", "patterns"}, path));
    if (n["zones"]) { LOOM_TRY(s.zones, getStringList(n["zones"], join(path, "zones"))); }
    if (n["names"]) {
        LOOM_TRY(s.names, getStringList(n["names"], join(path, "names")));
        s.namesLine = lineOf(n["names"]);
    }
    if (n["pattern"]) {
        std::string p;
        LOOM_TRY(p, getString(n["pattern"], join(path, "pattern")));
        s.patterns.push_back(std::move(p));
    }
    if (n["patterns"]) {
        std::vector<std::string> ps;
        LOOM_TRY(ps, getStringList(n["patterns"], join(path, "patterns")));
        s.patterns.insert(s.patterns.end(), ps.begin(), ps.end());
    }
    if (s.zones.empty() && s.names.empty() && s.patterns.empty())
        return fail(Error::invalid("selects nothing: give zones, names or pattern", path, lineOf(n)));
    return {};
}

Result<PhasePlan> parseRoot(const YAML::Node& root) {
    PhasePlan plan;
    LOOM_CHECK(checkKeys(root, {"apiVersion", "kind", "metadata", "spec"}, ""));
    std::string s;
    if (!root["apiVersion"]) return fail(Error::invalid("is required", "apiVersion", 1));
    LOOM_TRY(s, getString(root["apiVersion"], "apiVersion"));
    if (s != "loom/v1")
        return fail(Error::invalid("must be loom/v1, got '" + s + "'", "apiVersion",
                                   lineOf(root["apiVersion"])));
    if (!root["kind"]) return fail(Error::invalid("is required", "kind", 1));
    LOOM_TRY(s, getString(root["kind"], "kind"));
    if (s != "PhasePlan")
        return fail(Error::invalid("must be PhasePlan, got '" + s + "'", "kind", lineOf(root["kind"])));
    const auto md = root["metadata"];
    if (!md) return fail(Error::invalid("is required", "metadata", 1));
    LOOM_CHECK(checkKeys(md, {"name", "labels", "description"}, "metadata"));
    if (!md["name"]) return fail(Error::invalid("is required", "metadata.name", lineOf(md)));
    LOOM_TRY(plan.name, getString(md["name"], "metadata.name"));
    if (plan.name.empty() || plan.name.size() > 128)
        return fail(Error::invalid("must be 1..128 characters", "metadata.name", lineOf(md["name"])));

    const auto spec = root["spec"];
    if (!spec) return fail(Error::invalid("is required", "spec", 1));
    LOOM_CHECK(checkKeys(spec, {"cluster", "autoStartNext", "physicalSteps", "defaults", "phases"},
                         "spec"));
    if (spec["cluster"]) { LOOM_TRY(plan.cluster, getString(spec["cluster"], "spec.cluster")); }
    if (spec["autoStartNext"]) {
        LOOM_TRY(plan.autoStartNext, getBool(spec["autoStartNext"], "spec.autoStartNext"));
    }
    if (spec["physicalSteps"]) {
        LOOM_TRY(s, getString(spec["physicalSteps"], "spec.physicalSteps"));
        if (s != "auto" && s != "manual")
            return fail(Error::invalid("must be auto or manual, got '" + s + "'", "spec.physicalSteps",
                                       lineOf(spec["physicalSteps"])));
        plan.manualPhysicalSteps = s == "manual";
    }
    Phase defaults;
    if (auto d = spec["defaults"]) {
        LOOM_CHECK(checkKeys(
            d, {"concurrency", "canary", "successThreshold", "burnIn", "retry", "timeouts"},
            "spec.defaults"));
        LOOM_CHECK(parseSettings(d, "spec.defaults", defaults));
    }
    const auto phases = spec["phases"];
    if (!phases) return fail(Error::invalid("is required", "spec.phases", lineOf(spec)));
    if (!phases.IsSequence() || phases.size() == 0)
        return fail(Error::invalid("must be a non-empty list", "spec.phases", lineOf(phases)));
    if (phases.size() > static_cast<std::size_t>(kMaxPhases))
        return fail(Error::invalid("at most 256 phases", "spec.phases", lineOf(phases)));
    std::unordered_set<std::string> names;
    for (std::size_t i = 0; i < phases.size(); ++i) {
        const auto n = phases[i];
        const auto path = "spec.phases[" + std::to_string(i) + "]";
        LOOM_CHECK(checkKeys(n, {"name", "racks", "concurrency", "canary", "successThreshold",
                                 "burnIn", "retry", "timeouts"},
                             path));
        Phase p = defaults;
        p.line = lineOf(n);
        if (!n["name"]) return fail(Error::invalid("is required", path + ".name", lineOf(n)));
        LOOM_TRY(p.name, getString(n["name"], path + ".name"));
        if (p.name.empty() || p.name.size() > 64 ||
            p.name.find_first_of("/ ?#") != std::string::npos)
            return fail(Error::invalid("must be 1..64 characters without '/', '?', '#' or spaces",
                                       path + ".name", lineOf(n["name"])));
        if (!names.insert(p.name).second)
            return fail(Error::invalid("duplicate phase name '" + p.name + "'", path + ".name",
                                       lineOf(n["name"])));
        if (!n["racks"]) return fail(Error::invalid("is required", path + ".racks", lineOf(n)));
        LOOM_CHECK(parseSelector(n["racks"], path + ".racks", p.racks));
        LOOM_CHECK(parseSettings(n, path, p));
        plan.phases.push_back(std::move(p));
    }
    return plan;
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ULL) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return h;
}

}  // namespace

std::optional<std::int64_t> Phase::timeoutFor(RackState s) const {
    for (const auto& t : timeouts)
        if (t.state == s) return t.ms;
    return std::nullopt;
}

Result<PhasePlan> parsePhasePlan(std::string_view yaml) {
    if (yaml.size() > kMaxPlanBytes)
        return fail(Error{Errc::TooLarge, "phase plan is larger than 1 MiB", "", 0});
    try {
        const auto root = YAML::Load(std::string(yaml));
        if (!root.IsDefined() || root.IsNull())
            return fail(Error::invalid("empty document", "", 1));
        return parseRoot(root);
    } catch (const YAML::Exception& e) {
        return fail(Error::invalid("YAML syntax: " + e.msg, "", e.mark.line + 1));
    }
}

bool globMatch(std::string_view p, std::string_view t) {
    std::size_t pi = 0, ti = 0, starP = std::string_view::npos, starT = 0;
    auto matchClass = [&](std::size_t& i, char c) -> std::optional<bool> {
        // p[i] == '['; on success leaves i after ']'.
        std::size_t j = i + 1;
        bool neg = j < p.size() && (p[j] == '!' || p[j] == '^');
        if (neg) ++j;
        bool hit = false;
        bool first = true;
        while (j < p.size() && (first || p[j] != ']')) {
            first = false;
            if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
                if (c >= p[j] && c <= p[j + 2]) hit = true;
                j += 3;
            } else {
                if (c == p[j]) hit = true;
                ++j;
            }
        }
        if (j >= p.size()) return std::nullopt;  // unterminated: treat '[' literally
        i = j + 1;
        return hit != neg;
    };
    while (ti < t.size()) {
        if (pi < p.size() && p[pi] == '*') {
            starP = pi++;
            starT = ti;
            continue;
        }
        if (pi < p.size()) {
            if (p[pi] == '?') {
                ++pi, ++ti;
                continue;
            }
            if (p[pi] == '[') {
                std::size_t i = pi;
                if (auto m = matchClass(i, t[ti])) {
                    if (*m) {
                        pi = i, ++ti;
                        continue;
                    }
                } else if (t[ti] == '[') {
                    ++pi, ++ti;
                    continue;
                }
            } else if (p[pi] == t[ti]) {
                ++pi, ++ti;
                continue;
            }
        }
        if (starP == std::string_view::npos) return false;
        pi = starP + 1;
        ti = ++starT;
    }
    while (pi < p.size() && p[pi] == '*') ++pi;
    return pi == p.size();
}

std::optional<std::int64_t> parseDuration(std::string_view s) {
    if (s.empty()) return std::nullopt;
    std::int64_t unit = 1000;
    switch (s.back()) {
        case 's': unit = 1000; s.remove_suffix(1); break;
        case 'm': unit = 60'000; s.remove_suffix(1); break;
        case 'h': unit = 3'600'000; s.remove_suffix(1); break;
        case 'd': unit = 86'400'000; s.remove_suffix(1); break;
        default: break;
    }
    if (s.empty() || s.size() > 9) return std::nullopt;
    std::int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return v * unit;
}

std::int64_t backoffMs(const RetryPolicy& p, int attempt, std::string_view key) {
    if (attempt < 2) return 0;
    double b = static_cast<double>(p.initialMs) * std::pow(p.multiplier, attempt - 2);
    b = std::min(b, static_cast<double>(p.maxMs));
    const auto h = fnv1a(key, fnv1a(std::to_string(attempt)));
    const double u = static_cast<double>(h % 1'000'001) / 1'000'000.0;  // [0, 1]
    b *= 1.0 + p.jitter * (2.0 * u - 1.0);
    return static_cast<std::int64_t>(std::max(0.0, b));
}

Result<std::vector<std::vector<int>>> assignRacks(const PhasePlan& plan,
                                                  const std::vector<RackRef>& racks) {
    std::unordered_map<std::string_view, int> byName;
    byName.reserve(racks.size());
    for (int i = 0; i < static_cast<int>(racks.size()); ++i) byName.emplace(racks[i].name, i);
    std::vector<int> owner(racks.size(), -1);
    std::vector<std::vector<int>> out(plan.phases.size());
    for (std::size_t pi = 0; pi < plan.phases.size(); ++pi) {
        const auto& sel = plan.phases[pi].racks;
        const auto path = "spec.phases[" + std::to_string(pi) + "].racks";
        std::vector<char> chosen(racks.size(), 0);
        for (std::size_t j = 0; j < sel.names.size(); ++j) {
            auto it = byName.find(sel.names[j]);
            if (it == byName.end())
                return fail(Error::invalid("no rack named '" + sel.names[j] + "' in the inventory",
                                           path + ".names[" + std::to_string(j) + "]",
                                           sel.namesLine ? sel.namesLine : plan.phases[pi].line));
            chosen[it->second] = 1;
        }
        for (std::size_t r = 0; r < racks.size(); ++r) {
            if (chosen[r]) continue;
            for (const auto& z : sel.zones)
                if (racks[r].zone == z) chosen[r] = 1;
            if (chosen[r]) continue;
            for (const auto& pat : sel.patterns)
                if (globMatch(pat, racks[r].name)) {
                    chosen[r] = 1;
                    break;
                }
        }
        for (std::size_t r = 0; r < racks.size(); ++r)
            if (chosen[r] && owner[r] < 0) {
                owner[r] = static_cast<int>(pi);
                out[pi].push_back(static_cast<int>(r));
            }
        if (out[pi].empty())
            return fail(Error::invalid("phase '" + plan.phases[pi].name +
                                           "' selects no rack (not in the inventory, or all taken "
                                           "by earlier phases)",
                                       path, plan.phases[pi].line));
    }
    return out;
}

}  // namespace loom::provisioning
