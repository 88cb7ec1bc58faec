// SPDX-License-Identifier: MIT
// The HTTP app (docs/watcher.md "HTTP routes"). cpp-httplib itself lives in the embedded plugin
// of http_plugin.h, loaded here when the first server is created.
#include "api.hpp"
#include "database.hpp"
#include "http_plugin.h"
#include "metrics.hpp"
#include "page_assets.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/watcher/server.hpp>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

namespace pb::watcher {
namespace {

namespace stdfs = std::filesystem;

// The plugin, written to an anonymous in-memory file and dlopen()ed once: only `watcher serve`
// maps libcpp-httplib and its TLS and compression libraries.
const pb_http_api &http_api() {
  static const pb_http_api *const api = [] {
    const int fd = ::memfd_create("primebeaker-watcher-http", MFD_CLOEXEC);
    if (fd < 0) {
      throw failure(std::string("watcher serve cannot load its HTTP server: memfd_create: ") +
                    std::strerror(errno));
    }
    size_t written = 0;
    while (written < detail::k_http_plugin_size) {
      const ssize_t n =
          ::write(fd, detail::k_http_plugin + written, detail::k_http_plugin_size - written);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        const std::string reason = std::strerror(errno);
        ::close(fd);
        throw failure("watcher serve cannot load its HTTP server: " + reason);
      }
      written += static_cast<size_t>(n);
    }
    void *handle = ::dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_LOCAL);
    ::close(fd);
    if (handle == nullptr) {
      throw failure(std::string("watcher serve needs cpp-httplib (Debian package "
                                "libcpp-httplib0.11): ") +
                    ::dlerror());
    }
    using Entry = const pb_http_api *(*)();
    const auto entry = reinterpret_cast<Entry>(::dlsym(handle, "pb_http_plugin_api"));
    const pb_http_api *loaded = entry != nullptr ? entry() : nullptr;
    if (loaded == nullptr || loaded->abi_version != PB_HTTP_ABI_VERSION) {
      throw failure("watcher serve: its embedded HTTP plugin does not match this binary");
    }
    return loaded;
  }();
  return *api;
}

// One request and one response as the plugin hands them over (valid during the handler).
class Request {
public:
  explicit Request(const pb_http_request *request) : m_request(request) {}

  std::optional<std::string> param(const char *name) const {
    const char *data = nullptr;
    size_t size = 0;
    if (http_api().request_param(m_request, name, &data, &size) == 0) {
      return std::nullopt;
    }
    return std::string(data, size);
  }

  std::string match(size_t index) const {
    const char *data = nullptr;
    size_t size = 0;
    return http_api().request_match(m_request, index, &data, &size) != 0 ? std::string(data, size)
                                                                         : std::string();
  }

private:
  const pb_http_request *m_request;
};

class Response {
public:
  explicit Response(pb_http_response *response) : m_response(response) {}

  int status() const { return http_api().response_status(m_response); }
  bool body_empty() const { return http_api().response_body_empty(m_response) != 0; }
  void set_header(const char *name, const char *value) {
    http_api().response_set_header(m_response, name, value);
  }
  void send(int status, std::string_view body, const char *content_type) {
    http_api().response_send(m_response, status, body.data(), body.size(), content_type);
  }

private:
  pb_http_response *m_response;
};

using Handler = std::function<void(const Request &, Response &)>;

void send_json(Response &response, int status, const OrderedJson &body) {
  response.send(
      status, body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace), "application/json");
}

void send_detail(Response &response, int status, const std::string &detail) {
  send_json(response, status, OrderedJson{{"detail", detail}});
}

// The plugin calls this on its worker threads; nothing may be thrown back into it, so an
// exception becomes the 500 answer (noexcept: a failure to even answer ends the process).
void dispatch(void *context, const pb_http_request *request, pb_http_response *response) noexcept {
  Response out(response);
  try {
    (*static_cast<const Handler *>(context))(Request(request), out);
  } catch (const std::exception &error) {
    send_detail(out, 500, error.what());
  } catch (...) {
    send_detail(out, 500, "internal error");
  }
}

// FastAPI's validation error shape, so clients of Python PrimeBeaker keep working.
void send_invalid(Response &response,
                  const std::string &where,
                  const std::string &name,
                  const std::string &message) {
  OrderedJson item = OrderedJson::object();
  item["loc"] = {where, name};
  item["msg"] = message;
  item["type"] = "value_error";
  send_json(response, 422, OrderedJson{{"detail", OrderedJson::array({item})}});
}

size_t utf8_length(const std::string &text) {
  size_t count = 0;
  for (const unsigned char c : text) {
    count += (c & 0xC0) != 0x80;
  }
  return count;
}

} // namespace

struct Server::Impl {
  ServerConfig config;
  stdfs::path database;
  void *http = nullptr;                           // the plugin's server
  std::vector<std::unique_ptr<Handler>> handlers; // the contexts of the plugin's callbacks
  std::thread thread;
  int port = 0;
  bool running = false;

  // Every request opens its own read-only connection: data changes show on the next request.
  ~Impl() {
    if (http != nullptr) {
      http_api().server_destroy(http);
    }
  }

  const Handler *keep(Handler handler) {
    handlers.push_back(std::make_unique<Handler>(std::move(handler)));
    return handlers.back().get();
  }

