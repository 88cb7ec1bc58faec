// SPDX-License-Identifier: MIT
// The public edit functions, and verification: before an edit returns, toml++ (and, unless the
// caller gave up the document, our own parser) must read the new text as exactly the intended
// meaning (docs/toml.md, "Verification").
#include "edit_internal.hpp"

#include <primebeaker/core/error.hpp>
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
Checked verified(const Document &doc, Outcome outcome, std::string_view what, bool reparse) {
  auto refuse = [&](const std::string &why) {
    return failure(fmt::format("{}: edit verification failed, nothing written: {}", what, why));
  };
  Checked out;
  if (reparse) {
    try {
      out.document = Document::parse(outcome.text, doc.source_name());
    } catch (const Error &e) {
      throw refuse(fmt::format("the result would not be valid TOML ({})", e.what()));
    }
    if (!semantically_equal(out.document->root(), outcome.expected)) {
      throw refuse("the result would not mean what was asked");
    }
  }
  std::string why;
  if (!reference_matches(outcome.expected, outcome.text, why)) {
    throw refuse(why);
  }
  out.text = std::move(outcome.text);
  return out;
}

struct EditRequest {
  std::vector<Splice> *splices = nullptr;
  Value *movable_root = nullptr;
  bool reparse = true;
};

Checked set_document(const Document &doc,
                     std::string_view path_text,
                     std::string_view literal,
                     EditRequest request) {
  const KeyPath path = KeyPath::parse(path_text);
  if (path.steps.empty()) {
    throw usage_error("cannot set the document root; name a key");
  }
  const detail::Literal value = detail::parse_literal(literal);
  Outcome outcome = detail::plan_set(doc, request.movable_root, path, value);
  if (request.splices != nullptr) {
    *request.splices = outcome.splices;
  }
  return verified(doc, std::move(outcome), fmt::format("set {}", path.text()), request.reparse);
}

Checked unset_document(const Document &doc,
                       std::string_view path_text,
                       UnsetOptions options,
                       EditRequest request) {
  const KeyPath path = KeyPath::parse(path_text);
  Outcome outcome;
  try {
    outcome = detail::plan_unset(doc, request.movable_root, path, options.prune);
  } catch (const Error &e) {
    if (options.if_exists && e.code() == static_cast<int>(ExitCode::failure)) {
      return {doc.text(), doc};
    }
    throw;
  }
  if (request.splices != nullptr) {
    *request.splices = outcome.splices;
  }
  return verified(doc, std::move(outcome), fmt::format("unset {}", path.text()), request.reparse);
}

} // namespace

Value parse_value_literal(std::string_view literal) {
  return *detail::parse_literal(literal).value;
}

std::string set(const Document &doc, std::string_view path, std::string_view literal) {
  return set_document(doc, path, literal, {}).text;
}

std::string set(Document &&doc, std::string_view path, std::string_view literal) {
  Document owned = std::move(doc);
  return set_document(owned, path, literal, {nullptr, &detail::DocumentAccess::root(owned), false})
      .text;
}

std::string set_string(const Document &doc, std::string_view path, std::string_view text) {
  return set_document(doc, path, quote_string(text), {}).text;
}

std::string unset(const Document &doc, std::string_view path, UnsetOptions options) {
  return unset_document(doc, path, options, {}).text;
}

std::string unset(Document &&doc, std::string_view path, UnsetOptions options) {
  Document owned = std::move(doc);
  return unset_document(
             owned, path, options, {nullptr, &detail::DocumentAccess::root(owned), false})
      .text;
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