// SPDX-License-Identifier: MIT
// Private to the node module: the Prime-RL config helper, src/node/config_helper.py built in
// (docs/node.md, "Config materialisation").
#pragma once

#include <string>
#include <vector>

namespace pb::node {

// The Python source written out and run as `python3 <file> <request.json> <result.json>`.
// Exit 0 with the result, 3 for a config problem, 4 when Prime-RL cannot be imported; the
// result file carries {"error", "kind", "detail"} then.
const char *config_helper_source();

} // namespace pb::node
