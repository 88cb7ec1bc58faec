// SPDX-License-Identifier: MIT
// Reward scoring from recorded rollouts (docs/environments.md "Scoring").
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/libm.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/random.hpp>
#include <primebeaker/environments/render.hpp>
#include <primebeaker/environments/scoring.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace pb::environments {
namespace {

using J = OrderedJson;

double finite_or_zero(double x) {
  return std::isfinite(x) ? x : 0.0;
}

// Keyword arguments with the catalog's defaults.
struct Args {
  const Environment &env;
  const J &given;

  J get(const std::string &name) const {
    if (given.is_object() && given.contains(name) && !given.at(name).is_null()) {
      return given.at(name);
    }
    const Parameter *p = env.parameter(name);
    return p != nullptr ? p->default_value : J();
  }
  double number(const std::string &name, double fallback = 0.0) const {
    const J v = get(name);
    return v.is_number() ? v.get<double>() : fallback;
  }
  long long integer(const std::string &name, long long fallback = 0) const {
    const J v = get(name);
    return v.is_number_integer() ? v.get<long long>() : fallback;
  }
  bool boolean(const std::string &name) const {
    const J v = get(name);
    return v.is_boolean() && v.get<bool>();
  }
  std::string string(const std::string &name) const {
    const J v = get(name);
    return v.is_string() ? v.get<std::string>() : std::string();
  }
};

const J &field(const J &object, const char *key) {
  static const J null_value;
  return object.is_object() && object.contains(key) ? object.at(key) : null_value;
}

double counter(const J &state, const char *key) {
  const J &v = field(state, key);
  if (v.is_number()) {
    return v.get<double>();
  }
  if (v.is_array()) {
    return static_cast<double>(v.size());
  }
  return 0.0;
}

bool flag(const J &state, const char *key) {
  const J &v = field(state, key);
  return v.is_boolean() ? v.get<bool>() : (v.is_number() && v.get<double>() != 0);
}

const J &completion_of(const J &rollout) {
  const J &c = field(rollout, "completion");
  if (!c.is_null() && !c.is_array()) {
    throw input_error("rollout.completion must be a list of messages");
  }
  return c;
}

const J *last_message(const J &rollout) {
  const J &c = completion_of(rollout);
  return c.is_array() && !c.empty() ? &c.back() : nullptr;
}

const J *last_assistant(const J &rollout) {
  const J &c = completion_of(rollout);
  if (!c.is_array()) {
    return nullptr;
  }
  for (auto it = c.rbegin(); it != c.rend(); ++it) {
    if (field(*it, "role") == "assistant") {
      return &*it;
    }
  }
  return nullptr;
}

const J *first_assistant(const J &rollout) {
  const J &c = completion_of(rollout);
  if (!c.is_array()) {
    return nullptr;
  }
  for (const auto &m : c) {
    if (field(m, "role") == "assistant") {
      return &m;
    }
  }
  return nullptr;
}

std::optional<std::string> gold_answer(const J &rollout) {
  const J &a = field(rollout, "answer");
  if (a.is_string() && !py::strip(a.get_ref<const std::string &>()).empty()) {
    return a.get<std::string>();
  }
  return std::nullopt;
}

bool has_tool_calls(const J *message) {
  if (message == nullptr) {
    return false;
  }
  const J &calls = field(*message, "tool_calls");
  return calls.is_array() && !calls.empty();
}

const J &state_of(const J &rollout) {
  return field(rollout, "state");
}

// ---- label family --------------------------------------------------------------------------

double label_matches(const std::optional<std::string> &label, const J &rollout) {
  const auto gold = gold_answer(rollout);
  if (!label || !gold) {
    return 0.0;
  }
  return py::normalize_label(*label) == py::normalize_label(*gold) ? 1.0 : 0.0;
}

// The final text the JSON-verdict environments parse: the content, or the reasoning when the
// visible content is empty.
struct FinalText {
  std::string content;
  std::string reasoning;
  bool content_empty = true;
};

FinalText final_text(const J *message) {
  FinalText out;
  if (message == nullptr) {
    return out;
  }
  out.content = message_text(*message);
  out.reasoning = message_reasoning(*message);
  out.content_empty = strip_qwen_special_blocks(out.content).empty();
  return out;
}

void final_terms(const Args &args, const J &rollout, J &terms) {
  const FinalText text = final_text(last_assistant(rollout));
  const auto verdict = parse_final_verdict(text.content_empty ? text.reasoning : text.content);
  terms["valid_final_format"] = verdict ? 1.0 : 0.0;
  terms["strict_final_json"] = parse_strict_verdict(text.content) ? 1.0 : 0.0;
  terms["reasoning_only_final_penalty_reward"] =
      text.content_empty && parse_final_verdict(text.reasoning)
          ? args.number("reasoning_only_final_penalty", -4.0)
          : 0.0;
  terms["correct_final_label"] =
      label_matches(verdict ? std::optional<std::string>(verdict->label) : std::nullopt, rollout);
}

std::vector<std::string> advertised_tools(const Args &args) {
  std::vector<std::string> tools;
  const J t = args.get("tools");
  if (t.is_array()) {
    for (const auto &name : t) {
      if (name.is_string()) {
        tools.push_back(name.get<std::string>());
      }
    }
  }
  return tools;
}

// The tool-label route of one assistant message (§ "Per-turn routing").
std::string tool_label_route(const J *message, const std::vector<std::string> &advertised) {
  if (message == nullptr) {
    return "invalid";
  }
  const auto calls = extract_tool_calls(*message);
  if (!calls.empty()) {
    for (const auto &call : calls) {
      const bool known =
          std::find(advertised.begin(), advertised.end(), call.name) != advertised.end();
      if (known && !tool_arguments_usable(call.name, call.arguments)) {
        return "invalid";
      }
    }
    return "tool";
  }
  const FinalText text = final_text(message);
  return parse_final_verdict(text.content_empty ? text.reasoning : text.content) ? "final"
                                                                                 : "invalid";
}

void tool_terms(const Args &args, const J &rollout, J &terms) {
  const J &state = state_of(rollout);
  std::string route;
  if (field(state, "jtc_route").is_string()) {
    route = field(state, "jtc_route").get<std::string>();
  } else {
    route = tool_label_route(last_assistant(rollout), advertised_tools(args));
  }
  const bool infra = flag(state, "jtc_infrastructure_failure");
  terms["valid_tool_or_final_turn"] = !infra && (route == "tool" || route == "final") ? 1.0 : 0.0;
  terms["invalid_trace_penalty_reward"] =
      !infra && route == "invalid" ? args.number("invalid_trace_penalty", -4.0) : 0.0;
  const double max_calls = static_cast<double>(args.integer("max_tool_calls", 64));
  const double calls = counter(state, "jtc_tool_call_count");
  terms["tool_use_reward"] =
      max_calls > 0 ? args.number("tool_use_reward_coef") * std::min(calls, max_calls) / max_calls
                    : 0.0;
  terms["tool_stderr_penalty_reward"] =
      -args.number("tool_stderr_penalty", 0.1) * counter(state, "jtc_tool_command_error_count");
  terms["unknown_tool_penalty_reward"] =
      -args.number("unknown_tool_penalty", 0.1) * counter(state, "jtc_unknown_tool_call_count");
  terms["browse_url_not_in_output_penalty_reward"] =
      -args.number("browse_url_not_in_output_penalty") *
      counter(state, "jtc_browse_url_not_in_output_count");
  terms["browse_success_reward"] = counter(state, "jtc_successful_browse_count") > 0
                                       ? args.number("browse_success_reward_coef")
                                       : 0.0;
  const double standalone = counter(state, "jtc_standalone_command_count");
  const double targeted = counter(state, "jtc_targeted_standalone_command_count");
  const double free_count =
      static_cast<double>(args.integer("standalone_command_repeat_free_count", 1));
  terms["standalone_command_repeat_penalty_reward"] =
      standalone > 0 ? -args.number("standalone_command_repeat_penalty") *
                           std::max(targeted - free_count, 0.0) / standalone
                     : 0.0;
}

void browse_metrics(const J &rollout, J &metrics) {
  const J &state = state_of(rollout);
  metrics["browse_call_count"] = counter(state, "jtc_browse_call_count");
  metrics["browse_url_not_in_output_count"] = counter(state, "jtc_browse_url_not_in_output_count");
  metrics["successful_browse_count"] = counter(state, "jtc_successful_browse_count");
}

std::string id_text(const J &id) {
  if (id.is_string()) {
    return py::strip(id.get_ref<const std::string &>());
  }
  if (id.is_number_integer()) {
    return std::to_string(id.get<long long>());
  }
  return {};
}

void articulated_terms(const Args &args, const J &rollout, J &terms) {
  const auto expected = expected_rubric_ids(rollout);
  const J &state = state_of(rollout);
  std::map<std::string, std::string> submitted;
  const J &subs = field(state, "jtc_submit_submissions");
  if (subs.is_object()) {
    for (auto it = subs.begin(); it != subs.end(); ++it) {
      submitted[py::strip(it.key())] = py::str(field(it.value(), "label"));
    }
  } else if (subs.is_array()) {
    for (const auto &s : subs) {
      submitted[id_text(field(s, "rubric_id"))] = py::str(field(s, "label"));
    }
  }
  std::map<std::string, std::string> gold;
  for (const J *source : {&field(rollout, "info"), &rollout}) {
    const J &g = field(*source, "gold_submissions");
    if (!g.is_array() || !gold.empty()) {
      continue;
    }
    for (const auto &item : g) {
      const std::string label = py::casefold(py::strip(py::str(field(item, "label"))));
      if (label == "pass" || label == "fail") {
        gold[id_text(field(item, "rubric_id"))] = label;
      }
    }
  }
  const double total = static_cast<double>(expected.size());
  double completed = 0;
  double correct = 0;
  for (const auto &id : expected) {
    const auto it = submitted.find(id);
    if (it == submitted.end()) {
      continue;
    }
    completed += 1;
    const auto g = gold.find(id);
    if (g != gold.end() && py::casefold(py::strip(it->second)) == g->second) {
      correct += 1;
    }
  }
  const double completion_coef = args.number("rubric_completion_reward_coef", 1.0);
  const double missing_coef = args.number("missing_rubric_penalty_coef", 1.0);
  if (total == 0) {
    terms["rubric_completion_reward"] = 0.0;
    terms["missing_rubric_penalty"] = 0.0;
    return;
  }
  terms["rubric_completion_reward"] =
      completion_coef * (gold.empty() ? completed : correct) / total;
  terms["missing_rubric_penalty"] =
      gold.empty() ? 0.0 : -missing_coef * (total - completed) / total;
}

// ---- terminal-tool-label ------------------------------------------------------------------

bool single_terminal_call(const std::vector<ToolCall> &calls) {
  if (calls.size() != 1 || calls[0].name != "terminal") {
    return false;
  }
  const J &command = field(calls[0].arguments, "command");
  return command.is_string() && !py::strip(command.get_ref<const std::string &>()).empty();
}

std::string terminal_route(const J *message) {
  if (message == nullptr) {
    return "invalid";
  }
  const auto structured = parse_structured_calls(*message);
  if (structured && single_terminal_call(*structured)) {
    return "terminal";
  }
  const std::string content = message_text(*message);
  if (single_terminal_call(parse_qwen_tool_calls(content))) {
    return "terminal";
  }
  const FinalText text = final_text(message);
  return parse_final_verdict(text.content_empty ? text.reasoning : text.content) ? "final"
                                                                                 : "invalid";
}

// ---- judges ------------------------------------------------------------------------------

std::string prompt_text_for_judge(const J &rollout) {
  const J &question = field(field(rollout, "info"), "question");
  if (question.is_string() && !py::strip(question.get_ref<const std::string &>()).empty()) {
    return question.get<std::string>();
  }
  const J &prompt = field(rollout, "prompt");
  if (prompt.is_string()) {
    return py::strip(prompt.get_ref<const std::string &>());
  }
  std::vector<std::string> parts;
  if (prompt.is_array()) {
    for (const auto &m : prompt) {
      const std::string content = message_text(m);
      if (!py::strip(content).empty()) {
        parts.push_back(content);
      }
    }
  }
  return text::join(parts, "\n\n");
}

std::string rubrichub_prompt_text(const J &rollout) {
  const J &prompt = field(rollout, "prompt");
  if (prompt.is_string()) {
    return prompt.get<std::string>();
  }
  if (prompt.is_array() && prompt.size() == 1 && field(prompt[0], "role") == "user") {
    return message_text(prompt[0]);
  }
  std::vector<std::string> blocks;
  if (prompt.is_array()) {
    for (const auto &m : prompt) {
      blocks.push_back(py::str(field(m, "role")) + ":\n" + message_text(m));
    }
  }
  return text::join(blocks, "\n\n");
}

const J &recorded(const J &rollout, const char *key) {
  const J &state = state_of(rollout);
  if (!field(state, key).is_null()) {
    return field(state, key);
  }
  return field(field(state, "info"), key);
}

const J &judgments_of(const J &response, const char *what) {
  const J &judgments = field(response, "judgments");
  if (!judgments.is_array()) {
    throw input_error(fmt::format("{}: the recorded judge response has no judgments list "
                                  "(state.judge_response)",
                                  what));
  }
  return judgments;
}

struct RubricRow {
  std::string record_id;
  std::vector<std::pair<std::string, double>> rubrics; // text, weight
};

RubricRow rubrichub_row(const J &rollout) {
  const J &answer = field(rollout, "answer");
  std::optional<J> parsed =
      answer.is_string() ? py::try_loads(answer.get<std::string>()) : std::nullopt;
  if (!parsed || !parsed->is_object() || !field(*parsed, "rubrics").is_array()) {
    throw input_error("rubrichub-judge: the rollout answer must be the row's JSON "
                      "{\"record_id\", \"rubrics\": [{original_index, text, weight}]}");
  }
  RubricRow row;
  row.record_id = py::str(field(*parsed, "record_id"));
  for (const auto &r : field(*parsed, "rubrics")) {
    const J &w = field(r, "weight");
    if (!field(r, "text").is_string() || !w.is_number() || !std::isfinite(w.get<double>()) ||
        w.get<double>() == 0) {
      throw input_error("rubrichub-judge: every rubric needs a text and a finite non-zero weight");
    }
    row.rubrics.emplace_back(field(r, "text").get<std::string>(), w.get<double>());
  }
  if (row.rubrics.empty()) {
    throw input_error("rubrichub-judge: the row has no rubrics");
  }
  return row;
}

// Our own wording of the penalty-polarity instruction for negative-weight criteria.
std::string penalty_criterion(const std::string &text) {
  return "This criterion describes a flaw. Answer pass ONLY if the response shows the flaw "
         "below; answer fail if it does not. Flaw: " +
         text;
}

bool orphan_think_close(std::string_view text) {
  int open = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '<') {
      continue;
    }
    std::string head(text.substr(i, 8));
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) {
      return static_cast<char>(std::tolower(c));
    });
    if (head.rfind("<think>", 0) == 0) {
      ++open;
    } else if (head == "</think>") {
      if (open == 0) {
        return true;
      }
      --open;
    }
  }
  return false;
}

