// SPDX-License-Identifier: MIT
#include <primebeaker/core/dynamic_library.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/http.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <memory>

namespace pb::registry {
namespace {

// libcurl and its ~30 dependencies (TLS, Kerberos, LDAP...) are loaded only when a request
// runs: linking them made every primebeaker start pay their relocations (about 70% of the
// start-up instructions of `primebeaker --version`).
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
  // The multi interface, for transfers a caller may cancel (a 20 ms wait loop).
  decltype(&::curl_multi_init) multi_init = nullptr;
  decltype(&::curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&::curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&::curl_multi_perform) multi_perform = nullptr;
  decltype(&::curl_multi_wait) multi_wait = nullptr;
  decltype(&::curl_multi_info_read) multi_info_read = nullptr;
  decltype(&::curl_multi_cleanup) multi_cleanup = nullptr;
};

const LibCurl &libcurl(const std::string &purpose) {
  static const LibCurl loaded = [&purpose] {
    void *handle = dl::open("libcurl.so.4", purpose + " needs libcurl (Debian package libcurl4): ");
    const std::string lacking = purpose + ": libcurl lacks ";
    LibCurl api;
    dl::bind(handle, api.global_init, "curl_global_init", lacking);
    dl::bind(handle, api.easy_init, "curl_easy_init", lacking);
    dl::bind(handle, api.easy_cleanup, "curl_easy_cleanup", lacking);
    dl::bind(handle, api.easy_setopt, "curl_easy_setopt", lacking);
    dl::bind(handle, api.easy_perform, "curl_easy_perform", lacking);
    dl::bind(handle, api.easy_getinfo, "curl_easy_getinfo", lacking);
    dl::bind(handle, api.easy_strerror, "curl_easy_strerror", lacking);
    dl::bind(handle, api.slist_append, "curl_slist_append", lacking);
    dl::bind(handle, api.slist_free_all, "curl_slist_free_all", lacking);
    dl::bind(handle, api.multi_init, "curl_multi_init", lacking);
    dl::bind(handle, api.multi_add_handle, "curl_multi_add_handle", lacking);
    dl::bind(handle, api.multi_remove_handle, "curl_multi_remove_handle", lacking);
    dl::bind(handle, api.multi_perform, "curl_multi_perform", lacking);
    dl::bind(handle, api.multi_wait, "curl_multi_wait", lacking);
    dl::bind(handle, api.multi_info_read, "curl_multi_info_read", lacking);
    dl::bind(handle, api.multi_cleanup, "curl_multi_cleanup", lacking);
    api.global_init(CURL_GLOBAL_DEFAULT);
    return api;
  }();
  return loaded;
}

struct Sink {
  std::string *body;
  std::size_t limit;
};

size_t collect_body(char *data, size_t size, size_t count, void *target) {
  auto *sink = static_cast<Sink *>(target);
  // Keep memory bounded on a chatty endpoint; callers say how much they need.
  const size_t bytes = size * count;
  if (sink->body->size() < sink->limit) {
    sink->body->append(data, std::min(bytes, sink->limit - sink->body->size()));
  }
  return bytes;
}

// Runs the transfer through the multi interface, waking every 20 ms to look at `cancel`.
// Returns CURLE_ABORTED_BY_CALLBACK when the flag was set.
CURLcode perform_cancellable(const LibCurl &api, CURL *curl, const std::atomic<bool> &cancel) {
  std::unique_ptr<CURLM, CURLMcode (*)(CURLM *)> multi(api.multi_init(), api.multi_cleanup);
  if (!multi || api.multi_add_handle(multi.get(), curl) != CURLM_OK) {
    return CURLE_FAILED_INIT;
  }
  CURLcode result = CURLE_OK;
  for (;;) {
    if (cancel.load()) {
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    int running = 0;
    if (api.multi_perform(multi.get(), &running) != CURLM_OK) {
      result = CURLE_FAILED_INIT;
      break;
    }
    if (running == 0) {
      int queued = 0;
      CURLMsg *message = api.multi_info_read(multi.get(), &queued);
      result = message != nullptr && message->msg == CURLMSG_DONE ? message->data.result
                                                                  : CURLE_FAILED_INIT;
      break;
    }
    api.multi_wait(multi.get(), nullptr, 0, 20, nullptr);
  }
  api.multi_remove_handle(multi.get(), curl);
  return result;
}

} // namespace

HttpResponse http_request(const HttpRequest &request, const std::string &purpose) {
  const LibCurl &api = libcurl(purpose);
  std::unique_ptr<CURL, void (*)(CURL *)> curl(api.easy_init(), api.easy_cleanup);
  if (!curl) {
    throw failure(purpose + " could not start libcurl");
  }
  HttpResponse response;
  Sink sink{&response.body, request.max_body};
  curl_slist *headers = nullptr;
  for (const auto &header : request.headers) {
    headers = api.slist_append(headers, header.c_str());
  }
  api.easy_setopt(curl.get(), CURLOPT_URL, request.url.c_str());
  api.easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  api.easy_setopt(curl.get(),
                  CURLOPT_CONNECTTIMEOUT_MS,
                  static_cast<long>(std::min<long long>(request.timeout.count(), 10000)));
  api.easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect_body);
  api.easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  if (!request.use_proxy) {
    api.easy_setopt(curl.get(), CURLOPT_PROXY, ""); // a local service: never through a proxy
  }
  if (headers != nullptr) {
    api.easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers);
  }
  if (request.basic_auth) {
    api.easy_setopt(curl.get(), CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    api.easy_setopt(curl.get(), CURLOPT_USERPWD, request.basic_auth->c_str());
  }
  if (request.method == "OPTIONS") {
    api.easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, "OPTIONS");
    api.easy_setopt(curl.get(), CURLOPT_NOBODY, 0L);
  } else if (request.method == "POST") {
    static const std::string no_body;
    const std::string &body = request.body ? *request.body : no_body;
    api.easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.c_str());
    api.easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const CURLcode code = request.cancel != nullptr
                            ? perform_cancellable(api, curl.get(), *request.cancel)
                            : api.easy_perform(curl.get());
  api.slist_free_all(headers);
  if (code != CURLE_OK) {
    response.error = api.easy_strerror(code);
    response.cancelled = code == CURLE_ABORTED_BY_CALLBACK;
    response.timed_out = code == CURLE_OPERATION_TIMEDOUT;
    return response;
  }
  api.easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

} // namespace pb::registry
