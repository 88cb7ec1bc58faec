// SPDX-License-Identifier: MIT
// The I/O half of checkpoint discovery: directory listings and fstatat() relative to open
// directory descriptors. File contents are never read. Every stat is counted, because on a
// network filesystem (Weka) they are what a scan costs.
#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

namespace pb::checkpoints {

namespace {

namespace fs = std::filesystem;

// Below this many steps per extra worker a thread costs more than it saves.
constexpr std::size_t k_steps_per_worker = 64;

// PB_SCAN_WORKERS (1-64) for benchmarks; 4 by default: enough to overlap network round trips
// without crowding a small machine.
std::size_t scan_workers() {
  if (const char *text = std::getenv("PB_SCAN_WORKERS")) {
    const auto value = text::parse_integer(text);
    if (value && *value >= 1 && *value <= 64) {
      return static_cast<std::size_t>(*value);
    }
  }
  return 4;
}

// An open directory descriptor, closed on scope exit.
class DirFd {
public:
  DirFd() = default;
  explicit DirFd(int fd) : m_fd(fd) {}
  DirFd(DirFd &&other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }
  DirFd &operator=(DirFd &&other) noexcept {
    std::swap(m_fd, other.m_fd);
    return *this;
  }
  DirFd(const DirFd &) = delete;
  DirFd &operator=(const DirFd &) = delete;
  ~DirFd() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  int get() const { return m_fd; }
  bool valid() const { return m_fd >= 0; }

private:
  int m_fd = -1;
};

DirFd open_dir(int parent, const char *name, int *error = nullptr) {
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 && error != nullptr) {
    *error = errno;
  }
  return DirFd(fd);
}

// One directory entry as readdir reported it.
struct Entry {
  std::string name;
  unsigned char type = DT_UNKNOWN;
};

// Lists the directory `dir` with getdents64 directly: readdir's fdopendir would add an fstat
// per directory, and the descriptor stays ours.
std::vector<Entry> read_entries(int dir, ScanStats &stats) {
  std::vector<Entry> entries;
  if (::lseek(dir, 0, SEEK_SET) != 0) {
    return entries;
  }
  ++stats.directories_read;
  alignas(8) char buffer[32768];
  for (;;) {
    const long got = ::syscall(SYS_getdents64, dir, buffer, sizeof buffer);
    if (got <= 0) {
      break;
    }
    for (long offset = 0; offset < got;) {
      // linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
      unsigned short record_length = 0;
      std::memcpy(&record_length, buffer + offset + 16, sizeof record_length);
      const auto type = static_cast<unsigned char>(buffer[offset + 18]);
      const char *name = buffer + offset + 19;
      offset += record_length;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) {
        continue;
      }
      entries.push_back({name, type});
    }
  }
  return entries;
}

// stat (following symlinks) of `name` under `dir`. `known_symlink`: readdir said DT_LNK, so a
// failure means a dangling link; otherwise a failed stat is checked with one lstat to tell a
// dangling link from a missing file.
FileState stat_at(int dir, const char *name, ScanStats &stats, bool known_symlink = false) {
  struct stat st {};
  ++stats.stat_calls;
  if (::fstatat(dir, name, &st, 0) == 0) {
    if (S_ISREG(st.st_mode)) {
      return {EntryKind::regular, static_cast<std::uint64_t>(st.st_size)};
    }
    return {S_ISDIR(st.st_mode) ? EntryKind::directory : EntryKind::other, 0};
  }
  if (errno != ENOENT && errno != ELOOP) {
    return {EntryKind::other, 0}; // unreadable (EACCES, EIO): present but unusable
  }
  if (known_symlink) {
    return {EntryKind::dangling_symlink, 0};
  }
  ++stats.stat_calls;
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return {EntryKind::dangling_symlink, 0};
  }
  return {};
}

// True when readdir's type (or a stat, when it could not tell) says the entry is a directory.
bool entry_is_directory(int dir, const Entry &entry, ScanStats &stats, bool &via_symlink) {
  if (entry.type == DT_DIR) {
    return true;
  }
  if (entry.type != DT_LNK && entry.type != DT_UNKNOWN) {
    return false;
  }
  const FileState state = stat_at(dir, entry.name.c_str(), stats, entry.type == DT_LNK);
  if (entry.type == DT_LNK && state.kind == EntryKind::directory) {
    via_symlink = true;
  }
  return state.kind == EntryKind::directory;
}

