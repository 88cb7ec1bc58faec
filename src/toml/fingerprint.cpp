// SPDX-License-Identifier: MIT
// The meaning fingerprint (fingerprint.hpp) of typed values, and of the meaning an edit asks
// for, read straight from the document's nodes (no typed tree for the untouched parts).
#include "fingerprint.hpp"

#include "edit_internal.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace pb::toml {

namespace detail {

void MeaningHasher::tag(char c) {
  m_buffer.push_back(c);
}

void MeaningHasher::number(std::uint64_t n) {
  for (int b = 0; b < 8; ++b) {
    m_buffer.push_back(static_cast<char>((n >> (8 * b)) & 0xFF));
  }
}

void MeaningHasher::bytes(std::string_view data) {
  number(data.size());
  if (m_buffer.size() + data.size() > 8192) {
    flush();
    m_sha.update(data);
    return;
  }
  m_buffer.append(data);
}

void MeaningHasher::flush() {
  m_sha.update(m_buffer);
  m_buffer.clear();
}

void MeaningHasher::table(std::size_t members) {
  tag('T');
  number(members);
}

void MeaningHasher::key(std::string_view name) {
  bytes(name);
}

void MeaningHasher::array(std::size_t items) {
  tag('A');
  number(items);
}

void MeaningHasher::string(std::string_view decoded) {
  tag('S');
  bytes(decoded);
}

void MeaningHasher::integer(std::optional<std::int64_t> value) {
  if (!value) {
    tag('i'); // out of range: equal to no integer
    return;
  }
  tag('I');
  number(static_cast<std::uint64_t>(*value));
}

void MeaningHasher::floating(double value) {
  tag('F');
  if (std::isnan(value)) {
    value = std::numeric_limits<double>::quiet_NaN(); // every NaN equals every NaN
  } else if (value == 0) {
    value = 0.0; // -0.0 == 0.0
  }
  number(std::bit_cast<std::uint64_t>(value));
}

void MeaningHasher::boolean(bool value) {
  tag('B');
  tag(value ? '1' : '0');
}

void MeaningHasher::datetime(Type type, const DateTime &parts) {
  tag('D');
  tag(static_cast<char>('0' + static_cast<int>(type)));
  for (const std::int64_t part : {std::int64_t{parts.year},
                                  std::int64_t{parts.month},
                                  std::int64_t{parts.day},
                                  std::int64_t{parts.hour},
                                  std::int64_t{parts.minute},
                                  std::int64_t{parts.second},
                                  std::int64_t{parts.nanosecond},
                                  std::int64_t{parts.offset_minutes}}) {
    number(static_cast<std::uint64_t>(part));
  }
}

void MeaningHasher::value(const Value &v) {
  switch (v.type()) {
  case Type::table: {
    std::vector<const Member *> members;
    members.reserve(v.table()->size());
    for (const Member &m : *v.table()) {
      members.push_back(&m);
    }
    std::sort(members.begin(), members.end(), [](const Member *a, const Member *b) {
      return a->first < b->first;
    });
    table(members.size());
    for (const Member *m : members) {
      key(m->first);
      value(m->second);
    }
    return;
  }
  case Type::array:
    array(v.array()->size());
    for (const Value &item : *v.array()) {
      value(item);
    }
    return;
  case Type::string:
    string(*v.string());
    return;
  case Type::integer:
    integer(v.integer());
    return;
  case Type::floating:
    floating(*v.floating());
    return;
  case Type::boolean:
    boolean(*v.boolean());
    return;
  default:
    datetime(v.type(), *v.datetime());
    return;
  }
}

std::string MeaningHasher::finish() {
  flush();
  return m_sha.finish();
}

namespace {

// The document's meaning with an edit's changes applied, read from its nodes: subtrees no
// change touches are read as they are; the nodes on the way to a change are rebuilt.
class ChangedMeaning {
public:
  ChangedMeaning(const Document &doc, const std::vector<Change> &changes)
      : m_parsed(doc.parsed()), m_text(doc.text()), m_changes(changes) {
    for (const Change &change : changes) {
      for (const Node *n = change.node; n != nullptr; n = n->parent) {
        m_touched.push_back(n);
      }
    }
  }

  Value value(const Node &node) const {
    if (!touched(node)) {
      return to_value(m_parsed, m_text, node);
    }
    if (const Change *c = change_of(node, Change::Kind::replace)) {
      return c->value;
    }
    const Position pos = node.origin == Origin::root ? Position{} : m_parsed.position_of(node);
    Value out = node.type == Type::table ? Value::make_table(pos) : Value::make_array(pos);
    for (const Node *child : node.children) {
      if (change_of(*child, Change::Kind::remove) != nullptr) {
        continue;
      }
      if (node.type == Type::table) {
        out.mutable_table().emplace_back(std::string(child->name), value(*child));
      } else {
        out.mutable_array().push_back(value(*child));
      }
    }
    if (const Change *c = change_of(node, Change::Kind::add)) {
      if (node.type == Type::table) {
        out.mutable_table().emplace_back(c->name, c->value);
      } else {
        out.mutable_array().push_back(c->value);
      }
    }
    return out;
  }

  void hash(const Node &node, MeaningHasher &h) const {
    if (const Change *c = touched(node) ? change_of(node, Change::Kind::replace) : nullptr) {
      h.value(c->value);
      return;
    }
    if (node.type != Type::table && node.type != Type::array) {
      h.value(to_value(m_parsed, m_text, node));
      return;
    }
    const Change *added = touched(node) ? change_of(node, Change::Kind::add) : nullptr;
    std::vector<const Node *> children;
    children.reserve(node.children.size());
    for (const Node *child : node.children) {
      if (!touched(*child) || change_of(*child, Change::Kind::remove) == nullptr) {
        children.push_back(child);
      }
    }
    const std::size_t count = children.size() + (added != nullptr ? 1 : 0);
    if (node.type == Type::array) {
      h.array(count);
      for (const Node *child : children) {
        hash(*child, h);
      }
      if (added != nullptr) {
        h.value(added->value);
      }
      return;
    }
    std::sort(children.begin(), children.end(), [](const Node *a, const Node *b) {
      return a->name < b->name;
    });
    h.table(count);
    bool added_done = added == nullptr;
    for (const Node *child : children) {
      if (!added_done && added->name < child->name) {
        h.key(added->name);
        h.value(added->value);
        added_done = true;
      }
      h.key(child->name);
      hash(*child, h);
    }
    if (!added_done) {
      h.key(added->name);
      h.value(added->value);
    }
  }

private:
  const Parsed &m_parsed;
  std::string_view m_text;
  const std::vector<Change> &m_changes;
  std::vector<const Node *> m_touched; // the changed nodes and their ancestors

  bool touched(const Node &node) const {
    return std::find(m_touched.begin(), m_touched.end(), &node) != m_touched.end();
  }
  const Change *change_of(const Node &node, Change::Kind kind) const {
    for (const Change &c : m_changes) {
      if (c.node == &node && c.kind == kind) {
        return &c;
      }
    }
    return nullptr;
  }
};

} // namespace

Value expected_value(const Document &doc, const std::vector<Change> &changes) {
  return ChangedMeaning(doc, changes).value(*doc.parsed().root);
}

std::string expected_fingerprint(const Document &doc, const std::vector<Change> &changes) {
  MeaningHasher h;
  ChangedMeaning(doc, changes).hash(*doc.parsed().root, h);
  return h.finish();
}

} // namespace detail

std::string meaning_fingerprint(const Value &value) {
  detail::MeaningHasher h;
  h.value(value);
  return h.finish();
}

} // namespace pb::toml
