// SPDX-License-Identifier: MIT
#include "execute.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <set>

namespace pb::resume {

namespace {

namespace stdfs = std::filesystem;

std::string joined(const std::vector<std::string> &items) {
  return text::join(items, ", ");
}

// Active jobs of an experiment's job ids, via `beaker job get ... --format json`.
std::vector<JobState> active_jobs(beaker::Client &beaker, const std::vector<std::string> &job_ids) {
  if (job_ids.empty()) {
    return {};
  }
  proc::Argv argv = {"job", "get"};
  argv.insert(argv.end(), job_ids.begin(), job_ids.end());
  argv.insert(argv.end(), {"--format", "json"});
  const auto result = beaker.run_checked(argv, "job get");
  const auto payload = OrderedJson::parse(result.out, nullptr, false);
  if (payload.is_discarded()) {
    throw tool_error(beaker.program() + " job get returned invalid JSON");
  }
  auto states = parse_jobs(payload, job_ids);
  states.erase(
      std::remove_if(states.begin(), states.end(), [](const JobState &s) { return !s.active; }),
      states.end());
  return states;
}

std::string describe(const std::vector<JobState> &jobs) {
  std::vector<std::string> parts;
  for (const auto &job : jobs) {
    parts.push_back(job.name + " (" + job.id + ")");
  }
  return joined(parts);
}

// Children of earlier attempts that were submitted: they write into the same output_dir.
std::vector<std::pair<std::string, std::string>> earlier_children(const ResumePlan &plan) {
  std::vector<std::pair<std::string, std::string>> children; // attempt file, child id
  const stdfs::path attempts = plan.manifest_path.parent_path();
  std::error_code ec;
  for (stdfs::directory_iterator it(attempts, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json") {
      continue;
    }
    std::string text;
    try {
      text = fs::read_file(it->path());
    } catch (const Error &) {
      continue;
    }
    const auto manifest = OrderedJson::parse(text, nullptr, false);
    if (manifest.is_object() && manifest.value("status", "") == "submitted" &&
        manifest.contains("child_experiment_id") && manifest["child_experiment_id"].is_string()) {
      children.emplace_back(it->path().filename().string(),
                            manifest["child_experiment_id"].get<std::string>());
    }
  }
  std::sort(children.begin(), children.end());
  return children;
}

// The workspace secrets and Beaker images the planned experiment names.
std::vector<std::string> secrets_named(const beaker::Experiment &experiment) {
  std::set<std::string> names;
  for (const auto &task : experiment.tasks) {
    for (const auto &var : task.env_vars) {
      if (var.is_secret) {
        names.insert(var.secret);
      }
    }
  }
  return {names.begin(), names.end()};
}

std::vector<std::string> beaker_images_named(const beaker::Experiment &experiment) {
  std::set<std::string> names;
  for (const auto &task : experiment.tasks) {
    if (task.image.kind == beaker::Image::Kind::beaker) {
      names.insert(task.image.ref);
    }
  }
  return {names.begin(), names.end()};
}

std::optional<std::string> workspace_problem(const ResumePlan &plan, beaker::Client &beaker) {
  const std::string &workspace = plan.launch.workspace;
  const auto listed = beaker.run({"secret", "list", "--workspace", workspace, "--format", "json"});
  if (!listed.ok()) {
    const std::string detail(text::trim(listed.err.empty() ? listed.out : listed.err));
    throw tool_error("Beaker resource preflight failed: " + beaker.program() +
                     " secret list --workspace " + workspace + " (" + listed.status() + ")" +
                     (detail.empty() ? "" : ": " + detail));
  }
  const auto secrets = OrderedJson::parse(listed.out, nullptr, false);
  if (secrets.is_discarded() || !secrets.is_array()) {
    throw tool_error("Beaker returned invalid JSON during resource preflight (secret list)");
  }
  std::set<std::string> available;
  for (const auto &secret : secrets) {
    if (secret.is_object() && secret.contains("name") && secret["name"].is_string()) {
      available.insert(secret["name"].get<std::string>());
    }
  }
  std::vector<std::string> missing_secrets;
  for (const auto &name : secrets_named(plan.launch.experiment)) {
    if (available.count(name) == 0) {
      missing_secrets.push_back(name);
    }
  }
  std::vector<std::string> missing_images;
  std::vector<std::string> outside_images;
  std::vector<std::string> uncommitted_images;
  for (const auto &image : beaker_images_named(plan.launch.experiment)) {
    const auto got = beaker.run({"image", "get", image, "--format", "json"});
    auto parsed = got.ok() ? OrderedJson::parse(got.out, nullptr, false) : OrderedJson();
    if (parsed.is_array()) {
      parsed = parsed.empty() ? OrderedJson() : OrderedJson(parsed.front());
    }
    if (!parsed.is_object()) {
      missing_images.push_back(image);
      continue;
    }
    std::string owner;
    if (parsed.contains("workspaceRef") && parsed["workspaceRef"].is_object() &&
        parsed["workspaceRef"].contains("fullName") &&
        parsed["workspaceRef"]["fullName"].is_string()) {
      owner = parsed["workspaceRef"]["fullName"].get<std::string>();
    }
    if (owner != workspace) {
      outside_images.push_back(image + " (owned by " +
                               (owner.empty() ? "unknown workspace" : owner) + ")");
      continue;
    }
    const bool committed = parsed.contains("committed") && parsed["committed"].is_string() &&
                           !text::starts_with(parsed["committed"].get<std::string>(), "0001-");
    if (!committed) {
      uncommitted_images.push_back(image);
    }
  }
  std::vector<std::string> groups;
  if (!missing_secrets.empty()) {
    groups.push_back("missing secrets: " + joined(missing_secrets));
  }
  if (!missing_images.empty()) {
    groups.push_back("missing images: " + joined(missing_images));
  }
  if (!outside_images.empty()) {
    groups.push_back("images outside " + workspace + ": " + joined(outside_images));
  }
  if (!uncommitted_images.empty()) {
    groups.push_back("uncommitted images: " + joined(uncommitted_images));
  }
  if (groups.empty()) {
    return std::nullopt;
  }
  return "Beaker workspace preflight failed for " + workspace + ": " + text::join(groups, "; ");
}

void refuse_existing(const stdfs::path &path) {
  std::error_code ec;
  if (stdfs::exists(stdfs::symlink_status(path, ec))) {
    throw failure("refusing to overwrite resume artifact: " + path.string());
  }
}

// Moves <out>/run_default/broadcasts aside (never deletes it); nullopt when there is none.
std::optional<stdfs::path> archive_broadcasts(const ResumePlan &plan, fs::FileSystem &files) {
  if (!files.exists(plan.broadcasts_dir)) {
    return std::nullopt;
  }
  if (!files.is_directory(plan.broadcasts_dir)) {
    throw failure("Prime-RL broadcast state is not a directory: " + plan.broadcasts_dir.string());
  }
  if (files.exists(plan.broadcast_archive)) {
    throw failure("refusing to overwrite broadcast archive: " + plan.broadcast_archive.string());
  }
  files.create_directories(plan.broadcast_archive.parent_path());
  files.rename(plan.broadcasts_dir, plan.broadcast_archive);
  spdlog::info("moved {} to {}", plan.broadcasts_dir.string(), plan.broadcast_archive.string());
  return plan.broadcast_archive;
}

OrderedJson manifest_json(const ResumePlan &plan,
                          const std::string &created_at,
                          const std::string &status,
                          const std::optional<std::string> &child,
                          const std::optional<stdfs::path> &archive,
                          const std::optional<std::string> &error) {
  OrderedJson manifest = OrderedJson::object();
  manifest["schema_version"] = 1;
  manifest["created_at"] = created_at;
  manifest["status"] = status;
  const OrderedJson resume = plan.resume_json();
  for (const auto &[key, value] : resume.items()) {
    manifest[key] = value;
  }
  if (child) {
    manifest["child_experiment_id"] = *child;
  }
  if (archive) {
    manifest["broadcast_archive"] = archive->string();
  }
  if (error) {
    manifest["error"] = *error;
  }
  return manifest;
}

} // namespace

std::string manifest_timestamp(std::chrono::system_clock::time_point when) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(when.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &utc);
  char fraction[16];
  std::snprintf(
      fraction, sizeof fraction, ".%06lld+00:00", static_cast<long long>(micros % 1000000));
  return std::string(buffer) + fraction;
}

