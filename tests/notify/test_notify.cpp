// SPDX-License-Identifier: MIT
// Webhook notifications (docs/notify.md): the payload and its Slack text, the URL's redaction
// wherever it could be shown, the target's forms, the ledger claim that makes one post per
// transition, retries, and that a webhook which hangs delays nobody.
#include "http_sink.hpp"
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/notify/notify.hpp>
#include <primebeaker/recovery/ledger.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>

namespace {

using namespace pb::notify;
using pb::OrderedJson;
using Clock = std::chrono::steady_clock;

constexpr const char *k_secret_url = "https://hooks.slack.com/services/T0/B0/s3cr3tT0k3n";

Event preempted() {
  Event e;
  e.event = "preempted";
  e.run = "search";
  e.experiment_id = "01JSRC";
  e.recoveries = 1;
  e.steps_lost = 7;
  e.gpu_hours = 12.345678;
  e.detail = "recovery 1 of --max-recoveries 3";
  return e;
}

TEST(NotifyPayload, CarriesEveryKeyInOrderWithNullsForTheUnknown) {
  const OrderedJson j = payload(preempted());
  std::vector<std::string> keys;
  for (const auto &[key, value] : j.items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys,
            (std::vector<std::string>{"event",
                                      "run",
                                      "experiment_id",
                                      "previous_experiment_id",
                                      "url",
                                      "recoveries",
                                      "steps_lost",
                                      "gpu_hours",
                                      "cost_usd",
                                      "wandb_url",
                                      "text"}));
  EXPECT_EQ(j["event"], "preempted");
  EXPECT_EQ(j["url"], "https://beaker.org/ex/01JSRC");
  EXPECT_TRUE(j["previous_experiment_id"].is_null());
  EXPECT_TRUE(j["cost_usd"].is_null());
  EXPECT_TRUE(j["wandb_url"].is_null());
  EXPECT_EQ(j["recoveries"], 1);
  EXPECT_EQ(j["steps_lost"], 7);
  EXPECT_DOUBLE_EQ(j["gpu_hours"].get<double>(), 12.3457);
  EXPECT_EQ(j["text"],
            "*search* preempted: <https://beaker.org/ex/01JSRC|01JSRC>; recovery 1 of "
            "--max-recoveries 3, 1 recovery, 7 steps lost, 12.35 GPU-h");
}

TEST(NotifyPayload, AResubmissionNamesBothExperimentsAndTheBudgetItsOwnWords) {
  Event e = preempted();
  e.event = "resubmitted";
  e.previous_experiment_id = "01JSRC";
  e.experiment_id = "01JCHILD";
  e.cost_usd = 31.254;
  e.wandb_url = "https://wandb.ai/team/proj/runs/abc";
  const OrderedJson j = payload(e);
  EXPECT_EQ(j["previous_experiment_id"], "01JSRC");
  EXPECT_EQ(j["experiment_id"], "01JCHILD");
  EXPECT_DOUBLE_EQ(j["cost_usd"].get<double>(), 31.25);
  const std::string text = j["text"];
  EXPECT_NE(text.find("<https://beaker.org/ex/01JCHILD|01JCHILD> (after 01JSRC)"),
            std::string::npos);
  EXPECT_NE(text.find("$31.25"), std::string::npos);
  EXPECT_NE(text.find("<https://wandb.ai/team/proj/runs/abc|W&B>"), std::string::npos);
  e.event = "budget_spent";
  EXPECT_NE(slack_text(e).find("was not recovered: its recovery budget is spent"),
            std::string::npos);
}

TEST(NotifyRedaction, ShowsTheSchemeAndHostOnly) {
  EXPECT_EQ(redact_url(k_secret_url), "https://hooks.slack.com/…");
  EXPECT_EQ(redact_url("https://user:pw@example.org:8443/x?token=1"), "https://example.org:8443/…");
  EXPECT_EQ(redact_url("http://127.0.0.1:9/hook"), "http://127.0.0.1:9/…");
  EXPECT_EQ(redact_url("not a url"), "(set)");
  EXPECT_EQ(redact_url("https:///path"), "(set)");
}

TEST(NotifyRedaction, ASpecDumpNeverHoldsTheUrl) {
  const Target target = parse_target(k_secret_url, {}, "--notify");
  OrderedJson spec = {
      {"tasks",
       {{{"name", "main"},
         {"envVars", {{{"name", "A"}, {"value", "x"}}, {{"name", "B"}, {"secret", "S"}}}}}}}};
  for (const auto &var : container_env(target)) {
    spec["tasks"][0]["envVars"].push_back({{"name", var.name}, {"value", var.value}});
  }
  ASSERT_NE(spec.dump().find("s3cr3tT0k3n"), std::string::npos); // what submit writes
  redact_spec(spec);
  EXPECT_EQ(spec.dump().find("s3cr3tT0k3n"), std::string::npos) << spec.dump();
  EXPECT_NE(spec.dump().find("https://hooks.slack.com/…"), std::string::npos);
  EXPECT_EQ(spec["tasks"][0]["envVars"][0]["value"], "x"); // other values untouched
  EXPECT_NE(describe(target).find("https://hooks.slack.com/…"), std::string::npos);
  EXPECT_EQ(describe(target).find("s3cr3t"), std::string::npos);
}

TEST(NotifyTarget, ASecretIsPassedByNameOnly) {
  const Target target =
      parse_target("secret:SLACK_HOOK", {"preempted", "budget spent"}, "--notify");
  EXPECT_EQ(target.secret, "SLACK_HOOK");
  EXPECT_EQ(target.events, (std::vector<std::string>{"preempted", "budget_spent"}));
  const auto env = container_env(target);
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0].name, k_env_events);
  EXPECT_EQ(env[0].value, "preempted,budget_spent");
  EXPECT_EQ(env[1].name, k_env_url);
  EXPECT_TRUE(env[1].is_secret);
  EXPECT_EQ(env[1].secret, "SLACK_HOOK");
  EXPECT_EQ(describe(target), "secret SLACK_HOOK (preempted, budget_spent)");
  EXPECT_TRUE(container_env(parse_target("", {}, "--notify")).empty());
}

