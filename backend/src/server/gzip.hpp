// gzip for HTTP answers (Content-Encoding: gzip): the dashboard's assets, compressed once at
// start, and large API answers (GET /api/v1/hall is 2.9 MB of JSON at 24k, ~10x less gzipped).
#pragma once

#include <string>
#include <string_view>

namespace loom::backend {

// `in` gzipped (a gzip wrapper, not zlib's) at `level` 1..9; empty on failure.
std::string gzip(std::string_view in, int level);

// True when an Accept-Encoding value lists gzip (or *) without refusing it with q=0.
bool acceptsGzip(std::string_view acceptEncoding);

}  // namespace loom::backend
