// SPDX-License-Identifier: MIT
// Work spread over a few threads: what a sweep's submits and a sweep's status queries use, so
// that N slow `beaker` calls cost about N / workers of them (docs/sweep.md "Concurrency").
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace pb::concurrent {

// Calls fn(i) for every i in [0, count) on at most `workers` threads (this one included), each
// index once. The first exception stops handing out indices; it is rethrown once every call that
// started has returned.
template <typename Fn> void for_each_index(std::size_t count, std::size_t workers, const Fn &fn) {
  workers = std::clamp<std::size_t>(workers, 1, std::max<std::size_t>(count, 1));
  if (workers == 1) {
    for (std::size_t i = 0; i < count; ++i) {
      fn(i);
    }
    return;
  }
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex mutex;
  const auto work = [&] {
    while (!failed.load()) {
      const std::size_t i = next.fetch_add(1);
      if (i >= count) {
        return;
      }
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!first) {
          first = std::current_exception();
        }
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (std::size_t w = 1; w < workers; ++w) {
    threads.emplace_back(work);
  }
  work();
  for (auto &thread : threads) {
    thread.join();
  }
  if (first) {
    std::rethrow_exception(first);
  }
}

} // namespace pb::concurrent
