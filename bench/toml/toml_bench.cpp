// SPDX-License-Identifier: MIT
// In-process timings on the same bytes, interleaved: our lossless parse + print (CST, semantic
// model and typed values built, then the tokens printed back) against toml++'s DOM parse.
// Usage: toml_bench FILE... ; prints the median of each and their ratio.
#include <primebeaker/toml/value.hpp>

#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
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
    std::ifstream in(argv[a], std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    const int runs = text.size() > 1000000 ? 9 : 51;
    std::vector<double> ours;
    std::vector<double> theirs;
    std::size_t sink = 0;
    for (int r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      const auto doc = pb::toml::Document::parse(text, argv[a]);
      const std::string printed = doc.print();
      ours.push_back(seconds_since(start));
      if (printed != text) {
        std::fprintf(stderr, "round trip differs for %s\n", argv[a]);
        return 1;
      }
      start = std::chrono::steady_clock::now();
      const auto table = toml::parse(text, std::string_view(argv[a]));
      theirs.push_back(seconds_since(start));
      sink += table.size();
    }
    const double o = median(ours);
    const double t = median(theirs);
    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("%-28s %8.2f MB  lossless parse+print %8.2f ms (%5.1f MB/s)  toml++ parse %8.2f ms "
                "(%5.1f MB/s)  ratio %.2fx  (median of %d)\n",
                argv[a],
                mb,
                o * 1e3,
                mb / o,
                t * 1e3,
                mb / t,
                o / t,
                runs);
    if (sink == 0) {
      return 1;
    }
  }
  return 0;
}
