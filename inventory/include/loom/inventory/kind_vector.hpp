// KindVector<T>: the list of one kind in an Inventory — a std::vector<T> shared copy-on-write.
//
// Copying an Inventory copies eleven pointers, not ~1M entities: loomd's live state patches
// the states of a rack transition into a new snapshot that shares every kind the change did
// not touch with the snapshot readers may still hold (issue 14: at 98k GPUs a full copy was
// 327 MB and 1–3 s per refresh). Reads through a const KindVector never copy; the first write
// through a non-const one (operator[], begin(), push_back, mut(), ...) copies the vector if it
// is shared, so code that builds or edits an Inventory it owns reads as with std::vector.
//
//   Inventory next = *snapshot;                 // shares every kind
//   next.links.mut()[i].state = "down";         // copies the links only
//
// Reads keep the std::vector interface (size, [], at, begin/end, front/back, data, ranges,
// spans, `const std::vector<T>&` through vec() or the conversion). As with Qt's implicit
// sharing, a reference taken through a non-const accessor must not outlive a copy of the
// Inventory made after it (it would point into the now shared vector).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace loom::inventory {

template <class T>
class KindVector {
public:
    using vector_type = std::vector<T>;
    using value_type = T;
    using size_type = typename vector_type::size_type;
    using difference_type = typename vector_type::difference_type;
    using reference = T&;
    using const_reference = const T&;
    using pointer = T*;
    using const_pointer = const T*;
    using iterator = typename vector_type::iterator;
    using const_iterator = typename vector_type::const_iterator;

    KindVector() = default;
    KindVector(vector_type v)
        : p_(v.empty() ? nullptr : std::make_shared<vector_type>(std::move(v))) {}
    KindVector(std::initializer_list<T> l) : KindVector(vector_type(l)) {}
    template <class It>
    KindVector(It first, It last) : KindVector(vector_type(first, last)) {}

    // --- reads: never copy
    const vector_type& vec() const { return p_ ? *p_ : emptyVector(); }
    operator const vector_type&() const { return vec(); }  // NOLINT: the read interface
    size_type size() const { return p_ ? p_->size() : 0; }
    bool empty() const { return size() == 0; }
    size_type capacity() const { return p_ ? p_->capacity() : 0; }
    const T& operator[](size_type i) const { return (*p_)[i]; }
    const T& at(size_type i) const { return vec().at(i); }
    const T& front() const { return p_->front(); }
    const T& back() const { return p_->back(); }
    const T* data() const { return vec().data(); }
    const_iterator begin() const { return vec().begin(); }
    const_iterator end() const { return vec().end(); }
    const_iterator cbegin() const { return vec().begin(); }
    const_iterator cend() const { return vec().end(); }
    // True when both hold the same vector (the state refresh shares what did not change).
    bool sharesWith(const KindVector& o) const { return p_ && p_ == o.p_; }

    // --- writes: copy the vector first if another KindVector shares it
    vector_type& mut() {
        if (!p_)
            p_ = std::make_shared<vector_type>();
        else if (p_.use_count() > 1)
            p_ = std::make_shared<vector_type>(*p_);
        return *p_;
    }
    T& operator[](size_type i) { return mut()[i]; }
    T& at(size_type i) { return mut().at(i); }
    T& front() { return mut().front(); }
    T& back() { return mut().back(); }
    T* data() { return mut().data(); }
    iterator begin() { return mut().begin(); }
    iterator end() { return mut().end(); }
    void reserve(size_type n) { mut().reserve(n); }
    void resize(size_type n) { mut().resize(n); }
    void shrink_to_fit() {
        if (p_) mut().shrink_to_fit();
    }
    void clear() { p_.reset(); }
    void push_back(const T& v) { mut().push_back(v); }
    void push_back(T&& v) { mut().push_back(std::move(v)); }
    template <class... A>
    T& emplace_back(A&&... a) {
        return mut().emplace_back(std::forward<A>(a)...);
    }
    void pop_back() { mut().pop_back(); }
    template <class... A>
    iterator insert(const_iterator pos, A&&... a) {
        // pos points into the vector before a possible copy: carry it over as an offset
        const auto off = pos - cbegin();
        auto& v = mut();
        return v.insert(v.cbegin() + off, std::forward<A>(a)...);
    }
    iterator erase(const_iterator pos) {
        const auto off = pos - cbegin();
        auto& v = mut();
        return v.erase(v.cbegin() + off);
    }
    iterator erase(const_iterator first, const_iterator last) {
        const auto a = first - cbegin(), b = last - cbegin();
        auto& v = mut();
        return v.erase(v.cbegin() + a, v.cbegin() + b);
    }
    template <class... A>
    void assign(A&&... a) {
        mut().assign(std::forward<A>(a)...);
    }
    void swap(KindVector& o) noexcept { p_.swap(o.p_); }

    friend bool operator==(const KindVector& a, const KindVector& b) {
        return a.p_ == b.p_ || a.vec() == b.vec();
    }
    friend bool operator==(const KindVector& a, const vector_type& b) { return a.vec() == b; }

private:
    static const vector_type& emptyVector() {
        static const vector_type e;
        return e;
    }
    std::shared_ptr<vector_type> p_;  // null when empty
};

}  // namespace loom::inventory
