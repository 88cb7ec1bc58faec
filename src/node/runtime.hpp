// SPDX-License-Identifier: MIT
// Private to the node module: `node rl|sft|single` on this machine. The contract is read
// (env.hpp), planned once (replica_plan.hpp), and the plan executed (runtime.cpp) on the
// supervision of support.hpp.
#pragma once

#include <primebeaker/node/env.hpp>
#include <primebeaker/node/replica_plan.hpp>

#include <string>

namespace pb::node {

// What `node rl|sft|single` would do on this machine with `env` (--dry-run): the contract
// parsed, this machine's address and network hints read, then the planner. No side effects.
ReplicaPlan plan_rl_here(const EnvMap &env);
ReplicaPlan plan_sft_here(const EnvMap &env);
ReplicaPlan plan_single_here(const std::string &program, const EnvMap &env);

// `node rl|sft|single`: plans once (as above), then executes the plan. Returns 0; a failure is
// thrown as pb::Error with the replica's exit code.
int run_rl(const EnvMap &env);
int run_sft(const EnvMap &env);
int run_single(const std::string &program, const EnvMap &env);

} // namespace pb::node
