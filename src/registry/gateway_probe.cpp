// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/gateway_probe.hpp>
#include <primebeaker/registry/location.hpp>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

namespace pb::registry {
namespace {

// libcurl and its ~30 dependencies (TLS, Kerberos, LDAP...) are loaded only when a probe runs:
// linking them made every primebeaker start pay their relocations (about 70% of the start-up
// instructions of `primebeaker --version`).
struct LibCurl {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
};

template <typename F> void bind(void *handle, F &target, const char *name) {
  target = reinterpret_cast<F>(::dlsym(handle, name));
  if (target == nullptr) {
    throw failure(std::string("gateway probe: libcurl lacks ") + name);
  }
}

const LibCurl &libcurl() {
  static const LibCurl loaded = [] {
    void *handle = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      throw failure(std::string("gateway probe needs libcurl (Debian package libcurl4): ") +
                    ::dlerror());
    }
    LibCurl api;
    bind(handle, api.global_init, "curl_global_init");
    bind(handle, api.easy_init, "curl_easy_init");
    bind(handle, api.easy_cleanup, "curl_easy_cleanup");
    bind(handle, api.easy_setopt, "curl_easy_setopt");
    bind(handle, api.easy_perform, "curl_easy_perform");
    bind(handle, api.easy_getinfo, "curl_easy_getinfo");
    bind(handle, api.easy_strerror, "curl_easy_strerror");
    bind(handle, api.slist_append, "curl_slist_append");
    bind(handle, api.slist_free_all, "curl_slist_free_all");
    api.global_init(CURL_GLOBAL_DEFAULT);
    return api;
  }();
  return loaded;
}

size_t collect_body(char *data, size_t size, size_t count, void *target) {
  auto *body = static_cast<std::string *>(target);
  // Only the first bytes are ever shown; keep memory bounded on a chatty endpoint.
  const size_t bytes = size * count;
  if (body->size() < 4096) {
    body->append(data, std::min(bytes, 4096 - body->size()));
  }
  return bytes;
}

struct Response {
  long status = 0;
  std::string body;
};

Response request(const std::string &base_url,
                 const std::string &method,
                 const std::string &path,
                 const std::optional<std::string> &json_body,
                 std::chrono::milliseconds timeout) {
  const LibCurl &api = libcurl();
  std::unique_ptr<CURL, void (*)(CURL *)> curl(api.easy_init(), api.easy_cleanup);
  if (!curl) {
    throw failure("gateway probe could not start libcurl");
  }
  const std::string url = base_url + path;
  Response response;
  curl_slist *headers = nullptr;
  api.easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  api.easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  api.easy_setopt(curl.get(),
                  CURLOPT_CONNECTTIMEOUT_MS,
                  static_cast<long>(std::min<long long>(timeout.count(), 10000)));
  api.easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect_body);
  api.easy_setopt(curl.get(), CURLOPT_WRITEDATA, &response.body);
  api.easy_setopt(curl.get(), CURLOPT_PROXY, ""); // a local gateway: never through a proxy
  if (method == "OPTIONS") {
    api.easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, "OPTIONS");
    api.easy_setopt(curl.get(), CURLOPT_NOBODY, 0L);
  } else if (method == "POST") {
    headers = api.slist_append(headers, "Content-Type: application/json");
    api.easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers);
    api.easy_setopt(curl.get(), CURLOPT_POSTFIELDS, json_body->c_str());
    api.easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(json_body->size()));
  }
  const CURLcode code = api.easy_perform(curl.get());
  api.slist_free_all(headers);
  if (code != CURLE_OK) {
    throw failure("gateway probe could not reach " + redact_uri(url) + ": " +
                  api.easy_strerror(code));
  }
  api.easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

[[noreturn]] void http_failure(const std::string &what, const Response &response) {
  throw failure("gateway probe returned HTTP " + std::to_string(response.status) + " for " + what +
                ": " + response.body.substr(0, 1000));
}

} // namespace

std::vector<ProbeCheck> probe_gateway(const GatewayProbe &probe) {
  std::string base = probe.url;
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  if (base.find("://") == std::string::npos) {
    throw usage_error("--url must be an http:// URL, got '" + probe.url + "'");
  }
  std::vector<ProbeCheck> checks;
  const auto health = request(base, "GET", "/health", std::nullopt, probe.health_timeout);
  if (health.status != 200) {
    http_failure("GET /health", health);
  }
  checks.push_back({"GET", "/health", "", health.status});
  for (std::string path : probe.required_paths) {
    if (path.empty() || path.front() != '/') {
      path.insert(0, "/");
    }
    const auto response = request(base, "OPTIONS", path, std::nullopt, probe.timeout);
    // 405 means the route exists but takes another method: good enough for readiness.
    if (response.status != 200 && response.status != 204 && response.status != 405) {
      http_failure("OPTIONS " + path, response);
    }
    checks.push_back({"OPTIONS", path, "", response.status});
  }
  for (const auto &model_path : probe.model_paths) {
    const nlohmann::ordered_json body = {
        {"mode", "query"}, {"query", "PrimeBeaker readiness probe"}, {"model_path", model_path}};
    const auto response = request(base, "POST", "/search", body.dump(), probe.timeout);
    if (response.status != 200) {
      http_failure("POST /search (model_path " + model_path + ")", response);
    }
    checks.push_back({"POST", "/search", model_path, response.status});
  }
  return checks;
}

long http_get_status(const std::string &url, std::chrono::milliseconds timeout) {
  return request(url, "GET", "", std::nullopt, timeout).status;
}

} // namespace pb::registry
