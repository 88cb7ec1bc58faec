// SPDX-License-Identifier: MIT
// What the parts of Session share (internal to environments_runtime; session.hpp is the class):
//   session.cpp             the core: state, cancellation, service calls, dispatch by family;
//   session_tool_label.cpp  tool-label, articulated-harness and podman-terminal;
//   session_podman.cpp      podman-terminal's container, bash calls and grading;
//   session_terminal.cpp    terminal-tool-label;
//   session_code.cpp        code-tool-label;
//   session_search.cpp      the search agents.
// The rules they implement: docs/environments-runtime.md, "The rollout engine".
#pragma once

#include "session.hpp"

#include <primebeaker/core/json.hpp>

#include <string>

namespace pb::environments_runtime {

// `object[key]`, or null when `object` is not an object or lacks the key.
const OrderedJson &field(const OrderedJson &object, const char *key);
// `object[key]` when it is a string, else "".
std::string string_field(const OrderedJson &object, const char *key);
// A JSON true.
bool is_true(const OrderedJson &value);
// Empty after Python's str.strip().
bool blank(const std::string &text);
// The judged output as text: a string as it is, anything else as Python's json.dumps.
std::string output_text(const OrderedJson &output);
// `block` appended to a message's content after a blank line.
std::string append_block(const std::string &content, const std::string &block);

} // namespace pb::environments_runtime
