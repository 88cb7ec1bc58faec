// SPDX-License-Identifier: MIT
// The static catalog (docs/environments.md "Catalog"). The module stems are the same list as
// pb::primerl::bundled_environment_modules(), which the legacy id rewrite uses; a test keeps
// the two equal.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/catalog.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <mutex>
#include <utility>

namespace pb::environments {
namespace {

using J = OrderedJson;

Parameter req(std::string name, ParamType type, std::string constraint = {}) {
  return {std::move(name), type, J(), true, false, std::move(constraint)};
}
Parameter opt(std::string name, ParamType type, J value, std::string constraint = {}) {
  return {std::move(name), type, std::move(value), false, false, std::move(constraint)};
}
Parameter none(std::string name, ParamType type, std::string constraint = {}) {
  return {std::move(name), type, J(), false, true, std::move(constraint)};
}

using P = ParamType;
const char *const gateway = "http://127.0.0.1:1212";

std::string url(const char *route) {
  return std::string(gateway) + route;
}

std::vector<Parameter> dataset_split(const char *split = "train") {
  return {req("dataset", P::string, "JSONL file, save_to_disk directory or hub dataset id"),
          opt("split", P::string, split)};
}

std::vector<Parameter> tool_label_parameters() {
  auto p = dataset_split();
  std::vector<Parameter> more = {
      Parameter{"tools",
                P::string_list,
                J::array({"terminal"}),
                false,
                true,
                "subset of {terminal, submit}: only those have execution clients"},
      opt("terminal_server_url", P::string, url("/terminal")),
      opt("timeout", P::number, 20, "> 0"),
      opt("max_retries", P::integer, 3, ">= 1"),
      opt("terminal_truncation", P::integer, 2000),
      opt("browser_aware_terminal", P::boolean, false),
      none("fetch_server_url", P::string),
      opt("fetch_timeout", P::number, 65, "> 0"),
      opt("fetch_max_retries", P::integer, 3, ">= 1"),
      none("local_search_server_url", P::string),
      none("local_search_model_path", P::string),
      opt("capture_web_assets", P::boolean, false),
      opt("tool_role", P::boolean, true),
      opt("max_tool_calls", P::integer, 64, ">= 0; 0 when no tools are selected"),
      none("max_turns", P::integer, "default max_tool_calls + 1; >= 1"),
      none("final_warning", P::string),
      opt("reasoning_only_final_penalty", P::number, -4.0, "<= 0"),
      opt("invalid_trace_penalty", P::number, -4.0, "<= 0"),
      opt("tool_use_reward_coef", P::number, 0.0, ">= 0"),
      opt("tool_stderr_penalty", P::number, 0.1, ">= 0"),
      opt("unknown_tool_penalty", P::number, 0.1, ">= 0"),
      opt("browse_url_not_in_output_penalty", P::number, 0.0, ">= 0"),
      opt("browse_success_reward_coef", P::number, 0.0, ">= 0"),
      opt("standalone_command_repeat_penalty", P::number, 0.0, ">= 0"),
      opt("standalone_command_repeat_free_count", P::integer, 1, ">= 0"),
      Parameter{"standalone_command_repeat_commands",
                P::string_list,
                J::array({"cat", "sed", "head", "tail"}),
                false,
                true,
                "non-empty names without whitespace"},
  };
  p.insert(p.end(), more.begin(), more.end());
  return p;
}

// The search agents' table: the web-terminal family (search + webterminal) or the visit family
// (search + visit) differ in a few rows, in place.
enum class SearchTools { webterminal, visit };

std::vector<Parameter> search_parameters(SearchTools tools, int max_tool_calls) {
  const bool visit = tools == SearchTools::visit;
  auto p = dataset_split();
  p.push_back(opt("search_server_url", P::string, url("/search")));
  if (visit) {
    p.push_back(opt("local_search_model_path", P::string, "localsearch:bc-v2-72k"));
  } else {
    p.push_back(opt("terminal_server_url", P::string, url("/terminal")));
    p.push_back(opt(
        "jina_reader_url", P::string, "https://r.jina.ai", "unused: fetch goes to the gateway"));
    p.push_back(none("local_search_model_path", P::string, "empty counts as None"));
  }
  p.push_back(opt("timeout", P::number, 65, "> 0"));
  p.push_back(opt("max_retries", P::integer, 3, ">= 1"));
  p.push_back(visit ? opt("visit_max_content_length", P::integer, 64000, ">= 1")
                    : opt("terminal_truncation", P::integer, 2000));
  p.push_back(none("max_turns", P::integer, ">= max_tool_calls + 1 (the default)"));
  p.push_back(opt("max_tool_calls", P::integer, max_tool_calls, ">= 1"));
  p.push_back(opt("template_path",
                  P::string,
                  visit ? "templates/search-agent-visit.json" : "templates/search-agent.json",
                  "variables: question"));
  return p;
}

std::vector<Parameter> judge_parameters(bool with_registry) {
  std::vector<Parameter> p = {
      req("judge_model_path", P::string, "the LLM the judge service runs"),
      none("judge_server_url", P::string, "default: the search URL with /search -> /judge"),
      opt("judge_service_model_path", P::string, "judge"),
      opt("judge_timeout", P::number, 240, "> 0"),
      opt("judge_max_retries", P::integer, 3, ">= 1"),
      opt("judge_rubric_template",
          P::string,
          "The response's final answer is: {answer}",
          "variables: answer"),
  };
  if (with_registry) {
    p.push_back(none("judge_registry", P::any, "ignored"));
  }
  return p;
}

template <typename T> void append(std::vector<T> &to, const std::vector<T> &from) {
  to.insert(to.end(), from.begin(), from.end());
}

const std::vector<RewardTerm> &tool_terms() {
  static const std::vector<RewardTerm> terms = {
      {"valid_tool_or_final_turn", 1.0, "", "1 when the scored route is tool or final"},
      {"invalid_trace_penalty_reward", 1.0, "", "invalid_trace_penalty when the route is invalid"},
      {"tool_use_reward", 1.0, "", "tool_use_reward_coef x min(calls, max) / max"},
      {"tool_stderr_penalty_reward", 1.0, "", "-tool_stderr_penalty x model-caused stderr count"},
      {"unknown_tool_penalty_reward", 1.0, "", "-unknown_tool_penalty x unknown-tool calls"},
      {"browse_url_not_in_output_penalty_reward", 1.0, "", "-coef x browse targets not in output"},
      {"browse_success_reward", 1.0, "", "browse_success_reward_coef once if a browse succeeded"},
      {"standalone_command_repeat_penalty_reward",
       1.0,
       "",
       "-coef x max(targeted - free, 0) / standalone commands"},
  };
  return terms;
}

const std::vector<RewardTerm> &final_terms() {
  static const std::vector<RewardTerm> terms = {
      {"valid_final_format", 1.0, "", "permissive feedback/label JSON verdict parses"},
      {"strict_final_json", 1.0, "", "the visible content is exactly the verdict object"},
      {"reasoning_only_final_penalty_reward",
       1.0,
       "",
       "reasoning_only_final_penalty when only the reasoning holds the verdict"},
      {"correct_final_label", 1.0, "", "normalised label equals normalised answer"},
  };
  return terms;
}

// Lists several environments share.
const std::vector<std::string> &browse_metrics() {
  static const std::vector<std::string> values = {
      "browse_call_count", "browse_url_not_in_output_count", "successful_browse_count"};
  return values;
}

const std::vector<RewardTerm> &exact_terms() {
  static const std::vector<RewardTerm> values = {
      {"final_json_format", 1.0, "", "last message ends with a fenced json {\"answer\": ...}"},
      {"answer_exact_match", 1.0, "", "answer equals the gold after trim and casefold"}};
  return values;
}

const std::vector<RewardTerm> &judge_term() {
  static const std::vector<RewardTerm> values = {
      {"judge_answer", 1.0, "", "1 when the judge labels the final answer pass"}};
  return values;
}

// Each environment's fields beyond its name, module and alias, which k_entries below gives.
// The catalog is built one environment at a time, as lookups reach it: a preview validates the
// one or two environments its TOML names, not all 16 (docs/environments.md "Catalog").
void fill_articulated_harness(Environment &e) {
  e.behaviour = Behaviour::articulated_harness;
  e.env_class = "MultiTurnEnv";
  e.max_turns = {1, "max_tool_calls"};
  e.tools = {"terminal", "submit"};
  e.rewards = tool_terms();
  e.rewards.push_back({"rubric_completion_reward",
                       1.0,
                       "",
                       "rubric_completion_reward_coef x correct (or completed) / expected"});
  e.rewards.push_back({"missing_rubric_penalty",
                       1.0,
                       "",
                       "-missing_rubric_penalty_coef x waiting / expected (gold labels only)"});
  e.metrics = browse_metrics();
  e.services = {"terminal", "fetch (browser_aware_terminal)"};
  e.unknown_args = UnknownArgs::forward;
  e.parameters = tool_label_parameters();
  e.parameters.push_back(opt("rubric_completion_reward_coef", P::number, 1.0, ">= 0"));
  e.parameters.push_back(opt("missing_rubric_penalty_coef", P::number, 1.0, ">= 0"));
  e.summary = "tool-label harness that ends when every expected rubric has been submitted";
}

void fill_code_tool_label(Environment &e) {
  e.behaviour = Behaviour::code_tool_label;
  e.env_class = "MultiTurnEnv";
  e.max_turns = {2, ""};
  e.tools = {"(XML <code> request)"};
  e.rewards = {{"valid_first_turn", 1.0, "", "first turn is a code request or a final verdict"},
               {"valid_final_format", 1.0, "", "one <feedback> and one <label> in the last turn"},
               {"correct_final_label", 1.0, "", "normalised label equals normalised answer"}};
  e.services = {"python"};
  e.parameters = dataset_split();
  append(e.parameters,
         {opt("code_server_url", P::string, url("/python")),
          opt("timeout", P::number, 20, "> 0"),
          opt("max_retries", P::integer, 3, ">= 1"),
          opt("max_runtime", P::integer, 2, ">= 1"),
          Parameter{"code_output_truncation",
                    P::int_or_none,
                    J(),
                    false,
                    true,
                    "integer, or the string \"None\""},
          opt("tool_role", P::boolean, true),
          opt("max_turns", P::integer, 2, ">= 1")});
  e.summary = "two-turn XML judge that may run one Python program first";
}

void fill_label(Environment &e) {
  e.behaviour = Behaviour::label;
  e.env_class = "SingleTurnEnv";
  e.max_turns = {1, ""};
  e.rewards = {{"valid_format", 1.0, "", "exactly one non-empty <feedback> and <label>"},
               {"correct_label", 1.0, "", "normalised label equals normalised answer"}};
  e.parameters = dataset_split();
  e.parameters[0].constraint = "a local JSONL file";
  e.summary = "single-turn XML feedback/label judge";
}

void fill_multiple_choice_accuracy(Environment &e) {
  e.behaviour = Behaviour::multiple_choice_accuracy;
  e.env_class = "SingleTurnEnv";
  e.max_turns = {1, ""};
  e.metrics = {"accuracy"};
  e.parameters = dataset_split("validation");
  e.summary = "metric-only validation: last standalone A-J letter; reward always 0";
}

void fill_podman_terminal(Environment &e) {
  e.behaviour = Behaviour::podman_terminal;
  e.env_class = "MultiTurnEnv";
  e.max_turns = {1, "max_tool_calls"};
  e.tools = {"bash", "submit"};
  e.rewards = {
      {"task_reward_file",
       1.0,
       "reward_file_weight",
       "reward file value clamped to [0, 1]",
       "verifier_reward_weight"},
      {"episode_terminated", 0.1, "termination_reward_weight", "1 once the marker was echoed"},
      {"podman_failed_reward", 1.0, "podman_failure_penalty_weight", "-1 on a Podman failure"},
      {"fake_tool_penalty", 0.1, "fake_tool_penalty_weight", "-(unknown-tool calls)"}};
  e.metrics = {"terminal_completion_metric",
               "reward_file_present_metric",
               "podman_test_success_metric",
               "podman_failure_metric",
               "podman_oom_metric",
               "fake_tool_count_metric"};
  e.services = {"podman"};
  e.unknown_args = UnknownArgs::forward;
  e.parameters = dataset_split();
  append(e.parameters,
         {opt("podman_gateway_url", P::string, gateway, "non-blank"),
          opt("podman_workdir", P::string, "/home/user", "non-blank"),
          opt("command_timeout", P::number, 60, "> 0"),
          opt("request_timeout", P::number, 150, "> 0"),
          opt("handshake_timeout", P::number, 600, "> 0"),
          opt("max_retries", P::integer, 3, ">= 1"),
          opt("service", P::string, "podman", "non-blank"),
          opt("client_id_prefix", P::string, "primebeaker-solver"),
          opt("completion_marker", P::string, "TERMINAL_COMPLETE", "non-blank"),
          opt("reward_file_path", P::string, "/logs/verifier/reward.txt", "non-blank"),
          opt("test_command", P::string, "bash /tests/test.sh", "non-blank"),
          opt("test_file_path", P::string, "/tmp/primebeaker-test-final-state.py", "non-blank"),
          opt("test_timeout", P::number, 600, "> 0"),
          opt("reward_file_weight", P::number, 1.0, ">= 0"),
          none("verifier_reward_weight", P::number, "legacy alias of reward_file_weight; not both"),
          opt("termination_reward_weight", P::number, 0.1, ">= 0"),
          opt("podman_failure_penalty_weight", P::number, 1.0, ">= 0"),
          opt("fake_tool_penalty_weight", P::number, 0.1, ">= 0"),
          opt("max_tool_calls", P::integer, 64, ">= 0"),
          none("max_turns", P::integer, "default max_tool_calls + 1"),
          opt("tool_role", P::boolean, true),
          none("final_warning", P::string),
          opt("reasoning_only_final_penalty", P::number, -4.0, "<= 0"),
          opt("invalid_trace_penalty", P::number, -4.0, "<= 0")});
  e.summary = "solve a task in a fresh Podman container; graded by the task's own tests";
}

void fill_reward_model(Environment &e) {
  e.behaviour = Behaviour::reward_model;
  e.env_class = "SingleTurnEnv";
  e.max_turns = {1, ""};
  e.rewards = {{"reward_model_score", 1.0, "", "(raw - mean) / std of the classifier score"}};
  e.metrics = {"accuracy (log_science_accuracy)"};
  e.services = {"reward model"};
  e.parameters = {req("dataset", P::string),
                  req("reward_model_path", P::string, "the classifier the service runs"),
                  opt("split", P::string, "train"),
                  opt("reward_server_url", P::string, url("/classify")),
                  opt("reward_timeout", P::number, 240, "> 0"),
                  opt("reward_max_retries", P::integer, 3, ">= 1"),
                  opt("positive_class_index", P::integer, 0, ">= 0"),
                  opt("score_transform", P::string, "identity", "identity or logit"),
                  opt("logit_epsilon", P::number, 1e-7, "0 < eps < 0.5"),
                  none("standardization_std", P::number, "> 0"),
                  opt("center_rewards", P::boolean, false),
                  opt("log_math_accuracy",
                      P::boolean,
                      false,
                      "needs math-verify: not supported by the C++ scorer"),
                  opt("log_science_accuracy", P::boolean, false),
                  none("chat_template_kwargs", P::any, "a table")};
  e.summary = "single turn scored by a sequence-classifier reward model";
}

void fill_rubrichub_judge(Environment &e) {
  e.behaviour = Behaviour::rubrichub_judge;
  e.env_class = "SingleTurnEnv";
  e.max_turns = {1, ""};
  e.rewards = {{"(score_rollout)",
                1.0,
                "",
                "sum of passed weights / sum of positive weights + orphan </think> penalty"}};
  e.metrics = {"jtc_weighted_score",
               "invalid_final_output",
               "non_terminated_policy_output",
               "orphan_think_close_tag",
               "orphan_think_close_penalty"};
  e.services = {"judge"};
  e.parameters = {opt("dataset", P::string, "sojuL/RubricHub_v1"),
                  opt("split", P::string, "train"),
                  none("judge_model_path",
                       P::string,
                       "set it: Python PrimeBeaker's default is a path on its authors' cluster"),
                  opt("judge_server_url", P::string, url("/judge")),
                  opt("judge_service_model_path", P::string, "judge"),
                  opt("judge_timeout", P::number, 240, "> 0"),
                  opt("judge_max_retries", P::integer, 3, ">= 1"),
                  opt("max_rubrics", P::integer, 8, ">= 1"),
                  opt("rubric_sample_seed", P::integer, 0),
                  opt("non_termination_penalty", P::number, -0.25),
                  opt("invalid_output_penalty", P::number, 0.0),
                  opt("orphan_think_close_penalty", P::number, -0.2),
                  none("shadow_judge_model_path", P::string),
                  none("shadow_judge_server_url", P::string),
                  opt("shadow_judge_service_model_path", P::string, "judge"),
                  opt("shadow_judge_timeout", P::number, 300, "> 0"),
                  opt("shadow_judge_max_retries", P::integer, 1, ">= 1"),
                  opt("shadow_judge_sample_rate", P::number, 0.0, "0 <= rate <= 1"),
                  opt("shadow_judge_sample_seed", P::integer, 0),
                  none("shadow_judge_audit_dir", P::string)};
  e.summary = "single turn scored by the judge pool against sampled RubricHub criteria";
}

void fill_search_agent(Environment &e) {
  const bool alias = e.name == "search-agent-webterminal";
  e.behaviour = Behaviour::search_agent;
  e.env_class = "StatefulToolEnv";
  e.max_turns = {1, "max_tool_calls"};
  e.tools = {"search", "webterminal"};
  e.rewards = exact_terms();
  e.services = {"search", "terminal", "fetch"};
  e.parameters = search_parameters(SearchTools::webterminal, 20);
  e.summary = alias ? "re-export of search-agent-dataset"
                    : "deep research with search and a web terminal; exact-match answer";
}

void fill_search_visit_agent(Environment &e) {
  const bool alias = e.name == "search-agent-visit";
  e.behaviour = Behaviour::search_visit_agent;
  e.env_class = "StatefulToolEnv";
  e.max_turns = {1, "max_tool_calls"};
  e.tools = {"search", "visit"};
  e.rewards = exact_terms();
  e.services = {"search", "fetch"};
  e.unknown_args = UnknownArgs::ignore;
  e.parameters = search_parameters(SearchTools::visit, 150);
  e.summary = alias ? "re-export of search-visit-agent-dataset"
                    : "search and direct page visits; exact-match answer";
}

void fill_search_visit_agent_judge(Environment &e) {
  const bool alias = e.name == "search-agent-visit-judge";
  e.behaviour = Behaviour::search_visit_agent_judge;
  e.env_class = "StatefulToolEnv";
  e.max_turns = {1, "max_tool_calls"};
  e.tools = {"search", "visit"};
  e.rewards = judge_term();
  e.services = {"search", "fetch", "judge"};
  e.unknown_args = UnknownArgs::ignore;
  e.parameters = search_parameters(SearchTools::visit, 150);
  append(e.parameters, judge_parameters(true));
  e.summary =
      alias ? "re-export of search-visit-agent-judge" : "search and visit, scored by the judge";
}

void fill_search_agent_webterminal_judge(Environment &e) {
  e.behaviour = Behaviour::search_agent_judge;
  e.env_class = "StatefulToolEnv";
  e.max_turns = {1, "max_tool_calls"};
  e.tools = {"search", "webterminal"};
  e.rewards = judge_term();
  e.rewards.push_back(
      {"tool_stderr_penalty_reward", 1.0, "", "-tool_stderr_penalty x model-caused stderr"});
  e.rewards.push_back({"missing_final_answer_penalty_reward",
                       1.0,
                       "",
                       "missing_final_answer_penalty when the last turn has no answer"});
  e.services = {"search", "terminal", "fetch", "judge"};
  e.unknown_args = UnknownArgs::ignore;
  e.parameters = search_parameters(SearchTools::webterminal, 150);
  append(e.parameters, judge_parameters(false));
  append(e.parameters,
         {opt("webterminal_max_content_length", P::integer, 64000, ">= 1"),
          opt("tool_stderr_penalty", P::number, 0.05, ">= 0"),
          opt("missing_final_answer_penalty", P::number, -1.0, "<= 0"),
          none("token_budget_warning_fraction", P::number, "0 < fraction <= 1"),
          none("turn_budget_warning_fraction", P::number, "0 < fraction <= 1")});
  for (auto &parameter : e.parameters) {
    if (parameter.name == "token_budget_warning_fraction" ||
        parameter.name == "turn_budget_warning_fraction") {
      parameter.default_value = 0.1;
    }
  }
  e.summary = "search and a web terminal, scored by the judge";
}

void fill_terminal_tool_label(Environment &e) {
  e.behaviour = Behaviour::terminal_tool_label;
  e.env_class = "MultiTurnEnv";
  e.max_turns = {1, "max_terminal_calls"};
  e.tools = {"terminal"};
  e.rewards = {{"valid_terminal_or_final_turn", 1.0, "", "route is terminal or final"},
               {"invalid_trace_penalty_reward",
                1.0,
                "",
                "-1 for a call past the limit; invalid_trace_penalty when invalid"}};
  append(e.rewards, final_terms());
  e.services = {"terminal"};
  e.parameters = dataset_split();
  append(e.parameters,
         {opt("terminal_server_url", P::string, url("/terminal")),
          opt("timeout", P::number, 20, "> 0"),
          opt("max_retries", P::integer, 3, ">= 1"),
          opt("terminal_truncation", P::integer, 2000),
          opt("tool_role", P::boolean, true),
          opt("max_terminal_calls", P::integer, 4, ">= 1"),
          none("max_turns", P::integer, "default max_terminal_calls + 1"),
          opt("final_warning_template_path",
              P::string,
              "templates/multistep-final-warning-harmony.json",
              "variables: tool_content, tool_name (also stdout, stderr, code, success)"),
          opt("reasoning_only_final_penalty", P::number, -4.0, "<= 0"),
          opt("invalid_trace_penalty", P::number, -4.0, "<= 0")});
  e.summary = "JSON-verdict judge with at most max_terminal_calls terminal calls";
}

void fill_tool_label(Environment &e) {
  e.behaviour = Behaviour::tool_label;
  e.env_class = "MultiTurnEnv";
  e.max_turns = {1, "max_tool_calls"};
  e.tools = {"terminal", "submit (optional)"};
  e.rewards = tool_terms();
  append(e.rewards, final_terms());
  e.metrics = browse_metrics();
  e.services = {"terminal", "fetch (browser_aware_terminal)"};
  e.parameters = tool_label_parameters();
  e.summary = "multi-tool judge that must end with a JSON feedback/label verdict";
}

struct CatalogEntry {
  std::string_view name;
  std::string_view module;
  std::string_view alias; // empty: none
  void (*fill)(Environment &);
};

// By name (byte order), the order of catalog() and docs/environments.md.
constexpr CatalogEntry k_entries[] = {
    {"articulated-harness", "articulated_harness_env", "", &fill_articulated_harness},
    {"code-tool-label", "jtc_code_tool_label_env", "jtc-code-tool-label", &fill_code_tool_label},
    {"label", "jtc_label_env", "jtc-label", &fill_label},
    {"multiple-choice-accuracy",
     "jtc_multiple_choice_accuracy_env",
     "jtc-multiple-choice-accuracy",
     &fill_multiple_choice_accuracy},
    {"podman-terminal", "podman_terminal_env", "podman-terminal-verifier", &fill_podman_terminal},
    {"reward-model", "jtc_reward_model_env", "jtc-reward-model", &fill_reward_model},
    {"rubrichub-judge", "jtc_rubrichub_judge_env", "jtc-rubrichub-judge", &fill_rubrichub_judge},
    {"search-agent-dataset", "jtc_search_agent_env", "jtc-search-agent", &fill_search_agent},
    {"search-agent-visit",
     "jtc_search_agent_visit_env",
     "jtc-search-agent-visit",
     &fill_search_visit_agent},
    {"search-agent-visit-judge",
     "jtc_search_agent_visit_judge_env",
     "jtc-search-agent-visit-judge",
     &fill_search_visit_agent_judge},
    {"search-agent-webterminal",
     "jtc_search_agent_webterminal_env",
     "jtc-search-agent-webterminal",
     &fill_search_agent},
    {"search-agent-webterminal-judge",
     "jtc_search_agent_webterminal_judge_env",
     "jtc-search-agent-webterminal-judge",
     &fill_search_agent_webterminal_judge},
    {"search-visit-agent-dataset",
     "jtc_search_visit_agent_env",
     "jtc-search-visit-agent",
     &fill_search_visit_agent},
    {"search-visit-agent-judge",
     "jtc_search_visit_agent_judge_env",
     "jtc-search-visit-agent-judge",
     &fill_search_visit_agent_judge},
    {"terminal-tool-label",
     "jtc_terminal_tool_label_env",
     "jtc-terminal-tool-label",
     &fill_terminal_tool_label},
    {"tool-label", "jtc_tool_label_env", "jtc-tool-label", &fill_tool_label},
};
constexpr std::size_t k_catalog_size = std::size(k_entries);

// The catalog's storage: every slot exists from the start (default-constructed, no
// allocation), and is filled once, by the first lookup that reaches it.
std::vector<Environment> &slots() {
  static std::vector<Environment> all(k_catalog_size);
  return all;
}

const Environment &built(std::size_t index) {
  static std::array<std::once_flag, k_catalog_size> once;
  std::vector<Environment> &all = slots();
  std::call_once(once[index], [&all, index] {
    const CatalogEntry &entry = k_entries[index];
    Environment &e = all[index];
    e.name = entry.name;
    e.module = entry.module;
    if (!entry.alias.empty()) {
      e.aliases = {std::string(entry.alias)};
    }
    entry.fill(e);
  });
  return all[index];
}

} // namespace

std::string_view behaviour_name(Behaviour behaviour) {
  switch (behaviour) {
  case Behaviour::label:
    return "label";
  case Behaviour::code_tool_label:
    return "code-tool-label";
  case Behaviour::tool_label:
    return "tool-label";
  case Behaviour::articulated_harness:
    return "articulated-harness";
  case Behaviour::podman_terminal:
    return "podman-terminal";
  case Behaviour::terminal_tool_label:
    return "terminal-tool-label";
  case Behaviour::reward_model:
    return "reward-model";
  case Behaviour::multiple_choice_accuracy:
    return "multiple-choice-accuracy";
  case Behaviour::rubrichub_judge:
    return "rubrichub-judge";
  case Behaviour::search_agent:
    return "search-agent-dataset";
  case Behaviour::search_agent_judge:
    return "search-agent-webterminal-judge";
  case Behaviour::search_visit_agent:
    return "search-visit-agent-dataset";
  case Behaviour::search_visit_agent_judge:
    return "search-visit-agent-judge";
  }
  return "?";
}

std::string_view param_type_name(ParamType type) {
  switch (type) {
  case ParamType::string:
    return "string";
  case ParamType::integer:
    return "integer";
  case ParamType::number:
    return "number";
  case ParamType::boolean:
    return "boolean";
  case ParamType::string_list:
    return "list of strings";
  case ParamType::int_or_none:
    return "integer or \"None\"";
  case ParamType::any:
    return "any";
  }
  return "?";
}

const Parameter *Environment::parameter(std::string_view wanted) const {
  for (const auto &p : parameters) {
    if (p.name == wanted) {
      return &p;
    }
  }
  return nullptr;
}

std::string RewardTerm::weight_text() const {
  const std::string number = fmt::format("{:.1f}", weight);
  return weight_parameter.empty() ? number : weight_parameter + " (" + number + ")";
}

double RewardTerm::weight_for(const OrderedJson &args) const {
  for (const std::string *key : {&legacy_weight_parameter, &weight_parameter}) {
    if (!key->empty() && args.is_object() && args.contains(*key) && args.at(*key).is_number()) {
      return args.at(*key).get<double>();
    }
  }
  return weight;
}

std::string Environment::max_turns_text() const {
  if (max_turns.budget_parameter.empty()) {
    return std::to_string(max_turns.fixed);
  }
  const Parameter *budget = parameter(max_turns.budget_parameter);
  const J fallback = budget != nullptr ? budget->default_value : J();
  return max_turns.budget_parameter + " + 1" +
         (fallback.is_number_integer() ? " (" + std::to_string(fallback.get<long long>() + 1) + ")"
                                       : std::string());
}

long long Environment::turn_limit(const OrderedJson &args) const {
  if (args.is_object() && args.contains("max_turns") && args.at("max_turns").is_number_integer()) {
    return args.at("max_turns").get<long long>();
  }
  if (max_turns.budget_parameter.empty()) {
    return max_turns.fixed;
  }
  J budget = args.is_object() && args.contains(max_turns.budget_parameter)
                 ? args.at(max_turns.budget_parameter)
                 : J();
  if (!budget.is_number_integer()) {
    const Parameter *p = parameter(max_turns.budget_parameter);
    budget = p != nullptr ? p->default_value : J();
  }
  return budget.is_number_integer() ? budget.get<long long>() + 1 : -1;
}

std::string Environment::entry_point() const {
  return "primebeaker.environments." + module + ":load_environment";
}

const std::vector<Environment> &catalog() {
  for (std::size_t i = 0; i < k_catalog_size; ++i) {
    built(i);
  }
  return slots();
}

std::vector<std::string> registry_keys() {
  std::vector<std::string> keys;
  for (const auto &entry : k_entries) {
    keys.emplace_back(entry.name);
    if (!entry.alias.empty()) {
      keys.emplace_back(entry.alias);
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

const Environment *find_environment(std::string_view name) {
  std::string key(name);
  if (key.size() >= 3 && key.compare(key.size() - 3, 3, ".py") == 0) {
    key.resize(key.size() - 3);
  }
  std::replace(key.begin(), key.end(), '_', '-');
  for (std::size_t i = 0; i < k_catalog_size; ++i) {
    if (k_entries[i].name == key || (!k_entries[i].alias.empty() && k_entries[i].alias == key)) {
      return &built(i);
    }
  }
  for (std::size_t i = 0; i < k_catalog_size; ++i) {
    if (k_entries[i].module == name) {
      return &built(i);
    }
  }
  return nullptr;
}

namespace {

// The module part of what a user typed: without ":load_environment" (or another attribute), the
// directories of a file path and ".py".
std::string_view module_part(std::string_view typed) {
  std::string_view path = typed.substr(0, typed.find(':'));
  if (const auto slash = path.rfind('/'); slash != std::string_view::npos) {
    path = path.substr(slash + 1);
  }
  if (path.size() > 3 && path.substr(path.size() - 3) == ".py") {
    path.remove_suffix(3);
  }
  return path;
}

// "did you mean": the closest name, alias or module stem to the last component of `typed`, in
// the form it was typed (a module path keeps its package and attribute). Empty when none is.
std::string closest_environment(std::string_view typed) {
  const std::string_view path = module_part(typed);
  const auto dot = path.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? path : path.substr(dot + 1);
  const bool module_form = last.size() != typed.size(); // a package, directory, ".py" or ":"
  // Compared with '_' and '-' alike ("tool_lable" is two edits from "tool-label"); a module
  // also as its stem without "_env" ("...jtc_label" means jtc_label_env).
  std::vector<std::string> spelled;
  std::vector<std::string_view> meant;
  const auto add = [&](std::string_view as, std::string_view candidate) {
    spelled.push_back(text::kebab_case(as));
    meant.push_back(candidate);
  };
  for (const auto &entry : k_entries) {
    if (!module_form) {
      add(entry.name, entry.name);
      if (!entry.alias.empty()) {
        add(entry.alias, entry.alias);
      }
    }
    add(entry.module, entry.module);
    if (entry.module.ends_with("_env")) {
      add(entry.module.substr(0, entry.module.size() - 4), entry.module);
    }
  }
  const std::string best = text::closest_match(text::kebab_case(last), spelled);
  if (best.empty()) {
    return {};
  }
  const std::string original(meant[static_cast<std::size_t>(
      std::find(spelled.begin(), spelled.end(), best) - spelled.begin())]);
  if (!module_form) {
    return original;
  }
  const std::size_t at = static_cast<std::size_t>(last.data() - typed.data());
  return std::string(typed.substr(0, at)) + original + std::string(typed.substr(at + last.size()));
}

} // namespace

const Environment *lookup_environment(std::string_view typed) {
  const std::string_view text = text::trim(typed);
  if (const Environment *e = find_environment(text)) {
    return e; // a name, an alias (either spelling, with ".py") or a module stem
  }
  const std::string_view path = module_part(text);
  if (path.empty()) {
    return nullptr;
  }
  if (path.size() != text.size()) {
    if (const Environment *e = find_environment(path)) {
      return e; // "jtc_label_env.py", ".../jtc_label_env.py", "label:load_environment"
    }
  }
  return environment_for_id(path); // "primebeaker.environments.jtc_label_env"
}

const Environment &resolve(std::string_view name) {
  if (const Environment *e = lookup_environment(name)) {
    return *e;
  }
  Error error = input_error(fmt::format("unknown environment '{}'", name));
  if (const std::string suggestion = closest_environment(text::trim(name)); !suggestion.empty()) {
    error.add_context(fmt::format("did you mean '{}'?", suggestion));
  }
  error.add_context(fmt::format(
      "run 'primebeaker environments list' for the {} environments, their aliases and modules",
      k_catalog_size));
  throw error;
}

const Environment *environment_for_id(std::string_view id) {
  std::string_view path = id.substr(0, id.find(':'));
  path = text::trim(path);
  if (path.empty()) {
    return nullptr;
  }
  const auto dot = path.rfind('.');
  if (dot != std::string_view::npos) {
    const std::string_view stem = path.substr(dot + 1);
    for (std::size_t i = 0; i < k_catalog_size; ++i) {
      if (k_entries[i].module == stem) {
        return &built(i);
      }
    }
    return nullptr; // some other package's module
  }
  return find_environment(path);
}

const Environment *environment_for_taskset(std::string_view id) {
  if (const auto slash = id.rfind('/'); slash != std::string_view::npos) {
    id.remove_prefix(slash + 1);
  }
  id = id.substr(0, id.find('@'));
  std::string module;
  for (const char c : id) {
    module += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  constexpr std::string_view prefix = "primebeaker_";
  if (!module.starts_with(prefix)) {
    return nullptr;
  }
  // primebeaker_<x> is the v1 face of the v0 module <x>_env.
  const std::string stem = module.substr(prefix.size()) + "_env";
  for (std::size_t i = 0; i < k_catalog_size; ++i) {
    if (k_entries[i].module == stem) {
      return &built(i);
    }
  }
  return nullptr;
}

OrderedJson describe(const Environment &e) {
  J out;
  out["name"] = e.name;
  out["module"] = e.module;
  out["entry_point"] = e.entry_point();
  out["aliases"] = e.aliases;
  out["behaviour"] = behaviour_name(e.behaviour);
  out["summary"] = e.summary;
  out["env_class"] = e.env_class;
  out["max_turns"] = e.max_turns_text();
  out["tools"] = e.tools;
  J params = J::array();
  for (const auto &p : e.parameters) {
    J row;
    row["name"] = p.name;
    row["type"] = param_type_name(p.type);
    row["required"] = p.required;
    if (!p.required) {
      row["default"] = p.default_value;
    }
    row["constraint"] = p.constraint;
    params.push_back(row);
  }
  out["parameters"] = params;
  out["unknown_arguments"] = e.unknown_args == UnknownArgs::reject    ? "rejected"
                             : e.unknown_args == UnknownArgs::forward ? "forwarded"
                                                                      : "ignored";
  J rewards = J::array();
  for (const auto &r : e.rewards) {
    rewards.push_back({{"name", r.name}, {"weight", r.weight_text()}, {"meaning", r.meaning}});
  }
  out["rewards"] = rewards;
  out["metrics"] = e.metrics;
  out["services"] = e.services;
  return out;
}

} // namespace pb::environments