std::vector<Refusal> refusals(const ResumePlan &plan, ResumeEffects &effects) {
  std::vector<Refusal> found;
  if (const auto active = active_jobs(effects.beaker, plan.source_job_ids); !active.empty()) {
    found.push_back(Refusal{
        "refusing to resume while the source topology is active; two launches must not mutate "
        "one output directory. Active jobs: " +
            describe(active),
        true});
  }
  for (const auto &[attempt, child] : earlier_children(plan)) {
    const auto payload = effects.beaker.get_experiment(child);
    std::vector<std::string> job_ids;
    if (!payload.empty() && payload.front().contains("jobs")) {
      for (const auto &job : payload.front()["jobs"]) {
        if (job.contains("id") && job["id"].is_string()) {
          job_ids.push_back(job["id"].get<std::string>());
        }
      }
    }
    if (const auto active = active_jobs(effects.beaker, job_ids); !active.empty()) {
      found.push_back(
          Refusal{"refusing to resume while " + child +
                      " (submitted by an earlier resume, attempts/" + attempt +
                      ") is active in the same output directory. Active jobs: " + describe(active),
                  true});
    }
  }
  if (const auto problem = workspace_problem(plan, effects.beaker)) {
    found.push_back(Refusal{*problem, false});
  }
  return found;
}

