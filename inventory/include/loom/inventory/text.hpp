// Text: a string field of the inventory model — 8 bytes, immutable, shared on copy.
//
// At 98k GPUs a snapshot holds ~984k entities with three to six string fields each. As
// std::string every field was 32 bytes and a heap block on top for any name longer than 15
// characters (every port and link name); most of those were copies of each other (a port's
// device is its switch's name, a link's ends are its ports' names, a state is one of five
// words). A Text is one pointer to a reference-counted block of characters: copying it shares
// the block, so a loader that hands a port the name block of its switch stores those
// characters once, and the values that repeat (states, models) come from one process-wide
// block each (Text::shared: the loaders, the spec expansion and the model's defaults ask for
// it; any other Text made from characters is a block of its own).
//
//   Text state = Text::shared("planned");            // the process-wide "planned" block
//   Text name = std::string("z01-r0001-rtsw/p17");   // a block of its own
//   Text device = sw.name;              // shares sw's block
//   std::string_view v = name;          // reads as a string_view, never copies
//   std::string s = name + "--" + other;
//
// Reads keep the common part of std::string's interface (size, empty, c_str, data, [],
// comparisons with strings, views and literals, +, find, starts_with, substr, hashing); a Text
// converts implicitly to std::string_view, and explicitly (str(), std::string(t)) to a copy.
// Assigning replaces the block (a state refresh writes `row.state = Text::shared(s)`); the
// characters of a block never change, so a snapshot shared between threads is safe to read,
// and the reference count is atomic so copies may be made and dropped on any thread.
#pragma once

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>

namespace loom::inventory {

class Text {
public:
    using size_type = std::size_t;
    using value_type = char;
    using const_iterator = const char*;
    static constexpr size_type npos = std::string_view::npos;

