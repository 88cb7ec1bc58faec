// SPDX-License-Identifier: MIT
// The public edit functions, and verification: before an edit returns, toml++ (and, unless the
// caller gave up the document, our own parser) must read the new text as exactly the intended
// meaning (docs/toml.md, "Verification").
#include "edit_internal.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/toml/format.hpp>
#include <primebeaker/toml/reference.hpp>

#include <fmt/format.h>

#include <optional>

namespace pb::toml {

namespace {

using detail::Outcome;

// The checked result of an edit: the text, and when asked for, its parsed document.
struct Checked {
  std::string text;
  std::optional<Document> document;
};

// Verification: toml++ (an independent parser) must read the new text as exactly the intended
// meaning; with `reparse`, our own parser must too (and its document is returned).
Checked verified(const Document &doc, const Outcome &outcome, std::string_view what, bool reparse) {
  const Value expected = detail::expected_value(doc, outcome.changes);
  std::string text = detail::apply(doc.text(), outcome.splices);
  auto refuse = [&](const std::string &why) {
    return failure(fmt::format("{}: edit verification failed, nothing written: {}", what, why));
  };
  Checked out;
  if (reparse) {
    try {
      out.document = Document::parse(text, doc.source_name());
    } catch (const Error &e) {
      throw refuse(fmt::format("the result would not be valid TOML ({})", e.what()));
    }
    if (!semantically_equal(out.document->root(), expected)) {
      throw refuse("the result would not mean what was asked");
    }
  }
  std::string why;
  if (!reference_matches(expected, text, why)) {
    throw refuse(why);
  }
  out.text = std::move(text);
  return out;
}

struct EditRequest {
  std::vector<Splice> *splices = nullptr;
  bool reparse = true;
};

KeyPath set_path(std::string_view path_text) {
  KeyPath path = KeyPath::parse(path_text);
  if (path.steps.empty()) {
    throw usage_error("cannot set the document root; name a key");
  }
  return path;
}

// plan_unset, except that with `if_exists` a missing key plans no change.
Outcome plan_unset_if(const Document &doc, const KeyPath &path, UnsetOptions options) {
  try {
    return detail::plan_unset(doc, path, options.prune);
  } catch (const Error &e) {
    if (options.if_exists && e.code() == static_cast<int>(ExitCode::failure)) {
      return {};
    }
    throw;
  }
}

Checked set_document(const Document &doc,
                     std::string_view path_text,
                     std::string_view literal,
                     EditRequest request) {
  const KeyPath path = set_path(path_text);
  const Outcome outcome = detail::plan_set(doc, path, detail::parse_literal(literal));
  if (request.splices != nullptr) {
    *request.splices = outcome.splices;
  }
  return verified(doc, outcome, fmt::format("set {}", path.text()), request.reparse);
}

Checked unset_document(const Document &doc,
                       std::string_view path_text,
                       UnsetOptions options,
                       EditRequest request) {
  const KeyPath path = KeyPath::parse(path_text);
  const Outcome outcome = plan_unset_if(doc, path, options);
  if (outcome.changes.empty()) {
    return {doc.text(), doc}; // --if-exists and no such key
  }
  if (request.splices != nullptr) {
    *request.splices = outcome.splices;
  }
  return verified(doc, outcome, fmt::format("unset {}", path.text()), request.reparse);
}

} // namespace

namespace detail {

void edit_file(Document &&loaded,
               const std::filesystem::path &target,
               const std::string &what,
               const Planner &plan,
               const std::function<void()> &before_write) {
  const std::filesystem::path source = loaded.source_name();
  // Stage 1: our document, the plan and the intended meaning's fingerprint; the new text goes
  // straight to the temporary file. The document is freed when the block ends.
  std::optional<fs::AtomicWriter> writer;
  std::string expected;
  bool unchanged = false;
  {
    const Document doc = std::move(loaded);
    const Outcome outcome = plan(doc);
    if (before_write) {
      before_write();
    }
    writer.emplace(target);
    for_each_piece(
        doc.text(), outcome.splices, [&](std::string_view piece) { writer->write(piece); });
    unchanged = outcome.changes.empty(); // unset --if-exists of a missing key
    if (!unchanged) {
      expected = expected_fingerprint(doc, outcome.changes);
    }
  }
  // Stage 2: toml++ reads what was written; its meaning must be the intended one.
  if (!unchanged) {
    // toml++ reads the temporary through a small buffer: only its DOM is held.
    if (reference_fingerprint_file(writer->temporary_path()) != expected) {
      // Rare: redo the edit in memory for the comparison that names the difference (it throws
      // unless only the fingerprints disagree, and then its verified text is written).
      writer->abandon();
      const Document doc = Document::load(source);
      const Outcome outcome = plan(doc);
      fs::write_file_atomic(target, verified(doc, outcome, what, false).text);
      return;
    }
  }
  writer->commit();
}

} // namespace detail

Value parse_value_literal(std::string_view literal) {
  return *detail::parse_literal(literal).value;
}

std::string set(const Document &doc, std::string_view path, std::string_view literal) {
  return set_document(doc, path, literal, {}).text;
}

std::string set(Document &&doc, std::string_view path, std::string_view literal) {
  const Document owned = std::move(doc);
  return set_document(owned, path, literal, {nullptr, false}).text;
}

std::string set_string(const Document &doc, std::string_view path, std::string_view text) {
  return set_document(doc, path, quote_string(text), {}).text;
}

std::string unset(const Document &doc, std::string_view path, UnsetOptions options) {
  return unset_document(doc, path, options, {}).text;
}

std::string unset(Document &&doc, std::string_view path, UnsetOptions options) {
  const Document owned = std::move(doc);
  return unset_document(owned, path, options, {nullptr, false}).text;
}

EditResult set_detailed(const Document &doc, std::string_view path, std::string_view literal) {
  EditResult result;
  result.text = set_document(doc, path, literal, {&result.splices}).text;
  return result;
}

EditResult unset_detailed(const Document &doc, std::string_view path, UnsetOptions options) {
  EditResult result;
  result.text = unset_document(doc, path, options, {&result.splices}).text;
  return result;
}

void set_file(Document &&loaded,
              const std::filesystem::path &target,
              std::string_view path_text,
              std::string_view literal,
              const std::function<void()> &before_write) {
  const KeyPath path = set_path(path_text);
  const detail::Literal value = detail::parse_literal(literal);
  detail::edit_file(
      std::move(loaded),
      target,
      fmt::format("set {}", path.text()),
      [&](const Document &doc) { return detail::plan_set(doc, path, value); },
      before_write);
}

void unset_file(Document &&loaded,
                const std::filesystem::path &target,
                std::string_view path_text,
                UnsetOptions options,
                const std::function<void()> &before_write) {
  const KeyPath path = KeyPath::parse(path_text);
  detail::edit_file(
      std::move(loaded),
      target,
      fmt::format("unset {}", path.text()),
      [&](const Document &doc) { return plan_unset_if(doc, path, options); },
      before_write);
}

Editor &Editor::set(std::string_view path, std::string_view literal) {
  m_doc = std::move(*set_document(m_doc, path, literal, {}).document);
  return *this;
}

Editor &Editor::set_string(std::string_view path, std::string_view text) {
  m_doc = std::move(*set_document(m_doc, path, quote_string(text), {}).document);
  return *this;
}

Editor &Editor::unset(std::string_view path, UnsetOptions options) {
  m_doc = std::move(*unset_document(m_doc, path, options, {}).document);
  return *this;
}

} // namespace pb::toml