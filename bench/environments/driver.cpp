// SPDX-License-Identifier: MIT
// An optimised stand-alone driver over the module's own stream functions (the exact code
// `environments score` and `environments parse-tool-calls` run), for machines where a full
// release build of primebeaker is too slow to wait for. Built by bench/environments/build.sh.
//   driver score NAME ARGS_JSON FILE     driver parse FORMAT < message
#include <primebeaker/core/error.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/scoring.hpp>

#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

int main(int argc, char **argv) {
  using namespace pb::environments;
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "score" && argc == 5) {
      std::ifstream in(argv[4], std::ios::binary);
      size_t total = 0;
      return score_lines(
                 resolve(argv[2]), py::loads(argv[3]), in, std::cout, false, argv[4], total) == 0
                 ? 0
                 : 1;
    }
    if (mode == "parse" && argc == 3) {
      const std::string input((std::istreambuf_iterator<char>(std::cin)),
                              std::istreambuf_iterator<char>());
      std::cout << py::dumps(tool_call_report(input, argv[2])) << '\n';
      return 0;
    }
  } catch (const pb::Error &error) {
    std::cerr << "driver: " << error.what() << '\n';
    return error.code();
  }
  std::cerr << "usage: driver score NAME ARGS_JSON FILE | driver parse FORMAT < message\n";
  return 2;
}
