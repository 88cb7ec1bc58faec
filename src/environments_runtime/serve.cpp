// SPDX-License-Identifier: MIT
#include <primebeaker/environments_runtime/json_line.hpp>
#include <primebeaker/environments_runtime/serve.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

namespace pb::environments_runtime {
namespace {

using json = OrderedJson;

// The requests of one session run one after another on one pool worker while the session has
// work, so a 600 s Podman test holds up only its own session.
struct Strand {
  std::deque<json> queue;
  bool running = false;
};

class Server {
public:
  Server(int out_fd, Engine &engine, const ServeOptions &options)
      : m_out_fd(out_fd), m_engine(engine), m_options(options) {}
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;
  ~Server() { stop_workers(); }

  // Called on the reading thread for each line. A request the engine can answer without waiting
  // (handle_now: pure scoring, observe) runs right here when its session has nothing queued;
  // everything else goes to the session's strand on the pool.
  void dispatch(std::string_view line) {
    std::optional<RequestLine> parsed;
    try {
      parsed.emplace(line); // checked whole; members built when asked for
    } catch (const RequestError &error) {
      reply_error(nullptr, error.kind(), error.what());
      return;
    }
    RequestLine &request = *parsed;
    const json *id = request.is_object() ? request.find("id") : nullptr;
    const std::optional<std::string> op = string_member(request, "op");
    if (id == nullptr || !op) {
      reply_error(id != nullptr ? *id : json(nullptr),
                  "bad_request",
                  "a request is an object with \"id\" and \"op\"");
      return;
    }
    const json request_id = *id;
    if (*op == "hello") {
      hello(request.build());
      return;
    }
    // Before the session check: a misspelt op must be named, not reported as a missing session.
    if (const auto &known = m_engine.ops();
        *op != "cancel" && !known.empty() &&
        std::find(known.begin(), known.end(), *op) == known.end()) {
      std::string listed = "hello";
      for (const auto &name : known) {
        listed += ", " + name;
      }
      reply_error(request_id,
                  "bad_request",
                  "unknown op '" + *op + "'; the ops are: " + listed + ", cancel");
      return;
    }
    const std::optional<std::string> session_id = string_member(request, "session");
    if (!session_id) {
      reply_error(request_id, "bad_request", "\"" + *op + "\" needs a \"session\" string");
      return;
    }
    const std::string &session = *session_id;
    if (*op == "cancel") {
      m_engine.cancel(session);
      reply_ok(request_id, json::object());
      return;
    }
    const bool overlapping = *op == "close" || *op == "release";
    bool idle = overlapping;
    if (!idle) {
      std::lock_guard lock(m_mutex);
      idle = m_strands.find(session) == m_strands.end();
    }
    std::optional<json> whole;
    if (idle) {
      try {
        std::optional<json> fields;
        if (*op == "score") {
          fields = m_engine.score_now(request);
        }
        if (!fields) {
          whole = request.build();
          fields = m_engine.handle_now(*op, *whole);
        }
        if (fields) {
          reply_ok(request_id, fields->is_object() ? std::move(*fields) : json::object());
          return;
        }
      } catch (const RequestError &error) {
        reply_error(request_id, error.kind(), error.what());
        return;
      } catch (const std::exception &error) {
        reply_error(request_id, "environment", error.what());
        return;
      }
    }
    if (!whole) {
      whole = request.build();
    }
    if (overlapping) {
      submit([this, request = std::move(*whole), op = *op] { run(op, request); });
      return;
    }
    std::lock_guard lock(m_mutex);
    Strand &strand = m_strands[session];
    strand.queue.push_back(std::move(*whole));
    if (!strand.running) {
      strand.running = true;
      submit_locked([this, session] { drain(session); });
    }
  }

  // Replies of the requests of one chunk of input go out in one write, after the chunk.
  void hold_output() {
    std::lock_guard lock(m_out_mutex);
    m_holding = true;
  }
  void release_output() {
    std::unique_lock lock(m_out_mutex);
    m_holding = false;
    if (!m_writing) {
      write_out(lock);
    }
  }