std::string final_content(const J &rollout) {
  const J *m = last_assistant(rollout);
  return m != nullptr ? message_text(*m) : std::string();
}

bool is_truncated(const J &rollout) {
  return flag(rollout, "is_truncated") || flag(state_of(rollout), "is_truncated");
}

J rubrichub_request(const Args &args,
                    const J &rollout,
                    const RubricRow &row,
                    const std::vector<std::uint64_t> &picked) {
  J rubrics = J::array();
  for (auto index : picked) {
    const auto &[text, weight] = row.rubrics[index];
    rubrics.push_back(weight < 0 ? penalty_criterion(text) : text);
  }
  return J{{"input", rubrichub_prompt_text(rollout)},
           {"output", final_content(rollout)},
           {"rubrics", rubrics},
           {"model", args.get("judge_model_path")},
           {"model_path", args.string("judge_service_model_path")}};
}

std::vector<std::uint64_t> rubrichub_pick(const Args &args, const RubricRow &row) {
  return py::rubrichub_select(
      args.integer("rubric_sample_seed"),
      row.record_id,
      row.rubrics.size(),
      static_cast<std::uint64_t>(std::max<long long>(1, args.integer("max_rubrics", 8))));
}

void rubrichub_score(const Args &args, const J &rollout, Score &score) {
  const std::string output = final_content(rollout);
  const bool orphan = orphan_think_close(output);
  const double orphan_penalty = orphan ? args.number("orphan_think_close_penalty", -0.2) : 0.0;
  J &m = score.metrics;
  m["jtc_weighted_score"] = 0.0;
  m["invalid_final_output"] = 0.0;
  m["non_terminated_policy_output"] = 0.0;
  m["orphan_think_close_tag"] = orphan ? 1.0 : 0.0;
  m["orphan_think_close_penalty"] = orphan_penalty;
  if (is_truncated(rollout)) {
    m["non_terminated_policy_output"] = 1.0;
    score.reward = args.number("non_termination_penalty", -0.25) + orphan_penalty;
    return;
  }
  if (py::strip(output).empty()) {
    m["invalid_final_output"] = 1.0;
    score.reward = args.number("invalid_output_penalty");
    return;
  }
  const RubricRow row = rubrichub_row(rollout);
  const auto picked = rubrichub_pick(args, row);
  double normalizer = 0;
  for (auto index : picked) {
    normalizer += std::max(0.0, row.rubrics[index].second);
  }
  if (normalizer <= 0) {
    throw input_error("rubrichub-judge: the sampled rubrics have no positive weight (the "
                      "reference fails such a rollout)");
  }
  const J &judgments = judgments_of(recorded(rollout, "judge_response"), "rubrichub-judge");
  if (judgments.size() != picked.size()) {
    throw input_error(fmt::format("rubrichub-judge: expected {} judgments, the judge returned {}",
                                  picked.size(),
                                  judgments.size()));
  }
  std::set<long long> seen;
  double weighted = 0;
  for (const auto &j : judgments) {
    const J &index = field(j, "rubric_index");
    if (!index.is_number_integer() || index.get<long long>() < 0 ||
        index.get<long long>() >= static_cast<long long>(picked.size()) ||
        !seen.insert(index.get<long long>()).second) {
      throw input_error("rubrichub-judge: judgments need unique in-range integer rubric_index");
    }
    const std::string label = py::casefold(py::strip(py::str(field(j, "label"))));
    if (label != "pass" && label != "fail") {
      throw input_error(fmt::format("rubrichub-judge: judgment label must be pass or fail, got {}",
                                    py::repr(field(j, "label"))));
    }
    if (label == "pass") {
      weighted += row.rubrics[picked[static_cast<size_t>(index.get<long long>())]].second;
    }
  }
  m["jtc_weighted_score"] = weighted / normalizer;
  score.reward = weighted / normalizer + orphan_penalty;
}

