// SPDX-License-Identifier: MIT
#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <ostream>

namespace pb {
namespace {

template <class Json> bool python_truthy(const Json &value) {
  if (value.is_null()) {
    return false;
  }
  if (value.is_boolean()) {
    return value.template get<bool>();
  }
  if (value.is_number_float()) {
    return value.template get<double>() != 0.0; // -0.0 is zero; NaN compares unequal, so true
  }
  if (value.is_number_unsigned()) {
    return value.template get<std::uint64_t>() != 0;
  }
  if (value.is_number_integer()) {
    return value.template get<std::int64_t>() != 0;
  }
  if (value.is_string()) {
    return !value.template get_ref<const std::string &>().empty();
  }
  if (value.is_array() || value.is_object()) {
    return !value.empty();
  }
  return true;
}

} // namespace

bool truthy(const nlohmann::json &value) {
  return python_truthy(value);
}

bool truthy(const OrderedJson &value) {
  return python_truthy(value);
}

std::string to_pretty_json(const OrderedJson &value) {
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void print_json(std::ostream &out, const OrderedJson &value) {
  out << to_pretty_json(value);
  out.flush();
}

} // namespace pb
