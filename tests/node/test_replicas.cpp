// SPDX-License-Identifier: MIT
// End-to-end: several real `primebeaker node rl|sft` processes on one machine, one per
// BEAKER_REPLICA_RANK, sharing a temp rendezvous directory. torchrun, orchestrator, inference
// and vllm-router are fakes on PATH (pb::test::FakeBin); Prime-RL and LiteRegistry's gateway are
// fake Python packages on PYTHONPATH, so the real config helper and the real python3 run.
#include "test_support.hpp"

#include <primebeaker/core/subprocess.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/node/replica_plan.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <thread>

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using pb::test::read_file;
using pb::test::write_file;

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool running(pid_t pid) {
  if (::kill(pid, 0) != 0) {
    return false;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

// Fake Prime-RL: records what it validated, writes the per-component configs it is asked for.
const char *k_fake_prime_rl_rl = R"PY(
import json, os
from pathlib import Path
from types import SimpleNamespace as NS

class RLConfig:
    @staticmethod
    def model_validate(raw):
        with open(os.environ["PB_CTL"] + "/validated.json", "w") as handle:
            json.dump(raw, handle)
        if raw.get("fail_validation"):
            raise ValueError("1 validation error for RLConfig\nmodel.name\n  Field required")
        inference = raw.get("inference", {})
        parallel = inference.get("parallel", {})
        deployment = inference.get("deployment", {})
        ckpt = raw.get("ckpt")
        run = raw.get("run", {})
        router = inference.get("router", {})
        scorers = router.get("scorers", {"prefix-cache-scorer": 3.0, "active-request-scorer": 2.0})
        offload = inference.get("kv_cache_offload")
        return NS(
            output_dir=Path(raw["output_dir"]),
            run_dir=Path(raw["output_dir"]) / (run.get("dir") or run.get("name", "")),
            env_vars=raw.get("env_vars", {}),
            ckpt=NS(resume_step=ckpt.get("resume_step"), output_dir=None) if isinstance(ckpt, dict) else None,
            inference=NS(
                router=NS(policy=router.get("policy", "round_robin"),
                          type=router.get("type", "vllm-router"),
                          decode_sidecar_port=router.get("decode_sidecar_port", 8300),
                          non_cached_tokens=router.get("non_cached_tokens", 16),
                          scorers=scorers,
                          prefill_scorers={**scorers, **router.get("prefill_scorer_overrides", {})},
                          decode_scorers={**scorers, **router.get("decode_scorer_overrides", {})})
                       if "router" in inference else None,
                kv_cache_offload=NS(
                    type=offload["type"], device_name=offload.get("device_name"),
                    cpu=NS(num_bytes=offload["cpu"]["num_bytes"]),
                    disk=NS(path=Path(offload["disk"]["path"])) if "disk" in offload else None)
                    if offload else None,
                enable_expert_parallel=inference.get("enable_expert_parallel", False),
                parallel=NS(dp=parallel.get("dp", 1), tp=parallel.get("tp", 1)),
                server=NS(port=inference.get("server", {}).get("port", 8000)),
                vllm=NS(tensor_parallel_size=inference.get("vllm", {}).get("tensor_parallel_size", 1)),
                backend_port=inference.get("backend_port", 8100),
                env_vars=inference.get("env_vars", {}),
                data_parallel_rpc_port=29600,
                deployment=NS(
                    type=deployment.get("type", "single_node"),
                    prefill_port=deployment.get("prefill_port", 8100),
                    decode_port=deployment.get("decode_port", 8200),
                    prefill_vllm_overrides=deployment.get("prefill_vllm_overrides", {}),
                    decode_vllm_overrides=deployment.get("decode_vllm_overrides", {}),
                    prefill_env_vars=deployment.get("prefill_env_vars", {}),
                    decode_env_vars=deployment.get("decode_env_vars", {}),
                ),
            ),
            weight_broadcast=NS(type=raw.get("weight_broadcast", {}).get("type", "filesystem")),
            rollout_transport=NS(type=raw.get("rollout_transport", {}).get("type", "filesystem")),
            trainer=NS(env_vars=raw.get("trainer", {}).get("env_vars", {}), log=NS(ranks_filter=[0]),
                       weight_broadcast=NS(inference_world_size=None, host=None)),
            orchestrator=NS(env_vars=raw.get("orchestrator", {}).get("env_vars", {}),
                            output_dir=Path(raw["output_dir"]) / "run_default",
                            weight_broadcast=NS(inference_world_size=None)),
        )
)PY";

const char *k_fake_prime_rl_rl_entry = R"PY(
def write_subconfigs(config, config_dir):
    world = config.trainer.weight_broadcast.inference_world_size
    for name in ("trainer", "orchestrator", "inference"):
        (config_dir / f"{name}.toml").write_text(f"# fake {name} config\nworld = {world!r}\n")
        (config_dir / f"{name}.json").write_text("{}\n")
)PY";

const char *k_fake_prime_rl_sft = R"PY(
import json, os
from types import SimpleNamespace as NS

class SFTConfig:
    @staticmethod
    def model_validate(raw):
        with open(os.environ["PB_CTL"] + "/validated.json", "w") as handle:
            json.dump(raw, handle)
        return NS(env_vars=raw.get("env_vars", {}), log=NS(ranks_filter=[0, 1]))
)PY";

const char *k_fake_prime_rl_sft_entry = R"PY(
def write_config(config, path, exclude):
    path.write_text("# fake sft config\nexclude = " + repr(sorted(exclude)) + "\n")
)PY";

const char *k_fake_process = R"PY(
DEFAULT_COMMON_ENV_VARS = {"PB_COMMON": "common"}
DEFAULT_TRAINER_ENV_VARS = {"PB_TRAINER_DEFAULT": "trainer"}
DEFAULT_INFERENCE_ENV_VARS = {"PB_INFERENCE_DEFAULT": "inference"}
)PY";

// Fake LiteRegistry gateway: records its argv and env, answers the readiness probe.
const char *k_fake_gateway = R"PY(
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ctl = os.environ["PB_CTL"]
with open(f"{ctl}/gateway.{os.getpid()}.json", "w") as handle:
    json.dump({"argv": sys.argv[1:], "pid": os.getpid(), "rank": os.environ.get("BEAKER_REPLICA_RANK")}, handle)
if os.path.exists(f"{ctl}/gateway-fail"):
    sys.exit(4)
port = int(sys.argv[sys.argv.index("--port") + 1])

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def reply(self, code):
        self.send_response(code)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def do_GET(self):
        self.reply(200 if self.path == "/health" else 404)
    def do_OPTIONS(self):
        self.reply(204)
    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        with open(f"{ctl}/search.json", "w") as handle:
            json.dump(body, handle)
        self.reply(200 if self.path == "/search" else 404)

ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
)PY";

const char *k_rl_toml = R"(output_dir = "OUT"

[deployment]
type = "multi_node"

[inference]
backend_port = 8100

[inference.parallel]
tp = 2
dp = 5

[inference.router]
policy = "cache_aware"

[inference.server]
port = 8000

[orchestrator]

[[orchestrator.train.source]]
legacy.id = "some.legacy.pkg.jtc_label_env"

[[orchestrator.eval.source]]
legacy.id = "my_own_env"

[trainer.env_vars]
TRAINER_ONLY = "yes"

[ckpt]
resume_step = -1
)";

class Cluster {
public:
  explicit Cluster(std::string kind, int nodes)
      : m_kind(std::move(kind)), m_nodes(nodes), m_fakes(m_root / "fakes") {
    for (const char *d :
         {"rdv", "out", "work", "scratch", "registry", "ctl", "ctl/pids", "local"}) {
      fs::create_directories(m_root / d);
    }
    const auto py = m_root / "pylib";
    write_file(py / "prime_rl/__init__.py", "");
    write_file(py / "prime_rl/configs/__init__.py", "");
    write_file(py / "prime_rl/configs/rl.py", k_fake_prime_rl_rl);
    write_file(py / "prime_rl/configs/sft.py", k_fake_prime_rl_sft);
    write_file(py / "prime_rl/entrypoints/__init__.py", "");
    write_file(py / "prime_rl/entrypoints/rl.py", k_fake_prime_rl_rl_entry);
    write_file(py / "prime_rl/entrypoints/sft.py", k_fake_prime_rl_sft_entry);
    write_file(py / "prime_rl/utils/__init__.py", "");
    write_file(py / "prime_rl/utils/process.py", k_fake_process);
    write_file(py / "literegistry/__init__.py", "");
    write_file(py / "literegistry/gateway/__init__.py", "");
    write_file(py / "literegistry/gateway/__main__.py", k_fake_gateway);

    const std::string ctl = "\"$PB_CTL\"";
    const std::string remember_pid =
        "echo $$ > " + ctl + "/pids/$(basename $0)-$BEAKER_REPLICA_RANK-$$\n";
    // Long-running services; a ctl file makes one fail after a moment.
    m_fakes.add("inference",
                remember_pid + "if [ -e " + ctl +
                    "/fail-inference-$BEAKER_REPLICA_RANK ]; then sleep 0.5; exit 3; fi\n"
                    "if [ -e " +
                    ctl +
                    "/quit-inference-$BEAKER_REPLICA_RANK ]; then sleep 0.5; exit 0; fi\n"
                    "exec sleep 1000");
    m_fakes.add("vllm-router", remember_pid + "exec sleep 1000");
    m_fakes.add("orchestrator", remember_pid + "sleep 0.3; exit 0");
    m_fakes.add("env-server", remember_pid + "exec sleep 1000");
    // torchrun: trainer of RL or one SFT node.
    m_fakes.add("torchrun",
                remember_pid +
                    "echo \"[default0]:trainer step 1 on node $BEAKER_REPLICA_RANK\"\n"
                    "if [ -e " +
                    ctl +
                    "/hang-torchrun ]; then exec sleep 1000; fi\n"
                    "if [ -e " +
                    ctl +
                    "/fail-torchrun-$BEAKER_REPLICA_RANK ]; then sleep 0.2; exit 7; fi\n"
                    "sleep 0.3; exit 0");
    m_beaker.on({"experiment", "stop"}, "");

    write_file(
        m_root / "config.toml",
        std::regex_replace(std::string(k_rl_toml), std::regex("OUT"), (m_root / "out").string()));
    m_gateway_port = free_port();
  }

  ~Cluster() {
    if (std::getenv("PB_SHOW_REPLICA_LOGS") != nullptr) { // for debugging a test
      std::cerr << diagnostics();
    }
    for (auto &c : m_children) {
      if (c.valid() && !c.poll()) {
        c.signal_group(SIGKILL);
        c.wait();
      }
    }
  }

  const fs::path &root() const { return m_root.path(); }
  fs::path rdv() const { return m_root / "rdv"; }
  fs::path ctl(const std::string &name) const { return m_root / "ctl" / name; }
  pb::test::FakeBin &fakes() { return m_fakes; }
  const pb::test::FakeBeaker &beaker() const { return m_beaker; }
  int gateway_port() const { return m_gateway_port; }
  std::map<std::string, std::string> &extra_env() { return m_extra; }