// search judges: whether judge_answer calls the judge at all.
bool judge_applies(const J &rollout) {
  const J *last = last_message(rollout);
  return last != nullptr && !has_tool_calls(last) && gold_answer(rollout) &&
         !py::strip(message_text(*last)).empty();
}

J search_judge_request(const Args &args, const J &rollout) {
  const J values = {{"answer", *gold_answer(rollout)}};
  std::string rubric;
  try {
    rubric = py::format(args.string("judge_rubric_template"), values);
  } catch (const py::FormatError &error) {
    throw input_error(fmt::format("judge_rubric_template: {}", error.what()));
  }
  return J{{"input", prompt_text_for_judge(rollout)},
           {"output", message_text(*last_message(rollout))},
           {"rubrics", J::array({rubric})},
           {"model", args.get("judge_model_path")},
           {"model_path", args.string("judge_service_model_path")}};
}

double judge_answer(const J &rollout, const char *env_name) {
  if (!judge_applies(rollout)) {
    return 0.0;
  }
  const J &judgments = judgments_of(recorded(rollout, "judge_response"), env_name);
  if (judgments.empty()) {
    throw input_error(fmt::format("{}: the judge returned no judgment", env_name));
  }
  const std::string label = py::casefold(py::strip(py::str(field(judgments[0], "label"))));
  if (label == "pass") {
    return 1.0;
  }
  if (label == "fail") {
    return 0.0;
  }
  throw input_error(fmt::format("{}: judge label must be pass or fail, got {}",
                                env_name,
                                py::repr(field(judgments[0], "label"))));
}

