// SPDX-License-Identifier: MIT
// The HTTP app (docs/watcher.md "HTTP routes"). The only file that includes cpp-httplib.
#include "api.hpp"
#include "database.hpp"
#include "metrics.hpp"
#include "page_assets.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/watcher/server.hpp>

#include <httplib.h>

#include <charconv>
#include <thread>

namespace pb::watcher {
namespace {

namespace stdfs = std::filesystem;

void send_json(httplib::Response &response, int status, const OrderedJson &body) {
  response.status = status;
  response.set_content(body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace),
                       "application/json");
}

void send_detail(httplib::Response &response, int status, const std::string &detail) {
  send_json(response, status, OrderedJson{{"detail", detail}});
}

// FastAPI's validation error shape, so clients of the reference keep working.
void send_invalid(httplib::Response &response,
                  const std::string &where,
                  const std::string &name,
                  const std::string &message) {
  OrderedJson item = OrderedJson::object();
  item["loc"] = {where, name};
  item["msg"] = message;
  item["type"] = "value_error";
  send_json(response, 422, OrderedJson{{"detail", OrderedJson::array({item})}});
}

std::optional<std::int64_t> parse_integer(const std::string &text) {
  std::int64_t value = 0;
  const char *end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return value;
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
  httplib::Server http;
  std::thread thread;
  int port = 0;
  bool running = false;

  // Every request opens its own read-only connection: data changes show on the next request.
  std::optional<Database> open(httplib::Response &response) {
    std::error_code ec;
    if (!stdfs::is_regular_file(database, ec)) {
      send_detail(response, 503, "Watcher database does not exist: " + database.string());
      return std::nullopt;
    }
    return std::optional<Database>(std::in_place, database, Database::Mode::read_only);
  }

  // A path parameter that must be an integer; 422 otherwise.
  std::optional<std::int64_t> model_id(const httplib::Request &request,
                                       httplib::Response &response) {
    const auto id = parse_integer(request.matches[1].str());
    if (!id) {
      send_invalid(response, "path", "model_id", "value is not a valid integer");
    }
    return id;
  }

  void routes() {
    http.Get("/", [](const httplib::Request &, httplib::Response &response) {
      response.set_header("cache-control", "no-store");
      response.set_content(std::string(detail::k_page_html), "text/html; charset=utf-8");
    });
    http.Get("/watcher.js", [](const httplib::Request &, httplib::Response &response) {
      response.set_header("cache-control", "no-store");
      response.set_content(std::string(detail::k_page_js), "text/javascript; charset=utf-8");
    });
    http.Get("/health", [this](const httplib::Request &, httplib::Response &response) {
      std::error_code ec;
      send_json(response,
                200,
                OrderedJson{{"ok", stdfs::is_regular_file(database, ec)},
                            {"database", database.string()}});
    });
    http.Get("/api/models", [this](const httplib::Request &request, httplib::Response &response) {
      const std::string query = request.has_param("q") ? request.get_param_value("q") : "";
      if (utf8_length(query) > 300) {
        return send_invalid(response, "query", "q", "ensure this value has at most 300 characters");
      }
      std::int64_t limit = 1000;
      if (request.has_param("limit")) {
        const auto parsed = parse_integer(request.get_param_value("limit"));
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
    http.Get(R"(/api/models/([^/]+))",
             [this](const httplib::Request &request, httplib::Response &response) {
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
    http.Get(R"(/api/models/([^/]+)/metrics)",
             [this](const httplib::Request &request, httplib::Response &response) {
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
               detail::GraphqlHistorySource source(
                   config.wandb_base_url, api_key, config.wandb_timeout);
               send_json(response, 200, detail::fetch_charts(attempts, source));
             });
    http.set_exception_handler(
        [](const httplib::Request &, httplib::Response &response, std::exception_ptr failure) {
          std::string message = "internal error";
          try {
            std::rethrow_exception(failure);
          } catch (const std::exception &error) {
            message = error.what();
          } catch (...) {
          }
          send_detail(response, 500, message);
        });
    http.set_error_handler([](const httplib::Request &, httplib::Response &response) {
      if (response.body.empty()) {
        send_detail(response, response.status, response.status == 404 ? "Not Found" : "Error");
      }
    });
  }
};

Server::Server(ServerConfig config) : m_impl(std::make_unique<Impl>()) {
  m_impl->config = std::move(config);
  m_impl->database = stdfs::absolute(m_impl->config.database);
  // Keep-alive connections hold a worker each: size the pool for many concurrent clients.
  m_impl->http.new_task_queue = [] { return new httplib::ThreadPool(32); };
  m_impl->http.set_keep_alive_max_count(1000);
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
    impl.port = impl.http.bind_to_any_port(impl.config.host);
  } else if (impl.http.bind_to_port(impl.config.host, impl.config.port)) {
    impl.port = impl.config.port;
  } else {
    impl.port = -1;
  }
  if (impl.port <= 0) {
    throw failure("watcher serve cannot listen on " + impl.config.host + ":" +
                  std::to_string(impl.config.port));
  }
  impl.running = true;
  impl.thread = std::thread([&impl] { impl.http.listen_after_bind(); });
  return impl.port;
}

void Server::run() {
  if (m_impl->thread.joinable()) {
    m_impl->thread.join();
  }
}

void Server::stop() {
  if (m_impl->running) {
    m_impl->http.stop();
  }
}

} // namespace pb::watcher
