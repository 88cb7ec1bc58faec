// SPDX-License-Identifier: MIT
// Tool-call, verdict and pipeline parsing (docs/environments.md "Tool calls", "Verdicts").
// Regular expressions of Python PrimeBeaker are written out as scanners with the same matching
// order (non-greedy, first match), which is both exact and fast.
#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments/python.hpp>

#include <algorithm>
#include <cctype>

namespace pb::environments {
namespace {

using J = OrderedJson;

char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

// ASCII case-insensitive find.
size_t ifind(std::string_view text, std::string_view needle, size_t from = 0) {
  if (needle.empty()) {
    return from <= text.size() ? from : std::string_view::npos;
  }
  for (size_t i = from; i + needle.size() <= text.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && ascii_lower(text[i + k]) == ascii_lower(needle[k])) {
      ++k;
    }
    if (k == needle.size()) {
      return i;
    }
  }
  return std::string_view::npos;
}

bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

size_t skip_ws(std::string_view text, size_t i) {
  while (i < text.size() && ascii_space(text[i])) {
    ++i;
  }
  return i;
}

// Removes every non-greedy <open>...<close> block (ASCII case-insensitive when `nocase`).
std::string
remove_blocks(std::string_view text, std::string_view open, std::string_view close, bool nocase) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t start = nocase ? ifind(text, open, pos) : text.find(open, pos);
    if (start == std::string_view::npos) {
      break;
    }
    const size_t end =
        nocase ? ifind(text, close, start + open.size()) : text.find(close, start + open.size());
    if (end == std::string_view::npos) {
      break;
    }
    out.append(text.substr(pos, start - pos));
    pos = end + close.size();
  }
  out.append(text.substr(pos));
  return out;
}

// The first <open>...</close> body, or nullopt.
std::optional<std::string_view>
first_block(std::string_view text, std::string_view open, std::string_view close) {
  const size_t start = ifind(text, open);
  if (start == std::string_view::npos) {
    return std::nullopt;
  }
  const size_t body = start + open.size();
  const size_t end = ifind(text, close, body);
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  return text.substr(body, end - body);
}

J coerce_arguments(const J *arguments) {
  if (arguments == nullptr || arguments->is_null()) {
    return J::object();
  }
  if (arguments->is_object()) {
    return *arguments;
  }
  if (arguments->is_string()) {
    const std::string &raw = arguments->get_ref<const std::string &>();
    if (auto parsed = py::try_loads(py::strip(raw))) {
      if (parsed->is_object()) {
        return *parsed;
      }
      return J{{"raw", *parsed}};
    }
    return J{{"raw", raw}};
  }
  return J{{"raw", *arguments}};
}

