// A gzip body decoded, for tests of what loomd sends gzipped (/hall, the web assets).
#pragma once

#include <zlib.h>

#include <string>

namespace loom::backend::testing {

// The decoded text, "" if zlib cannot start, "<inflate failed>" for a bad or cut stream.
inline std::string gunzip(const std::string& in) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 16) != Z_OK) return {};
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = uInt(in.size());
    std::string out;
    char chunk[65536];
    int rc = Z_OK;
    while (rc == Z_OK) {
        z.next_out = reinterpret_cast<Bytef*>(chunk);
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        out.append(chunk, sizeof chunk - z.avail_out);
    }
    inflateEnd(&z);
    return rc == Z_STREAM_END ? out : std::string{"<inflate failed>"};
}

}  // namespace loom::backend::testing