TEST(NotifyTarget, AWrongValueIsRefusedWithoutEchoingIt) {
  try {
    parse_target("hooks.slack.com/services/T0/B0/s3cr3tT0k3n", {}, "--notify");
    FAIL() << "accepted";
  } catch (const pb::Error &error) {
    EXPECT_EQ(error.code(), 2);
    EXPECT_EQ(std::string(error.what()).find("s3cr3t"), std::string::npos) << error.what();
  }
  EXPECT_THROW(parse_target("secret:a/b", {}, "--notify"), pb::Error);
  EXPECT_THROW(parse_events({"preempted,exploded"}, "notify.events"), pb::Error);
  EXPECT_EQ(parse_events({}, "notify.events"), all_events());
}

TEST(NotifySettings, TheProcessOwnVariablesWinThenTheRunSpecsPlainOnes) {
  EXPECT_FALSE(settings_from({}, {}));
  const auto from_run = settings_from({}, {{k_env_url, "http://run/x"}, {k_env_events, "failed"}});
  ASSERT_TRUE(from_run);
  EXPECT_EQ(from_run->url, "http://run/x");
  EXPECT_TRUE(from_run->wants("failed"));
  EXPECT_FALSE(from_run->wants("preempted"));
  const auto own = settings_from({{k_env_url, "https://own/y"}}, {{k_env_url, "http://run/x"}});
  EXPECT_EQ(own->url, "https://own/y");
  EXPECT_TRUE(own->wants("succeeded"));
}

TEST(NotifyPost, TwoActorsClaimingOneTransitionPostOnce) {
  pb::test::HttpSink sink;
  pb::test::TempDir tmp;
  Settings settings;
  settings.url = sink.url();
  const Event event = preempted();
  EXPECT_TRUE(announce(settings, tmp.path(), event.experiment_id, event, "controller A"));
  EXPECT_FALSE(announce(settings, tmp.path(), event.experiment_id, event, "terminal B"));
  Event next = event;
  next.event = "resubmitted";
  EXPECT_TRUE(announce(settings, tmp.path(), event.experiment_id, next, "terminal B"));
  EXPECT_EQ(drain(std::chrono::seconds(10)), 0);
  ASSERT_EQ(sink.wait_for(2, 5), 2u);
  std::vector<std::string> events;
  for (const auto &body : sink.bodies()) {
    events.push_back(nlohmann::json::parse(body)["event"]);
  }
  std::sort(events.begin(), events.end());
  EXPECT_EQ(events, (std::vector<std::string>{"preempted", "resubmitted"}));
  const auto claim =
      nlohmann::json::parse(pb::fs::read_file(tmp.path() / "notify" / "01JSRC.preempted.json"));
  EXPECT_EQ(claim["by"], "controller A");
  EXPECT_EQ(claim["event"], "preempted");
  // The resubmission ledger does not mistake it for a claim of its own.
  EXPECT_TRUE(pb::recovery::ledger::read(tmp.path()).unreadable.empty());
  EXPECT_TRUE(pb::recovery::ledger::read(tmp.path()).claims.empty());
}

