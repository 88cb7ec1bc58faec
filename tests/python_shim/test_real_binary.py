# SPDX-License-Identifier: MIT
"""The Python package against the REAL primebeaker binary (no fake child): `describe` at load
time and `serve --stdio` for scoring. The binary is $PB_BINARY (CTest passes it), else the
build tree's build/ci/primebeaker."""

import asyncio
import json
import os
import tempfile
import unittest

from shim_paths import HERE, REPO, vf  # noqa: E402,F401 (sets sys.path first)

from primebeaker.environments import _child  # noqa: E402


def real_binary():
    configured = os.environ.get("PB_BINARY")
    if configured:
        return configured
    built = os.path.join(REPO, "build", "ci", "primebeaker")
    return built if os.access(built, os.X_OK) else None


PROMPT = [{"role": "user", "content": "Judge the output."}]


class RealBinaryCase(unittest.IsolatedAsyncioTestCase):
    """PRIMEBEAKER_BIN set to the real binary and a temporary directory for the class; the
    loop's child stopped after each test."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.env_backup = dict(os.environ)
        os.environ["PRIMEBEAKER_BIN"] = real_binary()
        cls.dataset = os.path.join(cls.tmp.name, "rows.jsonl")

    @classmethod
    def tearDownClass(cls):
        os.environ.clear()
        os.environ.update(cls.env_backup)
        cls.tmp.cleanup()

    async def asyncTearDown(self):
        child = _child._children.get(asyncio.get_running_loop())
        if child is not None:
            child.stop(grace_seconds=5.0)


@unittest.skipIf(real_binary() is None, "no primebeaker binary: set PB_BINARY or build build/ci")
class LabelAgainstRealBinaryTest(RealBinaryCase):
    @classmethod
    def setUpClass(cls):
        # One `describe` for the class: each start of the ASan build costs seconds.
        super().setUpClass()
        with open(cls.dataset, "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"prompt": PROMPT, "answer": "Pass"}) + "\n")
            handle.write(json.dumps({"prompt": PROMPT, "answer": "fail", "split": "eval"}) + "\n")
        from primebeaker.environments import jtc_label_env
        cls.env = jtc_label_env.load_environment(dataset=cls.dataset)

    async def rollout(self, row_index, content):
        client = vf.ScriptedClient([{"role": "assistant", "content": content}])
        return await self.env.run_rollout(self.env.get_dataset()[row_index], client, "m")

    def test_load_environment_builds_a_single_turn_env_from_describe(self):
        self.assertIsInstance(self.env, vf.SingleTurnEnv)
        self.assertEqual(self.env.primebeaker_shape["name"], "label")
        self.assertEqual([r["name"] for r in self.env.primebeaker_shape["rewards"]],
                         ["valid_format", "correct_label"])
        rows = list(self.env.get_dataset())
        self.assertEqual([r["split"] for r in rows], ["train", "eval"])  # added only if missing

    def test_bad_argument_is_a_value_error_with_the_binary_message(self):
        from primebeaker.environments import jtc_label_env
        with self.assertRaisesRegex(ValueError, "bogus"):
            jtc_label_env.load_environment(dataset=self.dataset, bogus=1)

    async def test_correct_label_scores_two(self):
        state = await self.rollout(0, "<feedback>Looks right.</feedback>\n<LABEL> pass </LABEL>")
        self.assertIsNone(state.get("error"))
        self.assertEqual(state["metrics"]["valid_format"], 1.0)
        self.assertEqual(state["metrics"]["correct_label"], 1.0)
        self.assertAlmostEqual(state["reward"], 2.0)

    async def test_wrong_label_keeps_the_format_point(self):
        state = await self.rollout(1, "<feedback>Looks right.</feedback><label>pass</label>")
        self.assertEqual(state["metrics"]["valid_format"], 1.0)
        self.assertEqual(state["metrics"]["correct_label"], 0.0)
        self.assertAlmostEqual(state["reward"], 1.0)

    async def test_missing_feedback_scores_nothing(self):
        state = await self.rollout(0, "<label>pass</label>")
        self.assertEqual(state["metrics"]["valid_format"], 0.0)
        self.assertEqual(state["metrics"]["correct_label"], 0.0)
        self.assertAlmostEqual(state["reward"], 0.0)

    async def test_concurrent_rollouts_share_one_child(self):
        contents = ["<feedback>f</feedback><label>pass</label>", "<label>x</label>"] * 4
        states = await asyncio.gather(*(self.rollout(0, c) for c in contents))
        self.assertEqual([s["reward"] for s in states], [2.0, 0.0] * 4)
        self.assertEqual(_child.child_for_running_loop().starts, 1)


def submit_call(call_id, rubric_id, label):
    return {"role": "assistant", "content": "",
            "tool_calls": [{"id": call_id, "name": "submit", "arguments": json.dumps(
                {"rubric_id": rubric_id, "feedback": "checked", "label": label})}]}


@unittest.skipIf(real_binary() is None, "no primebeaker binary: set PB_BINARY or build build/ci")
class MultiTurnAgainstRealBinaryTest(RealBinaryCase):
    """The multi-turn hooks (observe, respond, amend_last_tool, final, close, release) against
    the real engine. submit is in memory and the terminal points at a closed port, so no
    service is needed."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        info = {"expected_rubric_ids": ["r1", "r2"],
                "gold_submissions": [{"rubric_id": "r1", "label": "pass"},
                                     {"rubric_id": "r2", "label": "fail"}]}
        with open(cls.dataset, "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"prompt": PROMPT, "answer": "", "info": info}) + "\n")
            handle.write(json.dumps({"prompt": [{"role": "user", "content":
                                                 "Judge. <output>x</output>"}],
                                     "answer": "pass"}) + "\n")
        from primebeaker.environments import articulated_harness_env, jtc_tool_label_env
        cls.articulated = articulated_harness_env.load_environment(
            dataset=cls.dataset, tools=["submit"], max_tool_calls=4)
        cls.tool_label = jtc_tool_label_env.load_environment(
            dataset=cls.dataset, max_tool_calls=1, max_retries=1,
            terminal_server_url="http://127.0.0.1:9/terminal")

    async def test_articulated_harness_ends_when_every_rubric_is_submitted(self):
        self.assertIsInstance(self.articulated, vf.MultiTurnEnv)
        client = vf.ScriptedClient([submit_call("a", "r1", "pass"),
                                    submit_call("b", "r2", "pass")])
        state = await self.articulated.run_rollout(self.articulated.get_dataset()[0], client, "m")
        self.assertIsNone(state.get("error"))
        self.assertEqual(len(client.prompts), 2)  # final_env_response: no third model call
        self.assertTrue(state["jtc_submit_complete"])
        self.assertEqual(state["jtc_tool_call_count"], 2)
        self.assertEqual(state["metrics"]["rubric_completion_reward"], 0.5)  # r2 is wrong
        self.assertEqual(state["metrics"]["missing_rubric_penalty"], 0.0)
        self.assertEqual(state["metrics"]["valid_tool_or_final_turn"], 1.0)

    async def test_tool_label_final_warning_is_appended_to_the_tool_message(self):
        terminal = {"role": "assistant", "content": "", "tool_calls": [
            {"id": "t1", "name": "terminal", "arguments": json.dumps({"command": "rg x"})}]}
        verdict = {"role": "assistant", "content": json.dumps(
            {"feedback": "fine", "label": "pass"})}
        client = vf.ScriptedClient([terminal, verdict])
        state = await self.tool_label.run_rollout(self.tool_label.get_dataset()[1], client, "m")
        self.assertIsNone(state.get("error"))
        tool = [m for m in client.prompts[1] if getattr(m, "role", None) == "tool"]
        self.assertEqual(len(tool), 1)
        # The service is down: the model sees the transport error, then the final warning.
        self.assertIn("terminal execution request failed: RuntimeError", tool[0].content)
        self.assertIn("\n\nYou have used your last tool call", tool[0].content)
        self.assertEqual(state["jtc_route"], "final")
        self.assertEqual(state["metrics"]["correct_final_label"], 1.0)
        self.assertEqual(state["metrics"]["valid_tool_or_final_turn"], 1.0)


if __name__ == "__main__":
    unittest.main()