std::optional<J> first_json_value(std::string_view text) {
  // A fenced block first (optionally labelled json).
  const size_t fence = text.find("```");
  if (fence != std::string_view::npos) {
    size_t body = fence + 3;
    if (ifind(text.substr(body, 4), "json") == 0) {
      body += 4;
    }
    const size_t end = text.find("```", body);
    if (end != std::string_view::npos) {
      if (auto v = py::try_loads(py::strip(text.substr(body, end - body)))) {
        return v;
      }
    }
  }
  if (auto v = py::try_loads(text)) {
    return v;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{' && text[i] != '[') {
      continue;
    }
    int depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (size_t k = i; k < text.size(); ++k) {
      const char c = text[k];
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          if (auto v = py::try_loads(text.substr(i, k - i + 1))) {
            return v;
          }
          break;
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<Verdict> verdict_of(const J &value) {
  if (!value.is_object() || value.size() != 2 || !value.contains("feedback") ||
      !value.contains("label")) {
    return std::nullopt;
  }
  const J &feedback = value.at("feedback");
  const J &label = value.at("label");
  if (!feedback.is_string() || !label.is_string() ||
      py::strip(feedback.get_ref<const std::string &>()).empty() ||
      py::strip(label.get_ref<const std::string &>()).empty()) {
    return std::nullopt;
  }
  return Verdict{feedback.get<std::string>(), label.get<std::string>()};
}

bool is_word_byte(unsigned char c) {
  return std::isalnum(c) || c == '_' || c >= 0x80;
}

} // namespace

OrderedJson to_json(const ToolCall &call) {
  J out;
  if (!call.id.empty()) {
    out["id"] = call.id;
  }
  out["name"] = call.name;
  out["arguments"] = call.arguments;
  return out;
}

std::optional<std::vector<ToolCall>> parse_structured_calls(const OrderedJson &message) {
  if (!message.is_object() || !message.contains("tool_calls")) {
    return std::nullopt;
  }
  const J &calls = message.at("tool_calls");
  if (!calls.is_array() || calls.empty()) {
    return std::nullopt;
  }
  std::vector<ToolCall> out;
  for (const auto &call : calls) {
    if (!call.is_object()) {
      return std::nullopt;
    }
    const J &fn =
        call.contains("function") && call.at("function").is_object() ? call.at("function") : call;
    if (!fn.contains("name") || !fn.at("name").is_string()) {
      return std::nullopt;
    }
    ToolCall parsed;
    parsed.name = py::strip(fn.at("name").get_ref<const std::string &>());
    if (parsed.name.empty()) {
      return std::nullopt;
    }
    const J *arguments = fn.contains("arguments") ? &fn.at("arguments") : nullptr;
    if (arguments == nullptr || arguments->is_null()) {
      parsed.arguments = J::object();
    } else if (arguments->is_object()) {
      parsed.arguments = *arguments;
    } else if (arguments->is_string()) {
      auto value = py::try_loads(arguments->get_ref<const std::string &>());
      if (!value || !value->is_object()) {
        return std::nullopt;
      }
      parsed.arguments = std::move(*value);
    } else {
      return std::nullopt;
    }
    if (call.contains("id") && call.at("id").is_string()) {
      parsed.id = call.at("id").get<std::string>();
    }
    out.push_back(std::move(parsed));
  }
  return out;
}

std::vector<ToolCall> parse_qwen_json_calls(std::string_view text) {
  static constexpr std::string_view open = "<tool_call>";
  static constexpr std::string_view close = "</tool_call>";
  std::vector<ToolCall> calls;
  size_t pos = 0;
  while (true) {
    const size_t start = text.find(open, pos);
    if (start == std::string_view::npos) {
      break;
    }
    const size_t brace = skip_ws(text, start + open.size());
    size_t match_end = std::string_view::npos;
    size_t object_end = 0;
    if (brace < text.size() && text[brace] == '{') {
      for (size_t k = text.find('}', brace); k != std::string_view::npos;
           k = text.find('}', k + 1)) {
        const size_t after = skip_ws(text, k + 1);
        if (text.substr(after, close.size()) == close) {
          object_end = k + 1;
          match_end = after + close.size();
          break;
        }
      }
    }
    if (match_end == std::string_view::npos) {
      pos = start + 1;
      continue;
    }
    pos = match_end;
    const auto value = py::try_loads(text.substr(brace, object_end - brace));
    if (!value || !value->is_object() || !value->contains("name") || !truthy(value->at("name"))) {
      continue;
    }
    ToolCall call;
    call.name = py::str(value->at("name"));
    call.arguments =
        coerce_arguments(value->contains("arguments") ? &value->at("arguments") : nullptr);
    calls.push_back(std::move(call));
  }
  return calls;
}

std::vector<ToolCall> parse_qwen_xml_calls(std::string_view text) {
  static constexpr std::string_view open = "<tool_call>";
  static constexpr std::string_view function = "<function=";
  static constexpr std::string_view end_function = "</function>";
  static constexpr std::string_view close = "</tool_call>";
  std::vector<ToolCall> calls;
  size_t pos = 0;
  while (true) {
    const size_t start = text.find(open, pos);
    if (start == std::string_view::npos) {
      break;
    }
    size_t i = skip_ws(text, start + open.size());
    size_t name_end = i + function.size();
    bool ok = text.substr(i, function.size()) == function;
    if (ok) {
      while (name_end < text.size() && text[name_end] != '>' && !ascii_space(text[name_end])) {
        ++name_end;
      }
      ok = name_end < text.size() && text[name_end] == '>' && name_end > i + function.size();
    }
    size_t body_end = std::string_view::npos;
    size_t match_end = 0;
    size_t body_start = 0;
    if (ok) {
      body_start = skip_ws(text, name_end + 1);
      for (size_t k = text.find(end_function, body_start); k != std::string_view::npos;
           k = text.find(end_function, k + 1)) {
        const size_t after = skip_ws(text, k + end_function.size());
        if (text.substr(after, close.size()) == close) {
          body_end = k;
          match_end = after + close.size();
          break;
        }
      }
    }
    if (body_end == std::string_view::npos) {
      pos = start + 1;
      continue;
    }
    pos = match_end;
    ToolCall call;
    call.name = std::string(text.substr(i + function.size(), name_end - i - function.size()));
    const std::string_view body = text.substr(body_start, body_end - body_start);
    static constexpr std::string_view param = "<parameter=";
    static constexpr std::string_view end_param = "</parameter>";
    for (size_t p = body.find(param); p != std::string_view::npos;) {
      const size_t key_end = body.find('>', p + param.size());
      if (key_end == std::string_view::npos || key_end == p + param.size()) {
        p = body.find(param, p + 1);
        continue;
      }
      const size_t value_end = body.find(end_param, key_end + 1);
      if (value_end == std::string_view::npos) {
        break;
      }
      const std::string key = py::strip(body.substr(p + param.size(), key_end - p - param.size()));
      const std::string raw = py::strip(body.substr(key_end + 1, value_end - key_end - 1));
      auto value = py::try_loads(raw);
      call.arguments[key] = value ? *value : J(raw);
      p = body.find(param, value_end + end_param.size());
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

std::vector<ToolCall> parse_qwen_tool_calls(std::string_view text) {
  auto calls = parse_qwen_json_calls(text);
  if (!calls.empty()) {
    return calls;
  }
  return parse_qwen_xml_calls(text);
}

std::string message_text(const OrderedJson &message) {
  if (!message.is_object() || !message.contains("content")) {
    return {};
  }
  const J &content = message.at("content");
  if (content.is_string()) {
    return content.get<std::string>();
  }
  std::string out;
  if (content.is_array()) {
    for (const auto &part : content) {
      if (part.is_object() && part.contains("text") && part.at("text").is_string()) {
        out += part.at("text").get<std::string>();
      }
    }
  }
  return out;
}

std::string message_reasoning(const OrderedJson &message) {
  if (message.is_object()) {
    for (const char *key : {"reasoning_content", "reasoning"}) {
      if (message.contains(key) && message.at(key).is_string() &&
          !message.at(key).get_ref<const std::string &>().empty()) {
        return message.at(key).get<std::string>();
      }
    }
  }
  return parse_qwen_thinking(message_text(message));
}

std::vector<ToolCall> extract_tool_calls(const OrderedJson &message) {
  if (auto structured = parse_structured_calls(message)) {
    return *structured;
  }
  return parse_qwen_tool_calls(message_text(message));
}

std::string parse_qwen_thinking(std::string_view text) {
  if (auto body = first_block(text, "<think>", "</think>")) {
    return py::strip(*body);
  }
  if (auto body = first_block(text, "<redacted_thinking>", "</redacted_thinking>")) {
    return py::strip(*body);
  }
  const size_t close = ifind(text, "</think>");
  if (close != std::string_view::npos) {
    return py::strip(text.substr(0, close));
  }
  return {};
}

std::string strip_qwen_special_blocks(std::string_view text) {
  std::string out = remove_blocks(text, "<think>", "</think>", true);
  out = remove_blocks(out, "<redacted_thinking>", "</redacted_thinking>", true);
  out = remove_blocks(out, "<tool_call>", "</tool_call>", false);
  for (std::string_view token : {"<|im_end|>", "<|endoftext|>", "<|return|>"}) {
    for (size_t p = ifind(out, token); p != std::string_view::npos; p = ifind(out, token, p)) {
      out.erase(p, token.size());
    }
  }
  size_t last = std::string::npos;
  for (size_t p = ifind(out, "</think>"); p != std::string_view::npos;
       p = ifind(out, "</think>", p + 1)) {
    last = p;
  }
  if (last != std::string::npos) {
    out = out.substr(last + 8);
  }
  return py::strip(out);
}

std::optional<Verdict> parse_final_verdict(std::string_view text) {
  const std::string visible = strip_qwen_special_blocks(text);
  if (auto value = first_json_value(visible)) {
    return verdict_of(*value);
  }
  return std::nullopt;
}

std::optional<Verdict> parse_strict_verdict(std::string_view text) {
  if (auto value = py::try_loads(strip_qwen_special_blocks(text))) {
    return verdict_of(*value);
  }
  return std::nullopt;
}

std::vector<std::string> find_tag_bodies(std::string_view text, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  std::vector<std::string> bodies;
  size_t pos = 0;
  while (true) {
    const size_t start = ifind(text, open, pos);
    if (start == std::string_view::npos) {
      break;
    }
    const size_t end = ifind(text, close, start + open.size());
    if (end == std::string_view::npos) {
      break;
    }
    bodies.push_back(py::strip(text.substr(start + open.size(), end - start - open.size())));
    pos = end + close.size();
  }
  return bodies;
}

std::optional<std::string> parse_xml_verdict(std::string_view text) {
  const auto feedback = find_tag_bodies(text, "feedback");
  const auto label = find_tag_bodies(text, "label");
  if (feedback.size() != 1 || label.size() != 1 || feedback[0].empty() || label[0].empty()) {
    return std::nullopt;
  }
  return label[0];
}

std::string extract_code(std::string_view text) {
  const auto bodies = find_tag_bodies(text, "code");
  auto unfence = [](std::string_view body, bool require_python) -> std::optional<std::string> {
    const size_t fence = body.find("```");
    if (fence == std::string_view::npos) {
      return std::nullopt;
    }
    const size_t line_end = body.find('\n', fence);
    if (line_end == std::string_view::npos) {
      return std::nullopt;
    }
    const std::string lang = py::lower(py::strip(body.substr(fence + 3, line_end - fence - 3)));
    if (lang != "python" && lang != "py" && (require_python || !lang.empty())) {
      return std::nullopt;
    }
    const size_t close = body.find("```", line_end + 1);
    if (close == std::string_view::npos) {
      return std::nullopt;
    }
    return py::strip(body.substr(line_end + 1, close - line_end - 1));
  };
  if (!bodies.empty()) {
    const std::string &last = bodies.back();
    if (auto code = unfence(last, false)) {
      return *code;
    }
    return last;
  }
  // The last plain python/py/untagged fence.
  std::optional<std::string> found;
  for (size_t p = text.find("```"); p != std::string_view::npos;) {
    if (auto code = unfence(text.substr(p), false)) {
      found = code;
    }
    const size_t next_line = text.find('\n', p);
    if (next_line == std::string_view::npos) {
      break;
    }
    const size_t close = text.find("```", next_line);
    if (close == std::string_view::npos) {
      break;
    }
    p = text.find("```", close + 3);
  }
  return found.value_or("");
}

bool is_code_request(std::string_view text) {
  const std::string stripped = py::strip(text);
  std::string_view s = stripped;
  size_t count = 0;
  for (size_t p = ifind(s, "<code>"); p != std::string_view::npos; p = ifind(s, "<code>", p + 1)) {
    ++count;
  }
  if (count != 1 || ifind(s, "<code>") != 0 || s.size() < 13 ||
      ifind(s.substr(s.size() - 7), "</code>") != 0) {
    return false;
  }
  const std::string inner = py::strip(s.substr(6, s.size() - 13));
  std::string_view body = inner;
  if (body.substr(0, 3) != "```" || body.size() < 6 || body.substr(body.size() - 3) != "```") {
    return false;
  }
  const size_t line_end = body.find('\n');
  if (line_end == std::string_view::npos) {
    return false;
  }
  const std::string lang = py::lower(py::strip(body.substr(3, line_end - 3)));
  if (lang != "python" && lang != "py") {
    return false;
  }
  const std::string_view code = body.substr(line_end + 1, body.size() - 3 - line_end - 1);
  if (py::strip(code).empty()) {
    return false;
  }
  return !extract_code(stripped).empty();
}

std::optional<std::string> parse_final_answer(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && ascii_space(s.back())) {
    s.remove_suffix(1);
  }
  if (s.size() < 6 || s.substr(s.size() - 3) != "```") {
    return std::nullopt;
  }
  const std::string_view head = s.substr(0, s.size() - 3);
  size_t open = std::string_view::npos;
  for (size_t p = ifind(head, "```json"); p != std::string_view::npos;
       p = ifind(head, "```json", p + 1)) {
    open = p;
  }
  if (open == std::string_view::npos) {
    return std::nullopt;
  }
  const auto value = py::try_loads(head.substr(open + 7));
  if (!value || !value->is_object() || value->size() != 1 || !value->contains("answer") ||
      !value->at("answer").is_string() ||
      py::strip(value->at("answer").get_ref<const std::string &>()).empty()) {
    return std::nullopt;
  }
  return value->at("answer").get<std::string>();
}

std::optional<char> last_choice_letter(std::string_view text) {
  std::optional<char> last;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 'A' || c > 'J') {
      continue;
    }
    const bool left = i == 0 || !is_word_byte(static_cast<unsigned char>(text[i - 1]));
    const bool right =
        i + 1 == text.size() || !is_word_byte(static_cast<unsigned char>(text[i + 1]));
    if (left && right) {
      last = static_cast<char>(c);
    }
  }
  return last;
}

namespace {

// Python's shlex in posix mode. `punctuation` enables punctuation_chars="();<>|&" (with the
// extra word characters it implies) and '#' comments; whitespace_split is always on.
struct Shlex {
  std::string_view s;
  bool punctuation = false;
  size_t i = 0;
  bool error = false;

  static bool is_punct(char c) {
    return std::string_view("();<>|&").find(c) != std::string_view::npos;
  }
  bool is_comment(char c) const { return punctuation && c == '#'; }

  std::optional<std::string> next() {
    std::string token;
    bool quoted = false;
    char state = ' ';
    char escaped_state = 'a';
    while (true) {
      const bool eof = i >= s.size();
      const char c = eof ? '\0' : s[i];
      if (state == ' ') {
        if (eof) {
          break;
        }
        ++i;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
          if (!token.empty() || quoted) {
            break;
          }
        } else if (is_comment(c)) {
          skip_line();
        } else if (c == '\\') {
          escaped_state = 'a';
          state = '\\';
        } else if (punctuation && is_punct(c)) {
          token.push_back(c);
          state = 'c';
        } else if (c == '\'' || c == '"') {
          state = c;
        } else {
          token.push_back(c);
          state = 'a';
        }
      } else if (state == '\'' || state == '"') {
        quoted = true;
        if (eof) {
          error = true;
          return std::nullopt;
        }
        ++i;
        if (c == state) {
          state = 'a';
        } else if (c == '\\' && state == '"') {
          escaped_state = state;
          state = '\\';
        } else {
          token.push_back(c);
        }
      } else if (state == '\\') {
        if (eof) {
          error = true;
          return std::nullopt;
        }
        ++i;
        if ((escaped_state == '"' || escaped_state == '\'') && c != escaped_state && c != '\\') {
          token.push_back('\\');
        }
        token.push_back(c);
        state = escaped_state;
      } else { // 'a' or 'c'
        if (eof) {
          break;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
          ++i;
          state = ' ';
          if (!token.empty() || quoted) {
            break;
          }
        } else if (is_comment(c)) {
          ++i;
          skip_line();
          state = ' ';
          if (!token.empty() || quoted) {
            break;
          }
        } else if (state == 'c') {
          if (is_punct(c)) {
            ++i;
            token.push_back(c);
          } else {
            break; // pushed back: starts the next token
          }
        } else if (c == '\'' || c == '"') {
          ++i;
          state = c;
        } else if (c == '\\') {
          ++i;
          escaped_state = 'a';
          state = '\\';
        } else if (punctuation && is_punct(c)) {
          break; // pushed back
        } else {
          ++i;
          token.push_back(c);
        }
      }
    }
    if (token.empty() && !quoted) {
      return std::nullopt;
    }
    return token;
  }

  void skip_line() {
    while (i < s.size() && s[i] != '\n') {
      ++i;
    }
    if (i < s.size()) {
      ++i;
    }
  }
};

std::optional<std::vector<std::string>> shlex_all(std::string_view command, bool punctuation) {
  Shlex lexer{command, punctuation};
  std::vector<std::string> tokens;
  while (auto token = lexer.next()) {
    tokens.push_back(std::move(*token));
  }
  if (lexer.error) {
    return std::nullopt;
  }
  return tokens;
}

std::string basename(const std::string &word) {
  const size_t slash = word.rfind('/');
  return slash == std::string::npos ? word : word.substr(slash + 1);
}

} // namespace

std::optional<std::vector<std::string>> shell_split(std::string_view command) {
  return shlex_all(command, false);
}

std::vector<std::string> pipeline_stage_names(std::string_view command) {
  const auto tokens = shlex_all(command, true);
  std::vector<std::string> names;
  if (!tokens) {
    const auto words = py::split(command);
    if (!words.empty()) {
      names.push_back(basename(words.front()));
    }
    return names;
  }
  bool at_start = true;
  for (const auto &token : *tokens) {
    const bool separator = !token.empty() && token.find_first_not_of("|;&()") == std::string::npos;
    if (separator) {
      at_start = true;
      continue;
    }
    if (at_start) {
      names.push_back(basename(token));
      at_start = false;
    }
  }
  return names;
}

std::vector<std::string> extract_urls(std::string_view text) {
  std::vector<std::string> urls;
  for (size_t p = text.find("http"); p != std::string_view::npos; p = text.find("http", p + 1)) {
    size_t scheme_end = 0;
    if (text.substr(p, 7) == "http://") {
      scheme_end = p + 7;
    } else if (text.substr(p, 8) == "https://") {
      scheme_end = p + 8;
    } else {
      continue;
    }
    size_t end = scheme_end;
    while (end < text.size() && !ascii_space(text[end]) &&
           std::string_view("<>\"'").find(text[end]) == std::string_view::npos) {
      ++end;
    }
    std::string url(text.substr(p, end - p));
    while (!url.empty() && std::string_view(".,;!?").find(url.back()) != std::string_view::npos) {
      url.pop_back();
    }
    if (url.size() > scheme_end - p) {
      urls.push_back(url);
    }
    p = end > p ? end - 1 : p;
  }
  return urls;
}

} // namespace pb::environments