    Text() noexcept = default;
    // Characters: a block of their own (names are unique; see shared() for the others).
    Text(const char* s) : p_(allocate(s ? std::string_view(s) : std::string_view())) {}
    Text(std::string_view s) : p_(allocate(s)) {}
    Text(const std::string& s) : Text(std::string_view(s)) {}
    Text(const Text& o) noexcept : p_(o.p_) { retain(); }
    Text(Text&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Text& operator=(const Text& o) noexcept {
        Text(o).swap(*this);
        return *this;
    }
    Text& operator=(Text&& o) noexcept {
        Text(std::move(o)).swap(*this);
        return *this;
    }
    ~Text() { release(); }

    // The one block of a value that repeats (a state, a model): kept for the whole process,
    // at most kMaxShared distinct values (beyond that a fresh block, so the table stays small
    // whatever it is fed). Ask for it only for values known to repeat.
    static Text shared(std::string_view s);
    static constexpr std::size_t kMaxShared = 4096;

    // --- reads
    std::string_view view() const noexcept {
        return p_ ? std::string_view(p_, header()->size) : std::string_view();
    }
    operator std::string_view() const noexcept { return view(); }  // NOLINT: read interface
    // Explicit: a `const std::string&` bound to a Text would be a temporary copy, and a view
    // kept of it would dangle.
    explicit operator std::string() const { return std::string(view()); }
    std::string str() const { return std::string(view()); }
    const char* c_str() const noexcept { return p_ ? p_ : ""; }
    const char* data() const noexcept { return c_str(); }
    size_type size() const noexcept { return p_ ? header()->size : 0; }
    size_type length() const noexcept { return size(); }
    bool empty() const noexcept { return p_ == nullptr; }
    const char* begin() const noexcept { return c_str(); }
    const char* end() const noexcept { return c_str() + size(); }
    char operator[](size_type i) const noexcept { return p_[i]; }
    char front() const noexcept { return p_[0]; }
    char back() const noexcept { return p_[size() - 1]; }
    bool starts_with(std::string_view s) const noexcept { return view().starts_with(s); }
    bool starts_with(char c) const noexcept { return view().starts_with(c); }
    bool ends_with(std::string_view s) const noexcept { return view().ends_with(s); }
    bool ends_with(char c) const noexcept { return view().ends_with(c); }
    bool contains(std::string_view s) const noexcept { return view().find(s) != npos; }
    size_type find(std::string_view s, size_type pos = 0) const noexcept {
        return view().find(s, pos);
    }
    size_type find(char c, size_type pos = 0) const noexcept { return view().find(c, pos); }
    size_type rfind(std::string_view s, size_type pos = npos) const noexcept {
        return view().rfind(s, pos);
    }
    size_type rfind(char c, size_type pos = npos) const noexcept { return view().rfind(c, pos); }
    size_type find_first_of(std::string_view s, size_type pos = 0) const noexcept {
        return view().find_first_of(s, pos);
    }
    size_type find_last_of(std::string_view s, size_type pos = npos) const noexcept {
        return view().find_last_of(s, pos);
    }
    std::string substr(size_type pos = 0, size_type n = npos) const {
        return std::string(view().substr(pos, n));
    }
    int compare(std::string_view s) const noexcept { return view().compare(s); }
    // True when both hold the same block (a copy, or the same shared value).
    bool sharesWith(const Text& o) const noexcept { return p_ && p_ == o.p_; }

    void clear() noexcept { Text().swap(*this); }
    void swap(Text& o) noexcept { std::swap(p_, o.p_); }

    friend bool operator==(const Text& a, const Text& b) noexcept {
        return a.p_ == b.p_ || a.view() == b.view();
    }
    friend bool operator==(const Text& a, std::string_view b) noexcept { return a.view() == b; }
    friend bool operator==(const Text& a, const std::string& b) noexcept {
        return a.view() == std::string_view(b);
    }
    friend bool operator==(const Text& a, const char* b) noexcept {
        return a.view() == std::string_view(b);
    }
    friend std::strong_ordering operator<=>(const Text& a, const Text& b) noexcept {
        return a.view() <=> b.view();
    }
    friend std::strong_ordering operator<=>(const Text& a, std::string_view b) noexcept {
        return a.view() <=> b;
    }
    friend std::strong_ordering operator<=>(const Text& a, const std::string& b) noexcept {
        return a.view() <=> std::string_view(b);
    }
    friend std::strong_ordering operator<=>(const Text& a, const char* b) noexcept {
        return a.view() <=> std::string_view(b);
    }

    friend std::string operator+(const Text& a, const Text& b) { return cat(a.view(), b.view()); }
    friend std::string operator+(const Text& a, std::string_view b) { return cat(a.view(), b); }
    friend std::string operator+(std::string_view a, const Text& b) { return cat(a, b.view()); }
    friend std::string operator+(const Text& a, const std::string& b) { return cat(a.view(), b); }
    friend std::string operator+(const std::string& a, const Text& b) { return cat(a, b.view()); }
    friend std::string operator+(std::string&& a, const Text& b) {
        a.append(b.view());
        return std::move(a);
    }
    friend std::string operator+(const Text& a, const char* b) { return cat(a.view(), b); }
    friend std::string operator+(const char* a, const Text& b) { return cat(a, b.view()); }
    friend std::string operator+(const Text& a, char b) { return cat(a.view(), {&b, 1}); }
    friend std::string operator+(char a, const Text& b) { return cat({&a, 1}, b.view()); }

private:
    struct Header {
        std::atomic<std::uint32_t> refs;
        std::uint32_t size;
    };
    Header* header() const noexcept {
        return reinterpret_cast<Header*>(const_cast<char*>(p_) - sizeof(Header));
    }
    void retain() const noexcept {
        if (p_) header()->refs.fetch_add(1, std::memory_order_relaxed);
    }
    void release() noexcept;
    static const char* allocate(std::string_view s);
    static std::string cat(std::string_view a, std::string_view b) {
        std::string r;
        r.reserve(a.size() + b.size());
        r.append(a).append(b);
        return r;
    }

    const char* p_ = nullptr;  // the characters (NUL-terminated) after a Header; null: empty
};

std::ostream& operator<<(std::ostream& os, const Text& t);

}  // namespace loom::inventory

template <>
struct std::hash<loom::inventory::Text> {
    // The same hash as the string_view of the characters (heterogeneous lookups agree).
    std::size_t operator()(const loom::inventory::Text& t) const noexcept {
        return std::hash<std::string_view>{}(t.view());
    }
};
