# SPDX-License-Identifier: MIT
"""What the v0 shim and the v1 tasksets send the child the same way: plain JSON from
Verifiers' message objects, session-ordered requests, the last tool message amended."""

from ._child import child_for_running_loop


def jsonable(value):
    """Plain JSON values from Verifiers' Pydantic messages and states."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items() if not str(k).startswith(
            "_primebeaker")}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump())
    return str(value)


def get(message, key):
    if isinstance(message, dict):
        return message.get(key)
    return getattr(message, key, None)


def set_field(message, key, value):
    if isinstance(message, dict):
        message[key] = value
    else:
        setattr(message, key, value)


def amend_last_tool(messages, text):
    """Appends `text`, after a blank line, to the newest tool message (the engine's
    `amend_last_tool`); the tool-label family's final warning lands there."""
    for message in reversed(messages):
        if get(message, "role") == "tool":
            set_field(message, "content", (get(message, "content") or "") + "\n\n" + text)
            return True
    return False


async def call(session, op, locked=True, **fields):
    """One request for `session`; open/observe/respond/score wait for the session's lock.
    Raises _child.ChildError, which each API layer turns into its own error type."""
    child = child_for_running_loop()
    if not locked:
        return await child.request(op, session=session, **fields)
    async with child.session_lock(session):
        return await child.request(op, session=session, **fields)
