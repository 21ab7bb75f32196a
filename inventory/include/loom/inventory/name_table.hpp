// NameTable: a hash index of names that the caller already stores (an entity vector, a vector
// of views): it holds 8 bytes per name (the name's 32-bit hash and its index in the caller's
// storage) in one flat array, never a copy of the name and never a heap node per entry.
//
// Built for the million-entity passes of plan() and apply's name -> id resolution, where a
// std::unordered_map<std::string_view, ...> cost one allocation per name, a pointer chase per
// probe and as much again to free it.
//
//   NameTable t;
//   t.reserve(names.size());
//   auto nameOf = [&](std::uint32_t i) { return std::string_view(names[i]); };
//   auto [at, inserted] = t.insert(names[i], i, nameOf);  // at: the index already there
//   if (auto i = t.find("z1-r001", nameOf)) ...
//
// Open addressing with linear probing, at most half full; positions come from the stored hash
// alone, so growing needs no name. Indexes are 32-bit (< 2^32 - 1 entries).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::inventory {

class NameTable {
public:
    static constexpr std::uint32_t kNone = 0xffffffffu;

    // Room for `n` names without growing.
    void reserve(std::size_t n) {
        std::size_t want = 16;
        while (want < 2 * n) want *= 2;
        if (want > slots_.size()) rehash(want);
    }
    std::size_t size() const { return size_; }

    // The index stored under `name`, if any; nameOf(index) gives a stored index's name.
    template <class NameOf>
    std::optional<std::uint32_t> find(std::string_view name, NameOf&& nameOf) const {
        if (slots_.empty()) return std::nullopt;
        const std::uint32_t h = hash(name);
        for (std::size_t p = h & mask_;; p = (p + 1) & mask_) {
            const Slot& s = slots_[p];
            if (s.index == kNone) return std::nullopt;
            if (s.hash == h && nameOf(s.index) == name) return s.index;
        }
    }

    // Stores `index` under `name` unless the name is there already: returns the index stored
    // under it and whether this call inserted it.
    template <class NameOf>
    std::pair<std::uint32_t, bool> insert(std::string_view name, std::uint32_t index,
                                          NameOf&& nameOf) {
        if (2 * (size_ + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
        const std::uint32_t h = hash(name);
        for (std::size_t p = h & mask_;; p = (p + 1) & mask_) {
            Slot& s = slots_[p];
            if (s.index == kNone) {
                s = {h, index};
                ++size_;
                return {index, true};
            }
            if (s.hash == h && nameOf(s.index) == name) return {s.index, false};
        }
    }

    // A 32-bit hash of a name: 8 bytes at a time through a multiply-xorshift, the length
    // folded in (names are short ASCII; this is an index, not a defence against chosen keys).
    static std::uint32_t hash(std::string_view s) {
        std::uint64_t h = 0x9e3779b97f4a7c15ull ^ (s.size() * 0xff51afd7ed558ccdull);
        std::size_t i = 0;
        for (; i + 8 <= s.size(); i += 8) {
            std::uint64_t w;
            std::memcpy(&w, s.data() + i, 8);
            h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
            h ^= h >> 29;
        }
        if (i < s.size()) {
            std::uint64_t w = 0;
            std::memcpy(&w, s.data() + i, s.size() - i);
            h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
            h ^= h >> 29;
        }
        h *= 0xff51afd7ed558ccdull;
        return static_cast<std::uint32_t>(h >> 32);
    }

private:
    struct Slot {
        std::uint32_t hash = 0;
        std::uint32_t index = kNone;
    };
    void rehash(std::size_t capacity) {
        std::vector<Slot> old(capacity);
        old.swap(slots_);
        mask_ = capacity - 1;
        for (const Slot& s : old) {
            if (s.index == kNone) continue;
            std::size_t p = s.hash & mask_;
            while (slots_[p].index != kNone) p = (p + 1) & mask_;
            slots_[p] = s;
        }
    }

    std::vector<Slot> slots_;
    std::size_t mask_ = 0;
    std::size_t size_ = 0;
};

}  // namespace loom::inventory
