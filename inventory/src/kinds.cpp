#include "loom/inventory/kinds.hpp"

#include <cctype>
#include <string>

namespace loom::inventory {
namespace {

template <class T>
std::array<FieldInfo, kFieldCount<T>> infoOf() {
    std::array<FieldInfo, kFieldCount<T>> out{};
    forEachField<T>([&](auto i) {
        constexpr auto& fd = std::get<i>(KindDesc<T>::fields);
        using M = typename std::remove_cvref_t<decltype(fd)>::Value;
        out[i] =
            FieldInfo{fd.api,    fd.column,    fd.refCount > 0 ? ValueType::Ref : valueTypeOf<M>(),
                      fd.group,  fd.patchable, fd.member != nullptr,
                      fd.header, fd.refs,      fd.refCount};
    });
    return out;
}

template <class T>
KindInfo kindInfoOf() {
    static const auto fields = infoOf<T>();
    return KindInfo{KindDesc<T>::kind, fields, KindDesc<T>::columns, KindDesc<T>::wide};
}

}  // namespace

const FieldInfo* KindInfo::find(std::string_view api) const {
    for (const auto& f : fields)
        if (f.api == api) return &f;
    return nullptr;
}

const KindInfo& kindInfo(Kind k) {
    static const std::array<KindInfo, kKindCount> all = [] {
        std::array<KindInfo, kKindCount> out{};
        for (Kind k : kAllKinds)
            visitKind(k, [&](auto* tag) {
                using T = std::remove_pointer_t<decltype(tag)>;
                out[static_cast<int>(k)] = kindInfoOf<T>();
            });
        return out;
    }();
    return all[static_cast<int>(k)];
}

std::string columnHeader(const KindInfo& k, std::string_view api) {
    if (const FieldInfo* f = k.find(api); f && !f->header.empty()) return std::string(f->header);
    return headerOf(api);
}

std::string headerOf(std::string_view api) {
    std::string h;
    for (char ch : api) {
        if (std::isupper(static_cast<unsigned char>(ch)) && !h.empty()) h += '-';
        h += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
    return h;
}

}  // namespace loom::inventory
