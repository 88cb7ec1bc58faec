// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/process.hpp>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

namespace pb::test {

std::filesystem::path source_dir() {
  return PB_SOURCE_DIR;
}
std::filesystem::path shared_dir() {
  return PB_SHARED_DIR;
}
std::filesystem::path binary_path() {
  return PB_BINARY;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "pbtest.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  m_path = std::filesystem::canonical(tmpl);
}

TempDir::~TempDir() {
  std::error_code ec;
  // Tests make read-only directories on purpose; make them writable so removal succeeds.
  for (auto it = std::filesystem::recursive_directory_iterator(m_path, ec);
       it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      std::filesystem::permissions(
          it->path(), std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    }
  }
  std::filesystem::remove_all(m_path, ec);
}

std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read " + path.string());
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file(const std::filesystem::path &path, const std::string &content, unsigned mode) {
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path());
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) {
      throw std::runtime_error("cannot write " + path.string());
    }
  }
  ::chmod(path.c_str(), mode);
}

std::string tree_digest(const std::filesystem::path &dir) {
  std::vector<std::string> rows;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st {};
    ::lstat(it->path().c_str(), &st);
    std::ostringstream row;
    row << std::filesystem::relative(it->path(), dir).string() << ' ' << std::oct << st.st_mode
        << std::dec << ' ' << st.st_size;
    if (S_ISREG(st.st_mode) && (st.st_mode & S_IRUSR)) {
      row << ' ' << std::hash<std::string>{}(read_file(it->path()));
    } else if (S_ISLNK(st.st_mode)) {
      row << " -> " << std::filesystem::read_symlink(it->path(), ec).string();
    }
    rows.push_back(row.str());
  }
  std::sort(rows.begin(), rows.end());
  std::string digest;
  for (const auto &row : rows) {
    digest += row + "\n";
  }
  return digest;
}

RunResult run_primebeaker(const std::vector<std::string> &args, const RunOptions &options) {
  proc::Command command;
  command.argv.push_back(binary_path().string());
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  command.clear_env = true;
  std::string path;
  for (const auto &dir : options.path_prepend) {
    path += dir.string() + ":";
  }
  path += "/usr/local/bin:/usr/bin:/bin";
  command.env_set = {{"PATH", path},
                     {"LANG", "C.UTF-8"},
                     {"TZ", "UTC"},
                     {"NO_COLOR", "1"},
                     {"HOME", std::filesystem::temp_directory_path().string()},
                     // A login's name: derived defaults (docs/config.md) use it.
                     {"USER", "jdoe"}};
  // The sanitizer leg's settings (.ci/run) reach the binary as they reach the test process.
  for (const char *name : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
    if (const char *value = std::getenv(name); value != nullptr) {
      command.env_set[name] = value;
    }
  }
  for (const auto &[name, value] : options.env) {
    command.env_set[name] = value;
  }
  for (const auto &name : options.unset_env) {
    command.env_set.erase(name);
  }
  command.stdin_data = options.stdin_data;
  command.cwd = options.cwd;
  command.timeout = std::chrono::seconds(options.timeout_seconds);
  proc::SystemRunner runner;
  const auto result = runner.run(command);
  return {result.signal != 0 ? 128 + result.signal : result.exit_code, result.out, result.err};
}

void provide_stage(const std::filesystem::path &staged_program) {
  const auto stage_dir = staged_program.parent_path();
  std::error_code ec;
  if (std::filesystem::exists(stage_dir, ec)) {
    return;
  }
  static TempDir shared_scratch;
  static const std::filesystem::path shared_stage = [] {
    RunOptions options;
    options.timeout_seconds = 600;
    const auto result =
        run_primebeaker({"stage", "--scratch-dir", shared_scratch.path().string()}, options);
    if (result.exit_code != 0) {
      throw std::runtime_error("primebeaker stage failed: " + result.err);
    }
    return std::filesystem::path(
        nlohmann::json::parse(result.out).at("directory").get<std::string>());
  }();
  if (stage_dir.filename() != shared_stage.filename()) {
    throw std::runtime_error("the preview names another build's stage: " + stage_dir.string());
  }
  std::filesystem::create_directories(stage_dir.parent_path());
  std::filesystem::create_directory_symlink(shared_stage, stage_dir);
}