  std::map<std::string, std::string> env(int rank) const {
    std::map<std::string, std::string> e = {
        {"PATH", m_fakes.bin().string() + ":/usr/bin:/bin"},
        {"HOME", (m_root / "work").string()},
        {"LANG", "C.UTF-8"},
        {"PYTHONPATH", (m_root / "pylib").string()},
        {"PYTHONDONTWRITEBYTECODE", "1"},
        {"PB_CTL", (m_root / "ctl").string()},
        {"BEAKER_REPLICA_RANK", std::to_string(rank)},
        {"TOTAL_NODES", std::to_string(m_nodes)},
        {"GPUS_PER_NODE", "4"},
        {"CONFIG_PATH", (m_root / "config.toml").string()},
        {"OUTPUT_DIR", (m_root / "out").string()},
        {"WORKING_DIR", (m_root / "work").string()},
        {"SCRATCH", (m_root / "scratch").string()},
        {"LAUNCH_ID", "0123456789abcdef0123456789abcdef"},
        {"RENDEZVOUS_DIR", rdv().string()},
        {"RENDEZVOUS_TIMEOUT_SECONDS", "30"},
        {"WANDB_RUN_ID", "shared-run"},
        {"PRIMEBEAKER_NODE_POLL_SECONDS", "0.1"},
        {"PRIMEBEAKER_NODE_STOP_GRACE_SECONDS", "2"},
        {"PRIMEBEAKER_NODE_GATEWAY_SETTLE_SECONDS", "0.2"},
        {"PRIMEBEAKER_NODE_GATEWAY_PROBE_INTERVAL_SECONDS", "0.2"},
        {"PRIMEBEAKER_NODE_HOST", "127.0.0.1"},
        {"PRIMEBEAKER_NODE_LOCAL_ROOT", (m_root / "local").string()},
    };
    if (m_kind == "rl") {
      // 3 nodes x 4 GPUs, trainer on 2 GPUs of node 0, tp 2: 1 + 2 + 2 inference ranks.
      e["TOTAL_INFER_RANKS"] = std::to_string(1 + 2 * (m_nodes - 1));
      e["TRAINER_GPU_COUNT"] = "2";
      e["MIXED_INFER_GPU_COUNT"] = "2";
      e["REGISTRY"] = "file://" + (m_root / "registry").string();
      e["GATEWAY_PORT"] = std::to_string(m_gateway_port);
      e["GATEWAY_WORKERS"] = "3";
      e["REQUIRED_LITEREGISTRY_SERVICES"] = "{}";
      e["LOCAL_SEARCH_MODEL_PATHS_JSON"] = R"(["localsearch:bc-rl-v1"])";
    }
    for (const auto &[k, v] : m_extra) {
      e[k] = v;
    }
    return e;
  }

  // Starts every replica (ranks in `order`), each logging to <root>/replica.<rank>.log.
  void start_all(std::vector<int> order = {}) {
    if (order.empty()) {
      for (int r = 0; r < m_nodes; ++r) {
        order.push_back(r);
      }
    }
    for (int r : order) {
      start(r);
    }
  }

  void start(int r) {
    if (m_children.empty()) {
      m_children.resize(m_nodes);
      m_exit_codes.assign(m_nodes, -1);
      m_exit_times.assign(m_nodes, {});
    }
    {
      pb::proc::SpawnSpec spec;
      spec.argv = {pb::test::binary_path().string(), "node", m_kind};
      for (const auto &[k, v] : env(r)) {
        spec.env[k] = v;
      }
      spec.cwd = m_root / "work";
      write_file(log_path(r), "");
      spec.out = pb::proc::Output::append_to(log_path(r));
      spec.err = pb::proc::Output::append_to(log_path(r));
      m_children[r] = pb::proc::Child::spawn(spec);
    }
  }

  fs::path log_path(int rank) const {
    return m_root / ("replica." + std::to_string(rank) + ".log");
  }
  std::string log(int rank) const { return read_file(log_path(rank)); }
  pid_t pid(int rank) const { return m_children[rank].pid(); }

