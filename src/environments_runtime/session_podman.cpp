// SPDX-License-Identifier: MIT
// podman-terminal's own rules: the container started at open and closed at close, bash calls
// run in it, and the grading once the completion marker is seen.
#include "session_internal.hpp"

#include <primebeaker/core/random.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/environments_runtime/serve.hpp>
#include <primebeaker/tool_services/transport.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace pb::environments_runtime {
namespace {

using J = OrderedJson;

// `success` true or `exit_code` 0: how the Podman grading judges a command.
bool command_succeeded(const J &output) {
  return is_true(field(output, "success")) || field(output, "exit_code") == J(0);
}

// shlex.quote, byte for byte: the command strings the container receives are pinned.
std::string shlex_quote(const std::string &word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '@' || c == '%' || c == '+' || c == '=' ||
           c == ':' || c == ',' || c == '.' || c == '/' || c == '-' || c >= 0x80;
  });
  if (safe) {
    return word;
  }
  std::string quoted = "'";
  for (const char c : word) {
    quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  }
  return quoted + "'";
}

// The image a row names (docs/environments-runtime.md "Podman setup"): the row, then its
// info/source/misc/raw objects and their own misc/raw; never a saved trace.
std::pair<std::string, std::string> podman_row_fields(const J &row) {
  std::vector<const J *> places = {&row};
  for (const char *key : {"info", "source", "misc", "raw"}) {
    const J &sub = field(row, key);
    if (sub.is_object()) {
      places.push_back(&sub);
      for (const char *inner : {"misc", "raw"}) {
        if (field(sub, inner).is_object()) {
          places.push_back(&field(sub, inner));
        }
      }
    }
  }
  auto first = [&](std::initializer_list<const char *> keys) {
    for (const J *place : places) {
      for (const char *key : keys) {
        const J &value = field(*place, key);
        if (value.is_string() && !blank(value.get<std::string>())) {
          return value.get<std::string>();
        }
      }
    }
    return std::string();
  };
  return {environments::py::strip(first({"original_image",
                                         "image",
                                         "container_image",
                                         "published_container_image",
                                         "resolved_container_image"})),
          first({"test_final_state", "unit_tests"})};
}

// The gateway base URL, trimmed and without a trailing slash.
std::string gateway_base(const J &args) {
  std::string gateway = environments::py::strip(string_field(args, "podman_gateway_url"));
  while (!gateway.empty() && gateway.back() == '/') {
    gateway.pop_back();
  }
  return gateway;
}

} // namespace

void Session::podman_setup() {
  const auto [image, test_source] = podman_row_fields(row);
  state["podman_terminal_complete"] = false;
  state["podman_tests_ran"] = false;
  state["podman_test_command"] = field(args, "test_command");
  state["podman_test_file_path"] = field(args, "test_file_path");
  state["podman_test_source"] = test_source.empty() ? J() : J(test_source);
  state["podman_reward_file_path"] = field(args, "reward_file_path");
  state["podman_reward_file_present"] = false;
  state["podman_reward_file_error"] = nullptr;
  state["podman_reward_file_score"] = 0.0;
  for (const char *key : {"podman_image",
                          "podman_container_id",
                          "podman_completion_command",
                          "podman_test_output",
                          "podman_test_install_output",
                          "podman_reward_file_clear_output",
                          "podman_cleanup",
                          "podman_cleanup_error"}) {
    state[key] = nullptr;
  }
  state["podman_failure"] = false;
  try {
    if (image.empty()) {
      throw ToolError("ValueError",
                      "the dataset row needs original_image, image or container_image");
    }
    std::string qualified;
    try {
      qualified = tool_services::qualify_image(image);
    } catch (const tool_services::ServiceError &error) {
      throw ToolError(error.exception_type(), error.what());
    }
    state["podman_image"] = qualified;
    const std::string gateway = gateway_base(args);
    J body = {{"image", qualified},
              {"client_id", string_field(args, "client_id_prefix") + "-" + random::hex_id(16)},
              {"service", field(args, "service")}};
    check_cancelled();
    ServiceCall start{"podman_start",
                      gateway,
                      body,
                      args.value("handshake_timeout", 600.0),
                      std::max(args.value("max_retries", 3LL), 1LL),
                      id,
                      {{"workdir", field(args, "podman_workdir")},
                       {"request_timeout", args.value("request_timeout", 150.0)}}};
    const J started = m_tools.call(start, cancelled);
    const std::string affinity = string_field(started, "affinity_id");
    const std::string container = string_field(started, "container_id");
    if (!affinity.empty()) {
      m_affinity_id = affinity; // close it even if the pair is inconsistent
    }
    if (affinity.empty() || container.empty() || affinity != container) {
      throw ToolError("RuntimeError",
                      "the Podman handshake must return equal non-empty affinity_id and "
                      "container_id");
    }
    state["podman_container_id"] = container;
  } catch (const ToolError &error) {
    podman_close();
    podman_failure("setup", error.detail());
  }
}

