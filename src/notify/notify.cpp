// SPDX-License-Identifier: MIT
// Webhook notifications (docs/notify.md): the target and its env vars, the payload, redaction,
// the ledger claim and the bounded background post over registry's libcurl client.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/notify/notify.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/registry/http.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace pb::notify {

namespace {

std::string canonical_event(std::string name) {
  name = std::string(text::trim(name));
  for (char &c : name) {
    c = c == ' ' || c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return name;
}

bool is_url(std::string_view value) {
  return value.starts_with("https://") || value.starts_with("http://");
}

// The secret names Beaker accepts: what `beaker secret write` takes, without a path.
bool is_secret_name(std::string_view name) {
  return !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
  });
}

std::string round_to(double value, int digits) {
  return fmt::format("{:.{}f}", value, digits);
}

// The posts in flight, for drain(). Never destroyed: a post still hanging when the process exits
// is left running.
struct InFlight {
  std::mutex mutex;
  std::condition_variable done;
  int count = 0;
  // Each post's thread and whether its work is over. A thread whose work is over is joined (by
  // the next post, or drain()), so that its own end - libcurl's thread-local TLS state freed -
  // is over before the process exits.
  std::vector<std::pair<std::thread, std::shared_ptr<bool>>> threads;
  void join_finished() { // with `mutex` held
    for (auto it = threads.begin(); it != threads.end();) {
      if (*it->second) {
        it->first.join();
        it = threads.erase(it);
      } else {
        ++it;
      }
    }
  }
};
InFlight &in_flight() {
  static auto *state = new InFlight;
  return *state;
}

// Runs `work` (which does not throw) on its own thread, counted by drain(): a webhook that hangs
// must not hold a recovery or a run (docs/notify.md). Throws when no thread can be started.
void start_counted(std::function<void()> work) {
  auto &state = in_flight();
  auto finished = std::make_shared<bool>(false);
  std::lock_guard<std::mutex> lock(state.mutex);
  state.join_finished();
  std::thread thread([work = std::move(work), finished, &state] {
    work();
    std::lock_guard<std::mutex> done(state.mutex);
    *finished = true; // under the lock: a joiner that sees it holds the lock, so this is past it
    --state.count;
    state.done.notify_all();
  });
  ++state.count;
  state.threads.emplace_back(std::move(thread), std::move(finished));
}

bool loopback(std::string_view url) {
  const auto host = redact_url(url);
  return host.find("://127.") != std::string::npos ||
         host.find("://localhost") != std::string::npos ||
         host.find("://[::1]") != std::string::npos;
}

} // namespace

const std::vector<std::string> &all_events() {
  static const std::vector<std::string> events = {std::string(k_preempted),
                                                  std::string(k_resubmitted),
                                                  std::string(k_failed),
                                                  std::string(k_succeeded),
                                                  std::string(k_stopped),
                                                  std::string(k_budget_spent)};
  return events;
}

std::vector<std::string> parse_events(const std::vector<std::string> &items,
                                      std::string_view where) {
  std::vector<std::string> out;
  for (const auto &item : items) {
    for (const auto &piece : text::split(item, ',')) {
      const std::string name = canonical_event(piece);
      if (name.empty()) {
        continue;
      }
      if (std::find(all_events().begin(), all_events().end(), name) == all_events().end()) {
        throw usage_error(fmt::format("{}: unknown event '{}' (known: {})",
                                      where,
                                      std::string(text::trim(piece)),
                                      text::join(all_events(), ", ")));
      }
      if (std::find(out.begin(), out.end(), name) == out.end()) {
        out.push_back(name);
      }
    }
  }
  return out.empty() ? all_events() : out;
}

Target parse_target(std::string_view value,
                    const std::vector<std::string> &events,
                    std::string_view where) {
  Target target;
  target.events = parse_events(events, where);
  const auto trimmed = text::trim(value);
  if (trimmed.empty()) {
    return target;
  }
  if (trimmed.starts_with("secret:")) {
    const auto name = trimmed.substr(std::string_view("secret:").size());
    if (!is_secret_name(name)) {
      throw usage_error(fmt::format(
          "{}: secret:NAME must name a Beaker workspace secret ([A-Za-z0-9_.-], at most 128)",
          where));
    }
    target.secret = std::string(name);
    return target;
  }
  if (!is_url(trimmed) || trimmed.find_first_of(" \t\n") != std::string_view::npos) {
    // Never echo the value: it may be the credential itself, mistyped.
    throw usage_error(fmt::format("{}: expects an http(s):// URL or secret:NAME (a workspace "
                                  "secret holding the URL)",
                                  where));
  }
  target.url = std::string(trimmed);
  return target;
}

std::string redact_url(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) {
    return "(set)";
  }
  auto rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    rest = rest.substr(at + 1); // user:password@ is a credential too
  }
  if (rest.empty()) {
    return "(set)";
  }
  return fmt::format("{}://{}/…", url.substr(0, scheme_end), rest);
}

