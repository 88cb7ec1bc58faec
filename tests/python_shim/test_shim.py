# SPDX-License-Identifier: MIT
"""The Python package Prime-RL loads (python/primebeaker/environments) against a stand-in
`primebeaker` child (fake_primebeaker.py). Verifiers and datasets are the real packages when
installed, else the stand-ins under stand_in/ (which backend ran is printed)."""

import asyncio
import importlib
import json
import os
import sys
import tempfile
import time
import unittest

from shim_paths import HERE, REPO, vf  # noqa: E402,F401 (sets sys.path first)
print(f"verifiers backend: {getattr(vf, 'BACKEND', 'real')}", file=sys.stderr)

from primebeaker.environments import _child  # noqa: E402
from primebeaker.environments._child import ChildError, child_for_running_loop  # noqa: E402

MODULES = ["articulated_harness_env", "jtc_code_tool_label_env", "jtc_label_env",
           "jtc_multiple_choice_accuracy_env", "podman_terminal_env", "jtc_reward_model_env",
           "jtc_rubrichub_judge_env", "jtc_search_agent_env", "jtc_search_agent_visit_env",
           "jtc_search_agent_visit_judge_env", "jtc_search_agent_webterminal_env",
           "jtc_search_agent_webterminal_judge_env", "jtc_search_visit_agent_env",
           "jtc_search_visit_agent_judge_env", "jtc_terminal_tool_label_env",
           "jtc_tool_label_env"]


class FakeChildCase(unittest.IsolatedAsyncioTestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.log_path = os.path.join(self.tmp.name, "requests.jsonl")
        self.env_backup = dict(os.environ)
        os.environ["PRIMEBEAKER_BIN"] = os.path.join(HERE, "fake_primebeaker.py")
        os.environ["FAKE_PB_LOG"] = self.log_path
        self.dataset = os.path.join(self.tmp.name, "rows.jsonl")
        with open(self.dataset, "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"prompt": [{"role": "user", "content": "judge this"}],
                                     "answer": "yes"}) + "\n")
            handle.write(json.dumps({"prompt": [{"role": "user", "content": "and this"}],
                                     "answer": "no", "split": "eval"}) + "\n")

    async def asyncTearDown(self):
        child = _child._children.get(asyncio.get_running_loop())
        if child is not None:
            child.stop(grace_seconds=2.0)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env_backup)
        self.tmp.cleanup()

    def requests(self, op=None):
        if not os.path.exists(self.log_path):
            return []
        with open(self.log_path, encoding="utf-8") as handle:
            entries = [json.loads(line) for line in handle]
        return [e for e in entries if op is None or e.get("op") == op]


def call(call_id, name, **arguments):
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


