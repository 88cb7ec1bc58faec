// SPDX-License-Identifier: MIT
// One whole process per measurement, for peak resident memory and page faults (the caller reads
// them with wait4): `toml_footprint parse FILE` reads and parses FILE with the lossless engine;
// `toml_footprint print FILE` also prints it back and checks the bytes. Exit 0, or 1 when the
// round trip differs.
#include "read_input.hpp"

#include <primebeaker/toml/value.hpp>

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  if (argc != 3 || (std::strcmp(argv[1], "parse") != 0 && std::strcmp(argv[1], "print") != 0)) {
    std::fprintf(stderr, "usage: toml_footprint parse|print FILE\n");
    return 2;
  }
  std::string text = read_input(argv[2]);
  const std::size_t size = text.size();
  const auto doc = pb::toml::Document::parse(std::move(text), argv[2]);
  if (std::strcmp(argv[1], "print") == 0) {
    const std::string printed = doc.print();
    return printed.size() == size && printed == doc.text() ? 0 : 1;
  }
  return doc.text().size() == size ? 0 : 1;
}
