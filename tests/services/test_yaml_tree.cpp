// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/yaml/tree.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace pb::yaml {
namespace {

std::string error_of(const std::function<void()> &body) {
  const auto error = test::thrown_error(body);
  EXPECT_EQ(error.code(), 3);
  return error.what();
}

TEST(YamlTree, TypesPlainScalarsLikePyYaml) {
  const auto doc = parse_yaml("a: 3\nb: '3'\nc: true\nd: yes\ne: off\nf: ~\ng:\nh: 1.5\n"
                              "i: 0x1F\nj: 1e3\nk: ai2/jupiter\nl: !!str 7\nm: \"\"\nn: -12\n"
                              "o: .inf\n",
                              "t.yaml");
  const auto json = to_json(doc.root);
  EXPECT_EQ(json["a"], 3);
  EXPECT_EQ(json["b"], "3");
  EXPECT_EQ(json["c"], true);
  EXPECT_EQ(json["d"], true);
  EXPECT_EQ(json["e"], false);
  EXPECT_TRUE(json["f"].is_null());
  EXPECT_TRUE(json["g"].is_null());
  EXPECT_EQ(json["h"], 1.5);
  EXPECT_EQ(json["i"], 31);
  EXPECT_EQ(json["j"], 1000.0);
  EXPECT_EQ(json["k"], "ai2/jupiter");
  EXPECT_EQ(json["l"], "7");
  EXPECT_EQ(json["m"], "");
  EXPECT_EQ(json["n"], -12);
  EXPECT_TRUE(std::isinf(json["o"].get<double>()));
  // Key order is the file's.
  std::vector<std::string> keys;
  for (const auto &[key, value] : json.items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys.front(), "a");
  EXPECT_EQ(keys.back(), "o");
}

TEST(YamlTree, RemembersPositions) {
  const auto doc = parse_yaml("schema: x\nservices:\n  terminal_replicas: 3\n", "s.yaml");
  const auto *services = doc.root.find("services");
  ASSERT_NE(services, nullptr);
  const auto *replicas = services->value.find("terminal_replicas");
  ASSERT_NE(replicas, nullptr);
  EXPECT_EQ(doc.location(replicas->key_mark), "s.yaml:3:3");
  EXPECT_EQ(doc.location(replicas->value.mark), "s.yaml:3:22");
}

TEST(YamlTree, RejectsDuplicateKeysInvalidYamlAndSeveralDocuments) {
  EXPECT_EQ(error_of([] { parse_yaml("a: 1\nb: 2\na: 3\n", "d.yaml"); }),
            "d.yaml:3:1: duplicate key 'a' (first given at line 1)");
  EXPECT_NE(error_of([] { parse_yaml("a: [1, 2\n", "bad.yaml"); }).find("bad.yaml:"),
            std::string::npos);
  EXPECT_EQ(error_of([] { parse_yaml("a: 1\n---\nb: 2\n", "two.yaml"); }),
            "two.yaml: expected one YAML document, found 2");
  EXPECT_EQ(error_of([] { parse_yaml("? [a, b]\n: 1\n", "k.yaml"); }),
            "k.yaml:1:3: mapping keys must be plain scalars");
}

TEST(YamlTree, ExpandsVariablesLikeExpandvars) {
  const auto doc =
      parse_yaml("a: ${REGISTRY}/x\nb: $HOME_DIR-$UNSET_OK\nc: [\"$N\"]\nd: 5\n", "e.yaml");
  const std::map<std::string, std::string> env{
      {"REGISTRY", "redis://r:6379"}, {"HOME_DIR", "/h"}, {"UNSET_OK", "u"}, {"N", "n"}};
  const auto expanded =
      expand_environment(doc, doc.root, env, UnresolvedRule::any_dollar, "run YAML");
  const auto json = to_json(expanded);
  EXPECT_EQ(json["a"], "redis://r:6379/x");
  EXPECT_EQ(json["b"], "/h-u");
  EXPECT_EQ(json["c"][0], "n");
  EXPECT_EQ(json["d"], 5);
}

TEST(YamlTree, UnresolvedRulesDifferBetweenRunAndServicesFiles) {
  const auto doc = parse_yaml("a: cost $5 and $(cmd)\nb: ${MISSING}\nc: $MISSING\n", "u.yaml");
  const std::map<std::string, std::string> env;
  const auto &a = doc.root.find("a")->value;
  // Services YAML: a lone "$5" or "$(" is text; run YAML: any '$' is refused.
  EXPECT_EQ(
      to_json(expand_environment(doc, a, env, UnresolvedRule::variable_syntax, "services YAML")),
      "cost $5 and $(cmd)");
  EXPECT_EQ(
      error_of([&] { expand_environment(doc, a, env, UnresolvedRule::any_dollar, "run YAML"); }),
      "u.yaml:1:4: unresolved environment variable in run YAML value 'cost $5 and $(cmd)'");
  EXPECT_EQ(
      error_of([&] {
        expand_environment(
            doc, doc.root.find("b")->value, env, UnresolvedRule::variable_syntax, "services YAML");
      }),
      "u.yaml:2:4: unresolved environment variable in services YAML value '${MISSING}'");
  EXPECT_EQ(
      error_of([&] {
        expand_environment(
            doc, doc.root.find("c")->value, env, UnresolvedRule::variable_syntax, "services YAML");
      }),
      "u.yaml:3:4: unresolved environment variable in services YAML value '$MISSING'");
}

TEST(YamlTree, KeysAreNotExpanded) {
  const auto doc = parse_yaml("$KEY: 1\n", "k.yaml");
  const auto expanded = expand_environment(
      doc, doc.root, {{"KEY", "x"}}, UnresolvedRule::variable_syntax, "services YAML");
  EXPECT_EQ(expanded.members.front().key, "$KEY");
}

} // namespace
} // namespace pb::yaml
