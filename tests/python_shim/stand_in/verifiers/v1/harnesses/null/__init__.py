# SPDX-License-Identifier: MIT
"""Stand-in for the built-in `null` harness: a chat loop without tools whose model calls go
through the interception endpoint. The real one runs that loop as a uv script in the runtime;
this one runs it in process with the standard library, which is all the tests need."""

import json
import urllib.request

from verifiers.v1 import Harness, HarnessConfig, ProgramResult


class NullHarnessConfig(HarnessConfig):
    pass


class NullHarness(Harness[NullHarnessConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data):
        import asyncio

        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages.extend(m.model_dump(exclude_none=True) for m in prompt or [])
        while True:
            status, reply = await asyncio.to_thread(_post, endpoint, secret, ctx.model, messages)
            if status != 200:
                return ProgramResult(1, "", json.dumps(reply))
            message = reply["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                return ProgramResult(0, "", "")


def _post(endpoint, secret, model, messages):
    request = urllib.request.Request(
        endpoint.rstrip("/") + "/chat/completions", method="POST",
        data=json.dumps({"model": model, "messages": messages}).encode(),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


__all__ = ["NullHarness", "NullHarnessConfig"]
