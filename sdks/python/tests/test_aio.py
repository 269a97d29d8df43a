"""Tests of zerobox.aio (the asyncio API) against the real zerobox binary (set
ZEROBOX_BIN).

Temporary directories live under /var/tmp: /tmp is scratch inside the sandbox."""
import asyncio
import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zerobox import SandboxError, SandboxTimeout  # noqa: E402
from zerobox.aio import AsyncSandbox, snapshots  # noqa: E402

BASE = "/var/tmp"


def _pgrep(marker: str, exact: bool = False) -> bytes:
    """Pids of the processes whose command line contains marker, or (exact) whose
    name is marker: only the sleeps themselves, not zerobox, whose argv names them."""
    p = subprocess.run(["pgrep", "-x" if exact else "-f", marker], stdout=subprocess.PIPE)
    return p.stdout if p.returncode == 0 else b""


class AsyncBase(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="zerobox-sdk-aio-", dir=BASE)
        self.home = os.path.join(self.tmp, "store")
        os.mkdir(self.home)
        self.henv = {"ZEROBOX_HOME": self.home}

    def tearDown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sb(self, **kw) -> AsyncSandbox:
        kw.setdefault("host_env", self.henv)
        return AsyncSandbox(**kw)

    def sleeper(self) -> str:
        """A copy of sleep under a unique name (15 characters at most, the length of a
        process name), so that pgrep sees the sleeps."""
        marker = "zb" + uuid.uuid4().hex[:12]
        shutil.copy(shutil.which("sleep"), os.path.join(self.tmp, marker))
        return marker

    async def wait_seen(self, marker: str, count: int) -> None:
        deadline = time.monotonic() + 10
        while _pgrep(marker, exact=True).count(b"\n") < count:
            self.assertLess(time.monotonic(), deadline, "the sleeps never showed up")
            await asyncio.sleep(0.05)

    async def wait_gone(self, marker: str) -> None:
        deadline = time.monotonic() + 5
        while _pgrep(marker):
            if time.monotonic() > deadline:
                self.fail(f"processes survived: {_pgrep(marker)!r}")
            await asyncio.sleep(0.1)