void exact_match_terms(const J &rollout, J &terms) {
  const J *last = last_message(rollout);
  std::optional<std::string> answer;
  if (last != nullptr && !has_tool_calls(last)) {
    answer = parse_final_answer(message_text(*last));
  }
  terms["final_json_format"] = answer ? 1.0 : 0.0;
  const auto gold = gold_answer(rollout);
  terms["answer_exact_match"] =
      answer && gold && py::casefold(py::strip(*answer)) == py::casefold(py::strip(*gold)) ? 1.0
                                                                                           : 0.0;
}

// ---- reward model ---------------------------------------------------------------------------

struct Calibration {
  const char *path;
  double mean;
  double std;
};

// Python PrimeBeaker's calibration table was not available to us; unknown paths use mean 0, std 1
// (docs/environments.md "reward-model").
const Calibration *calibration(const std::string &) {
  return nullptr;
}

J reward_model_request(const Args &args, const J &rollout) {
  J messages = J::array();
  const J &prompt = field(rollout, "prompt");
  if (prompt.is_string()) {
    messages.push_back({{"role", "user"}, {"content", prompt}});
  } else if (prompt.is_array()) {
    for (const auto &m : prompt) {
      J message = {{"role", field(m, "role")}, {"content", field(m, "content")}};
      if (field(m, "name").is_string()) {
        message["name"] = field(m, "name");
      }
      messages.push_back(message);
    }
  }
  const J *last = last_message(rollout);
  if (last != nullptr) {
    messages.push_back({{"role", "assistant"}, {"content", field(*last, "content")}});
  }
  J body = {{"model", args.string("reward_model_path")},
            {"messages", messages},
            {"add_generation_prompt", false}};
  if (args.get("chat_template_kwargs").is_object()) {
    body["chat_template_kwargs"] = args.get("chat_template_kwargs");
  }
  return body;
}

