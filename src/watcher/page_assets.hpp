// SPDX-License-Identifier: MIT
// The page and its script, compiled in from page.html and watcher.js (embed_page.cmake).
#pragma once

#include <string_view>

namespace pb::watcher::detail {
extern const std::string_view k_page_html;
extern const std::string_view k_page_js;
} // namespace pb::watcher::detail
