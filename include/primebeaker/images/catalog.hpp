// SPDX-License-Identifier: MIT
// The image catalog (images/catalog.json, docs/launch.md), compiled into the binary.
#pragma once

#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::images {

struct Location {
  std::string immutable_uri; // beaker://<ID>
  std::string name;
  std::string workspace;
  std::string created;
  std::string committed;
  std::int64_t size_bytes = 0;
};

struct Role {
  std::string name;
  std::string purpose;
  std::vector<Location> locations;
};

struct Catalog {
  std::string default_base_role;
  std::vector<Role> roles;

  // Parses catalog JSON; schema_version must be 1. Throws pb::Error exit 3 naming `source`.
  static Catalog parse(std::string_view json_text, const std::string &source);
  // The catalog built into the binary.
  static const Catalog &builtin();

  // The role, or pb::Error exit 2 "unknown image role '<role>'".
  const Role &role(std::string_view role_name) const;

  // The first location of `role_name` (default role when empty) whose workspace is
  // `workspace`; the first location when `workspace` is empty. Throws pb::Error exit 2
  // "no cataloged Prime-RL image for workspace '<ws>'" (with a hint to pass --image).
  const Location &default_location(std::string_view workspace,
                                   std::string_view role_name = {}) const;
};

// The JSON rows of `images list`: role, immutable_uri, name, workspace, size_bytes, created,
// committed, for the default role's locations in order.
OrderedJson list_json(const Catalog &catalog);

// The catalog's JSON text as compiled in.
std::string_view builtin_catalog_text();

} // namespace pb::images
