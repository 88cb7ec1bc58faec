// SPDX-License-Identifier: MIT
// Anchor for whole-process timings: read FILE, parse it with toml++, exit 0 (3 if invalid).
#include "read_input.hpp"

#include <toml++/toml.h>

#include <iostream>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: tomlpp_parse FILE\n";
    return 2;
  }
  const std::string text = read_input(argv[1]);
  try {
    const auto table = toml::parse(text, std::string_view(argv[1]));
    return table.empty() ? 1 : 0;
  } catch (const toml::parse_error &e) {
    std::cerr << e << '\n';
    return 3;
  }
}
