// SPDX-License-Identifier: MIT
#include "provenance_tree.hpp"

namespace pb::test {

void ProvenanceTree::write(const std::string &relative, const std::string &content) const {
  write_file(m_repo / relative, content);
}

void ProvenanceTree::mkdir(const std::string &relative) const {
  std::filesystem::create_directories(m_repo / relative);
}

std::vector<std::string> ProvenanceTree::discovery_args() const {
  return {"--repo-root",
          m_repo.string(),
          "--database",
          database().string(),
          "--train-config-roots",
          path("examples/configs/train") + "," + path("archive/train"),
          "--eval-config-roots",
          path("evals"),
          "--launch_spec_roots",
          path("beaker_experiments"),
          "--manifest-roots",
          path("data")};
}

ProvenanceTree::ProvenanceTree() : m_repo(m_dir.path() / "repo") {
  // SFT run: one checkpoint, two W&B attempts, a data mix.
  write("examples/configs/train/sft_a.toml", R"(output_dir = "outputs/sft_a"
max_steps = 100
[data]
type = "sft"
name = "data/mix_0123456789abcdef/sft_train.jsonl"
seq_len = 4096
batch_size = 64
[optim]
lr = 2e-5
[wandb]
project = "sft-proj"
entity = "team"
)");
  mkdir("outputs/sft_a/weights/step_100");
  mkdir("outputs/sft_a/wandb/run-20260101_000000-sft1");
  // RL run: its TOML and a byte-different but equal copy (they collapse to one).
  const std::string rl = R"(output_dir = "outputs/rl_a"
max_steps = 40
[trainer.model]
name = "outputs/sft_a/weights/step_100"
[trainer.optim]
lr = 1e-6
[orchestrator]
batch_size = 128
seq_len = 8192
[orchestrator.model]
name = "outputs/sft_a/weights/step_100"
[[orchestrator.train.env]]
dataset = "data/mix_0123456789abcdef/train.parquet"
[[orchestrator.eval.env]]
dataset = "data/other_eval.parquet"
[wandb]
project = "rl-proj"
entity = "team"
name = "rl-a"
)";
  write("examples/configs/train/rl_a.toml", rl);
  write("archive/train/old/rl_a_copy.toml", "# a copy\n" + rl);
  for (const char *step : {"step_10", "step_20"}) {
    mkdir(std::string("outputs/rl_a/weights/") + step);
  }
  mkdir("outputs/rl_a/wandb/run-20260102_000000-rlrun1");
  mkdir("outputs/rl_a/run_default/wandb/run-20260102_000000-rlrun1"); // the same run twice
  mkdir("outputs/rl_a/run_default/wandb/offline-run-20260103_000000-rlrun2");
  write("beaker_experiments/rl_a.json", R"({"tasks": [{"name": "trainer", "envVars": [
    {"name": "OUTPUT_DIR", "value": "outputs/rl_a"},
    {"name": "WANDB_SHARED_RUN_ID", "value": "rlrun1"},
    {"name": "WANDB_PROJECT", "value": "rl-proj-override"}]}]})");
  write("beaker_experiments/unrelated.json", R"({"tasks": [{"envVars": [
    {"name": "OUTPUT_DIR", "value": "outputs/elsewhere"}, {"name": "WANDB_RUN_ID", "value": "x"}]}]})");
  write("beaker_experiments/not_a_spec.json", R"({"description": "no tasks"})");
  // The mix manifest, matched by train_path (RL) and by family + uid (SFT).
  write("data/mix_0123456789abcdef/manifest.json", R"({"name": "mix-a", "kind": "parquet",
    "config_uid": "0123456789abcdef",
    "train_path": "data/mix_0123456789abcdef/train.parquet",
    "sources": [
      {"name": "alpha", "parquet": "data/src/alpha.parquet", "weight": 0.75, "train_quota": 300, "validation_quota": 30},
      {"name": "beta", "path": "data/src/beta.parquet", "weight": 0.25, "train_quota": 100},
      {"name": "", "parquet": "ignored.parquet"}]})");
  write("data/unrelated_manifest.json",
        R"({"name": "other", "train_path": "data/zzz.parquet", "sources": []})");
  // Evaluations of the RL checkpoint: complete, failed, pending (incomplete), missing run dir,
  // no run dir; a generic workflow without a model (not indexed).
  write("evals/complete.yaml", R"(evaluation:
  model: outputs/rl_a/weights/step_20
  run_dir: runs/complete
)");
  write(
      "runs/complete/averages.jsonl",
      R"({"dataset": "gsm8k", "runs": 3, "mean_accuracy": 0.5, "stdev_accuracy": 0.1, "min_accuracy": 0.4, "max_accuracy": 0.6}
{"dataset": "math", "runs": 3, "mean_accuracy": 0.25, "stdev_accuracy": 0.05, "min_accuracy": 0.2, "max_accuracy": 0.3}
)");
  write("evals/failed.yaml",
        "workflow: standard\nevaluation:\n  model: outputs/rl_a/weights/step_20\n  run_dir: "
        "runs/failed\n");
  write("runs/failed/failure.json", R"({"reason": "OOM"})");
  write("evals/pending.yaml", "model: outputs/rl_a/weights/step_20\nrun_dir: runs/pending\n");
  mkdir("runs/pending");
  write("evals/missing.yaml", "model: outputs/rl_a/weights/step_20\nrun_dir: runs/missing\n");
  write("evals/unconfigured.yml", "model: outputs/rl_a/weights/step_10\n");
  write("evals/workflow.yaml", "workflow: rejection-sampling\nrounds: 3\n");
  write("evals/search.yaml",
        "workflow: search-agent\nsearch_agent:\n  model: outputs/rl_a/weights/step_10\n  run_dir: "
        "runs/search\n");
  write("runs/search/result.json", R"({"score": 1})");
  // The SFT checkpoint is evaluated too.
  write("evals/sft.yaml",
        "evaluation:\n  model: outputs/sft_a/weights/step_100\n  run_dir: runs/sft\n");
  write(
      "runs/sft/summary.jsonl",
      R"({"dataset": "gsm8k", "runs": 1, "mean_accuracy": 0.3, "stdev_accuracy": 0.0, "min_accuracy": 0.3, "max_accuracy": 0.3})"
      "\n");
  // A legacy MOSS archive naming its model in launcher.log.
  write("records/moss-evals/2025-old/launcher.log",
        "starting\nmodel: outputs/rl_a/weights/step_10\n");
  write(
      "records/moss-evals/2025-old/averages.jsonl",
      R"({"dataset": "legacy", "runs": 2, "mean_accuracy": 0.1, "stdev_accuracy": 0.0, "min_accuracy": 0.1, "max_accuracy": 0.1})"
      "\n");
}

} // namespace pb::test