void reward_model_score(const Args &args, const J &rollout, Score &score) {
  const J &response = recorded(rollout, "reward_model_response");
  const J &data = field(response, "data");
  if (!data.is_array() || data.size() != 1) {
    throw input_error("reward-model: the recorded classify response (state.reward_model_response) "
                      "must have exactly one item in data");
  }
  const J &probs = field(data[0], "probs");
  const long long index = args.integer("positive_class_index");
  if (!probs.is_array() || probs.empty() || index < 0 ||
      index >= static_cast<long long>(probs.size())) {
    throw input_error("reward-model: the response's probs has no positive_class_index entry");
  }
  const J &pv = probs[static_cast<size_t>(index)];
  if (!pv.is_number() || !(pv.get<double>() >= 0.0 && pv.get<double>() <= 1.0)) {
    throw input_error("reward-model: the positive-class probability must be a number in [0, 1]");
  }
  const double p = pv.get<double>();
  double raw = p;
  if (args.string("score_transform") == "logit") {
    const double eps = args.number("logit_epsilon", 1e-7);
    const double q = std::clamp(p, eps, 1.0 - eps);
    raw = libm::log(q) - libm::log(1.0 - q);
  }
  const Calibration *cal = calibration(args.string("reward_model_path"));
  const double mean = args.boolean("center_rewards") && cal != nullptr ? cal->mean : 0.0;
  const J given_std = args.get("standardization_std");
  const double std_dev =
      given_std.is_number() ? given_std.get<double>() : (cal != nullptr ? cal->std : 1.0);
  const double value = (raw - mean) / std_dev;
  score.metrics["reward_model_score"] = finite_or_zero(value);
  score.reward = value;
  if (args.boolean("log_science_accuracy")) {
    const J *last = last_message(rollout);
    const auto got = last_choice_letter(last != nullptr ? message_text(*last) : std::string());
    const auto want = last_choice_letter(py::str(field(rollout, "answer")));
    score.metrics["accuracy"] = got && want && *got == *want ? 1.0 : 0.0;
  }
}

