// SPDX-License-Identifier: MIT
// The launch flags' defaults from the user's config (docs/config.md): a flag given wins, then
// PRIMEBEAKER_*, the project file, the user file, beaker's default workspace, the built-in.
#include <primebeaker/config/config.hpp>
#include <primebeaker/launch/launch.hpp>

namespace pb::launch {

void apply_config(LaunchOptions &options, const config::Settings &settings) {
  for (const auto &key : config::keys()) {
    if (key.flag.empty()) {
      continue;
    }
    const std::string flag(key.flag);
    if (options.was_given(flag)) {
      options.origins[flag] = "flag --" + flag;
      // `--cluster auto` alone ranks the configured clusters (docs/clusters.md).
      if (const config::Setting *setting = settings.get(key.key);
          flag == "cluster" && options.clusters == std::vector<std::string>{"auto"} &&
          setting != nullptr && setting->level != config::Level::built_in) {
        for (const auto &value : setting->values) {
          if (value != "auto") {
            options.clusters.push_back(value);
          }
        }
      }
      continue;
    }
    const config::Setting *setting = settings.get(key.key);
    if (setting == nullptr) {
      continue;
    }
    // `prime_rl` pins the release whose cataloged image is chosen, as --prime-rl without
    // --image does; with an --image, it is not what that image holds (docs/config.md).
    if (flag == "prime-rl" && options.was_given("image")) {
      continue;
    }
    options.origins[flag] = setting->origin;
    if (setting->level == config::Level::built_in) {
      continue; // LaunchOptions' own defaults are the built-ins (tests hold them equal)
    }
    apply_setting(options, flag, setting->values);
    options.given.erase(flag); // a default, not something the user typed for this launch
  }
}

} // namespace pb::launch
