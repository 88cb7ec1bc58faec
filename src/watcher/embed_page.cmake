# SPDX-License-Identifier: MIT
# Turns the page and its script into C++ raw strings (cmake -DHTML= -DJS= -DOUT= -P this file).
file(READ "${HTML}" html)
file(READ "${JS}" js)
foreach(text IN ITEMS "${html}" "${js}")
  string(FIND "${text}" ")PBPAGE\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "page asset contains the raw-string delimiter )PBPAGE\"")
  endif()
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from src/watcher/page.html and watcher.js by embed_page.cmake.
#include \"page_assets.hpp\"
namespace pb::watcher::detail {
const std::string_view k_page_html = R\"PBPAGE(${html})PBPAGE\";
const std::string_view k_page_js = R\"PBPAGE(${js})PBPAGE\";
} // namespace pb::watcher::detail
")
file(RENAME "${OUT}.tmp" "${OUT}")
