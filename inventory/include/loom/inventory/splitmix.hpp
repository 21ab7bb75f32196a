// splitmix64's finaliser: a cheap, well-mixed 64-bit hash of an integer, for deterministic
// per-entity randomness (the simulator's noise, the simulated executor's failures) that does
// not consume RNG state and gives neighbouring keys unrelated values.
#pragma once

#include <cstdint>

namespace loom {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace loom
