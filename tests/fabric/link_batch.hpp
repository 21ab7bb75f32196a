// One step of the random failure sequences that compare a Router with a SummaryRouter
// (tests/fabric summary tests, tests/jobs summary_jobs_test): 1 to 3 random links, each set Down
// (2 in 3), Drained or Up. The same seed gives the same batch in every test that uses it.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "loom/fabric/topology.hpp"

namespace loom::fabric::fixtures {

inline std::vector<std::pair<std::int32_t, LinkState>> randomLinkBatch(std::mt19937& rng,
                                                                       const Topology& t) {
    std::vector<std::pair<std::int32_t, LinkState>> batch;
    auto n = 1 + rng() % 3;
    for (std::uint32_t i = 0; i < n; ++i)
        batch.emplace_back(
            static_cast<std::int32_t>(rng() % t.linkCount()),
            rng() % 3 ? LinkState::Down : (rng() % 2 ? LinkState::Drained : LinkState::Up));
    return batch;
}

}  // namespace loom::fabric::fixtures