  void get(const char *pattern, Handler handler) {
    http_api().route_get(http, pattern, &dispatch, const_cast<Handler *>(keep(std::move(handler))));
  }

  std::optional<Database> open(Response &response) {
    std::error_code ec;
    if (!stdfs::is_regular_file(database, ec)) {
      send_detail(response, 503, "Watcher database does not exist: " + database.string());
      return std::nullopt;
    }
    return std::optional<Database>(std::in_place, database, Database::Mode::read_only);
  }

  // A path parameter that must be an integer; 422 otherwise.
  std::optional<std::int64_t> model_id(const Request &request, Response &response) {
    const auto id = text::parse_integer(request.match(1));
    if (!id) {
      send_invalid(response, "path", "model_id", "value is not a valid integer");
    }
    return id;
  }

  void routes() {
    get("/", [](const Request &, Response &response) {
      response.set_header("cache-control", "no-store");
      response.send(200, detail::k_page_html, "text/html; charset=utf-8");
    });
    get("/watcher.js", [](const Request &, Response &response) {
      response.set_header("cache-control", "no-store");
      response.send(200, detail::k_page_js, "text/javascript; charset=utf-8");
    });
    get("/health", [this](const Request &, Response &response) {
      std::error_code ec;
      send_json(response,
                200,
                OrderedJson{{"ok", stdfs::is_regular_file(database, ec)},
                            {"database", database.string()}});
    });
    get("/api/models", [this](const Request &request, Response &response) {
      const std::string query = request.param("q").value_or("");
      if (utf8_length(query) > 300) {
        return send_invalid(response, "query", "q", "ensure this value has at most 300 characters");
      }
      std::int64_t limit = 1000;
      if (const auto text = request.param("limit")) {
        const auto parsed = text::parse_integer(*text);
        if (!parsed) {
          return send_invalid(response, "query", "limit", "value is not a valid integer");
        }
        if (*parsed < 1 || *parsed > 1000) {
          return send_invalid(response, "query", "limit", "limit must be between 1 and 1000");
        }
        limit = *parsed;
      }
      if (auto db = open(response)) {
        send_json(response, 200, detail::list_models(*db, query, limit));
      }
    });
    get(R"(/api/models/([^/]+))", [this](const Request &request, Response &response) {
      const auto id = model_id(request, response);
      if (!id) {
        return;
      }
      if (auto db = open(response)) {
        if (auto found = detail::model_detail(*db, *id)) {
          send_json(response, 200, *found);
        } else {
          send_detail(response, 404, "Unknown model id " + std::to_string(*id));
        }
      }
    });
    get(R"(/api/models/([^/]+)/metrics)", [this](const Request &request, Response &response) {
      const auto id = model_id(request, response);
      if (!id) {
        return;
      }
      std::vector<detail::Attempt> attempts;
      {
        auto db = open(response);
        if (!db) {
          return;
        }
        if (db->scalar_int("SELECT count(*) FROM models WHERE id = ?", {*id}) == 0) {
          return send_detail(response, 404, "Unknown model id " + std::to_string(*id));
        }
        attempts = detail::metric_attempts(*db, *id);
      }
      std::string api_key;
      if (!attempts.empty()) {
        try {
          api_key = config.wandb_api_key ? config.wandb_api_key() : std::string();
        } catch (const Error &error) {
          return send_detail(response, 503, error.what());
        }
        if (api_key.empty()) {
          return send_detail(response, 503, "W&B authentication is unavailable");
        }
      }
      detail::GraphqlHistorySource source(config.wandb_base_url, api_key, config.wandb_timeout);
      send_json(response, 200, detail::fetch_charts(attempts, source));
    });
    http_api().set_error_handler(
        http, &dispatch, const_cast<Handler *>(keep([](const Request &, Response &response) {
          if (response.body_empty()) {
            const int status = response.status();
            send_detail(response, status, status == 404 ? "Not Found" : "Error");
          }
        })));
  }
};

Server::Server(ServerConfig config) : m_impl(std::make_unique<Impl>()) {
  m_impl->config = std::move(config);
  m_impl->database = stdfs::absolute(m_impl->config.database);
  m_impl->http = http_api().server_create();
  if (m_impl->http == nullptr) {
    throw failure("watcher serve cannot create its HTTP server");
  }
  m_impl->routes();
}

Server::~Server() {
  stop();
  if (m_impl->thread.joinable()) {
    m_impl->thread.join();
  }
}

int Server::start() {
  auto &impl = *m_impl;
  if (impl.config.port == 0) {
    impl.port = http_api().bind_any_port(impl.http, impl.config.host.c_str());
  } else if (http_api().bind_port(impl.http, impl.config.host.c_str(), impl.config.port) != 0) {
    impl.port = impl.config.port;
  } else {
    impl.port = -1;
  }
  if (impl.port <= 0) {
    throw failure("watcher serve cannot listen on " + impl.config.host + ":" +
                  std::to_string(impl.config.port));
  }
  impl.running = true;
  impl.thread = std::thread([&impl] { http_api().listen_after_bind(impl.http); });
  return impl.port;
}

void Server::run() {
  if (m_impl->thread.joinable()) {
    m_impl->thread.join();
  }
}

void Server::stop() {
  if (m_impl->running) {
    http_api().stop(m_impl->http);
  }
}

} // namespace pb::watcher
