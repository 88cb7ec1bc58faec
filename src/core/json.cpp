// SPDX-License-Identifier: MIT
#include <primebeaker/core/json.hpp>

#include <ostream>

namespace pb {

std::string to_pretty_json(const OrderedJson &value) {
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void print_json(std::ostream &out, const OrderedJson &value) {
  out << to_pretty_json(value);
  out.flush();
}

} // namespace pb