void add_terms(Score &score, const J &terms, double weight = 1.0) {
  for (auto it = terms.begin(); it != terms.end(); ++it) {
    const double v = finite_or_zero(it.value().get<double>());
    score.metrics[it.key()] = v;
    score.reward += weight * v;
  }
}

} // namespace

std::vector<std::string> expected_rubric_ids(const OrderedJson &rollout) {
  std::vector<const J *> places;
  for (const char *key : {"info", "task", "input"}) {
    const J &c = field(rollout, key);
    if (c.is_object()) {
      places.push_back(&c);
      if (field(c, "info").is_object()) {
        places.push_back(&field(c, "info"));
      }
    }
  }
  auto ids_of = [](const J &list) {
    std::vector<std::string> ids;
    for (const auto &v : list) {
      const std::string id = id_text(v);
      if (!id.empty()) {
        ids.push_back(id);
      }
    }
    return ids;
  };
  for (const char *key : {"expected_rubric_ids", "rubric_ids"}) {
    for (const J *place : places) {
      const J &v = field(*place, key);
      if (v.is_array() && !v.empty()) {
        return ids_of(v);
      }
    }
  }
  for (const J *place : places) {
    const J &v = field(*place, "indexed_rubrics");
    std::vector<std::string> ids;
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        ids.push_back(py::strip(it.key()));
      }
    } else if (v.is_array()) {
      for (const auto &item : v) {
        const J &id =
            field(item, "rubric_id").is_null() ? field(item, "id") : field(item, "rubric_id");
        if (!id_text(id).empty()) {
          ids.push_back(id_text(id));
        }
      }
    }
    if (!ids.empty()) {
      return ids;
    }
  }
  for (const J *place : places) {
    const std::string id = id_text(field(*place, "rubric_index"));
    if (!id.empty()) {
      return {id};
    }
  }
  return {};
}

std::optional<double> python_float(std::string_view text) {
  std::string s = py::strip(text);
  if (s.empty()) {
    return std::nullopt;
  }
  std::string lowered = py::lower(s);
  std::string_view body = lowered;
  bool negative = false;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  if (body == "nan") {
    return std::nan("");
  }
  if (body == "inf" || body == "infinity") {
    return negative ? -INFINITY : INFINITY;
  }
  // Digits with single underscores between digits, optional fraction and exponent.
  std::string clean;
  bool digits_before = false;
  bool seen_dot = false;
  bool seen_exp = false;
  bool any_digit = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      const bool ok = i > 0 && i + 1 < s.size() &&
                      std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                      std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!ok) {
        return std::nullopt;
      }
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      any_digit = true;
      digits_before = true;
    } else if (c == '.') {
      if (seen_dot || seen_exp) {
        return std::nullopt;
      }
      seen_dot = true;
    } else if (c == 'e' || c == 'E') {
      if (seen_exp || !any_digit) {
        return std::nullopt;
      }
      seen_exp = true;
      digits_before = false;
    } else if (c == '+' || c == '-') {
      if (!(i == 0 || s[i - 1] == 'e' || s[i - 1] == 'E')) {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    clean.push_back(c);
  }
  if (!any_digit || (seen_exp && !digits_before)) {
    return std::nullopt;
  }
  return std::strtod(clean.c_str(), nullptr);
}

