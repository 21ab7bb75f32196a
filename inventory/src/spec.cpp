// The cluster spec's entry points around parsing (spec.hpp): loading a spec from text or a
// file (parse, then expand) and ClusterSpec's model lookups. The parser is spec_parse.cpp, the
// expansion expand.cpp.
#include "loom/inventory/spec.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace loom::inventory {

const HostModelSpec* ClusterSpec::hostModel(std::string_view n) const {
    for (auto& m : hostModels)
        if (m.name == n) return &m;
    return nullptr;
}
const SwitchModelSpec* ClusterSpec::switchModel(std::string_view n) const {
    for (auto& m : switchModels)
        if (m.name == n) return &m;
    return nullptr;
}
const StorageModelSpec* ClusterSpec::storageModel(std::string_view n) const {
    for (auto& m : storageModels)
        if (m.name == n) return &m;
    return nullptr;
}

Result<Inventory> loadClusterSpec(std::string_view text, const SpecLimits& limits) {
    auto spec = parseClusterSpec(text, limits);
    if (!spec) return fail(std::move(spec.error()));
    return expandClusterSpec(*spec);
}

Result<Inventory> loadClusterSpecFile(const std::string& path, const SpecLimits& limits) {
    std::error_code ec;
    auto st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(st))
        return fail(Error::invalid("cannot open " + path + ": no such file"));
    if (std::filesystem::is_directory(st))
        return fail(Error::invalid("cannot open " + path +
                                   ": it is a directory; name the spec file in it"));
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Error::invalid("cannot open " + path + ": " + std::strerror(errno)));
    in.seekg(0, std::ios::end);
    auto size = in.tellg();
    if (size < 0) return fail(Error::invalid("cannot read " + path));
    if (std::size_t(size) > limits.maxBytes)
        return fail(Error{Errc::TooLarge, path + " is " + std::to_string(size) +
                                              " bytes, above the limit of " +
                                              std::to_string(limits.maxBytes)});
    in.seekg(0);
    std::string text(std::size_t(size), '\0');
    in.read(text.data(), size);
    if (!in) return fail(Error::invalid("cannot read " + path));
    auto inv = loadClusterSpec(text, limits);
    if (!inv) {
        Error e = std::move(inv.error());
        if (e.path.empty() && e.line == 0) e.message = path + ": " + e.message;
        return fail(std::move(e));
    }
    return inv;
}

}  // namespace loom::inventory
