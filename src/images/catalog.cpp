// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/primerl/pieces.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::images {

namespace {

std::string text_field(const nlohmann::json &object, const char *key, const std::string &where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    throw input_error(fmt::format("image catalog {}: {} needs a string '{}'", where, where, key));
  }
  return it->get<std::string>();
}

} // namespace

Catalog Catalog::parse(std::string_view json_text, const std::string &source) {
  const auto json = nlohmann::ordered_json::parse(json_text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw input_error(fmt::format("image catalog {} is not a JSON object", source));
  }
  if (json.value("schema_version", 0) != 1) {
    throw input_error(fmt::format("unsupported image catalog schema in {}", source));
  }
  Catalog catalog;
  catalog.default_base_role = json.value("default_base_role", std::string());
  const auto roles = json.find("roles");
  if (roles == json.end() || !roles->is_object()) {
    throw input_error(fmt::format("image catalog {} has no 'roles' object", source));
  }
  for (const auto &[name, body] : roles->items()) {
    Role role;
    role.name = name;
    role.purpose = body.value("purpose", std::string());
    const auto locations = body.find("locations");
    if (locations == body.end() || !locations->is_array()) {
      throw input_error(
          fmt::format("image catalog {}: role {} has no 'locations' array", source, name));
    }
    role.prime_rl = body.value("prime_rl", std::string());
    if (const auto holds = body.find("holds"); holds != body.end()) {
      if (!holds->is_array()) {
        throw input_error(
            fmt::format("image catalog {}: role {}'s 'holds' must be an array", source, name));
      }
      role.holds.emplace();
      for (const auto &piece : *holds) {
        if (!piece.is_string()) {
          throw input_error(fmt::format(
              "image catalog {}: role {}'s 'holds' must hold piece names", source, name));
        }
        role.holds->push_back(piece.get<std::string>());
      }
    }
    for (const auto &item : *locations) {
      const std::string where = fmt::format("{} role {}", source, name);
      Location location;
      if (item.contains("docker")) {
        location.docker = text_field(item, "docker", where);
      } else {
        location.immutable_uri = text_field(item, "immutable_uri", where);
      }
      location.name = text_field(item, "name", where);
      location.workspace = text_field(item, "workspace", where);
      location.created = item.value("created", std::string());
      location.committed = item.value("committed", std::string());
      location.size_bytes = item.value("size_bytes", std::int64_t{0});
      role.locations.push_back(std::move(location));
    }
    catalog.roles.push_back(std::move(role));
  }
  // A JSON object's members have no order; by name, parse() and the compiled-in catalog (whose
  // generator reads them sorted) build the same vector.
  std::sort(catalog.roles.begin(), catalog.roles.end(), [](const Role &a, const Role &b) {
    return a.name < b.name;
  });
  if (const auto launch = json.find("launch_roles"); launch != json.end()) {
    if (!launch->is_array()) {
      throw input_error(fmt::format("image catalog {}: 'launch_roles' must be an array", source));
    }
    for (const auto &name : *launch) {
      if (!name.is_string()) {
        throw input_error(
            fmt::format("image catalog {}: 'launch_roles' must hold role names", source));
      }
      catalog.launch_roles.push_back(name.get<std::string>());
    }
  }
  catalog.role(catalog.default_base_role); // the default role must exist
  for (const auto &name : catalog.launch_roles) {
    catalog.role(name);
  }
  return catalog;
}

const std::vector<std::string> &Role::pieces() const {
  return holds ? *holds : primerl::published_image_pieces();
}

const Catalog &Catalog::builtin() {
  // Built from initialisers generated from images/catalog.json (src/images/CMakeLists.txt);
  // a test checks that they equal what parse() reads from the same file.
  static const Catalog catalog = [] {
    Catalog built = builtin_catalog();
    built.role(built.default_base_role); // the default role must exist
    return built;
  }();
  return catalog;
}

Catalog Catalog::from_environment(const std::map<std::string, std::string> &environment) {
  const auto it = environment.find(std::string(k_catalog_variable));
  if (it == environment.end() || it->second.empty()) {
    return builtin();
  }
  std::string text;
  try {
    text = fs::read_file(it->second);
  } catch (const Error &error) {
    throw input_error(fmt::format("{}: {}", k_catalog_variable, error.what()));
  }
  return parse(text, fmt::format("{} ({})", it->second, k_catalog_variable));
}

const Location *Catalog::find_location(std::string_view workspace,
                                       std::string_view role_name) const {
  for (const auto &candidate : roles) {
    if (candidate.name != role_name) {
      continue;
    }
    for (const auto &location : candidate.locations) {
      if (location.in_workspace(workspace)) {
        return &location;
      }
    }
  }
  return nullptr;
}

const Role &Catalog::role(std::string_view role_name) const {
  for (const auto &role : roles) {
    if (role.name == role_name) {
      return role;
    }
  }
  throw usage_error(fmt::format("unknown image role '{}'", role_name));
}

const Location &Catalog::default_location(std::string_view workspace,
                                          std::string_view role_name) const {
  const Role &chosen = role(role_name.empty() ? std::string_view(default_base_role) : role_name);
  for (const auto &location : chosen.locations) {
    if (workspace.empty() || location.in_workspace(workspace)) {
      return location;
    }
  }
  std::vector<std::string> known;
  for (const auto &location : chosen.locations) {
    if (std::find(known.begin(), known.end(), location.workspace) == known.end()) {
      known.push_back(location.workspace);
    }
  }
  throw usage_error(fmt::format("no cataloged Prime-RL image for workspace '{}' (cataloged: {}); "
                                "pass --image",
                                workspace,
                                fmt::join(known, ", ")));
}

OrderedJson list_json(const Catalog &catalog) {
  std::vector<std::string> order = catalog.launch_candidates(true);
  for (const auto &role : catalog.roles) {
    if (std::find(order.begin(), order.end(), role.name) == order.end()) {
      order.push_back(role.name);
    }
  }
  OrderedJson rows = OrderedJson::array();
  for (const auto &name : order) {
    const Role &role = catalog.role(name);
    for (const auto &location : role.locations) {
      OrderedJson row = OrderedJson::object();
      row["role"] = role.name;
      row["prime_rl"] = role.prime_rl;
      if (location.docker.empty()) {
        row["immutable_uri"] = location.immutable_uri;
      } else {
        row["docker"] = location.docker;
      }
      row["name"] = location.name;
      row["workspace"] = location.workspace;
      row["size_bytes"] = location.size_bytes;
      row["created"] = location.created;
      row["committed"] = location.committed;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<std::string> Catalog::launch_candidates(bool staged) const {
  if (!staged) {
    return {std::string(k_runtime_role)};
  }
  return launch_roles.empty() ? std::vector<std::string>{default_base_role} : launch_roles;
}

Catalog::Found Catalog::find_image(std::string_view reference) const {
  constexpr std::string_view beaker = "beaker://";
  const std::string_view bare =
      reference.substr(0, beaker.size()) == beaker ? reference.substr(beaker.size()) : reference;
  for (const auto &role : roles) {
    for (const auto &location : role.locations) {
      if (location.reference() == reference || location.name == bare ||
          (!location.docker.empty() && location.docker == bare)) {
        return {&role, &location};
      }
    }
  }
  return {};
}

std::string_view Catalog::launch_role(bool staged) const {
  return staged ? std::string_view(default_base_role) : k_runtime_role;
}

const Location *Catalog::launch_image(std::string_view workspace, bool staged) const {
  return find_location(workspace, launch_role(staged));
}

} // namespace pb::images