  // Waits for every replica, returning their exit codes; records when each one exited.
  std::vector<int> wait_all(std::chrono::seconds limit = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      bool all = true;
      for (int r = 0; r < m_nodes; ++r) {
        if (m_exit_codes[r] >= 0) {
          continue;
        }
        if (const auto status = m_children[r].poll()) {
          m_exit_codes[r] = status->code();
          m_exit_times[r] = std::chrono::steady_clock::now();
        } else {
          all = false;
        }
      }
      if (all || std::chrono::steady_clock::now() > deadline) {
        return m_exit_codes;
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  std::chrono::steady_clock::time_point exit_time(int rank) const { return m_exit_times[rank]; }

  // Blocks until `predicate` holds or 30 s pass.
  static bool eventually(const std::function<bool()> &predicate, std::chrono::seconds limit = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (predicate()) {
        return true;
      }
      std::this_thread::sleep_for(20ms);
    }
    return predicate();
  }

  // Pids every fake service recorded (ctl/pids/<program>-<rank>-<pid>).
  std::vector<pid_t> recorded_pids(const std::string &program = "", int rank = -1) const {
    std::vector<pid_t> pids;
    for (const auto &entry : fs::directory_iterator(m_root / "ctl" / "pids")) {
      const std::string name = entry.path().filename().string();
      const auto first = name.find('-', program.empty() ? 0 : program.size());
      const auto last = name.rfind('-');
      if (!program.empty() && name.rfind(program + "-", 0) != 0) {
        continue;
      }
      if (rank >= 0 && name.substr(first + 1, last - first - 1) != std::to_string(rank)) {
        continue;
      }
      pids.push_back(static_cast<pid_t>(std::stoi(name.substr(last + 1))));
    }
    return pids;
  }

  fs::path attempt_dir() const {
    const std::string attempt(read_file(rdv() / "attempt"));
    return rdv() / ("attempt-" + attempt.substr(0, attempt.find('\n')));
  }

  std::string diagnostics() const {
    std::string out;
    for (int r = 0; r < m_nodes; ++r) {
      out += "--- replica " + std::to_string(r) + "\n" + (fs::exists(log_path(r)) ? log(r) : "") +
             "\n";
    }
    return out;
  }

private:
  std::string m_kind;
  int m_nodes;
  pb::test::TempDir m_root;
  pb::test::FakeBin m_fakes;
  pb::test::FakeBeaker m_beaker{m_fakes};
  int m_gateway_port = 0;
  std::map<std::string, std::string> m_extra;
  std::vector<pb::proc::Child> m_children;
  std::vector<int> m_exit_codes;
  std::vector<std::chrono::steady_clock::time_point> m_exit_times;
};

std::vector<std::string> strings_after(const std::vector<std::string> &argv,
                                       const std::string &flag) {
  std::vector<std::string> out;
  auto it = std::find(argv.begin(), argv.end(), flag);
  if (it == argv.end()) {
    return out;
  }
  for (++it; it < argv.end() && it->rfind("--", 0) != 0; ++it) {
    out.push_back(*it);
  }
  return out;
}

void expect_no_survivors(const Cluster &cluster) {
  for (const pid_t pid : cluster.recorded_pids()) {
    EXPECT_TRUE(Cluster::eventually([&] { return !running(pid); }, 5s))
        << "pid " << pid << " survived";
  }
}

// ---------------------------------------------------------------------------------------------

// Prime-RL v0.9 (docs/node.md "Prime-RL v0.9"): 3 replicas of 4 GPUs, replica 0 inference (two
// tp-2 engines and vllm-router), replicas 1-2 the trainer (torchrun across both, rendezvous on
// replica 1), orchestrator and the env server on replica 1. The run directory holds a complete
// step 4 (8 trainer ranks) and a cut-off step 6: Prime-RL is asked for `[resume] step = 4`.
TEST(NodeRlV09, PrimeRlPlacementRunsAndResumesFromTheRunDirectory) {
  Cluster cluster("rl", 3);
  const fs::path out = cluster.root() / "out";
  write_file(cluster.root() / "config.toml",
             "output_dir = \"" + out.string() +
                 "\"\n\n[run]\nname = \"run9\"\n\n[deployment]\ntype = \"multi_node\"\n"
                 "num_train_nodes = 2\nnum_infer_nodes = 1\n\n[inference.vllm]\n"
                 "tensor_parallel_size = 2\n\n[inference.router]\npolicy = \"round_robin\"\n\n"
                 "[orchestrator]\n\n[[orchestrator.train.source]]\nname = \"label\"\n\n"
                 "[orchestrator.train.source.env.taskset]\nid = \"primebeaker-jtc-label\"\n"
                 "\n[resume]\n");
  auto &extra = cluster.extra_env();
  extra["PRIME_RL_GENERATION"] = "v0.9";
  extra["PRIME_RL_RUN_DIR"] = "run9";
  extra["NUM_TRAIN_NODES"] = "2";
  extra["NUM_INFER_NODES"] = "1";
  extra["INFERENCE_TP"] = "2";
  extra["ORCHESTRATOR_REPLICA"] = "1";
  extra["ENV_SERVERS_JSON"] = R"(["train/label"])";
  const fs::path run = out / "run9";
  for (int rank = 0; rank < 8; ++rank) {
    write_file(run / fmt::format("checkpoints/step_4/trainer/__{}_0.distcp", rank), "shard");
  }
  write_file(run / "checkpoints/step_4/trainer/.metadata", "meta");
  write_file(run / "checkpoints/step_4/orchestrator/progress.pt", "progress");
  write_file(run / "checkpoints/step_6/trainer/__0_0.distcp", "shard");
  fs::create_directories(run / "rollouts/step_6");

  cluster.start_all();
  ASSERT_EQ(cluster.wait_all(), (std::vector<int>{0, 0, 0})) << cluster.diagnostics();

  // Prime-RL was asked for the newest complete step, explicitly, in v0.9's key.
  const auto validated = nlohmann::json::parse(read_file(cluster.ctl("validated.json")));
  EXPECT_EQ(validated["resume"], nlohmann::json({{"step", 4}})) << validated.dump();
  EXPECT_FALSE(validated.contains("ckpt") && validated["ckpt"].contains("resume_step"));
  EXPECT_FALSE(fs::exists(run / "checkpoints/step_6")) << "the cut-off step was not set aside";
  EXPECT_FALSE(fs::exists(run / "rollouts/step_6")) << "a rollout past the resume step survived";
  EXPECT_TRUE(fs::exists(run / "configs/trainer.json"));

  const auto calls = [&](const std::string &program) { return cluster.fakes().calls(program); };
  ASSERT_EQ(calls("inference").size(), 2u);
  for (const auto &call : calls("inference")) {
    EXPECT_EQ(call.env.at("BEAKER_REPLICA_RANK"), "0");
    EXPECT_EQ(call.argv.at(2), (run / "configs/inference.json").string());
  }
  ASSERT_EQ(calls("vllm-router").size(), 1u);
  EXPECT_EQ(calls("vllm-router")[0].env.at("BEAKER_REPLICA_RANK"), "0");
  const auto torchruns = calls("torchrun");
  ASSERT_EQ(torchruns.size(), 2u);
  std::set<std::string> node_ranks;
  for (const auto &call : torchruns) {
    const std::string rank = call.env.at("BEAKER_REPLICA_RANK");
    EXPECT_NE(rank, "0");
    node_ranks.insert(rank + ":" + *std::find_if(call.argv.begin(), call.argv.end(), [](auto &a) {
                        return a.rfind("--node-rank=", 0) == 0;
                      }));
    EXPECT_NE(std::find(call.argv.begin(), call.argv.end(), "--rdzv-endpoint=127.0.0.1:29500"),
              call.argv.end());
    EXPECT_EQ(call.env.at("PRL_RUN_ID"), "shared-run");
    EXPECT_EQ(call.env.at("PRL_RUN_NAME"), "run9");
    EXPECT_EQ(call.env.at("CUDA_VISIBLE_DEVICES"), "0,1,2,3");
  }
  EXPECT_EQ(node_ranks, (std::set<std::string>{"1:--node-rank=0", "2:--node-rank=1"}));
  ASSERT_EQ(calls("orchestrator").size(), 1u);
  EXPECT_EQ(calls("orchestrator")[0].env.at("BEAKER_REPLICA_RANK"), "1");
  EXPECT_EQ(strings_after(calls("orchestrator")[0].argv, "--model.client.base-url"),
            (std::vector<std::string>{"http://127.0.0.1:8000/v1"}));
  EXPECT_EQ(strings_after(calls("orchestrator")[0].argv, "--model.client.admin-base-url"),
            (std::vector<std::string>{"http://127.0.0.1:8100/v1", "http://127.0.0.1:8101/v1"}));
  ASSERT_EQ(calls("env-server").size(), 1u);
  EXPECT_EQ(calls("env-server")[0].argv,
            (pb::proc::Argv{"env-server", "@", (run / "configs/envs/train/label.json").string()}));
  expect_no_survivors(cluster);
}

// Prime-RL v0.8.0 in Prime-RL's own placement (docs/node.md "Prime-RL's placement"): 3 replicas
// of 4 GPUs, replica 0 inference (two tp-2 engines with v0.8.0's flags, vllm-router), replicas
// 1-2 one torchrun each across both, the orchestrator and the env server on replica 1, over the
// TOML sub-configs Prime-RL v0.8.0 writes under OUTPUT_DIR/configs.
TEST(NodeRlPrimeRlPlacement, V080SeveralTrainerNodesRunAsPrimeRlRunsThem) {
  Cluster cluster("rl", 3);
  const fs::path out = cluster.root() / "out";
  write_file(cluster.root() / "config.toml",
             "output_dir = \"" + out.string() +
                 "\"\n\n[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 2\n"
                 "num_infer_nodes = 1\n\n[inference.parallel]\ntp = 2\n\n[orchestrator]\n\n"
                 "[[orchestrator.train.source]]\nname = \"label\"\n");
  auto &extra = cluster.extra_env();
  extra["PRIME_RL_PLACEMENT"] = "prime-rl";
  extra["NUM_TRAIN_NODES"] = "2";
  extra["NUM_INFER_NODES"] = "1";
  extra["INFERENCE_TP"] = "2";
  extra["ORCHESTRATOR_REPLICA"] = "1";
  extra["ENV_SERVERS_JSON"] = R"(["train/label"])";
  cluster.start_all();
  ASSERT_EQ(cluster.wait_all(), (std::vector<int>{0, 0, 0})) << cluster.diagnostics();
  EXPECT_TRUE(fs::exists(out / "configs/trainer.toml"));

  const auto calls = [&](const std::string &program) { return cluster.fakes().calls(program); };
  ASSERT_EQ(calls("inference").size(), 2u);
  for (const auto &call : calls("inference")) {
    EXPECT_EQ(call.env.at("BEAKER_REPLICA_RANK"), "0");
    EXPECT_EQ(call.argv.at(2), (out / "configs/inference.toml").string());
    EXPECT_EQ(strings_after(call.argv, "--parallel.dp"), (std::vector<std::string>{"1"}));
    EXPECT_EQ(strings_after(call.argv, "--api-server-count"), (std::vector<std::string>{"1"}));
  }
  ASSERT_EQ(calls("vllm-router").size(), 1u);
  const auto torchruns = calls("torchrun");
  ASSERT_EQ(torchruns.size(), 2u);
  std::set<std::string> node_ranks;
  for (const auto &call : torchruns) {
    node_ranks.insert(call.env.at("BEAKER_REPLICA_RANK") + ":" +
                      *std::find_if(call.argv.begin(), call.argv.end(), [](auto &a) {
                        return a.rfind("--node-rank=", 0) == 0;
                      }));
    EXPECT_NE(std::find(call.argv.begin(), call.argv.end(), "--nnodes=2"), call.argv.end());
    EXPECT_NE(std::find(call.argv.begin(), call.argv.end(), "--rdzv-endpoint=127.0.0.1:29500"),
              call.argv.end());
    EXPECT_EQ(call.argv.back(), (out / "configs/trainer.toml").string());
    EXPECT_EQ(call.env.at("WANDB_SHARED_MODE"), "1");
    EXPECT_EQ(call.env.at("MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(call.env.count("PRL_RUN_ID"), 0u); // v0.9's name, not v0.8.0's
  }
  EXPECT_EQ(node_ranks, (std::set<std::string>{"1:--node-rank=0", "2:--node-rank=1"}));
  ASSERT_EQ(calls("orchestrator").size(), 1u);
  EXPECT_EQ(calls("orchestrator")[0].env.at("BEAKER_REPLICA_RANK"), "1");
  EXPECT_EQ(calls("orchestrator")[0].env.at("ORCHESTRATOR_OUTPUT_DIR"),
            (out / "run_default").string());
  ASSERT_EQ(calls("env-server").size(), 1u);
  EXPECT_EQ(calls("env-server")[0].argv,
            (pb::proc::Argv{"env-server", "@", (out / "configs/envs/train/label.toml").string()}));
  // Nothing of the mixed layout: no gateway, no registry barrier.
  EXPECT_FALSE(fs::exists(out / "literegistry-gateway.log"));
  expect_no_survivors(cluster);
}

// Disaggregated prefill/decode (docs/node.md): replica 0 a prefill instance, replica 1 a decode
// one (two tp-2 engines each), replica 2 the trainer. vllm-router on replica 0 in PD mode over
// every engine, prefill first; each engine a rank of its instance's DP group with its NIXL side
// channel; the decode role's own environment.
// The contract of a v0.9 run "pd" of one prefill node, one decode node and one trainer node.
void disaggregated_contract(Cluster &cluster) {
  auto &extra = cluster.extra_env();
  extra["PRIME_RL_GENERATION"] = "v0.9";
  extra["PRIME_RL_RUN_DIR"] = "pd";
  extra["NUM_TRAIN_NODES"] = "1";
  extra["NUM_INFER_NODES"] = "2";
  extra["INFERENCE_TP"] = "2";
  extra["ORCHESTRATOR_REPLICA"] = "2";
  extra["ENV_SERVERS_JSON"] = "[]";
  extra["INFERENCE_DEPLOYMENT"] = "disaggregated";
  extra["NODES_PER_INFER_REPLICA"] = "2";
  extra["NODES_PER_PREFILL_REPLICA"] = "1";
  extra["NUM_PREFILL_REPLICAS"] = "1";
  extra["NODES_PER_DECODE_REPLICA"] = "1";
  extra["NUM_DECODE_REPLICAS"] = "1";
  extra["UCX_NET_DEVICES"] = "mlx5_9:1"; // the machine's RDMA ports are not the test's
}

TEST(NodeRlPrimeRlPlacement, DisaggregatedPrefillAndDecodeAreWiredAsPrimeRlWiresThem) {
  Cluster cluster("rl", 3);
  const fs::path out = cluster.root() / "out";
  write_file(cluster.root() / "config.toml",
             "output_dir = \"" + out.string() +
                 "\"\n\n[run]\nname = \"pd\"\n\n[deployment]\ntype = \"multi_node\"\n"
                 "num_train_nodes = 1\n\n[inference.deployment]\ntype = \"disaggregated\"\n"
                 "decode_env_vars = { DECODE_ONLY = \"yes\" }\n\n[inference.vllm]\n"
                 "tensor_parallel_size = 2\n\n[orchestrator]\n");
  disaggregated_contract(cluster);
  cluster.start_all();
  ASSERT_EQ(cluster.wait_all(), (std::vector<int>{0, 0, 0})) << cluster.diagnostics();

  const auto calls = [&](const std::string &program) { return cluster.fakes().calls(program); };
  ASSERT_EQ(calls("vllm-router").size(), 1u);
  const auto router = calls("vllm-router")[0].argv;
  EXPECT_NE(std::find(router.begin(), router.end(), "--vllm-pd-disaggregation"), router.end());
  std::vector<std::string> workers;
  for (size_t i = 0; i + 1 < router.size(); ++i) {
    if (router[i] == "--prefill" || router[i] == "--decode") {
      workers.push_back(router[i] + " " + router[i + 1]);
    }
  }
  EXPECT_EQ(workers,
            (std::vector<std::string>{"--prefill http://127.0.0.1:8100",
                                      "--prefill http://127.0.0.1:8101",
                                      "--decode http://127.0.0.1:8200",
                                      "--decode http://127.0.0.1:8201"}));
  ASSERT_EQ(calls("inference").size(), 4u);
  std::map<std::string, nlohmann::json> by_port;
  for (const auto &call : calls("inference")) {
    const auto ports = strings_after(call.argv, "--server.port");
    ASSERT_EQ(ports.size(), 1u);
    const std::string port = ports[0];
    const bool prefill = call.env.at("BEAKER_REPLICA_RANK") == "0";
    EXPECT_EQ(port.substr(0, 3), prefill ? "810" : "820") << port;
    EXPECT_EQ(strings_after(call.argv, "--vllm.data-parallel-size"),
              (std::vector<std::string>{"2"}));
    EXPECT_EQ(call.env.at("VLLM_NIXL_SIDE_CHANNEL_PORT"), port.back() == '0' ? "5600" : "5601");
    EXPECT_EQ(call.env.at("VLLM_NIXL_SIDE_CHANNEL_HOST"), "127.0.0.1");
    EXPECT_EQ(call.env.count("DECODE_ONLY"), prefill ? 0u : 1u);
    by_port[port] = nlohmann::json::parse(read_file(call.argv.back()));
  }
  EXPECT_EQ(by_port["8100"]["data_parallel_rank"], 0);
  EXPECT_EQ(by_port["8101"]["data_parallel_rank"], 1);
  EXPECT_EQ(by_port["8101"]["all2all_backend"], "deepep_high_throughput");
  EXPECT_EQ(by_port["8201"]["data_parallel_rank"], 1);
  EXPECT_EQ(by_port["8201"]["all2all_backend"], "deepep_low_latency");
  EXPECT_EQ(by_port["8201"]["compilation_config"]["cudagraph_mode"], "FULL_DECODE_ONLY");
  EXPECT_EQ(by_port["8200"]["data_parallel_address"], "127.0.0.1");
  ASSERT_EQ(calls("orchestrator").size(), 1u);
  EXPECT_EQ(strings_after(calls("orchestrator")[0].argv, "--model.client.admin-base-url"),
            (std::vector<std::string>{"http://127.0.0.1:8100/v1",
                                      "http://127.0.0.1:8101/v1",
                                      "http://127.0.0.1:8200/v1",
                                      "http://127.0.0.1:8201/v1"}));
  expect_no_survivors(cluster);
}

// A recorded environment's value, or "<unset>" (so a missing variable fails by name).
std::string env_value(const std::map<std::string, std::string> &env, const std::string &name) {
  const auto it = env.find(name);
  return it == env.end() ? "<unset>" : it->second;
}

// Fake Mooncake: the master listens on its RPC and metadata ports, a client on its own port (the
// test's replicas share one address, so a second client finds the first one's port taken and
// only waits, as if it had bound it).
const char *k_fake_mooncake = R"PY(
import socket, sys, time
ports = [int(arg.split("=", 1)[1]) for arg in sys.argv[1:]
         if arg.split("=", 1)[0] in ("-rpc_port", "-http_metadata_server_port", "-port")]
listening = []
for port in ports:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind(("127.0.0.1", port))
        server.listen(16)
        listening.append(server)
    except OSError:
        pass
time.sleep(1000)
)PY";

// llm-d's router and Mooncake's store, as Prime-RL's templates start them, in a real run of
// three replicas (prefill, decode, trainer): the store's port barriers hold every engine back
// until the master and the node's client answer; the picker's config is rendered from the TOML's
// scorers, its endpoints name each engine (decode through its node's sidecar), Envoy listens on
// the router port, and every inference process gets the disk tier's environment.
TEST(NodeRlPrimeRlPlacement, LlmdRouterAndMooncakeStoreRunAsPrimeRlRunsThem) {
  Cluster cluster("rl", 3);
  const fs::path out = cluster.root() / "out";
  const fs::path disk = cluster.root() / "kv-disk";
  write_file(
      cluster.root() / "config.toml",
      "output_dir = \"" + out.string() +
          "\"\n\n[run]\nname = \"pd\"\n\n[deployment]\ntype = \"multi_node\"\n"
          "num_train_nodes = 1\n\n[inference.deployment]\ntype = \"disaggregated\"\n\n"
          "[inference.router]\ntype = \"llm-d\"\nnon_cached_tokens = 128\n"
          "scorers = { \"prefix-cache-scorer\" = 3.0 }\n"
          "decode_scorer_overrides = { \"queue-scorer\" = 4.0 }\n\n"
          "[inference.kv_cache_offload]\ntype = \"mooncake\"\ndevice_name = \"mlx5_0,mlx5_3\"\n"
          "cpu = { num_bytes = 1000000 }\ndisk = { path = \"" +
          disk.string() + "\" }\n\n[inference.vllm]\ntensor_parallel_size = 2\n\n[orchestrator]\n");
  for (const char *program : {"mooncake_master", "mooncake_client"}) {
    cluster.fakes().add(program,
                        "echo $$ > \"$PB_CTL\"/pids/$(basename $0)-$BEAKER_REPLICA_RANK-$$\n"
                        "exec python3 \"$PB_CTL\"/mooncake.py \"$@\"");
  }
  write_file(cluster.ctl("mooncake.py"), k_fake_mooncake);
  // The trainer runs until every inference process has started (and so has been recorded).
  cluster.fakes().add("torchrun",
                      "for _ in $(seq 1 300); do\n"
                      "  [ \"$(ls \"$PB_CTL\"/pids | grep -c -e '^inference-' -e '^pd-sidecar-' "
                      "-e '^envoy-' -e '^epp-')\" -ge 7 ] && exit 0\n"
                      "  sleep 0.1\n"
                      "done\n"
                      "exit 9");
  for (const char *program : {"epp", "envoy", "pd-sidecar"}) {
    cluster.fakes().add(
        program,
        "echo $$ > \"$PB_CTL\"/pids/$(basename $0)-$BEAKER_REPLICA_RANK-$$\nexec sleep 1000");
  }
  disaggregated_contract(cluster);
  auto &extra = cluster.extra_env();
  extra["INFERENCE_ROUTER"] = "llm-d";
  extra["KV_CACHE_OFFLOAD"] = "mooncake";
  const std::vector<int> mooncake = {free_port(), free_port(), free_port()};
  extra["PRIMEBEAKER_NODE_MOONCAKE_PORTS"] =
      fmt::format("{},{},{}", mooncake[0], mooncake[1], mooncake[2]);
  cluster.start_all();
  ASSERT_EQ(cluster.wait_all(), (std::vector<int>{0, 0, 0})) << cluster.diagnostics();

  const auto calls = [&](const std::string &program) { return cluster.fakes().calls(program); };
  EXPECT_TRUE(calls("vllm-router").empty());
  // The router: the picker and Envoy on inference node 0 only.
  ASSERT_EQ(calls("epp").size(), 1u);
  ASSERT_EQ(calls("envoy").size(), 1u);
  EXPECT_EQ(env_value(calls("epp")[0].env, "BEAKER_REPLICA_RANK"), "0");
  const fs::path llmd = out / "pd" / "logs" / "inference" / "llmd";
  EXPECT_EQ(strings_after(calls("epp")[0].argv, "--config-file"),
            (std::vector<std::string>{(llmd / "epp.yaml").string()}));
  EXPECT_EQ(strings_after(calls("envoy")[0].argv, "-c"),
            (std::vector<std::string>{(llmd / "envoy.yaml").string()}));
  const std::string epp = read_file(llmd / "epp.yaml");
  EXPECT_NE(epp.find("      path: " + (llmd / "endpoints.yaml").string() + "\n"), std::string::npos)
      << epp;
  EXPECT_NE(epp.find("      nonCachedTokens: 128\n"), std::string::npos) << epp;
  // The decode profile: its filter, the base scorer, then its override.
  EXPECT_NE(epp.find("  - name: decode\n    plugins:\n      - pluginRef: decode-filter\n"
                     "      - pluginRef: prefix-cache-scorer\n        weight: 3.0\n"
                     "      - pluginRef: queue-scorer\n        weight: 4.0\n"),
            std::string::npos)
      << epp;
  const std::string endpoints = read_file(llmd / "endpoints.yaml");
  EXPECT_NE(
      endpoints.find("  - name: prefill-0-rank-1\n    address: 127.0.0.1\n    port: \"8101\"\n"),
      std::string::npos)
      << endpoints;
  EXPECT_NE(
      endpoints.find("  - name: decode-0-rank-1\n    address: 127.0.0.1\n    port: \"8301\"\n"),
      std::string::npos)
      << endpoints;
  EXPECT_NE(read_file(llmd / "envoy.yaml").find("port_value: 8000 }"), std::string::npos);
  // pd-sidecar on the decode node, fronting its two engines.
  ASSERT_EQ(calls("pd-sidecar").size(), 1u);
  const auto sidecar = calls("pd-sidecar")[0];
  EXPECT_EQ(env_value(sidecar.env, "BEAKER_REPLICA_RANK"), "1");
  EXPECT_EQ(strings_after(sidecar.argv, "--port"), (std::vector<std::string>{"8300"}));
  EXPECT_EQ(strings_after(sidecar.argv, "--vllm-port"), (std::vector<std::string>{"8200"}));
  EXPECT_EQ(strings_after(sidecar.argv, "--data-parallel-size"), (std::vector<std::string>{"2"}));
  // Mooncake: one master on node 0, a client on each inference node, with the TOML's sizes,
  // devices and disk tier; each engine reads its node's config.
  ASSERT_EQ(calls("mooncake_master").size(), 1u);
  const auto master = calls("mooncake_master")[0].argv;
  EXPECT_NE(std::find(master.begin(), master.end(), "-root_fs_dir=" + disk.string()), master.end());
  ASSERT_EQ(calls("mooncake_client").size(), 2u);
  for (const auto &client : calls("mooncake_client")) {
    const auto &argv = client.argv;
    for (const std::string &expected :
         {fmt::format("-port={}", mooncake[2]),
          fmt::format("-master_server_address=127.0.0.1:{}", mooncake[0]),
          std::string("-global_segment_size=1000000"),
          std::string("-device_names=mlx5_0,mlx5_3"),
          std::string("-enable_offload=true")}) {
      EXPECT_NE(std::find(argv.begin(), argv.end(), expected), argv.end()) << expected;
    }
    EXPECT_EQ(env_value(client.env, "MOONCAKE_OFFLOAD_FSDIR"), disk.string());
  }
  EXPECT_TRUE(fs::is_directory(disk));
  ASSERT_EQ(calls("inference").size(), 4u);
  for (const auto &engine : calls("inference")) {
    const std::string rank = env_value(engine.env, "BEAKER_REPLICA_RANK");
    const fs::path config = env_value(engine.env, "MOONCAKE_CONFIG_PATH");
    EXPECT_EQ(config, out / "pd" / "mooncake" / ("node_" + rank) / "config.json");
    EXPECT_EQ(env_value(engine.env, "PYTHONHASHSEED"), "0");
    EXPECT_EQ(env_value(engine.env, "MOONCAKE_OFFLOAD_ENABLE_EVICTION"), "true");
    const auto store = nlohmann::json::parse(read_file(config));
    EXPECT_EQ(store["device_name"], "mlx5_0,mlx5_3");
    EXPECT_EQ(store["enable_offload"], true);
    EXPECT_EQ(store["master_server_address"], fmt::format("127.0.0.1:{}", mooncake[0]));
  }
  // The orchestrator goes through Envoy; its admin URLs are the engines themselves.
  ASSERT_EQ(calls("orchestrator").size(), 1u);
  EXPECT_EQ(strings_after(calls("orchestrator")[0].argv, "--model.client.base-url"),
            (std::vector<std::string>{"http://127.0.0.1:8000/v1"}));
  expect_no_survivors(cluster);
}

// A launch placed for llm-d (the contract) of a TOML whose router is now `router`.
void llm_d_launch_of(Cluster &cluster, const std::string &router) {
  write_file(cluster.root() / "config.toml",
             "output_dir = \"" + (cluster.root() / "out").string() +
                 "\"\n\n[run]\nname = \"pd\"\n\n[deployment]\ntype = \"multi_node\"\n"
                 "num_train_nodes = 1\n\n[inference.deployment]\ntype = \"disaggregated\"\n\n"
                 "[inference.router]\ntype = \"" +
                 router + "\"\n\n[inference.vllm]\ntensor_parallel_size = 2\n\n[orchestrator]\n");
  disaggregated_contract(cluster);
  cluster.extra_env()["INFERENCE_ROUTER"] = "llm-d";
}

// A TOML edited since the launch to another router is refused by the config helper in one line
// (exit 3), before any process of the stale placement starts.
TEST(NodeRlPrimeRlPlacement, ATomlEditedToAnotherRouterSinceTheLaunchIsRefused) {
  Cluster cluster("rl", 3);
  llm_d_launch_of(cluster, "vllm-router");
  for (const char *program : {"epp", "envoy", "pd-sidecar"}) {
    cluster.fakes().add(program, "exec sleep 1000");
  }
  cluster.start_all();
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes[0], 3) << cluster.diagnostics();
  EXPECT_NE(cluster.log(0).find("inference.router.type is 'vllm-router', but this launch was "
                                "placed for 'llm-d' (the TOML changed since it was submitted)"),
            std::string::npos)
      << cluster.log(0);
  EXPECT_TRUE(cluster.fakes().calls("inference").empty());
  EXPECT_TRUE(cluster.fakes().calls("torchrun").empty());
  expect_no_survivors(cluster);
}

// An image without llm-d's programs stops the replicas that need them in one line (exit 4),
// naming the programs and where Prime-RL builds them.
TEST(NodeRlPrimeRlPlacement, AnImageWithoutLlmdsProgramsExits4NamingThem) {
  Cluster cluster("rl", 3);
  llm_d_launch_of(cluster, "llm-d");
  cluster.start_all();
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes[0], 4) << cluster.diagnostics();
  EXPECT_NE(cluster.log(0).find("primebeaker: error: cannot find epp, envoy on PATH: the image "
                                "must hold llm-d's programs (Prime-RL's scripts/install_llmd.sh"),
            std::string::npos)
      << cluster.log(0);
  EXPECT_NE(cluster.log(1).find("cannot find pd-sidecar on PATH"), std::string::npos)
      << cluster.log(1);
  EXPECT_TRUE(cluster.fakes().calls("inference").empty());
  expect_no_survivors(cluster);
}

