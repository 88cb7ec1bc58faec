# SPDX-License-Identifier: MIT
"""The Verifiers v1 tasksets (top-level `primebeaker_*` modules, Prime-RL v0.9) against the
stand-in child (fake_primebeaker.py): id resolution as Verifiers does it, task data, a
single-turn rollout through the `null` harness and multi-turn rollouts with tool calls through
the package's own harness, all in v1's rollout order (v1_rollout.py)."""

import asyncio
import json
import os
import unittest

from shim_paths import HERE, vf_v1 as vf  # noqa: E402 (sets sys.path first)
from test_shim import MODULES, FakeChildCase, call  # noqa: E402
from v1_rollout import FakeInterception, run_rollout  # noqa: E402

from primebeaker.environments import _v1  # noqa: E402

# Taskset id -> catalog name; the id is the v0 module's stem without `_env`, prefixed.
IDS = {"primebeaker-articulated-harness": "articulated-harness",
       "primebeaker-jtc-code-tool-label": "code-tool-label",
       "primebeaker-jtc-label": "label",
       "primebeaker-jtc-multiple-choice-accuracy": "multiple-choice-accuracy",
       "primebeaker-podman-terminal": "podman-terminal",
       "primebeaker-jtc-reward-model": "reward-model",
       "primebeaker-jtc-rubrichub-judge": "rubrichub-judge",
       "primebeaker-jtc-search-agent": "search-agent-dataset",
       "primebeaker-jtc-search-agent-visit": "search-agent-visit",
       "primebeaker-jtc-search-agent-visit-judge": "search-agent-visit-judge",
       "primebeaker-jtc-search-agent-webterminal": "search-agent-webterminal",
       "primebeaker-jtc-search-agent-webterminal-judge": "search-agent-webterminal-judge",
       "primebeaker-jtc-search-visit-agent": "search-visit-agent-dataset",
       "primebeaker-jtc-search-visit-agent-judge": "search-visit-agent-judge",
       "primebeaker-jtc-terminal-tool-label": "terminal-tool-label",
       "primebeaker-jtc-tool-label": "tool-label"}
SINGLE_TURN = {"label", "multiple-choice-accuracy", "reward-model", "rubrichub-judge"}


def taskset_id(v0_module):
    return "primebeaker-" + v0_module[:-len("_env")].replace("_", "-")


@unittest.skipIf(vf is None, "no verifiers.v1")
class V1Case(FakeChildCase):
    def taskset(self, tid, **args):
        config = vf.taskset_config_type(tid).model_validate(
            {"id": tid, "args": {"dataset": self.dataset, **args}})
        return vf.load_taskset(config)

    def harness(self, tid):
        return vf.load_harness(vf.harness_config_type(tid)(id=tid))


class ResolutionTest(V1Case):
    def test_every_v0_module_has_a_taskset_id(self):
        self.assertEqual(sorted(taskset_id(m) for m in MODULES), sorted(IDS))

    def test_every_id_loads_its_taskset_and_the_right_harness(self):
        for tid, name in IDS.items():
            with self.subTest(tid):
                cls = vf.taskset_class(tid)
                self.assertEqual(cls.__module__, tid.replace("-", "_"))
                self.assertEqual(cls.ENV, name)
                self.assertIs(cls.task_type(), _v1.PrimebeakerTask)
                self.assertIs(vf.taskset_config_type(tid), _v1.PrimebeakerTasksetConfig)
                tasks = list(self.taskset(tid))
                self.assertEqual(len(tasks), 2)
                self.assertEqual(tasks[0].data.env, name)
                if name in SINGLE_TURN:
                    # No harness of its own: the TOML names `null`.
                    self.assertEqual(vf.default_harness_id(tid), "bash")
                else:
                    self.assertEqual(vf.default_harness_id(tid), tid)
                    self.assertIsInstance(self.harness(tid), _v1.PrimebeakerHarness)

    def test_hub_owner_version_and_case_are_ignored_as_verifiers_does(self):
        cls = vf.taskset_class("someone/Primebeaker-JTC-Tool-Label@0.1.0")
        self.assertEqual(cls.ENV, "tool-label")

    def test_a_dotted_id_does_not_resolve(self):
        with self.assertRaises(ModuleNotFoundError):
            vf.taskset_class("primebeaker.environments.jtc_tool_label_env")

    def test_bad_argument_is_a_value_error_with_the_binary_message(self):
        with self.assertRaisesRegex(ValueError,
                                    r"^--args: unknown argument 'bogus' for tool-label$"):
            self.taskset("primebeaker-jtc-tool-label", bogus=1)

    def test_unknown_config_key_is_refused(self):
        with self.assertRaises(ValueError):
            vf.taskset_config_type("primebeaker-jtc-label").model_validate(
                {"id": "primebeaker-jtc-label", "dataset": self.dataset})


