// The length limit of the names Loom stores, shared by every parser that reads or makes them
// (cluster specs and their naming patterns, job documents, Slurm host lists).
#pragma once

#include <cstddef>

namespace loom::inventory {

// The longest name written in a spec or made by its naming patterns (sites, zones, rows, racks,
// hosts, switches, storage nodes) or named in a job; NIC, port and link names add their
// suffixes to these.
inline constexpr std::size_t kMaxNameChars = 128;

}  // namespace loom::inventory
