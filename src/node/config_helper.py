# SPDX-License-Identifier: MIT
# The one piece of the node runtime that stays in Python (docs/node.md, "Config
# materialisation"): resolving the training TOML through Prime-RL's own config models. The
# binary embeds this file (src/node/CMakeLists.txt), writes it out and runs it with python3; it
# reads a JSON request, lets Prime-RL validate the config and write its per-component TOMLs, and
# answers with JSON (env maps and runtime values). Everything else (the resume decision, env files,
# runtime.ready, stale-state cleanup) is done in C++ by the caller.
# Written by primebeaker (node runtime): resolves a training TOML through Prime-RL.
# usage: python3 <this file> <request.json> <result.json>
import json
import os
import sys
import tomllib
from pathlib import Path


class ConfigProblem(Exception):
    pass


def rewrite_environment_namespace(raw, modules):
    orchestrator = raw.get("orchestrator")
    if not isinstance(orchestrator, dict):
        return
    for split in ("train", "eval"):
        section = orchestrator.get(split)
        if not isinstance(section, dict):
            continue
        for collection in ("source", "env"):
            entries = section.get(collection)
            if not isinstance(entries, list):
                continue
            for entry in entries:
                legacy = entry.get("legacy") if isinstance(entry, dict) else None
                ident = legacy.get("id") if isinstance(legacy, dict) else None
                if isinstance(ident, str) and ident:
                    module = ident.rsplit(".", 1)[-1]
                    if module in modules:
                        legacy["id"] = "primebeaker.environments." + module


def load(path):
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigProblem(f"cannot read {path}: {error.strerror}")
    except tomllib.TOMLDecodeError as error:
        raise ConfigProblem(f"{path}: {error}")


def apply_resume(raw, resume):
    """The runtime's resume decision (docs/recovery.md): the step, or a fresh start, in the
    shared ckpt table and in any sub-config copy (those win over it in Prime-RL); never -1."""
    if not isinstance(resume, dict):
        return
    step = resume.get("step")
    tables = [raw]
    for name in ("trainer", "orchestrator"):
        if isinstance(raw.get(name), dict):
            tables.append(raw[name])
    for index, table in enumerate(tables):
        ckpt = table.get("ckpt")
        if step is None:
            if isinstance(ckpt, dict):
                ckpt.pop("resume_step", None)
        elif index == 0:
            if not isinstance(ckpt, dict):
                ckpt = table["ckpt"] = {}
            ckpt["resume_step"] = step
        elif isinstance(ckpt, dict) and "resume_step" in ckpt:
            ckpt["resume_step"] = step
    if resume.get("keep_output") and "clean_output_dir" in raw:
        raw["clean_output_dir"] = False


def strings(values):
    return {str(key): str(value) for key, value in values.items()}


