// SPDX-License-Identifier: MIT
// The Python ports checked against the real CPython on this machine: every expected value
// below is computed by python3 in one run (json, str methods, random, hashlib, shlex, format).
#include "test_support.hpp"

#include <primebeaker/core/process.hpp>
#include <primebeaker/environments/parsing.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/random.hpp>
#include <primebeaker/environments/scoring.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace pb::environments {
namespace {

using J = OrderedJson;

const char *const oracle_script = R"PY(
import hashlib, json, random, shlex, sys

inp = json.loads(sys.stdin.read())
out = {}
out["dumps"] = [[json.dumps(json.loads(t), sort_keys=True, ensure_ascii=False),
                 json.dumps(json.loads(t)),
                 json.dumps(json.loads(t), separators=(",", ":"), sort_keys=True)] for t in inp["json"]]
out["text"] = [[s.lower(), s.casefold(), s.strip(), s.split(), " ".join(s.strip().lower().split()), len(s)]
               for s in inp["text"]]
def rng_trace(r):
    t = {"random": [r.random() for _ in range(3)],
         "bits": [r.getrandbits(k) for k in (1, 5, 31, 32, 33, 63, 64)],
         "range": [r.randrange(3, 1000) for _ in range(5)],
         "choice": [r.choice("abcdefgh") for _ in range(5)]}
    xs = list(range(12)); r.shuffle(xs); t["shuffle"] = xs
    t["sample_small"] = r.sample(range(20), 8)
    t["sample_large"] = r.sample(range(1000), 8)
    t["sample_k3"] = r.sample(range(30), 3)
    return t
out["rng_int"] = [rng_trace(random.Random(int(s))) for s in inp["int_seeds"]]
out["rng_str"] = [rng_trace(random.Random(s)) for s in inp["str_seeds"]]
def select(seed, rid, n, k):
    if n <= k: return list(range(n))
    d = hashlib.sha256(f"{seed}\\0{rid}".encode("utf-8")).digest()
    return sorted(random.Random(int.from_bytes(d, "big")).sample(range(n), k))
out["select"] = [select(*c) for c in inp["select"]]
out["shadow"] = [int.from_bytes(hashlib.sha256(s.encode()).digest()[:8], "big") / 2**64 for s in inp["shadow"]]
out["sha"] = [[hashlib.sha256(s.encode()).hexdigest(), hashlib.sha512(s.encode()).hexdigest()] for s in inp["sha"]]
def stages(cmd):
    try:
        lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        toks = list(lex)
    except ValueError:
        w = cmd.split()
        return [w[0].rsplit("/", 1)[-1]] if w else []
    names, start = [], True
    for t in toks:
        if t and all(c in "|;&()" for c in t):
            start = True; continue
        if start:
            names.append(t.rsplit("/", 1)[-1]); start = False
    return names
def split(cmd):
    try: return shlex.split(cmd)
    except ValueError: return None
out["stages"] = [stages(c) for c in inp["commands"]]
out["split"] = [split(c) for c in inp["commands"]]
def fl(s):
    try: return repr(float(s))
    except ValueError: return None
out["float"] = [fl(s) for s in inp["floats"]]
out["format"] = [p.format(**v) for p, v in inp["format"]]
print(json.dumps(out))
)PY";

