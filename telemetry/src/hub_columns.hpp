// The hub's value columns (hub_state.hpp): one value per GPU or switch port slot that readers
// load without a lock while the ingest (one writer at a time, under the ingest mutex) stores
// them. A column is cut in blocks of kColumnBlock entities, each allocated on the first value
// stored in it: a field or counter nothing reports takes no room (at 98k GPUs, 13 port
// counters x 398,564 slots and 29 GPU fields x 98,304 GPUs were 54 MB of 8- and 4-byte values,
// most of them NaN forever: the simulator reports 6 of the 13 counters, snmp_exporter 10).
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace loom::telemetry::detail {

inline constexpr unsigned kColumnBlockShift = 9;
inline constexpr std::size_t kColumnBlock = std::size_t{1} << kColumnBlockShift;  // 512

// n values of T in blocks allocated by the writer on demand; a block once published stays
// until the array is destroyed (a reader may hold a pointer to it). The block table's
// pointers are published with release and loaded with acquire, so a reader that sees a block
// sees it filled; the values themselves are relaxed, as everywhere in the hub.
template <class T>
class BlockArray {
public:
    explicit BlockArray(std::size_t n)
        : n_(n), table_(std::make_unique<std::atomic<std::atomic<T>*>[]>(blockCount(n))) {
        for (std::size_t b = 0; b < blockCount(n); ++b) table_[b].store(nullptr, kRelaxedOrder);
    }
    ~BlockArray() {
        for (std::size_t b = 0; b < blockCount(n_); ++b) delete[] table_[b].load(kRelaxedOrder);
    }
    BlockArray(const BlockArray&) = delete;
    BlockArray& operator=(const BlockArray&) = delete;

    std::size_t size() const { return n_; }
    // The block holding entity i, null when nothing was stored in it.
    std::atomic<T>* block(std::size_t i) const {
        return table_[i >> kColumnBlockShift].load(std::memory_order_acquire);
    }
    // Writer only: the block of entity i, allocated and filled with fill(k) (k: the entity's
    // index) first when absent.
    template <class Fill>
    std::atomic<T>* blockFor(std::size_t i, Fill fill) {
        auto& slot = table_[i >> kColumnBlockShift];
        if (auto* b = slot.load(kRelaxedOrder)) return b;
        auto* b = new std::atomic<T>[kColumnBlock];
        const std::size_t first = i & ~(kColumnBlock - 1);
        for (std::size_t k = 0; k < kColumnBlock; ++k) b[k].store(fill(first + k), kRelaxedOrder);
        slot.store(b, std::memory_order_release);
        blocks_.fetch_add(1, kRelaxedOrder);
        return b;
    }
    std::size_t bytes() const {
        return blockCount(n_) * sizeof(void*) +
               blocks_.load(kRelaxedOrder) * kColumnBlock * sizeof(T);
    }

private:
    static constexpr auto kRelaxedOrder = std::memory_order_relaxed;
    static std::size_t blockCount(std::size_t n) { return (n + kColumnBlock - 1) / kColumnBlock; }

    std::size_t n_;
    std::unique_ptr<std::atomic<std::atomic<T>*>[]> table_;
    std::atomic<std::size_t> blocks_{0};
};

// GPU fields: a float per GPU, NaN = never reported (absent blocks read NaN).
class FloatColumn {
public:
    explicit FloatColumn(std::size_t n) : a_(n) {}
    float load(std::size_t i) const {
        const auto* b = a_.block(i);
        return b ? b[i & (kColumnBlock - 1)].load(std::memory_order_relaxed) : kNaNf;
    }
    void store(std::size_t i, float v) {
        auto* b = a_.block(i);
        if (!b) {
            if (std::isnan(v)) return;  // what the absent block reads already
            b = a_.blockFor(i, [](std::size_t) { return kNaNf; });
        }
        b[i & (kColumnBlock - 1)].store(v, std::memory_order_relaxed);
    }
    std::size_t bytes() const { return a_.bytes(); }

private:
    static constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
    BlockArray<float> a_;
};

// Port counters: a double per port slot, NaN = never reported. A block holds 4-byte codes
// while every value stored in it is a whole multiple of the column's unit in 0 .. 2^32-2 units
// (error, discard and pause counters, oper status, ifHighSpeed's Mb/s), and moves to 8-byte
// doubles, exactly the values stored, at the first that is not (a 64-bit octet counter; a
// negative, fractional or infinite value). Columns of counters that outgrow 32 bits within
// seconds (octets, packets) start with doubles. Every value reads back as the double stored
// (NaN for NaN).
class CounterColumn {
public:
    CounterColumn(std::size_t n, double unit, bool wideFirst)
        : unit_(unit), wideFirst_(wideFirst), small_(n), wide_(n) {}

    double load(std::size_t i) const {
        const std::size_t k = i & (kColumnBlock - 1);
        if (const auto* w = wide_.block(i)) return w[k].load(std::memory_order_relaxed);
        if (const auto* s = small_.block(i)) return decode(s[k].load(std::memory_order_relaxed));
        return kNaN;
    }
    // Writer only.
    void store(std::size_t i, double v) {
        const std::size_t k = i & (kColumnBlock - 1);
        if (auto* w = wide_.block(i)) {
            w[k].store(v, std::memory_order_relaxed);
            return;
        }
        auto* s = small_.block(i);
        if (!s && std::isnan(v)) return;  // what the absent block reads already
        std::uint32_t code;
        if (encode(v, code) && (s || !wideFirst_)) {
            if (!s) s = small_.blockFor(i, [](std::size_t) { return kNone; });
            s[k].store(code, std::memory_order_relaxed);
            return;
        }
        // The block's values as doubles, this one included, published whole: a reader that
        // still finds only the small block reads the value before this store.
        wide_.blockFor(i, [&](std::size_t j) {
            if (j == i) return v;
            return s ? decode(s[j & (kColumnBlock - 1)].load(std::memory_order_relaxed)) : kNaN;
        });
    }
    std::size_t bytes() const { return small_.bytes() + wide_.bytes(); }

private:
    static constexpr std::uint32_t kNone = 0xffffffffu;  // NaN
    static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

    bool encode(double v, std::uint32_t& code) const {
        if (std::isnan(v)) {
            code = kNone;
            return true;
        }
        const double q = v / unit_;
        if (!(q >= 0 && q <= 4294967294.0) || std::signbit(v) || q != std::floor(q)) return false;
        code = static_cast<std::uint32_t>(q);
        return decode(code) == v;
    }
    double decode(std::uint32_t code) const {
        return code == kNone ? kNaN : static_cast<double>(code) * unit_;
    }

    double unit_;
    bool wideFirst_;
    BlockArray<std::uint32_t> small_;
    BlockArray<double> wide_;
};

// A fixed set of columns (a GPU's fields, a port's counters), made by make(index).
template <class Column>
class ColumnSet {
public:
    template <class Make>
    ColumnSet(int count, Make make) {
        for (int c = 0; c < count; ++c) cols_.push_back(make(c));
    }
    Column& operator[](std::size_t c) { return *cols_[c]; }
    const Column& operator[](std::size_t c) const { return *cols_[c]; }
    std::size_t bytes() const {
        std::size_t n = 0;
        for (const auto& c : cols_) n += c->bytes();
        return n;
    }

private:
    std::vector<std::unique_ptr<Column>> cols_;
};

}  // namespace loom::telemetry::detail
