// SPDX-License-Identifier: MIT
// What primebeaker reads from a Prime-RL training TOML: its config generation
// (docs/launch.md), deployment.type, the launch keys of docs/launch.md and the GPU accounting
// of docs/launch.md. Every reader is pure over a parsed document. Each collects every problem
// it can find into a Problems ("FILE:LINE:COL: <key> ..." naming the key), continuing with the
// value it suggests in place of a missing or invalid one; the overloads without Problems throw
// them all as one pb::Error exit 3 (docs/launch.md "All problems at once").
#pragma once

#include <primebeaker/core/error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::toml {
class Document;
}

namespace pb::primerl {

// One key the user should add or change: `key = value` under [table] ("" = top level).
struct Suggestion {
  std::string table;
  std::string key;
  std::string value;          // a TOML value literal
  bool table_exists = false;  // [table] is already in the file
  std::string table_location; // "FILE:LINE:COL" of the existing table, when known
  bool replaces = false;      // the key exists with another value
};

// The problems of one TOML, in the order found, and the keys that would fix them.
class Problems {
public:
  explicit Problems(const toml::Document &document);

  // A one-line problem ("FILE:L:C: message").
  void add(std::string message);
  // A missing key: folded into its table's problem if that table is reported missing later.
  void add_missing_key(const std::string &key, std::string message);
  // A missing table: reported once, with the required keys later found missing inside it.
  void add_missing_table(const std::string &table, std::string message);
  // A key missing inside a table reported missing: folded into that table's problem.
  bool fold_into_missing_table(const std::string &key);
  void suggest(const std::string &dotted_key, std::string value, bool replaces = false);
  // A key the fix must remove (a suggested value makes it invalid): the snippet ends with
  // "# remove KEY (FILE:L:C)" lines, each one `primebeaker toml unset FILE KEY`.
  void suggest_removal(const std::string &dotted_key, std::string location);

  // A key the TOML leaves to Prime-RL's default, which the launch reads too: not a problem, but
  // shown on the card and with -v ("output_dir = \"outputs\" (Prime-RL's default)").
  void defaulted(std::string text) { m_defaults.push_back(std::move(text)); }
  const std::vector<std::string> &defaults() const { return m_defaults; }

  bool empty() const { return m_lines.empty(); }
  size_t size() const { return m_lines.size(); }
  // Whether a problem is already reported at `location` ("FILE:L:C"), or `key` is already
  // reported missing (alone, as its table, or folded into it): a second checker of the same
  // TOML (the Prime-RL schema) skips what the launch rules said first.
  bool already_reports(const std::string &location, const std::string &key) const;
  std::vector<std::string> lines() const; // each problem, one line
  const std::vector<Suggestion> &suggestions() const { return m_suggestions; }
  // "add this" TOML: top-level keys, keys under existing tables, new tables (docs/launch.md).
  std::vector<std::string> snippet() const;

  // pb::Error exit 3: one problem is the message itself; several are "FILE: N problems ..."
  // with each as a context line; the snippet follows as context.
  Error to_error() const;
  void throw_if_any() const;

