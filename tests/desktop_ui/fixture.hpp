// A ClusterState fed with the small synthetic hall (1 zone, 2 rows x 2 racks, 64 GPUs) and
// its snapshots, as a connected console would have it.
#pragma once

#include "loom/console/cluster_state.hpp"
#include "loom/console/synthetic.hpp"

#include "qt_app.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace loom::console::test {

struct Fed {
    std::unique_ptr<ClusterState> state;
    std::unique_ptr<SyntheticFeed> feed;

    explicit Fed(const SyntheticShape& shape = SyntheticShape::small())
    {
        qtApp();
        state = std::make_unique<ClusterState>();
        auto h = parseHall(syntheticHallJson(shape));
        EXPECT_TRUE(h) << (h ? "" : h.error().toStdString());
        const int links = static_cast<int>(h->links.size());
        state->setLayout(std::move(*h));
        feed = std::make_unique<SyntheticFeed>(shape.gpus(), links, 3);
        EXPECT_TRUE(state->handleMessage(feed->hello()));
        for (const auto& m : feed->snapshots())
            EXPECT_TRUE(state->handleMessage(m));
    }
    void tick()
    {
        for (const auto& m : feed->tick())
            EXPECT_TRUE(state->handleMessage(m));
    }
};

}  // namespace loom::console::test