class TaskDataTest(V1Case):
    def test_rows_become_self_contained_task_data(self):
        tasks = list(self.taskset("primebeaker-jtc-tool-label", max_tool_calls=3))
        first, second = (t.data for t in tasks)
        self.assertEqual(first.args["max_tool_calls"], 3)  # validated args ride the wire
        self.assertEqual(first.args["dataset"], self.dataset)
        self.assertEqual([first.example_id, second.example_id], [0, 1])
        self.assertEqual([first.columns["split"], second.columns["split"]], ["train", "eval"])
        self.assertIsInstance(first.prompt[0], vf.UserMessage)
        self.assertEqual(_v1.row_of(second), {"split": "eval", "prompt": [
            {"role": "user", "content": "and this"}], "answer": "no", "info": {},
            "example_id": 1})
        # An env-server rebuilds the task from the dumped data alone.
        rebuilt = _v1.PrimebeakerData.model_validate(first.model_dump(mode="json"))
        self.assertEqual(rebuilt, first)


class SingleTurnRolloutTest(V1Case):
    async def rollout(self, reply, index=0):
        from verifiers.v1.harnesses.null import NullHarness, NullHarnessConfig

        task = list(self.taskset("primebeaker-jtc-label"))[index]
        async with FakeInterception() as interception:
            trace = await run_rollout(interception, task, NullHarness(NullHarnessConfig(
                id="null")), [reply])
        return trace, interception

    async def test_scored_by_one_score_request_with_weights_and_extras(self):
        trace, _ = await self.rollout({"role": "assistant", "content": "yes"})
        self.assertTrue(trace.ok, trace.errors)
        self.assertEqual(trace.stop_condition, "agent_completed")
        self.assertEqual(trace.rewards["correct_label"].score, 1.0)
        self.assertAlmostEqual(trace.reward, 1.0)
        self.assertEqual(trace.metrics["toy_extra"], 7.0)
        self.assertTrue(trace.info["toy_scored"])
        ops = [r["op"] for r in self.requests() if "op" in r]
        self.assertEqual(ops, ["hello", "score"])  # no session for a single-turn environment
        score = self.requests("score")[0]
        self.assertEqual(score["session"], trace.id)
        self.assertEqual(score["trajectory_id"], trace.id)
        self.assertEqual(score["env"], "label")
        self.assertEqual(score["prompt"], [{"role": "user", "content": "judge this"}])
        self.assertEqual(score["completion"][0]["content"], "yes")
        self.assertEqual(score["row"]["split"], "train")
        self.assertEqual(score["answer"], "yes")

    async def test_a_second_turn_is_refused_as_single_turn_env_does(self):
        tool_turn = {"role": "assistant", "content": "no",
                     "tool_calls": [call("1", "echo", text="x")]}
        trace, interception = await self.rollout(tool_turn)
        self.assertEqual(len(interception.requests), 2)
        self.assertEqual(trace.stop_condition, "single_turn")
        self.assertTrue(trace.ok, trace.errors)
        self.assertEqual(trace.rewards["correct_label"].score, 0.0)


