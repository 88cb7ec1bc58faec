// SPDX-License-Identifier: MIT
// A fake LiteRegistry for end-to-end tests: the two launcher packages with the field sets of
// LiteRegistry's launchers (docs/services.md), recording every config they are given (field ->
// type and value) to $FAKE_LITEREGISTRY_RECORD and answering like the real launchers (submit and
// stop run the `beaker` found on PATH). Shared by the services and run tests.
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace pb::test {

inline const char *k_fake_common = R"PY(
import dataclasses, json, os, subprocess, tempfile
from typing import Optional, Tuple, Union

def record(call, **payload):
    path = os.environ.get("FAKE_LITEREGISTRY_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(dict(call=call, **payload)) + "\n")

def track(cls):
    """Remembers exactly the keyword arguments a config was constructed with."""
    original = cls.__init__
    def __init__(self, **kwargs):
        original(self, **kwargs)
        object.__setattr__(self, "_given", {k: {"type": type(v).__name__, "value": v}
                                            for k, v in kwargs.items()})
    cls.__init__ = __init__
    return cls

def describe(config):
    return config._given

def run_beaker(argv, what):
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"Beaker could not create {what}: {result.stderr.strip()}")
    return result.stdout

class Launcher:
    kind = "base deployment"
    def __init__(self, config):
        config.validate()
        self.config = config
    def name(self):
        return f"{self.config.name_prefix}-fake"
    def spec(self):
        return {"version": "v2", "description": f"fake {self.kind}: {self.name()}",
                "budget": self.config.budget, "tasks": [{"name": "gateway"}]}
    def preview(self):
        print("upstream chatter on stdout")
        record("preview", config=describe(self.config))
        return {"experiment_name": self.name(), "config": dataclasses.asdict(self.config),
                "spec": self.spec()}
    def submit(self):
        record("submit", config=describe(self.config))
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
            json.dump(self.spec(), spec)
        try:
            out = run_beaker(["beaker", "--format", "json", "experiment", "create", "-n",
                              self.name(), "-w", self.config.workspace, spec.name],
                             f"{self.kind} {self.name()}")
        finally:
            os.unlink(spec.name)
        return {"experiment_name": self.name(), "beaker": json.loads(out)}
    @staticmethod
    def stop(experiment_id, dry_run=False):
        command = ["beaker", "experiment", "stop", experiment_id]
        record("stop", experiment_id=experiment_id, dry_run=dry_run)
        if not dry_run:
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"beaker experiment stop failed: {result.stderr.strip()}")
        return {"command": command, "dry_run": dry_run}
)PY";

inline const char *k_fake_base = R"PY(
from literegistry_fake_common import *

@track
@dataclasses.dataclass(frozen=True)
class BaseDeploymentConfig:
    registry: Optional[str] = None
    head_registry: Optional[str] = None
    python_replicas: int = 1
    terminal_replicas: int = 1
    web_search_replicas: int = 1
    cache_maxmemory: str = "4gb"
    cache_maxmemory_policy: str = "allkeys-lfu"
    cache_ttl_seconds: int = 3600
    local_search_replicas: int = 0
    local_search_corpus_jsonl: Optional[str] = None
    local_search_index_dir: Optional[str] = None
    local_search_service_name: Optional[str] = None
    generation_model: Optional[str] = None
    generation_replicas: int = 0
    generation_tp: int = 1
    classification_model: Optional[str] = None
    classification_replicas: int = 0
    classification_tp: int = 1
    max_model_len: int = 32768
    max_num_batched_tokens: int = 32768
    max_num_seqs: Optional[int] = None
    gateway_workers: int = 8
    docker_mirror_soft_affinity: bool = True
    python_pool_size: int = 32
    service_clusters: Union[Tuple[str, ...], str] = ("ai2/jupiter",)
    gateway_cluster: Optional[str] = None
    redis_cluster: Optional[str] = None
    model_cluster: str = "ai2/jupiter"
    workspace: str = "ai2/oe-agents"
    budget: str = "ai2/oe-omai"
    service_priority: str = "normal"
    model_priority: str = "high"
    min_runtime_hours: int = 0
    omit_service_resources: bool = False
    name_prefix: str = "literegistry-base"
    services_image: str = "goncalof/literegistry-base-services"
    terminal_image: str = "goncalof/literegistry-base-terminal"
    local_search_image: str = "goncalof/jtc-local-search-lucene-bm25"
    vllm_image: str = "goncalof/literegistry-base-vllm"
    redis_image: str = "goncalof/literegistry-redis"
    serper_api_key_secret: Optional[str] = "SERPER_API_KEY"
    jina_api_key_secret: Optional[str] = "JINA_API_KEY"
    hf_token_secret: Optional[str] = "HF_TOKEN"
    hf_home: Optional[str] = None
    gateway_timeout: float = 300.0
    registry_cache_ttl_seconds: int = 5
    shared_dir: str = "/weka/shared"
    weka_source: str = "oe-adapt-default"

    def validate(self):
        if self.registry and self.head_registry:
            raise ValueError("registry and head_registry are mutually exclusive")
        if self.service_priority not in ("normal", "high", "urgent"):
            raise ValueError("service_priority must be normal, high or urgent")

