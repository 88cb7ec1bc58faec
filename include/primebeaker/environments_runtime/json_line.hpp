// SPDX-License-Identifier: MIT
// The request parser of `environments serve --stdio` (docs/environments-runtime.md
// "Performance"): one JSON text to an OrderedJson, the values nlohmann's parser gives (integers
// >= 0 unsigned, negative signed, beyond 64 bits double; duplicate keys keep the first position
// and the last value; strict RFC 8259: no NaN, no comments, no control characters or invalid
// UTF-8 in strings, no lone surrogates), about five times faster: strings are scanned a word at a
// time and copied once, object members are moved, never copied, into place. One omission: in a
// request whose "op" ("score") comes before its "row", the row's own "prompt", "answer" and
// "completion" are checked but not kept: the scorers read the record's top-level copies, and
// the row's were a third of a single-turn score request.
#pragma once

#include <primebeaker/core/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::environments_runtime {

// Throws RequestError{"bad_request", "not JSON: <reason> at byte <offset>"}.
OrderedJson parse_json(std::string_view text);

// One request line as serve reads it: the whole text is checked at once (the same refusals and
// messages as parse_json), but a top-level member's value is built only when asked for, so a
// request answered from a few of its fields (a label score reads `completion` and `answer`)
// never builds, nor frees, the rest (the prompt, the row). build() gives what parse_json gives,
// the row's record fields of a score request left out as there. The text must outlive it.
class RequestLine {
public:
  explicit RequestLine(std::string_view text);
  ~RequestLine();
  RequestLine(const RequestLine &) = delete;
  RequestLine &operator=(const RequestLine &) = delete;

  bool is_object() const { return m_object; }
  bool contains(std::string_view key) const { return member(key) != nullptr; }
  // The member's value, built on first use; nullptr when absent. Valid until take or build.
  const OrderedJson *find(std::string_view key);
  // A string member's text, without building it, when it has no escapes; nullopt otherwise
  // (absent, not a string, or escaped: ask find()).
  std::optional<std::string_view> plain_string(std::string_view key) const;
  // The member's text as sent (checked JSON), or nullopt when absent.
  std::optional<std::string_view> text(std::string_view key) const;
  // Moves the member's value out (built if it was not), or gives `fallback` when absent.
  OrderedJson take(std::string_view key, OrderedJson fallback);
  // The whole value, as parse_json(text) gives it; members taken before are null.
  OrderedJson build();

  struct Member {
    std::string key;
    const char *begin; // the value's text
    const char *end;
    bool score_row; // "row" after "op": "score": its record fields are not built
    std::optional<OrderedJson> value;
  };

private:
  const Member *member(std::string_view key) const;
  Member *member(std::string_view key);
  OrderedJson materialize(const Member &member) const;

  std::string_view m_text;
  bool m_object = false;
  OrderedJson m_whole; // when the text is not an object
  std::vector<Member> m_members;
};

} // namespace pb::environments_runtime