// A controller killed between its claim and its post (docs/notify.md "Exactly one post"): after
// its restart it takes its own claim over; another actor waits for the lease.
TEST(NotifyPost, AClaimWithoutAnOutcomeIsTakenOverByItsOwnerOrAfterTheLease) {
  namespace ledger = pb::recovery::ledger;
  pb::test::HttpSink sink;
  Settings settings;
  settings.url = sink.url();
  {
    pb::test::TempDir old;
    ASSERT_TRUE(ledger::write_notification_claim(old.path(), "01JSRC", "preempted", "C", 1.0e9));
    EXPECT_TRUE(announce(settings, old.path(), "01JSRC", preempted(), "B"))
        << "not B's, but its lease (60 s) ran out long ago";
    EXPECT_EQ(drain(std::chrono::seconds(10)), 0);
    EXPECT_EQ(sink.wait_for(1, 5), 1u);
  }
  pb::test::TempDir tmp;
  ASSERT_TRUE(ledger::write_notification_claim(tmp.path(), "01JSRC", "preempted", "C", 4.0e9));
  EXPECT_FALSE(announce(settings, tmp.path(), "01JSRC", preempted(), "B")); // fresh, not B's
  EXPECT_TRUE(announce(settings, tmp.path(), "01JSRC", preempted(), "C"));  // C restarted
  EXPECT_EQ(drain(std::chrono::seconds(10)), 0);
  EXPECT_EQ(sink.wait_for(2, 5), 2u);
  EXPECT_TRUE(std::filesystem::exists(tmp.path() / "notify" / "01JSRC.preempted.2.json"));
  EXPECT_EQ(pb::fs::read_file(tmp.path() / "notify" / "01JSRC.preempted.done"), "sent\n");
  // Settled: nobody posts it again, not even its owner after another restart.
  EXPECT_FALSE(announce(settings, tmp.path(), "01JSRC", preempted(), "C"));
  Delivery soon;
  soon.lease = std::chrono::seconds(0);
  EXPECT_FALSE(announce(settings, tmp.path(), "01JSRC", preempted(), "B", soon));
  EXPECT_EQ(drain(std::chrono::seconds(10)), 0);
  EXPECT_EQ(sink.bodies().size(), 2u);
}

TEST(NotifyPost, AnEventNotAskedForIsNeitherClaimedNorPosted) {
  pb::test::TempDir tmp;
  Settings settings;
  settings.url = "http://127.0.0.1:9/x";
  settings.events = {"failed"};
  EXPECT_FALSE(announce(settings, tmp.path(), "01JSRC", preempted(), "me"));
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "notify"));
}

TEST(NotifyPost, AFailingWebhookIsRetriedWithBackoff) {
  pb::test::HttpSink sink({503, 500});
  Delivery delivery;
  delivery.backoff = std::chrono::milliseconds(50);
  const auto start = Clock::now();
  std::string why;
  EXPECT_TRUE(post(sink.url(), R"({"text":"x"})", delivery, &why)) << why;
  EXPECT_EQ(sink.bodies().size(), 3u);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(150)); // 50 + 100
  pb::test::HttpSink refusing({400});
  EXPECT_FALSE(post(refusing.url(), "{}", delivery, &why));
  EXPECT_EQ(refusing.bodies().size(), 1u); // a 4xx is not retried
  EXPECT_EQ(why, "HTTP 400");
}

TEST(NotifyPost, AWebhookThatHangsDelaysNobody) {
  pb::test::HttpSink hanging({}, true); // accepts connections, never answers
  pb::test::TempDir tmp;
  Settings settings;
  settings.url = hanging.url();
  Delivery delivery;
  delivery.tries = 2;
  delivery.timeout = std::chrono::milliseconds(300);
  delivery.backoff = std::chrono::milliseconds(10);
  const auto start = Clock::now();
  EXPECT_TRUE(announce(settings, tmp.path(), "01JSRC", preempted(), "me", delivery));
  // Posting in line would take both tries' timeouts (600 ms); the bound leaves room for a loaded
  // machine's ledger writes (this failed once at 100 ms with the whole suite running beside it).
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(400));
  // Then it gives up by itself, within its tries' bound.
  EXPECT_EQ(drain(std::chrono::seconds(5)), 0);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(4000));
  std::string why;
  EXPECT_FALSE(post(hanging.url(), "{}", delivery, &why));
  EXPECT_EQ(why.find("secret-token"), std::string::npos) << why;
}

} // namespace
