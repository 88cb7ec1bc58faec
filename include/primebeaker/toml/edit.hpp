// SPDX-License-Identifier: MIT
// Key paths, lookups and lossless edits of TOML documents.
//
// Every edit is a splice into the original text: bytes outside the replaced ranges never
// change. New text copies the style of its neighbours (indentation, spacing around '=',
// line endings, array layout). Before an edit returns, the result is re-parsed by our parser and
// by toml++ and compared with the intended meaning; on any mismatch nothing is returned and
// pb::Error (exit 1) is thrown. Rules: docs/toml.md.
#pragma once

#include <primebeaker/toml/value.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::toml {

// One step of a key path: a key, `[n]` (negative counts from the end), `[+]` (append, set only)
// or `[*]` (every element, get only).
struct PathStep {
  enum class Kind : std::uint8_t { key, index, append, all };
  Kind kind = Kind::key;
  std::string key;
  std::int64_t index = 0;
};

// A key path in TOML's dotted-key syntax plus brackets: `a.b`, `"a.b".c`, `bin[0].name`,
// `deps[+]`, `deps[-1]`; "" or "." is the document root.
struct KeyPath {
  std::vector<PathStep> steps;

  // Throws pb::Error (exit 2) naming the column of a syntax error.
  static KeyPath parse(std::string_view text);
  // The path written back in the same syntax (keys quoted only when needed).
  std::string text() const;
};

// The values at `path` (several for `[*]`). Throws pb::Error exit 1 when a key is missing.
std::vector<const Value *> lookup(const Document &doc, const KeyPath &path);

// The exact source bytes that define the value at `path`: the value's text for values, the
// header and body lines for tables (and the whole text for the root).
std::string source_text(const Document &doc, const KeyPath &path);

// Parses one TOML value literal (`8080`, `"text"`, `[1, 2]`); throws pb::Error exit 2 with a
// hint (quote it, or use -s) when it is not one.
Value parse_value_literal(std::string_view literal);

// Sets `path` to the TOML value literal `literal` (`8080`, `"text"`, `[1, 2]`, `{ a = 1 }`),
// creating missing tables, and returns the new document text. A bad path or literal is exit 2,
// a path through a non-table (setting `a.b` where `a` is an integer) exit 2, a failed
// verification exit 1.
std::string set(const Document &doc, std::string_view path, std::string_view literal);
// The same, consuming `doc` (saves copying its values for the verification on big files).
std::string set(Document &&doc, std::string_view path, std::string_view literal);

// Like set(), with `text` stored as a string.
std::string set_string(const Document &doc, std::string_view path, std::string_view text);

struct UnsetOptions {
  bool if_exists = false; // a missing key is not an error (the text comes back unchanged)
  bool prune = false;     // also remove [tables] the removal leaves empty
};

// Removes the key at `path` together with the comments it owns (docs/toml.md) and returns the
// new text. A missing key is exit 1 unless if_exists.
std::string unset(const Document &doc, std::string_view path, UnsetOptions options = {});
std::string unset(Document &&doc, std::string_view path, UnsetOptions options = {});

// set() and unset() of a file `loaded` as Document::load() read it, written atomically to
// `target` (which may be that file), at about the peak memory of one parse: the new text is
// streamed into a temporary sibling of `target`, the document is freed, and toml++ must read the
// temporary as the intended meaning (compared by meaning_fingerprint()) before it is renamed over
// `target`. Nothing is written on any failure; errors are those of set() and unset() plus
// fs::write_file_atomic()'s. `before_write` runs once the edit is planned, before anything is
// created (e.g. to refuse a read-only target).
void set_file(Document &&loaded,
              const std::filesystem::path &target,
              std::string_view path,
              std::string_view literal,
              const std::function<void()> &before_write = {});
void unset_file(Document &&loaded,
                const std::filesystem::path &target,
                std::string_view path,
                UnsetOptions options = {},
                const std::function<void()> &before_write = {});

// One replacement of the original bytes [begin, end) by `text`.
struct Splice {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::string text;
};

// An edit's result with the splices that produced it (sorted, non-overlapping, in the original
// text's offsets): applying them to the original gives `text`. For tests and diff displays.
struct EditResult {
  std::string text;
  std::vector<Splice> splices;
};
EditResult set_detailed(const Document &doc, std::string_view path, std::string_view literal);
EditResult unset_detailed(const Document &doc, std::string_view path, UnsetOptions options = {});

// Several edits in a row on one document, e.g. for rewriting many keys:
//   std::string text = Editor(doc).set("ckpt.resume_step", "500").unset("wandb.id").text();
class Editor {
public:
  explicit Editor(Document doc) : m_doc(std::move(doc)) {}
  Editor &set(std::string_view path, std::string_view literal);
  Editor &set_string(std::string_view path, std::string_view text);
  Editor &unset(std::string_view path, UnsetOptions options = {});
  const std::string &text() const { return m_doc.text(); }
  const Document &document() const { return m_doc; }

private:
  Document m_doc;
};

} // namespace pb::toml