  const toml::Document &document() const { return m_document; }

private:
  struct Line {
    std::string text;
    std::string table;             // missing table this line reports, if any
    std::vector<std::string> keys; // keys folded into it
    std::string missing_key;       // the missing key this line reports, if any
  };
  const toml::Document &m_document;
  std::vector<Line> m_lines;
  std::vector<Suggestion> m_suggestions;
  std::vector<std::pair<std::string, std::string>> m_removals; // key, location
  std::vector<std::string> m_defaults;
};

enum class Generation {
  v0_2_to_v0_4, // inference_gpu_ids / trainer_gpu_ids, [[orchestrator.env]] without [deployment]
  v0_5,         // [deployment] with [[orchestrator.env]]
  v0_6_to_v0_7, // [[orchestrator.train.env]]
  v0_8,         // a key v0.9 moved: [wandb], clean_output_dir, ckpt.resume_step,
                // orchestrator.max_inflight_episodes, inference.parallel|model, SFT num_gpus
  v0_9,         // [resume], [run], [monitors], top-level clean with [deployment],
                // [inference.vllm], orchestrator.concurrency, SFT num_train_gpus
  undetermined, // none of the above: keys both generations read (e.g. only
                // [[orchestrator.train.source]]); the image's Prime-RL decides (release.hpp)
};

struct GenerationInfo {
  Generation generation = Generation::undetermined;
  std::string evidence; // the key that decided it, e.g. "[resume] at file.toml:3:1"
};

// "v0.2-v0.4", "v0.5", "v0.6-v0.7", "v0.8.0", "v0.9", "undetermined".
std::string_view generation_name(Generation generation);

// First match wins: v0.9's keys, then v0.8.0's, then the older generations'. The keys only
// confirm which Prime-RL reads a TOML: the image decides (release.hpp, images/choose.hpp).
GenerationInfo detect_generation(const toml::Document &document);

// Throws pb::Error exit 3 unless the generation is v0.8.0, v0.9 or undetermined: the message
// names the generation, the key that shows it, and what is not supported.
void require_supported_generation(const toml::Document &document);
void require_supported_generation(const toml::Document &document, Problems &problems);

// The experiment name of a TOML that names none (no --name, no W&B or run name): its folder and
// stem, "wordle-rl" for .../wordle/rl.toml, with characters Beaker refuses made '-', at most 128.
// Stable: the same file gives the same name, so a resume finds the run again.
std::string default_experiment_name(const toml::Document &document);

// The run name a launch gives the TOML: `given` (--name) when not empty, else wandb.name, else
// default_experiment_name. A v0.8.0 TOML without output_dir is placed in outputs/<this>.
std::string launch_run_name(const toml::Document &document, const std::string &given);

enum class DeploymentType { single_node, multi_node };

// deployment.type: missing table/key or non-string -> "training TOML needs deployment.type";
// other values -> "unsupported deployment.type '<v>'".
DeploymentType read_deployment_type(const toml::Document &document);
// Collecting: a missing or unsupported type is a problem, read as `fallback`.
DeploymentType
read_deployment_type(const toml::Document &document, Problems &problems, DeploymentType fallback);

struct Wandb {
  // false: the TOML has no W&B table, and Prime-RL then logs to no W&B run (its default).
  bool enabled = true;
  std::string name;
  std::string project;
  std::optional<std::string> entity; // non-empty when set
  bool offline = false;
};

// A path-valued key as written in the TOML, with its location for messages.
struct PathKey {
  std::string key;   // dotted, e.g. "data.name"
  std::string value; // as written
};

struct SingleNodeSft {
  PathKey output_dir;
  std::int64_t max_steps = 0;
  std::int64_t num_gpus = 0;
  std::int64_t gpus_per_node = 0;
  Wandb wandb;
  PathKey data_name;
  PathKey val_data_name;
  std::int64_t val_interval = 0;
  std::int64_t ckpt_interval = 0;
};

struct SingleNodeRl {
  PathKey output_dir;
  Wandb wandb;
  std::int64_t num_train_gpus = 0;
  std::int64_t num_infer_gpus = 0;
  std::int64_t gpus_per_node = 0;
  std::int64_t gpu_count() const { return num_train_gpus + num_infer_gpus; }
};

struct MultiNodeSft {
  PathKey output_dir;
  Wandb wandb;
  PathKey data_name;
  PathKey val_data_name;
  std::int64_t num_nodes = 2;
  std::int64_t gpus_per_node = 8;
};

// inference.deployment.type = "disaggregated" (Prime-RL's DisaggregatedInferenceDeploymentConfig,
// both generations): every inference replica is num_prefill_replicas prefill instances of
// prefill_nodes_per_replica nodes, then num_decode_replicas decode instances of
// decode_nodes_per_replica nodes.
struct Disaggregated {
  std::int64_t prefill_nodes_per_replica = 1;
  std::int64_t decode_nodes_per_replica = 1;
  std::int64_t num_prefill_replicas = 1;
  std::int64_t num_decode_replicas = 1;
  std::int64_t prefill_nodes() const { return prefill_nodes_per_replica * num_prefill_replicas; }
  std::int64_t decode_nodes() const { return decode_nodes_per_replica * num_decode_replicas; }
  std::int64_t nodes() const { return prefill_nodes() + decode_nodes(); }
  // Where the node `in_replica` (its index within its inference replica) stands, as Prime-RL's
  // template derives it: prefill if among the first prefill_nodes(), else decode; its instance's
  // first node (within the replica) and its own index within the instance.
  struct Place {
    bool prefill = true;
    std::int64_t head = 0;
    std::int64_t index = 0;
    std::int64_t instance_nodes = 1;
  };
  Place place(std::int64_t in_replica) const {
    Place p;
    p.prefill = in_replica < prefill_nodes();
    p.instance_nodes = p.prefill ? prefill_nodes_per_replica : decode_nodes_per_replica;
    const std::int64_t in_role = p.prefill ? in_replica : in_replica - prefill_nodes();
    p.head = (p.prefill ? 0 : prefill_nodes()) + in_role / p.instance_nodes * p.instance_nodes;
    p.index = in_role % p.instance_nodes;
    return p;
  }
  bool operator==(const Disaggregated &) const = default;
};

// What fronts Prime-RL's engines (inference.router.type, both generations): vllm-router, or
// llm-d's endpoint picker behind Envoy (with a pd-sidecar on each decode node).
enum class Router { vllm_router, llm_d };
// inference.kv_cache_offload.type: vLLM's own offload needs nothing from the launcher but locked
// memory; Mooncake needs its store (a master on inference node 0, a client on every node).
enum class KvOffload { none, native, mooncake };

// One environment source the launcher runs an env server for beside the orchestrator
// (orchestrator.<split>.source entries without serve.address; both generations).
struct EnvSource {
  std::string split; // "train" or "eval"
  std::string name;  // resolved: name, else env.id, else env.taskset.id
  std::string taskset_id;
};
std::vector<EnvSource> read_env_sources(const toml::Document &document);

// Prime-RL v0.8.0 multi-node RL comes in two placements (docs/launch.md "Placements"): Python
// PrimeBeaker's mixed layout (one trainer node that may also run inference engines, LiteRegistry
// gateway), kept for every TOML it places; and Prime-RL's own (its multi_node_rl.sbatch.j2:
// inference nodes first, torchrun across the trainer nodes, orchestrator and env servers on the
// first trainer node), for the TOMLs the mixed layout cannot place as written. In the mixed
// layout replica 0 runs the trainer on trainer_gpus GPUs and, when mixed_infer_gpus > 0,
// inference on the rest of its node.
struct MultiNodeRl {
  PathKey output_dir;
  Wandb wandb;
  std::int64_t gpus_per_node = 8;
  std::int64_t num_train_nodes = 1;
  std::int64_t num_infer_nodes = 1; // mixed: in all; Prime-RL's placement: per replica
  bool prime_rl_placement = false;
  // Prime-RL's placement only.
  std::int64_t num_infer_replicas = 1;
  bool orchestrator_on_inference = false;
  bool expert_parallel = false; // inference.enable_expert_parallel
  std::optional<Disaggregated> disaggregated;
  Router router = Router::vllm_router;
  KvOffload kv_offload = KvOffload::none;
  std::int64_t weight_broadcast_port = 29501; // weight_broadcast.port
  std::vector<EnvSource> sources;
  std::int64_t total_infer_nodes() const {
    return prime_rl_placement ? num_infer_nodes * num_infer_replicas : num_infer_nodes;
  }
  std::int64_t orchestrator_replica() const {
    return orchestrator_on_inference && total_infer_nodes() > 0 ? total_infer_nodes() - 1
                                                                : total_infer_nodes();
  }
  // One trainer rank per GPU of every trainer node, or the mixed layout's trainer slice.
  std::int64_t trainer_ranks() const {
    return prime_rl_placement ? num_train_nodes * gpus_per_node : trainer_gpus;
  }
  std::int64_t trainer_gpus = 0;     // trainer.model.cp x trainer.model.dp_replicate
  std::int64_t mixed_infer_gpus = 0; // inference GPUs on replica 0
  std::int64_t total_infer_gpus = 0;
  std::int64_t total_infer_ranks = 0; // = inference.parallel.dp = inference.api_server_count
  std::int64_t tensor_parallel = 1;
  std::int64_t total_nodes = 0; // Beaker replicas
  // Sorted unique orchestrator.{train,eval}.source[*].legacy.args.local_search_model_path.
  std::vector<std::string> local_search_model_paths;
};

SingleNodeSft read_single_node_sft(const toml::Document &document);
SingleNodeRl read_single_node_rl(const toml::Document &document);
MultiNodeSft read_multi_node_sft(const toml::Document &document);
MultiNodeRl read_multi_node_rl(const toml::Document &document);
SingleNodeSft read_single_node_sft(const toml::Document &document, Problems &problems);
SingleNodeRl read_single_node_rl(const toml::Document &document, Problems &problems);
MultiNodeSft read_multi_node_sft(const toml::Document &document, Problems &problems);
MultiNodeRl read_multi_node_rl(const toml::Document &document, Problems &problems);

// The W&B section alone (wandb.name and wandb.project required, non-empty strings; name must
// be usable as a Beaker experiment name: letters, digits, '.', '_', '-').
Wandb read_wandb(const toml::Document &document);

// Whether `name` can name a Beaker experiment: 1-128 letters, digits, '.', '_', '-'.
bool is_experiment_name(std::string_view name);
Wandb read_wandb(const toml::Document &document, Problems &problems);

} // namespace pb::primerl
