#include "loom/backend/auth.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace loom::backend {

std::string generateTokenSecret() {
    unsigned char buf[32];
    if (RAND_bytes(buf, sizeof buf) != 1) throw std::runtime_error("RAND_bytes failed");
    static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out = "loom_";
    unsigned bits = 0, acc = 0;
    for (unsigned char c : buf) {
        acc = ((acc << 8) | c) & 0xffffu;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out += b64[(acc >> bits) & 63];
        }
    }
    if (bits) out += b64[(acc << (6 - bits)) & 63];
    return out;
}

std::string hashToken(std::string_view secret) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(secret.data(), secret.size(), md, &len, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 failed");
    static const char* hex = "0123456789abcdef";
    std::string out;
    out.reserve(len * 2);
    for (unsigned i = 0; i < len; ++i) {
        out += hex[md[i] >> 4];
        out += hex[md[i] & 15];
    }
    return out;
}

}  // namespace loom::backend