std::string describe(const Target &target) {
  const std::string events = text::join(target.events, ", ");
  if (!target.secret.empty()) {
    return fmt::format("secret {} ({})", target.secret, events);
  }
  return fmt::format("{} ({}; a literal URL is a plain value of the spec: prefer "
                     "--notify secret:NAME, docs/notify.md)",
                     redact_url(target.url),
                     events);
}

std::vector<beaker::EnvVar> container_env(const Target &target) {
  if (!target.enabled()) {
    return {};
  }
  std::vector<beaker::EnvVar> env;
  env.push_back(beaker::EnvVar::plain(k_env_events, text::join(target.events, ",")));
  env.push_back(target.secret.empty() ? beaker::EnvVar::plain(k_env_url, target.url)
                                      : beaker::EnvVar::from_secret(k_env_url, target.secret));
  return env;
}

void redact_spec(OrderedJson &json) {
  if (json.is_array()) {
    for (auto &item : json) {
      redact_spec(item);
    }
    return;
  }
  if (!json.is_object()) {
    return;
  }
  if (json.contains("name") && json["name"].is_string() && json["name"] == k_env_url &&
      json.contains("value") && json["value"].is_string()) {
    json["value"] = redact_url(json["value"].get<std::string>());
  }
  for (auto &[key, value] : json.items()) {
    redact_spec(value);
  }
}

std::string slack_text(const Event &e) {
  const std::string url = "https://beaker.org/ex/" + e.experiment_id;
  std::string verb =
      e.event == k_budget_spent ? "was not recovered: its recovery budget is spent" : e.event;
  std::string out = fmt::format(
      "*{}* {}: <{}|{}>", e.run.empty() ? e.experiment_id : e.run, verb, url, e.experiment_id);
  if (!e.previous_experiment_id.empty() && e.previous_experiment_id != e.experiment_id) {
    out += fmt::format(" (after {})", e.previous_experiment_id);
  }
  std::vector<std::string> facts;
  if (!e.detail.empty()) {
    facts.push_back(e.detail);
  }
  if (e.recoveries) {
    facts.push_back(fmt::format("{} recover{}", *e.recoveries, *e.recoveries == 1 ? "y" : "ies"));
  }
  if (e.steps_lost) {
    facts.push_back(fmt::format("{} step{} lost", *e.steps_lost, *e.steps_lost == 1 ? "" : "s"));
  }
  if (e.gpu_hours) {
    facts.push_back(round_to(*e.gpu_hours, 2) + " GPU-h");
  }
  if (e.cost_usd) {
    facts.push_back("$" + round_to(*e.cost_usd, 2));
  }
  if (!facts.empty()) {
    out += "; " + text::join(facts, ", ");
  }
  if (e.wandb_url) {
    out += fmt::format(" <{}|W&B>", *e.wandb_url);
  }
  return out;
}

OrderedJson payload(const Event &e) {
  const auto or_null = [](const auto &value) {
    return value ? OrderedJson(*value) : OrderedJson(nullptr);
  };
  OrderedJson out = OrderedJson::object();
  out["event"] = e.event;
  out["run"] = e.run;
  out["experiment_id"] = e.experiment_id;
  out["previous_experiment_id"] = e.previous_experiment_id.empty()
                                      ? OrderedJson(nullptr)
                                      : OrderedJson(e.previous_experiment_id);
  out["url"] = "https://beaker.org/ex/" + e.experiment_id;
  out["recoveries"] = or_null(e.recoveries);
  out["steps_lost"] = or_null(e.steps_lost);
  out["gpu_hours"] =
      e.gpu_hours ? OrderedJson(std::round(*e.gpu_hours * 1e4) / 1e4) : OrderedJson(nullptr);
  out["cost_usd"] =
      e.cost_usd ? OrderedJson(std::round(*e.cost_usd * 100) / 100) : OrderedJson(nullptr);
  out["wandb_url"] = or_null(e.wandb_url);
  out["text"] = slack_text(e);
  return out;
}

bool Settings::wants(std::string_view event) const {
  return !url.empty() && std::find(events.begin(), events.end(), event) != events.end();
}

std::optional<Settings> settings_from(const std::map<std::string, std::string> &own_env,
                                      const std::map<std::string, std::string> &run_env) {
  for (const auto *env : {&own_env, &run_env}) {
    const auto url = env->find(k_env_url);
    if (url == env->end() || !is_url(text::trim(url->second))) {
      continue;
    }
    Settings settings;
    settings.url = std::string(text::trim(url->second));
    if (const auto events = env->find(k_env_events); events != env->end()) {
      try {
        settings.events = parse_events({events->second}, k_env_events);
      } catch (const Error &error) {
        spdlog::warn("notifications: {}; posting every event", error.what());
      }
    }
    return settings;
  }
  return std::nullopt;
}

