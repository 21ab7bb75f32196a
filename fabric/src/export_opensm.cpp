// The InfiniBand exports (export.hpp): OpenSM's LFT dump (formatted on several threads and
// streamed in switch order) and guid2lid, the topology for ibsim and for opensm-compare, and
// Loom's switch and HCA port GUIDs. The RoCE exports (FRR, route JSON), Slurm's topology and
// writeExport are in export.cpp.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <future>
#include <thread>

#include "export_internal.hpp"
#include "loom/fabric/export.hpp"

namespace loom::fabric {

using detail::LftComment;
using detail::localPort;
using detail::MemorySink;
using detail::nodeName;
using detail::streamLftDump;

std::uint64_t switchGuid(std::int32_t sw) { return 0x0002c90300000000ull + sw + 1; }
std::uint64_t hcaPortGuid(std::int32_t nic) { return 0x0002c90400000000ull + nic + 1; }

namespace detail {
namespace {

// The opensm LFT dump, fast: a line per (switch, LID) differs between switches only in the
// port, so each LID's line is formatted once ("0xLLLL PPP # ... 'name'\n") and copied, with
// the three port digits written in.
class LftDumpFormatter {
public:
    LftDumpFormatter(const Router& r, const std::function<std::uint64_t(std::int32_t)>& guidOf,
                     LftComment comment)
        : r_(r), t_(r.topology()), guidOf_(guidOf) {
        offset_.assign(static_cast<std::size_t>(r.maxLid()) + 2, 0);
        char buf[512];
        for (std::int32_t lid = 1; lid <= r.maxLid(); ++lid) {
            offset_[lid] = templates_.size();
            auto node = r.lidNode(static_cast<std::uint16_t>(lid));
            if (node == kNone) continue;
            int n = 0;
            switch (comment) {
                case LftComment::None:
                    n = std::snprintf(buf, sizeof buf, "0x%04x 000\n", lid);
                    break;
                case LftComment::Guid:
                    n = std::snprintf(buf, sizeof buf, "0x%04x 000 # portguid 0x%016" PRIx64 "\n",
                                      lid, guid(node));
                    break;
                case LftComment::Named:
                    n = std::snprintf(buf, sizeof buf,
                                      "0x%04x 000 # %s portguid 0x%016" PRIx64 ": '%s'\n", lid,
                                      t_.isSwitch(node) ? "Switch" : "Channel Adapter", guid(node),
                                      nodeName(t_, node).c_str());
                    break;
            }
            templates_.append(buf, std::min<std::size_t>(n, sizeof buf - 1));
        }
        offset_[r.maxLid() + 1] = templates_.size();
        // Without names every line has the same length: the copy loop then moves a constant
        // number of bytes, which the compiler inlines (a third of the dump's CPU went to
        // memmove calls of ~41 bytes).
        fixed_ = comment == LftComment::Guid   ? kGuidLine
                 : comment == LftComment::None ? kBareLine
                                               : 0;
        for (std::int32_t lid = 1; fixed_ && lid <= r.maxLid(); ++lid) {
            auto len = offset_[lid + 1] - offset_[lid];
            if (len != 0 && len != fixed_) fixed_ = 0;
        }
    }

    // Switch s's table, replacing `out`.
    void format(std::int32_t s, std::string& out) const {
        char head[512];
        int hn = std::snprintf(head, sizeof head,
                               "Unicast lids [0x0-0x%x] of switch Lid %u guid 0x%016" PRIx64
                               " ('%s'):\n",
                               r_.maxLid(), r_.switchLid(s), guid(s), t_.switchNames[s].c_str());
        hn = std::min<int>(hn, sizeof head - 1);
        const std::size_t bound = hn + templates_.size() + 32;
        out.resize_and_overwrite(bound, [&](char* p, std::size_t) {
            char* w = p;
            std::memcpy(w, head, hn);
            w += hn;
            int dumped = 0;
            if (fixed_ == kGuidLine)
                w = copyFixed<kGuidLine>(s, w, dumped);
            else if (fixed_ == kBareLine)
                w = copyFixed<kBareLine>(s, w, dumped);
            else
                for (std::int32_t lid = 1; lid <= r_.maxLid(); ++lid) {
                    auto port = r_.lftPort(s, static_cast<std::uint16_t>(lid));
                    if (port == kNoPort) continue;
                    auto len = offset_[lid + 1] - offset_[lid];
                    if (len == 0) continue;
                    std::memcpy(w, templates_.data() + offset_[lid], len);
                    writePort(w, port);
                    w += len;
                    ++dumped;
                }
            w += std::snprintf(w, 32, "%d lids dumped\n", dumped);
            return static_cast<std::size_t>(w - p);
        });
    }

private:
    // "0xLLLL PPP # portguid 0x0123456789abcdef\n" and "0xLLLL PPP\n".
    static constexpr std::size_t kGuidLine = 41, kBareLine = 11;

