// SPDX-License-Identifier: MIT
// The cpp-httplib side of http_plugin.h: a shared object of its own, the only code that includes
// httplib.h. Every entry point is noexcept: nothing thrown here may reach the binary, which
// carries a different copy of the C++ runtime.
#include "http_plugin.h"

#include <httplib.h>

#include <new>

namespace {

httplib::Server &server_of(void *server) {
  return *static_cast<httplib::Server *>(server);
}
const httplib::Request &request_of(const pb_http_request *request) {
  return *reinterpret_cast<const httplib::Request *>(request);
}
httplib::Response &response_of(pb_http_response *response) {
  return *reinterpret_cast<httplib::Response *>(response);
}
const httplib::Response &response_of(const pb_http_response *response) {
  return *reinterpret_cast<const httplib::Response *>(response);
}

httplib::Server::Handler handler_of(pb_http_handler handler, void *context) {
  return [handler, context](const httplib::Request &request, httplib::Response &response) {
    handler(context,
            reinterpret_cast<const pb_http_request *>(&request),
            reinterpret_cast<pb_http_response *>(&response));
  };
}

void *server_create() noexcept {
  auto *server = new (std::nothrow) httplib::Server();
  if (server != nullptr) {
    // Keep-alive connections hold a worker each: size the pool for many concurrent clients.
    server->new_task_queue = [] { return new httplib::ThreadPool(32); };
    server->set_keep_alive_max_count(1000);
  }
  return server;
}

void server_destroy(void *server) noexcept {
  delete static_cast<httplib::Server *>(server);
}

void route_get(void *server, const char *pattern, pb_http_handler handler, void *context) noexcept {
  server_of(server).Get(pattern, handler_of(handler, context));
}

void set_error_handler(void *server, pb_http_handler handler, void *context) noexcept {
  server_of(server).set_error_handler(handler_of(handler, context));
}

int bind_any_port(void *server, const char *host) noexcept {
  return server_of(server).bind_to_any_port(host);
}

int bind_port(void *server, const char *host, int port) noexcept {
  return server_of(server).bind_to_port(host, port) ? 1 : 0;
}

void listen_after_bind(void *server) noexcept {
  server_of(server).listen_after_bind();
}

void stop(void *server) noexcept {
  server_of(server).stop();
}

int request_param(const pb_http_request *request,
                  const char *name,
                  const char **data,
                  size_t *size) noexcept {
  const auto &params = request_of(request).params;
  const auto found = params.equal_range(name).first; // the first value, as get_param_value
  if (found == params.end() || found->first != name) {
    return 0;
  }
  *data = found->second.data();
  *size = found->second.size();
  return 1;
}

int request_match(const pb_http_request *request,
                  size_t index,
                  const char **data,
                  size_t *size) noexcept {
  const auto &matches = request_of(request).matches;
  if (index >= matches.size() || !matches[index].matched) {
    return 0;
  }
  *data = &*matches[index].first;
  *size = static_cast<size_t>(matches[index].length());
  return 1;
}

int response_status(const pb_http_response *response) noexcept {
  return response_of(response).status;
}

int response_body_empty(const pb_http_response *response) noexcept {
  return response_of(response).body.empty() ? 1 : 0;
}

void response_set_header(pb_http_response *response, const char *name, const char *value) noexcept {
  response_of(response).set_header(name, value);
}

void response_send(pb_http_response *response,
                   int status,
                   const char *data,
                   size_t size,
                   const char *content_type) noexcept {
  auto &out = response_of(response);
  out.status = status;
  out.set_content(data, size, content_type);
}

constexpr pb_http_api k_api = {
    .abi_version = PB_HTTP_ABI_VERSION,
    .server_create = server_create,
    .server_destroy = server_destroy,
    .route_get = route_get,
    .set_error_handler = set_error_handler,
    .bind_any_port = bind_any_port,
    .bind_port = bind_port,
    .listen_after_bind = listen_after_bind,
    .stop = stop,
    .request_param = request_param,
    .request_match = request_match,
    .response_status = response_status,
    .response_body_empty = response_body_empty,
    .response_set_header = response_set_header,
    .response_send = response_send,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const pb_http_api *pb_http_plugin_api(void) {
  return &k_api;
}