bool post(const std::string &url,
          const std::string &body,
          const Delivery &delivery,
          std::string *why) {
  registry::HttpRequest request;
  request.method = "POST";
  request.url = url;
  request.headers = {"Content-Type: application/json"};
  request.body = body;
  request.timeout = delivery.timeout;
  request.use_proxy = !loopback(url); // a webhook is remote; a test's sink is not
  request.max_body = 512;
  auto wait = delivery.backoff;
  std::string last;
  for (int attempt = 1; attempt <= std::max(1, delivery.tries); ++attempt) {
    registry::HttpResponse response;
    try {
      response = registry::http_request(request, "a webhook notification");
    } catch (const Error &error) { // no libcurl: no retry mends that
      last = error.what();
      break;
    }
    if (response.error.empty() && response.status >= 200 && response.status < 300) {
      return true;
    }
    // libcurl's reasons name at most the host; the path (the credential) never appears.
    last = response.error.empty() ? fmt::format("HTTP {}", response.status) : response.error;
    const bool retryable =
        !response.error.empty() || response.status == 429 || response.status >= 500;
    if (!retryable || attempt == delivery.tries) {
      break;
    }
    std::this_thread::sleep_for(wait);
    wait *= 2;
  }
  if (why != nullptr) {
    *why = last;
  }
  return false;
}

namespace {

// The claim of generation `g` (1: `<subject>.<event>.json`), and the record of its outcome.
std::filesystem::path
claim_path(const std::filesystem::path &dir, const std::string &stem, int generation) {
  return dir / "notify" /
         (generation == 1 ? stem + ".json" : fmt::format("{}.{}.json", stem, generation));
}

// Whether this actor may post: it wins the first claim, or takes over a claim that has no
// outcome recorded and is its own from before a restart (killed between claim and post) or
// older than `lease`; of racing takers one wins the next generation (docs/notify.md).
bool claim(const std::filesystem::path &dir,
           const std::string &subject,
           const std::string &event,
           const std::string &by,
           std::chrono::seconds lease) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string stem = subject + "." + event;
  if (recovery::ledger::write_notification_claim(dir, subject, event, by, now)) {
    return true;
  }
  std::error_code ec;
  if (std::filesystem::exists(dir / "notify" / (stem + ".done"), ec)) {
    return false;
  }
  int generation = 1;
  while (std::filesystem::exists(claim_path(dir, stem, generation + 1), ec)) {
    ++generation;
  }
  const auto text = fs::read_file(claim_path(dir, stem, generation), 1);
  const auto held = nlohmann::json::parse(text, nullptr, false);
  if (!held.is_object()) {
    return false;
  }
  const bool mine = held.value("by", std::string()) == by;
  const double age = now - held.value("claimed_unix", now);
  if (!mine && age < static_cast<double>(lease.count())) {
    return false;
  }
  OrderedJson j = nlohmann::ordered_json::parse(text);
  j["by"] = by;
  j["claimed_unix"] = now;
  j["taken_over"] = held.value("by", std::string());
  return fs::create_exclusive(claim_path(dir, stem, generation + 1), j.dump(2) + "\n");
}

} // namespace

bool announce(const Settings &settings,
              const std::filesystem::path &ledger_dir,
              const std::string &subject,
              const Event &event,
              const std::string &by,
              const Delivery &delivery) {
  if (!settings.wants(event.event)) {
    return false;
  }
  try {
    if (!ledger_dir.empty() && !claim(ledger_dir, subject, event.event, by, delivery.lease)) {
      spdlog::debug("notification {} of {}: claimed by another actor", event.event, subject);
      return false;
    }
    auto body = std::make_shared<std::string>(payload(event).dump());
    auto url = std::make_shared<std::string>(settings.url);
    const std::string what = fmt::format("{} of {}", event.event, subject);
    const std::filesystem::path done =
        ledger_dir.empty() ? std::filesystem::path()
                           : ledger_dir / "notify" / (subject + "." + event.event + ".done");
    start_counted([body, url, what, delivery, done] {
      std::string why;
      const bool sent = post(*url, *body, delivery, &why);
      if (sent) {
        spdlog::info("notified {} ({})", what, redact_url(*url));
      } else {
        spdlog::warn("notification {} to {} failed after {} tries: {}",
                     what,
                     redact_url(*url),
                     delivery.tries,
                     why);
      }
      try {
        if (!done.empty()) { // settled either way: nobody takes the claim over
          fs::create_exclusive(done, sent ? "sent\n" : "failed: " + why + "\n");
        }
      } catch (const std::exception &) {
      }
    });
    return true;
  } catch (const std::exception &error) { // the ledger unwritable, no thread: only logged
    spdlog::warn("notification {} of {} not sent: {}", event.event, subject, error.what());
    return false;
  }
}

void in_background(std::function<void()> work) {
  try {
    start_counted([work = std::move(work)] {
      try {
        work();
      } catch (const std::exception &error) {
        spdlog::warn("notification not sent: {}", error.what());
      }
    });
  } catch (const std::exception &error) { // no thread: only logged
    spdlog::warn("notification not sent: {}", error.what());
  }
}

int drain(std::chrono::milliseconds limit) {
  auto &state = in_flight();
  std::unique_lock<std::mutex> lock(state.mutex);
  state.done.wait_for(lock, limit, [&] { return state.count == 0; });
  state.join_finished();
  return state.count;
}

} // namespace pb::notify
