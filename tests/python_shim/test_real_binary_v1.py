# SPDX-License-Identifier: MIT
"""The Verifiers v1 tasksets against the REAL primebeaker binary ($PB_BINARY, as
test_real_binary.py): the catalog and the taskset ids agree, `describe` refuses a bad argument
with its own message, `label` scores through the `null` harness, and the package's harness
drives tool-label and articulated-harness turns through `serve --stdio`."""

import json
import subprocess
import unittest

from shim_paths import vf_v1 as vf  # noqa: E402 (sets sys.path first)
from test_real_binary import PROMPT, RealBinaryCase, real_binary, submit_call  # noqa: E402
from test_v1 import IDS  # noqa: E402
from v1_rollout import FakeInterception, run_rollout  # noqa: E402


def taskset(tid, **args):
    config = vf.taskset_config_type(tid).model_validate({"id": tid, "args": args})
    return vf.load_taskset(config)


@unittest.skipIf(real_binary() is None or vf is None,
                 "no primebeaker binary (set PB_BINARY or build build/ci) or no verifiers.v1")
class V1AgainstRealBinaryTest(RealBinaryCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        info = {"expected_rubric_ids": ["r1", "r2"],
                "gold_submissions": [{"rubric_id": "r1", "label": "pass"},
                                     {"rubric_id": "r2", "label": "fail"}]}
        with open(cls.dataset, "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"prompt": PROMPT, "answer": "Pass", "info": info}) + "\n")
            handle.write(json.dumps({"prompt": [{"role": "user", "content":
                                                 "Judge. <output>x</output>"}],
                                     "answer": "pass"}) + "\n")

    async def rollout(self, tid, index, replies, harness=None, **args):
        task = list(taskset(tid, dataset=self.dataset, **args))[index]
        if harness is None:
            harness = vf.load_harness(vf.harness_config_type(tid)(id=tid))
        async with FakeInterception() as interception:
            trace = await run_rollout(interception, task, harness, replies)
        return trace, interception

    def test_the_catalog_names_exactly_the_taskset_ids(self):
        listed = json.loads(subprocess.run([real_binary(), "environments", "list", "--json"],
                                           capture_output=True, text=True, check=True).stdout)
        expected = {"primebeaker-" + e["module"][:-len("_env")].replace("_", "-"): e["name"]
                    for e in listed}
        self.assertEqual(expected, IDS)
        for tid, name in IDS.items():
            self.assertEqual(vf.taskset_class(tid).ENV, name)

    def test_bad_argument_is_a_value_error_with_the_binary_message(self):
        with self.assertRaisesRegex(ValueError, "bogus"):
            taskset("primebeaker-jtc-label", dataset=self.dataset, bogus=1)

    async def test_label_scores_through_the_null_harness(self):
        from verifiers.v1.harnesses.null import NullHarness, NullHarnessConfig

        trace, _ = await self.rollout(
            "primebeaker-jtc-label", 0,
            [{"role": "assistant", "content": "<feedback>ok</feedback><label>pass</label>"}],
            harness=NullHarness(NullHarnessConfig(id="null")))
        self.assertTrue(trace.ok, trace.errors)
        self.assertEqual(trace.rewards["valid_format"].score, 1.0)
        self.assertEqual(trace.rewards["correct_label"].score, 1.0)
        self.assertAlmostEqual(trace.reward, 2.0)

    async def test_tool_label_final_warning_reaches_the_model_with_the_tool_result(self):
        terminal = {"role": "assistant", "content": "", "tool_calls": [
            {"id": "t1", "name": "terminal", "arguments": json.dumps({"command": "rg x"})}]}
        verdict = {"role": "assistant", "content": json.dumps({"feedback": "fine",
                                                               "label": "pass"})}
        trace, interception = await self.rollout(
            "primebeaker-jtc-tool-label", 1, [terminal, verdict], max_tool_calls=1,
            max_retries=1, terminal_server_url="http://127.0.0.1:9/terminal")
        self.assertTrue(trace.ok, trace.errors)
        tool = interception.requests[1]["messages"][-1]
        self.assertEqual(tool["role"], "tool")
        self.assertIn("terminal execution request failed: RuntimeError", tool["content"])
        self.assertIn("\n\nYou have used your last tool call", tool["content"])
        self.assertEqual(trace.info["primebeaker_state"]["jtc_route"], "final")
        self.assertEqual(trace.rewards["correct_final_label"].score, 1.0)
        self.assertEqual(trace.rewards["valid_tool_or_final_turn"].score, 1.0)

    async def test_articulated_harness_ends_when_every_rubric_is_submitted(self):
        trace, interception = await self.rollout(
            "primebeaker-articulated-harness", 0,
            [submit_call("a", "r1", "pass"), submit_call("b", "r2", "pass")],
            tools=["submit"], max_tool_calls=4)
        self.assertTrue(trace.ok, trace.errors)
        self.assertEqual(len(interception.requests), 2)  # final env response: no third call
        self.assertEqual(trace.stop_condition, "has_final_env_response")
        self.assertTrue(trace.info["primebeaker_state"]["jtc_submit_complete"])
        self.assertEqual(trace.rewards["rubric_completion_reward"].score, 0.5)  # r2 is wrong
        self.assertEqual(trace.rewards["missing_rubric_penalty"].score, 0.0)


if __name__ == "__main__":
    unittest.main()
