// Result type of the console: Qt code reports failures as values (no exceptions), with a
// message meant for a person, e.g. "hall: racks[3].gpuOffset 96 + 16 exceeds 64 GPUs".
#pragma once

#include <QString>

#include <expected>

namespace loom::console {

template <typename T>
using Result = std::expected<T, QString>;

inline std::unexpected<QString> fail(QString message) { return std::unexpected(std::move(message)); }

}  // namespace loom::console