// A Mooncake master that never answers stops the replicas at its barrier, in one line naming it.
TEST(NodeRlPrimeRlPlacement, AMooncakeMasterThatNeverAnswersFailsAtItsBarrier) {
  Cluster cluster("rl", 2);
  const fs::path out = cluster.root() / "out";
  write_file(cluster.root() / "config.toml",
             "output_dir = \"" + out.string() +
                 "\"\n\n[run]\nname = \"kv\"\n\n[deployment]\ntype = \"multi_node\"\n"
                 "num_train_nodes = 1\n\n[inference.kv_cache_offload]\ntype = \"mooncake\"\n"
                 "cpu = { num_bytes = 1000 }\n\n[inference.vllm]\ntensor_parallel_size = 2\n\n"
                 "[orchestrator]\n");
  cluster.fakes().add("mooncake_master", "exec sleep 1000"); // listens on nothing
  cluster.fakes().add("mooncake_client", "exec sleep 1000");
  auto &extra = cluster.extra_env();
  extra["PRIME_RL_GENERATION"] = "v0.9";
  extra["PRIME_RL_RUN_DIR"] = "kv";
  extra["NUM_TRAIN_NODES"] = "1";
  extra["NUM_INFER_NODES"] = "1";
  extra["INFERENCE_TP"] = "2";
  extra["ORCHESTRATOR_REPLICA"] = "1";
  extra["ENV_SERVERS_JSON"] = "[]";
  extra["KV_CACHE_OFFLOAD"] = "mooncake";
  const int master = free_port();
  extra["PRIMEBEAKER_NODE_MOONCAKE_PORTS"] =
      fmt::format("{},{},{}", master, free_port(), free_port());
  extra["PRIMEBEAKER_NODE_PORT_WAIT_SECONDS"] = "2"; // Prime-RL waits 120 s
  write_file(cluster.ctl("hang-torchrun"), "");      // the trainer would run on
  cluster.start_all();
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes[0], 1) << cluster.diagnostics();
  EXPECT_NE(codes[1], 0) << cluster.diagnostics();
  EXPECT_NE(cluster.log(0).find(fmt::format(
                "Mooncake's master did not accept connections on 127.0.0.1:{} within 2 s", master)),
            std::string::npos)
      << cluster.log(0);
  EXPECT_TRUE(cluster.fakes().calls("inference").empty());
  EXPECT_TRUE(cluster.fakes().calls("mooncake_client").empty());
  expect_no_survivors(cluster);
}

