"""Tests of the secrets options of zerobox.Sandbox / zerobox.aio.AsyncSandbox against
the real zerobox binary (set ZEROBOX_BIN): a plain-HTTP server on the host's
127.0.0.1 records the Authorization header it receives."""
import asyncio
import http.server
import os
import shutil
import sys
import tempfile
import threading
import unittest
import uuid
from typing import List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zerobox import Result, Sandbox  # noqa: E402
from zerobox.aio import AsyncSandbox  # noqa: E402


class _RecordingServer:
    """http.server in a thread, answering every GET with "reply\\n" and keeping the
    Authorization headers it saw."""

    def __init__(self) -> None:
        seen: List[Optional[str]] = []
        hosts: List[Optional[str]] = []
        self.seen, self.hosts = seen, hosts

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                seen.append(self.headers.get("Authorization"))
                hosts.append(self.headers.get("Host"))
                body = b"reply\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


class SecretBase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="zerobox-sdk-secret-", dir="/var/tmp")
        self.server = _RecordingServer()
        self.value = "sk-zbtest-" + uuid.uuid4().hex

    def tearDown(self) -> None:
        self.server.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def script(self) -> List[str]:
        port = self.server.port
        return ["-c", 'printenv TOKEN; curl -s -H "Authorization: Bearer $TOKEN" '
                      f'http://api.test:{port}/']

    def policy(self, **secret_kw) -> dict:
        return dict(secret_hosts={"TOKEN": [f"api.test:{self.server.port}"]},
                    resolve=["api.test:127.0.0.1"], **secret_kw)

    def check(self, r: Result) -> None:
        self.assertEqual(r.exit_code, 0, r.stderr)
        lines = r.stdout.decode().splitlines()
        self.assertEqual(len(lines), 2, r.stdout)
        self.assertTrue(lines[0].startswith("ZEROBOX_SECRET_"), lines[0])
        self.assertEqual(lines[1], "reply")  # the request went through the proxy
        self.assertEqual(self.server.seen, [f"Bearer {self.value}"])
        self.assertNotIn(self.value.encode(), r.stdout)
        self.assertNotIn(self.value.encode(), r.stderr)


class TestSecretArgv(unittest.TestCase):
    def test_value_never_in_argv(self) -> None:
        value = "sk-argv-" + uuid.uuid4().hex
        for cls in (Sandbox, AsyncSandbox):
            s = cls(secrets={"TOKEN": value}, secret_files={"FILEKEY": "/run/secrets/k"},
                    secret_hosts={"TOKEN": ["api.example.com", "*.example.org:8443"],
                                  "FILEKEY": "files.example.com"},
                    upstream_ca="/etc/ca.pem", host_env={"ZEROBOX_HOME": "/var/tmp/x"})
            argv = s.argv("sh", ["-c", "printenv TOKEN"])
            self.assertFalse([a for a in argv if value in a], argv)
            self.assertEqual(argv[1:argv.index("--")], [
                "--upstream-ca=/etc/ca.pem",
                "--secret", "TOKEN", "--secret-file", "FILEKEY=/run/secrets/k",
                "--secret-host", "TOKEN=api.example.com,*.example.org:8443",
                "--secret-host", "FILEKEY=files.example.com"])
            # the value travels in zerobox's own environment, next to host_env
            env = s._zerobox_env()
            assert env is not None
            self.assertEqual((env["TOKEN"], env["ZEROBOX_HOME"]), (value, "/var/tmp/x"))
            self.assertNotIn("TOKEN", s.host_env or {})

    def test_bad_names(self) -> None:
        for kw in ({"secrets": {"A=B": "v"}}, {"secrets": {"": "v"}},
                   {"secret_files": {"A=B": "/f"}}, {"secret_hosts": {"K": []}}):
            with self.assertRaises(ValueError, msg=kw):
                Sandbox(**kw)  # type: ignore[arg-type]


class TestSecretRun(SecretBase):
    def test_secret_reaches_approved_host_only(self) -> None:
        sb = Sandbox(**self.policy(secrets={"TOKEN": self.value}))
        r = sb.run("sh", self.script(), timeout=60)
        self.check(r)

    def test_unapproved_host_gets_placeholder(self) -> None:
        port = self.server.port
        sb = Sandbox(secrets={"TOKEN": self.value},
                     secret_hosts={"TOKEN": [f"api.test:{port}"]},
                     allow_net=[f"other.test:{port}"],
                     resolve={"api.test": "127.0.0.1", "other.test": "127.0.0.1"})
        script = "".join(
            f'curl -s -H "Authorization: Bearer $TOKEN" http://{h}:{port}/; '
            for h in ("other.test", "api.test"))
        r = sb.run("sh", ["-c", script], timeout=60)
        self.assertEqual((r.exit_code, r.stdout), (0, b"reply\nreply\n"), r.stderr)
        self.assertEqual(self.server.hosts, [f"other.test:{port}", f"api.test:{port}"])
        other, approved = self.server.seen
        assert other is not None
        self.assertTrue(other.startswith("Bearer ZEROBOX_SECRET_"), other)
        self.assertEqual(approved, f"Bearer {self.value}")

    def test_secret_file(self) -> None:
        path = os.path.join(self.tmp, "token")
        with open(path, "w") as f:
            f.write(self.value + "\n")  # one trailing newline is stripped
        os.chmod(path, 0o600)
        sb = Sandbox(**self.policy(secret_files={"TOKEN": path}))
        r = sb.run("sh", self.script(), timeout=60)
        self.check(r)

    def test_async(self) -> None:
        sb = AsyncSandbox(**self.policy(secrets={"TOKEN": self.value}))
        r = asyncio.run(sb.run("sh", self.script(), timeout=60))
        self.check(r)


if __name__ == "__main__":
    unittest.main()