void reverify_checkpoint(const ResumePlan &plan) {
  if (plan.from_start) {
    return; // no step was chosen: the node runtime decides at its start (docs/recovery.md)
  }
  const auto listing = checkpoints::list_steps(plan.checkpoints, plan.step_name);
  const auto statuses = checkpoints::evaluate(listing);
  if (statuses.size() != 1 || !statuses.front().complete) {
    Error error = failure("selected checkpoint changed while preparing the resume attempt: step " +
                          std::to_string(plan.record.step) + " is no longer complete");
    for (const auto &status : statuses) {
      for (const auto &line : status.missing) {
        error.add_context("missing: " + line);
      }
    }
    throw error;
  }
  if (checkpoints::make_record(listing.steps.front(), plan.checkpoints) != plan.record) {
    throw failure("selected checkpoint changed while preparing the resume attempt: step " +
                  std::to_string(plan.record.step) + " files or sizes differ from the plan");
  }
}

OrderedJson execute(const ResumePlan &plan, ResumeEffects &effects) {
  // Every write-once target is checked before anything changes, so a refusal leaves no trace.
  refuse_existing(plan.generated_config_path);
  refuse_existing(plan.manifest_path);
  if (stdfs::exists(plan.broadcast_archive)) {
    throw failure("refusing to overwrite broadcast archive: " + plan.broadcast_archive.string());
  }
  if (const auto found = refusals(plan, effects); !found.empty()) {
    // Active jobs pass once Beaker finalizes them: exit 75 tells a recovering `follow` to try
    // again. A missing secret or image does not pass by waiting: exit 1.
    const bool passes_later = std::all_of(
        found.begin(), found.end(), [](const Refusal &refusal) { return refusal.passes_later; });
    Error error(passes_later ? ExitCode::retry_later : ExitCode::failure, found.front().message);
    for (std::size_t i = 1; i < found.size(); ++i) {
      error.add_context(found[i].message);
    }
    throw error;
  }
  reverify_checkpoint(plan);

  // The resume TOML first: it is inert until submitted, and from here on every failure leaves
  // a manifest saying how far the attempt got.
  effects.files.create_directories(plan.generated_config_path.parent_path());
  effects.files.write_file_atomic(plan.generated_config_path, plan.generated_config);
  spdlog::info("wrote {}", plan.generated_config_path.string());

  const auto write_manifest = [&](const OrderedJson &manifest) {
    effects.files.create_directories(plan.manifest_path.parent_path());
    refuse_existing(plan.manifest_path);
    effects.files.write_file_atomic(plan.manifest_path, to_pretty_json(manifest));
  };
  std::optional<stdfs::path> archive;
  std::string beaker_stdout;
  OrderedJson controller;
  try {
    archive = archive_broadcasts(plan, effects.files);
    launch::LaunchEffects launch_effects{effects.files, effects.beaker, effects.stager};
    const OrderedJson receipt = launch::execute_submit(plan.launch, launch_effects);
    beaker_stdout = receipt.value("stdout", "");
    controller =
        receipt.value("recovery", OrderedJson::object()).value("controller", OrderedJson());
  } catch (const Error &error) {
    try {
      write_manifest(manifest_json(plan,
                                   manifest_timestamp(effects.clock.now()),
                                   "submission_failed",
                                   std::nullopt,
                                   archive,
                                   std::string(error.what())));
    } catch (const Error &manifest_error) {
      Error both = error;
      both.add_context(std::string("and the attempt manifest could not be written: ") +
                       manifest_error.what());
      throw both;
    }
    Error annotated = error;
    annotated.add_context("attempt manifest: " + plan.manifest_path.string());
    throw annotated;
  }
  const auto child = beaker::parse_created_experiment_id(beaker_stdout);
  write_manifest(manifest_json(
      plan, manifest_timestamp(effects.clock.now()), "submitted", child, archive, std::nullopt));
  OrderedJson out = OrderedJson::object();
  out["resume"] = plan.resume_json();
  out["child_experiment_id"] = child ? OrderedJson(*child) : OrderedJson(nullptr);
  out["stdout"] = beaker_stdout;
  if (!controller.is_null()) {
    out["controller"] = controller;
  }
  return out;
}

} // namespace pb::resume
