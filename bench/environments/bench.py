#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""environments benchmark: `environments score` throughput and tool-call parsing throughput,
each against the same work done by CPython (json, re) in the same run.

  python3 bench/environments/bench.py --binary build-release/primebeaker [--rollouts 100000]
  python3 bench/environments/bench.py --driver /tmp/driver   # bench/environments/build.sh

Figures:
  * score: rollouts/s of `primebeaker environments score tool-label --rollouts FILE` over N
    generated tool-label rollouts (verdicts, fenced verdicts, reasoning-only verdicts, Qwen tool
    calls, invalid text), against a CPython scorer doing the same work: json.loads per line,
    re-based special-block stripping, Qwen tool-call regex, verdict extraction, the 12 reward
    terms, json.dumps per result line.
  * parse: MB/s of `primebeaker environments parse-tool-calls --format qwen-json` over one large
    message, against re.finditer(r"<tool_call>\\s*(\\{.*?\\})\\s*</tool_call>", re.S) + json.loads.
Each measurement is the best of --repeat runs (the machine is shared); the load average is
printed with the figures.
"""
import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time

VERDICT = '{"feedback": "The output cites %d sources and the numbers match.", "label": "%s"}'


def make_rollout(rng, i):
    kind = i % 5
    label = rng.choice(["Correct", "incorrect", "partially  correct"])
    if kind == 0:
        content = VERDICT % (i, label)
        message = {"role": "assistant", "content": content}
    elif kind == 1:
        content = "<think>checking the numbers in row %d</think>\nFinal:\n```json\n%s\n```" % (i, VERDICT % (i, label))
        message = {"role": "assistant", "content": content}
    elif kind == 2:
        message = {"role": "assistant", "content": "", "reasoning_content": VERDICT % (i, label)}
    elif kind == 3:
        call = {"name": "terminal", "arguments": {"command": "rg -n 'error|warn' | head -%d" % (i % 50)}}
        message = {"role": "assistant", "content": "<think>search</think>\n<tool_call>\n%s\n</tool_call>" % json.dumps(call)}
    else:
        message = {"role": "assistant", "content": "I am not sure what the label is for item %d." % i}
    state = {
        "jtc_tool_call_count": i % 70,
        "jtc_tool_command_error_count": i % 3,
        "jtc_unknown_tool_call_count": i % 2,
        "jtc_browse_call_count": i % 4,
        "jtc_browse_url_not_in_output_count": i % 2,
        "jtc_successful_browse_count": i % 3,
        "jtc_standalone_command_count": i % 6,
        "jtc_targeted_standalone_command_count": i % 4,
    }
    if kind != 3:
        state["jtc_route"] = "final" if kind != 4 else "invalid"
    return {
        "prompt": [{"role": "user", "content": "Judge the output of task %d." % i}],
        "completion": [message],
        "answer": rng.choice(["correct", "Incorrect", "partially correct"]),
        "info": {},
        "state": state,
    }


# ---- the CPython anchor: the same scoring work, written the way the reference does it --------

THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
REDACTED = re.compile(r"<redacted_thinking>.*?</redacted_thinking>", re.S | re.I)
TOOL_BLOCK = re.compile(r"<tool_call>.*?</tool_call>", re.S)
SPECIAL = re.compile(r"<\|im_end\|>|<\|endoftext\|>|<\|return\|>", re.I)
QWEN_JSON = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)
THINK_BODY = re.compile(r"<think>(.*?)</think>", re.S | re.I)
FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
ARGS = {"tool_use_reward_coef": 0.5, "browse_url_not_in_output_penalty": 0.25,
        "browse_success_reward_coef": 0.2, "standalone_command_repeat_penalty": 1.0}


def strip_special(text):
    text = THINK.sub("", text)
    text = REDACTED.sub("", text)
    text = TOOL_BLOCK.sub("", text)
    text = SPECIAL.sub("", text)
    if "</think>" in text.lower():
        text = text[text.lower().rfind("</think>") + 8:]
    return text.strip()


def first_json(text):
    m = FENCE.search(text)
    if m:
        try:
            return json.loads(m.group(1).strip())
        except ValueError:
            pass
    try:
        return json.loads(text)
    except ValueError:
        pass
    dec = json.JSONDecoder()
    for i, c in enumerate(text):
        if c in "{[":
            try:
                return dec.raw_decode(text, i)[0]
            except ValueError:
                continue
    return None


def verdict(text):
    v = first_json(strip_special(text))
    if isinstance(v, dict) and set(v) == {"feedback", "label"} and all(
            isinstance(v[k], str) and v[k].strip() for k in v):
        return v
    return None


def norm(s):
    return " ".join(s.strip().lower().split())


def qwen_calls(text):
    calls = []
    for m in QWEN_JSON.finditer(text):
        try:
            obj = json.loads(m.group(1))
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("name"):
            calls.append(obj)
    return calls


def py_score(r):
    state = r["state"]
    msg = r["completion"][-1]
    content = msg.get("content") or ""
    reasoning = msg.get("reasoning_content") or ""
    if not reasoning:
        m = THINK_BODY.search(content)
        reasoning = m.group(1).strip() if m else ""
    route = state.get("jtc_route")
    if route is None:
        calls = qwen_calls(content)
        if calls:
            route = "tool"
            for c in calls:
                cmd = (c.get("arguments") or {}).get("command")
                if c["name"] == "terminal" and not (isinstance(cmd, str) and cmd.strip()):
                    route = "invalid"
        else:
            empty = not strip_special(content)
            route = "final" if verdict(reasoning if empty else content) else "invalid"
    t = {}
    t["valid_tool_or_final_turn"] = 1.0 if route in ("tool", "final") else 0.0
    t["invalid_trace_penalty_reward"] = -4.0 if route == "invalid" else 0.0
    t["tool_use_reward"] = ARGS["tool_use_reward_coef"] * min(state["jtc_tool_call_count"], 64) / 64
    t["tool_stderr_penalty_reward"] = -0.1 * state["jtc_tool_command_error_count"]
    t["unknown_tool_penalty_reward"] = -0.1 * state["jtc_unknown_tool_call_count"]
    t["browse_url_not_in_output_penalty_reward"] = -ARGS["browse_url_not_in_output_penalty"] * state["jtc_browse_url_not_in_output_count"]
    t["browse_success_reward"] = ARGS["browse_success_reward_coef"] if state["jtc_successful_browse_count"] > 0 else 0.0
    sa = state["jtc_standalone_command_count"]
    t["standalone_command_repeat_penalty_reward"] = (
        -ARGS["standalone_command_repeat_penalty"] * max(state["jtc_targeted_standalone_command_count"] - 1, 0) / sa if sa else 0.0)
    empty = not strip_special(content)
    v = verdict(reasoning if empty else content)
    t["valid_final_format"] = 1.0 if v else 0.0
    try:
        strict = json.loads(strip_special(content))
        strict_ok = isinstance(strict, dict) and set(strict) == {"feedback", "label"}
    except ValueError:
        strict_ok = False
    t["strict_final_json"] = 1.0 if strict_ok else 0.0
    t["reasoning_only_final_penalty_reward"] = -4.0 if empty and verdict(reasoning) else 0.0
    t["correct_final_label"] = 1.0 if v and norm(v["label"]) == norm(r["answer"]) else 0.0
    return sum(t.values()), t


def run_python_scorer(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            reward, terms = py_score(json.loads(line))
            out.append(json.dumps({"index": i, "reward": reward, "metrics": terms}))
    return out


def cpu_seconds():
    """CPU time of this process plus its finished children (user + system)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def best_of(repeat, fn):
    """Best wall time and best CPU time over `repeat` runs: on a loaded machine the CPU time
    is the fairer figure, so both are printed."""
    best = best_cpu = None
    result = None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), cpu_seconds()
        result = fn()
        elapsed, cpu = time.perf_counter() - start, cpu_seconds() - start_cpu
        best = elapsed if best is None else min(best, elapsed)
        best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
    return (best, best_cpu), result