RewardFile parse_reward_probe(std::string_view stdout_text) {
  RewardFile result;
  const auto lines = text::split(stdout_text, '\n');
  if (lines.empty() || lines.front() != reward_file_sentinel) {
    return result;
  }
  std::vector<std::string> rest(lines.begin() + 1, lines.end());
  const std::string raw = py::strip(text::join(rest, "\n"));
  result.present = true;
  const auto value = python_float(raw);
  if (!value) {
    result.error = "invalid reward file value: " + py::repr(J(raw));
    return result;
  }
  // Non-finite rewards score 0 (Python PrimeBeaker's min/max clamp turned nan into 1.0).
  result.value = std::isfinite(*value) ? std::clamp(*value, 0.0, 1.0) : 0.0;
  if (!std::isfinite(*value)) {
    result.error = "non-finite reward file value: " + py::repr(J(raw));
  }
  return result;
}

bool detail_mentions_oom(std::string_view detail) {
  const std::string lowered = py::lower(detail);
  if (lowered.find("out of memory") != std::string::npos ||
      lowered.find("oomerror") != std::string::npos) {
    return true;
  }
  for (std::string_view token : {"oom-killed", "oom_killed", "oomkilled", "oom"}) {
    for (size_t p = lowered.find(token); p != std::string::npos; p = lowered.find(token, p + 1)) {
      const bool left = p == 0 || !std::isalnum(static_cast<unsigned char>(lowered[p - 1]));
      const size_t end = p + token.size();
      const bool right =
          end >= lowered.size() || !std::isalnum(static_cast<unsigned char>(lowered[end]));
      if (left && right) {
        return true;
      }
    }
  }
  return false;
}

OrderedJson podman_failure_fields(std::string_view phase, std::string_view detail) {
  const size_t colon = detail.find(':');
  std::string type = "PodmanError";
  std::string message(detail);
  if (colon != std::string_view::npos) {
    type = py::strip(detail.substr(0, colon));
    message = py::strip(detail.substr(colon + 1));
  }
  return J{{"podman_failure", true},
           {"podman_failure_phase", phase},
           {"podman_failure_type", type},
           {"podman_failure_message", message},
           {"podman_failure_oom", detail_mentions_oom(detail)},
           {"jtc_infrastructure_failure", true}};
}

bool is_completion_command(std::string_view command, std::string_view marker) {
  const auto words = shell_split(command);
  return words && words->size() == 2 && (*words)[0] == "echo" && (*words)[1] == py::strip(marker);
}

OrderedJson service_request(const Environment &environment,
                            const OrderedJson &given,
                            const OrderedJson &rollout) {
  const Args args{environment, given};
  switch (environment.behaviour) {
  case Behaviour::rubrichub_judge: {
    if (is_truncated(rollout) || py::strip(final_content(rollout)).empty()) {
      return nullptr;
    }
    const RubricRow row = rubrichub_row(rollout);
    return rubrichub_request(args, rollout, row, rubrichub_pick(args, row));
  }
  case Behaviour::search_agent_judge:
  case Behaviour::search_visit_agent_judge:
    return judge_applies(rollout) ? search_judge_request(args, rollout) : J();
  case Behaviour::reward_model:
    return reward_model_request(args, rollout);
  default:
    return nullptr;
  }
}

