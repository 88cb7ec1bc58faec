// SPDX-License-Identifier: MIT
// The image catalog (images/catalog.json, docs/launch.md), compiled into the binary.
#pragma once

#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::images {

// The role of images built from images/Dockerfile.runtime (a Prime-RL image with the binary
// added): what a launch with --no-stage runs without --image (images/README.md).
inline constexpr std::string_view k_runtime_role = "primebeaker-runtime";

// Names a catalog file that replaces the built-in one (sites that publish their own runtime
// images; tests).
inline constexpr std::string_view k_catalog_variable = "PRIMEBEAKER_IMAGE_CATALOG";

// One place an image can be pulled from: a Beaker image (immutable_uri, in one workspace) or a
// registry image (docker, usable from every workspace: `workspace` is empty).
struct Location {
  std::string immutable_uri; // beaker://<ID>, or "" for a registry image
  std::string name;
  std::string workspace; // "" = every workspace
  std::string created;
  std::string committed;
  std::int64_t size_bytes = 0;
  std::string docker; // a registry reference (ghcr.io/...:tag), or ""

  bool operator==(const Location &) const = default;

  // What a spec's task.image takes: beaker://<ID>, or the registry reference.
  const std::string &reference() const { return immutable_uri.empty() ? docker : immutable_uri; }
  bool in_workspace(std::string_view ws) const { return workspace.empty() || workspace == ws; }
};

struct Role {
  std::string name;
  std::string purpose;
  std::vector<Location> locations;
  // The Prime-RL version the role's images hold, as Prime-RL tags it ("v0.8.0"): which Prime-RL
  // reads a TOML launched on them (primerl/release.hpp). "" when not known.
  std::string prime_rl;
  // The pieces beyond Prime-RL its images hold ("vllm-router", "deepep", "nixl", "llm-d",
  // "mooncake"): which deployment shapes may launch on them (primerl/pieces.hpp). Unset (a
  // catalog that predates it): what Prime-RL's published images hold.
  std::optional<std::vector<std::string>> holds;
  const std::vector<std::string> &pieces() const;

  bool operator==(const Role &) const = default;
};

struct Catalog {
  std::string default_base_role;
  std::vector<Role> roles; // by name
  // The roles a staged launch without --image chooses among, in order of preference: the first
  // whose Prime-RL reads the TOML (images/choose.hpp). Empty: the default base role alone.
  std::vector<std::string> launch_roles;

  bool operator==(const Catalog &) const = default;

  // Parses catalog JSON; schema_version must be 1. Throws pb::Error exit 3 naming `source`.
  static Catalog parse(std::string_view json_text, const std::string &source);
  // The catalog built into the binary.
  static const Catalog &builtin();

  // The file PRIMEBEAKER_IMAGE_CATALOG names in `environment` when set and non-empty (read
  // and parsed; pb::Error exit 3 when unreadable or invalid), else builtin().
  static Catalog from_environment(const std::map<std::string, std::string> &environment);

  // The first location of `role_name` usable from `workspace` (its own, or a registry image),
  // or nullptr (also when the role does not exist).
  const Location *find_location(std::string_view workspace, std::string_view role_name) const;

  // The role, or pb::Error exit 2 "unknown image role '<role>'".
  const Role &role(std::string_view role_name) const;

  // The first location of `role_name` (default role when empty) whose workspace is
  // `workspace`; the first location when `workspace` is empty. Throws pb::Error exit 2
  // "no cataloged Prime-RL image for workspace '<ws>'" (with a hint to pass --image).
  const Location &default_location(std::string_view workspace,
                                   std::string_view role_name = {}) const;

  // The role a launch without --image takes its image from: the default base role (the
  // Prime-RL image, which runs the staged binary) when `staged`, else k_runtime_role.
  std::string_view launch_role(bool staged) const;
  // That role's location for `workspace`, or nullptr.
  const Location *launch_image(std::string_view workspace, bool staged) const;
  // The roles a launch without --image may take its image from: launch_roles (staged), else
  // k_runtime_role; the default base role when launch_roles is empty.
  std::vector<std::string> launch_candidates(bool staged) const;

  struct Found {
    const Role *role = nullptr;
    const Location *location = nullptr;
  };
  // The cataloged image an --image names: by beaker://<ID>, registry reference, or name
  // (beaker://<name> or <name>); {nullptr, nullptr} when the catalog does not know it.
  Found find_image(std::string_view reference) const;
};

// The JSON rows of `images list`: role, prime_rl, immutable_uri (or docker), name, workspace,
// size_bytes, created, committed, for every location of the launch roles and then of the other
// roles, in catalog order.
OrderedJson list_json(const Catalog &catalog);

// The catalog's JSON text as compiled in.
std::string_view builtin_catalog_text();

// The Catalog that text describes, from initialisers generated at build time (no JSON parse);
// Catalog::builtin() is this, built once.
Catalog builtin_catalog();

} // namespace pb::images
