// SPDX-License-Identifier: MIT
// docs/ARCHITECTURE.md is true: each module's "may depend on" cell is what its CMakeLists.txt
// declares (pb_add_module DEPENDS, which the link enforces), and every `#include
// <primebeaker/X/...>` of a module's sources and public headers names itself or a declared module.
#include "test_support.hpp"

#include <primebeaker/core/text.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using Modules = std::set<std::string>;

std::string read(const fs::path &path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> module_names() {
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(pb::test::source_dir() / "src")) {
    if (entry.is_directory() && fs::exists(entry.path() / "CMakeLists.txt")) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The DEPENDS of the pb_add_module call in src/<module>/CMakeLists.txt.
Modules declared(const std::string &module) {
  const std::string text = read(pb::test::source_dir() / "src" / module / "CMakeLists.txt");
  const auto call = text.find("pb_add_module(");
  if (call == std::string::npos) {
    return {};
  }
  const std::string args = text.substr(call, text.find(')', call) - call);
  Modules out;
  std::istringstream words(args);
  bool in_depends = false;
  for (std::string word; words >> word;) {
    if (word == "DEPENDS") {
      in_depends = true;
    } else if (word == "SOURCES" || word == "LIBRARIES" || word == "COMMANDS") {
      in_depends = false;
    } else if (in_depends) {
      out.insert(word);
    }
  }
  return out;
}

// The modules a module's files include, itself excluded, each with one file as the example.
std::map<std::string, std::string> included(const std::string &module) {
  static const std::regex include(R"(#include <primebeaker/([a-z_]+)/)");
  std::map<std::string, std::string> out;
  for (const auto &root : {pb::test::source_dir() / "src" / module,
                           pb::test::source_dir() / "include" / "primebeaker" / module}) {
    if (!fs::exists(root)) {
      continue;
    }
    for (const auto &entry : fs::recursive_directory_iterator(root)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".h")) {
        continue;
      }
      const std::string text = read(entry.path());
      for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
        const std::string used = (*it)[1];
        if (used != module) {
          out.emplace(used, fs::relative(entry.path(), pb::test::source_dir()).string());
        }
      }
    }
  }
  return out;
}

// The "may depend on" cell of each row of the module table in docs/ARCHITECTURE.md.
std::map<std::string, std::string> documented() {
  std::map<std::string, std::string> out;
  std::istringstream lines(read(pb::test::source_dir() / "docs" / "ARCHITECTURE.md"));
  for (std::string line; std::getline(lines, line);) {
    if (!pb::text::starts_with(line, "| ") || pb::text::starts_with(line, "| ---")) {
      continue;
    }
    const auto cells = pb::text::split(line, '|');
    if (cells.size() < 6) {
      continue;
    }
    out[std::string(pb::text::trim(cells[1]))] =
        std::string(pb::text::trim(cells[cells.size() - 2]));
  }
  return out;
}

TEST(Architecture, EveryModuleIncludesOnlyWhatItDeclares) {
  for (const auto &module : module_names()) {
    if (module == "cli") {
      continue; // the root command: every module, through its build-time map
    }
    const Modules allowed = declared(module);
    for (const auto &[used, where] : included(module)) {
      EXPECT_TRUE(used == "core" || allowed.count(used) != 0)
          << where << " (module " << module << ") includes <primebeaker/" << used
          << "/...>, but src/" << module << "/CMakeLists.txt does not list " << used
          << " in DEPENDS";
    }
  }
}

TEST(Architecture, TheModuleTableSaysWhatTheBuildDeclares) {
  const auto rows = documented();
  const auto names = module_names();
  for (const auto &module : names) {
    ASSERT_EQ(rows.count(module), 1u) << "docs/ARCHITECTURE.md has no row for " << module;
    const std::string &cell = rows.at(module);
    if (module == "cli") {
      EXPECT_EQ(cell, "every module");
      continue;
    }
    // The cell's module names, before any parenthesised remark.
    Modules said;
    std::istringstream words(cell.substr(0, cell.find('(')));
    for (std::string word; words >> word;) {
      while (!word.empty() && (word.back() == ',' || word.back() == '.')) {
        word.pop_back();
      }
      if (std::find(names.begin(), names.end(), word) != names.end()) {
        said.insert(word);
      }
    }
    Modules built = declared(module);
    if (module == "core") {
      EXPECT_EQ(cell, "nothing of ours");
      continue;
    }
    EXPECT_EQ(said, built) << "docs/ARCHITECTURE.md row " << module << " says '" << cell
                           << "'; src/" << module << "/CMakeLists.txt declares DEPENDS "
                           << pb::text::join({built.begin(), built.end()}, " ");
  }
  for (const auto &[module, cell] : rows) {
    if (module != "module") {
      EXPECT_NE(std::find(names.begin(), names.end(), module), names.end())
          << "docs/ARCHITECTURE.md has a row for " << module << ", which src/ does not have";
    }
  }
}

// The Rules section's first rule: the shared layers it lists never depend on a command module
// (one that is not itself a shared layer), directly or through another shared layer.
TEST(Architecture, SharedLayersNeverDependOnCommandModules) {
  const std::string doc = read(pb::test::source_dir() / "docs" / "ARCHITECTURE.md");
  const auto rule = doc.find("- Shared layers (");
  ASSERT_NE(rule, std::string::npos) << "docs/ARCHITECTURE.md lost its shared-layers rule";
  const std::string listed = doc.substr(rule, doc.find(')', rule) - rule);
  static const std::regex name("`([a-z_]+)`");
  Modules shared;
  for (std::sregex_iterator it(listed.begin(), listed.end(), name), end; it != end; ++it) {
    shared.insert((*it)[1]);
  }
  ASSERT_GE(shared.size(), 5u) << listed;
  const auto names = module_names();
  for (const auto &layer : shared) {
    ASSERT_NE(std::find(names.begin(), names.end(), layer), names.end())
        << "the rule names " << layer << ", which src/ does not have";
    for (const auto &dependency : declared(layer)) {
      EXPECT_TRUE(shared.count(dependency) != 0)
          << "shared layer " << layer << " depends on " << dependency
          << ", which is not a shared layer (src/" << layer << "/CMakeLists.txt)";
    }
  }
}

} // namespace
