// SPDX-License-Identifier: MIT
#include "fake_service.hpp"

#include <httplib.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>

namespace pb::test {

OrderedJson RecordedRequest::json() const {
  return OrderedJson::parse(body, nullptr, false).is_discarded()
             ? OrderedJson()
             : OrderedJson::parse(body, nullptr, false);
}

struct FakeService::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::atomic<bool> stopping{false};
  mutable std::mutex mutex;
  std::deque<FakeReply> script;
  std::function<FakeReply(const RecordedRequest &)> handler;
  std::vector<RecordedRequest> requests;

  void serve(const httplib::Request &request, httplib::Response &response) {
    RecordedRequest recorded{
        request.method, request.path, request.body, {}, std::chrono::steady_clock::now()};
    for (const auto &[name, value] : request.headers) {
      recorded.headers[name] = value;
    }
    FakeReply reply;
    {
      std::lock_guard lock(mutex);
      requests.push_back(recorded);
      if (!script.empty()) {
        reply = script.front();
        script.pop_front();
      } else if (handler) {
        reply = handler(recorded);
      }
    }
    const auto until = std::chrono::steady_clock::now() + reply.delay;
    while (std::chrono::steady_clock::now() < until && !stopping.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    response.status = reply.status;
    response.set_content(reply.body, "application/json");
  }
};

FakeService::FakeService() : m_impl(std::make_unique<Impl>()) {
  Impl *impl = m_impl.get();
  const auto serve = [impl](const httplib::Request &request, httplib::Response &response) {
    impl->serve(request, response);
  };
  impl->server.Post(".*", serve);
  impl->server.Get(".*", serve);
  impl->port = impl->server.bind_to_any_port("127.0.0.1");
  impl->thread = std::thread([impl] { impl->server.listen_after_bind(); });
  while (!impl->server.is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

FakeService::~FakeService() {
  m_impl->stopping = true;
  m_impl->server.stop();
  m_impl->thread.join();
}

std::string FakeService::url(const std::string &path) const {
  return "http://127.0.0.1:" + std::to_string(m_impl->port) + path;
}

void FakeService::script(std::vector<FakeReply> replies) {
  std::lock_guard lock(m_impl->mutex);
  m_impl->script.assign(replies.begin(), replies.end());
}

void FakeService::handle(std::function<FakeReply(const RecordedRequest &)> handler) {
  std::lock_guard lock(m_impl->mutex);
  m_impl->handler = std::move(handler);
}

std::vector<RecordedRequest> FakeService::requests() const {
  std::lock_guard lock(m_impl->mutex);
  return m_impl->requests;
}

std::string unreachable_url(const std::string &path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  const int port = ntohs(address.sin_port);
  ::close(fd); // bound but never listening, then closed: connections are refused
  return "http://127.0.0.1:" + std::to_string(port) + path;
}

} // namespace pb::test