class MultiTurnRolloutTest(V1Case):
    TID = "primebeaker-jtc-tool-label"

    async def rollout(self, replies, **args):
        task = list(self.taskset(self.TID, **args))[0]
        async with FakeInterception() as interception:
            trace = await run_rollout(interception, task, self.harness(self.TID), replies)
        return trace, interception

    async def test_tool_call_then_final_answer(self):
        trace, interception = await self.rollout([
            {"role": "assistant", "content": "", "tool_calls": [call("c1", "echo", text="hi")]},
            {"role": "assistant", "content": "yes"}])
        self.assertTrue(trace.ok, trace.errors)
        self.assertEqual(trace.stop_condition, "route_stop")  # describe's observe stop
        first, second = interception.requests
        self.assertEqual(first["tools"][0], {"type": "function", "function": {
            "name": "echo", "description": "Echo the text.", "parameters": {
                "type": "object", "properties": {"text": {"type": "string"}},
                "required": ["text"]}}})
        tool = second["messages"][-1]
        self.assertEqual(tool, {"role": "tool", "tool_call_id": "c1", "name": "echo",
                                "content": 'ran echo {"text": "hi"}'})
        self.assertEqual([type(m).__name__ for m in trace.messages],
                         ["UserMessage", "AssistantMessage", "ToolMessage", "AssistantMessage"])
        # Rewards with describe's weights (tool_use 0.5), one score request, extras recorded.
        self.assertEqual(trace.rewards["valid_final"].score, 1.0)
        self.assertEqual(trace.rewards["tool_use"].weight, 0.5)
        self.assertAlmostEqual(trace.reward, 1.5)
        self.assertEqual(trace.metrics["tool_calls"], 1.0)
        self.assertEqual(trace.metrics["toy_extra"], 7.0)
        self.assertEqual(trace.info["primebeaker_state"]["toy_calls"], 1)
        self.assertTrue(trace.info["primebeaker_state"]["toy_closed"])
        ops = [r["op"] for r in self.requests() if "op" in r]
        self.assertEqual(ops, ["hello", "open", "observe", "respond", "observe", "close",
                               "score", "release"])
        observe = self.requests("observe")[0]
        self.assertEqual(observe["session"], trace.id)
        self.assertEqual(observe["message"]["tool_calls"],
                         [{"id": "c1", "name": "echo", "arguments": '{"text": "hi"}'}])
        respond = self.requests("respond")[0]
        self.assertEqual((respond["turn"], respond["max_turns"], respond["completion_tokens"]),
                         (1, 8, 5))
        score = self.requests("score")[0]
        self.assertEqual([m["role"] for m in score["completion"]],
                         ["assistant", "tool", "assistant"])
        self.assertEqual(score["stop_condition"], "route_stop")

    async def test_over_budget_ends_with_a_final_env_response_and_no_model_call(self):
        trace, interception = await self.rollout([
            {"role": "assistant", "content": "", "tool_calls": [call("a", "echo", text="1"),
                                                                call("b", "echo", text="2")]},
            {"role": "assistant", "content": "", "tool_calls": [call("c", "echo", text="3")]},
            {"role": "assistant", "content": "never asked"}])
        self.assertTrue(trace.ok, trace.errors)
        self.assertEqual(len(interception.requests), 2)
        self.assertEqual(trace.stop_condition, "has_final_env_response")
        self.assertTrue(trace.info["primebeaker_state"]["toy_budget_exhausted"])
        self.assertEqual(trace.info["primebeaker_final_env_response"], [])
        self.assertIn("tool_use", trace.rewards)

    async def test_child_crash_is_a_rollout_error_carrying_the_child_message(self):
        trace, _ = await self.rollout([
            {"role": "assistant", "content": "", "tool_calls": [call("x", "crash")]}])
        self.assertFalse(trace.ok)
        self.assertEqual(trace.stop_condition, "error")
        self.assertEqual(trace.errors[-1].type, "HarnessError")
        self.assertIn("primebeaker environments respond: environment child exited (exit code 3)",
                      trace.errors[-1].message)
        self.assertEqual(trace.rewards, {})  # a failed run is not scored
        # The next rollout on the same loop gets a new child.
        trace, _ = await self.rollout([{"role": "assistant", "content": "yes"}])
        self.assertTrue(trace.ok, trace.errors)

    async def test_concurrent_rollouts_share_one_child(self):
        replies = [[{"role": "assistant", "content": "", "tool_calls": [
            call(f"s{i}", "sleep", seconds=0.2)]}, {"role": "assistant", "content": "yes"}]
            for i in range(6)]
        started = asyncio.get_running_loop().time()
        traces = await asyncio.gather(*(self.rollout(r) for r in replies))
        self.assertLess(asyncio.get_running_loop().time() - started, 5.0)
        self.assertTrue(all(t.ok for t, _ in traces))
        from primebeaker.environments._child import child_for_running_loop
        self.assertEqual(child_for_running_loop().starts, 1)
        self.assertEqual(len({t.id for t, _ in traces}), 6)


if __name__ == "__main__":
    unittest.main()
