// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>

namespace pb {

// "Now", behind an interface so that plans and liveness checks are testable.
class Clock {
public:
  virtual ~Clock() = default;
  virtual std::chrono::system_clock::time_point now() = 0;
};

class SystemClock final : public Clock {
public:
  std::chrono::system_clock::time_point now() override { return std::chrono::system_clock::now(); }
};

} // namespace pb