  // End of input: cancel what still runs, wait for it, then close every session.
  void finish() {
    {
      std::unique_lock lock(m_mutex);
      for (auto &[session, strand] : m_strands) {
        for (const auto &queued : strand.queue) {
          reply_error(queued["id"], "cancelled", "standard input closed");
        }
        strand.queue.clear();
        if (strand.running) {
          m_engine.cancel(session);
        }
      }
      m_idle.wait(lock, [this] { return m_unfinished == 0; });
    }
    release_output();
    stop_workers();
    m_engine.close_all();
  }

private:
  void hello(const json &request) {
    const json version = request.value("protocol", json(nullptr));
    if (version != k_protocol_version) {
      reply_error(request["id"],
                  "bad_request",
                  "protocol " + version.dump() + " is not supported; this primebeaker speaks " +
                      std::to_string(k_protocol_version));
      return;
    }
    reply_ok(request["id"], {{"protocol", k_protocol_version}, {"server", m_options.server_name}});
  }

  void drain(const std::string &session) {
    for (;;) {
      json request;
      {
        std::lock_guard lock(m_mutex);
        Strand &strand = m_strands[session];
        if (strand.queue.empty()) {
          strand.running = false;
          m_strands.erase(session);
          return;
        }
        request = std::move(strand.queue.front());
        strand.queue.pop_front();
      }
      run(request["op"], request);
    }
  }

  void run(const std::string &op, const json &request) {
    try {
      json fields = m_engine.handle(op, request);
      reply_ok(request["id"], fields.is_object() ? std::move(fields) : json::object());
    } catch (const RequestError &error) {
      reply_error(request["id"], error.kind(), error.what());
    } catch (const std::exception &error) {
      reply_error(request["id"], "environment", error.what());
    }
  }

  template <typename Work> void submit(Work work) {
    std::lock_guard lock(m_mutex);
    submit_locked(std::move(work));
  }

  // Work runs on a pool that grows on demand: a job never waits for a busy worker (a slow tool
  // call holds only its own session), and a thread is started only when none is idle, not once per
  // request (starting a thread per request cost most of a score's CPU time).
  template <typename Work> void submit_locked(Work work) {
    m_work.emplace_back(std::move(work));
    ++m_unfinished;
    if (m_idle_workers > 0) {
      --m_idle_workers;
      ++m_wakeups;
      m_work_ready.notify_one();
    } else {
      m_workers.emplace_back([this] { work_loop(); });
    }
  }

  void work_loop() {
    std::unique_lock lock(m_mutex);
    for (;;) {
      if (!m_work.empty()) {
        std::function<void()> job = std::move(m_work.front());
        m_work.pop_front();
        lock.unlock();
        job();
        lock.lock();
        if (--m_unfinished == 0) {
          m_idle.notify_all();
        }
        continue;
      }
      if (m_stopping) {
        return;
      }
      ++m_idle_workers;
      m_work_ready.wait(lock, [this] { return m_wakeups > 0 || m_stopping; });
      if (m_wakeups > 0) {
        --m_wakeups; // claimed for us by submit_locked
      } else {
        --m_idle_workers;
      }
    }
  }

  void stop_workers() {
    {
      std::lock_guard lock(m_mutex);
      m_stopping = true;
    }
    m_work_ready.notify_all();
    for (auto &worker : m_workers) {
      worker.join();
    }
    m_workers.clear();
  }

  // A string member (without building it when it has no escapes), or nullopt.
  static std::optional<std::string> string_member(RequestLine &request, std::string_view key) {
    if (!request.is_object()) {
      return std::nullopt;
    }
    if (const auto plain = request.plain_string(key)) {
      return std::string(*plain);
    }
    const json *value = request.find(key);
    if (value == nullptr || !value->is_string()) {
      return std::nullopt;
    }
    return value->get<std::string>();
  }

  // {"id": id, "ok": true, ...fields} ("id" and "ok" of `fields` ignored), serialised straight
  // into the line: no reply object is built.
  void reply_ok(const json &id, const json &fields) { write_reply(id, true, fields); }

  void reply_error(const json &id, const std::string &kind, const std::string &message) {
    write_reply(id, false, {{"error", {{"kind", kind}, {"message", message}}}});
  }

