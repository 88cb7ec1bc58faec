// SPDX-License-Identifier: MIT
// `primebeaker watcher index|update|rebuild|show|status|serve` (docs/watcher.md "Commands").
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/log.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/watcher/server.hpp>
#include <primebeaker/watcher/watcher.hpp>

#include <spdlog/spdlog.h>

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

namespace pb::watcher {
namespace {

namespace stdfs = std::filesystem;

struct CommonOptions {
  std::string database = "watcher.sqlite3";
  std::string repo_root;
  std::vector<std::string> train_config_roots, eval_config_roots, launch_spec_roots, manifest_roots,
      manifests;
  std::optional<std::string> wandb_entity;
  bool json = false;
  const cli::CommandTree *tree = nullptr;
};

// A list flag's values: repeats, a JSON list literal (add_list_option) or comma strings.
std::vector<stdfs::path> split_paths(const std::vector<std::string> &values) {
  std::vector<stdfs::path> out;
  for (const auto &value : values) {
    for (const auto &part : text::split(value, ',')) {
      const auto trimmed = text::trim(part);
      if (!trimmed.empty()) {
        out.emplace_back(std::string(trimmed));
      }
    }
  }
  return out;
}

// The user's places from their config (docs/config.md); read once per process.
const UserPlaces &user_places() {
  static const UserPlaces places = [] {
    const auto settings = config::Settings::load();
    return UserPlaces{settings.text("shared_dir"), settings.text("scratch_dir")};
  }();
  return places;
}

// $JTC_ROOT, else <shared_dir>/jtc; what cannot be derived is asked for.
std::string default_repo_root() {
  if (const auto root = env::get("JTC_ROOT"); root && !root->empty()) {
    return *root;
  }
  if (user_places().shared_dir.empty()) {
    throw usage_error("no --repo-root: pass --repo-root DIR, set JTC_ROOT, or tell primebeaker "
                      "your name with `primebeaker config set user NAME` (then "
                      "<mount_path>/NAME/jtc is the default)");
  }
  return (user_places().shared_dir / "jtc").string();
}

void add_database_options(cli::Command &command, CommonOptions &options, bool with_repo_root) {
  command.add_option(cli::flag("database"), options.database, "SQLite database file")
      .capture_default_str();
  if (with_repo_root) {
    command.add_option(cli::flag("repo-root"),
                       options.repo_root,
                       "Root that relative paths resolve against (default $JTC_ROOT)");
  }
  command.add_flag(cli::flag("json"), options.json, "Print JSON (results are always JSON)");
}

void add_discovery_options(cli::Command &command, CommonOptions &options) {
  add_database_options(command, options, true);
  cli::add_list_option(command,
                       "train-config-roots",
                       options.train_config_roots,
                       "Training TOML files or directories (repeat, list or comma string)");
  cli::add_list_option(
      command, "eval-config-roots", options.eval_config_roots, "Evaluation YAML files or dirs");
  cli::add_list_option(
      command, "launch-spec-roots", options.launch_spec_roots, "Beaker launch spec JSON roots");
  cli::add_list_option(
      command, "manifest-roots", options.manifest_roots, "Data manifest roots (*manifest*.json)");
  cli::add_list_option(
      command, "manifests", options.manifests, "Explicit manifests (replace manifest roots)");
  command.add_option(cli::flag("wandb-entity"),
                     options.wandb_entity,
                     "W&B entity when neither the TOML nor the launch spec names one");
}

Settings settings_from(const CommonOptions &options) {
  Settings settings;
  settings.database = options.database;
  settings.repo_root = options.repo_root.empty() ? default_repo_root() : options.repo_root;
  settings.repo_root = stdfs::absolute(settings.repo_root);
  settings.roots = default_roots(settings.repo_root, env::snapshot(), user_places());
  auto override_with = [](std::vector<stdfs::path> &target, const std::vector<std::string> &value) {
    if (!value.empty()) {
      target = split_paths(value);
    }
  };
  override_with(settings.roots.train_config_roots, options.train_config_roots);
  override_with(settings.roots.eval_config_roots, options.eval_config_roots);
  override_with(settings.roots.launch_spec_roots, options.launch_spec_roots);
  override_with(settings.roots.manifest_roots, options.manifest_roots);
  settings.roots.manifests = split_paths(options.manifests);
  settings.wandb_entity = options.wandb_entity;
  return settings;
}

// "update: 120/1000 checkpoints" on stderr: rewritten in place on a terminal; otherwise one
// line every 100 checkpoints with -v (logs stay quiet by default).
Progress progress_reporter(const std::string &operation, int verbosity) {
  const bool terminal = log::stderr_is_terminal();
  if (!terminal && verbosity < 1) {
    return {};
  }
  auto start =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [operation, terminal, start](size_t done, size_t total, const std::string &) {
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - *start)
            .count();
    const std::string line = operation + ": " + std::to_string(done) + "/" + std::to_string(total) +
                             " checkpoints (" + std::to_string(seconds) + "s)";
    if (terminal) {
      std::cerr << "\r\033[K" << line << (done == total ? "\n" : "") << std::flush;
    } else if (done % 100 == 0 || done == total) {
      std::cerr << line << "\n" << std::flush;
    }
  };
}

// The W&B key for the metrics route: WANDB_API_KEY, else `beaker secret read <secret>`.
std::function<std::string()> api_key_source(const std::string &secret) {
  return [secret]() -> std::string {
    if (const auto key = env::get("WANDB_API_KEY"); key && !key->empty()) {
      return *key;
    }
    proc::Command command;
    command.argv = {beaker::program_from_environment(env::snapshot()), "secret", "read", secret};
    command.timeout = std::chrono::seconds(20);
    proc::Result result;
    try {
      result = proc::SystemRunner().run(command);
    } catch (const Error &) {
      result.exit_code = 127;
    }
    if (!result.ok()) {
      throw tool_error("W&B authentication is unavailable; could not read Beaker secret '" +
                       secret + "'");
    }
    const auto key = std::string(text::trim(result.out));
    if (key.empty()) {
      throw tool_error("Beaker secret '" + secret + "' is empty");
    }
    return key;
  };
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"watcher"}, "Provenance index of checkpoints, with a web UI");

  {
    auto &options = tree.make_options<CommonOptions>();
    auto &index = tree.make_options<IndexOptions>();
    auto &model = tree.make_options<std::string>();
    auto &rl_config = tree.make_options<std::string>();
    auto &sft_config = tree.make_options<std::string>();
    auto &cmd = tree.command({"watcher", "index"}, "Index one RL checkpoint's provenance");
    cmd.add_option("model", model, "The checkpoint directory (relative to --repo-root)").required();
    add_discovery_options(cmd, options);
    cmd.add_option(cli::flag("rl-config"), rl_config, "The RL TOML (else discovered)");
    cmd.add_option(cli::flag("sft-config"), sft_config, "The SFT TOML (else discovered)");
    cmd.add_option(cli::flag("rl-wandb-run-id"), index.rl_wandb_run_id, "Add an RL W&B run id");
    cmd.add_option(cli::flag("sft-wandb-run-id"), index.sft_wandb_run_id, "Add an SFT W&B run id");
    cmd.callback([&] {
      index.model = model;
      if (!rl_config.empty()) {
        index.rl_config = rl_config;
      }
      if (!sft_config.empty()) {
        index.sft_config = sft_config;
      }
      print_json(std::cout, index_model(settings_from(options), index));
    });
  }
  {
    auto &options = tree.make_options<CommonOptions>();
    auto &bulk = tree.make_options<BulkOptions>();
    auto &cmd = tree.command({"watcher", "update"}, "Index every new unambiguous checkpoint");
    add_discovery_options(cmd, options);
    cmd.add_flag(cli::flag("skip-indexed") + ",!--no-skip-indexed,!--no_skip_indexed",
                 bulk.skip_indexed,
                 "Skip checkpoints already in the database (default on)");
    cmd.add_flag(cli::flag("details"), bulk.details, "List indexed and skipped paths");
    cmd.callback([&] {
      bulk.progress = progress_reporter("update", tree.verbosity());
      print_json(std::cout, update(settings_from(options), bulk));
    });
  }
  {
    auto &options = tree.make_options<CommonOptions>();
    auto &rebuild_options = tree.make_options<RebuildOptions>();
    auto &cmd = tree.command({"watcher", "rebuild"},
                             "Index everything into a fresh database and swap it in atomically");
    add_discovery_options(cmd, options);
    cmd.add_flag(cli::flag("backup") + ",!--no-backup",
                 rebuild_options.backup,
                 "Keep an online backup of the replaced database (default on)");
    cmd.add_flag(cli::flag("require-clean") + ",!--no-require-clean,!--no_require_clean",
                 rebuild_options.require_clean,
                 "Refuse when any checkpoint or config failed (default on)");
    cmd.add_flag(cli::flag("require-models") + ",!--no-require-models,!--no_require_models",
                 rebuild_options.require_models,
                 "Refuse to install a database without RL checkpoints (default on)");
    cmd.add_flag(cli::flag("details"), rebuild_options.details, "List indexed paths");
    cmd.callback([&] {
      rebuild_options.progress = progress_reporter("rebuild", tree.verbosity());
      print_json(std::cout, rebuild(settings_from(options), rebuild_options));
    });
  }
  {
    auto &options = tree.make_options<CommonOptions>();
    auto &model = tree.make_options<std::string>();
    auto &cmd = tree.command({"watcher", "show"}, "Print one indexed checkpoint's provenance");
    cmd.add_option("model", model, "The checkpoint directory (relative to --repo-root)").required();
    add_database_options(cmd, options, true);
    cmd.callback([&] {
      const std::string root = options.repo_root.empty() ? default_repo_root() : options.repo_root;
      print_json(std::cout, show(options.database, root, model));
    });
  }
  {
    auto &options = tree.make_options<CommonOptions>();
    auto &cmd = tree.command({"watcher", "status"}, "Summarise the database");
    add_database_options(cmd, options, false);
    cmd.callback([&] { print_json(std::cout, status(options.database)); });
  }
  {
    auto &config = tree.make_options<ServerConfig>();
    auto &secret = tree.make_options<std::string>();
    auto &reload = tree.make_options<bool>();

    auto &cmd = tree.command({"watcher", "serve"}, "Serve the read-only web UI and JSON API");
    cmd.add_option(cli::flag("database"), config.database, "SQLite database file")
        .capture_default_str();
    cmd.add_option(cli::flag("host"), config.host, "Address to bind").capture_default_str();
    cmd.add_option(cli::flag("port"), config.port, "Port (0: any free port)")
        .capture_default_str()
        .in_range(0, 65535);
    cmd.add_option(cli::flag("wandb-secret"),
                   secret,
                   "Beaker secret holding the W&B API key (default: `config get secrets.wandb`)");
    cmd.add_flag(cli::flag("reload"), reload, "Accepted for compatibility; has no effect");
    cmd.callback([&] {
      if (reload) {
        spdlog::warn("--reload has no effect: the page and data are read on every request");
      }
      config.wandb_base_url = env::get("WANDB_BASE_URL").value_or("https://api.wandb.ai");
      // Read only now: registering `watcher` for any of its commands reads no config.
      config.wandb_api_key =
          api_key_source(secret.empty() ? config::Settings::load().text("secrets.wandb") : secret);
      // SIGINT/SIGTERM are taken by a waiting thread (blocked everywhere else, so the server's
      // threads inherit the mask) and stop the server cleanly; the exit code says which.
      sigset_t signals;
      sigemptyset(&signals);
      sigaddset(&signals, SIGINT);
      sigaddset(&signals, SIGTERM);
      pthread_sigmask(SIG_BLOCK, &signals, nullptr);
      Server server(config);
      const int port = server.start();
      // The bound address on stderr (stdout stays free for results): scripts and tests read it.
      std::cerr << "watcher: serving " << stdfs::absolute(config.database).string() << " on http://"
                << config.host << ":" << port << "/" << std::endl;
      int received = 0;
      std::atomic<bool> listening{true};
      std::thread waiter([&] {
        sigwait(&signals, &received);
        if (listening) {
          server.stop();
        }
      });
      server.run();
      const bool by_signal = received != 0;
      listening = false;
      if (!by_signal) {
        pthread_kill(waiter.native_handle(), SIGTERM); // wakes the waiter: it is the only taker
      }
      waiter.join();
      if (!by_signal) {
        throw failure("watcher serve stopped listening unexpectedly");
      }
      throw Error(received == SIGINT ? ExitCode::interrupted : ExitCode::terminated, "");
    });
  }
}

} // namespace pb::watcher
