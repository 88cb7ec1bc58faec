// SPDX-License-Identifier: MIT
// The attempt ledger (docs/recovery.md): records, JSON, exclusive-create writes, the summary.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/random.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/recovery/ledger.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>

namespace pb::recovery::ledger {

namespace {

namespace stdfs = std::filesystem;
using fs::create_exclusive;

OrderedJson optional_int(const std::optional<std::int64_t> &value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}

std::optional<std::int64_t> read_optional_int(const nlohmann::json &j, const char *key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return std::nullopt;
  }
  return it->get<std::int64_t>();
}

double rounded(double seconds) {
  return std::round(seconds * 1000.0) / 1000.0;
}

// `<n>.json`, `<n>.end.json`, `<n>.recover.json` -> (n, kind); nullopt for anything else.
std::optional<std::pair<std::int64_t, std::string>> parse_name(std::string_view name) {
  const auto dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0) {
    return std::nullopt;
  }
  const auto parsed = text::parse_integer(name.substr(0, dot));
  if (!parsed || *parsed < 1) {
    return std::nullopt;
  }
  const std::int64_t n = *parsed;
  const std::string_view rest = name.substr(dot);
  if (rest == ".json") {
    return std::make_pair(n, std::string("start"));
  }
  if (rest == ".end.json") {
    return std::make_pair(n, std::string("end"));
  }
  if (rest == ".recover.json") {
    return std::make_pair(n, std::string("recover"));
  }
  return std::nullopt;
}

constexpr std::string_view k_claims_dir = "claims";
constexpr std::string_view k_claims_prefix = "claims/";
constexpr std::string_view k_controller_file = "controller.json";

// `claims/<source>.<generation>.json` and `claims/<source>.child.json` (docs/recovery.md).
void read_claim_file(const std::string &name,
                     const std::string &content,
                     std::map<std::string, Claim> &claims,
                     std::map<std::string, Claim> &children,
                     std::vector<std::string> &unreadable) {
  const std::string file = name.substr(k_claims_prefix.size());
  const auto dot = file.find('.');
  if (dot == std::string::npos || dot == 0) {
    return;
  }
  const std::string source = file.substr(0, dot);
  const std::string rest = file.substr(dot);
  try {
    const auto j = nlohmann::json::parse(content);
    if (rest == ".child.json") {
      Claim &child = children[source];
      child.child_experiment = j.at("child_experiment").get<std::string>();
      child.child_unix = j.value("recorded_unix", 0.0);
      if (const auto step = j.find("resume_step"); step != j.end() && step->is_number_integer()) {
        child.child_resume_step = step->get<std::int64_t>();
      }
      // `from` is null when the child's start is unknown (a controller that took a claim over
      // after `rl resume` died before its receipt): still a readable child record.
      const auto from = j.find("from");
      child.child_from_start = from != j.end() && from->is_string() && *from == "start";
      return;
    }
    Claim claim;
    claim.source_experiment = j.at("source_experiment").get<std::string>();
    claim.generation = j.at("generation").get<int>();
    claim.cause = j.at("cause").get<std::string>();
    claim.number = j.value("number", std::int64_t{0});
    claim.by = j.value("by", "");
    claim.claimed_unix = j.value("claimed_unix", 0.0);
    claim.attempt_id = j.value("attempt_id", "");
    claim.child_name = j.at("child_name").get<std::string>();
    if (claim.source_experiment != source || rest != fmt::format(".{}.json", claim.generation)) {
      throw std::runtime_error("name and content disagree");
    }
    auto &newest = claims[source];
    if (newest.source_experiment.empty() || claim.generation > newest.generation) {
      newest = std::move(claim);
    }
  } catch (const std::exception &) {
    unreadable.push_back(name);
  }
}

} // namespace

stdfs::path directory(const stdfs::path &output_dir, std::string_view run_id) {
  return output_dir / "primebeaker_recovery" / "ledger" / std::string(run_id);
}

stdfs::path set_aside_root(const stdfs::path &output_dir) {
  return output_dir / "primebeaker_recovery" / "set_aside";
}

