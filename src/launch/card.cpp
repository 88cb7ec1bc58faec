// SPDX-License-Identifier: MIT
// The launch card (docs/launch.md "The launch card"): what a launch will hold and run, in a few
// lines a person reads before GPUs are spent. Pure: everything comes from the plan's values (its
// experiment and the replica contract), never from the JSON rendered from them.
#include "paths.hpp"
#include "plan_parts.hpp"

#include <primebeaker/clusters/clusters.hpp>
#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/primerl/v0_9.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace pb::launch {

namespace {

std::string gpu_range(std::int64_t first, std::int64_t count) {
  if (count == 1) {
    return fmt::format("GPU {}", first);
  }
  return fmt::format("GPUs {}-{}", first, first + count - 1);
}

std::string plural(std::int64_t count, const std::string &one, const std::string &many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

std::string image_text(const beaker::Image &image) {
  return image.kind == beaker::Image::Kind::beaker ? "beaker://" + image.ref : image.ref;
}

// The plain values of a task's environment (secrets are names of secrets, not values).
contract::EnvMap env_of(const beaker::Task &task) {
  contract::EnvMap env;
  for (const auto &var : task.env_vars) {
    if (!var.is_secret) {
      env[var.name] = var.value;
    }
  }
  return env;
}

std::vector<std::string> secrets_of(const beaker::Task &task) {
  std::vector<std::string> names;
  for (const auto &var : task.env_vars) {
    if (var.is_secret) {
      names.push_back(var.name + "=" + var.secret);
    }
  }
  return names;
}

class Card {
public:
  void line(const std::string &label, const std::string &text) {
    m_text += fmt::format("  {:<11}{}\n", label, text);
  }
  void more(const std::string &text) { m_text += fmt::format("  {:<11}{}\n", "", text); }
  void head(const std::string &text) { m_text += text + "\n"; }
  std::string text() const { return m_text; }

private:
  std::string m_text;
};

void multi_rl_layout(Card &card, const contract::ReplicaEnv &env) {
  const std::int64_t nodes = env.total_nodes;
  const std::int64_t per_node = env.gpus_per_node;
  const std::int64_t trainer = env.trainer_gpu_count;
  const std::int64_t mixed = env.mixed_infer_gpu_count;
  const std::int64_t infer_gpus = mixed + (nodes - 1) * per_node;
  const std::int64_t ranks = env.total_infer_ranks;
  const std::int64_t tp = ranks > 0 && infer_gpus % ranks == 0 ? infer_gpus / ranks : 0;
  const std::string tp_text = tp > 0 ? std::to_string(tp) : "?";
  const auto workers = [&](std::int64_t gpus) { return tp > 0 ? gpus / tp : 0; };
  card.line("inference",
            fmt::format("{} on {} (dp {}, tp {}); replica 0 runs the router",
                        plural(ranks, "worker", "workers"),
                        plural(infer_gpus, "GPU", "GPUs"),
                        ranks,
                        tp_text));
  std::int64_t next_worker = 0;
  for (std::int64_t rank = 0; rank < nodes; ++rank) {
    const std::string label = fmt::format("replica {}", rank);
    if (rank == 0) {
      std::string gpus =
          fmt::format("{} trainer ({})", gpu_range(0, trainer), plural(trainer, "rank", "ranks"));
      if (mixed > 0) {
        gpus += fmt::format(", {} inference (workers {}-{})",
                            gpu_range(trainer, mixed),
                            next_worker,
                            next_worker + workers(mixed) - 1);
      }
      card.line(label, gpus);
      card.more(fmt::format("trainer (torchrun, {}), orchestrator, vllm-router",
                            plural(trainer, "process", "processes")));
      if (mixed > 0) {
        card.more(fmt::format("{} on BACKEND_PORT+0..{}",
                              plural(workers(mixed), "inference server", "inference servers"),
                              workers(mixed) - 1));
      }
      card.more(fmt::format("tool gateway on port {} ({})",
                            env.gateway_port,
                            plural(env.gateway_workers, "worker", "workers")));
      next_worker += workers(mixed);
    } else {
      card.line(label,
                fmt::format("{} inference (workers {}-{})",
                            gpu_range(0, per_node),
                            next_worker,
                            next_worker + workers(per_node) - 1));
      card.more(fmt::format("{} on BACKEND_PORT+0..{}",
                            plural(workers(per_node), "inference server", "inference servers"),
                            workers(per_node) - 1));
      next_worker += workers(per_node);
    }
  }
  card.line("ports", "router port and BACKEND_PORT: Prime-RL's, resolved on replica 0 at start");
}

// Prime-RL's own placement (multi_node_rl.sbatch.j2; v0.9, and v0.8.0 where the mixed layout
// cannot place the TOML): inference nodes first, trainer nodes after; ports are Prime-RL's fixed
// ones (docs/launch.md "Placements").
void multi_rl_layout_prime_rl(Card &card,
                              const contract::ReplicaEnv &env,
                              std::int64_t weight_broadcast_port) {
  const bool v0_9 = env.generation == primerl::Generation::v0_9;
  if (!v0_9) {
    card.line("placement",
              "Prime-RL's placement (its own multi_node_rl.sbatch.j2): the mixed layout cannot "
              "place this TOML as written (docs/launch.md \"Placements\")");
  }
  const std::int64_t infer = env.num_infer_nodes;
  const std::int64_t per_node = env.gpus_per_node;
  const std::int64_t tp = env.inference_tp;
  const std::int64_t engines = tp > 0 ? per_node / tp : 0;
  const std::int64_t trainer_ranks = env.num_train_nodes * per_node;
  const bool llm_d = env.router == primerl::Router::llm_d;
  // What fronts the engines on replica 0 (docs/node.md "llm-d and Mooncake").
  const std::string router = llm_d               ? "llm-d's router (epp + Envoy)"
                             : env.disaggregated ? "vllm-router (prefill/decode)"
                                                 : "vllm-router";
  if (infer > 0) {
    card.line("inference",
              fmt::format("{} on {} (tp {}), behind {} on replica 0",
                          plural(infer * engines, "engine", "engines"),
                          plural(infer * per_node, "GPU", "GPUs"),
                          tp,
                          llm_d ? "llm-d's router" : "vllm-router"));
    if (llm_d) {
      card.more(fmt::format("llm-d: the endpoint picker (gRPC 9002) and Envoy on the router port "
                            "on replica 0{}",
                            env.disaggregated ? "; a pd-sidecar on every decode replica" : ""));
    }
    if (env.kv_offload == primerl::KvOffload::mooncake) {
      card.more(fmt::format("KV offload: Mooncake's shared store, its master on replica 0 (ports "
                            "50051, 8080), a client on each of the {} (port 50052)",
                            plural(infer, "inference replica", "inference replicas")));
    } else if (env.kv_offload == primerl::KvOffload::native) {
      card.more("KV offload: vLLM's own, to host memory");
    }
    if (env.expert_parallel) {
      card.more(fmt::format("expert parallel: each replica of {} is one DP group of {} (one "
                            "engine per DP rank, rooted on its first node)",
                            plural(env.nodes_per_infer_replica, "node", "nodes"),
                            plural(env.nodes_per_infer_replica * engines, "rank", "ranks")));
    }
  }
  card.line("trainer",
            fmt::format("{} on replicas {}-{} (torchrun, rendezvous on replica {} port {})",
                        plural(trainer_ranks, "rank", "ranks"),
                        infer,
                        env.total_nodes - 1,
                        infer,
                        primerl::v0_9::k_rendezvous_port));
  for (std::int64_t rank = 0; rank < env.total_nodes; ++rank) {
    const std::string label = fmt::format("replica {}", rank);
    if (rank < infer && env.disaggregated) {
      const std::int64_t per_replica = std::max<std::int64_t>(1, env.nodes_per_infer_replica);
      const auto place = env.disaggregated->place(rank % per_replica);
      card.line(label,
                fmt::format("{} {}: {} on {} ports +0..{} (instance of {} rooted on replica {}, "
                            "NIXL side channels 5600+){}",
                            gpu_range(0, per_node),
                            place.prefill ? "prefill" : "decode",
                            plural(engines, "engine", "engines"),
                            place.prefill ? "PREFILL_PORT" : "DECODE_PORT",
                            engines - 1,
                            plural(place.instance_nodes, "node", "nodes"),
                            rank / per_replica * per_replica + place.head,
                            rank == 0                 ? ", " + router + " on the router port"
                            : llm_d && !place.prefill ? ", pd-sidecar"
                                                      : ""));
    } else if (rank < infer) {
      card.line(label,
                fmt::format("{} inference: {} on backend ports +0..{}{}",
                            gpu_range(0, per_node),
                            plural(engines, "engine", "engines"),
                            engines - 1,
                            rank == 0 ? ", " + router + " on the router port" : ""));
    } else {
      const std::int64_t node = rank - infer;
      card.line(label,
                fmt::format("{} trainer (global ranks {}-{})",
                            gpu_range(0, per_node),
                            node * per_node,
                            (node + 1) * per_node - 1));
    }
    if (rank == env.orchestrator_replica && infer > 0) {
      const auto servers = static_cast<std::int64_t>(env.env_servers.size());
      // v0.9's ZMQ transport binds in the orchestrator, v0.8.0's on trainer rank 0.
      card.more(fmt::format("orchestrator (ZMQ rollouts {} {} and {}){}",
                            v0_9 ? "on" : "to the first trainer node,",
                            primerl::v0_9::k_zmq_transport_port,
                            primerl::v0_9::k_zmq_transport_port + 1,
                            servers == 0 ? std::string()
                                         : fmt::format(", {} ({})",
                                                       plural(servers, "env server", "env servers"),
                                                       text::join(env.env_servers, ", "))));
    }
  }
  card.line("ports",
            fmt::format("NCCL weight broadcast {} on replica {}, vLLM DP RPC {}",
                        weight_broadcast_port,
                        infer,
                        primerl::v0_9::k_dp_rpc_port));
}

void multi_sft_layout(Card &card, const contract::ReplicaEnv &env) {
  for (std::int64_t rank = 0; rank < env.total_nodes; ++rank) {
    card.line(fmt::format("replica {}", rank),
              fmt::format("{} trainer (global ranks {}-{})",
                          gpu_range(0, env.gpus_per_node),
                          rank * env.gpus_per_node,
                          (rank + 1) * env.gpus_per_node - 1));
  }
  card.line(
      "processes",
      fmt::format("one torchrun per replica ({} per node), rendezvous on replica 0 port 29500",
                  plural(env.gpus_per_node, "rank", "ranks")));
}

// How many nodes, and what each GPU of each replica does.
void topology_lines(Card &card, const LaunchPlan &plan) {
  const beaker::Task &task = plan.experiment.tasks.front();
  const contract::ReplicaEnv &env = plan.replica;
  const bool multi = plan.topology == Topology::multi_node;
  const std::int64_t total_gpus = plan.gpus();
  const std::int64_t replicas = task.replication ? task.replication->replicas : 1;
  const std::int64_t per_replica = task.gpu_count;
  card.line("nodes",
            fmt::format("{} x {} = {}",
                        plural(replicas, "replica", "replicas"),
                        plural(per_replica, "GPU", "GPUs"),
                        plural(total_gpus, "GPU", "GPUs")));
  if (plan.program == Program::rl && multi && env.prime_rl_topology()) {
    multi_rl_layout_prime_rl(card, env, plan.weight_broadcast_port);
  } else if (plan.program == Program::rl && multi) {
    multi_rl_layout(card, env);
  } else if (multi) {
    multi_sft_layout(card, env);
  } else if (plan.program == Program::sft) {
    card.line("replica 0",
              fmt::format("{} trainer ({})",
                          gpu_range(0, env.num_gpus),
                          plural(env.num_gpus, "rank", "ranks")));
    card.line("processes", "Prime-RL's `sft` (torchrun) under `primebeaker node single sft`");
  } else {
    card.line("replica 0",
              fmt::format("{}: trainer and inference as the TOML's deployment.num_train_gpus / "
                          "num_infer_gpus split them",
                          gpu_range(0, env.num_gpus)));
    card.line("processes",
              "Prime-RL's `rl` (trainer, orchestrator, inference server on Prime-RL's ports) "
              "under `primebeaker node single rl`");
  }
}

// What runs and where its settings came from: image, Prime-RL, defaults, overrides.
void image_lines(Card &card, const LaunchPlan &plan) {
  const beaker::Task &task = plan.experiment.tasks.front();
  const contract::ReplicaEnv &env = plan.replica;
  card.line("image", image_text(task.image));
  if (!plan.prime_rl.empty()) {
    // Which Prime-RL reads the TOML: the image's, as the catalog or --prime-rl says.
    card.line("Prime-RL",
              fmt::format("{}{} ({})",
                          plan.prime_rl,
                          env.generation == primerl::Generation::v0_9 ? ", v0.9 generation" : "",
                          plan.image_name));
  }
  for (const auto &[label, caution] : plan.shape_cautions) {
    card.line(label, caution);
  }
  for (const auto &taken : plan.defaulted) {
    card.line("defaulted", taken);
  }
  // Which settings came from the user's defaults, one group per file or variable.
  std::vector<std::pair<std::string, std::vector<std::string>>> sources;
  for (const auto &[flag, origin] : plan.from_config) {
    std::string source = origin;
    if (source.starts_with("file:")) { // file:PATH:LINE -> PATH
      source = source.substr(5, source.rfind(':') - 5);
    }
    auto it = std::find_if(
        sources.begin(), sources.end(), [&](const auto &group) { return group.first == source; });
    if (it == sources.end()) {
      sources.push_back({source, {}});
      it = sources.end() - 1;
    }
    it->second.push_back("--" + flag);
  }
  for (const auto &[source, flags] : sources) {
    card.line("defaults", fmt::format("{} from {}", text::join(flags, " "), source));
  }
  if (!plan.overrides.empty()) {
    std::vector<std::string> set;
    for (const auto &[key, literal] : plan.overrides) {
      set.push_back(key + " = " + literal);
    }
    card.line("overrides", text::join(set, ", "));
    if (!plan.config_copy_path.empty()) {
      card.line("TOML",
                plan.config_copy_path.string() + " (a copy with the overrides; submit writes it)");
    }
  }
}

// The program, where the run writes and what it resumes from.
void output_lines(Card &card, const LaunchPlan &plan) {
  const contract::EnvMap env_map = env_of(plan.experiment.tasks.front());
  const contract::ReplicaEnv &env = plan.replica;
  card.line("program",
            plan.staged_program.empty()
                ? std::string("primebeaker from the image's PATH (--no-stage)")
                : plan.staged_program.string() + " (staged; submit creates or verifies it)");
  if (const auto it = env_map.find("OUTPUT_DIR"); it != env_map.end()) {
    const auto working = env_map.find("WORKING_DIR");
    const bool relative = it->second.empty() || it->second.front() != '/';
    const std::string absolute = normalize_path(
        relative && working != env_map.end() ? working->second + "/" + it->second : it->second);
    card.line("output",
              absolute +
                  (plan.ownership.defaulted ? " (outputs/<run name>: the TOML names none)" : ""));
    if (!plan.ownership.run_id.empty() && !plan.ownership.checkpoint_dir.empty()) {
      // docs/launch.md "Output dir": one run per checkpoint directory.
      card.more(fmt::format("claimed for W&B run {} at submit; another run's launch into {} is "
                            "refused",
                            plan.ownership.run_id,
                            plan.ownership.checkpoint_dir.string()));
    }
    if (env.generation == primerl::Generation::v0_9) {
      card.line("run dir",
                fmt::format("{}/{} (Prime-RL v0.9{})",
                            absolute,
                            env.run_dir_name,
                            env.run_name.empty() ? "" : "; run.name set by the launch"));
    }
  }
  if (const auto step = env_map.find("PRIMEBEAKER_RESUME_STEP"); step != env_map.end()) {
    card.line("resume",
              fmt::format("step {} (rl resume), then the newest complete checkpoint "
                          "after a recovery",
                          step->second));
  } else {
    card.line("resume",
              fmt::format("the newest complete checkpoint under the output dir, decided at every "
                          "start (none: fresh; {} honoured on the first)",
                          env.generation == primerl::Generation::v0_9 ? "[resume] step"
                                                                      : "ckpt.resume_step"));
  }
}

// Its W&B run and the registry it finds services in.
void wandb_and_registry_lines(Card &card, const LaunchPlan &plan) {
  const contract::EnvMap env_map = env_of(plan.experiment.tasks.front());
  const contract::ReplicaEnv &env = plan.replica;
  const auto &wandb = plan.wandb_run;
  if (wandb.is_object() && !wandb.empty()) {
    std::string text = fmt::format("run {}", wandb.value("run_id", std::string("?")));
    const auto entity = wandb.value("entity", OrderedJson());
    const auto project = wandb.value("project", OrderedJson());
    if (project.is_string()) {
      text += fmt::format(" in {}{}",
                          entity.is_string() ? entity.get<std::string>() + "/" : "",
                          project.get<std::string>());
    }
    if (wandb.value("offline", false)) {
      text += " (offline)";
    }
    card.line("W&B", text);
    const auto url = wandb.value("url", OrderedJson());
    if (url.is_string()) {
      card.more(url.get<std::string>());
    }
  } else if (wandb.is_null()) {
    card.line("W&B", "off (the TOML has no W&B table)");
  }
  if (const auto it = env_map.find("REGISTRY"); it != env_map.end()) {
    std::string text = it->second;
    if (!env.required_services.empty()) {
      std::string services;
      for (const auto &[name, count] : env.required_services) {
        services += fmt::format("{}{} x{}", services.empty() ? "" : ", ", name, count);
      }
      text += "; waits for " + services;
    }
    if (plan.topology == Topology::multi_node && text.starts_with("file://") &&
        !env.rendezvous_dir.empty() && text.find(env.rendezvous_dir) != std::string::npos) {
      text += " (a file registry on the mount, in the run's rendezvous dir: no server; "
              "--registry or `primebeaker config set registry URL` for another)";
    }
    card.line("registry", text);
  } else if (plan.program == Program::rl) {
    card.line("registry", "none");
  }
}

// Who recovers it from a preemption or a failure, within which budget.
void recovery_lines(Card &card, const LaunchPlan &plan) {
  const auto &recovery = plan.recovery;
  if (recovery.is_object() && !recovery.empty()) {
    const auto beaker = recovery.value("beaker", OrderedJson::object());
    const std::string &mode = plan.recover_mode;
    // What the policy promises follows --recover: off promises nothing.
    card.line("recovery",
              mode == "off"
                  ? std::string(plan.program == Program::sft
                                    ? "off: nothing resubmits or restarts it"
                                    : "off: nothing resubmits or restarts it (--recover off, or "
                                      "no budget)")
                  : fmt::format("up to {} after preemption, {} after errors (--max-recoveries, "
                                "--max-restarts-on-errors)",
                                plural(recovery.value("max_recoveries", std::int64_t{0}),
                                       "recovery",
                                       "recoveries"),
                                plural(recovery.value("max_restarts_on_errors", std::int64_t{0}),
                                       "restart",
                                       "restarts")));
    if (mode == "beaker" || mode.empty()) {
      card.more(fmt::format("Beaker restarts it: autoResume {}, allowedTaskRetries {}",
                            beaker.value("auto_resume", false) ? "on" : "off",
                            beaker.value("allowed_task_retries", std::int64_t{0})));
    } else if (mode == "controller" && plan.controller) {
      const auto &controller = *plan.controller;
      const beaker::Task &controller_task = controller.experiment.tasks.front();
      card.more(fmt::format("resubmitted by its controller {} on Beaker ({}, 1 CPU, {}, "
                            "priority {}; polls every {}s)",
                            controller.experiment_name,
                            controller.image,
                            text::join(controller_task.clusters, ", "),
                            controller_task.context.priority,
                            detail::k_controller_poll.count()));
      card.more(fmt::format("its Beaker token: workspace secret {} (`beaker secret write {} "
                            "--workspace {}` if missing; submit checks)",
                            controller.token_secret,
                            controller.token_secret,
                            plan.workspace));
    } else if (mode == "controller") {
      card.more(fmt::format("resubmitted by its running controller {}",
                            recovery.value("controller", OrderedJson::object())
                                .value("experiment_name", std::string())));
    } else if (mode == "terminal") {
      card.more("resubmitted only while `primebeaker follow RUN --recover` runs (--recover "
                "terminal)");
    } else {
      card.more(plan.program == Program::sft
                    ? "a preempted multi-node SFT run is not resubmitted (`rl resume` relaunches "
                      "RL): submit it again, it resumes from its newest complete checkpoint"
                    : "nobody resubmits it after a preemption (--recover off, or no budget); "
                      "`primebeaker rl resume RUN` by hand");
    }
    if (recovery.contains("notify") && recovery["notify"].is_string()) {
      card.line("notify", recovery["notify"].get<std::string>()); // redacted (docs/notify.md)
    }
  }
}

// Its secrets, where Beaker places it, and what an hour of it costs.
// --cluster auto: the choice, the ranking and why, and the beaker calls it took (docs/clusters.md).
void cluster_lines(Card &card, const clusters::Placement &placement) {
  card.line("cluster", fmt::format("auto: {}", placement.reason));
  std::size_t width = 0;
  for (const auto &candidate : placement.ranking) {
    width = std::max(width, candidate.cluster.size());
  }
  for (std::size_t i = 0; i < placement.ranking.size(); ++i) {
    const auto &candidate = placement.ranking[i];
    card.more(fmt::format("{}. {:<{}}  {}", i + 1, candidate.cluster, width, candidate.why));
  }
  card.more(fmt::format("as of {}: this preview called beaker {} time{} for it ({})",
                        placement.snapshot.taken_at,
                        placement.snapshot.calls.size(),
                        placement.snapshot.calls.size() == 1 ? "" : "s",
                        text::join(placement.snapshot.calls, "; ")));
}

void placement_lines(Card &card, const LaunchPlan &plan) {
  const beaker::Task &task = plan.experiment.tasks.front();
  const std::int64_t total_gpus = plan.gpus();
  const auto secrets = secrets_of(task);
  if (!secrets.empty()) {
    std::string text;
    for (const auto &item : secrets) {
      text += (text.empty() ? "" : ", ") + item;
    }
    card.line("secrets", text);
  }
  // A value nobody chose is marked, so that it is not mistaken for one's own default.
  const auto built_in = [&](const char *flag) {
    return std::find(plan.built_in.begin(), plan.built_in.end(), flag) != plan.built_in.end()
               ? " (built-in)"
               : "";
  };
  std::string where = fmt::format("{}{}, priority {}{}",
                                  plan.workspace,
                                  built_in("workspace"),
                                  task.context.priority,
                                  built_in("priority"));
  if (!task.clusters.empty()) {
    where += " on " + text::join(task.clusters, ", ") + built_in("cluster");
  }
  card.line("beaker", where);
  if (plan.placement) {
    cluster_lines(card, *plan.placement);
  }
  if (!plan.built_in.empty()) {
    card.more(fmt::format("built-in: --{} (`primebeaker config set KEY VALUE` sets yours)",
                          text::join(plan.built_in, ", --")));
  }
  std::string cost =
      fmt::format("{} per hour of run time", plural(total_gpus, "GPU-hour", "GPU-hours"));
  const std::string &min_runtime = task.context.min_runtime;
  if (!min_runtime.empty() && min_runtime.front() != '0') {
    cost += fmt::format(" (held at least {})", min_runtime);
  }
  card.line("cost", cost);
  card.line("spec", plan.spec_path.string());
}

} // namespace

std::string launch_card(const LaunchPlan &plan) {
  Card card;
  const bool multi = plan.topology == Topology::multi_node;
  card.head(fmt::format("{} {}: {}{}",
                        multi ? "multi-node" : "single-node",
                        plan.program == Program::sft ? "SFT" : "RL",
                        plan.experiment_name,
                        multi ? fmt::format(" (launch {})", plan.launch_id) : ""));
  if (plan.experiment.tasks.empty()) {
    card.line("tasks", "none (nothing would run)");
    return card.text();
  }
  topology_lines(card, plan);
  image_lines(card, plan);
  output_lines(card, plan);
  wandb_and_registry_lines(card, plan);
  recovery_lines(card, plan);
  placement_lines(card, plan);
  return card.text();
}

} // namespace pb::launch
