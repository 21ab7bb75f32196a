// The hub's catalogue of names it could not place or chose to ignore (GET
// /api/v1/telemetry/unknown): one entry per (reason, name), bounded per reason, the least
// recently seen dropped first. An ingest collects its page's names locally and merges them
// once, so a page of 600 samples from one `lo` costs one entry and one lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/telemetry/telemetry_hub.hpp"

namespace loom::telemetry::detail {

class UnknownCatalog {
public:
    static constexpr std::size_t kPerReason = 256;

    // A page's names: deduplicated, at most kPerPage (a page of random names cannot make the
    // merge quadratic).
    struct Page {
        static constexpr std::size_t kPerPage = 512;
        struct Item {
            UnknownReason reason;
            std::string name, detail;
            std::uint64_t samples = 0;
        };
        std::vector<Item> items;
        std::unordered_map<std::string, std::uint32_t> index;  // reason char + name -> item

        void add(UnknownReason r, std::string_view name, std::string_view detail) {
            std::string key(1, static_cast<char>(r));
            key.append(name);
            auto it = index.find(key);
            if (it != index.end()) {
                ++items[it->second].samples;
                return;
            }
            if (items.size() >= kPerPage) return;
            index.emplace(std::move(key), static_cast<std::uint32_t>(items.size()));
            items.push_back({r, std::string(name), std::string(detail), 1});
        }
    };

    // Merges a page; returns the names new to the catalogue per reason (the distinct-name
    // counters of /metrics).
    void merge(Page& page, std::string_view source, std::int64_t nowMs,
               std::uint64_t (&fresh)[kUnknownReasonCount]) {
        if (page.items.empty()) return;
        std::lock_guard lk(mutex_);
        for (auto& it : page.items) {
            std::string key(1, static_cast<char>(it.reason));
            key.append(it.name);
            auto [e, inserted] = entries_.try_emplace(std::move(key));
            auto& u = e->second;
            if (inserted) {
                u.reason = std::string(unknownReasonName(it.reason));
                u.name = std::move(it.name);
                u.firstSeenMs = nowMs;
                if (countOnce(e->first)) ++fresh[static_cast<int>(it.reason)];
                if (++perReason_[static_cast<int>(it.reason)] > kPerReason)
                    evictOldest(it.reason, e->first);
            }
            u.detail = std::move(it.detail);
            u.source = std::string(source);
            u.lastSeenMs = nowMs;
            u.samples += it.samples;
        }
    }

    // Newest first; `reason` empty = all.
    std::vector<UnknownName> list(std::string_view reason, std::size_t limit) const {
        std::vector<UnknownName> out;
        {
            std::lock_guard lk(mutex_);
            for (const auto& [k, u] : entries_)
                if (reason.empty() || u.reason == reason) out.push_back(u);
        }
        std::sort(out.begin(), out.end(), [](const UnknownName& a, const UnknownName& b) {
            return std::tie(b.lastSeenMs, a.reason, a.name) <
                   std::tie(a.lastSeenMs, b.reason, b.name);
        });
        if (out.size() > limit) out.resize(limit);
        return out;
    }

private:
    // Whether the (reason, name) key is new to the distinct-name counters: the catalogue keeps
    // kPerReason names, but a name it dropped and sees again is not a new name (at 24k every
    // switch's non-port interfaces are ~16,000 names, each seen every scrape). The keys'
    // hashes are kept up to kCounted (~10 MB at most); past that a name counts every time it
    // comes back into the catalogue, which only a flood of made-up names reaches.
    static constexpr std::size_t kCounted = std::size_t{1} << 18;
    bool countOnce(const std::string& key) {
        const auto h = std::hash<std::string>{}(key);
        if (counted_.contains(h)) return false;
        if (counted_.size() < kCounted) counted_.insert(h);
        return true;
    }

    void evictOldest(UnknownReason r, const std::string& keep) {
        const std::string_view name = unknownReasonName(r);
        auto victim = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (it->second.reason == name && it->first != keep &&
                (victim == entries_.end() || it->second.lastSeenMs < victim->second.lastSeenMs))
                victim = it;
        if (victim == entries_.end()) return;
        entries_.erase(victim);
        --perReason_[static_cast<int>(r)];
    }

    mutable std::mutex mutex_;
    std::unordered_map<std::string, UnknownName> entries_;
    std::size_t perReason_[kUnknownReasonCount] = {};
    std::unordered_set<std::size_t> counted_;
};

}  // namespace loom::telemetry::detail