class TestAsyncRun(AsyncBase):
    async def test_exit_code(self) -> None:
        r = await self.sb().run("sh", ["-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual((r.exit_code, r.signal), (3, None))
        self.assertEqual(r.stdout, b"out\n")
        self.assertIn(b"err\n", r.stderr)
        self.assertIsNotNone(r.pid)
        self.assertIsNone(r.session_id)

    async def test_signal(self) -> None:
        r = await self.sb().run("sh", ["-c", "kill -TERM $$"])
        self.assertEqual((r.exit_code, r.signal), (None, 15))

    async def test_setup_error_usage_error_and_125(self) -> None:
        with self.assertRaises(SandboxError) as cm:
            await self.sb(allow_write=["/nonexistent/x/y"]).run("true")
        self.assertIn("/nonexistent/x/y", str(cm.exception))
        self.assertEqual(cm.exception.exit_code, 125)
        # a malformed HOST:IP is a usage error: exit 2, no event at all
        with self.assertRaises(SandboxError) as cm:
            await self.sb(resolve=["no-ip-here"]).run("true")
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertIn(b"no-ip-here", cm.exception.stderr)
        r = await self.sb().run("sh", ["-c", "exit 125"])
        self.assertEqual(r.exit_code, 125)
        r = await self.sb().run("no-such-command-zerobox-sdk")
        self.assertEqual(r.exit_code, 127)

    async def test_input_and_big_output(self) -> None:
        r = await self.sb().run("cat", input=b'{"a": [1, 2]}')
        self.assertEqual(r.json(), {"a": [1, 2]})
        data = os.urandom(5 * 1024 * 1024)
        r = await self.sb().run("cat", input=data, timeout=120)
        self.assertEqual((r.exit_code, r.stdout), (0, data))
        # A command that never reads its input: the broken pipe is no error, and no
        # asyncio future is left holding an unretrieved BrokenPipeError.
        errors: list = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: errors.append(ctx))
        for _ in range(3):
            r = await self.sb().run("true", input=data, timeout=120)
            self.assertEqual(r.exit_code, 0)
        gc.collect()
        await asyncio.sleep(0)
        self.assertEqual(errors, [])
        n = 10 * 1024 * 1024
        script = f"head -c {n} /dev/zero & head -c {n} /dev/zero >&2; wait"
        r = await self.sb().run("sh", ["-c", script], timeout=120)
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(len(r.stdout), n)
        self.assertGreaterEqual(len(r.stderr), n)

    async def test_env_and_write_policy(self) -> None:
        target = os.path.join(self.tmp, "out.txt")
        r = await self.sb(env={"V": "a,b"}).run("sh", ["-c", f'printf %s "$V" > {target}'])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertFalse(os.path.exists(target))  # /var/tmp is scratch unless allowed
        r = await self.sb(env={"V": "a,b"}, allow_write=[self.tmp]).run(
            "sh", ["-c", f'printf %s "$V" > {target}'])
        self.assertEqual(r.exit_code, 0, r.stderr)
        with open(target) as f:
            self.assertEqual(f.read(), "a,b")

    async def test_timeout_kills_tree(self) -> None:
        marker = self.sleeper()
        script = f"echo started; {self.tmp}/{marker} 100 & {self.tmp}/{marker} 100"
        t0 = time.monotonic()
        with self.assertRaises(TimeoutError) as cm:
            await self.sb().run("sh", ["-c", script], timeout=1.5)
        self.assertIsInstance(cm.exception, SandboxTimeout)
        self.assertEqual(cm.exception.stdout, b"started\n")  # output read so far is kept
        self.assertLess(time.monotonic() - t0, 15)
        await self.wait_gone(marker)

    async def test_cancellation_kills_tree(self) -> None:
        marker = self.sleeper()
        script = f"{self.tmp}/{marker} 100 & {self.tmp}/{marker} 100"
        task = asyncio.ensure_future(self.sb().run("sh", ["-c", script]))
        await self.wait_seen(marker, 2)  # so that the check below is not vacuous
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        await self.wait_gone(marker)

        # the same through asyncio.wait_for, the usual way to bound a call
        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(self.sb().run("sh", ["-c", script]), 1.0)
        await self.wait_gone(marker)

    async def test_concurrent(self) -> None:
        async def one(i: int):
            return await self.sb().run("sh", ["-c", f"sleep 0.5; echo {i}; exit {i}"], timeout=60)

        t0 = time.monotonic()
        results = await asyncio.gather(*(one(i) for i in range(4)))
        elapsed = time.monotonic() - t0
        for i, r in enumerate(results):
            self.assertEqual(r.exit_code, i)
            self.assertEqual(r.stdout, f"{i}\n".encode())
        self.assertLess(elapsed, 1.9, "the four runs did not overlap")


class TestAsyncSpawn(AsyncBase):
    async def test_streaming(self) -> None:
        flag = os.path.join(self.tmp, "go")
        p = await self.sb(allow_write=[self.tmp]).spawn(
            "sh", ["-c", f"echo first; while [ ! -e {flag} ]; do sleep 0.05; done; echo second"])
        assert p.stdout is not None
        line = await asyncio.wait_for(p.stdout.readline(), 30)
        self.assertEqual(line, b"first\n")
        self.assertIsNone(p.returncode)  # still running: it waits for the flag
        open(flag, "w").close()
        r = await p.wait(timeout=30)
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout, b"second\n")
        self.assertEqual(p.returncode, 0)

    async def test_stdin(self) -> None:
        p = await self.sb().spawn("sh", ["-c", "read a; echo got $a; cat"], stdin=True)
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(b"one\n")
        await p.stdin.drain()
        self.assertEqual(await asyncio.wait_for(p.stdout.readline(), 30), b"got one\n")
        p.stdin.write(b"rest")
        r = await p.wait(timeout=30)  # closes stdin, so cat ends
        self.assertEqual((r.exit_code, r.stdout), (0, b"rest"))

    async def test_send_signal(self) -> None:
        marker = self.sleeper()
        p = await self.sb().spawn("sh", ["-c", f"echo ready; exec {self.tmp}/{marker} 100"])
        assert p.stdout is not None
        # wait for the command itself: zerobox drops a SIGTERM that comes during setup
        self.assertEqual(await asyncio.wait_for(p.stdout.readline(), 30), b"ready\n")
        await self.wait_seen(marker, 1)
        p.send_signal(signal.SIGTERM)  # zerobox forwards it to the command
        r = await p.wait(timeout=30)
        self.assertEqual((r.exit_code, r.signal), (None, signal.SIGTERM))

    async def test_kill_and_context(self) -> None:
        marker = self.sleeper()
        p = await self.sb().spawn(f"{self.tmp}/{marker}", ["100"])
        await self.wait_seen(marker, 1)
        p.kill()
        with self.assertRaises(SandboxError) as cm:
            await p.wait(timeout=30)
        self.assertIn("signal 9", str(cm.exception))
        await self.wait_gone(marker)

        async with await self.sb().spawn(f"{self.tmp}/{marker}", ["100"]) as p2:
            await self.wait_seen(marker, 1)
        self.assertIsNotNone(p2.returncode)  # reaped on the way out
        await self.wait_gone(marker)


