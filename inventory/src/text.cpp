#include "loom/inventory/text.hpp"

#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

namespace loom::inventory {

namespace {

// The process-wide blocks of repeating values. Leaked on purpose: Texts in static objects
// may be destroyed after it would be.
struct SharedTexts {
    std::mutex mutex;
    std::unordered_map<std::string_view, Text> byValue;  // keys view the values' blocks
};
SharedTexts& sharedTexts() {
    static SharedTexts* t = new SharedTexts;
    return *t;
}

}  // namespace

const char* Text::allocate(std::string_view s) {
    if (s.empty()) return nullptr;
    if (s.size() > std::numeric_limits<std::uint32_t>::max())
        throw std::length_error("loom::inventory::Text: longer than 4 GB");
    char* m = static_cast<char*>(::operator new(sizeof(Header) + s.size() + 1));
    auto* h = new (m) Header{{1}, static_cast<std::uint32_t>(s.size())};
    char* p = m + sizeof(Header);
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\0';
    (void)h;
    return p;
}

void Text::release() noexcept {
    if (!p_) return;
    Header* h = header();
    if (h->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        h->~Header();
        ::operator delete(static_cast<void*>(h));
    }
    p_ = nullptr;
}

Text Text::shared(std::string_view s) {
    if (s.empty()) return {};
    SharedTexts& t = sharedTexts();
    std::lock_guard lock(t.mutex);
    if (auto it = t.byValue.find(s); it != t.byValue.end()) return it->second;
    Text v(s);
    if (t.byValue.size() < kMaxShared) t.byValue.emplace(v.view(), v);
    return v;
}

std::ostream& operator<<(std::ostream& os, const Text& t) { return os << t.view(); }

}  // namespace loom::inventory
