# SPDX-License-Identifier: MIT
"""The long-lived `primebeaker environments serve --stdio` child: JSON lines, multiplexed by
request id (docs/environments-runtime.md).

One child per process and event loop: Verifiers runs rollouts on the server's loop but tears
down on a new one, and asyncio pipes belong to the loop that opened them."""

import asyncio
import atexit
import itertools
import json
import os
import signal
import time
import weakref

from . import _binary

PROTOCOL = 1
# asyncio's default line limit is 64 KiB; a 64-turn completion at scoring is megabytes.
LINE_LIMIT = 1 << 28


class ChildError(Exception):
    """A request the child answered with ok=false, or could not answer at all."""

    def __init__(self, kind, message):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class Child:
    def __init__(self):
        self._process = None
        self._reader = None
        self._pending = {}
        self._ids = itertools.count(1)
        self._start_lock = None
        self._session_locks = weakref.WeakValueDictionary()
        self.server = None
        self.starts = 0

    @property
    def pid(self):
        return self._process.pid if self._process else None

    def session_lock(self, session):
        """At most one open/observe/respond/score per session at a time (close and cancel may
        overlap them)."""
        lock = self._session_locks.get(session)
        if lock is None:
            lock = asyncio.Lock()
            self._session_locks[session] = lock
        return lock

    async def request(self, op, **fields):
        await self._ensure_started()
        return await self._send(op, fields)

    async def _send(self, op, fields):
        request_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        line = json.dumps({"id": request_id, "op": op, **fields}, ensure_ascii=True,
                          allow_nan=False)
        try:
            self._process.stdin.write(line.encode("ascii") + b"\n")
            await self._process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as error:
            self._pending.pop(request_id, None)
            raise ChildError("infra", f"environment child is gone: {error}") from None
        reply = await future
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise ChildError(error.get("kind", "environment"), error.get("message", "failed"))
        return reply

    async def _ensure_started(self):
        if self._process is not None and self._process.returncode is None and self._reader \
                and not self._reader.done():
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._process is not None and self._process.returncode is None and \
                    self._reader and not self._reader.done():
                return
            self._process = await asyncio.create_subprocess_exec(
                _binary.binary_path(), "environments", "serve", "--stdio",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=None, limit=LINE_LIMIT)
            self.starts += 1
            _live_pids.add(self._process.pid)
            self._reader = asyncio.get_running_loop().create_task(self._read_replies())
            hello = await self._send("hello", {"protocol": PROTOCOL,
                                               "client": "primebeaker.environments"})
            if hello.get("protocol") != PROTOCOL:
                self.stop()
                raise ChildError("infra", f"primebeaker speaks protocol {hello.get('protocol')}, "
                                          f"this package speaks {PROTOCOL}: install matching versions")
            self.server = hello.get("server")

    async def _read_replies(self):
        process = self._process
        try:
            while True:
                line = await process.stdout.readline()
                if not line:
                    break
                try:
                    reply = json.loads(line)
                except ValueError:
                    continue  # not ours; the child writes only protocol lines, but be robust
                future = self._pending.pop(reply.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(reply)
        finally:
            await process.wait()
            _live_pids.discard(process.pid)
            reason = f"environment child exited ({_status(process.returncode)})"
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ChildError("infra", reason))
            self._pending.clear()

    def stop(self, grace_seconds=5.0):
        """Stops the child without an event loop (Verifiers tears down on a fresh loop)."""
        if self._process is None:
            return
        _stop_pid(self._process.pid, self._process.stdin, grace_seconds)


_children = weakref.WeakKeyDictionary()
_live_pids = set()


def child_for_running_loop():
    loop = asyncio.get_running_loop()
    child = _children.get(loop)
    if child is None:
        child = Child()
        _children[loop] = child
    return child


def _status(returncode):
    if returncode is None:
        return "still running"
    if returncode < 0:
        return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _stop_pid(pid, stdin, grace_seconds, reap=False):
    # EOF on stdin asks the child to close every session (containers) and exit. Close the pipe
    # itself: a transport's close() would wait for the loop, which this synchronous stop blocks.
    if stdin is not None:
        pipe = stdin.transport.get_extra_info("pipe")
        try:
            if pipe is not None:
                pipe.close()
            stdin.transport.abort()
        except Exception:  # noqa: BLE001 - the transport may belong to a closed loop
            pass
    # Wait without reaping (WNOWAIT): asyncio's child watcher reaps its own children and
    # reports their real status.
    flags = os.WEXITED | os.WNOHANG | (0 if reap else os.WNOWAIT)
    deadline = time.monotonic() + grace_seconds
    while True:
        try:
            if os.waitid(os.P_PID, pid, flags) is not None:
                return
        except ChildProcessError:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitid(os.P_PID, pid, flags & ~os.WNOHANG)
    except (ProcessLookupError, ChildProcessError):
        pass


@atexit.register
def _stop_all_children():
    for child in list(_children.values()):
        child.stop(grace_seconds=2.0)
    for pid in list(_live_pids):
        _stop_pid(pid, None, 0.5, reap=True)