class TestAsyncSnapshots(AsyncBase):
    async def test_round_trip(self) -> None:
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        f = os.path.join(work, "file.txt")
        with open(f, "w") as fh:
            fh.write("before\n")
        sb = self.sb(allow_write=[work], snapshot="review", snapshot_paths=[work], cwd=work)
        r = await sb.run("sh", ["-c", "echo after > file.txt; echo new > added.txt"])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual((r.session_state, r.session_changes), ("pending", 2))
        sid = r.session_id
        assert sid is not None

        d = await snapshots.diff(sid, env=self.henv)
        kinds = {c["path"]: c["kind"] for c in d["changes"]}
        self.assertEqual(kinds, {f: "modified", os.path.join(work, "added.txt"): "added"})
        self.assertIn("+after", await snapshots.diff_text(sid, [f], env=self.henv))
        self.assertIn(sid, [s.get("id") for s in await snapshots.list(env=self.henv)])
        self.assertEqual((await snapshots.show(sid, env=self.henv)).get("state"), "pending")

        await snapshots.accept(sid, env=self.henv)
        with open(f) as fh:
            self.assertEqual(fh.read(), "after\n")
        await snapshots.restore(sid, env=self.henv)
        with open(f) as fh:
            self.assertEqual(fh.read(), "before\n")
        self.assertFalse(os.path.exists(os.path.join(work, "added.txt")))
        with self.assertRaises(SandboxError):
            await snapshots.restore(sid, env=self.henv)  # restoring twice is refused

    async def test_discard_and_unknown(self) -> None:
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        r = await self.sb(allow_write=[work], snapshot="review", snapshot_paths=[work]).run(
            "sh", ["-c", f"echo new > {work}/n"])
        assert r.session_id is not None
        await snapshots.discard(r.session_id, env=self.henv)
        self.assertFalse(os.path.exists(os.path.join(work, "n")))
        self.assertEqual((await snapshots.show(r.session_id, env=self.henv))["state"], "discarded")
        with self.assertRaises(SandboxError) as cm:
            await snapshots.show("ffffffffffffffff", env=self.henv)
        self.assertNotEqual(cm.exception.exit_code, 0)


if __name__ == "__main__":
    unittest.main()
