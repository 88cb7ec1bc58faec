// SPDX-License-Identifier: MIT
#include <primebeaker/cli/run.hpp>

int main(int argc, char **argv) {
  return pb::cli::run(argc, argv);
}