FakeBin::FakeBin(const std::filesystem::path &root) : m_bin(root / "bin"), m_calls(root / "calls") {
  std::filesystem::create_directories(m_bin);
  std::filesystem::create_directories(m_calls);
}

void FakeBin::add(const std::string &name, const std::string &behaviour) {
  // Records go to one file per call, named by a nanosecond clock so they sort in call order.
  const std::string script = "#!/bin/bash\n"
                             "__rec=$(mktemp \"" +
                             m_calls.string() + "/$(date +%s%N)." + name +
                             ".XXXXXX\")\n"
                             "printf '%s\\0' \"$0\" \"$@\" > \"$__rec.argv\"\n"
                             "env -0 > \"$__rec.env\"\n"
                             "pwd > \"$__rec.cwd\"\n"
                             "unset __rec\n" +
                             behaviour + "\n";
  write_file(m_bin / name, script, 0755);
}

namespace {
// How many digits a call record's name starts with (its nanosecond clock).
size_t file_stem_digits(const std::filesystem::path &record) {
  const std::string name = record.filename().string();
  size_t n = 0;
  while (n < name.size() && std::isdigit(static_cast<unsigned char>(name[n]))) {
    ++n;
  }
  return n;
}
} // namespace

std::vector<FakeCall> FakeBin::calls(const std::string &name) const {
  std::vector<std::filesystem::path> records;
  const std::string marker = "." + name + ".";
  for (const auto &entry : std::filesystem::directory_iterator(m_calls)) {
    const std::string file = entry.path().filename().string();
    if (file.find(marker) != std::string::npos && entry.path().extension() == ".argv") {
      records.push_back(entry.path());
    }
  }
  std::sort(records.begin(), records.end());
  auto split_nul = [](const std::string &data) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t i = 0; i < data.size(); ++i) {
      if (data[i] == '\0') {
        parts.push_back(data.substr(start, i - start));
        start = i + 1;
      }
    }
    return parts;
  };
  std::vector<FakeCall> calls;
  for (const auto &record : records) {
    FakeCall call;
    call.argv = split_nul(read_file(record));
    call.time_ns = std::stoll(record.filename().string().substr(0, file_stem_digits(record)));
    if (!call.argv.empty()) {
      call.argv[0] = std::filesystem::path(call.argv[0]).filename().string();
    }
    auto base = record;
    base.replace_extension();
    for (const auto &kv : split_nul(read_file(base.string() + ".env"))) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos) {
        call.env[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    }
    call.cwd = read_file(base.string() + ".cwd");
    if (!call.cwd.empty() && call.cwd.back() == '\n') {
      call.cwd.pop_back();
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

bool args_match(const std::vector<std::string> &args, const std::vector<std::string> &prefix) {
  if (prefix.size() > args.size()) {
    return false;
  }
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i] != "*" && prefix[i] != args[i]) {
      return false;
    }
  }
  return true;
}