bool valid_run_id(std::string_view run_id) {
  if (run_id.empty() || run_id.size() > 128 || run_id.front() == '.') {
    return false;
  }
  return std::all_of(run_id.begin(), run_id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

std::string run_key(std::string_view run_id) {
  std::string key(run_id);
  for (char &c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    c = ok ? c : '-';
  }
  while (!key.empty() && key.front() == '.') {
    key.erase(0, 1);
  }
  if (key.size() > 128) {
    key.resize(128);
  }
  return key.empty() ? std::string("run") : key;
}

std::string utc_text(double unix_seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
  const int millis =
      static_cast<int>(std::lround((unix_seconds - std::floor(unix_seconds)) * 1000));
  std::tm tm{};
  ::gmtime_r(&whole, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                     tm.tm_year + 1900,
                     tm.tm_mon + 1,
                     tm.tm_mday,
                     tm.tm_hour,
                     tm.tm_min,
                     tm.tm_sec,
                     std::min(millis, 999));
}

OrderedJson to_json(const Start &s) {
  OrderedJson j = OrderedJson::object();
  j["schema_version"] = k_schema_version;
  j["record"] = "start";
  j["attempt"] = s.attempt;
  j["run_id"] = s.run_id;
  j["launch_id"] = s.launch_id;
  j["job_id"] = s.job_id;
  j["experiment_id"] = s.experiment_id;
  j["replica"] = s.replica;
  j["started_at"] = utc_text(s.started_unix);
  j["started_unix"] = rounded(s.started_unix);
  j["cause"] = s.cause;
  j["previous_exit_code"] =
      s.previous_exit_code ? OrderedJson(*s.previous_exit_code) : OrderedJson(nullptr);
  j["resume_step"] = optional_int(s.resume_step);
  j["newest_complete_step"] = optional_int(s.newest_complete);
  j["last_step_seen"] = optional_int(s.last_step_seen);
  j["steps_lost"] = s.steps_lost;
  j["time_lost_seconds"] = rounded(s.time_lost_seconds);
  j["downtime_seconds"] = rounded(s.downtime_seconds);
  j["set_aside"] = s.set_aside;
  j["preemptions_recovered"] = s.preemptions_recovered;
  j["error_restarts"] = s.error_restarts;
  j["max_recoveries"] = s.max_recoveries;
  j["max_restarts_on_errors"] = s.max_restarts_on_errors;
  j["refused"] = s.refused.empty() ? OrderedJson(nullptr) : OrderedJson(s.refused);
  return j;
}

OrderedJson to_json(const End &e) {
  OrderedJson j = OrderedJson::object();
  j["schema_version"] = k_schema_version;
  j["record"] = "end";
  j["attempt"] = e.attempt;
  j["ended_at"] = utc_text(e.ended_unix);
  j["ended_unix"] = rounded(e.ended_unix);
  j["exit_code"] = e.exit_code;
  j["root_code"] = e.root_code;
  j["message"] = e.message;
  return j;
}

OrderedJson to_json(const Recover &r) {
  OrderedJson j = OrderedJson::object();
  j["schema_version"] = k_schema_version;
  j["record"] = "recover";
  j["attempt"] = r.attempt;
  j["requested_at"] = utc_text(r.requested_unix);
  j["requested_unix"] = rounded(r.requested_unix);
  j["by"] = "follow --recover";
  j["cause"] = r.cause;
  j["exit_code"] = r.exit_code ? OrderedJson(*r.exit_code) : OrderedJson(nullptr);
  j["source_experiment"] = r.source_experiment;
  j["child_experiment"] =
      r.child_experiment.empty() ? OrderedJson(nullptr) : OrderedJson(r.child_experiment);
  j["error"] = r.error.empty() ? OrderedJson(nullptr) : OrderedJson(r.error);
  return j;
}

namespace {

template <typename F> auto parsed(const char *what, F &&body) {
  try {
    return body();
  } catch (const nlohmann::json::exception &e) {
    throw input_error(fmt::format("malformed ledger {} record: {}", what, e.what()));
  }
}

std::string string_or_empty(const nlohmann::json &j, const char *key) {
  const auto it = j.find(key);
  return it == j.end() || !it->is_string() ? std::string() : it->get<std::string>();
}

} // namespace

Start start_from_json(const nlohmann::json &j) {
  return parsed("start", [&] {
    Start s;
    s.attempt = j.at("attempt").get<std::int64_t>();
    s.run_id = string_or_empty(j, "run_id");
    s.launch_id = string_or_empty(j, "launch_id");
    s.job_id = string_or_empty(j, "job_id");
    s.experiment_id = string_or_empty(j, "experiment_id");
    s.replica = string_or_empty(j, "replica");
    s.started_unix = j.at("started_unix").get<double>();
    s.cause = j.at("cause").get<std::string>();
    if (const auto code = read_optional_int(j, "previous_exit_code")) {
      s.previous_exit_code = static_cast<int>(*code);
    }
    s.resume_step = read_optional_int(j, "resume_step");
    s.newest_complete = read_optional_int(j, "newest_complete_step");
    s.last_step_seen = read_optional_int(j, "last_step_seen");
    s.steps_lost = j.value("steps_lost", std::int64_t{0});
    s.time_lost_seconds = j.value("time_lost_seconds", 0.0);
    s.downtime_seconds = j.value("downtime_seconds", 0.0);
    s.set_aside = j.value("set_aside", std::vector<std::string>{});
    s.preemptions_recovered = j.value("preemptions_recovered", std::int64_t{0});
    s.error_restarts = j.value("error_restarts", std::int64_t{0});
    s.max_recoveries = j.value("max_recoveries", std::int64_t{10});
    s.max_restarts_on_errors = j.value("max_restarts_on_errors", std::int64_t{0});
    s.refused = string_or_empty(j, "refused");
    return s;
  });
}

End end_from_json(const nlohmann::json &j) {
  return parsed("end", [&] {
    End e;
    e.attempt = j.at("attempt").get<std::int64_t>();
    e.ended_unix = j.at("ended_unix").get<double>();
    e.exit_code = j.at("exit_code").get<int>();
    e.root_code = j.value("root_code", e.exit_code);
    e.message = string_or_empty(j, "message");
    return e;
  });
}

Recover recover_from_json(const nlohmann::json &j) {
  return parsed("recover", [&] {
    Recover r;
    r.attempt = j.at("attempt").get<std::int64_t>();
    r.requested_unix = j.at("requested_unix").get<double>();
    r.cause = j.at("cause").get<std::string>();
    if (const auto code = read_optional_int(j, "exit_code")) {
      r.exit_code = static_cast<int>(*code);
    }
    r.source_experiment = string_or_empty(j, "source_experiment");
    r.child_experiment = string_or_empty(j, "child_experiment");
    r.error = string_or_empty(j, "error");
    return r;
  });
}

Ledger ledger_from_files(const std::vector<std::pair<std::string, std::string>> &files) {
  Ledger ledger;
  std::map<std::int64_t, Attempt> starts;
  std::map<std::int64_t, End> ends;
  std::map<std::int64_t, Recover> recovers;
  std::map<std::string, Claim> claims; // source -> newest generation
  std::map<std::string, Claim> children;
  for (const auto &[name, content] : files) {
    if (name.starts_with(k_claims_prefix)) {
      read_claim_file(name, content, claims, children, ledger.unreadable);
      continue;
    }
    const auto kind = parse_name(name);
    if (!kind) {
      continue;
    }
    try {
      const auto j = nlohmann::json::parse(content);
      if (kind->second == "start") {
        Attempt a;
        a.start = start_from_json(j);
        a.start.attempt = kind->first;
        starts[kind->first] = std::move(a);
      } else if (kind->second == "end") {
        ends[kind->first] = end_from_json(j);
      } else {
        recovers[kind->first] = recover_from_json(j);
      }
    } catch (const std::exception &) {
      ledger.unreadable.push_back(name);
    }
  }
  for (auto &[n, attempt] : starts) {
    if (const auto it = ends.find(n); it != ends.end()) {
      attempt.end = it->second;
    }
    if (const auto it = recovers.find(n); it != recovers.end()) {
      attempt.recover = it->second;
    }
    ledger.attempts.push_back(std::move(attempt));
  }
  for (auto &[source, claim] : claims) {
    if (const auto it = children.find(source); it != children.end()) {
      claim.child_experiment = it->second.child_experiment;
      claim.child_unix = it->second.child_unix;
      claim.child_resume_step = it->second.child_resume_step;
      claim.child_from_start = it->second.child_from_start;
    }
    ledger.claims.push_back(std::move(claim));
  }
  std::stable_sort(ledger.claims.begin(), ledger.claims.end(), [](const Claim &a, const Claim &b) {
    return a.claimed_unix < b.claimed_unix;
  });
  std::sort(ledger.unreadable.begin(), ledger.unreadable.end());
  return ledger;
}

const Claim *Ledger::claim_of(std::string_view source_experiment) const {
  for (const auto &claim : claims) {
    if (claim.source_experiment == source_experiment) {
      return &claim;
    }
  }
  return nullptr;
}

bool Ledger::started(std::string_view experiment_id) const {
  return std::any_of(attempts.begin(), attempts.end(), [&](const Attempt &a) {
    return !experiment_id.empty() && a.start.experiment_id == experiment_id;
  });
}

Ledger read(const stdfs::path &dir) {
  std::vector<std::pair<std::string, std::string>> files;
  std::error_code ec;
  std::error_code claims_ec;
  for (const auto &entry : stdfs::directory_iterator(dir / k_claims_dir, claims_ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with('.') || !name.ends_with(".json")) {
      continue; // a writer's temporary
    }
    try {
      files.emplace_back(std::string(k_claims_prefix) + name, fs::read_file(entry.path(), 1));
    } catch (const Error &) {
      files.emplace_back(std::string(k_claims_prefix) + name, "");
    }
  }
  for (const auto &entry : stdfs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!parse_name(name)) {
      continue;
    }
    try {
      files.emplace_back(name, fs::read_file(entry.path(), 1));
    } catch (const Error &) {
      files.emplace_back(name, "");
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw failure(fmt::format("cannot read the attempt ledger {}: {}", dir.string(), ec.message()));
  }
  return ledger_from_files(files);
}

stdfs::path owner_path(const stdfs::path &output_dir, std::string_view run_dir) {
  return output_dir / "primebeaker_recovery" /
         (run_dir.empty() ? std::string("owner.json")
                          : fmt::format("owner-{}.json", run_key(run_dir)));
}

std::optional<Owner> read_owner(const stdfs::path &path) {
  std::string text;
  try {
    text = fs::read_file(path);
  } catch (const Error &) {
    std::error_code ec;
    if (!stdfs::exists(path, ec)) {
      return std::nullopt;
    }
    throw;
  }
  return parse_owner(text, path);
}

Owner parse_owner(std::string_view text, const stdfs::path &path) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("run_id") ||
      !json["run_id"].is_string()) {
    throw input_error(
        fmt::format("{}: not an owner record (a JSON object with run_id)", path.string()));
  }
  return Owner{json["run_id"].get<std::string>(),
               string_or_empty(json, "experiment"),
               string_or_empty(json, "claimed_at")};
}

