// Slurm hostlists: the compact host syntax of `scontrol show hostnames` / `squeue -o %N`.
//
//   auto hosts = expandHostlist("z1-r[001-002]-h[0-1]");
//   // z1-r001-h0 z1-r001-h1 z1-r002-h0 z1-r002-h1
//   formatHostlist(*hosts);  // "z1-r[001-002]-h[0-1]"
//
// Grammar (what slurmctld accepts for node names): a comma-separated list of expressions; an
// expression is text with any number of bracket groups, each a comma list of numbers or
// ranges `lo-hi`. A range keeps the width of its low bound (`[08-10]` is 08 09 10, `[8-10]` is
// 8 9 10). Several groups multiply, the first one outermost, as Slurm expands them. Nested
// brackets, empty groups, `hi < lo`, numbers of more than 9 digits and characters other than
// letters, digits, '.', '_' and '-' in a name are errors naming the 1-based column.
// The expansion is bounded in count and in bytes before any name is built: at most
// HostlistLimits::maxHosts names, each at most maxNameChars characters (the 128 of every stored
// name), and at most maxBytes characters of names in all. So `h[0-999999999]` and a 16 KB
// literal times `[1-65536]` cost nothing but their error.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/inventory/error.hpp"
#include "loom/inventory/name_limits.hpp"
#include "loom/inventory/natural_order.hpp"  // naturalLess, the order of formatHostlist

namespace loom::jobs {

// 4x the hosts of the 98k reference cluster (12,288 hosts).
inline constexpr std::size_t kMaxHostlistHosts = 65'536;
inline constexpr std::size_t kMaxHostlistChars = 1 << 20;
// A host name, as every name Loom stores (inventory's MapReader::checkName).
inline constexpr std::size_t kMaxHostNameChars = inventory::kMaxNameChars;
// The characters of all names of one expansion: 65,536 names of 32 characters. Expanded, that
// is at most ~5 MB of std::string (inline up to 15 characters, a heap block above).
inline constexpr std::size_t kMaxHostlistBytes = std::size_t{2} << 20;

struct HostlistLimits {
    std::size_t maxHosts = kMaxHostlistHosts;
    std::size_t maxNameChars = kMaxHostNameChars;
    std::size_t maxBytes = kMaxHostlistBytes;  // sum of the lengths of the names
};

// The names in the order Slurm lists them (duplicates kept, as scontrol keeps them).
// Errors: InvalidArgument "column N: ..." (a name longer than maxNameChars too), TooLarge above
// maxHosts names or maxBytes characters of names -- both counted before a name is built.
Result<std::vector<std::string>> expandHostlist(std::string_view text,
                                                const HostlistLimits& limits = {});

// A short form of the set of names (sorted, duplicates dropped): names with the same text
// around their numbers are merged into bracket ranges one number at a time, from the last
// number to the first, wherever the rest is the same — `z1-r[001-016]-h[0-1]`,
// `gpu[001-100]-ib0` (a number before a constant one), `x[1-3]y[1-2]z5`. A range keeps the
// width of its low bound (`[001-100]`, `[8-10,08]`). expandHostlist(formatHostlist(x)) names
// exactly the set x (its order may differ from natural order where a merge applies to some
// names only). Cost: linear in the names' characters plus one hash lookup per name and varying
// number; at most ~12 bytes per number of working memory.
std::string formatHostlist(std::span<const std::string> names);

}  // namespace loom::jobs
