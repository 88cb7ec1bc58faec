// SPDX-License-Identifier: MIT
// Interim Document::parse on toml++, until the lossless CST parser replaces it. toml++ stays in
// this one file (it is a heavy header).
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <sstream>
#include <toml++/toml.h>

namespace pb::toml {
namespace {

Position position_of(const ::toml::node& node) {
  const auto& begin = node.source().begin;
  return {static_cast<std::uint32_t>(begin.line), static_cast<std::uint32_t>(begin.column)};
}

template <typename T> std::string streamed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

Value convert(const ::toml::node& node) {
  const Position pos = position_of(node);
  if (const auto* t = node.as_table()) {
    Value table = Value::make_table(pos);
    for (const auto& [key, child] : *t) {
      table.mutable_table().emplace_back(std::string(key.str()), convert(child));
    }
    return table;
  }
  if (const auto* a = node.as_array()) {
    Value array = Value::make_array(pos);
    for (const auto& child : *a) {
      array.mutable_array().push_back(convert(child));
    }
    return array;
  }
  if (const auto* s = node.as_string()) {
    return Value::make_string(s->get(), streamed(*s), pos);
  }
  if (const auto* i = node.as_integer()) {
    return Value::make_scalar(Type::integer, std::to_string(i->get()), pos);
  }
  if (const auto* f = node.as_floating_point()) {
    return Value::make_scalar(Type::floating, fmt::format("{}", f->get()), pos);
  }
  if (const auto* b = node.as_boolean()) {
    return Value::make_scalar(Type::boolean, b->get() ? "true" : "false", pos);
  }
  if (const auto* d = node.as_date()) {
    return Value::make_scalar(Type::local_date, streamed(*d), pos);
  }
  if (const auto* t = node.as_time()) {
    return Value::make_scalar(Type::local_time, streamed(*t), pos);
  }
  const auto* dt = node.as_date_time();
  return Value::make_scalar(dt->get().is_local() ? Type::local_datetime : Type::offset_datetime,
                            streamed(*dt), pos);
}

} // namespace

Document Document::parse(std::string text, std::string source_name) {
  Document doc;
  doc.m_source_name = std::move(source_name);
  doc.m_text = std::move(text);
  try {
    const auto table = ::toml::parse(doc.m_text, doc.m_source_name);
    doc.m_root = convert(table);
    doc.m_root.set_position({});
  } catch (const ::toml::parse_error& e) {
    throw input_error(fmt::format("{}:{}:{}: {}", doc.m_source_name, e.source().begin.line,
                                  e.source().begin.column, e.description()));
  }
  return doc;
}

Document Document::load(const std::filesystem::path& path) {
  return parse(fs::read_file(path), path.string());
}

} // namespace pb::toml
