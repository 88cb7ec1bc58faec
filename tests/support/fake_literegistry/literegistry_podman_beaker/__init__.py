# SPDX-License-Identifier: MIT
"""Fake literegistry_podman_beaker: the field set of PodmanStackConfig."""
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
