// SPDX-License-Identifier: MIT
#include <primebeaker/registry/records.hpp>

#include <gtest/gtest.h>

namespace pb::registry {
namespace {

// Bytes below were produced by CPython 3 json.dumps / hashlib, i.e. what LiteRegistry writes.

TEST(Records, Sha256KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(Records, EndpointKeyAndBytesMatchTheSpecExample) {
  EndpointRecord record;
  record.name = "gateway";
  record.uri = "http://node-a17.cluster.example:20141/";
  record.publisher_id = "node-a17-4242-0f3c9e1d2b7a4c58a9e6d1f0b3c2a4e5";
  record.published_at = 1760000123.456789;
  record.metadata = {{"pid", 4242}, {"hostname", "node-a17"}};
  EXPECT_EQ(record.key(),
            "endpoint_gateway_036e0716396118071f077456bf140b84aa233c93718b716bef53484ed320b29e");
  EXPECT_EQ(sha256_hex(record.key()),
            "d80cdde6de785c49dc50fc40c4d8a69ede1e9c3b9733fdfc7c2f3b43a4bbd001");
  EXPECT_EQ(
      encode_endpoint_record(record),
      R"({"metadata":{"hostname":"node-a17","pid":4242},"name":"gateway","published_at":1760000123.456789,"publisher_id":"node-a17-4242-0f3c9e1d2b7a4c58a9e6d1f0b3c2a4e5","schema_version":1,"uri":"http://node-a17.cluster.example:20141"})");
}

TEST(Records, EndpointDecodeValidates) {
  const std::string good =
      R"({"metadata":{},"name":"redis","published_at":1760000100.0,"publisher_id":"p","schema_version":1,"uri":"redis://h:1"})";
  ASSERT_TRUE(decode_endpoint_record(good, "redis"));
  EXPECT_EQ(decode_endpoint_record(good, "redis")->uri, "redis://h:1");
  EXPECT_FALSE(decode_endpoint_record(good, "gateway")); // stored name differs
  std::string v2 = good;
  v2.replace(v2.find("\"schema_version\":1"), 18, "\"schema_version\":2");
  EXPECT_FALSE(decode_endpoint_record(v2, "redis"));
  EXPECT_FALSE(decode_endpoint_record("not json", "redis"));
  EXPECT_FALSE(decode_endpoint_record(
      R"({"name":"redis","published_at":1,"publisher_id":"","schema_version":1,"uri":"redis://h:1"})",
      "redis"));
  EXPECT_FALSE(decode_endpoint_record(
      R"({"name":"redis","published_at":1,"publisher_id":"p","schema_version":1,"uri":"no scheme"})",
      "redis"));
  EXPECT_TRUE(valid_endpoint_name("gateway"));
  EXPECT_TRUE(valid_endpoint_name("a.b-c_d"));
  EXPECT_FALSE(valid_endpoint_name("-x"));
  EXPECT_FALSE(valid_endpoint_name(""));
  EXPECT_FALSE(valid_endpoint_name(std::string(129, 'a')));
}

TEST(Records, ServerRecordBytesMatchPython) {
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  metadata["model_path"] = "python";
  metadata["host"] = "0.0.0.0";
  metadata["port"] = 20306;
  metadata["backend"] = "repl";
  metadata["extra_kwargs"] = {{"pool_size", 32}, {"heartbeat_interval", 4}};
  const auto record = make_server_record("node-a17-3f9a0c51d2e84b7c9a6e1f20b4c8d7e1",
                                         "node-a17",
                                         20306,
                                         "http://node-a17.cluster.example:20306",
                                         1760000120.25,
                                         metadata);
  // The example file of docs/registry.md, byte for byte.
  EXPECT_EQ(
      encode_server_record(record),
      R"({"server_id": "node-a17-3f9a0c51d2e84b7c9a6e1f20b4c8d7e1", "host": "node-a17", "port": 20306, "last_heartbeat": 1760000120.25, "metadata": {"model_path": "python", "host": "0.0.0.0", "port": 20306, "backend": "repl", "extra_kwargs": {"pool_size": 32, "heartbeat_interval": 4}}, "status": "active", "uri": "http://node-a17.cluster.example:20306"})");
  EXPECT_EQ(record.key(), "server_node-a17-3f9a0c51d2e84b7c9a6e1f20b4c8d7e1");
  EXPECT_EQ(record.service, "python");
}

TEST(Records, PythonJsonFloatsAndEscapes) {
  nlohmann::ordered_json value = nlohmann::ordered_json::object();
  value["a"] = 1760000123.456789;
  value["b"] = 1e16;
  value["c"] = 1.5e-5;
  value["d"] = "\xc3\xa9\xe2\x98\x83\xf0\x9f\x98\x80\x7f";
  value["e"] = 1760000120.0;
  value["f"] = 0.1;
  // json.dumps({'a':1760000123.456789,'b':1e16,'c':1.5e-5,'d':'é☃😀\x7f','e':1760000120.0,'f':0.1})
  EXPECT_EQ(
      python_json(value),
      R"({"a": 1760000123.456789, "b": 1e+16, "c": 1.5e-05, "d": "\u00e9\u2603\ud83d\ude00\u007f", "e": 1760000120.0, "f": 0.1})");
  EXPECT_EQ(python_json(nlohmann::ordered_json::parse(
                R"([1, true, null, "q\"\\\n", -0.5, 123456789012345678])")),
            R"([1, true, null, "q\"\\\n", -0.5, 123456789012345678])");
}

TEST(Records, DecodeServerRecordToleratesVariants) {
  const auto record = decode_server_record(
      "server_x-1",
      R"({"last_heartbeat": 1000, "port": 80.0, "uri": "http://x:80", "metadata": {}})");
  ASSERT_TRUE(record);
  EXPECT_EQ(record->server_id, "x-1"); // taken from the key
  EXPECT_EQ(record->service, "default");
  EXPECT_EQ(record->last_heartbeat, 1000);
  EXPECT_EQ(record->port, 80);
  EXPECT_EQ(
      decode_server_record("server_y", R"({"last_heartbeat": 1, "metadata": {"model_path": 7}})")
          ->service,
      "default");
  EXPECT_FALSE(decode_server_record("server_z", R"({"metadata": {"model_path": "python"}})"));
  EXPECT_FALSE(decode_server_record("server_z", R"({"last_heartbeat": "1000"})"));
  EXPECT_FALSE(decode_server_record("server_z", R"({"last_heartbeat": true})"));
  EXPECT_FALSE(decode_server_record("server_z", "[1,2]"));
  EXPECT_FALSE(decode_server_record("server_z", "{truncated"));
}

TEST(Records, InclusiveWindowEdge) {
  ServerRecord record;
  record.last_heartbeat = 1000;
  EXPECT_TRUE(record.live_at(1020, 20));
  EXPECT_FALSE(record.live_at(1021, 20));
  EXPECT_FALSE(record.live_at(1020.000001, 20));
  EXPECT_TRUE(record.live_at(999, 20)); // a writer's clock slightly ahead still counts
}

} // namespace
} // namespace pb::registry