std::string owner_text(const Owner &owner) {
  OrderedJson json = OrderedJson::object();
  json["schema_version"] = k_schema_version;
  json["run_id"] = owner.run_id;
  json["experiment"] = owner.experiment;
  json["claimed_at"] = owner.claimed_at;
  return json.dump(2) + "\n";
}

Owner claim(const stdfs::path &path, const Owner &mine) {
  if (create_exclusive(path, owner_text(mine))) {
    return mine;
  }
  if (auto owner = read_owner(path)) {
    return *owner;
  }
  throw failure(fmt::format("{} vanished while it was claimed", path.string()));
}

std::string ownership_refusal(const stdfs::path &path,
                              const stdfs::path &checkpoint_dir,
                              const Owner &owner,
                              std::string_view run_id,
                              bool v0_9) {
  // The fix that works for the generation: a v0.9 run directory is named after the run, a
  // v0.8.0 output dir only by output_dir (a TOML without one gets outputs/<run name>).
  const std::string fix =
      v0_9 ? "give this launch its own --name (a v0.9 run directory is named after the run)"
           : fmt::format("give this launch its own output dir (--set output_dir={}-2, or "
                         "--name when the TOML names no output_dir)",
                         checkpoint_dir.string());
  return fmt::format("{} belongs to run {} (experiment {}, since {}; {}): run {} must not resume "
                     "from its checkpoints; {}, or pass --wandb-run-id {} to continue that run",
                     checkpoint_dir.string(),
                     owner.run_id,
                     owner.experiment.empty() ? "unknown" : owner.experiment,
                     owner.claimed_at.empty() ? "unknown" : owner.claimed_at,
                     path.string(),
                     run_id,
                     fix,
                     owner.run_id);
}

