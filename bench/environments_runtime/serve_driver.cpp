// SPDX-License-Identifier: MIT
// `primebeaker environments serve --stdio` without the CLI around it: the same serve() transport
// and EnvironmentEngine, linked from a Release build's module libraries (build.sh), for machines
// where a full Release build of the binary is too slow to wait for. Accepts the binary's argv
// ("environments serve --stdio") so the shim starts it through $PRIMEBEAKER_BIN unchanged.
#include <primebeaker/environments_runtime/engine.hpp>
#include <primebeaker/environments_runtime/serve.hpp>

#include <cstdio>
#include <string>

int main(int argc, char **argv) {
  if (argc != 4 || std::string(argv[1]) != "environments" || std::string(argv[2]) != "serve" ||
      std::string(argv[3]) != "--stdio") {
    std::fputs("usage: serve_driver environments serve --stdio\n", stderr);
    return 2;
  }
  pb::environments_runtime::EnvironmentEngine engine;
  pb::environments_runtime::serve(0, 1, engine, {"primebeaker serve driver"});
  return 0;
}
