#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The pure-Python anchor of the serve benchmark: a stand-in for `primebeaker environments serve
--stdio` that speaks the same JSON-lines protocol (hello, score) and does the same
parse-and-score work for the single-turn `label` environment, the way the reference's Python
rubric does it (re + json). Invoked as `py_serve.py environments serve --stdio`, so the shim's
child client starts it through $PRIMEBEAKER_BIN exactly as it starts the binary."""
import json
import re
import sys

FEEDBACK = re.compile(r"<feedback>(.*?)</feedback>", re.I | re.S)
LABEL = re.compile(r"<label>(.*?)</label>", re.I | re.S)


def normalize(text):
    return " ".join(text.strip().lower().split())


def message_text(message):
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def score_label(request):
    completion = request.get("completion") or []
    text = message_text(completion[-1]) if completion else ""
    feedback = [f.strip() for f in FEEDBACK.findall(text)]
    labels = [label.strip() for label in LABEL.findall(text)]
    valid = len(feedback) == 1 and feedback[0] != "" and len(labels) == 1 and labels[0] != ""
    answer = request.get("answer")
    correct = valid and isinstance(answer, str) and normalize(labels[0]) == normalize(answer)
    return {"valid_format": 1.0 if valid else 0.0, "correct_label": 1.0 if correct else 0.0}


def handle(request):
    op = request.get("op")
    if op == "hello":
        return {"protocol": 1, "server": "python stand-in"}
    if op == "score" and request.get("env") == "label":
        return {"values": score_label(request), "metrics": {}, "info_update": {}}
    if op in ("close", "release", "cancel"):
        return {}
    raise ValueError(f"the stand-in serves only hello and label scoring, not {op!r}")


def main():
    if sys.argv[1:] != ["environments", "serve", "--stdio"]:
        sys.exit("usage: py_serve.py environments serve --stdio")
    out = sys.stdout
    for line in sys.stdin.buffer:
        request = json.loads(line)
        try:
            reply = {"id": request.get("id"), "ok": True, **handle(request)}
        except Exception as error:  # noqa: BLE001 - reported on the protocol, like the binary
            reply = {"id": request.get("id"), "ok": False,
                     "error": {"kind": "bad_request", "message": str(error)}}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
