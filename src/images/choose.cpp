// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/images/choose.hpp>
#include <primebeaker/primerl/pieces.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace pb::images {

namespace {

struct Candidate {
  const Role *role;
  const Location *location; // nullptr: none for the workspace
  primerl::PrimeRl prime_rl;
};

primerl::PrimeRl cataloged_prime_rl(const Role &role) {
  if (auto found = primerl::find_prime_rl(role.prime_rl)) {
    return *found;
  }
  throw input_error(
      fmt::format("image catalog: role {} holds Prime-RL '{}', which primebeaker cannot read "
                  "(it reads {})",
                  role.name,
                  role.prime_rl.empty() ? "(not given)" : role.prime_rl,
                  primerl::known_prime_rl_versions()));
}

bool schema_accepts(const toml::Document &document,
                    primerl::ConfigRoot root,
                    const primerl::PrimeRl &prime_rl) {
  primerl::SchemaCheckOptions options;
  options.release = prime_rl.schema;
  const auto found = primerl::check_schema(document, root, options);
  return std::none_of(found.begin(), found.end(), [](const primerl::SchemaProblem &problem) {
    return problem.severity == primerl::SchemaProblem::Severity::error;
  });
}

// The image a launch of `generation` gets in `workspace`, for the refusal's "use ...".
std::string
image_for(const Catalog &catalog, const ImageRequest &request, primerl::Generation generation) {
  for (const auto &name : catalog.launch_candidates(request.staged)) {
    const Role &role = catalog.role(name);
    const auto prime_rl = primerl::find_prime_rl(role.prime_rl);
    const Location *location = catalog.find_location(request.workspace, name);
    if (prime_rl && prime_rl->generation == generation && location != nullptr) {
      return fmt::format(
          "--image {} ({})", location->reference(), primerl::display_name(*prime_rl));
    }
  }
  return fmt::format("an image with Prime-RL {} (`primebeaker images list`)",
                     primerl::generation_name(generation));
}

ImageChoice from_flag(const Catalog &catalog,
                      const ImageRequest &request,
                      const std::optional<primerl::PrimeRl> &flagged) {
  ImageChoice choice;
  choice.reference = request.image;
  const auto found = catalog.find_image(request.image);
  if (found.role == nullptr) {
    if (!flagged) {
      throw usage_error(fmt::format("--image {} is not in the image catalog, so primebeaker "
                                    "cannot know which Prime-RL reads the TOML: add --prime-rl "
                                    "VERSION (one of {})",
                                    request.image,
                                    primerl::known_prime_rl_versions()));
    }
    choice.name = request.image;
    choice.prime_rl = *flagged;
    choice.holds = request.holds.value_or(primerl::published_image_pieces());
    choice.why = "--image, holding the Prime-RL that --prime-rl names";
    return choice;
  }
  if (request.holds) {
    throw usage_error(fmt::format("--image-holds declares the pieces of an image the catalog does "
                                  "not know; the catalog says --image {} holds [{}]: drop "
                                  "--image-holds",
                                  request.image,
                                  text::join(found.role->pieces(), ", ")));
  }
  choice.prime_rl = cataloged_prime_rl(*found.role);
  if (flagged && flagged->version != choice.prime_rl.version) {
    throw usage_error(fmt::format("--prime-rl {}, but the image catalog says --image {} ({}) "
                                  "holds Prime-RL {}: drop --prime-rl, or pass another --image",
                                  request.prime_rl,
                                  request.image,
                                  found.location->name,
                                  choice.prime_rl.version));
  }
  choice.reference = found.location->reference();
  choice.name = found.location->name;
  choice.role = found.role->name;
  choice.holds = found.role->pieces();
  choice.why = fmt::format("--image (the catalog's role {})", found.role->name);
  return choice;
}

// The first needed piece `holds` lacks, or nullptr.
const primerl::NeededPiece *missing_piece(const std::vector<std::string> &holds,
                                          const std::vector<primerl::NeededPiece> &needed) {
  for (const auto &piece : needed) {
    if (std::find(holds.begin(), holds.end(), piece.piece) == holds.end()) {
      return &piece;
    }
  }
  return nullptr;
}

} // namespace

