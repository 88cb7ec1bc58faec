// SPDX-License-Identifier: MIT
// Reads a whole file into one string of exactly its size (one copy, as primebeaker's own
// fs::read_file does), so that the programs compared hold the input the same way.
#pragma once

#include <cstdio>
#include <string>

inline std::string read_input(const char *path) {
  std::string text;
  if (std::FILE *file = std::fopen(path, "rb")) {
    std::fseek(file, 0, SEEK_END);
    text.resize(static_cast<std::size_t>(std::ftell(file)));
    std::fseek(file, 0, SEEK_SET);
    text.resize(std::fread(text.data(), 1, text.size(), file));
    std::fclose(file);
  }
  return text;
}
