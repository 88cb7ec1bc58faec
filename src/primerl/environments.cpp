// SPDX-License-Identifier: MIT
#include <primebeaker/primerl/environments.hpp>

namespace pb::primerl {

const std::vector<std::string> &bundled_environment_modules() {
  static const std::vector<std::string> modules = {
      "articulated_harness_env",
      "jtc_code_tool_label_env",
      "jtc_label_env",
      "jtc_multiple_choice_accuracy_env",
      "jtc_reward_model_env",
      "jtc_rubrichub_judge_env",
      "jtc_search_agent_env",
      "jtc_search_agent_visit_env",
      "jtc_search_agent_visit_judge_env",
      "jtc_search_agent_webterminal_env",
      "jtc_search_agent_webterminal_judge_env",
      "jtc_search_visit_agent_env",
      "jtc_search_visit_agent_judge_env",
      "jtc_terminal_tool_label_env",
      "jtc_tool_label_env",
      "podman_terminal_env",
  };
  return modules;
}

} // namespace pb::primerl