OrderedJson
Session::podman_execute(const std::string &command, double timeout, const std::string &stdin_text) {
  if (m_affinity_id.empty()) {
    throw ToolError("RuntimeError", "no live Podman task session is bound");
  }
  const std::string gateway = gateway_base(args);
  return call_service("podman_execute",
                      gateway,
                      {{"affinity_id", m_affinity_id},
                       {"command", command},
                       {"stdin", stdin_text},
                       {"timeout", timeout},
                       {"workdir", field(args, "podman_workdir")},
                       {"service", field(args, "service")}},
                      args.value("request_timeout", 150.0),
                      args.value("max_retries", 3LL));
}

void Session::podman_failure(const std::string &phase, const std::string &detail) {
  const J fields = environments::podman_failure_fields(phase, detail);
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    state[it.key()] = it.value();
  }
}

void Session::podman_close() {
  if (m_affinity_id.empty()) {
    return;
  }
  const std::string gateway = gateway_base(args);
  const std::string affinity = m_affinity_id;
  m_affinity_id.clear();
  try {
    ServiceCall request{"podman_close",
                        gateway,
                        {{"affinity_id", affinity}, {"service", field(args, "service")}},
                        args.value("request_timeout", 150.0),
                        std::max(args.value("max_retries", 3LL), 1LL),
                        id};
    static const std::atomic<bool> never{false}; // closing must not be cancelled
    state["podman_cleanup"] = m_tools.call(request, never);
  } catch (const ToolError &error) {
    state["podman_cleanup_error"] = error.detail();
  } catch (const RequestError &error) {
    state["podman_cleanup_error"] = error.what();
  }
}

void Session::podman_after_response(size_t first_new_entry, bool &final) {
  const std::string marker = environments::py::strip(string_field(args, "completion_marker"));
  const J &history = state["jtc_tool_history"];
  for (size_t i = first_new_entry; i < history.size(); ++i) {
    const J entry = history[i];
    if (entry["tool"] != "bash") {
      continue;
    }
    const J &output = entry["output"];
    const std::string stderr_text = string_field(output, "stderr");
    static const std::string prefix = "bash execution request failed:";
    if (environments::py::lower(stderr_text.substr(0, prefix.size())) == prefix) {
      podman_failure("execute", environments::py::strip(stderr_text.substr(prefix.size())));
      final = true;
      return;
    }
    const std::string command = string_field(entry["arguments"], "command");
    if (environments::is_completion_command(command, marker) &&
        field(output, "success") == J(true)) {
      const auto lines = text::split(string_field(output, "stdout"), '\n');
      if (std::find(lines.begin(), lines.end(), marker) != lines.end()) {
        state["podman_terminal_complete"] = true;
        state["podman_completion_command"] = command;
        podman_grade();
        final = true;
        return;
      }
    }
  }
}

void Session::podman_grade() {
  if (is_true(state["podman_tests_ran"])) {
    return;
  }
  state["podman_tests_ran"] = true;
  if (m_affinity_id.empty()) {
    podman_failure("test", "no live Podman task session is available for tests");
    return;
  }
  const double timeout = args.value("test_timeout", 600.0);
  const std::string path = shlex_quote(string_field(args, "reward_file_path"));
  try {
    const J clear = podman_execute("rm -f -- " + path, timeout, "");
    state["podman_reward_file_clear_output"] = clear;
    const J &source = state["podman_test_source"];
    if (source.is_string()) {
      const std::string install_command =
          "python3 -c " +
          shlex_quote("import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
                      "p.parent.mkdir(parents=True, exist_ok=True); "
                      "p.write_text(sys.stdin.read())") +
          " " + shlex_quote(string_field(args, "test_file_path"));
      const J install = podman_execute(install_command, timeout, source.get<std::string>());
      state["podman_test_install_output"] = install;
      if (!command_succeeded(install)) {
        throw ToolError("RuntimeError", "Podman private-test install failed");
      }
    }
    state["podman_test_output"] = podman_execute(string_field(args, "test_command"), timeout, "");
    const J probe =
        podman_execute(fmt::format("if [ -f {0} ]; then printf '%s\\n' {1}; cat -- {0}; fi; true",
                                   path,
                                   environments::reward_file_sentinel),
                       timeout,
                       "");
    environments::RewardFile reward =
        environments::parse_reward_probe(string_field(probe, "stdout"));
    if (!command_succeeded(clear)) {
      reward = {0.0, false, "could not clear reward file before tests"};
    }
    state["podman_reward_file_present"] = reward.present;
    state["podman_reward_file_error"] = reward.error.empty() ? J() : J(reward.error);
    state["podman_reward_file_score"] = reward.value;
  } catch (const ToolError &error) {
    podman_failure("test", error.detail());
  }
}

} // namespace pb::environments_runtime