J oracle_input() {
  J in;
  in["json"] =
      J::array({R"({"b": 1.0, "a": [1e-07, 0.1, 1e16, 1e15, 123456789.125, -0.0, 5e-324]})",
                R"({"s": "caf\u00e9 \"q\" \\ \n\t\u0001\u007f \ud83d\ude00", "n": null})",
                R"([NaN, Infinity, -Infinity, 1.7976931348623157e308, 0.0001, 0.00001, 1e22])",
                R"({"dup": 1, "x": 2, "dup": 3})",
                R"({"z": {"y": [true, false, {}], "x": []}, "\u00e9": 12345678901234567})",
                R"([2.5e-5, 100.0, 1e100, 3.14159, 0.30000000000000004, 9007199254740993])"});
  in["text"] = J::array({"  Hello\u00a0World\u2003 ",
                         "STRASSE stra\u00dfe",
                         "\u0130stanbul",
                         "\u039f\u0394\u039f\u03a3 \u03a3",
                         "Caf\u00c9 \ufb01ne \u00b5",
                         "PASS\u3000\u3000Fail\x1c",
                         "\u0130\u03a3A",
                         "",
                         "A\u0345\u03c2",
                         "tab\tnew\nline\u2028sep"});
  in["int_seeds"] = J::array({"0",
                              "1",
                              "42",
                              "1099511627776",
                              "18446744073709551615",
                              "1606938044258990275541962092341162602522202993782792835301379"});
  in["str_seeds"] = J::array({"abc", "", "r\u00e9cord-7"});
  in["select"] = J::array({J::array({0, "rec-1", 12, 8}),
                           J::array({0, "rec-2", 5, 8}),
                           J::array({7, "sojuL/RubricHub_v1:train:17", 40, 8}),
                           J::array({3, "x", 200, 8}),
                           J::array({0, "sha256:ab", 9, 8})});
  in["shadow"] = J::array({"0:unknown:traj-1:rec-1", "5:v3:abc:def"});
  in["sha"] = J::array({"",
                        "abc",
                        std::string(55, 'a'),
                        std::string(56, 'a'),
                        std::string(64, 'b'),
                        std::string(111, 'c'),
                        std::string(112, 'c'),
                        std::string(200, 'd')});
  in["commands"] = J::array({"rg -n 'a|b' | head -5",
                             "cat x; sed -n 1,2p && tail -f y",
                             "/usr/bin/rg foo||grep bar",
                             "(cd /tmp && ls)",
                             "echo \"unclosed",
                             "browse https://x.y/a?b=c | rg -i z",
                             "jq '.a' file.json|sort|uniq -c",
                             "a>b | c",
                             "grep a#b | wc",
                             "echo 'TERMINAL_COMPLETE'",
                             "echo TERMINAL_COMPLETE && touch /tmp/x",
                             "x \"a\\\"b\" 'c\\d' e\\ f",
                             "  ",
                             "a;;b&c"});
  in["floats"] = J::array({"1.5",
                           " 0.75\n",
                           "nan",
                           "-inf",
                           "Infinity",
                           "1_0",
                           "1__0",
                           "_1",
                           "1e3",
                           "1e",
                           ".5",
                           "5.",
                           "not-a-number",
                           "+1E-2",
                           "1_000.5",
                           ""});
  in["format"] = J::array({J::array({"{question}!", J{{"question", "Why?"}}}),
                           J::array({"{{\"answer\": \"{a}\"}}", J{{"a", "x"}}}),
                           J::array({"{n} {f} {b} {z} {l}",
                                     J{{"n", 3},
                                       {"f", 1.0},
                                       {"b", true},
                                       {"z", nullptr},
                                       {"l", J::array({"a", 1, J{{"k", "v'"}}})}}}),
                           J::array({"{s!r}", J{{"s", "it's"}}})});
  return in;
}

const J &oracle() {
  static const J result = [] {
    proc::SystemRunner runner;
    proc::Command command;
    command.argv = {"python3", "-c", oracle_script};
    command.stdin_data = oracle_input().dump();
    command.timeout = std::chrono::seconds(60);
    const auto run = runner.run(command);
    EXPECT_TRUE(run.ok()) << run.err;
    return J::parse(run.out);
  }();
  return result;
}

TEST(PythonJson, DumpsMatchesCPythonByteForByte) {
  const J in = oracle_input();
  for (size_t i = 0; i < in["json"].size(); ++i) {
    const J value = py::loads(in["json"][i].get<std::string>());
    const J &want = oracle()["dumps"][i];
    EXPECT_EQ(py::dumps(value, {.sort_keys = true}), want[0].get<std::string>()) << i;
    EXPECT_EQ(py::dumps(value, {.ensure_ascii = true}), want[1].get<std::string>()) << i;
    EXPECT_EQ(py::dumps(value, {.sort_keys = true, .ensure_ascii = true, .compact = true}),
              want[2].get<std::string>())
        << i;
  }
}

