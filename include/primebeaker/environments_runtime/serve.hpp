// SPDX-License-Identifier: MIT
// The transport of `primebeaker environments serve --stdio`: JSON lines multiplexed by request
// id, requests of different sessions concurrent, requests of one session in order
// (docs/environments-runtime.md). What a request does is the Engine's business.
#pragma once

#include <primebeaker/core/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pb::environments_runtime {

inline constexpr int k_protocol_version = 1;

class RequestLine; // json_line.hpp

// A request that failed; `kind` becomes the reply's error.kind (bad_request, unknown_session,
// environment, infra, cancelled).
class RequestError : public std::runtime_error {
public:
  RequestError(std::string kind, const std::string &message)
      : std::runtime_error(message), m_kind(std::move(kind)) {}
  const std::string &kind() const noexcept { return m_kind; }

private:
  std::string m_kind;
};

class Engine {
public:
  virtual ~Engine() = default;
  // Runs one request (open, observe, respond, score, close, release) and returns the reply's
  // fields as an object. Called from many threads: requests of one session never overlap,
  // except that close and release may arrive while another request of that session runs.
  virtual OrderedJson handle(const std::string &op, const OrderedJson &request) = 0;
  // The same request run at once on the thread reading requests, when it can finish without
  // waiting for a service or another thread (pure scoring, observe, closing a session that
  // holds nothing): the reply's fields, or nullopt to have it run by handle() on a worker.
  // Called only when no other request of the session is queued or running (close and release
  // excepted, which may overlap); may move from `request` only when it does not return
  // nullopt. Answering on the reading thread saves the hand-off to a worker, which cost more
  // than a whole single-turn score (bench/environments_runtime/README.md).
  virtual std::optional<OrderedJson> handle_now(const std::string & /*op*/,
                                                OrderedJson & /*request*/) {
    return std::nullopt;
  }
  // A `score` request answered at once from its line, building only the fields its scorer
  // reads (RequestLine), under the same conditions as handle_now: the reply's fields, or nullopt
  // (having taken nothing from `request`) to have the whole request built and go through
  // handle_now, then handle.
  virtual std::optional<OrderedJson> score_now(RequestLine & /*request*/) { return std::nullopt; }
  // The ops handle() answers (besides hello and cancel, which the transport answers), for a
  // request naming another one to be refused with the list; empty: every op reaches handle().
  virtual const std::vector<std::string> &ops() const {
    static const std::vector<std::string> any;
    return any;
  }
  // Asks the in-flight request of `session` to end soon (it then throws
  // RequestError{"cancelled"}). Must return quickly.
  virtual void cancel(const std::string &session) = 0;
  // Standard input closed: release every session's resources (containers) before exiting.
  virtual void close_all() = 0;
};

struct ServeOptions {
  std::string server_name = "primebeaker";
};

// Reads requests from `in_fd` until end of file and writes one reply line per request to
// `out_fd`. At end of file it cancels what is still running, waits for it, calls
// engine.close_all() and returns.
void serve(int in_fd, int out_fd, Engine &engine, const ServeOptions &options = {});

} // namespace pb::environments_runtime