  // ASCII only, and invalid UTF-8 in model text replaced rather than failing the reply: what
  // json::dump(-1, ' ', true, replace) of the reply object writes, byte for byte.
  void write_reply(const json &id, bool ok, const json &fields) {
    std::string line;
    line.reserve(192);
    {
      nlohmann::detail::serializer<json> out(
          nlohmann::detail::output_adapter<char>(line), ' ', json::error_handler_t::replace);
      line += "{\"id\":";
      out.dump(id, false, true, 0);
      line += ok ? ",\"ok\":true" : ",\"ok\":false";
      if (fields.is_object()) {
        for (const auto &[key, value] : fields.items()) {
          if (key == "id" || key == "ok") {
            continue; // the reply's own
          }
          line += ',';
          if (plain_key(key)) {
            line += '"';
            line += key;
            line += '"';
          } else {
            out.dump(json(key), false, true, 0);
          }
          line += ':';
          out.dump(value, false, true, 0);
        }
      }
      line += "}\n";
    }
    std::unique_lock lock(m_out_mutex);
    m_out += line;
    if (!m_writing && !m_holding) {
      write_out(lock);
    }
  }

  static bool plain_key(const std::string &key) {
    for (const char c : key) {
      if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') { // char is signed: >= 0x80 is < 0
        return false;
      }
    }
    return true;
  }

  // One thread at a time writes; replies that arrive meanwhile are appended to m_out and
  // written by the same thread in its next round, so a burst of replies costs one write().
  void write_out(std::unique_lock<std::mutex> &lock) {
    m_writing = true;
    while (!m_out.empty()) {
      m_out.swap(m_out_writing);
      m_out.clear();
      lock.unlock();
      size_t written = 0;
      while (written < m_out_writing.size()) {
        const ssize_t n =
            ::write(m_out_fd, m_out_writing.data() + written, m_out_writing.size() - written);
        if (n < 0) {
          if (errno == EINTR) {
            continue;
          }
          break; // the client is gone; end of input follows
        }
        written += static_cast<size_t>(n);
      }
      lock.lock();
    }
    m_writing = false;
  }

  int m_out_fd;
  Engine &m_engine;
  const ServeOptions &m_options;
  std::mutex m_mutex;
  std::condition_variable m_idle;
  std::map<std::string, Strand> m_strands;
  std::deque<std::function<void()>> m_work;
  std::vector<std::thread> m_workers; // joined by finish()
  std::condition_variable m_work_ready;
  int m_unfinished = 0;   // jobs queued or running
  int m_idle_workers = 0; // waiting and not yet claimed
  int m_wakeups = 0;      // idle workers claimed for a queued job
  bool m_stopping = false;
  std::mutex m_out_mutex;
  std::string m_out;         // replies not yet written
  std::string m_out_writing; // the round being written (by the writing thread only)
  bool m_writing = false;    // a thread is in write_out()
  bool m_holding = false;    // the reader is answering a chunk: write after it
};

} // namespace

void serve(int in_fd, int out_fd, Engine &engine, const ServeOptions &options) {
  Server server(out_fd, engine, options);
  std::vector<char> buffer(1 << 18);
  size_t filled = 0; // bytes in buffer, of which none is a newline yet scanned
  size_t scanned = 0;
  for (;;) {
    if (filled == buffer.size()) {
      buffer.resize(buffer.size() * 2); // a line longer than the buffer
    }
    const ssize_t n = ::read(in_fd, buffer.data() + filled, buffer.size() - filled);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    filled += static_cast<size_t>(n);
    size_t start = 0;
    server.hold_output();
    while (const void *found = std::memchr(buffer.data() + scanned, '\n', filled - scanned)) {
      const size_t newline = static_cast<size_t>(static_cast<const char *>(found) - buffer.data());
      if (newline > start) {
        server.dispatch(std::string_view(buffer.data() + start, newline - start));
      }
      start = newline + 1;
      scanned = start;
    }
    server.release_output();
    std::memmove(buffer.data(), buffer.data() + start, filled - start);
    filled -= start;
    scanned = filled;
  }
  server.finish();
}

} // namespace pb::environments_runtime
