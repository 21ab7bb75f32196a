#include "loom/inventory/input_guard.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace loom {

namespace {

struct ShapeExceeded {
    Error error;
};

// Counts nodes on parse events. An anchored node records its subtree's size and depth; an
// alias then adds that size, which is what yaml-cpp's tree walk would visit.
class ShapeCounter : public YAML::EventHandler {
public:
    explicit ShapeCounter(const YamlShapeLimits& limits) : limits_(limits) {}

    void OnDocumentStart(const YAML::Mark& mark) override {
        if (++documents_ > limits_.maxDocuments)
            throw ShapeExceeded{Error::invalid(
                "expected " + std::to_string(limits_.maxDocuments) + " YAML document" +
                    (limits_.maxDocuments == 1 ? "" : "s") + ", found another one",
                "", mark.line + 1)};
        anchors_.clear();
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  const std::string&) override {
        leaf(mark, anchor);
    }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        auto it = anchors_.find(anchor);
        // An alias to an anchor still open (a recursive document) counts as one node.
        Size s = it == anchors_.end() ? Size{1, 0} : it->second;
        add(mark, s.nodes);
        reachDepth(mark, int(open_.size()) + s.depth);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value) override {
        open(mark, anchor);
    }
    void OnSequenceEnd() override { close(); }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value) override {
        open(mark, anchor);
    }
    void OnMapEnd() override { close(); }

private:
    struct Size {
        std::uint64_t nodes = 0;
        int depth = 0;  // levels of maps/sequences below and including the node
    };
    struct Open {
        YAML::anchor_t anchor;
        std::uint64_t countAtStart;
        int depthAtStart;
        int deepest;
    };

    void add(const YAML::Mark& mark, std::uint64_t n) {
        count_ += n;
        if (count_ > limits_.maxNodes)
            throw ShapeExceeded{Error{Errc::TooLarge,
                                      "document has more than " + std::to_string(limits_.maxNodes) +
                                          " nodes (aliases count once per use)",
                                      "", mark.line + 1}};
    }
    void reachDepth(const YAML::Mark& mark, int depth) {
        if (depth > limits_.maxDepth)
            throw ShapeExceeded{Error::invalid(
                "nested deeper than " + std::to_string(limits_.maxDepth) + " levels", "",
                mark.line + 1)};
        for (auto& o : open_) o.deepest = std::max(o.deepest, depth);
    }
    void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
        add(mark, 1);
        if (anchor) anchors_[anchor] = Size{1, 0};
    }
    void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
        add(mark, 1);
        open_.push_back(Open{anchor, count_ - 1, int(open_.size()), int(open_.size()) + 1});
        reachDepth(mark, int(open_.size()));
    }
    void close() {
        Open o = open_.back();
        open_.pop_back();
        if (o.anchor) anchors_[o.anchor] = Size{count_ - o.countAtStart, o.deepest - o.depthAtStart};
    }

    const YamlShapeLimits& limits_;
    std::uint64_t count_ = 0;
    std::size_t documents_ = 0;
    std::vector<Open> open_;
    std::unordered_map<YAML::anchor_t, Size> anchors_;
};

}  // namespace

Result<void> checkYamlShape(std::string_view text, const YamlShapeLimits& limits) {
    std::istringstream in{std::string(text)};
    ShapeCounter counter(limits);
    try {
        YAML::Parser parser(in);
        while (parser.HandleNextDocument(counter)) {
        }
    } catch (const ShapeExceeded& e) {
        return fail(e.error);
    } catch (const YAML::Exception& e) {
        return fail(Error::invalid("YAML syntax error: " + e.msg, "",
                                   e.mark.line >= 0 ? e.mark.line + 1 : 0));
    }
    return {};
}

std::optional<std::size_t> invalidUtf8At(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    std::size_t n = s.size(), i = 0;
    while (i < n) {
        // ASCII runs 32 bytes, then 8 bytes at a time: telemetry bodies are ~100 MB of ASCII.
        if (i + 32 <= n) {
            std::uint64_t w[4];
            std::memcpy(w, p + i, 32);
            if (((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ull) == 0) {
                i += 32;
                continue;
            }
        }
        if (i + 8 <= n) {
            std::uint64_t w;
            std::memcpy(&w, p + i, 8);
            if ((w & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }
        unsigned char c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        int len = 0;
        std::uint32_t cp = 0;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return i;
        }
        if (i + std::size_t(len) > n) return i;
        for (int k = 1; k < len; ++k) {
            unsigned char cc = p[i + std::size_t(k)];
            if ((cc & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (cc & 0x3F);
        }
        bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
        if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
        i += std::size_t(len);
    }
    return std::nullopt;
}

int lineAt(std::string_view text, std::size_t at) {
    int line = 1;
    for (std::size_t i = 0; i < at && i < text.size(); ++i)
        if (text[i] == '\n') ++line;
    return line;
}

Result<void> checkText(std::string_view text, std::string_view what, std::string path, int line) {
    auto where = [&](std::size_t at) {
        std::string s = " at byte " + std::to_string(at);
        if (line == 0 && text.find('\n') != std::string_view::npos)
            s += " (line " + std::to_string(lineAt(text, at)) + ")";
        return s;
    };
    if (auto bad = invalidUtf8At(text))
        return fail(Error::invalid(std::string(what) + " is not valid UTF-8" + where(*bad),
                                   std::move(path), line));
    for (std::size_t i = 0; i < text.size(); ++i) {
        auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", c);
            return fail(Error::invalid(std::string(what) + " contains the control character " +
                                           hex + where(i),
                                       std::move(path), line));
        }
    }
    return {};
}

}  // namespace loom
