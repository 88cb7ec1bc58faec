// SPDX-License-Identifier: MIT
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <thread>

namespace pb::beaker {

std::string program_from_environment(const std::map<std::string, std::string> &environment) {
  const auto it = environment.find("PRIMEBEAKER_BEAKER");
  if (it != environment.end() && !it->second.empty()) {
    return it->second;
  }
  return "beaker";
}

proc::Argv experiment_create_argv(const std::string &program,
                                  const std::string &name,
                                  const std::string &workspace,
                                  const std::string &spec_path) {
  return {program,
          "experiment",
          "create",
          "--name",
          name,
          "--workspace",
          workspace,
          "--format",
          "json",
          spec_path};
}

namespace {

// The created experiment in `--format json` output: an array whose first element is the
// experiment object (a lone object is taken too). nullopt when `text` is not such JSON.
std::optional<CreatedExperiment> parse_created_json(std::string_view text) {
  const auto from_object = [](const OrderedJson &object) -> std::optional<CreatedExperiment> {
    if (!object.is_object()) {
      return std::nullopt;
    }
    const auto id = object.find("id");
    if (id == object.end() || !id->is_string() || id->get<std::string>().empty()) {
      return std::nullopt;
    }
    CreatedExperiment created{id->get<std::string>(), std::nullopt};
    for (const char *key : {"url", "link"}) {
      const auto url = object.find(key);
      if (url != object.end() && url->is_string() && !url->get<std::string>().empty()) {
        created.url = url->get<std::string>();
        break;
      }
    }
    return created;
  };
  // A CLI may print a warning line before the JSON: start at the first line opening JSON.
  for (size_t start = 0; start < text.size();) {
    const auto rest = text.substr(start);
    const auto first = rest.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && (rest[first] == '[' || rest[first] == '{')) {
      auto parsed = OrderedJson::parse(rest.substr(first), nullptr, false);
      if (!parsed.is_discarded()) {
        if (parsed.is_array()) {
          return parsed.empty() ? std::nullopt : from_object(parsed.front());
        }
        return from_object(parsed);
      }
    }
    const auto newline = text.find('\n', start);
    if (newline == std::string_view::npos) {
      break;
    }
    start = newline + 1;
  }
  return std::nullopt;
}

} // namespace

std::optional<CreatedExperiment> parse_created_experiment(std::string_view create_stdout) {
  if (auto created = parse_created_json(create_stdout)) {
    return created;
  }
  // The text answer of older CLIs (and of `beaker experiment create` without --format json).
  static const std::regex ansi("\x1b\\[[0-9;]*m");
  static const std::regex created("Experiment\\s+([A-Za-z0-9]+)\\s+submitted");
  const std::string plain = std::regex_replace(std::string(create_stdout), ansi, "");
  std::smatch match;
  if (std::regex_search(plain, match, created)) {
    return CreatedExperiment{match[1].str(), std::nullopt};
  }
  return std::nullopt;
}

std::optional<std::string> parse_created_experiment_id(std::string_view create_stdout) {
  auto created = parse_created_experiment(create_stdout);
  if (!created) {
    return std::nullopt;
  }
  return std::move(created->id);
}

void require_program(const std::string &program,
                     const std::map<std::string, std::string> &environment) {
  const auto path = environment.find("PATH");
  if (!proc::find_executable(program, path == environment.end() ? "" : path->second)) {
    throw tool_error(fmt::format("cannot run {}: not found{}; install the Beaker CLI, or point "
                                 "PRIMEBEAKER_BEAKER at it (nothing was staged or written)",
                                 program,
                                 program.find('/') == std::string::npos ? " on PATH" : ""));
  }
}

namespace {

std::string lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return lower;
}

// An answer about the thing asked for: final, whatever else the (lowercased) line holds.
bool says_missing(std::string_view lower) {
  return lower.find("not found") != std::string_view::npos ||
         lower.find("does not exist") != std::string_view::npos;
}

} // namespace

