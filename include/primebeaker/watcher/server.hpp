// SPDX-License-Identifier: MIT
// `watcher serve`: the read-only HTTP app of docs/watcher.md ("HTTP routes").
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace pb::watcher {

struct ServerConfig {
  std::filesystem::path database = "watcher.sqlite3";
  std::string host = "127.0.0.1";
  int port = 8790; // 0: any free port
  // W&B GraphQL endpoint base (WANDB_BASE_URL), e.g. https://api.wandb.ai.
  std::string wandb_base_url = "https://api.wandb.ai";
  // Returns the W&B API key or throws pb::Error with the message the metrics route answers
  // (503). Called only when a checkpoint has W&B attempts.
  std::function<std::string()> wandb_api_key;
  std::chrono::milliseconds wandb_timeout{30000};
};

// The HTTP server, running on its own threads between start() and stop().
class Server {
public:
  explicit Server(ServerConfig config);
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  // Binds and starts serving in the background; returns the bound port.
  // Throws pb::Error (exit 1) when the address cannot be bound.
  int start();
  // Serves on the calling thread until stop() (from a signal handler thread) is called.
  void run();
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace pb::watcher