    static void writePort(char* w, std::uint8_t port) {
        w[7] = static_cast<char>('0' + port / 100);
        w[8] = static_cast<char>('0' + port / 10 % 10);
        w[9] = static_cast<char>('0' + port % 10);
    }

    template <std::size_t N>
    char* copyFixed(std::int32_t s, char* w, int& dumped) const {
        const char* tpl = templates_.data();
        for (std::int32_t lid = 1; lid <= r_.maxLid(); ++lid) {
            auto port = r_.lftPort(s, static_cast<std::uint16_t>(lid));
            if (port == kNoPort || offset_[lid + 1] == offset_[lid]) continue;
            std::memcpy(w, tpl + offset_[lid], N);
            writePort(w, port);
            w += N;
            ++dumped;
        }
        return w;
    }

    std::uint64_t guid(std::int32_t node) const {
        std::uint64_t g = guidOf_ ? guidOf_(node) : 0;
        if (g) return g;
        return t_.isSwitch(node) ? switchGuid(node) : hcaPortGuid(node - t_.switchCount());
    }
    const Router& r_;
    const Topology& t_;
    const std::function<std::uint64_t(std::int32_t)>& guidOf_;
    std::string templates_;            // every LID's line, port "000"
    std::vector<std::size_t> offset_;  // LID -> its line in templates_ (lid+1: its end)
    std::size_t fixed_ = 0;            // every line's length when they are all equal, else 0
};

}  // namespace

LftComment lftComment(const ExportOptions& opt) {
    return opt.opensmNames   ? LftComment::Named
           : opt.opensmGuids ? LftComment::Guid
                             : LftComment::None;
}

// Formats the switches' tables on `threads` threads while the calling thread writes the
// previous round in order: at most 2 * threads tables in memory.
Result<void> streamLftDump(const Router& r,
                           const std::function<std::uint64_t(std::int32_t)>& guidOf,
                           ExportSink& sink, int threads, LftComment comment) {
    const std::int32_t switches = r.topology().switchCount();
    LftDumpFormatter fmt(r, guidOf, comment);
    const int w = std::max(1, threads);
    // Round k is formatted into bufs[k % 2] while round k - 1 is written from the other.
    std::vector<std::string> bufs[2] = {std::vector<std::string>(w), std::vector<std::string>(w)};
    auto formatRound = [&](std::int32_t round, std::vector<std::string>& bufs) {
        auto one = [&](int k) {
            auto s = round * w + k;
            if (s >= switches) {
                bufs[k].clear();
                return;
            }
            fmt.format(s, bufs[k]);
            sink.encode(bufs[k]);
        };
        std::vector<std::thread> helpers;
        for (int k = 1; k < w; ++k) helpers.emplace_back(one, k);
        one(0);
        for (auto& h : helpers) h.join();
    };
    const std::int32_t rounds = (switches + w - 1) / w;
    if (rounds == 0) return {};
    auto pending = std::async(std::launch::async, formatRound, 0, std::ref(bufs[0]));
    for (std::int32_t round = 0; round < rounds; ++round) {
        pending.get();
        if (round + 1 < rounds)
            pending = std::async(std::launch::async, formatRound, round + 1,
                                 std::ref(bufs[(round + 1) % 2]));
        for (const auto& b : bufs[round % 2]) {
            if (b.empty()) continue;
            if (auto ok = sink.write(b); !ok) {
                if (pending.valid()) pending.get();
                return ok;
            }
        }
    }
    return {};
}

}  // namespace detail

std::string opensmLftDump(const Router& r) { return opensmLftDump(r, nullptr); }

std::string opensmLftDump(const Router& r,
                          const std::function<std::uint64_t(std::int32_t)>& guidOf) {
    MemorySink sink;
    sink.files.push_back({});
    (void)streamLftDump(r, guidOf, sink, 1, LftComment::Named);
    return std::move(sink.files.back().content);
}

std::string opensmCompareJson(const Topology& t) {
    std::string o = "{\"nodes\": [";
    bool first = true;
    // The first HCA goes first: topo2ibsim attaches the subnet manager to the first HCA.
    for (std::int32_t n = 0; n < t.nicCount(); ++n) {
        o += first ? "\n" : ",\n";
        first = false;
        o += "{\"name\": ";
        appendJsonString(o, t.nicNames[n]);
        o += ", \"kind\": \"hca\", \"ports\": 1}";
    }
    std::vector<int> maxPort(t.switchCount(), 1);
    for (std::int32_t l = 0; l < t.linkCount(); ++l) {
        maxPort[t.linkB[l]] = std::max<int>(maxPort[t.linkB[l]], t.linkBPort[l]);
        if (t.isSwitch(t.linkA[l]))
            maxPort[t.linkA[l]] = std::max<int>(maxPort[t.linkA[l]], t.linkAPort[l]);
    }
    for (std::int32_t s = 0; s < t.switchCount(); ++s) {
        o += first ? "\n" : ",\n";
        first = false;
        o += "{\"name\": ";
        appendJsonString(o, t.switchNames[s]);
        o += ", \"kind\": \"switch\", \"ports\": " + std::to_string(maxPort[s]) + "}";
    }
    o += "],\n\"links\": [";
    for (std::int32_t l = 0; l < t.linkCount(); ++l) {
        o += l ? ",\n{\"a\": " : "\n{\"a\": ";
        appendJsonString(o, nodeName(t, t.linkA[l]));
        o += ", \"aPort\": " + std::to_string(t.linkAPort[l]) + ", \"b\": ";
        appendJsonString(o, t.switchNames[t.linkB[l]]);
        o += ", \"bPort\": " + std::to_string(t.linkBPort[l]) + "}";
    }
    o += "]}\n";
    return o;
}

// rdma-core's node name map (util/node_name_map.c) keys a name by node GUID: `0xGUID "name"`,
// one a line, `#` comments. A switch's node GUID is its port-0 GUID; an HCA's is its port 1
// GUID - 1, as ibsimNet gives them.
std::string opensmNodeNameMap(const Topology& t) {
    std::string o = "# node name map written by Loom for " + t.cluster +
                    " (ibnetdiscover, dump_fts, ibroute --node-name-map; OpenSM "
                    "node_name_map_name)\n";
    char buf[32];
    auto entry = [&](std::uint64_t guid, const std::string& name) {
        std::snprintf(buf, sizeof buf, "0x%016" PRIx64 " \"", guid);
        o += buf;
        o += name;
        o += "\"\n";
    };
    for (std::int32_t s = 0; s < t.switchCount(); ++s) entry(switchGuid(s), t.switchNames[s]);
    for (std::int32_t n = 0; n < t.nicCount(); ++n) entry(hcaPortGuid(n) - 1, t.nicNames[n]);
    return o;
}

std::string opensmGuid2lid(const Router& r) {
    const Topology& t = r.topology();
    std::string o;
    char buf[64];
    // OpenSM's database reader (osm_db) ends an entry at a blank line, not at a newline:
    // entries written one per line are read as one entry and all but the first LID is lost.
    auto entry = [&](std::uint64_t guid, unsigned lid) {
        std::snprintf(buf, sizeof buf, "0x%016" PRIx64 " 0x%04x 0x%04x\n\n", guid, lid, lid);
        o += buf;
    };
    for (std::int32_t s = 0; s < t.switchCount(); ++s) entry(switchGuid(s), r.switchLid(s));
    for (std::int32_t n = 0; n < t.nicCount(); ++n) entry(hcaPortGuid(n), r.nicLid(n));
    return o;
}

std::string ibsimNet(const Topology& t) {
    // Per node, its cabled ports: (local port, link).
    auto portsOf = [&](std::int32_t node) {
        std::vector<std::pair<int, std::int32_t>> ports;
        for (auto i = t.adjOffset[node]; i < t.adjOffset[node + 1]; ++i)
            ports.emplace_back(localPort(t, t.adjLink[i], node), t.adjLink[i]);
        std::sort(ports.begin(), ports.end());
        return ports;
    };
    std::string o = "# ibsim fabric written by Loom for " + t.cluster + ": " +
                    std::to_string(t.switchCount()) + " switches, " + std::to_string(t.nicCount()) +
                    " HCA ports, " + std::to_string(t.linkCount()) + " links\n\n";
    auto node = [&](std::int32_t v) {
        auto ports = portsOf(v);
        int radix = 1;
        for (auto& [p, l] : ports) radix = std::max(radix, p);
        o += t.isSwitch(v) ? "Switch\t" : "Hca\t";
        o += std::to_string(radix) + " \"" + nodeName(t, v) + "\"\n";
        for (auto& [p, l] : ports) {
            auto peer = t.peer(l, v);
            o += "[" + std::to_string(p) + "]\t\"" + nodeName(t, peer) + "\"[" +
                 std::to_string(localPort(t, l, peer)) + "]\n";
        }
        o += '\n';
    };
    // ibsim attaches the subnet manager to the first port of the file: an HCA.
    if (t.nicCount() > 0) node(t.nicNode(0));
    for (std::int32_t s = 0; s < t.switchCount(); ++s) node(s);
    for (std::int32_t n = 1; n < t.nicCount(); ++n) node(t.nicNode(n));
    // Loom's GUIDs: a switch's node GUID is its port-0 GUID; ibsim gives an HCA's port 1
    // the node GUID + 1.
    char buf[96];
    for (std::int32_t s = 0; s < t.switchCount(); ++s) {
        std::snprintf(buf, sizeof buf, "\" 0x%016" PRIx64 "\n", switchGuid(s));
        o += "do Guid \"" + t.switchNames[s] + buf;
    }
    for (std::int32_t n = 0; n < t.nicCount(); ++n) {
        std::snprintf(buf, sizeof buf, "\" 0x%016" PRIx64 "\n", hcaPortGuid(n) - 1);
        o += "do Guid \"" + t.nicNames[n] + buf;
    }
    return o;
}

}  // namespace loom::fabric
