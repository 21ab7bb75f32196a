// The diff stored with each switch config version (fabric_config_versions.diff): a line diff in
// unified style without context. Split from provisioning_service.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom::backend {

std::string lineDiff(const std::string& a, const std::string& b);

// A switch's last config as the reconciler keeps it (to skip an unchanged one and diff a
// changed one): deflated. At 98k the ~6,900 configs as text were 48 MB of loomd's heap
// (heaptrack); FRR configs are stanzas that repeat, a tenth of that packed.
class PackedConfig {
public:
    PackedConfig() = default;
    explicit PackedConfig(std::string_view text);
    std::string text() const;
    bool equals(std::string_view text) const;
    std::size_t packedBytes() const { return deflated_.size(); }

private:
    std::string deflated_;
    std::size_t size_ = 0;
    std::uint64_t hash_ = 0;
};

}  // namespace loom::backend
