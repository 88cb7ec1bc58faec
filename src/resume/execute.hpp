// SPDX-License-Identifier: MIT
// The effects of a resume plan (docs/resume.md, with the ordering fixes of
// docs/resume.md).
#pragma once

#include "plan.hpp"

#include <primebeaker/core/clock.hpp>
#include <primebeaker/core/json.hpp>

#include <string>
#include <vector>

namespace pb::beaker {
class Client;
}
namespace pb::fs {
class FileSystem;
}
namespace pb::staging {
class Stager;
}

namespace pb::resume {

struct ResumeEffects {
  beaker::Client &beaker;
  fs::FileSystem &files;
  Clock &clock;
  staging::Stager &stager;
};

// The read-only refusals, each a full message: a source job (or the child of an earlier
// submitted attempt) still active, and the workspace preflight (missing secrets, missing,
// foreign or uncommitted images). Runs only `beaker ... get/list` calls.
// `passes_later`: the refusal goes away by waiting (jobs Beaker has not finalized yet), and
// `rl resume` then exits 75 (ExitCode::retry_later) instead of 1.
struct Refusal {
  std::string message;
  bool passes_later = false;
};
std::vector<Refusal> refusals(const ResumePlan &plan, ResumeEffects &effects);

// Re-lists the selected step and throws pb::Error (exit 1) unless it is still complete with the
// same files and sizes. Reads directories only.
void reverify_checkpoint(const ResumePlan &plan);

// The real resume: refusals, write-once checks, re-verification, resume TOML, broadcast
// archive, spec + submit, manifest (written for every attempt that got as far as writing the
// TOML, success or failure). Returns {"resume", "child_experiment_id", "stdout"}.
OrderedJson execute(const ResumePlan &plan, ResumeEffects &effects);

// The manifest's created_at: "YYYY-MM-DDTHH:MM:SS.ffffff+00:00". Pure.
std::string manifest_timestamp(std::chrono::system_clock::time_point when);

} // namespace pb::resume
