// SPDX-License-Identifier: MIT
// The Python shim package compiled into the binary (embed_python.cmake), staged under python/.
#pragma once

#include <cstddef>
#include <span>

namespace pb::staging::detail {

struct EmbeddedFile {
  const char *path; // relative to python/, e.g. "primebeaker/environments/_shim.py"
  const unsigned char *data;
  std::size_t size;
};

std::span<const EmbeddedFile> python_files();

} // namespace pb::staging::detail