def prepare_rl(request):
    from prime_rl.configs.rl import RLConfig
    from prime_rl.entrypoints.rl import write_subconfigs
    from prime_rl.utils.process import (
        DEFAULT_COMMON_ENV_VARS,
        DEFAULT_INFERENCE_ENV_VARS,
        DEFAULT_TRAINER_ENV_VARS,
    )

    raw = load(request["config"])
    if not isinstance(raw.get("orchestrator"), dict):
        raise ConfigProblem("RL TOML needs an [orchestrator] table")
    rewrite_environment_namespace(raw, set(request["environment_modules"]))
    apply_resume(raw, request.get("resume"))
    raw.setdefault("slurm", {})
    inference_raw = raw.get("inference")
    if isinstance(inference_raw, dict):
        deployment = inference_raw.get("deployment")
        if isinstance(deployment, dict) and deployment.get("type") in {"multi_node", "disaggregated"}:
            inference_raw.setdefault("slurm", {})
    config = RLConfig.model_validate(raw)
    if config.inference is None or config.inference.router is None:
        raise ConfigProblem("multi-node RL requires inference with a router")
    if config.inference.enable_expert_parallel:
        raise ConfigProblem("heterogeneous Beaker RL currently supports dense inference")
    if config.weight_broadcast.type in {"nccl", "nixl"}:
        world_size = config.inference.parallel.dp * config.inference.parallel.tp
        config.trainer.weight_broadcast.inference_world_size = world_size
        config.orchestrator.weight_broadcast.inference_world_size = world_size
        if config.weight_broadcast.type == "nccl":
            config.trainer.weight_broadcast.host = "0.0.0.0"
    router_policy = config.inference.router.policy
    config.inference.router = None
    config_dir = Path(request["config_dir"])
    config_dir.mkdir(parents=True, exist_ok=True)
    write_subconfigs(config, config_dir)
    common = {**DEFAULT_COMMON_ENV_VARS, **config.env_vars}
    return {
        "trainer_env": strings({**common, **DEFAULT_TRAINER_ENV_VARS, **config.trainer.env_vars}),
        "orchestrator_env": strings({**common, **config.orchestrator.env_vars}),
        "inference_env": strings({**common, **DEFAULT_INFERENCE_ENV_VARS, **config.inference.env_vars}),
        "runtime": {
            "ROUTER_PORT": int(config.inference.server.port),
            "ROUTER_POLICY": str(router_policy),
            "BACKEND_PORT": int(config.inference.backend_port),
            "INFERENCE_TP": int(config.inference.parallel.tp),
            "TRAINER_RANKS_FILTER": ",".join(str(rank) for rank in config.trainer.log.ranks_filter),
            "USE_NCCL_BROADCAST": int(config.weight_broadcast.type == "nccl"),
            "USE_ZMQ_TRANSPORT": int(config.rollout_transport.type == "zmq"),
        },
    }


def vllm_overrides_fragment(overrides):
    """Per-role vLLM overrides as the tail of a JSON object (", \"key\": value, ..."), appended to
    each engine's rank overrides as Prime-RL's template appends them."""
    return "".join(f", {json.dumps(str(key))}: {json.dumps(value)}" for key, value in overrides.items())


def disaggregated_values(inference, inference_env):
    """What the prefill and decode engines of a disaggregated deployment read: their ports, their
    per-role vLLM overrides and environment (the inference one, then the role's)."""
    deployment = getattr(inference, "deployment", None) if inference is not None else None
    if deployment is None or getattr(deployment, "type", None) != "disaggregated":
        return {}, {}
    runtime = {
        "PREFILL_PORT": int(deployment.prefill_port),
        "DECODE_PORT": int(deployment.decode_port),
        "PREFILL_VLLM_EXTRA": vllm_overrides_fragment(deployment.prefill_vllm_overrides),
        "DECODE_VLLM_EXTRA": vllm_overrides_fragment(deployment.decode_vllm_overrides),
    }
    envs = {
        "prefill_env": strings({**inference_env, **deployment.prefill_env_vars}),
        "decode_env": strings({**inference_env, **deployment.decode_env_vars}),
    }
    return runtime, envs