std::int64_t append_start(const stdfs::path &dir, Start &start) {
  std::int64_t n = 1;
  std::error_code ec;
  for (const auto &entry : stdfs::directory_iterator(dir, ec)) {
    if (const auto kind = parse_name(entry.path().filename().string())) {
      n = std::max(n, kind->first + (kind->second == "start" ? 1 : 0));
    }
  }
  for (int tries = 0; tries < 1000; ++tries, ++n) {
    start.attempt = n;
    if (create_exclusive(dir / fmt::format("{}.json", n), to_pretty_json(to_json(start)))) {
      return n;
    }
  }
  throw failure(fmt::format("cannot append to the attempt ledger {}", dir.string()));
}

bool write_end(const stdfs::path &dir, const End &end) {
  return create_exclusive(dir / fmt::format("{}.end.json", end.attempt),
                          to_pretty_json(to_json(end)));
}

bool write_recover(const stdfs::path &dir, const Recover &recover) {
  return create_exclusive(dir / fmt::format("{}.recover.json", recover.attempt),
                          to_pretty_json(to_json(recover)));
}

bool write_claim(const stdfs::path &dir, const Claim &claim) {
  OrderedJson j = OrderedJson::object();
  j["schema_version"] = k_schema_version;
  j["record"] = "claim";
  j["source_experiment"] = claim.source_experiment;
  j["generation"] = claim.generation;
  j["cause"] = claim.cause;
  j["number"] = claim.number;
  j["by"] = claim.by;
  j["claimed_at"] = utc_text(claim.claimed_unix);
  j["claimed_unix"] = claim.claimed_unix;
  j["attempt_id"] = claim.attempt_id;
  j["child_name"] = claim.child_name;
  return create_exclusive(dir / k_claims_dir /
                              fmt::format("{}.{}.json", claim.source_experiment, claim.generation),
                          j.dump(2) + "\n");
}

