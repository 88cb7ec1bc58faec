// SPDX-License-Identifier: MIT
// Which image a launch runs, and so which Prime-RL reads its TOML (docs/launch.md "Which
// Prime-RL reads the TOML"). Pure: reads the catalog and the parsed TOML only.
//
// - `--image` in the catalog: its role's Prime-RL. Not in the catalog: `--prime-rl VERSION`
//   says which Prime-RL it holds; without it the launch is refused, never guessed.
// - No `--image`: the launch roles usable from the workspace, narrowed to `--prime-rl` when
//   given and to the generation the TOML's keys show when they show one; the first whose
//   Prime-RL's schema accepts the TOML, else the first of them.
// - Then the TOML's keys confirm it: a TOML of the other generation is refused in one line that
//   names the image, its Prime-RL and the image to use.
// - And its shape: an image that lacks a piece the shape needs (primerl/pieces.hpp) is refused
//   in one line naming the piece and how Prime-RL builds an image with it; without --image the
//   first candidate holding every piece is preferred.
#pragma once

#include <primebeaker/primerl/release.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::toml {
class Document;
}

namespace pb::images {

struct Catalog;

struct ImageRequest {
  std::string image;     // --image, or ""
  std::string prime_rl;  // --prime-rl, or ""
  std::string workspace; // --workspace
  bool staged = true;    // false: --no-stage (the runtime role)
  // --image-holds: the pieces an uncataloged --image holds; unset: what Prime-RL's published
  // images hold (primerl/pieces.hpp).
  std::optional<std::vector<std::string>> holds;
};

struct ImageChoice {
  std::string reference; // the spec's task.image: beaker://<ID> or a registry reference; "" when
                         // the catalog has no image for the workspace (`missing` says why)
  std::string name;      // the catalog's name, or the reference itself
  std::string role;      // the catalog role, or "" for an uncataloged --image
  primerl::PrimeRl prime_rl;
  std::vector<std::string> holds; // the pieces it holds (catalog, --image-holds, or Prime-RL's)
  std::string why;                // how the image was chosen, for -v and the card
  std::string missing; // non-empty: no cataloged image for the workspace (submit is refused)
};

// pb::Error exit 2 for a flag problem (an uncataloged --image without --prime-rl, a --prime-rl
// that disagrees with the catalog or that no cataloged image holds), exit 3 for a TOML of
// another generation than the image's Prime-RL. `root` is the entrypoint the launch reads.
ImageChoice choose_image(const Catalog &catalog,
                         const ImageRequest &request,
                         const toml::Document &document,
                         primerl::ConfigRoot root);

} // namespace pb::images