FakeBeaker::FakeBeaker(FakeBin &bin)
    : m_bin(bin), m_rules(bin.bin().parent_path() / "beaker-rules") {
  std::filesystem::create_directories(m_rules);
  std::filesystem::create_directories(m_rules.parent_path() / "beaker-kept");
  // Rule folders sort in the order they were added; each holds its prefix (NUL-separated
  // words), its answers (answer-K.out/.err/.code) and how many calls it has served.
  m_bin.add(
      "beaker",
      "for __rule in \"" + m_rules.string() +
          "\"/*/; do\n"
          "  mapfile -d '' -t __words < \"$__rule/prefix\"\n"
          "  (( ${#__words[@]} <= $# )) || continue\n"
          "  __ok=1; __i=1\n"
          "  for __w in \"${__words[@]}\"; do\n"
          "    if [ \"$__w\" != '*' ] && [ \"$__w\" != \"${!__i}\" ]; then __ok=0; break; fi\n"
          "    __i=$((__i + 1))\n"
          "  done\n"
          "  [ $__ok = 1 ] || continue\n"
          "  __n=$(ls \"$__rule\" | grep -c '\\.code$')\n"
          "  __served=$(cat \"$__rule/served\" 2>/dev/null || echo 0)\n"
          "  __k=$__served; (( __k < __n )) || __k=$((__n - 1))\n"
          "  echo $((__served + 1)) > \"$__rule/served\"\n"
          "  if [ -e \"$__rule/answer-$__k.keep\" ]; then\n"
          "    cp -- \"${@: -1}\" \"" +
          (m_rules.parent_path() / "beaker-kept").string() +
          "/$(date +%s%N)\"\n"
          "  fi\n"
          "  if [ -e \"$__rule/answer-$__k.signal\" ]; then\n"
          "    kill -\"$(cat \"$__rule/answer-$__k.signal\")\" \"$PPID\"; sleep 0.2\n"
          "  fi\n"
          "  if [ -e \"$__rule/answer-$__k.expand\" ]; then\n"
          "    __o=$(cat \"$__rule/answer-$__k.out\"; echo x); __o=${__o%x}\n"
          "    for ((__i = 1; __i <= $# && __i <= 9; ++__i)); do "
          "__o=${__o//\"{$__i}\"/\"${!__i}\"}; done\n"
          "    printf '%s' \"$__o\"\n"
          "  else\n"
          "    cat \"$__rule/answer-$__k.out\"\n"
          "  fi\n"
          "  cat \"$__rule/answer-$__k.err\" >&2\n"
          "  exit \"$(cat \"$__rule/answer-$__k.code\")\"\n"
          "done\n"
          "echo \"fake beaker: unexpected call: $*\" >&2\n"
          "exit 97");
}

FakeBeaker &FakeBeaker::on(const std::vector<std::string> &prefix,
                           const std::string &out,
                           int exit_code,
                           const std::string &err) {
  return on_sequence(prefix, {FakeAnswer{out, exit_code, err}});
}

FakeBeaker &FakeBeaker::on_sequence(const std::vector<std::string> &prefix,
                                    const std::vector<FakeAnswer> &answers) {
  if (answers.empty()) {
    throw std::invalid_argument("FakeBeaker::on_sequence needs at least one answer");
  }
  char name[16];
  std::snprintf(name, sizeof name, "%04d", m_next_rule++);
  const auto rule = m_rules / name;
  std::string words;
  for (const auto &word : prefix) {
    words += word;
    words += '\0';
  }
  write_file(rule / "prefix", words);
  for (size_t k = 0; k < answers.size(); ++k) {
    const std::string stem = "answer-" + std::to_string(k);
    write_file(rule / (stem + ".out"), answers[k].out);
    write_file(rule / (stem + ".err"), answers[k].err);
    write_file(rule / (stem + ".code"), std::to_string(answers[k].exit_code));
    if (answers[k].keep_last_argument) {
      write_file(rule / (stem + ".keep"), "");
    }
    if (answers[k].expand_arguments) {
      write_file(rule / (stem + ".expand"), "");
    }
    if (answers[k].signal_caller != 0) {
      write_file(rule / (stem + ".signal"), std::to_string(answers[k].signal_caller));
    }
  }
  return *this;
}

std::vector<FakeCall> FakeBeaker::calls() const {
  return m_bin.calls("beaker");
}

std::vector<FakeCall> FakeBeaker::calls_matching(const std::vector<std::string> &prefix) const {
  std::vector<FakeCall> matching;
  for (auto &call : calls()) {
    const std::vector<std::string> args(call.argv.begin() + 1, call.argv.end());
    if (args_match(args, prefix)) {
      matching.push_back(std::move(call));
    }
  }
  return matching;
}

