// Polls a condition until it holds or a time limit passes: how tests wait for something that
// happens asynchronously (a stream message, a reload, a daemon), so no sleep is an assertion.
//
//   ASSERT_TRUE(loom::testing::eventually([&] { return hub.count() == 3; }, 5s));
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace loom::testing {

inline bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds limit,
                       std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (cond()) return true;
        std::this_thread::sleep_for(every);
    }
    return cond();
}

}  // namespace loom::testing
