# SPDX-License-Identifier: MIT
"""Fake literegistry_base_deployment: the field set of BaseDeploymentConfig."""
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
