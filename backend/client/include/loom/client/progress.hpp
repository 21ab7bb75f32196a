// A one-line progress bar for long command-line operations, drawn on stderr only when stderr
// is a terminal (never in pipes, logs or tests). Redraws at most ~10 times a second.
//
//   ProgressBar bar;
//   bar.update("create ports", 40960, 170000);   // [#######.............] create ports 40960/170000
//   bar.update("commit");                         // a stage without a count
//   bar.finish();                                 // erase the line
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

namespace loom::client {

class ProgressBar {
public:
    explicit ProgressBar(std::FILE* out = stderr, bool force = false)
        : out_(out), enabled_(force || isatty(fileno(out))) {}
    ~ProgressBar() { finish(); }
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    bool enabled() const { return enabled_; }

    void update(std::string_view stage, std::size_t done = 0, std::size_t total = 0) {
        if (!enabled_) return;
        auto now = std::chrono::steady_clock::now();
        bool stageChanged = stage != stage_;
        // Throttle redraws within a stage; always draw a new stage and a stage's end.
        if (!stageChanged && done != total && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        stage_ = stage;
        std::string line = "\r";
        if (total > 0) {
            constexpr int kWidth = 28;
            int filled = static_cast<int>(static_cast<double>(done) / total * kWidth);
            line += '[';
            line.append(filled, '#');
            line.append(kWidth - filled, '.');
            line += "] ";
        }
        line += stage;
        if (total > 0) line += " " + std::to_string(done) + "/" + std::to_string(total);
        // Pad to erase the remains of a longer previous line.
        std::size_t width = line.size();
        if (width < drawn_) line.append(drawn_ - width, ' ');
        drawn_ = width;
        std::fputs(line.c_str(), out_);
        std::fflush(out_);
        active_ = true;
    }

    void finish() {
        if (!enabled_ || !active_) return;
        std::string blank = "\r" + std::string(drawn_, ' ') + "\r";
        std::fputs(blank.c_str(), out_);
        std::fflush(out_);
        active_ = false;
        drawn_ = 0;
        stage_.clear();
    }

private:
    std::FILE* out_;
    bool enabled_;
    bool active_ = false;
    std::size_t drawn_ = 0;
    std::string stage_;
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace loom::client