ImageChoice choose_image(const Catalog &catalog,
                         const ImageRequest &request,
                         const toml::Document &document,
                         primerl::ConfigRoot root) {
  const primerl::GenerationInfo keys = primerl::detect_generation(document);
  const std::vector<primerl::NeededPiece> needed = root == primerl::ConfigRoot::rl
                                                       ? primerl::pieces_needed(document)
                                                       : std::vector<primerl::NeededPiece>();
  if (request.holds && request.image.empty()) {
    throw usage_error("--image-holds declares the pieces of an --image the catalog does not know: "
                      "pass that --image (the catalog says what its own images hold)");
  }
  if (request.holds) {
    for (const auto &piece : *request.holds) {
      const auto &known = primerl::known_pieces();
      if (std::find(known.begin(), known.end(), piece) == known.end()) {
        throw usage_error(fmt::format(
            "--image-holds: unknown piece '{}' (one of {})", piece, text::join(known, ", ")));
      }
    }
  }
  const bool keyed =
      keys.generation == primerl::Generation::v0_8 || keys.generation == primerl::Generation::v0_9;
  std::optional<primerl::PrimeRl> flagged;
  if (!request.prime_rl.empty()) {
    flagged = primerl::require_prime_rl(request.prime_rl, "--prime-rl");
  }

  ImageChoice choice;
  if (!request.image.empty()) {
    choice = from_flag(catalog, request, flagged);
  } else {
    std::vector<Candidate> pool;
    for (const auto &name : catalog.launch_candidates(request.staged)) {
      const Role &role = catalog.role(name);
      Candidate candidate{
          &role, catalog.find_location(request.workspace, name), cataloged_prime_rl(role)};
      if (!flagged || flagged->version == candidate.prime_rl.version) {
        pool.push_back(candidate);
      }
    }
    if (pool.empty()) {
      throw usage_error(fmt::format("--prime-rl {}: no image the catalog offers{} holds it; pass "
                                    "--image too (`primebeaker images list`)",
                                    request.prime_rl,
                                    request.staged ? "" : " with --no-stage"));
    }
    // The TOML's generation narrows the pool when its keys show one.
    std::vector<Candidate> narrowed;
    std::copy_if(pool.begin(), pool.end(), std::back_inserter(narrowed), [&](const auto &c) {
      return !keyed || c.prime_rl.generation == keys.generation;
    });
    if (narrowed.empty()) {
      narrowed = pool; // --prime-rl of the other generation: refused below, by name
    }
    // Then the images lacking the fewest pieces the shape needs: all of them when one holds
    // every piece; else the refusal below names what the closest one lacks.
    const auto lacking = [&](const Candidate &c) {
      const auto &holds = c.role->pieces();
      return std::count_if(needed.begin(), needed.end(), [&](const auto &piece) {
        return std::find(holds.begin(), holds.end(), piece.piece) == holds.end();
      });
    };
    if (!narrowed.empty()) {
      const auto fewest = lacking(
          *std::min_element(narrowed.begin(), narrowed.end(), [&](const auto &a, const auto &b) {
            return lacking(a) < lacking(b);
          }));
      std::erase_if(narrowed, [&](const Candidate &c) { return lacking(c) > fewest; });
    }
    // The first usable image whose Prime-RL reads the TOML; else the first that would read it
    // but has no location for the workspace (submit refuses, naming it); else the first usable.
    const Candidate *picked = nullptr;
    const Candidate *unplaced = nullptr;
    const Candidate *first_usable = nullptr;
    for (const auto &candidate : narrowed) {
      const bool usable = candidate.location != nullptr;
      if (usable && first_usable == nullptr) {
        first_usable = &candidate;
      }
      if ((usable || unplaced == nullptr) &&
          (narrowed.size() == 1 || schema_accepts(document, root, candidate.prime_rl))) {
        if (usable) {
          picked = &candidate;
          break;
        }
        unplaced = &candidate;
      }
    }
    if (picked == nullptr) {
      picked = unplaced != nullptr       ? unplaced
               : first_usable != nullptr ? first_usable
                                         : &narrowed.front();
    }
    choice.role = picked->role->name;
    choice.prime_rl = picked->prime_rl;
    choice.holds = picked->role->pieces();
    if (picked->location == nullptr) {
      choice.missing = fmt::format("no {} image ({}) is cataloged for workspace '{}'",
                                   primerl::display_name(picked->prime_rl),
                                   picked->role->name,
                                   request.workspace);
      choice.name = picked->role->name;
    } else {
      choice.reference = picked->location->reference();
      choice.name = picked->location->name;
    }
    choice.why = fmt::format(
        "the catalog's first {}image{} whose Prime-RL reads this TOML",
        flagged ? "--prime-rl " : "",
        keyed ? fmt::format(" for its {} keys", primerl::generation_name(keys.generation)) : "");
  }

  if (keyed && keys.generation != choice.prime_rl.generation) {
    throw input_error(fmt::format("{}: this TOML is written for Prime-RL {} ({}), but image {} "
                                  "holds {}: use {}",
                                  document.source_name(),
                                  primerl::generation_name(keys.generation),
                                  keys.evidence,
                                  choice.name,
                                  primerl::display_name(choice.prime_rl),
                                  image_for(catalog, request, keys.generation)));
  }
  if (const primerl::NeededPiece *lacking = missing_piece(choice.holds, needed)) {
    throw input_error(fmt::format("{}: {} needs {}, which image {} does not hold (it holds {}): "
                                  "{}; pass --image with one that does, or --image-holds for an "
                                  "uncataloged one",
                                  document.source_name(),
                                  lacking->why,
                                  lacking->piece,
                                  choice.name,
                                  choice.holds.empty() ? std::string("none of them")
                                                       : text::join(choice.holds, ", "),
                                  primerl::how_to_get(lacking->piece)));
  }
  return choice;
}

} // namespace pb::images