def epp_config(router, disaggregated, endpoints):
    """llm-d's endpoint-picker config (Prime-RL's templates/llmd/epp_*.yaml.j2): endpoints from the
    file the replica plan writes; one profile over `scorers`, or with prefill/decode a prefill
    profile and a decode one, each its role's filter plus its merged scorers, the prefill one taken
    when at least non_cached_tokens of the prompt are not cached."""
    lines = ["apiVersion: inference.networking.x-k8s.io/v1alpha1",
             "kind: EndpointPickerConfig",
             "plugins:",
             "  - name: file-disc",
             "    type: file-discovery",
             "    parameters:",
             f"      path: {endpoints}",
             "      watchFile: true",
             "  - name: vllmhttp-parser",
             "    type: vllmhttp-parser"]

    def profile(name, role_filter, scorers):
        lines.extend([f"  - name: {name}", "    plugins:"])
        if role_filter:
            lines.append(f"      - pluginRef: {role_filter}")
        for scorer, weight in scorers.items():
            lines.extend([f"      - pluginRef: {scorer}", f"        weight: {weight}"])
        lines.append("      - pluginRef: max-score-picker")

    if disaggregated:
        prefill, decode = dict(router.prefill_scorers), dict(router.decode_scorers)
        lines.extend(["  - name: pd-decider",
                      "    type: prefix-based-pd-decider",
                      "    parameters:",
                      f"      nonCachedTokens: {router.non_cached_tokens}",
                      "  - name: profile-handler",
                      "    type: disagg-profile-handler",
                      "    parameters:",
                      "      deciders:",
                      "        prefill: pd-decider",
                      "  - type: prefill-filter",
                      "  - type: decode-filter"])
        for scorer in dict.fromkeys([*prefill, *decode]):
            lines.append(f"  - type: {scorer}")
        lines.extend(["  - type: max-score-picker", "schedulingProfiles:"])
        profile("prefill", "prefill-filter", prefill)
        profile("decode", "decode-filter", decode)
    else:
        scorers = dict(router.scorers)
        for scorer in scorers:
            lines.append(f"  - type: {scorer}")
        lines.extend(["  - type: max-score-picker", "  - type: single-profile-handler",
                      "schedulingProfiles:"])
        profile("default", None, scorers)
    lines.extend(["requestHandler:", "  parser:", "    pluginRef: vllmhttp-parser",
                  "dataLayer:", "  discovery:", "    pluginRef: file-disc"])
    return "\n".join(lines) + "\n"


def serving_values(inference, request):
    """What llm-d's router and Mooncake's store read (docs/node.md "llm-d and Mooncake"): the
    picker's config and the decode sidecar's port; Mooncake's segment size, devices and disk tier,
    whose MOONCAKE_OFFLOAD_* environment every process of an inference node gets."""
    runtime, env = {}, {}
    router = getattr(inference, "router", None) if inference is not None else None
    offload = getattr(inference, "kv_cache_offload", None) if inference is not None else None
    # The replicas were placed from the TOML as submitted; one edited since then would need
    # other processes than the plan starts.
    router_type = getattr(router, "type", None) or "vllm-router"
    placed_router = "llm-d" if "llmd_endpoints" in request else "vllm-router"
    offload_type = getattr(offload, "type", None) or "none"
    placed_offload = request.get("kv_cache_offload", "none")
    changed = None
    if router_type != placed_router:
        changed = ("inference.router.type", router_type, placed_router)
    elif offload_type != placed_offload and "mooncake" in (offload_type, placed_offload):
        changed = ("inference.kv_cache_offload.type", offload_type, placed_offload)
    if changed:
        raise ConfigProblem("{} is {!r}, but this launch was placed for {!r} (the TOML changed "
                            "since it was submitted): submit it again".format(*changed))
    if inference is None:
        return runtime, env
    if router is not None and getattr(router, "type", None) == "llm-d":
        deployment = getattr(inference, "deployment", None)
        disaggregated = getattr(deployment, "type", None) == "disaggregated"
        runtime["LLMD_EPP_CONFIG"] = epp_config(router, disaggregated, request["llmd_endpoints"])
        runtime["DECODE_SIDECAR_PORT"] = int(router.decode_sidecar_port)
    if offload is not None and getattr(offload, "type", None) == "mooncake":
        devices = offload.device_name or ""
        disk = str(offload.disk.path) if getattr(offload, "disk", None) is not None else ""
        runtime.update({
            "MOONCAKE_SEGMENT_BYTES": int(offload.cpu.num_bytes),
            "MOONCAKE_DEVICES": int(bool(devices)),
            "MOONCAKE_DEVICE_NAME": devices,
            "MOONCAKE_DEVICE_NAME_JSON": json.dumps(devices),
            "MOONCAKE_DISK": int(bool(disk)),
            "MOONCAKE_DISK_PATH": disk,
            "MOONCAKE_ENABLE_OFFLOAD": "true" if disk else "false",
        })
        if disk:
            env = {"MOONCAKE_OFFLOAD_FSDIR": disk, "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": disk,
                   "MOONCAKE_OFFLOAD_ENABLE_EVICTION": "true"}
    return runtime, env