def main():
    parser = argparse.ArgumentParser()
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--binary", help="a release build of primebeaker")
    which.add_argument("--driver", help="bench/environments/build.sh output (same code, -O2)")
    parser.add_argument("--rollouts", type=int, default=100000)
    parser.add_argument("--parse-mb", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    rng = random.Random(12)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rollouts.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for i in range(a.rollouts):
                f.write(json.dumps(make_rollout(rng, i)) + "\n")
        size_mb = os.path.getsize(path) / 1e6
        args = json.dumps(ARGS)

        def ours():
            argv = ([a.binary, "environments", "score", "tool-label", "--args", args, "--rollouts", path]
                    if a.binary else [a.driver, "score", "tool-label", args, path])
            p = subprocess.run(argv, stdout=subprocess.PIPE, check=True)
            return p.stdout.decode().splitlines()

        t_cpp, cpp_lines = best_of(a.repeat, ours)
        t_py, py_lines = best_of(a.repeat, lambda: run_python_scorer(path))
        # Same rewards from both (a sanity check that the work is the same).
        mismatches = sum(1 for c, p in zip(cpp_lines, py_lines)
                         if abs(json.loads(c)["reward"] - json.loads(p)["reward"]) > 1e-9)

        # One large message of Qwen tool calls.
        block = ('<think>step %d</think>\n<tool_call>\n{"name": "terminal", "arguments": '
                 '{"command": "rg -n \\"error %d\\" | head -20"}}\n</tool_call>\n')
        parts, total, i = [], 0, 0
        while total < a.parse_mb * 1e6:
            s = block % (i, i)
            parts.append(s)
            total += len(s)
            i += 1
        text = "".join(parts)
        data = text.encode()

        def ours_parse():
            argv = ([a.binary, "environments", "parse-tool-calls", "--format", "qwen-json"]
                    if a.binary else [a.driver, "parse", "qwen-json"])
            p = subprocess.run(argv, input=data, stdout=subprocess.PIPE, check=True)
            return len(json.loads(p.stdout)["calls"])

        def py_parse():
            return len([json.loads(m.group(1)) for m in QWEN_JSON.finditer(text)])

        t_cpp_parse, n_cpp = best_of(a.repeat, ours_parse)
        t_py_parse, n_py = best_of(a.repeat, py_parse)

    load = os.getloadavg()
    mb = len(data) / 1e6
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    print(f"score tool-label, {a.rollouts} rollouts ({size_mb:.1f} MB), best of {a.repeat}"
          " (wall | CPU):")
    print(f"  primebeaker  {t_cpp[0]:7.3f} s {a.rollouts / t_cpp[0]:9.0f} rollouts/s"
          f" | {t_cpp[1]:7.3f} s {a.rollouts / t_cpp[1]:9.0f} rollouts/s (process start included)")
    print(f"  CPython      {t_py[0]:7.3f} s {a.rollouts / t_py[0]:9.0f} rollouts/s"
          f" | {t_py[1]:7.3f} s {a.rollouts / t_py[1]:9.0f} rollouts/s")
    print(f"  ratio        {t_py[0] / t_cpp[0]:7.1f}x wall | {t_py[1] / t_cpp[1]:.1f}x CPU;"
          f" reward mismatches: {mismatches}")
    print(f"parse-tool-calls qwen-json, {mb:.1f} MB, {n_cpp} calls (CPython {n_py}), wall | CPU:")
    print(f"  primebeaker  {t_cpp_parse[0]:7.3f} s {mb / t_cpp_parse[0]:8.1f} MB/s"
          f" | {t_cpp_parse[1]:7.3f} s {mb / t_cpp_parse[1]:8.1f} MB/s (process start included)")
    print(f"  CPython      {t_py_parse[0]:7.3f} s {mb / t_py_parse[0]:8.1f} MB/s"
          f" | {t_py_parse[1]:7.3f} s {mb / t_py_parse[1]:8.1f} MB/s (re + json, in process)")
    print(f"  ratio        {t_py_parse[0] / t_cpp_parse[0]:7.1f}x wall | "
          f"{t_py_parse[1] / t_cpp_parse[1]:.1f}x CPU")
    return 0 if mismatches == 0 and n_cpp == n_py else 1


if __name__ == "__main__":
    sys.exit(main())
