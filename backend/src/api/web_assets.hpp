// The web dashboard's files, compiled into loomd by cmake/EmbedWebAssets.cmake from
// backend/web/ (the generated web_assets.cpp defines these).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace loom::backend {

struct WebAsset {
    std::string_view name;         // "index.html", or "app.<hash>.js" for every other file
    std::string_view contentType;  // "text/javascript; charset=utf-8"
    const unsigned char* data;
    std::size_t size;
    bool immutable;  // its name carries the content hash: cache it forever
};

std::span<const WebAsset> webAssets();
// The hash in the asset names (a hash of every file of the dashboard).
std::string_view webAssetsHash();

}  // namespace loom::backend
