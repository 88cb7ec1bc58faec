// SPDX-License-Identifier: MIT
#include "launch_fixture.hpp"

#include <cstdlib>
#include <fstream>
#include <regex>

namespace pb::test {

LaunchFixture::LaunchFixture() : m_fakes(m_tmp.path() / "fakes"), m_beaker(m_fakes) {
  namespace fs = std::filesystem;
  fs::create_directories(mount());
  fs::copy(source_dir() / "examples", mount() / "examples", fs::copy_options::recursive);
  fs::copy(
      source_dir() / "tests" / "launch" / "data", mount() / "data", fs::copy_options::recursive);
}

void LaunchFixture::beaker_creates() {
  m_beaker.on({"experiment", "create"}, k_created_stdout);
}

std::string LaunchFixture::staged_program() {
  const auto result = run({"stage", "--dry-run", "--scratch-dir", mount().string()}, false);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return nlohmann::json::parse(result.out).at("program").get<std::string>();
}

std::regex LaunchFixture::staged_line(const std::string &how) {
  const std::string directory = std::filesystem::path(staged_program()).parent_path().string();
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex("primebeaker: staged primebeaker [^ ]+ at " +
                    std::regex_replace(directory, special, R"(\$&)") + " \\((" + how + ")\\)\n");
}

std::vector<std::string> LaunchFixture::mount_flags() const {
  const std::string root = mount().string();
  return {"--mount-path", root, "--working-dir", root, "--scratch-dir", root, "--home-dir", root};
}

RunResult LaunchFixture::run(std::vector<std::string> args,
                             bool with_mount,
                             std::map<std::string, std::string> env) {
  if (with_mount) {
    // Right after "rl preview", so that a test's own flags come later and win.
    const auto flags = mount_flags();
    args.insert(args.begin() +
                    std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(args.size())),
                flags.begin(),
                flags.end());
  }
  RunOptions options;
  options.cwd = mount();
  options.path_prepend = {m_fakes.bin()};
  options.env = {{"PRIMEBEAKER_LAUNCH_ID", "0123456789abcdef0123456789abcdef"},
                 {"PRIMEBEAKER_IMAGE_CATALOG", runtime_catalog().string()}};
  for (const auto &[name, value] : env) {
    options.env[name] = value;
  }
  return run_primebeaker(args, options);
}

std::string LaunchFixture::normalized(const std::string &text) const {
  std::string out = text;
  const std::string tmp = m_tmp.path().string();
  for (size_t pos = out.find(tmp); pos != std::string::npos; pos = out.find(tmp, pos)) {
    out.replace(pos, tmp.size(), "<TMP>");
  }
  // The stage is named by the build id of the binary under test (docs/staging.md).
  static const std::regex stage(R"(/primebeaker/bin/[0-9A-Za-z.+~-]+-[0-9a-f]{16}/)");
  out = std::regex_replace(out, stage, "/primebeaker/bin/<VERSION>-<BUILD ID>/");
  // The staged beaker CLI is named by the fake's hash, which holds the test's paths.
  static const std::regex tool(R"(/primebeaker/tools/beaker-[0-9a-f]{16}/)");
  return std::regex_replace(out, tool, "/primebeaker/tools/beaker-<SHA256>/");
}

void LaunchFixture::expect_golden(const std::string &name, const std::string &actual) const {
  const auto path = source_dir() / "tests" / "launch" / "golden" / name;
  const char *update = std::getenv("PB_UPDATE_GOLDEN");
  if ((update != nullptr && std::string(update) == "1") || !std::filesystem::exists(path)) {
    write_file(path, actual);
    if (update == nullptr) {
      ADD_FAILURE() << "golden file " << path << " was missing; wrote it";
    }
    return;
  }
  EXPECT_EQ(test::read_file(path), actual)
      << "golden " << name << " differs (PB_UPDATE_GOLDEN=1 rewrites it)";
}

void LaunchFixture::write(const std::string &relative, const std::string &content) const {
  write_file(mount() / relative, content);
}

std::string LaunchFixture::read(const std::string &relative) const {
  return test::read_file(mount() / relative);
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::filesystem::path runtime_catalog() {
  return source_dir() / "tests" / "launch" / "data" / "runtime-catalog.json";
}

std::string example_text(const std::string &relative) {
  if (relative.rfind("data/", 0) == 0) {
    return read_file(source_dir() / "tests" / "launch" / relative);
  }
  return read_file(source_dir() / relative);
}

std::string
replace_once(const std::string &text, const std::string &old_text, const std::string &new_text) {
  const size_t first = text.find(old_text);
  if (first == std::string::npos || text.find(old_text, first + 1) != std::string::npos) {
    throw std::runtime_error("text '" + old_text + "' not found once");
  }
  return text.substr(0, first) + new_text + text.substr(first + old_text.size());
}

std::string
replace_line(const std::string &text, const std::string &prefix, const std::string &replacement) {
  const size_t first = text.find("\n" + prefix);
  if (first == std::string::npos || text.find("\n" + prefix, first + 1) != std::string::npos) {
    throw std::runtime_error("line '" + prefix + "' not found once");
  }
  const size_t start = first + 1;
  const size_t end = text.find('\n', start);
  return text.substr(0, start) + replacement + text.substr(end);
}

} // namespace pb::test