class ChildProtocolTest(FakeChildCase):
    async def test_replies_resolve_out_of_order(self):
        child = child_for_running_loop()
        await child.request("open", session="slow", env="toy", args={"max_tool_calls": 9},
                            row={}, sampling_args={})
        await child.request("open", session="fast", env="toy", args={"max_tool_calls": 9},
                            row={}, sampling_args={})
        await child.request("observe", session="slow", turn=1,
                            message={"tool_calls": [call("1", "sleep", seconds=0.5)]})
        await child.request("observe", session="fast", turn=1,
                            message={"tool_calls": [call("2", "echo", text="hi")]})
        order = []

        async def respond(session):
            await child.request("respond", session=session, turn=1)
            order.append(session)

        await asyncio.gather(respond("slow"), respond("fast"))
        self.assertEqual(order, ["fast", "slow"])

    async def test_two_hundred_sessions_share_one_child_while_one_is_slow(self):
        child = child_for_running_loop()

        async def rollout(index):
            session = f"s{index}"
            await child.request("open", session=session, env="toy", args={"max_tool_calls": 9},
                                row={}, sampling_args={})
            name = "sleep" if index == 0 else "echo"
            await child.request("observe", session=session, turn=1,
                                message={"tool_calls": [call("c", name, seconds=1.5)]})
            started = time.monotonic()
            await child.request("respond", session=session, turn=1)
            return index, time.monotonic() - started

        started = time.monotonic()
        results = await asyncio.gather(*(rollout(i) for i in range(200)))
        fast = [elapsed for index, elapsed in results if index != 0]
        self.assertLess(max(fast), 1.0, "a slow session held up the others")
        self.assertGreaterEqual(time.monotonic() - started, 1.5)
        self.assertEqual(child.starts, 1)

    async def test_child_death_fails_in_flight_requests_and_the_next_request_respawns(self):
        child = child_for_running_loop()
        await child.request("open", session="a", env="toy", args={"max_tool_calls": 9}, row={},
                            sampling_args={})
        await child.request("observe", session="a", turn=1,
                            message={"tool_calls": [call("1", "crash")]})
        with self.assertRaises(ChildError) as caught:
            await child.request("respond", session="a", turn=1)
        self.assertEqual(caught.exception.kind, "infra")
        self.assertIn("exit code 3", caught.exception.message)
        reply = await child.request("open", session="b", env="toy", args={}, row={},
                                    sampling_args={})
        self.assertTrue(reply["ok"])
        self.assertEqual(child.starts, 2)

    async def test_protocol_mismatch_is_refused(self):
        os.environ["FAKE_PB_PROTOCOL"] = "2"
        child = child_for_running_loop()
        with self.assertRaises(ChildError) as caught:
            await child.request("release", session="x")
        self.assertIn("protocol 2", caught.exception.message)

    async def test_lines_longer_than_asyncio_default_limit_round_trip(self):
        child = child_for_running_loop()
        big = "x" * (3 << 20)
        await child.request("open", session="big", env="toy", args={"max_tool_calls": 9},
                            row={"blob": big}, sampling_args={})
        self.assertEqual(len(self.requests("open")[0]["row"]["blob"]), len(big))

    async def test_stdin_eof_stops_the_child(self):
        child = child_for_running_loop()
        await child.request("release", session="none")
        child.stop(grace_seconds=10.0)
        # Exit status 0, not -9: EOF alone ended it, no SIGKILL was needed.
        self.assertEqual(await asyncio.wait_for(child._process.wait(), 10), 0)
        self.assertIn({"eof": True}, self.requests())


class LoaderTest(FakeChildCase):
    def test_every_module_builds_an_environment(self):
        for stem in MODULES:
            module = importlib.import_module(f"primebeaker.environments.{stem}")
            env = module.load_environment(dataset=self.dataset)
            self.assertIsInstance(env, vf.Environment, stem)
        describes = [e["argv"] for e in self.requests() if "argv" in e]
        self.assertEqual(len(describes), len(MODULES))
        self.assertIn(["environments", "describe", "tool-label", "--args",
                       json.dumps({"dataset": self.dataset})], describes)

    def test_bad_argument_is_a_value_error_with_the_binary_message(self):
        from primebeaker.environments import jtc_tool_label_env
        with self.assertRaisesRegex(ValueError, "unknown argument 'bogus' for tool-label"):
            jtc_tool_label_env.load_environment(dataset=self.dataset, bogus=1)

    def test_jsonl_rows_get_split_when_missing_and_example_ids(self):
        from primebeaker.environments import jtc_tool_label_env
        env = jtc_tool_label_env.load_environment(dataset=self.dataset, split="train")
        rows = list(env.get_dataset())
        self.assertEqual([r["split"] for r in rows], ["train", "eval"])
        self.assertEqual([r["example_id"] for r in rows], [0, 1])

    def test_missing_dataset_file_is_named(self):
        from primebeaker.environments import jtc_tool_label_env
        with self.assertRaisesRegex(ValueError, "nope.jsonl.*JSONL file"):
            jtc_tool_label_env.load_environment(dataset=os.path.join(self.tmp.name, "nope.jsonl"))

    def test_tool_defs_and_stops_come_from_describe(self):
        from primebeaker.environments import jtc_tool_label_env
        env = jtc_tool_label_env.load_environment(dataset=self.dataset)
        self.assertEqual([t["name"] for t in env.tool_defs], ["echo"])
        self.assertTrue(callable(getattr(env, "route_stop")))
        self.assertEqual(env.max_turns, 8)