TEST(NodeRl, MissingEnvironmentExits2NamingTheVariable) {
  Cluster cluster("rl", 1);
  auto env = cluster.env(0);
  env.erase("REGISTRY");
  pb::test::RunOptions options;
  options.env = env;
  const auto r = pb::test::run_primebeaker({"node", "rl"}, options);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "primebeaker: error: missing required environment variable: REGISTRY\n");
  EXPECT_TRUE(fs::is_empty(cluster.rdv())); // nothing published
}

TEST(NodeRl, ThreeReplicasSucceedWithEverythingWiredAsSpecified) {
  Cluster cluster("rl", 3);
  cluster.extra_env()["REQUIRED_LITEREGISTRY_SERVICES"] = R"({"terminal":2})";
  cluster.extra_env()["PRIMEBEAKER_SETUP_COMMAND"] =
      "echo setup-ran > \"$PB_CTL/setup.$BEAKER_REPLICA_RANK\"";
  cluster.extra_env()["PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID"] = "01SERVICESTACK";
  cluster.extra_env()["BEAKER_TOKEN"] = "token";
  // Runtime state of an interrupted run: step 4 is complete on both trainer ranks and the
  // orchestrator, step 6 was cut off mid-save (rank 1's shard and .metadata missing).
  const fs::path out = cluster.root() / "out";
  for (const char *d : {"rollouts/step_3",
                        "rollouts/step_5",
                        "run_default/rollouts/step_4",
                        "run_default/broadcasts/step_6"}) {
    fs::create_directories(out / d);
  }
  for (const char *f : {"checkpoints/step_4/trainer/__0_0.distcp",
                        "checkpoints/step_4/trainer/__1_0.distcp",
                        "checkpoints/step_4/trainer/.metadata",
                        "run_default/checkpoints/step_4/orchestrator/progress.pt",
                        "checkpoints/step_6/trainer/__0_0.distcp",
                        "run_default/checkpoints/step_6/orchestrator/progress.pt"}) {
    write_file(out / f, "x");
  }
  cluster.start_all({2, 1, 0}); // order must not matter
  // The required-service barrier holds rank 0 until two terminal servers are live.
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(cluster.fakes().calls("torchrun").empty());
  for (int i = 0; i < 2; ++i) {
    pb::test::RunOptions o;
    const auto reg = pb::test::run_primebeaker({"registry",
                                                "register",
                                                "--registry",
                                                "file://" + (cluster.root() / "registry").string(),
                                                "--service",
                                                "terminal",
                                                "--uri",
                                                "http://10.0.0.9:" + std::to_string(2000 + i)},
                                               o);
    ASSERT_EQ(reg.exit_code, 0) << reg.err;
  }
  const auto codes = cluster.wait_all();
  ASSERT_EQ(codes, (std::vector<int>{0, 0, 0})) << cluster.diagnostics();

  // Setup command on every replica, in the working dir.
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(read_file(cluster.ctl("setup." + std::to_string(r))), "setup-ran\n");
  }
  // Config materialisation through the (fake) Prime-RL code, with the namespace rewrite.
  const auto validated = nlohmann::json::parse(read_file(cluster.ctl("validated.json")));
  EXPECT_EQ(validated["orchestrator"]["train"]["source"][0]["legacy"]["id"],
            "primebeaker.environments.jtc_label_env");
  EXPECT_EQ(validated["orchestrator"]["eval"]["source"][0]["legacy"]["id"], "my_own_env");
  EXPECT_TRUE(validated.contains("slurm"));
  const fs::path configs = cluster.root() / "out" / "configs";
  EXPECT_NE(read_file(configs / "trainer.toml").find("fake trainer config"), std::string::npos);
  const fs::path runtime = cluster.attempt_dir() / "runtime";
  EXPECT_EQ(read_file(runtime / "runtime.ready"), "ready\n");
  const std::string runtime_env = read_file(runtime / "runtime.env");
  EXPECT_NE(runtime_env.find("export ROUTER_POLICY=cache_aware\n"), std::string::npos);
  EXPECT_NE(runtime_env.find("export INFERENCE_TP=2\n"), std::string::npos);
  EXPECT_NE(read_file(runtime / "trainer.env").find("export TRAINER_ONLY=yes\n"),
            std::string::npos);

  // Inference servers: 1 on rank 0 (GPUs 2,3), 2 on ranks 1 and 2, each with its cache dir.
  const auto inference = cluster.fakes().calls("inference");
  ASSERT_EQ(inference.size(), 5U);
  std::multiset<std::string> slices;
  for (const auto &call : inference) {
    const std::string rank = call.env.at("BEAKER_REPLICA_RANK");
    slices.insert(rank + ":" + call.env.at("CUDA_VISIBLE_DEVICES") + ":" + call.argv[6]);
    const std::string k = call.argv[6] == "8100" ? "0" : "1";
    const fs::path cache = cluster.root() / "local" /
                           ("primebeaker-rl-0123456789abcdef0123456789abcdef-" + rank) /
                           "inference" / ("node_" + rank + "_rank" + k);
    EXPECT_EQ(call.env.at("VLLM_CACHE_ROOT"), (cache / "vllm").string());
    EXPECT_EQ(call.env.at("TORCHINDUCTOR_CACHE_DIR"), (cache / "inductor").string());
    EXPECT_EQ(call.env.at("VLLM_RPC_BASE_PATH"), (cache / "rpc").string());
    EXPECT_EQ(call.env.at("PB_INFERENCE_DEFAULT"), "inference");
    EXPECT_EQ(call.env.at("MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(std::vector<std::string>(call.argv.begin() + 1, call.argv.begin() + 5),
              (std::vector<std::string>{
                  "@", (configs / "inference.toml").string(), "--server.host", "0.0.0.0"}));
  }
  EXPECT_EQ(slices,
            (std::multiset<std::string>{
                "0:2,3:8100", "1:0,1:8100", "1:2,3:8101", "2:0,1:8100", "2:2,3:8101"}));

  // Router on rank 0 over all five workers.
  const auto router = cluster.fakes().calls("vllm-router");
  ASSERT_EQ(router.size(), 1U);
  EXPECT_EQ(strings_after(router[0].argv, "--worker-urls").size(), 5U);
  EXPECT_EQ(strings_after(router[0].argv, "--policy"), std::vector<std::string>{"cache_aware"});
  EXPECT_EQ(strings_after(router[0].argv, "--prometheus-port"), std::vector<std::string>{"29000"});
  EXPECT_EQ(read_file(cluster.attempt_dir() / "router.url"), "http://127.0.0.1:8000/v1\n");

  // Trainer and orchestrator on rank 0.
  const auto trainer = cluster.fakes().calls("torchrun");
  ASSERT_EQ(trainer.size(), 1U);
  EXPECT_EQ(trainer[0].env.at("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(trainer[0].env.at("WANDB_SHARED_LABEL"), "trainer");
  EXPECT_EQ(trainer[0].env.at("WANDB_RUN_ID"), "shared-run");
  EXPECT_EQ(trainer[0].env.at("TRAINER_ONLY"), "yes");
  EXPECT_EQ(trainer[0].env.at("PB_TRAINER_DEFAULT"), "trainer");
  EXPECT_EQ(trainer[0].cwd, (cluster.root() / "work").string());
  EXPECT_EQ(trainer[0].argv[4], "--nproc-per-node=2");
  EXPECT_EQ(trainer[0].argv.back(), (configs / "trainer.toml").string());
  const auto orchestrator = cluster.fakes().calls("orchestrator");
  ASSERT_EQ(orchestrator.size(), 1U);
  EXPECT_EQ(orchestrator[0].env.at("WANDB_SHARED_LABEL"), "orchestrator");
  EXPECT_EQ(strings_after(orchestrator[0].argv, "--model.client.base-url"),
            std::vector<std::string>{"http://127.0.0.1:8000/v1"});
  EXPECT_EQ(strings_after(orchestrator[0].argv, "--model.client.admin-base-url").size(), 5U);
  // The trainer's rank prefix is stripped in its node log.
  EXPECT_NE(
      read_file(cluster.root() / "out/logs/trainer/node_0.log").find("trainer step 1 on node 0\n"),
      std::string::npos);

  // The gateway ran on rank 0 only, with the flags of docs/node.md, and was probed.
  int gateways = 0;
  for (const auto &entry : fs::directory_iterator(cluster.root() / "ctl")) {
    if (entry.path().filename().string().rfind("gateway.", 0) == 0) {
      ++gateways;
      const auto g = nlohmann::json::parse(read_file(entry.path()));
      EXPECT_EQ(g["rank"], "0");
      EXPECT_EQ(g["argv"],
                nlohmann::json({"--registry",
                                "file://" + (cluster.root() / "registry").string(),
                                "--port",
                                std::to_string(cluster.gateway_port()),
                                "--workers",
                                "3",
                                "--timeout",
                                "800",
                                "--judge-timeout",
                                "800"}));
    }
  }
  EXPECT_EQ(gateways, 1);
  EXPECT_EQ(nlohmann::json::parse(read_file(cluster.ctl("search.json")))["model_path"],
            "localsearch:bc-rl-v1");

  // Stale rollouts/broadcasts above the resume step are gone, the rest kept.
  EXPECT_TRUE(fs::exists(out / "rollouts/step_3"));
  EXPECT_TRUE(fs::exists(out / "run_default/rollouts/step_4"));
  EXPECT_FALSE(fs::exists(out / "rollouts/step_5"));
  EXPECT_FALSE(fs::exists(out / "run_default/broadcasts/step_6"));
  EXPECT_TRUE(fs::exists(out / "checkpoints/step_4/trainer/.metadata"));
  // The runtime decided the resume point (docs/recovery.md): step 4, explicitly (the TOML says
  // -1 and is not edited); the cut-off step 6 was moved aside on both sides, never deleted.
  EXPECT_EQ(validated["ckpt"]["resume_step"], 4);
  EXPECT_NE(read_file(cluster.root() / "config.toml").find("resume_step = -1"), std::string::npos);
  EXPECT_FALSE(fs::exists(out / "checkpoints/step_6"));
  EXPECT_FALSE(fs::exists(out / "run_default/checkpoints/step_6"));
  int set_aside = 0;
  for (const auto &entry :
       fs::recursive_directory_iterator(out / "primebeaker_recovery" / "set_aside")) {
    set_aside += entry.path().filename() == "step_6" ? 1 : 0;
  }
  EXPECT_EQ(set_aside, 2);
  // The ledger has this start, keyed by the W&B run id, and how it ended.
  const fs::path ledger = out / "primebeaker_recovery/ledger/shared-run";
  const auto start = nlohmann::json::parse(read_file(ledger / "1.json"));
  EXPECT_EQ(start["cause"], "first_start");
  EXPECT_EQ(start["resume_step"], 4);
  EXPECT_EQ(start["job_id"], "manual");
  EXPECT_EQ(start["replica"], "node rl");
  EXPECT_EQ(start["set_aside"].size(), 2U);
  EXPECT_EQ(nlohmann::json::parse(read_file(ledger / "1.end.json"))["exit_code"], 0);
  // Managed service cleanup: rank 0 stops the service stack once.
  const auto beaker = cluster.beaker().calls();
  ASSERT_EQ(beaker.size(), 1U);
  EXPECT_EQ(beaker[0].argv,
            (std::vector<std::string>{"beaker", "experiment", "stop", "01SERVICESTACK"}));
  EXPECT_EQ(beaker[0].env.at("BEAKER_REPLICA_RANK"), "0");

  // Published outcome; nothing left running.
  EXPECT_EQ(read_file(cluster.attempt_dir() / "status.0"), "0 mixed\n");
  EXPECT_EQ(read_file(cluster.attempt_dir() / "status.1"), "0 inference\n");
  EXPECT_TRUE(fs::exists(cluster.attempt_dir() / "complete"));
  EXPECT_FALSE(fs::exists(cluster.attempt_dir() / "shutdown.requested"));
  expect_no_survivors(cluster);
}

// docs/node.md "The plan": what `node rl --dry-run --json` prints is what the replica then runs.
// Each replica's plan is taken first; after the run, the values the replicas learned (hosts,
// Prime-RL's resolved values, the worker list) are read back from the attempt directory and
// substituted into the plan; the fakes on PATH must have recorded exactly those processes, with
// the plan's env, GPUs and working directory, and nothing else.
TEST(NodeRl, RunsExactlyTheProcessesOfItsDryRun) {
  Cluster cluster("rl", 3);
  cluster.extra_env()["REQUIRED_LITEREGISTRY_SERVICES"] = "{}";
  std::vector<nlohmann::json> plans;
  for (int r = 0; r < 3; ++r) {
    pb::test::RunOptions options;
    options.env = cluster.env(r);
    const auto dry = pb::test::run_primebeaker({"node", "rl", "--dry-run", "--json"}, options);
    ASSERT_EQ(dry.exit_code, 0) << dry.err;
    plans.push_back(nlohmann::json::parse(dry.out));
  }
  EXPECT_TRUE(fs::is_empty(cluster.rdv())); // the dry-runs published nothing
  cluster.start_all();
  ASSERT_EQ(cluster.wait_all(), (std::vector<int>{0, 0, 0})) << cluster.diagnostics();

  const fs::path attempt = cluster.attempt_dir();
  const auto runtime = nlohmann::json::parse(read_file(attempt / "runtime/runtime.json"));
  pb::node::EnvMap facts = {{"attempt_dir", attempt.string()}};
  for (const auto &[k, v] : runtime["runtime"].items()) {
    facts["runtime." + k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  for (int n = 0; n < 3; ++n) {
    facts["host." + std::to_string(n)] = "127.0.0.1";
  }
  facts["router_url"] = std::string(pb::text::trim(read_file(attempt / "router.url")));
  facts["admin_urls"] = std::string(pb::text::trim(read_file(attempt / "admin.urls")));
  std::string workers;
  for (const auto &url : pb::text::split(facts["admin_urls"], ' ')) {
    workers += (workers.empty() ? "" : " ") + url.substr(0, url.size() - 3); // without "/v1"
  }
  facts["workers"] = workers;

  // Expected calls per program: (rank, argv, env entries, CUDA_VISIBLE_DEVICES).
  struct Expected {
    std::string rank;
    pb::proc::Argv argv;
    std::map<std::string, std::string> env;
  };
  std::map<std::string, std::vector<Expected>> expected;
  auto expect_process = [&](int rank, const nlohmann::json &p, pb::node::EnvMap local) {
    pb::node::ProcessSpec spec;
    spec.argv = p["argv"].get<std::vector<std::string>>();
    for (const auto &w : p.value("when", nlohmann::json::array())) {
      spec.when.emplace_back(w["fact"], w["args"].get<std::vector<std::string>>());
    }
    pb::node::EnvMap f = facts;
    f.insert(local.begin(), local.end());
    Expected e{std::to_string(rank), pb::node::resolve_argv(spec, f), {}};
    for (const auto &[k, v] : p["env"].items()) {
      e.env[k] = pb::node::substitute(v.get<std::string>(), f);
    }
    if (p.contains("gpus")) {
      e.env["CUDA_VISIBLE_DEVICES"] = pb::node::substitute(p["gpus"].get<std::string>(), f);
    }
    e.env["MASTER_ADDR"] = "127.0.0.1";
    expected[e.argv[0]].push_back(e);
  };
  for (int r = 0; r < 3; ++r) {
    for (const auto &s : plans[r]["steps"]) {
      if (s["step"] == "start") {
        expect_process(r, s["process"], {});
      } else if (s["step"] == "start_inference_servers") {
        const int tp = std::stoi(facts["runtime.INFERENCE_TP"]);
        const int start = s["gpus"]["start"];
        const int count = s["gpus"]["count"];
        for (int k = 0; k * tp < count; ++k) {
          std::string gpus;
          for (int g = 0; g < tp; ++g) {
            gpus += (g ? "," : "") + std::to_string(start + k * tp + g);
          }
          expect_process(r,
                         s["process"],
                         {{"k", std::to_string(k)},
                          {"gpus", gpus},
                          {"port", std::to_string(std::stoi(facts["runtime.BACKEND_PORT"]) + k)}});
        }
      }
    }
  }
  for (const std::string program : {"inference", "vllm-router", "torchrun", "orchestrator"}) {
    const auto calls = cluster.fakes().calls(program);
    const auto &want = expected[program];
    ASSERT_EQ(calls.size(), want.size()) << program;
    std::multiset<std::pair<std::string, pb::proc::Argv>> got_argv;
    std::multiset<std::pair<std::string, pb::proc::Argv>> want_argv;
    for (const auto &call : calls) {
      got_argv.emplace(call.env.at("BEAKER_REPLICA_RANK"), call.argv);
      EXPECT_EQ(call.cwd, (cluster.root() / "work").string());
      // Its env holds what the plan says, for the planned process with this argv.
      for (const auto &w : want) {
        if (w.argv == call.argv && w.rank == call.env.at("BEAKER_REPLICA_RANK")) {
          for (const auto &[k, v] : w.env) {
            EXPECT_EQ(call.env.count(k) ? call.env.at(k) : "<unset>", v) << program << " " << k;
          }
        }
      }
    }
    for (const auto &w : want) {
      want_argv.emplace(w.rank, w.argv);
    }
    EXPECT_EQ(got_argv, want_argv) << program;
  }
  // The gateway (a Python module, recorded by the fake LiteRegistry package) as planned.
  for (const auto &entry : fs::directory_iterator(cluster.root() / "ctl")) {
    if (entry.path().filename().string().rfind("gateway.", 0) == 0) {
      const auto g = nlohmann::json::parse(read_file(entry.path()));
      for (const auto &s : plans[0]["steps"]) {
        if (s["step"] == "start" && s["process"]["name"] == "gateway") {
          auto argv = s["process"]["argv"].get<std::vector<std::string>>();
          EXPECT_EQ(g["argv"].get<std::vector<std::string>>(),
                    std::vector<std::string>(argv.begin() + 3, argv.end()));
        }
      }
    }
  }
}

// The contract end to end: the env `rl preview` renders (launch module) is what `node rl` runs on.
TEST(NodeRl, RunsFromTheEnvironmentThatRlPreviewRenders) {
  Cluster cluster("rl", 2);
  const fs::path root = cluster.root();
  write_file(root / "multinode-rl.toml",
             "output_dir = \"" + (root / "out").string() +
                 "\"\n"
                 "[deployment]\ntype = \"multi_node\"\ngpus_per_node = 4\nnum_train_nodes = 1\n"
                 "num_infer_nodes = 2\n"
                 "[wandb]\nname = \"contract-run\"\nproject = \"p\"\n"
                 "[trainer.model]\ndp_replicate = 2\n"
                 "[inference]\napi_server_count = 3\n[inference.parallel]\ntp = 2\ndp = 3\n"
                 "[inference.router]\npolicy = \"round_robin\"\n"
                 "[orchestrator]\n[[orchestrator.train.source]]\n"
                 "legacy.args.local_search_model_path = \"localsearch:x\"\n");
  const auto preview = pb::test::run_primebeaker({"rl",
                                                  "preview",
                                                  "--toml",
                                                  (root / "multinode-rl.toml").string(),
                                                  "--registry",
                                                  "file://" + (root / "registry").string(),
                                                  "--mount-path",
                                                  root.string(),
                                                  "--working-dir",
                                                  (root / "work").string(),
                                                  "--scratch-dir",
                                                  (root / "scratch").string(),
                                                  "--home-dir",
                                                  (root / "work").string(),
                                                  "--image",
                                                  "beaker://team/image",
                                                  "--prime-rl",
                                                  "v0.7.1.dev83",
                                                  "--wandb-run-id",
                                                  "run1",
                                                  "--gateway-port",
                                                  std::to_string(cluster.gateway_port()),
                                                  "--gateway-workers",
                                                  "2",
                                                  "--no-stage",
                                                  "--max-recoveries",
                                                  "3"});
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  const auto task = nlohmann::json::parse(preview.out)["spec"]["tasks"][0];
  ASSERT_EQ(task["command"], nlohmann::json({"primebeaker", "node", "rl"}));
  ASSERT_EQ(task["replicas"], 2);
  for (const auto &var : task["envVars"]) {
    if (var.contains("value")) {
      cluster.extra_env()[var["name"].get<std::string>()] = var["value"].get<std::string>();
    }
  }
  cluster.start_all();
  const auto codes = cluster.wait_all();
  ASSERT_EQ(codes, (std::vector<int>{0, 0})) << cluster.diagnostics();
  EXPECT_EQ(cluster.fakes().calls("inference").size(), 3U); // 1 on the mixed node + 2
  const auto trainer = cluster.fakes().calls("torchrun");
  ASSERT_EQ(trainer.size(), 1U);
  EXPECT_EQ(trainer[0].env.at("WANDB_SHARED_RUN_ID"), "run1");
  EXPECT_EQ(trainer[0].env.at("CUDA_VISIBLE_DEVICES"), "0,1");
  const fs::path rendezvous = cluster.extra_env().at("RENDEZVOUS_DIR");
  EXPECT_EQ(rendezvous.parent_path(), root / "scratch/primebeaker/rendezvous");
  EXPECT_TRUE(fs::exists(rendezvous / "attempt"));
  // The launch's recovery policy reached the runtime, which recorded it with the start.
  fs::path ledger_dir;
  for (const auto &entry : fs::recursive_directory_iterator(cluster.root())) {
    if (entry.path().filename() == "1.json" &&
        entry.path().parent_path().parent_path().filename() == "ledger") {
      ledger_dir = entry.path().parent_path();
    }
  }
  ASSERT_FALSE(ledger_dir.empty());
  EXPECT_EQ(ledger_dir.filename(), "run1");
  const auto start = nlohmann::json::parse(read_file(ledger_dir / "1.json"));
  EXPECT_EQ(start["max_recoveries"], 3);
  EXPECT_EQ(start["max_restarts_on_errors"], 0);
}

TEST(NodeRl, TrainerFailureOnRank0StopsEveryReplicaWithin10Seconds) {
  Cluster cluster("rl", 3);
  write_file(cluster.ctl("fail-torchrun-0"), "");
  cluster.start_all();
  const auto codes = cluster.wait_all();
  ASSERT_EQ(codes, (std::vector<int>{7, 92, 92})) << cluster.diagnostics();
  for (int r : {1, 2}) {
    EXPECT_LT(cluster.exit_time(r) - cluster.exit_time(0), 10s);
    EXPECT_NE(cluster.log(r).find(
                  "shutdown requested by a peer: Prime-RL node 0 (mixed) exited with code 7"),
              std::string::npos)
        << cluster.log(r);
  }
  EXPECT_NE(cluster.log(0).find("primebeaker: error: trainer failed (exit code 7)"),
            std::string::npos);
  EXPECT_EQ(read_file(cluster.attempt_dir() / "status.0"), "7 mixed\n");
  EXPECT_EQ(read_file(cluster.attempt_dir() / "status.2"), "92 inference\n");
  expect_no_survivors(cluster);
}

TEST(NodeRl, InferenceFailureOnRank2StopsRank0) {
  Cluster cluster("rl", 3);
  write_file(cluster.ctl("hang-torchrun"), "");
  write_file(cluster.ctl("fail-inference-2"), "");
  cluster.start_all();
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes[2], 3) << cluster.diagnostics();
  EXPECT_EQ(codes[0], 92);
  EXPECT_EQ(codes[1], 92);
  EXPECT_NE(cluster.log(2).find("inference server"), std::string::npos);
  EXPECT_EQ(read_file(cluster.attempt_dir() / "shutdown.requested"),
            "Prime-RL node 2 (inference) exited with code 3\n");
  expect_no_survivors(cluster); // the hanging trainer on rank 0 too
}

TEST(NodeRl, AnInferenceServerExitingCleanlyIsAnUnexpectedExit) {
  Cluster cluster("rl", 2);
  cluster.extra_env()["TOTAL_INFER_RANKS"] = "3";
  write_file(cluster.ctl("hang-torchrun"), "");
  write_file(cluster.ctl("quit-inference-1"), "");
  cluster.start_all();
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes, (std::vector<int>{92, 91})) << cluster.diagnostics();
  EXPECT_NE(cluster.log(1).find("exited cleanly while the job was still running"),
            std::string::npos)
      << cluster.log(1);
  EXPECT_EQ(read_file(cluster.attempt_dir() / "status.1"), "91 inference\n");
  expect_no_survivors(cluster);
}

TEST(NodeRl, SigtermStopsTheReplicaAndItsChildrenAndPublishesTheShutdown) {
  Cluster cluster("rl", 3);
  write_file(cluster.ctl("hang-torchrun"), "");
  cluster.start_all();
  ASSERT_TRUE(Cluster::eventually([&] {
    return cluster.recorded_pids("inference", 1).size() == 2;
  })) << cluster.diagnostics();
  ASSERT_TRUE(Cluster::eventually([&] { return cluster.recorded_pids("torchrun", 0).size() == 1; }))
      << cluster.diagnostics();
  const auto rank1_children = cluster.recorded_pids("", 1);
  ::kill(cluster.pid(1), SIGTERM);
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes, (std::vector<int>{92, 143, 92})) << cluster.diagnostics();
  for (const pid_t pid : rank1_children) {
    EXPECT_FALSE(running(pid));
  }
  EXPECT_EQ(read_file(cluster.attempt_dir() / "shutdown.requested"),
            "Prime-RL node 1 (inference) exited with code 143\n");
  EXPECT_NE(cluster.log(1).find("primebeaker: error: terminated (SIGTERM)"), std::string::npos);
  expect_no_survivors(cluster);
}

TEST(NodeRl, FilesOfAnEarlierAttemptAreIgnored) {
  Cluster cluster("rl", 3);
  // What a crashed earlier attempt left: its attempt dir with a failure and stale hosts, plus the
  // flat files of the reference layout.
  const fs::path old = cluster.rdv() / "attempt-0000";
  write_file(cluster.rdv() / "attempt", "0000\n");
  write_file(cluster.rdv() / "join.1", "0000 oldnonce\n");
  write_file(cluster.rdv() / "join.2", "0000 oldnonce\n");
  write_file(old / "roster", "1 oldnonce\n2 oldnonce\n");
  for (int r = 0; r < 3; ++r) {
    write_file(old / ("host." + std::to_string(r)), "10.9.9.9\n");
    write_file(old / ("layout." + std::to_string(r)), "0 4\n");
    write_file(cluster.rdv() / ("host." + std::to_string(r)), "10.9.9.9\n");
    write_file(cluster.rdv() / ("status." + std::to_string(r)), "1 inference\n");
  }
  write_file(old / "status.1", "1 inference\n");
  write_file(old / "shutdown.requested", "Prime-RL node 1 (inference) exited with code 1\n");
  write_file(old / "runtime/runtime.ready", "ready\n");
  write_file(cluster.rdv() / "shutdown.requested", "old attempt\n");
  // Peers start first and see the old attempt before rank 0 begins a new one.
  cluster.start(1);
  cluster.start(2);
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(read_file(cluster.rdv() / "join.1").rfind("0000 ", 0), 0U); // joined the old one
  EXPECT_TRUE(cluster.fakes().calls("inference").empty());
  cluster.start(0);
  const auto codes = cluster.wait_all();
  ASSERT_EQ(codes, (std::vector<int>{0, 0, 0})) << cluster.diagnostics();
  EXPECT_NE(cluster.attempt_dir(), old);
  for (const auto &call : cluster.fakes().calls("vllm-router")) {
    for (const auto &url : strings_after(call.argv, "--worker-urls")) {
      EXPECT_EQ(url.find("10.9.9.9"), std::string::npos) << url;
    }
  }
}

TEST(NodeRl, GatewayDyingBeforeReadinessStopsTheJob) {
  Cluster cluster("rl", 2);
  cluster.extra_env()["TOTAL_INFER_RANKS"] = "3";
  write_file(cluster.ctl("gateway-fail"), "");
  cluster.start_all();
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes, (std::vector<int>{4, 92})) << cluster.diagnostics();
  EXPECT_NE(cluster.log(0).find("primebeaker: error: gateway failed (exit code 4)"),
            std::string::npos)
      << cluster.log(0);
  EXPECT_TRUE(cluster.fakes().calls("torchrun").empty());
  expect_no_survivors(cluster);
}

