// loomd.yaml's one reader (backend/loomd_config.hpp): every section of configs/loomd.yaml.
#include "loom/backend/loomd_config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)loom::backend::readLoomdConfig(text);
    return 0;
}
