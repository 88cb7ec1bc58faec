// SPDX-License-Identifier: MIT
// toml++ 3 compiled once from the header Debian ships (libtomlplusplus-dev), as a static library
// of our own instead of Debian's libtomlplusplus.so (see fmt.cpp): the one translation unit
// toml++ documents for TOML_HEADER_ONLY=0 builds.
#define TOML_IMPLEMENTATION 1
#include <toml++/toml.h>