bool write_claim_child(const stdfs::path &dir,
                       const std::string &source_experiment,
                       const std::string &child_experiment,
                       double unix_seconds,
                       const ChildStart &from) {
  OrderedJson j = OrderedJson::object();
  j["schema_version"] = k_schema_version;
  j["record"] = "claim_child";
  j["source_experiment"] = source_experiment;
  j["child_experiment"] = child_experiment;
  j["resume_step"] = from.resume_step ? OrderedJson(*from.resume_step) : OrderedJson(nullptr);
  j["from"] = from.from_start    ? OrderedJson("start")
              : from.resume_step ? OrderedJson(fmt::format("step {}", *from.resume_step))
                                 : OrderedJson(nullptr);
  j["recorded_at"] = utc_text(unix_seconds);
  j["recorded_unix"] = unix_seconds;
  return create_exclusive(dir / k_claims_dir / fmt::format("{}.child.json", source_experiment),
                          j.dump(2) + "\n");
}

bool write_notification_claim(const stdfs::path &dir,
                              std::string_view subject,
                              std::string_view event,
                              std::string_view by,
                              double unix_seconds) {
  OrderedJson j = OrderedJson::object();
  j["schema_version"] = k_schema_version;
  j["record"] = "notification";
  j["subject"] = subject;
  j["event"] = event;
  j["by"] = by;
  j["claimed_at"] = utc_text(unix_seconds);
  j["claimed_unix"] = unix_seconds;
  // Its own folder: read() walks claims/ for resubmissions and must not see these.
  return create_exclusive(dir / "notify" / fmt::format("{}.{}.json", subject, event),
                          j.dump(2) + "\n");
}