TEST(PythonJson, LoadsFollowsPythonRules) {
  EXPECT_TRUE(std::isnan(py::loads("NaN").get<double>()));
  EXPECT_EQ(py::loads(" -Infinity ").get<double>(), -INFINITY);
  EXPECT_EQ(py::dumps(py::loads(R"({"a": 1, "b": 2, "a": 3})")), R"({"a": 3, "b": 2})");
  for (const char *bad : {"{'a': 1}",
                          "[1,]",
                          "{\"a\":1,}",
                          "01",
                          "\"tab\there\"",
                          "nan",
                          "[1] x",
                          "",
                          "\"\\x\"",
                          "{\"a\" 1}",
                          "tru"}) {
    EXPECT_FALSE(py::try_loads(bad).has_value()) << bad;
  }
  EXPECT_EQ(py::loads(R"("\ud83d\ude00")").get<std::string>(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(py::float_repr(1e-7), "1e-07");
  EXPECT_EQ(py::float_repr(1.0), "1.0");
  EXPECT_EQ(py::float_repr(1e16), "1e+16");
}

TEST(PythonText, UnicodeCaseAndWhitespaceRules) {
  const J in = oracle_input();
  for (size_t i = 0; i < in["text"].size(); ++i) {
    const std::string s = in["text"][i].get<std::string>();
    const J &want = oracle()["text"][i];
    EXPECT_EQ(py::lower(s), want[0].get<std::string>()) << i;
    EXPECT_EQ(py::casefold(s), want[1].get<std::string>()) << i;
    EXPECT_EQ(py::strip(s), want[2].get<std::string>()) << i;
    EXPECT_EQ(J(py::split(s)), want[3]) << i;
    EXPECT_EQ(py::normalize_label(s), want[4].get<std::string>()) << i;
    EXPECT_EQ(py::length(s), want[5].get<size_t>()) << i;
  }
}

J trace(py::Random r) {
  J t;
  t["random"] = J::array();
  for (int i = 0; i < 3; ++i) {
    t["random"].push_back(r.random());
  }
  t["bits"] = J::array();
  for (unsigned k : {1U, 5U, 31U, 32U, 33U, 63U, 64U}) {
    t["bits"].push_back(r.getrandbits(k));
  }
  t["range"] = J::array();
  for (int i = 0; i < 5; ++i) {
    t["range"].push_back(r.randrange(3, 1000));
  }
  const std::vector<std::string> letters = {"a", "b", "c", "d", "e", "f", "g", "h"};
  t["choice"] = J::array();
  for (int i = 0; i < 5; ++i) {
    t["choice"].push_back(r.choice(letters));
  }
  std::vector<int> xs(12);
  for (int i = 0; i < 12; ++i) {
    xs[static_cast<size_t>(i)] = i;
  }
  r.shuffle(xs);
  t["shuffle"] = xs;
  t["sample_small"] = r.sample(20, 8);
  t["sample_large"] = r.sample(1000, 8);
  t["sample_k3"] = r.sample(30, 3);
  return t;
}

std::string big_endian_decimal(const std::string &decimal) {
  // Decimal string -> big-endian bytes (schoolbook division by 256).
  std::string digits = decimal;
  std::string bytes;
  while (!(digits.empty() || digits == "0")) {
    int carry = 0;
    std::string next;
    for (char c : digits) {
      carry = carry * 10 + (c - '0');
      if (!next.empty() || carry / 256 != 0) {
        next.push_back(static_cast<char>('0' + carry / 256));
      }
      carry %= 256;
    }
    bytes.insert(bytes.begin(), static_cast<char>(carry));
    digits = next.empty() ? "0" : next;
  }
  return bytes;
}

TEST(PythonRandom, MersenneTwisterMatchesCPython) {
  const J in = oracle_input();
  for (size_t i = 0; i < in["int_seeds"].size(); ++i) {
    const auto bytes = big_endian_decimal(in["int_seeds"][i].get<std::string>());
    EXPECT_EQ(trace(py::Random::from_big_endian(bytes)), oracle()["rng_int"][i]) << i;
  }
  EXPECT_EQ(trace(py::Random::from_int(42)), oracle()["rng_int"][2]);
  for (size_t i = 0; i < in["str_seeds"].size(); ++i) {
    EXPECT_EQ(trace(py::Random::from_string(in["str_seeds"][i].get<std::string>())),
              oracle()["rng_str"][i])
        << i;
  }
}

TEST(PythonRandom, RubricHubSelectionAndShadowSampling) {
  const J in = oracle_input();
  for (size_t i = 0; i < in["select"].size(); ++i) {
    const J &c = in["select"][i];
    EXPECT_EQ(J(py::rubrichub_select(c[0].get<long long>(),
                                     c[1].get<std::string>(),
                                     c[2].get<std::uint64_t>(),
                                     c[3].get<std::uint64_t>())),
              oracle()["select"][i])
        << i;
  }
  const double first = oracle()["shadow"][0].get<double>();
  EXPECT_TRUE(py::shadow_sampled(0, "unknown", "traj-1", "rec-1", first + 1e-12));
  EXPECT_FALSE(py::shadow_sampled(0, "unknown", "traj-1", "rec-1", first));
  const double second = oracle()["shadow"][1].get<double>();
  EXPECT_TRUE(py::shadow_sampled(5, "v3", "abc", "def", second + 1e-12));
  EXPECT_FALSE(py::shadow_sampled(5, "v3", "abc", "def", 0.0));
}

TEST(PythonHash, Sha256AndSha512) {
  const J in = oracle_input();
  for (size_t i = 0; i < in["sha"].size(); ++i) {
    const std::string s = in["sha"][i].get<std::string>();
    EXPECT_EQ(py::hex(py::sha256(s)), oracle()["sha"][i][0].get<std::string>()) << i;
    EXPECT_EQ(py::hex(py::sha512(s)), oracle()["sha"][i][1].get<std::string>()) << i;
  }
}

TEST(PythonShlex, PipelineStagesAndShellSplit) {
  const J in = oracle_input();
  for (size_t i = 0; i < in["commands"].size(); ++i) {
    const std::string c = in["commands"][i].get<std::string>();
    EXPECT_EQ(J(pipeline_stage_names(c)), oracle()["stages"][i]) << c;
    const auto split = shell_split(c);
    EXPECT_EQ(split ? J(*split) : J(), oracle()["split"][i]) << c;
  }
  EXPECT_TRUE(is_completion_command("echo 'TERMINAL_COMPLETE'", "TERMINAL_COMPLETE"));
  EXPECT_FALSE(is_completion_command("printf TERMINAL_COMPLETE", "TERMINAL_COMPLETE"));
  EXPECT_FALSE(
      is_completion_command("echo TERMINAL_COMPLETE && touch /tmp/x", "TERMINAL_COMPLETE"));
  EXPECT_FALSE(is_completion_command("echo 'TERMINAL_COMPLETE", "TERMINAL_COMPLETE"));
}

TEST(PythonFloat, FloatParsingAndFormat) {
  const J in = oracle_input();
  for (size_t i = 0; i < in["floats"].size(); ++i) {
    const auto v = python_float(in["floats"][i].get<std::string>());
    const J &want = oracle()["float"][i];
    if (want.is_null()) {
      EXPECT_FALSE(v.has_value()) << in["floats"][i];
    } else {
      ASSERT_TRUE(v.has_value()) << in["floats"][i];
      EXPECT_EQ(py::float_repr(*v), want.get<std::string>()) << in["floats"][i];
    }
  }
  for (size_t i = 0; i < in["format"].size(); ++i) {
    EXPECT_EQ(py::format(in["format"][i][0].get<std::string>(), in["format"][i][1]),
              oracle()["format"][i].get<std::string>());
  }
  EXPECT_THROW(py::format("{missing}", J::object()), py::FormatError);
  EXPECT_THROW(py::format("a } b", J::object()), py::FormatError);
  EXPECT_THROW(py::format("{x:>5}", J{{"x", 1}}), py::FormatError);
}

} // namespace
} // namespace pb::environments
