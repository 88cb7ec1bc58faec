// SPDX-License-Identifier: MIT
#include <primebeaker/core/self.hpp>

#include <elf.h>
#include <errno.h>
#include <link.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

namespace pb::self {
namespace {

// The first object dl_iterate_phdr reports is the program; its name is empty when the kernel
// loaded it and the path the loader was given when the loader ran it.
struct MainProgram {
  std::string name;
  std::string build_id;
  bool seen = false;
};

std::string note_build_id(const dl_phdr_info &info) {
  static constexpr char k_hex[] = "0123456789abcdef";
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr) &header = info.dlpi_phdr[i];
    if (header.p_type != PT_NOTE) {
      continue;
    }
    const char *at = reinterpret_cast<const char *>(info.dlpi_addr + header.p_vaddr);
    const char *end = at + header.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      const auto *note = reinterpret_cast<const ElfW(Nhdr) *>(at);
      const char *name = at + sizeof(ElfW(Nhdr));
      const char *desc = name + ((note->n_namesz + 3U) & ~3U);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && desc + note->n_descsz <= end) {
        std::string hex;
        for (ElfW(Word) b = 0; b < note->n_descsz; ++b) {
          const auto byte = static_cast<unsigned char>(desc[b]);
          hex += k_hex[byte >> 4];
          hex += k_hex[byte & 15];
        }
        return hex;
      }
      at = desc + ((note->n_descsz + 3U) & ~3U);
    }
  }
  return {};
}

std::filesystem::path proc_self_exe() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("primebeaker") : path;
}

// The program an explicitly run loader (`ld-linux... [options] PROGRAM args`, as a stage's
// wrapper runs it) was asked to run, from the untouched command line: some loaders leave the
// main map unnamed. Empty when this process was not started that way.
std::string program_of_loader() {
  if (!proc_self_exe().filename().string().starts_with("ld-linux")) {
    return {};
  }
  std::string line;
  try {
    line = [] {
      std::string text;
      if (std::FILE *f = std::fopen("/proc/self/cmdline", "rb")) {
        char buffer[4096];
        std::size_t n = 0;
        while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
          text.append(buffer, n);
        }
        std::fclose(f);
      }
      return text;
    }();
  } catch (...) {
    return {};
  }
  std::vector<std::string> words;
  for (std::size_t start = 0; start < line.size();) {
    const auto end = line.find('\0', start);
    words.push_back(line.substr(start, end == std::string::npos ? end : end - start));
    start = end == std::string::npos ? line.size() : end + 1;
  }
  // Options of ld.so that take a value; the first word that is no option is the program.
  static const std::set<std::string_view> with_value = {"--library-path",
                                                        "--argv0",
                                                        "--preload",
                                                        "--audit",
                                                        "--glibc-hwcaps-prepend",
                                                        "--glibc-hwcaps-mask"};
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (with_value.count(words[i]) > 0) {
      ++i;
    } else if (!words[i].starts_with("--")) {
      return words[i];
    }
  }
  return {};
}

const MainProgram &main_program() {
  static const MainProgram program = [] {
    MainProgram found;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
          auto &out = *static_cast<MainProgram *>(data);
          out.seen = true;
          out.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
          out.build_id = note_build_id(*info);
          return 1; // the program only
        },
        &found);
    if (found.name.empty()) {
      found.name = program_of_loader();
    }
    return found;
  }();
  return program;
}

} // namespace

std::string build_id() {
  return main_program().build_id;
}

bool started_by_loader() {
  return !main_program().name.empty();
}

std::filesystem::path executable() {
  if (started_by_loader()) {
    std::error_code ec;
    auto absolute = std::filesystem::absolute(main_program().name, ec);
    return ec ? std::filesystem::path(main_program().name) : absolute;
  }
  return proc_self_exe();
}

std::filesystem::path command() {
  if (started_by_loader() && program_invocation_name != nullptr &&
      std::string_view(program_invocation_name).find('/') != std::string_view::npos) {
    std::error_code ec;
    auto absolute = std::filesystem::absolute(program_invocation_name, ec);
    return ec ? std::filesystem::path(program_invocation_name) : absolute;
  }
  return executable();
}

std::vector<std::filesystem::path> loaded_objects() {
  struct Collected {
    std::vector<std::filesystem::path> paths;
    std::set<std::string> seen;
    bool first = true;
  } collected;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto &out = *static_cast<Collected *>(data);
        const bool program = out.first;
        out.first = false;
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (program || name.empty() || name.front() != '/' || !out.seen.insert(name).second) {
          return 0; // the program, the vDSO, or a duplicate
        }
        out.paths.emplace_back(name);
        return 0;
      },
      &collected);
  return collected.paths;
}

} // namespace pb::self