OrderedJson to_json(const ControllerStatus &s) {
  OrderedJson j = OrderedJson::object();
  j["controller_experiment"] = s.controller_experiment;
  j["job_id"] = s.job_id;
  j["following"] = s.following;
  j["state"] = s.state;
  j["last_action"] = s.last_action;
  j["updated_at"] = utc_text(s.updated_unix);
  j["updated_unix"] = s.updated_unix;
  j["restarts"] = s.restarts;
  return j;
}

void write_controller_status(const stdfs::path &dir, const ControllerStatus &status) {
  std::error_code ec;
  stdfs::create_directories(dir, ec);
  fs::write_file_atomic(dir / k_controller_file, to_json(status).dump(2) + "\n");
}

std::optional<ControllerStatus> read_controller_status(const stdfs::path &dir) {
  try {
    const auto j = nlohmann::json::parse(fs::read_file(dir / k_controller_file, 1));
    ControllerStatus s;
    s.controller_experiment = j.value("controller_experiment", "");
    s.job_id = j.value("job_id", "");
    s.following = j.value("following", "");
    s.state = j.value("state", "");
    s.last_action = j.value("last_action", "");
    s.updated_unix = j.value("updated_unix", 0.0);
    s.restarts = j.value("restarts", 0);
    return s;
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

Summary summarize(const Ledger &ledger, double now_unix) {
  Summary s;
  s.attempts = static_cast<std::int64_t>(ledger.attempts.size());
  if (ledger.attempts.empty()) {
    return s;
  }
  for (const auto &a : ledger.attempts) {
    const auto &start = a.start;
    if (!start.refused.empty()) {
      ++s.refused;
      continue;
    }
    if (start.cause == k_preemption) {
      ++s.preemptions_recovered;
      s.steps_lost_per_preemption.push_back(start.steps_lost);
    } else if (start.cause == k_error) {
      ++s.error_restarts;
    } else if (start.cause == k_resubmission) {
      ++s.resubmissions;
    }
    if (start.cause != k_first_start) {
      s.lost_seconds += start.time_lost_seconds;
      s.downtime_seconds += start.downtime_seconds;
    }
    if (start.resume_step) {
      s.last_resume_step = start.resume_step;
    }
  }
  const auto &last = ledger.attempts.back();
  const double end = last.end ? last.end->ended_unix : now_unix;
  s.total_seconds = std::max(0.0, end - ledger.attempts.front().start.started_unix);
  s.useful_seconds = std::max(0.0, s.total_seconds - s.lost_seconds - s.downtime_seconds);
  return s;
}

OrderedJson to_json(const Summary &s) {
  OrderedJson j = OrderedJson::object();
  j["attempts"] = s.attempts;
  j["preemptions_recovered"] = s.preemptions_recovered;
  j["error_restarts"] = s.error_restarts;
  j["resubmissions"] = s.resubmissions;
  j["refused"] = s.refused;
  j["steps_lost_per_preemption"] = s.steps_lost_per_preemption;
  j["last_resume_step"] = optional_int(s.last_resume_step);
  j["total_seconds"] = rounded(s.total_seconds);
  j["useful_seconds"] = rounded(s.useful_seconds);
  j["lost_seconds"] = rounded(s.lost_seconds);
  j["downtime_seconds"] = rounded(s.downtime_seconds);
  return j;
}

} // namespace pb::recovery::ledger
