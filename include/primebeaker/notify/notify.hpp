// SPDX-License-Identifier: MIT
// Webhook notifications of a run's transitions (docs/notify.md): the target a launch passes to
// its containers, the one JSON object an actor posts (Slack-compatible `text` included), the
// URL's redaction (the URL is a credential: never printed), the ledger claim that makes one post
// per transition whoever watches, and the bounded background post that never delays a run.
#pragma once

#include <primebeaker/beaker/spec.hpp>
#include <primebeaker/core/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::notify {

// What the containers get (docs/notify.md "Where the URL lives").
inline constexpr const char *k_env_url = "PRIMEBEAKER_NOTIFY_URL";
inline constexpr const char *k_env_events = "PRIMEBEAKER_NOTIFY_EVENTS";

// The events, in the order docs/notify.md lists them; all of them by default.
inline constexpr std::string_view k_preempted = "preempted";
inline constexpr std::string_view k_resubmitted = "resubmitted";
inline constexpr std::string_view k_failed = "failed";
inline constexpr std::string_view k_succeeded = "succeeded";
inline constexpr std::string_view k_stopped = "stopped";
inline constexpr std::string_view k_budget_spent = "budget_spent";
const std::vector<std::string> &all_events();

// "preempted,failed" or a list of names ("budget spent" and "budget-spent" are budget_spent);
// an unknown name is pb::Error exit 2 naming `where` and the known ones. Empty: all.
std::vector<std::string> parse_events(const std::vector<std::string> &items,
                                      std::string_view where);

// Where the webhook URL comes from: `--notify` / `notify.webhook`, either `secret:NAME` (the
// Beaker workspace secret NAME holds the URL: the spec names only the secret) or a literal
// http(s) URL (then a plain env var of the spec: docs/notify.md says why the secret is better).
struct Target {
  std::string url;    // a literal URL, else empty
  std::string secret; // the workspace secret's name, else empty
  std::vector<std::string> events = all_events();
  bool enabled() const { return !url.empty() || !secret.empty(); }
};
// Empty `value`: no target. Throws pb::Error exit 2 naming `where` (never the value) otherwise.
Target parse_target(std::string_view value,
                    const std::vector<std::string> &events,
                    std::string_view where);

// The URL as it may be shown: scheme and host ("https://hooks.slack.com/…"); "(set)" when it
// does not parse. Never the path or query, which carry the credential.
std::string redact_url(std::string_view url);
// The card's line: "secret NOTIFY_URL (preempted, ...)" or "https://host/… (a literal URL in
// the spec; ...)".
std::string describe(const Target &target);

// The env vars a launch adds to the run's and its controller's task: the URL from the secret
// (or plain, for a literal URL) and the events. None when the target is not enabled.
std::vector<beaker::EnvVar> container_env(const Target &target);
// A spec (or any JSON holding `envVars`/`env_vars` arrays) with the value of every
// PRIMEBEAKER_NOTIFY_URL replaced by its redaction, for previews, cards and dry runs.
void redact_spec(OrderedJson &json);

// What an actor posts about one transition.
struct Event {
  std::string event; // one of all_events()
  std::string run;   // the run's name
  std::string experiment_id;
  std::string previous_experiment_id; // the experiment before this one in the chain, else ""
  std::optional<std::int64_t> recoveries;
  std::optional<std::int64_t> steps_lost;
  std::optional<double> gpu_hours;
  std::optional<double> cost_usd;
  std::optional<std::string> wandb_url;
  std::string detail; // one clause for `text` ("resuming from step 20"), may be empty
};
// {event, run, experiment_id, previous_experiment_id, url, recoveries, steps_lost, gpu_hours,
// cost_usd, wandb_url, text}; unknowns are null. Pure.
OrderedJson payload(const Event &event);
// The Slack `text`: "*run* preempted: <url|experiment>; ...". Pure.
std::string slack_text(const Event &event);

// What a watching process knows of the webhook: its own PRIMEBEAKER_NOTIFY_URL /
// PRIMEBEAKER_NOTIFY_EVENTS (a container, from the spec), else the ones the followed run's spec
// sets as plain values (a terminal follower), else nothing.
struct Settings {
  std::string url;
  std::vector<std::string> events = all_events();
  bool wants(std::string_view event) const;
};
std::optional<Settings> settings_from(const std::map<std::string, std::string> &own_env,
                                      const std::map<std::string, std::string> &run_env);

// How a post is tried: `tries` attempts of at most `timeout` each, waiting `backoff`, then
// twice that, between them (docs/notify.md "Failures").
struct Delivery {
  int tries = 4;
  std::chrono::milliseconds timeout{3000};
  std::chrono::milliseconds backoff{500};
  // Another actor's claim with no outcome recorded is taken over after this (its poster died
  // between claim and post); this actor's own claim from before a restart at once.
  std::chrono::seconds lease{60};
};

// Claims the transition in the run's ledger (`<ledger>/notify/<subject>.<event>.json`, created
// exclusively: of two actors one wins) and, when this actor won, posts `event` in the background
// (a detached thread; retried, then logged), then records `<subject>.<event>.done`. `subject` is
// the experiment id, with the attempt for a single-node restart. An empty `ledger_dir` posts
// unclaimed. Never throws; never waits for the network. Returns whether a post was started.
bool announce(const Settings &settings,
              const std::filesystem::path &ledger_dir,
              const std::string &subject,
              const Event &event,
              const std::string &by,
              const Delivery &delivery = {});

// Runs `work` (building an event, then announce()) on a detached thread counted by drain(),
// so that even the ledger reads and the claim's fsync stay off a recovery's path. Never throws.
void in_background(std::function<void()> work);

// Waits at most `limit` for the posts still in flight (at a process's end, so that its last
// post is not cut off); returns how many were still running.
int drain(std::chrono::milliseconds limit);

// The one synchronous post behind announce(), for tests: true on a 2xx answer. Retries
// transport failures, 429 and 5xx; `why` gets the last failure (the URL redacted).
bool post(const std::string &url,
          const std::string &body,
          const Delivery &delivery,
          std::string *why = nullptr);

} // namespace pb::notify
