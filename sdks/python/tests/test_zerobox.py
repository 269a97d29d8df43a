"""Tests against the real zerobox binary (set ZEROBOX_BIN).

Temporary directories live under /var/tmp: /tmp is scratch inside the sandbox."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import zerobox  # noqa: E402
from zerobox import SandboxError, SandboxTimeout, Sandbox, snapshots  # noqa: E402
from zerobox.sandbox import _list_flag  # noqa: E402

BASE = "/var/tmp"


class Base(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="zerobox-sdk-", dir=BASE)
        self.home = os.path.join(self.tmp, "store")
        os.mkdir(self.home)
        self.henv = {"ZEROBOX_HOME": self.home}

    def tearDown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sb(self, **kw) -> Sandbox:
        kw.setdefault("host_env", self.henv)
        return Sandbox(**kw)


class TestArgv(unittest.TestCase):
    def test_flags(self) -> None:
        s = Sandbox(allow_write=True, allow_net=["a.com", "b.com"], allow_env=True,
                    deny_env=["X"], env={"A": "1", "B": "x=y"}, cwd="/usr",
                    resolve={"h.test": "127.0.0.1"}, snapshot="review",
                    snapshot_exclude=["*.log"], no_protect=True)
        self.assertEqual(s.args, [
            "--allow-write", "--allow-net=a.com,b.com", "--allow-env", "--deny-env=X",
            "--env", "A=1", "--env", "B=x=y", "--resolve", "h.test:127.0.0.1",
            "--review", "--snapshot-exclude=*.log", "--no-protect", "-C", "/usr"])

    def test_comma_escape(self) -> None:
        self.assertEqual(_list_flag("allow-read", ["/a,b", "/c"]), ["--allow-read=/a\\,b,/c"])

    def test_missing_binary(self) -> None:
        with self.assertRaises(zerobox.BinaryNotFoundError) as cm:  # a SandboxError
            Sandbox(binary="/nonexistent/zerobox").run("true")
        self.assertIn("/nonexistent/zerobox", str(cm.exception))
        old = os.environ.get("ZEROBOX_BIN"), os.environ.get("PATH")
        try:
            os.environ["ZEROBOX_BIN"] = "/nonexistent/zb"
            os.environ["PATH"] = "/nonexistent-dir"
            with self.assertRaises(SandboxError) as cm:
                zerobox.find_binary()
            self.assertIn("/nonexistent/zb", str(cm.exception))
            self.assertIn("/nonexistent-dir", str(cm.exception))
        finally:
            for k, v in zip(("ZEROBOX_BIN", "PATH"), old):
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class TestRun(Base):
    def test_exit_code(self) -> None:
        r = self.sb().run("sh", ["-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual((r.exit_code, r.signal), (3, None))
        self.assertEqual(r.stdout, b"out\n")
        self.assertEqual(r.text(), "out\n")
        self.assertIn(b"err\n", r.stderr)
        self.assertIsNone(r.session_id)

    def test_signal(self) -> None:
        r = self.sb().run("sh", ["-c", "kill -TERM $$"])
        self.assertEqual((r.exit_code, r.signal), (None, 15))

    def test_setup_error_vs_125(self) -> None:
        with self.assertRaises(SandboxError) as cm:
            self.sb(allow_write=["/nonexistent/x/y"]).run("true")
        self.assertIn("/nonexistent/x/y", str(cm.exception))
        r = self.sb().run("sh", ["-c", "exit 125"])
        self.assertEqual(r.exit_code, 125)

    def test_strict_runs_where_every_layer_is_available(self) -> None:
        r = self.sb(strict=True).run("true")
        self.assertEqual(r.exit_code, 0, r.stderr)

    def test_not_found_is_127(self) -> None:
        r = self.sb().run("no-such-command-zerobox-sdk")
        self.assertEqual(r.exit_code, 127)

    def test_input_and_json(self) -> None:
        r = self.sb().run("cat", input=b'{"a": [1, 2]}')
        self.assertEqual(r.json(), {"a": [1, 2]})

    def test_big_input(self) -> None:
        data = os.urandom(5 * 1024 * 1024)
        r = self.sb().run("cat", input=data, timeout=120)
        self.assertEqual((r.exit_code, r.stdout), (0, data))
        r = self.sb().run("true", input=data, timeout=120)  # never reads it: no EPIPE error
        self.assertEqual(r.exit_code, 0)

    def test_big_output_both_streams(self) -> None:
        n = 10 * 1024 * 1024
        script = f"head -c {n} /dev/zero & head -c {n} /dev/zero >&2; wait"
        r = self.sb().run("sh", ["-c", script], timeout=120)
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(len(r.stdout), n)
        self.assertGreaterEqual(len(r.stderr), n)

    def test_env(self) -> None:
        r = self.sb(env={"ZB_SDK_VAR": "hello, world"}).run("sh", ["-c", 'printf %s "$ZB_SDK_VAR"'])
        self.assertEqual(r.stdout, b"hello, world")
        os.environ["ZB_SDK_INHERIT"] = "yes"
        try:
            r = self.sb().run("sh", ["-c", 'printf %s "${ZB_SDK_INHERIT-unset}"'])
            self.assertEqual(r.stdout, b"unset")
            r = self.sb(allow_env=["ZB_SDK_INHERIT"]).run("sh", ["-c", 'printf %s "$ZB_SDK_INHERIT"'])
            self.assertEqual(r.stdout, b"yes")
        finally:
            del os.environ["ZB_SDK_INHERIT"]

    def test_write_policy(self) -> None:
        target = os.path.join(self.tmp, "out.txt")
        # /var/tmp is scratch inside the sandbox: the write "succeeds" but is thrown away
        r = self.sb().run("sh", ["-c", f"echo x > {target}"])
        self.assertFalse(os.path.exists(target))
        r = self.sb(allow_read=["/usr"]).run("sh", ["-c", "echo x > /usr/zerobox-sdk-test"])
        self.assertNotEqual(r.exit_code, 0)
        r = self.sb(allow_write=[self.tmp]).run("sh", ["-c", f"echo x > {target}"])
        self.assertEqual(r.exit_code, 0, r.stderr)
        with open(target) as f:
            self.assertEqual(f.read(), "x\n")

    def test_comma_path(self) -> None:
        d = os.path.join(self.tmp, "a,b")
        os.mkdir(d)
        r = self.sb(allow_write=[d]).run("sh", ["-c", 'echo y > "$1/f"', "sh", d])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(d, "f")))

    def test_cwd(self) -> None:
        r = self.sb(cwd="/usr").run("pwd")
        self.assertEqual(r.stdout, b"/usr\n")

    def _pgrep(self, marker: str) -> bytes:
        p = subprocess.run(["pgrep", "-f", marker], stdout=subprocess.PIPE)
        return p.stdout if p.returncode == 0 else b""

    def _wait_gone(self, marker: str) -> None:
        deadline = time.monotonic() + 5
        while self._pgrep(marker):
            if time.monotonic() > deadline:
                self.fail(f"processes survived: {self._pgrep(marker)!r}")
            time.sleep(0.1)

    def test_timeout_kills_grandchild(self) -> None:
        # a copy of sleep under a unique name, so pgrep -f sees the sleeps themselves
        marker = "zbsdk" + uuid.uuid4().hex[:12]
        sleep = os.path.join(self.tmp, marker)
        shutil.copy(shutil.which("sleep"), sleep)
        script = f"{sleep} 100 & {sleep} 100"

        # the marker is visible while the sandbox runs (so the check below is not vacuous)
        p = self.sb().spawn("sh", ["-c", script])
        deadline = time.monotonic() + 10
        while self._pgrep(marker).count(b"\n") < 2:
            self.assertLess(time.monotonic(), deadline, "sleeps never showed up")
            time.sleep(0.05)
        p.kill()
        with self.assertRaises(zerobox.SandboxCancelled):  # a SandboxError
            p.wait(timeout=30)
        self._wait_gone(marker)

        t0 = time.monotonic()
        with self.assertRaises(TimeoutError) as cm:
            self.sb().run("sh", ["-c", script], timeout=1.5)
        self.assertIsInstance(cm.exception, SandboxTimeout)
        self.assertLess(time.monotonic() - t0, 15)
        self._wait_gone(marker)

    def test_interrupt_kills_tree(self) -> None:
        # Ctrl-C never reaches zerobox (it runs in a process group of its own): run()
        # and wait() must kill it when an exception interrupts them.
        marker = "zbsdk" + uuid.uuid4().hex[:12]
        sleep = os.path.join(self.tmp, marker)
        shutil.copy(shutil.which("sleep"), sleep)

        def interrupt(signum, frame):
            raise KeyboardInterrupt

        old = signal.signal(signal.SIGALRM, interrupt)
        try:
            for how in ("run", "wait"):
                signal.setitimer(signal.ITIMER_REAL, 1.0)
                with self.assertRaises(KeyboardInterrupt):
                    if how == "run":
                        self.sb().run("sh", ["-c", f"{sleep} 100 & {sleep} 100"])
                    else:
                        self.sb().spawn("sh", ["-c", f"{sleep} 100 & {sleep} 100"]).wait()
                self._wait_gone(marker)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)

    def test_concurrent(self) -> None:
        results = [None] * 4
        errors = []

        def work(i: int) -> None:
            try:
                results[i] = self.sb().run("sh", ["-c", f"sleep 0.3; echo {i}; exit {i}"], timeout=60)
            except Exception as e:  # pragma: no cover
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for i, r in enumerate(results):
            self.assertEqual(r.exit_code, i)
            self.assertEqual(r.stdout, f"{i}\n".encode())


class TestSpawn(Base):
    def test_streaming(self) -> None:
        flag = os.path.join(self.tmp, "go")
        p = self.sb(allow_write=[self.tmp]).spawn(
            "sh", ["-c", f"echo first; while [ ! -e {flag} ]; do sleep 0.05; done; echo second"])
        line = p.stdout.readline()
        self.assertEqual(line, b"first\n")
        self.assertIsNone(p.poll())  # still running: it waits for the flag
        open(flag, "w").close()
        r = p.wait(timeout=30)
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout, b"second\n")

    def test_kill(self) -> None:
        p = self.sb().spawn("sleep", ["100"])
        time.sleep(0.3)
        p.kill()
        with self.assertRaises(zerobox.SandboxCancelled) as cm:  # a SandboxError
            p.wait(timeout=30)
        self.assertEqual(cm.exception.kind, "cancelled")


class TestSnapshots(Base):
    def test_round_trip(self) -> None:
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        f = os.path.join(work, "file.txt")
        with open(f, "w") as fh:
            fh.write("before\n")
        sb = self.sb(allow_write=[work], snapshot="review", snapshot_paths=[work], cwd=work)
        r = sb.run("sh", ["-c", "echo after > file.txt"])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertIsNotNone(r.session_id)
        self.assertEqual(r.session_state, "pending")
        sid = r.session_id
        with open(f) as fh:
            self.assertEqual(fh.read(), "before\n")  # review: nothing applied yet

        d = snapshots.diff(sid, env=self.henv)
        paths = {c["path"]: c for c in d["changes"]}
        self.assertIn(f, paths)
        self.assertEqual(paths[f]["kind"], "modified")
        self.assertIn(sid, [s.get("id") for s in snapshots.list(env=self.henv)])
        self.assertEqual(snapshots.show(sid, env=self.henv).get("state"), "pending")
        self.assertEqual(r.session, zerobox.Session(sid, "pending", 1))
        rec = snapshots.show(sid, env=self.henv)
        self.assertIsInstance(rec, zerobox.SessionRecord)
        self.assertEqual((rec.id, rec.state, rec.mode, rec.changes, rec.cwd, rec.exit_code),
                         (sid, "pending", "review", 1, work, 0))
        self.assertEqual([x.id for x in snapshots.list(env=self.henv)], [sid])

        snapshots.accept(sid, env=self.henv)
        with open(f) as fh:
            self.assertEqual(fh.read(), "after\n")
        snapshots.restore(sid, env=self.henv)
        with open(f) as fh:
            self.assertEqual(fh.read(), "before\n")
        with self.assertRaises(SandboxError) as cm:
            snapshots.restore(sid, env=self.henv)  # restoring twice is refused
        self.assertIn("zerobox", str(cm.exception))

    def test_discard_and_unknown(self) -> None:
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        r = self.sb(allow_write=[work], snapshot="review", snapshot_paths=[work]).run(
            "sh", ["-c", f"echo new > {work}/n"])
        snapshots.discard(r.session_id, env=self.henv)
        self.assertFalse(os.path.exists(os.path.join(work, "n")))
        with self.assertRaises(zerobox.SnapshotFailedError) as cm:
            snapshots.show("ffffffffffffffff", env=self.henv)
        self.assertEqual(cm.exception.kind, "snapshot_failed")


if __name__ == "__main__":
    unittest.main()