bool is_transient_failure(std::string_view stderr_text) {
  const std::string text = lowercase(stderr_text);
  if (says_missing(text)) {
    return false;
  }
  // Phrases match anywhere, so that "ReadTimeout" counts.
  for (const std::string_view phrase : {"timeout",
                                        "timed out",
                                        "deadline exceeded",
                                        "connection refused",
                                        "connection reset",
                                        "broken pipe",
                                        "temporarily unavailable",
                                        "temporary failure",
                                        "try again",
                                        "too many requests",
                                        "500 internal server error",
                                        "bad gateway",
                                        "service unavailable",
                                        "no such host",
                                        "network is unreachable",
                                        "tls handshake"}) {
    if (text.find(phrase) != std::string::npos) {
      return true;
    }
  }
  // Status codes and "eof" count only as words of their own: "504" inside a name such as
  // "recover2-45504860" is no gateway timeout (the chaos harness once retried a missing
  // experiment under that name until every takeover was killed), nor is "geoffrey" an EOF.
  const auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (const std::string_view word : {"eof", "429", "502", "503", "504"}) {
    for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
      const auto end = at + word.size();
      if ((at == 0 || !is_word(text[at - 1])) && (end == text.size() || !is_word(text[end]))) {
        return true;
      }
    }
  }
  return false;
}

Client::Client(proc::Runner &runner, std::string program, Timing timing, RetryPolicy retry)
    : m_runner(runner), m_program(std::move(program)), m_timing(std::move(timing)), m_retry(retry) {
}

proc::Result Client::run(const proc::Argv &args) {
  proc::Command command;
  command.argv.push_back(m_program);
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  spdlog::debug("running {}", proc::argv_to_json(command.argv));
  try {
    return m_runner.run(command);
  } catch (Error &error) {
    error.add_context("install the Beaker CLI, or point PRIMEBEAKER_BEAKER at it");
    throw;
  }
}

proc::Result Client::run_checked(const proc::Argv &args, const std::string &what) {
  auto delay = m_retry.first_delay;
  for (int attempt = 1;; ++attempt) {
    const proc::Result result = run(args);
    if (result.ok()) {
      return result;
    }
    std::string detail(text::trim(result.err));
    if (detail.empty()) {
      detail = std::string(text::trim(result.out));
    }
    const bool interrupted = m_timing.interrupted && m_timing.interrupted() != 0;
    const bool transient = result.timed_out || is_transient_failure(detail);
    if (interrupted || !transient || attempt >= m_retry.attempts) {
      Error error = tool_error(fmt::format("{} {} failed ({}){}{}",
                                           m_program,
                                           what,
                                           result.status(),
                                           detail.empty() ? "" : ": ",
                                           detail));
      if (transient && !interrupted && attempt > 1) {
        error.add_context(fmt::format("gave up after {} attempts", attempt));
      }
      throw error;
    }
    spdlog::warn("{} {} failed ({}), retrying in {} ms: {}",
                 m_program,
                 what,
                 result.status(),
                 delay.count(),
                 detail);
    const bool slept =
        m_timing.sleep ? m_timing.sleep(delay) : (std::this_thread::sleep_for(delay), true);
    if (!slept) {
      throw tool_error(fmt::format("{} {} interrupted while retrying", m_program, what));
    }
    delay = std::min(delay * 2, m_retry.max_delay);
  }
}

OrderedJson Client::run_json(const proc::Argv &args, const std::string &what) {
  const auto result = run_checked(args, what);
  auto parsed = OrderedJson::parse(result.out, nullptr, false);
  if (parsed.is_discarded()) {
    throw tool_error(fmt::format("{} {} printed something that is not JSON", m_program, what));
  }
  return parsed;
}