def placement_result(config, common_extra, engines, request):
    """The answer of both generations in Prime-RL's placement: each component's environment (the
    launcher defaults, then the config's, as Prime-RL's template exports them) and the runtime
    values the replica plans read; `engines` is the generation's spelling of TP and the DP RPC
    port, None without inference."""
    from prime_rl.utils.process import (
        DEFAULT_COMMON_ENV_VARS,
        DEFAULT_INFERENCE_ENV_VARS,
        DEFAULT_TRAINER_ENV_VARS,
    )

    inference = config.inference
    common = {**DEFAULT_COMMON_ENV_VARS, **config.env_vars, **common_extra}
    broadcast = config.weight_broadcast
    transport = config.rollout_transport
    runtime = {
        "TRAINER_RANKS_FILTER": ",".join(str(rank) for rank in config.trainer.log.ranks_filter),
        "USE_NCCL_BROADCAST": int(broadcast is not None and broadcast.type == "nccl"),
        "USE_ZMQ_TRANSPORT": int(transport is not None and transport.type == "zmq"),
        "WEIGHT_BROADCAST_PORT": int(getattr(broadcast, "port", 29501)),
    }
    if inference is not None:
        runtime.update({
            "ROUTER_PORT": int(inference.server.port),
            "ROUTER_POLICY": str(getattr(inference.router, "policy", "consistent_hash")),
            "BACKEND_PORT": int(inference.backend_port),
            **engines,
        })
    serving_runtime, serving_env = serving_values(inference, request)
    runtime.update(serving_runtime)
    inference_env = {**common, **DEFAULT_INFERENCE_ENV_VARS,
                     **(inference.env_vars if inference is not None else {}), **serving_env}
    pd_runtime, pd_envs = disaggregated_values(inference, inference_env)
    runtime.update(pd_runtime)
    return {
        "trainer_env": strings({**common, **DEFAULT_TRAINER_ENV_VARS, **config.trainer.env_vars}),
        "orchestrator_env": strings({**common, **config.orchestrator.env_vars}),
        "inference_env": strings(inference_env),
        **pd_envs,
        "runtime": runtime,
    }


def prepare_rl_prime_rl(request):
    """v0.8.0 multi-node RL in Prime-RL's own placement: its config validators derive what its
    SLURM launcher relies on (dp and api_server_count per node, the NCCL world size of every
    inference GPU, num_train_workers), and its sub-configs are written as Prime-RL writes them."""
    from prime_rl.configs.rl import RLConfig
    from prime_rl.entrypoints.rl import write_subconfigs

    raw = load(request["config"])
    rewrite_environment_namespace(raw, set(request["environment_modules"]))
    apply_resume(raw, request.get("resume"))
    # Prime-RL's multi-node validator asks for SLURM; here primebeaker is the launcher.
    raw.setdefault("slurm", {})
    config = RLConfig.model_validate(raw)
    config_dir = Path(request["config_dir"])
    config_dir.mkdir(parents=True, exist_ok=True)
    write_subconfigs(config, config_dir)
    inference = config.inference
    common = {"ORCHESTRATOR_OUTPUT_DIR": str(config.orchestrator.output_dir)}
    engines = None
    if inference is not None:
        engines = {"INFERENCE_TP": int(inference.parallel.tp),
                   "INFERENCE_DP_RPC_PORT": int(inference.data_parallel_rpc_port)}
    return placement_result(config, common, engines, request)