class BaseDeploymentLauncher(Launcher):
    kind = "base deployment"
)PY";

inline const char *k_fake_podman = R"PY(
from literegistry_fake_common import *

@track
@dataclasses.dataclass(frozen=True)
class PodmanStackConfig:
    registry: Optional[str] = None
    head_registry: Optional[str] = None
    podman_replicas: int = 4
    docker_mirror_replicas: int = 2
    gateway_workers: int = 8
    docker_mirror_soft_affinity: bool = True
    service_clusters: Union[Tuple[str, ...], str] = ("ai2/jupiter",)
    gateway_cluster: Optional[str] = None
    workspace: str = "ai2/oe-agents"
    budget: str = "ai2/oe-omai"
    priority: str = "normal"
    min_runtime_hours: int = 0
    omit_resources: bool = False
    name_prefix: str = "literegistry-podman"
    podman_image: str = "goncalof/literegistry-podman-immediate-rm-20260819"
    podman_instance_prefix: str = "podman"
    podman_session_image: str = "docker.io/library/ubuntu:24.04"
    podman_max_sessions: Optional[int] = None
    podman_session_memory: str = "4g"
    podman_session_pids_limit: int = 2048
    podman_session_idle_timeout: float = 7200.0
    podman_janitor_interval: float = 300.0
    podman_resource_watchdog_interval: float = 5.0
    podman_image_prune_until: str = "24h"
    docker_mirror_image: str = "goncalof/literegistry-docker-mirror"
    gateway_image: str = "goncalof/literegistry-basic"
    redis_image: str = "goncalof/literegistry-redis"
    redis_cluster: Optional[str] = None
    docker_mirror_storage_root: str = "/var/lib/registry"
    docker_mirror_warm_images_file: Optional[str] = None
    docker_hub_username: Optional[str] = None
    docker_hub_username_secret: Optional[str] = None
    docker_hub_token_secret: Optional[str] = None
    podman_registry_mirror: Optional[str] = None
    affinity_ttl_seconds: int = 900
    docker_mirror_affinity_ttl_seconds: int = 604800
    registry_cache_ttl_seconds: int = 5
    gateway_timeout: float = 300.0
    weka_source: str = "oe-adapt-default"

    def validate(self):
        if self.registry and self.head_registry:
            raise ValueError("registry and head_registry are mutually exclusive")
        if not 1 <= self.podman_replicas <= 128:
            raise ValueError("podman_replicas must be between 1 and 128")

class PodmanStackLauncher(Launcher):
    kind = "stack"
    def name(self):
        return f"{self.config.name_prefix}-p{self.config.podman_replicas}-fake"
)PY";

// Writes the fake packages under `root` (put `root` on PYTHONPATH), with dist-info metadata so
// importlib.metadata reports `base_version` / `podman_version`.
inline void write_fake_literegistry(const std::filesystem::path &root,
                                    const std::string &base_version = "0.1.2",
                                    const std::string &podman_version = "0.2.13") {
  write_file(root / "literegistry_fake_common.py", k_fake_common);
  write_file(root / "literegistry_base_deployment" / "__init__.py", k_fake_base);
  write_file(root / "literegistry_podman_beaker" / "__init__.py", k_fake_podman);
  write_file(root / ("literegistry_base_deployment-" + base_version + ".dist-info") / "METADATA",
             "Metadata-Version: 2.1\nName: literegistry-base-deployment\nVersion: " + base_version +
                 "\n");
  write_file(root / ("literegistry_podman_beaker-" + podman_version + ".dist-info") / "METADATA",
             "Metadata-Version: 2.1\nName: literegistry-podman-beaker\nVersion: " + podman_version +
                 "\n");
}

// The records the fake launchers wrote, one JSON object per call.
inline std::vector<nlohmann::json> fake_literegistry_records(const std::filesystem::path &file) {
  std::vector<nlohmann::json> records;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) {
      records.push_back(nlohmann::json::parse(line));
    }
  }
  return records;
}

} // namespace pb::test