std::string Client::create_experiment(const std::string &name,
                                      const std::string &workspace,
                                      const std::string &spec_path) {
  auto argv = experiment_create_argv(m_program, name, workspace, spec_path);
  argv.erase(argv.begin());
  auto result = run(argv);
  if (!result.ok()) {
    std::string detail(text::trim(result.err));
    if (detail.empty()) {
      detail = std::string(text::trim(result.out));
    }
    Error error = tool_error(fmt::format("beaker could not create experiment {} ({}){}{}",
                                         name,
                                         result.status(),
                                         detail.empty() ? "" : ": ",
                                         detail));
    // Names are unique per workspace: a second submit of one TOML meets the first one's name.
    static const std::regex name_taken("already (in use|exists)", std::regex::icase);
    if (std::regex_search(detail, name_taken)) {
      Error taken(k_exit_already_exists, error.what());
      taken.add_context(fmt::format("an experiment named {} already exists in workspace {}: pass "
                                    "--name NEW to submit this run under another name, or "
                                    "--if-exists adopt to take that one as this submit's",
                                    name,
                                    workspace));
      throw taken;
    }
    throw error;
  }
  return result.out;
}

OrderedJson Client::get_experiment(const std::string &id) {
  const auto result =
      run_checked({"experiment", "get", id, "--format", "json"}, "experiment get " + id);
  auto parsed = OrderedJson::parse(result.out, nullptr, false);
  if (parsed.is_discarded()) {
    throw tool_error(
        fmt::format("{} experiment get {} printed something that is not JSON", m_program, id));
  }
  if (parsed.is_object()) {
    OrderedJson wrapped = OrderedJson::array();
    wrapped.push_back(std::move(parsed));
    return wrapped;
  }
  if (!parsed.is_array()) {
    throw tool_error(fmt::format("{} experiment get {} printed JSON that is neither an array "
                                 "nor an object",
                                 m_program,
                                 id));
  }
  return parsed;
}

void Client::stop_experiment(const std::string &id) {
  run_checked({"experiment", "stop", id}, "experiment stop " + id);
}

std::optional<OrderedJson> Client::find_experiment(const std::string &reference) {
  OrderedJson got;
  try {
    got = get_experiment(reference);
  } catch (const Error &error) {
    if (says_missing(lowercase(error.what()))) {
      return std::nullopt;
    }
    throw;
  }
  if (got.empty()) {
    return std::nullopt;
  }
  return OrderedJson(got.front());
}

std::string Client::job_logs(const std::string &job_id) {
  return run_checked({"job", "logs", job_id}, "job logs " + job_id).out;
}

OrderedJson Client::cluster_jobs(const std::string &cluster) {
  return run_json({"job", "list", "--cluster", cluster, "--format", "json"},
                  "job list --cluster " + cluster);
}

// `beaker <kind> experiments <of> --format json` as a list (one object is wrapped).
OrderedJson Client::experiments_of(const std::string &kind, const std::string &of) {
  const std::string what = kind + " experiments " + of;
  auto got = run_json({kind, "experiments", of, "--format", "json"}, what);
  if (got.is_object()) {
    OrderedJson wrapped = OrderedJson::array();
    wrapped.push_back(std::move(got));
    return wrapped;
  }
  if (!got.is_array()) {
    throw tool_error(fmt::format("{} {} printed JSON that is not a list", m_program, what));
  }
  return got;
}

OrderedJson Client::group_experiments(const std::string &group) {
  return experiments_of("group", group);
}

OrderedJson Client::workspace_experiments(const std::string &ws) {
  return experiments_of("workspace", ws);
}

std::string Client::whoami() {
  const auto got = run_json({"account", "whoami", "--format", "json"}, "account whoami");
  const OrderedJson &account = got.is_array() && !got.empty() ? got.front() : got;
  if (account.is_object() && account.contains("name") && account["name"].is_string()) {
    return account["name"].get<std::string>();
  }
  throw tool_error(fmt::format("{} account whoami printed no account name", m_program));
}

OrderedJson Client::list_clusters(const std::string &account) {
  return run_json({"cluster", "list", account, "--format", "json"}, "cluster list " + account);
}

OrderedJson Client::get_cluster(const std::string &name) {
  return run_json({"cluster", "get", name, "--format", "json"}, "cluster get " + name);
}

} // namespace pb::beaker
