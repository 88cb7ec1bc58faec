// SPDX-License-Identifier: MIT
// In-process timings on the same bytes, interleaved: our lossless parse (syntax tree and
// semantic model; typed values are built on first use) and print (the lines' spans written
// back), against toml++'s DOM parse.
// Usage: toml_bench FILE... ; prints the median of each and their ratio.
#include "read_input.hpp"

#include <primebeaker/toml/value.hpp>

#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  for (int a = 1; a < argc; ++a) {
    const std::string text = read_input(argv[a]);
    const int runs = text.size() > 1000000 ? 9 : 51;
    std::vector<double> parse_times;
    std::vector<double> print_times;
    std::vector<double> theirs;
    std::size_t sink = 0;
    for (int r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      const auto doc = pb::toml::Document::parse(text, argv[a]);
      parse_times.push_back(seconds_since(start));
      start = std::chrono::steady_clock::now();
      const std::string printed = doc.print();
      print_times.push_back(seconds_since(start));
      if (printed != text) {
        std::fprintf(stderr, "round trip differs for %s\n", argv[a]);
        return 1;
      }
      start = std::chrono::steady_clock::now();
      const auto table = toml::parse(text, std::string_view(argv[a]));
      theirs.push_back(seconds_since(start));
      sink += table.size();
    }
    const double parse = median(parse_times);
    const double print = median(print_times);
    const double t = median(theirs);
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("%-14s %5.2f MB  lossless parse %7.2f ms  print %6.3f ms  parse+print %7.2f ms "
                "(%5.1f MB/s)  toml++ parse %7.2f ms (%5.1f MB/s)  parse+print/toml++ %.2fx  "
                "print/toml++ %.3fx (target <= 0.5x)  (median of %d)\n",
                std::strrchr(argv[a], '/') ? std::strrchr(argv[a], '/') + 1 : argv[a],
                mb,
                parse * 1e3,
                print * 1e3,
                (parse + print) * 1e3,
                mb / (parse + print),
                t * 1e3,
                mb / t,
                (parse + print) / t,
                print / t,
                runs);
    if (sink == 0) {
      return 1;
    }
  }
  return 0;
}