def prepare_sft(request):
    from prime_rl.configs.sft import SFTConfig
    from prime_rl.entrypoints.sft import write_config
    from prime_rl.utils.process import DEFAULT_COMMON_ENV_VARS, DEFAULT_TRAINER_ENV_VARS

    raw = load(request["config"])
    apply_resume(raw, request.get("resume"))
    raw.setdefault("slurm", {})
    config = SFTConfig.model_validate(raw)
    output = Path(request["output"])
    output.parent.mkdir(parents=True, exist_ok=True)
    write_config(config, output, exclude={"deployment", "slurm", "dry_run", "clean_output_dir"})
    return {
        "trainer_env": strings({**DEFAULT_COMMON_ENV_VARS, **DEFAULT_TRAINER_ENV_VARS, **config.env_vars}),
        "runtime": {
            "TRAINER_RANKS_FILTER": ",".join(str(rank) for rank in config.log.ranks_filter),
        },
    }


# ---------------------------------------------------------------- Prime-RL v0.9 (docs/node.md)

def prepare_rl_v0_9(request):
    from prime_rl.configs.rl import RLConfig
    from prime_rl.entrypoints.rl import write_subconfigs

    # "config" is the runtime TOML the node wrote: the resume point and run name are in it.
    raw = load(request["config"])
    # Prime-RL's multi-node validator asks for SLURM; here primebeaker is the launcher.
    raw.setdefault("slurm", {})
    config = RLConfig.model_validate(raw)
    if Path(config.run_dir).resolve() != Path(request["run_dir"]).resolve():
        raise ConfigProblem(f"Prime-RL resolved the run directory to {config.run_dir}, the launch "
                            f"to {request['run_dir']}")
    config_dir = Path(request["config_dir"])
    config_dir.mkdir(parents=True, exist_ok=True)
    write_subconfigs(config, config_dir)
    inference = config.inference
    engines = None
    if inference is not None:
        engines = {"INFERENCE_TP": int(inference.vllm.tensor_parallel_size),
                   "INFERENCE_DP_RPC_PORT": int(getattr(inference.vllm, "data_parallel_rpc_port",
                                                        13345))}
    return placement_result(config, {}, engines, request)


def prepare_sft_v0_9(request):
    from prime_rl.configs.sft import SFTConfig
    from prime_rl.entrypoints.sft import write_config
    from prime_rl.utils.process import DEFAULT_COMMON_ENV_VARS, DEFAULT_TRAINER_ENV_VARS

    raw = load(request["config"])  # the runtime TOML, as for RL
    raw.setdefault("slurm", {})
    config = SFTConfig.model_validate(raw)
    output = Path(request["output"])
    output.parent.mkdir(parents=True, exist_ok=True)
    write_config(config, output, exclude={"slurm", "dry_run", "clean"})
    return {
        "trainer_env": strings({**DEFAULT_COMMON_ENV_VARS, **DEFAULT_TRAINER_ENV_VARS, **config.env_vars}),
        "runtime": {
            "TRAINER_RANKS_FILTER": ",".join(str(rank) for rank in config.log.ranks_filter),
        },
    }


PREPARE = {"rl": prepare_rl, "sft": prepare_sft, "rl_prime_rl": prepare_rl_prime_rl,
           "rl_v0_9": prepare_rl_v0_9, "sft_v0_9": prepare_sft_v0_9}


def write_result(path, value):
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(temporary, path)


def main():
    request_path, result_path = sys.argv[1], sys.argv[2]
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    try:
        result = PREPARE[request["kind"]](request)
    except ImportError as error:
        write_result(result_path, {"error": f"Prime-RL is not importable: {error}", "kind": "import"})
        return 4
    except ConfigProblem as error:
        write_result(result_path, {"error": str(error), "kind": "config"})
        return 3
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        lines = str(error).strip().splitlines()
        write_result(result_path, {"error": lines[0] if lines else "invalid config",
                                   "detail": lines[1:21], "kind": "config"})
        return 3
    write_result(result_path, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