TEST(NodeRl, RequiredServiceBarrierTimesOut) {
  Cluster cluster("rl", 2);
  cluster.extra_env()["TOTAL_INFER_RANKS"] = "3";
  cluster.extra_env()["REQUIRED_LITEREGISTRY_SERVICES"] = R"({"judge":1})";
  cluster.extra_env()["RENDEZVOUS_TIMEOUT_SECONDS"] = "2";
  cluster.start_all();
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes, (std::vector<int>{1, 92})) << cluster.diagnostics();
  EXPECT_NE(
      cluster.log(0).find("primebeaker: error: the required-service barrier failed: timed out "
                          "after 2.0s waiting for services in file://" +
                          (cluster.root() / "registry").string() +
                          ": {\"judge\": {\"expected\": 1, \"observed\": 0}}\n"),
      std::string::npos)
      << cluster.log(0);
  EXPECT_EQ(cluster.log(0).find("primebeaker: error: timed out"), std::string::npos); // said once
  EXPECT_TRUE(cluster.fakes().calls("torchrun").empty());
}

TEST(NodeRl, InvalidConfigIsExit3NamingTheFileAndStopsPeers) {
  Cluster cluster("rl", 2);
  cluster.extra_env()["TOTAL_INFER_RANKS"] = "3";
  write_file(cluster.root() / "config.toml",
             "fail_validation = true\n" + read_file(cluster.root() / "config.toml"));
  cluster.start_all();
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes, (std::vector<int>{3, 92})) << cluster.diagnostics();
  EXPECT_NE(cluster.log(0).find("primebeaker: error: " + (cluster.root() / "config.toml").string() +
                                ": 1 validation error for RLConfig\n  model.name\n"),
            std::string::npos)
      << cluster.log(0);
}

