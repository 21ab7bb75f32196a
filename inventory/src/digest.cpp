#include "loom/inventory/digest.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

#include "loom/inventory/kinds.hpp"

namespace loom::inventory {
namespace {

// Two independent 64-bit multiply-xorshift hashes of one entity's fields, each field length-
// prefixed (so "ab","c" and "a","bc" differ). An entity's pair is summed into its kind's
// totals: the digest does not depend on the order of the entities.
struct Hasher {
    std::uint64_t a = 0x9e3779b97f4a7c15ull, b = 0xc2b2ae3d27d4eb4full;

    void word(std::uint64_t w) {
        a = (a ^ w) * 0xff51afd7ed558ccdull;
        a ^= a >> 29;
        b = (b + w) * 0xc4ceb9fe1a85ec53ull;
        b ^= b >> 31;
    }
    void operator()(std::string_view s) {
        word(s.size());
        std::size_t i = 0;
        for (; i + 8 <= s.size(); i += 8) {
            std::uint64_t w;
            std::memcpy(&w, s.data() + i, 8);
            word(w);
        }
        if (i < s.size()) {
            std::uint64_t w = 0;
            std::memcpy(&w, s.data() + i, s.size() - i);
            word(w);
        }
    }
    void operator()(int v) { word(0x100000000ull | static_cast<std::uint32_t>(v)); }
    void operator()(double v) {
        std::uint64_t w;
        std::memcpy(&w, &v, 8);
        word(w);
    }
    void operator()(const Labels& labels) {
        word(labels.size());
        for (const auto& [k, v] : labels) {
            (*this)(k);
            (*this)(v);
        }
    }
    template <class E>
    requires std::is_enum_v<E>
    void operator()(E e) { word(0x200000000ull | static_cast<std::uint64_t>(e)); }
    std::uint64_t finalA() const { return a ^ (a >> 33); }
    std::uint64_t finalB() const { return b ^ (b >> 29); }
};

// The spec fields of kinds.hpp, in their order there (as plan.cpp's diff() compares them).
template <class T>
void fields(Hasher& h, const T& e) {
    forEachField<T>([&](auto i) {
        constexpr auto& fd = std::get<i>(KindDesc<T>::fields);
        if constexpr (fd.group == Group::Spec && fd.member != nullptr) h(e.*fd.member);
    });
}

std::string hex(std::uint64_t x, std::uint64_t y) {
    static const char* digits = "0123456789abcdef";
    std::string out(32, '0');
    for (int i = 0; i < 16; ++i) {
        out[15 - i] = digits[(x >> (4 * i)) & 15];
        out[31 - i] = digits[(y >> (4 * i)) & 15];
    }
    return out;
}

template <class T>
std::string digestOf(const KindVector<T>& v) {
    std::uint64_t sa = v.size(), sb = ~static_cast<std::uint64_t>(v.size());
    for (const auto& e : v) {
        Hasher h;
        h(e.name);
        fields(h, e);
        sa += h.finalA();
        sb += h.finalB();
    }
    return hex(sa, sb);
}

}  // namespace

ContentDigests contentDigests(const Inventory& inv) {
    ContentDigests d;
    auto set = [&](Kind k, std::string s) { d.kinds[static_cast<int>(k)] = std::move(s); };
    set(Kind::Site, digestOf(inv.sites));
    set(Kind::Zone, digestOf(inv.zones));
    set(Kind::Row, digestOf(inv.rows));
    set(Kind::Rack, digestOf(inv.racks));
    set(Kind::Host, digestOf(inv.hosts));
    set(Kind::Gpu, digestOf(inv.gpus));
    set(Kind::Nic, digestOf(inv.nics));
    set(Kind::Switch, digestOf(inv.switches));
    set(Kind::Port, digestOf(inv.ports));
    set(Kind::Link, digestOf(inv.links));
    set(Kind::StorageNode, digestOf(inv.storageNodes));
    Hasher h;
    h(inv.cluster);
    h(inv.fabric);
    d.cluster = hex(h.finalA(), h.finalB());
    return d;
}

}  // namespace loom::inventory