Score score_rollout(const Environment &environment,
                    const OrderedJson &given,
                    const OrderedJson &rollout) {
  if (!rollout.is_object()) {
    throw input_error("a rollout record must be a JSON object");
  }
  const Args args{environment, given};
  Score score;
  J terms = J::object();
  switch (environment.behaviour) {
  case Behaviour::label: {
    const J *last = last_message(rollout);
    const auto label = last != nullptr ? parse_xml_verdict(message_text(*last)) : std::nullopt;
    terms["valid_format"] = label ? 1.0 : 0.0;
    terms["correct_label"] = label_matches(label, rollout);
    add_terms(score, terms);
    break;
  }
  case Behaviour::code_tool_label: {
    auto route = [](const J *m) -> std::string {
      if (m == nullptr) {
        return "invalid";
      }
      const std::string text = message_text(*m);
      return is_code_request(text) ? "code" : parse_xml_verdict(text) ? "final" : "invalid";
    };
    const std::string first = route(first_assistant(rollout));
    terms["valid_first_turn"] = first == "code" || first == "final" ? 1.0 : 0.0;
    const J *last = last_assistant(rollout);
    const auto label = last != nullptr ? parse_xml_verdict(message_text(*last)) : std::nullopt;
    terms["valid_final_format"] = label ? 1.0 : 0.0;
    terms["correct_final_label"] = label_matches(label, rollout);
    add_terms(score, terms);
    break;
  }
  case Behaviour::tool_label:
  case Behaviour::articulated_harness: {
    tool_terms(args, rollout, terms);
    if (environment.behaviour == Behaviour::tool_label) {
      final_terms(args, rollout, terms);
    } else {
      articulated_terms(args, rollout, terms);
    }
    add_terms(score, terms);
    browse_metrics(rollout, score.metrics);
    break;
  }
  case Behaviour::terminal_tool_label: {
    const J &state = state_of(rollout);
    const std::string route = field(state, "jtc_route").is_string()
                                  ? field(state, "jtc_route").get<std::string>()
                                  : terminal_route(last_assistant(rollout));
    terms["valid_terminal_or_final_turn"] = route == "terminal" || route == "final" ? 1.0 : 0.0;
    terms["invalid_trace_penalty_reward"] = route == "terminal" ? -1.0
                                            : route == "invalid"
                                                ? args.number("invalid_trace_penalty", -4.0)
                                                : 0.0;
    final_terms(args, rollout, terms);
    add_terms(score, terms);
    break;
  }
  case Behaviour::podman_terminal: {
    const J &state = state_of(rollout);
    J raw_score = field(state, "podman_reward_file_score");
    if (raw_score.is_null()) {
      raw_score = field(state, "podman_verifier_reward");
    }
    const double file = raw_score.is_number() && std::isfinite(raw_score.get<double>())
                            ? std::clamp(raw_score.get<double>(), 0.0, 1.0)
                            : 0.0;
    const J legacy = args.get("verifier_reward_weight");
    const double file_weight =
        legacy.is_number() ? legacy.get<double>() : args.number("reward_file_weight", 1.0);
    const double unknown = std::max(counter(state, "jtc_unknown_tool_call_count"), 0.0);
    J weighted = J::object();
    score.metrics["task_reward_file"] = file;
    score.metrics["episode_terminated"] = flag(state, "podman_terminal_complete") ? 1.0 : 0.0;
    score.metrics["podman_failed_reward"] = flag(state, "podman_failure") ? -1.0 : 0.0;
    score.metrics["fake_tool_penalty"] = -unknown;
    score.reward = file_weight * file +
                   args.number("termination_reward_weight", 0.1) *
                       score.metrics["episode_terminated"].get<double>() +
                   args.number("podman_failure_penalty_weight", 1.0) *
                       score.metrics["podman_failed_reward"].get<double>() +
                   args.number("fake_tool_penalty_weight", 0.1) * -unknown;
    const J &test_output = field(state, "podman_test_output");
    score.metrics["terminal_completion_metric"] = score.metrics["episode_terminated"];
    score.metrics["reward_file_present_metric"] =
        flag(state, "podman_reward_file_present") ? 1.0 : 0.0;
    score.metrics["podman_test_success_metric"] =
        field(test_output, "success") == J(true) || field(test_output, "exit_code") == J(0) ? 1.0
                                                                                            : 0.0;
    score.metrics["podman_failure_metric"] = flag(state, "podman_failure") ? 1.0 : 0.0;
    score.metrics["podman_oom_metric"] = flag(state, "podman_failure_oom") ? 1.0 : 0.0;
    score.metrics["fake_tool_count_metric"] = unknown;
    break;
  }
  case Behaviour::reward_model:
    reward_model_score(args, rollout, score);
    break;
  case Behaviour::multiple_choice_accuracy: {
    const J *last = last_message(rollout);
    const auto got = last_choice_letter(last != nullptr ? message_text(*last) : std::string());
    const auto want = last_choice_letter(py::str(field(rollout, "answer")));
    score.metrics["accuracy"] = got && want && *got == *want ? 1.0 : 0.0;
    break;
  }
  case Behaviour::rubrichub_judge:
    rubrichub_score(args, rollout, score);
    break;
  case Behaviour::search_agent:
  case Behaviour::search_visit_agent:
    exact_match_terms(rollout, terms);
    add_terms(score, terms);
    break;
  case Behaviour::search_agent_judge: {
    terms["judge_answer"] = judge_answer(rollout, "search-agent-webterminal-judge");
    terms["tool_stderr_penalty_reward"] =
        -args.number("tool_stderr_penalty", 0.05) *
        counter(state_of(rollout), "jtc_tool_command_error_count");
    const J *last = last_message(rollout);
    terms["missing_final_answer_penalty_reward"] =
        last == nullptr || has_tool_calls(last) || py::strip(message_text(*last)).empty()
            ? args.number("missing_final_answer_penalty", -1.0)
            : 0.0;
    add_terms(score, terms);
    break;
  }
  case Behaviour::search_visit_agent_judge:
    terms["judge_answer"] = judge_answer(rollout, "search-visit-agent-judge");
    add_terms(score, terms);
    break;
  }
  score.reward = finite_or_zero(score.reward);
  return score;
}

} // namespace pb::environments