// ---------------------------------------------------------------------------------------------

TEST(NodeSft, ThreeNodesRunTorchrunWithTheirNodeRankAndRendezvousEndpoint) {
  Cluster cluster("sft", 3);
  cluster.start_all();
  const auto codes = cluster.wait_all();
  ASSERT_EQ(codes, (std::vector<int>{0, 0, 0})) << cluster.diagnostics();
  const auto calls = cluster.fakes().calls("torchrun");
  ASSERT_EQ(calls.size(), 3U);
  std::set<std::string> ranks;
  for (const auto &call : calls) {
    const std::string rank = call.env.at("BEAKER_REPLICA_RANK");
    ranks.insert(rank);
    EXPECT_EQ(call.argv,
              (std::vector<std::string>{"torchrun",
                                        "--role=trainer",
                                        "--nnodes=3",
                                        "--nproc-per-node=4",
                                        "--node-rank=" + rank,
                                        "--rdzv-endpoint=127.0.0.1:29500",
                                        "--rdzv-id=primebeaker_0123456789abcdef0123456789abcdef",
                                        "--log-dir=" +
                                            (cluster.root() / "out/logs/trainer/torchrun").string(),
                                        "--tee=3",
                                        "--redirects=3",
                                        "--local-ranks-filter=0,1",
                                        "-m",
                                        "prime_rl.trainer.sft.train",
                                        "@",
                                        (cluster.root() / "out/configs/sft.toml").string()}));
    EXPECT_EQ(call.env.at("MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(call.env.at("PB_TRAINER_DEFAULT"), "trainer");
    EXPECT_EQ(call.env.at("XDG_CACHE_HOME"), (cluster.root() / "scratch/.cache").string());
    EXPECT_EQ(
        call.env.at("TMPDIR"),
        (cluster.root() / "local" / ("primebeaker-sft-0123456789abcdef0123456789abcdef-" + rank))
            .string());
    EXPECT_NE(read_file(cluster.root() / ("out/logs/trainer/node_" + rank + ".log"))
                  .find("trainer step 1 on node " + rank + "\n"),
              std::string::npos);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2"}));
  EXPECT_NE(read_file(cluster.root() / "out/configs/sft.toml").find("fake sft config"),
            std::string::npos);
  EXPECT_EQ(read_file(cluster.attempt_dir() / "status.2"), "0 sft\n");
  EXPECT_FALSE(fs::exists(cluster.attempt_dir() / "shutdown.requested"));
}

// The same for SFT: each node's torchrun is the one its dry-run planned.
TEST(NodeSft, RunsExactlyTheProcessesOfItsDryRun) {
  Cluster cluster("sft", 2);
  std::vector<nlohmann::json> plans;
  for (int r = 0; r < 2; ++r) {
    pb::test::RunOptions options;
    options.env = cluster.env(r);
    const auto dry = pb::test::run_primebeaker({"node", "sft", "--dry-run", "--json"}, options);
    ASSERT_EQ(dry.exit_code, 0) << dry.err;
    plans.push_back(nlohmann::json::parse(dry.out));
  }
  EXPECT_TRUE(fs::is_empty(cluster.rdv()));
  cluster.start_all();
  ASSERT_EQ(cluster.wait_all(), (std::vector<int>{0, 0})) << cluster.diagnostics();
  const auto runtime =
      nlohmann::json::parse(read_file(cluster.attempt_dir() / "runtime/runtime.json"));
  const pb::node::EnvMap facts = {
      {"host.0", "127.0.0.1"},
      {"runtime.TRAINER_RANKS_FILTER", runtime["runtime"]["TRAINER_RANKS_FILTER"]}};
  std::multiset<pb::proc::Argv> want;
  for (const auto &plan : plans) {
    int started = 0;
    for (const auto &s : plan["steps"]) {
      if (s["step"] == "start") {
        pb::node::ProcessSpec spec;
        spec.argv = s["process"]["argv"].get<std::vector<std::string>>();
        want.insert(pb::node::resolve_argv(spec, facts));
        ++started;
      }
    }
    EXPECT_EQ(started, 1);
  }
  std::multiset<pb::proc::Argv> got;
  for (const auto &call : cluster.fakes().calls("torchrun")) {
    got.insert(call.argv);
    EXPECT_EQ(call.env.at("MASTER_ADDR"), "127.0.0.1");
  }
  EXPECT_EQ(got, want);
}

TEST(NodeSft, ANodeFailureStopsTheOthers) {
  Cluster cluster("sft", 3);
  write_file(cluster.ctl("hang-torchrun"), "");
  cluster.start_all();
  ASSERT_TRUE(Cluster::eventually([&] { return cluster.recorded_pids("torchrun").size() == 3; }))
      << cluster.diagnostics();
  // Kill node 1's trainer from outside, as a crash would.
  for (const pid_t pid : cluster.recorded_pids("torchrun", 1)) {
    ::kill(pid, SIGKILL);
  }
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes, (std::vector<int>{92, 137, 92})) << cluster.diagnostics();
  for (int r : {0, 2}) {
    EXPECT_LT(cluster.exit_time(r) - cluster.exit_time(1), 10s);
  }
  EXPECT_EQ(read_file(cluster.attempt_dir() / "shutdown.requested"),
            "SFT node 1 exited with code 137\n");
  expect_no_survivors(cluster);
}

TEST(NodeSft, SigtermOnANodePublishesTheShutdown) {
  Cluster cluster("sft", 2);
  write_file(cluster.ctl("hang-torchrun"), "");
  cluster.start_all();
  ASSERT_TRUE(Cluster::eventually([&] { return cluster.recorded_pids("torchrun").size() == 2; }))
      << cluster.diagnostics();
  ::kill(cluster.pid(0), SIGTERM);
  const auto codes = cluster.wait_all();
  EXPECT_EQ(codes, (std::vector<int>{143, 92})) << cluster.diagnostics();
  EXPECT_EQ(read_file(cluster.attempt_dir() / "shutdown.requested"),
            "SFT node 0 exited with code 143\n");
  expect_no_survivors(cluster);
}

// The recovery budget, end to end (docs/recovery.md): an earlier attempt of this run was killed
// (its start is in the ledger, no end), and automatic recovery is off: replica 0 records the
// refused start and stops with one line, the other replica follows, nothing trains.
TEST(NodeRecovery, AStartPastTheBudgetExitsWithOneLineInsteadOfTraining) {
  Cluster cluster("sft", 2);
  cluster.extra_env()["PRIMEBEAKER_MAX_RECOVERIES"] = "0";
  cluster.extra_env()["BEAKER_JOB_ID"] = "01JOB2";
  const fs::path ledger = cluster.root() / "out/primebeaker_recovery/ledger/shared-run";
  write_file(ledger / "1.json",
             R"({"attempt": 1, "cause": "first_start", "started_unix": 1.0, "launch_id": )"
             R"("0123456789abcdef0123456789abcdef", "job_id": "01JOB1", "resume_step": null})");
  cluster.start_all();
  const auto codes = cluster.wait_all();
  ASSERT_EQ(codes, (std::vector<int>{1, 92})) << cluster.diagnostics();
  EXPECT_NE(cluster.log(0).find("primebeaker: error: restart after a preemption refused: "
                                "automatic recovery is off (--max-recoveries 0)"),
            std::string::npos)
      << cluster.log(0);
  EXPECT_NE(cluster.log(1).find("replica 0 refused to start"), std::string::npos) << cluster.log(1);
  EXPECT_TRUE(cluster.fakes().calls("torchrun").empty());
  const auto refused = nlohmann::json::parse(read_file(ledger / "2.json"));
  EXPECT_EQ(refused["cause"], "preemption");
  EXPECT_EQ(refused["job_id"], "01JOB2");
  EXPECT_NE(refused["refused"].get<std::string>().find("--max-recoveries 0"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(read_file(ledger / "2.end.json"))["exit_code"], 1);
}

// The fault-injection harness of bench/node (docs/recovery.md, "Figures"), with a few seeds:
// real `node rl` and `node sft` replicas, fake Prime-RL programs writing shards one by one, every
// replica killed at random moments and mid-save, restarted with a new job id. Nothing incomplete
// is handed to Prime-RL, no complete step is lost, at most one interval of steps is lost per
// preemption, the W&B id never changes, the ledger lists every start. Per start after the first,
// the ledger's steps_lost is the trained steps the harness measured, less only what nothing on
// disk showed at the kill (docs/recovery.md "Work lost"): never the rollouts written ahead.
TEST(NodeRecovery, FaultInjectionHarnessSurvivesEveryKill) {
  pb::test::TempDir tmp;
  const fs::path report = tmp / "preemption.json";
  pb::proc::Command command;
  command.argv = {"python3",
                  (pb::test::source_dir() / "bench/node/preemption.py").string(),
                  "--binary",
                  pb::test::binary_path().string(),
                  "--seeds",
                  "4",
                  "--kind",
                  "both",
                  "--quiet",
                  "--json",
                  report.string()};
  command.timeout = std::chrono::seconds(300);
  pb::proc::SystemRunner runner;
  const auto result = runner.run(command);
  EXPECT_TRUE(result.ok()) << result.out << result.err;
  const auto summary = nlohmann::json::parse(result.out.substr(result.out.rfind('{')));
  EXPECT_EQ(summary["survived"], 4);
  const int interval = summary["interval"].get<int>();
  EXPECT_LE(summary["steps_lost_max"].is_null() ? 0 : summary["steps_lost_max"].get<int>(),
            interval);
  EXPECT_LE(
      summary["ledger_steps_lost_max"].is_null() ? 0 : summary["ledger_steps_lost_max"].get<int>(),
      summary["steps_lost_max"].is_null() ? 0 : summary["steps_lost_max"].get<int>());
  const auto seeds = nlohmann::json::parse(read_file(report))["seeds"];
  ASSERT_EQ(seeds.size(), 4U);
  for (const auto &seed : seeds) {
    const bool rl = seed["kind"] == "rl";
    ASSERT_EQ(seed["ledger_steps_lost"].size(), seed["steps_lost"].size()) << seed.dump();
    for (const auto &start : seed["starts"]) {
      const int lost = start["steps_lost"].get<int>();
      const int ledger = start["ledger_steps_lost"].get<int>();
      // Exactly the trained steps the disk showed after the kill.
      EXPECT_EQ(ledger, start["shown_on_disk"].get<int>()) << seed["seed"] << ": " << start.dump();
      // Never more than were trained; fewer only by what was not on disk yet: RL, the one step
      // trained and not yet broadcast; SFT (nothing written per step), the steps since its last
      // save began.
      EXPECT_LE(ledger, lost) << seed["seed"] << ": " << start.dump();
      if (start["bounded"].get<bool>()) {
        EXPECT_LE(lost - ledger, rl ? 1 : interval) << seed["seed"] << ": " << start.dump();
      }
    }
  }
}

} // namespace
