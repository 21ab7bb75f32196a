// SharedArray: an immutable array shared between copies (the Topology's structure arrays).
//
// A Topology's names, link ends and adjacency never change after buildTopology; only the link
// and node states do. Two routers of one fabric (loomd's fabric state and the jobs view's own
// routing, each with its own link states) held those arrays twice: ~32 MB each at 98k GPUs.
// A SharedArray is one reference-counted std::vector: copying it shares the buffer, and
// shareStructure() (topology.hpp) lets a topology built separately adopt the buffers of an equal
// one. Reads are those of a const std::vector (indexing costs the same: the data pointer is kept
// beside the owner); writing means assigning a whole new vector.
//
//   std::vector<std::int32_t> ends = ...;
//   t.linkA = std::move(ends);           // the topology's array from now on
//   Topology copy = t;                   // copy.linkA and t.linkA: one buffer
//   for (auto l : t.adjLink) ...         // reads as a vector
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace loom::fabric {

template <class T>
class SharedArray {
public:
    using value_type = T;
    using size_type = std::size_t;
    using const_iterator = const T*;
    using iterator = const T*;

    SharedArray() = default;
    SharedArray(std::vector<T> v)  // NOLINT(google-explicit-constructor): assigned like a vector
        : owner_(std::make_shared<const std::vector<T>>(std::move(v))) {
        data_ = owner_->data();
        size_ = owner_->size();
    }
    SharedArray(std::initializer_list<T> v) : SharedArray(std::vector<T>(v)) {}
    SharedArray(const SharedArray&) = default;
    SharedArray& operator=(const SharedArray&) = default;
    // A moved-from array is empty (not a view of a buffer it no longer owns).
    SharedArray(SharedArray&& o) noexcept
        : owner_(std::move(o.owner_)),
          data_(std::exchange(o.data_, nullptr)),
          size_(std::exchange(o.size_, 0)) {}
    SharedArray& operator=(SharedArray&& o) noexcept {
        owner_ = std::move(o.owner_);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        return *this;
    }

    const T& operator[](size_type i) const { return data_[i]; }
    const T* data() const { return data_; }
    size_type size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const T* begin() const { return data_; }
    const T* end() const { return data_ + size_; }
    const T& front() const { return data_[0]; }
    const T& back() const { return data_[size_ - 1]; }
    // The vector itself, for code that takes one.
    operator const std::vector<T>&() const {  // NOLINT(google-explicit-constructor)
        static const std::vector<T> kEmpty;
        return owner_ ? *owner_ : kEmpty;
    }
    std::vector<T> vector() const { return owner_ ? *owner_ : std::vector<T>(); }

    friend bool operator==(const SharedArray& a, const SharedArray& b) {
        if (a.data_ == b.data_ && a.size_ == b.size_) return true;
        if (a.size_ != b.size_) return false;
        for (size_type i = 0; i < a.size_; ++i)
            if (!(a.data_[i] == b.data_[i])) return false;
        return true;
    }

    // Whether both read one buffer (copies of each other, or shared by shareStructure).
    bool sameBuffer(const SharedArray& o) const { return owner_ == o.owner_; }
    // The owner, for a weak reference (TopologyArrays) or to adopt another's buffer.
    const std::shared_ptr<const std::vector<T>>& owner() const { return owner_; }
    void adopt(std::shared_ptr<const std::vector<T>> owner) {
        owner_ = std::move(owner);
        data_ = owner_ ? owner_->data() : nullptr;
        size_ = owner_ ? owner_->size() : 0;
    }

private:
    std::shared_ptr<const std::vector<T>> owner_;
    const T* data_ = nullptr;
    size_type size_ = 0;
};

}  // namespace loom::fabric
