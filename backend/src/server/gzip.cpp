#include "gzip.hpp"

#include <zlib.h>

namespace loom::backend {

std::string gzip(std::string_view in, int level) {
    z_stream z{};
    // windowBits 15 + 16: a gzip wrapper (what Content-Encoding: gzip means), not zlib's.
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
    std::string out(deflateBound(&z, uLong(in.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = uInt(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    int rc = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return rc == Z_STREAM_END ? out : std::string{};
}

bool acceptsGzip(std::string_view v) {
    for (std::size_t i = 0; i < v.size();) {
        auto j = v.find(',', i);
        if (j == std::string_view::npos) j = v.size();
        auto item = v.substr(i, j - i);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
            item.remove_prefix(1);
        if (item.starts_with("gzip") || item.starts_with("*")) {
            auto q = item.find("q=");
            if (q == std::string_view::npos) return true;
            // "q=0", "q=0.0", "q=0.000": refused; any other digit makes it acceptable.
            return item.substr(q + 2).find_first_of("123456789") != std::string_view::npos;
        }
        i = j + 1;
    }
    return false;
}

}  // namespace loom::backend