std::vector<std::string> FakeBeaker::kept_files() const {
  std::vector<std::filesystem::path> kept;
  for (const auto &entry :
       std::filesystem::directory_iterator(m_rules.parent_path() / "beaker-kept")) {
    kept.push_back(entry.path());
  }
  std::sort(kept.begin(), kept.end());
  std::vector<std::string> contents;
  for (const auto &path : kept) {
    contents.push_back(read_file(path));
  }
  return contents;
}

FakeBeaker &FakeBeaker::clear() {
  std::filesystem::remove_all(m_rules);
  std::filesystem::create_directories(m_rules);
  m_next_rule = 0;
  return *this;
}

pb::Error thrown_error(const std::function<void()> &body) {
  try {
    body();
  } catch (const pb::Error &error) {
    return error;
  }
  ADD_FAILURE() << "expected a pb::Error, none was thrown";
  return pb::Error(-1, "no pb::Error was thrown");
}

std::string multi_node_rl_toml(const std::filesystem::path &output_dir) {
  return "# Multi-node RL, 4 trainer ranks (cp 2 x dp_replicate 2) on a mixed node.\n"
         "output_dir = \"" +
         output_dir.string() +
         "\"\n"
         "clean_output_dir = true # wipe on a fresh start\n"
         "max_steps = 100\n"
         "seq_len = 4096 # kept as written\n"
         "\n"
         "[deployment]\n"
         "type = \"multi_node\"\n"
         "gpus_per_node = 8\n"
         "num_train_nodes = 1\n"
         "num_infer_nodes = 2\n"
         "\n"
         "[trainer]\n"
         "[trainer.model]\n"
         "cp = 2\n"
         "dp_replicate = 2\n"
         "\n"
         "[inference]\n"
         "api_server_count = 6\n"
         "[inference.parallel]\n"
         "tp = 2\n"
         "dp = 6\n"
         "\n"
         "[wandb]\n"
         "project = \"proj\"\n"
         "name = \"same-run\"   # keep the W&B run name\n"
         "\n"
         "[ckpt]\n"
         "interval = 10 # every ten steps\n"
         "resume_step = -1\n"
         "\n"
         "[orchestrator]\n";
}

std::string multi_node_rl_v0_9_toml(const std::filesystem::path &output_dir,
                                    const std::string &run_block) {
  // Modelled on main-559b4477-examples-advanced-qwen3-30b-a3b-swe.toml of the corpus.
  return "# Multi-node RL on Prime-RL v0.9: 2 trainer nodes of 2 GPUs, 1 inference node.\n"
         "output_dir = \"" +
         output_dir.string() +
         "\"\n"
         "clean = true # wipe on a fresh start\n"
         "max_steps = 100\n"
         "seq_len = 4096 # kept as written\n"
         "\n" +
         run_block +
         "[resume] # latest\n"
         "\n"
         "[model]\n"
         "name = \"Qwen/Qwen3-0.6B\"\n"
         "\n"
         "[deployment]\n"
         "type = \"multi_node\"\n"
         "gpus_per_node = 2\n"
         "num_train_nodes = 2\n"
         "num_infer_nodes = 1\n"
         "\n"
         "[slurm]\n"
         "job_name = \"unused-on-beaker\"\n"
         "\n"
         "[ckpt]\n"
         "interval = 10 # every ten steps\n"
         "\n"
         "[monitors.wandb]\n"
         "project = \"proj\"\n"
         "\n"
         "[trainer.optim]\n"
         "lr = 3e-6\n"
         "\n"
         "[orchestrator]\n"
         "batch_size = 64\n"
         "\n"
         "[[orchestrator.train.source]]\n"
         "name = \"reverse-text\"\n"
         "\n"
         "[orchestrator.train.source.env.taskset]\n"
         "id = \"reverse-text\"\n"
         "\n"
         "[inference.vllm]\n"
         "tensor_parallel_size = 1\n";
}

} // namespace pb::test
