// HallLayout::toCompactJson: `GET /api/v1/hall?format=compact` (docs/api.md), the hall the web
// dashboard asks for. The plain form spells every GPU and link name (11.9 MB of JSON at 98k,
// 2 s to render and gzip in loomd and ~0.4 s to parse in a browser); here names follow
// from the topology by fixed rules, integer columns are runs, states are small integers with
// their legend, and only names that break a rule are spelled out (every name of an inventory
// with other naming patterns, in the worst case: never wrong, only larger).
#include <array>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "loom/telemetry/hall_layout.hpp"

namespace loom::telemetry {
namespace {

// A column of integers as runs [first, step, count, first, step, count, ...]: a rack's hosts,
// GPU offsets, NIC ports and most link ends move by a constant step.
class HallRunColumn {
public:
    void push(std::int64_t v) {
        if (count_ == 0) {
            first_ = last_ = v;
            count_ = 1;
            return;
        }
        if (count_ == 1) {
            step_ = v - last_;
        } else if (v - last_ != step_) {
            flush();
            first_ = last_ = v;
            count_ = 1;
            return;
        }
        last_ = v;
        ++count_;
    }
    nlohmann::json take() {
        flush();
        return std::move(out_);
    }

private:
    void flush() {
        if (count_ == 0) return;
        out_.push_back(first_);
        out_.push_back(count_ == 1 ? 0 : step_);
        out_.push_back(count_);
        count_ = 0;
    }
    nlohmann::json out_ = nlohmann::json::array();
    std::int64_t first_ = 0, last_ = 0, step_ = 0, count_ = 0;
};

std::int64_t hallIndexOr(std::uint32_t i) { return i == kNoIndex ? -1 : std::int64_t{i}; }

}  // namespace

nlohmann::json HallLayout::toCompactJson() const {
    using nlohmann::json;
    // Everything but the rack states follows from the structure, which every layout of one
    // layoutVersion has: rendered once per structure (~0.3-0.5 s at 98k under load: 320k names
    // checked against their rules), then only the states each time.
    auto structure = [this]() -> json {
        const Shape& S = *shape_;
        json j;
        j["format"] = "compact";
        j["cluster"] = S.cluster_;
        j["fabric"] = std::string(inventory::fabricTypeName(S.fabric_));
        j["layoutVersion"] = S.layoutVersion_;
        j["zones"] = S.zones_;
        // Names that break a rule, by kind: [[index, name], ...].
        json names = json::object();
        auto spell = [&names](const char* kind, std::size_t i, const std::string& name) {
            names[kind].push_back(json::array({i, name}));
        };
        std::unordered_map<std::string_view, std::uint32_t> zoneIdx, rowIdx;
        for (std::uint32_t i = 0; i < S.zones_.size(); ++i) zoneIdx.emplace(S.zones_[i], i);
        auto zoneOf = [&](const std::string& z, const char* kind, std::size_t i) -> std::int64_t {
            if (auto it = zoneIdx.find(z); it != zoneIdx.end()) return it->second;
            if (!z.empty()) spell(kind, i, z);
            return -1;
        };

        json rowName = json::array();
        HallRunColumn rowZone, rowIndex;
        for (std::uint32_t i = 0; i < S.rows_.size(); ++i) {
            rowIdx.emplace(S.rows_[i].first, i);
            rowName.push_back(S.rows_[i].first);
            rowZone.push(zoneOf(S.rows_[i].second, "rowZone", i));
            rowIndex.push(S.rowIndex_[i]);
        }
        j["rows"] = {
            {"name", std::move(rowName)}, {"zone", rowZone.take()}, {"index", rowIndex.take()}};

        json rackName = json::array();
        HallRunColumn rackRow, rackZone, rackPos, rackHosts, rackRtsw, rackGpuOffset, rackGpuCount,
            hostGpus;
        std::size_t host = 0;
        for (std::uint32_t i = 0; i < racks_.size(); ++i) {
            const HallRack& r = racks_[i];
            rackName.push_back(r.name);
            auto row = rowIdx.find(r.row);
            if (row == rowIdx.end() && !r.row.empty()) spell("rackRow", i, r.row);
            rackRow.push(row == rowIdx.end() ? -1 : std::int64_t{row->second});
            rackZone.push(zoneOf(r.zone, "rackZone", i));
            rackPos.push(r.position);
            rackHosts.push(static_cast<std::int64_t>(r.hosts.size()));
            // The rack's RTSW by its index in `switches`; a name the layout has no switch of is
            // spelled out.
            if (r.rtswIndex == kNoIndex && !r.rtsw.empty()) spell("rackRtsw", i, r.rtsw);
            rackRtsw.push(hallIndexOr(r.rtswIndex));
            rackGpuOffset.push(r.gpuOffset);
            rackGpuCount.push(r.gpuCount);
            // Rule: host k of rack R is "R-h<k>".
            for (std::size_t k = 0; k < r.hosts.size(); ++k, ++host) {
                if (r.hosts[k] != r.name + "-h" + std::to_string(k))
                    spell("host", host, r.hosts[k]);
                hostGpus.push(host < S.hostGpuCount_.size() ? S.hostGpuCount_[host] : 0);
            }
        }
        j["racks"] = {{"name", std::move(rackName)},       {"row", rackRow.take()},
                      {"zone", rackZone.take()},           {"position", rackPos.take()},
                      {"hosts", rackHosts.take()},         {"rtsw", rackRtsw.take()},
                      {"gpuOffset", rackGpuOffset.take()}, {"gpuCount", rackGpuCount.take()}};
        j["hosts"] = {{"gpus", hostGpus.take()}};

        // Rule: GPU k of a host H (its index on the host) is "H-gpu<k>".
        HallRunColumn gpuLocal;
        for (std::size_t g = 0; g < S.gpuNames_.size(); ++g) {
            gpuLocal.push(S.gpuLocal_[g]);
            if (S.gpuNames_[g] != S.gpuHostName_[g] + "-gpu" + std::to_string(S.gpuLocal_[g]))
                spell("gpu", g, S.gpuNames_[g]);
        }
        j["gpus"] = {{"count", S.gpuNames_.size()}, {"index", gpuLocal.take()}};

        json roles = json::array();
        std::unordered_map<int, std::int64_t> roleIdx;
        json swName = json::array();
        HallRunColumn swRole, swZone;
        for (std::uint32_t i = 0; i < S.switches_.size(); ++i) {
            const HallSwitch& s = S.switches_[i];
            swName.push_back(s.name);
            auto [ro, fresh] =
                roleIdx.emplace(static_cast<int>(s.role), static_cast<std::int64_t>(roles.size()));
            if (fresh) roles.push_back(std::string(inventory::switchRoleName(s.role)));
            swRole.push(ro->second);
            swZone.push(zoneOf(s.zone, "switchZone", i));
        }
        j["switchRoles"] = std::move(roles);
        j["switches"] = {
            {"name", std::move(swName)}, {"role", swRole.take()}, {"zone", swZone.take()}};

        // A link end is a switch port (switch index, port number: "<switch>/p<number>") or, with
        // switch -1, the NIC of a GPU (GPU index: "<host>-nic<k>/p1", k the GPU's index on the
        // host). Rule: the link's name is "<a end>--<b end>".
        HallRunColumn aSw, aNum, bSw, bNum;
        auto endName = [&](std::uint32_t port, std::uint32_t gpu, HallRunColumn& sw,
                           HallRunColumn& num) -> std::string {
            if (port != kNoIndex) {
                const HallPort& p = S.ports_[port];
                sw.push(p.switchIndex);
                num.push(p.number);
                return S.switches_[p.switchIndex].name + "/p" + std::to_string(p.number);
            }
            sw.push(-1);
            num.push(hallIndexOr(gpu));
            if (gpu == kNoIndex) return {};
            return S.gpuHostName_[gpu] + "-nic" + std::to_string(S.gpuLocal_[gpu]) + "/p1";
        };
        for (std::size_t l = 0; l < S.links_.size(); ++l) {
            const HallLink& k = S.links_[l];
            // Only one end of a link is a NIC: the GPU belongs to whichever end has no port.
            const auto a = endName(k.aPort, k.aPort == kNoIndex ? k.gpu : kNoIndex, aSw, aNum);
            const auto b = endName(k.bPort, k.aPort != kNoIndex ? k.gpu : kNoIndex, bSw, bNum);
            if (k.name.size() != a.size() + 2 + b.size() || k.name.compare(0, a.size(), a) != 0 ||
                k.name.compare(a.size(), 2, "--") != 0 ||
                k.name.compare(a.size() + 2, b.size(), b) != 0)
                spell("link", l, k.name);
        }
        j["links"] = {{"count", S.links_.size()},
                      {"aSwitch", aSw.take()},
                      {"aPort", aNum.take()},
                      {"bSwitch", bSw.take()},
                      {"bPort", bNum.take()}};
        j["names"] = std::move(names);
        return j;
    };
    // Keyed by the layout version, a digest of the structure: a full reload that finds the
    // same structure (a rack transition that also moved links' states) builds a new Shape of
    // the same version, and its structure renders alike.
    static std::mutex cacheMutex;
    using Key = std::array<std::int64_t, 5>;
    const Key key{shape_->layoutVersion_, static_cast<std::int64_t>(shape_->gpuNames_.size()),
                  static_cast<std::int64_t>(shape_->links_.size()),
                  static_cast<std::int64_t>(racks_.size()),
                  static_cast<std::int64_t>(shape_->switches_.size())};
    static Key cachedKey{};
    static std::shared_ptr<const json> cachedBase;
    std::shared_ptr<const json> base;
    {
        std::lock_guard lock(cacheMutex);
        if (cachedBase && cachedKey == key) base = cachedBase;
    }
    if (!base) {
        base = std::make_shared<const json>(structure());
        std::lock_guard lock(cacheMutex);
        cachedKey = key;
        cachedBase = base;
    }
    json j = *base;
    j["stateVersion"] = stateVersion_;
    // Rack states as integers; the legend lists them in order of first appearance.
    json rackStates = json::array();
    std::unordered_map<std::string_view, std::int64_t> stateIdx;
    HallRunColumn rackState;
    for (const HallRack& r : racks_) {
        auto [st, fresh] = stateIdx.emplace(r.state, static_cast<std::int64_t>(rackStates.size()));
        if (fresh) rackStates.push_back(r.state);
        rackState.push(st->second);
    }
    j["rackStates"] = std::move(rackStates);
    j["racks"]["state"] = rackState.take();
    return j;
}

}  // namespace loom::telemetry