// The rank of a canonical rank-shard name "__<r>_0.distcp" (r without leading zeros).
std::optional<std::size_t> rank_of_shard(std::string_view name) {
  constexpr std::string_view prefix = "__";
  constexpr std::string_view suffix = "_0.distcp";
  if (name.size() <= prefix.size() + suffix.size() || name.substr(0, 2) != prefix ||
      name.substr(name.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  const std::string_view digits = name.substr(2, name.size() - 2 - suffix.size());
  if (digits.empty() || digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  std::size_t rank = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    rank = rank * 10 + static_cast<std::size_t>(c - '0');
  }
  return rank;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Fills the trainer side of `step` from <trainer_root>/<name>/trainer.
void list_trainer_dir(int trainer_root,
                      StepListing &step,
                      std::size_t expected_ranks,
                      ScanStats &stats) {
  step.rank_shards.assign(expected_ranks, FileState{});
  const std::string path = step.name + "/trainer";
  int error = 0;
  const DirFd dir = open_dir(trainer_root, path.c_str(), &error);
  if (!dir.valid()) {
    step.trainer_dir = error == ENOTDIR ? FileState{EntryKind::other, 0} : FileState{};
    return;
  }
  step.trainer_dir = {EntryKind::directory, 0};
  for (const Entry &entry : read_entries(dir.get(), stats)) {
    if (entry.name == ".metadata") {
      step.metadata = stat_at(dir.get(), entry.name.c_str(), stats, entry.type == DT_LNK);
      continue;
    }
    if (!ends_with(entry.name, ".distcp")) {
      continue;
    }
    const auto rank = rank_of_shard(entry.name);
    if (rank && *rank < expected_ranks) {
      step.rank_shards[*rank] = stat_at(dir.get(), entry.name.c_str(), stats, entry.type == DT_LNK);
    } else {
      step.extra_shards.push_back(entry.name);
    }
  }
  std::sort(step.extra_shards.begin(), step.extra_shards.end());
}

void list_progress(int orchestrator_root, StepListing &step, ScanStats &stats) {
  const std::string path = step.name + "/orchestrator/progress.pt";
  step.progress = stat_at(orchestrator_root, path.c_str(), stats);
}

DirFd open_root(const fs::path &root, int *error) {
  return open_dir(AT_FDCWD, root.c_str(), error);
}

std::string
relative_name(const fs::path &root, const fs::path &output_dir, const std::string &name) {
  const fs::path relative = (root / name).lexically_relative(output_dir);
  return relative.empty() || *relative.begin() == ".." ? (root / name).string() : relative.string();
}

bool is_dir(const fs::path &path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// Whether some step_N directory under `checkpoints` has an orchestrator/ beside trainer/ (the
// v0.9 run-directory layout). Looks at a few step directories only.
bool has_v0_9_steps(const fs::path &checkpoints) {
  std::error_code ec;
  int looked_at = 0;
  for (fs::directory_iterator it(checkpoints, ec), end; !ec && it != end && looked_at < 3;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!parse_step_name(name) || !is_dir(it->path())) {
      continue;
    }
    ++looked_at;
    if (is_dir(it->path() / "orchestrator")) {
      return true;
    }
  }
  return false;
}

} // namespace

std::string_view layout_name(Layout layout) {
  return layout == Layout::v0_8_0 ? "v0.8.0" : "v0.9";
}

std::optional<std::int64_t> parse_step_name(std::string_view name) {
  constexpr std::string_view prefix = "step_";
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  for (const char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    if (value > (INT64_MAX - (c - '0')) / 10) {
      return std::nullopt;
    }
    value = value * 10 + (c - '0');
  }
  return value;
}

CheckpointSource detect_source(const fs::path &output_dir, int expected_ranks) {
  CheckpointSource source;
  source.output_dir = output_dir;
  source.expected_ranks = expected_ranks;
  source.trainer_root = output_dir / "checkpoints";
  source.orchestrator_root = output_dir / "run_default" / "checkpoints";
  const bool has_trainer_root = is_dir(source.trainer_root);
  if (is_dir(output_dir / "run_default") ||
      (has_trainer_root && !has_v0_9_steps(source.trainer_root))) {
    return source; // v0.8.0; a missing orchestrator root is reported per step
  }
  if (has_trainer_root) {
    source.layout = Layout::v0_9;
    source.orchestrator_root = source.trainer_root;
    return source;
  }
  // A v0.9 output_dir holds run directories (<out>/<run.dir>/checkpoints).
  std::vector<fs::path> runs;
  std::error_code ec;
  for (fs::directory_iterator it(output_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_dir(it->path() / "checkpoints") && has_v0_9_steps(it->path() / "checkpoints")) {
      runs.push_back(it->path());
    }
  }
  std::sort(runs.begin(), runs.end());
  if (runs.size() == 1) {
    source.layout = Layout::v0_9;
    source.output_dir = runs.front();
    source.trainer_root = runs.front() / "checkpoints";
    source.orchestrator_root = source.trainer_root;
    return source;
  }
  if (runs.size() > 1) {
    Error error = failure(output_dir.string() + " holds " + std::to_string(runs.size()) +
                          " v0.9 run directories; pass --output-dir with one of them");
    for (const auto &run : runs) {
      error.add_context(run.string());
    }
    throw error;
  }
  return source; // nothing written yet: read as v0.8.0, the primary target, and listed empty
}

CheckpointSource source_from_layout(const primerl::RunLayout &layout, int expected_ranks) {
  CheckpointSource source;
  source.layout = layout.is_v0_9() ? Layout::v0_9 : Layout::v0_8_0;
  source.output_dir = layout.output_dir;
  source.trainer_root = layout.trainer_checkpoints;
  source.orchestrator_root = layout.orchestrator_checkpoints;
  source.expected_ranks = expected_ranks;
  return source;
}

std::vector<std::string> find_run_dirs(const fs::path &output_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(output_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("primebeaker_", 0) == 0 || !is_dir(it->path())) {
      continue;
    }
    for (const char *artifact : {"checkpoints", "configs", "logs"}) {
      if (is_dir(it->path() / artifact)) {
        names.push_back(name);
        break;
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// The two checkpoint roots, open.
struct Roots {
  DirFd trainer;
  DirFd orchestrator_storage; // unused when both owners share one root (v0.9)
  int orchestrator = -1;
  bool shared = false;
};

Roots open_roots(const CheckpointSource &source, TreeListing &listing) {
  Roots roots;
  int error = 0;
  roots.trainer = open_root(source.trainer_root, &error);
  listing.trainer_root_exists = roots.trainer.valid();
  if (!roots.trainer.valid() && error != ENOENT) {
    throw failure("cannot read the trainer checkpoint root " + source.trainer_root.string() + " (" +
                  std::strerror(error) + ")");
  }
  // A missing root is a run before its first checkpoint: no trainer steps (the orchestrator's
  // root may already have some, each listed without its trainer side).
  roots.shared = source.orchestrator_root == source.trainer_root;
  if (!roots.shared) {
    roots.orchestrator_storage = open_root(source.orchestrator_root, nullptr);
  }
  roots.orchestrator = roots.shared ? roots.trainer.get() : roots.orchestrator_storage.get();
  listing.orchestrator_root_exists = roots.orchestrator >= 0;
  return roots;
}

// The step directories of both roots (a name in only one of them is still reported), without
// looking inside them; `only_name` skips reading the roots. Unsorted.
std::vector<StepListing> collect_step_names(const Roots &roots,
                                            TreeListing &listing,
                                            const std::optional<std::string> &only_name) {
  const CheckpointSource &source = listing.source;
  std::map<std::string, StepListing> by_name;
  const auto collect = [&](int root, const fs::path &root_path, bool trainer_side) {
    std::vector<Entry> entries;
    if (only_name) {
      entries.push_back({*only_name, DT_UNKNOWN});
    } else {
      entries = read_entries(root, listing.stats);
    }
    for (const Entry &entry : entries) {
      const auto number = parse_step_name(entry.name);
      bool via_symlink = false;
      if (!number || !entry_is_directory(root, entry, listing.stats, via_symlink)) {
        if (!only_name && (trainer_side || !roots.shared)) {
          listing.ignored.push_back(relative_name(root_path, source.output_dir, entry.name));
        }
        continue;
      }
      StepListing &step = by_name[entry.name];
      step.name = entry.name;
      step.step = *number;
      step.via_symlink = step.via_symlink || via_symlink;
      (trainer_side ? step.in_trainer_root : step.in_orchestrator_root) = true;
    }
  };
  if (roots.trainer.valid()) {
    collect(roots.trainer.get(), source.trainer_root, true);
  }
  if (roots.shared) {
    for (auto &[name, step] : by_name) {
      step.in_orchestrator_root = step.in_trainer_root;
    }
  } else if (roots.orchestrator >= 0) {
    collect(roots.orchestrator, source.orchestrator_root, false);
  }
  std::vector<StepListing> steps;
  steps.reserve(by_name.size());
  for (auto &[name, step] : by_name) {
    steps.push_back(std::move(step));
  }
  return steps;
}

// Lists what is inside one step directory: its trainer shards, .metadata and progress.pt.
void list_step(const Roots &roots, StepListing &step, std::size_t ranks, ScanStats &stats) {
  if (step.in_trainer_root) {
    list_trainer_dir(roots.trainer.get(), step, ranks, stats);
  } else {
    step.rank_shards.assign(ranks, FileState{});
  }
  if (step.in_orchestrator_root) {
    list_progress(roots.orchestrator, step, stats);
  }
}

bool step_order(const StepListing &a, const StepListing &b) {
  return a.step != b.step ? a.step < b.step : a.name < b.name;
}

std::size_t rank_count(const CheckpointSource &source) {
  return static_cast<std::size_t>(std::max(source.expected_ranks, 0));
}

} // namespace

TreeListing list_steps(const CheckpointSource &source,
                       const std::optional<std::string> &only_name) {
  TreeListing listing;
  listing.source = source;
  const std::size_t ranks = rank_count(source);
  const Roots roots = open_roots(source, listing);
  listing.steps = collect_step_names(roots, listing, only_name);

  // Steps are independent; on a network filesystem each stat is a round trip, so a few workers
  // keep several in flight. Each worker counts into its own ScanStats.
  const std::size_t workers =
      std::clamp<std::size_t>(listing.steps.size() / k_steps_per_worker, 1, scan_workers());
  std::vector<ScanStats> worker_stats(workers);
  std::atomic<std::size_t> next{0};
  const auto work = [&](std::size_t worker) {
    for (std::size_t i = next++; i < listing.steps.size(); i = next++) {
      list_step(roots, listing.steps[i], ranks, worker_stats[worker]);
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t worker = 1; worker < workers; ++worker) {
    threads.emplace_back(work, worker);
  }
  work(0);
  for (auto &thread : threads) {
    thread.join();
  }
  for (const auto &counted : worker_stats) {
    listing.stats.stat_calls += counted.stat_calls;
    listing.stats.directories_read += counted.directories_read;
  }
  std::sort(listing.steps.begin(), listing.steps.end(), step_order);
  std::sort(listing.ignored.begin(), listing.ignored.end());
  return listing;
}

TreeListing list_latest(const CheckpointSource &source, std::optional<std::int64_t> requested) {
  if (requested) {
    TreeListing one = list_steps(source, "step_" + std::to_string(*requested));
    if (one.steps.size() == 1 && evaluate_step(one.steps.front(), source).complete) {
      return one;
    }
    return list_steps(source); // the refusal names every complete step
  }
  TreeListing listing;
  listing.source = source;
  const std::size_t ranks = rank_count(source);
  const Roots roots = open_roots(source, listing);
  std::vector<StepListing> candidates = collect_step_names(roots, listing, std::nullopt);
  std::sort(candidates.begin(), candidates.end(), step_order);
  // Newest first; the first complete step is the one a resume picks, older ones cannot matter.
  while (!candidates.empty()) {
    StepListing &step = listing.steps.emplace_back(std::move(candidates.back()));
    candidates.pop_back();
    list_step(roots, step, ranks, listing.stats);
    if (evaluate_step(step, source).complete) {
      break;
    }
  }
  std::reverse(listing.steps.begin(), listing.steps.end());
  std::sort(listing.ignored.begin(), listing.ignored.end());
  return listing;
}

} // namespace pb::checkpoints
