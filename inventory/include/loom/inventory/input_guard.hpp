// Guards for untrusted input text, run before anything builds a tree from it.
//
// yaml-cpp's YAML::Load builds every node of a document (several hundred bytes each) and
// shares the nodes an alias names, so a 12 MB document or a 381-byte alias bomb costs
// gigabytes once loaded and walked. checkYamlShape reads the document as a stream of parse
// events instead -- no tree -- counting every node and every alias by the size of what it
// names, and stops at the first node over the limit. Only a document that passes is loaded.
//
//   if (auto ok = checkYamlShape(text, {.maxNodes = 200'000, .maxDepth = 24}); !ok)
//       return fail(ok.error());   // TooLarge naming the line where the limit was crossed
//   auto root = YAML::Load(text);  // now bounded
#pragma once

#include "loom/inventory/error.hpp"

#include <cstddef>
#include <optional>
#include <string_view>

namespace loom {

struct YamlShapeLimits {
    std::size_t maxNodes = 200'000;  // scalars, maps and sequences; aliases count per use
    int maxDepth = 64;               // nesting of maps and sequences, aliases expanded
    std::size_t maxDocuments = 1;    // documents in the stream (--- separated)
};

// Ok when the YAML text is within the limits. Errors: TooLarge (nodes), InvalidArgument
// (depth, documents, syntax) with the 1-based line where the problem is.
Result<void> checkYamlShape(std::string_view text, const YamlShapeLimits& limits = {});

// The byte offset of the first byte that is not part of well-formed UTF-8 (overlong forms,
// surrogates and code points above U+10FFFF are ill-formed), or nullopt when all is valid.
std::optional<std::size_t> invalidUtf8At(std::string_view text);

// The 1-based line of byte offset `at` in `text`.
int lineAt(std::string_view text, std::size_t at);

// Ok when `text` is valid UTF-8 without NUL or control characters other than tab, newline
// and carriage return; otherwise InvalidArgument naming the byte (and the line when the text
// has several), with `path` as the error's document path.
Result<void> checkText(std::string_view text, std::string_view what, std::string path = {},
                       int line = 0);

}  // namespace loom