class RolloutTest(FakeChildCase):
    def env(self, **args):
        from primebeaker.environments import jtc_tool_label_env
        return jtc_tool_label_env.load_environment(dataset=self.dataset, **args)

    async def test_tool_turn_then_final_answer_is_scored_with_weights_and_extras(self):
        env = self.env()
        client = vf.ScriptedClient([
            {"role": "assistant", "content": "", "tool_calls": [call("c1", "echo", text="a")]},
            {"role": "assistant", "content": "yes"},
        ])
        row = env.get_dataset()[0]
        state = await env.run_rollout(row, client, "m")
        self.assertEqual(state["stop_condition"], "route_stop")
        self.assertEqual(len(state["trajectory"]), 2)
        tool_messages = [m for m in state["completion"] if m["role"] == "tool"]
        self.assertEqual(tool_messages[0]["content"], 'ran echo {"text": "a"}')
        self.assertEqual(tool_messages[0]["tool_call_id"], "c1")
        # valid_final (1.0) x 1.0 + tool_use (1 call) x 0.5; metrics are weight 0.
        self.assertAlmostEqual(state["reward"], 1.5)
        self.assertEqual(state["metrics"]["tool_calls"], 1.0)
        self.assertEqual(state["metrics"]["toy_extra"], 7.0)
        self.assertEqual(state["info"], {"toy_scored": True})
        self.assertTrue(state["toy_closed"])
        ops = [e["op"] for e in self.requests() if "op" in e and e["op"] != "hello"]
        self.assertEqual(ops, ["open", "observe", "respond", "observe", "close", "score",
                               "release"])
        self.assertEqual(len(self.requests("score")), 1, "one scoring trip per rollout")

    async def test_over_budget_amends_previous_tool_message_and_ends_without_model_call(self):
        env = self.env(max_tool_calls=1)
        client = vf.ScriptedClient([
            {"role": "assistant", "content": "", "tool_calls": [call("c1", "echo", text="a")]},
            {"role": "assistant", "content": "", "tool_calls": [call("c2", "echo", text="b"),
                                                                call("c3", "echo", text="c")]},
            {"role": "assistant", "content": "never asked"},
        ])
        state = await env.run_rollout(env.get_dataset()[0], client, "m")
        self.assertEqual(len(client.responses), 1, "the model was asked after the final response")
        # The warning lands in the first tool message, which the trajectory shares.
        first_tool = state["trajectory"][1]["prompt"][2]
        self.assertTrue(first_tool["content"].endswith("\n\nYou are out of tool calls."))
        self.assertIn(state["stop_condition"], ("budget_exhausted", "has_final_env_response"))

    async def test_child_crash_becomes_a_rollout_error_not_an_exception(self):
        env = self.env()
        client = vf.ScriptedClient([
            {"role": "assistant", "content": "", "tool_calls": [call("c1", "crash")]},
        ])
        state = await env.run_rollout(env.get_dataset()[0], client, "m")
        self.assertIsInstance(state["error"], vf.InfraError)
        self.assertEqual(state["stop_condition"], "has_error")
        self.assertEqual(state["reward"], 0.0)

    async def test_single_turn_environment_sends_only_score(self):
        from primebeaker.environments import jtc_label_env
        env = jtc_label_env.load_environment(dataset=self.dataset)
        client = vf.ScriptedClient([{"role": "assistant", "content": "yes"}])
        state = await env.run_rollout(env.get_dataset()[0], client, "m")
        self.assertEqual(state["reward"], 1.0)
        ops = [e["op"] for e in self.requests() if "op" in e and e["op"] != "hello"]
        self.assertEqual(ops, ["score"])
        score = self.requests("score")[0]
        self.assertEqual(score["env"], "label")
        self.assertEqual(score["answer"], "yes")
        self.assertEqual(score["row"]["answer"], "yes")


if __name__ == "__main__":
    unittest.main()
