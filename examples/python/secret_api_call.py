#!/usr/bin/env python3
"""A sandboxed command calls an HTTPS API with a key that it never sees.

A local HTTPS server stands in for the API; its CA and certificate are made with the
`openssl` command at start, in a temporary directory. The sandboxed command runs
`curl -H "Authorization: Bearer $API_KEY" https://api.example.test:PORT/...`. Inside
the sandbox API_KEY holds a placeholder (ZEROBOX_SECRET_...); zerobox's proxy puts the
real key into the request on its way to the one approved host. The proxy is told to
trust the local CA (`upstream_ca`, i.e. --upstream-ca) and where api.example.test is
(`resolve`, i.e. --resolve).

    ZEROBOX_BIN=path/to/zerobox python3 examples/python/secret_api_call.py

Exits 0 when the server got the real key and the sandbox saw only the placeholder, 1
otherwise. Needs `openssl` and `curl`."""
import http.server
import os
import secrets as _random
import shlex
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import zerobox
except ImportError:  # not installed: use the SDK from this repository
    sys.path.insert(0, os.path.join(HERE, "..", "..", "sdks", "python"))
    import zerobox  # noqa: F401 (the import is the check)
from zerobox import Sandbox, SandboxError  # noqa: E402 (after the fallback above)

HOST = "api.example.test"
SKIPPED = 77


def make_certs(d: str) -> None:
    """A throw-away CA and a certificate for HOST signed by it."""
    def openssl(*args: str) -> None:
        p = subprocess.run(["openssl", *args], cwd=d, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise RuntimeError(f"openssl {args[0]} failed:\n{p.stdout.decode(errors='replace')}")

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
            "-subj", "/CN=zerobox example CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-new", *ec, "-keyout", "leaf.key", "-out", "leaf.csr",
            "-subj", f"/CN={HOST}")
    with open(os.path.join(d, "leaf.ext"), "w") as f:
        f.write(f"subjectAltName=DNS:{HOST}\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-set_serial", "0x" + _random.token_hex(8), "-days", "1",
            "-extfile", "leaf.ext", "-out", "leaf.crt")


class FakeApi:
    """An HTTPS server on 127.0.0.1 that answers GET /v1/greeting when the request
    carries the expected key, and keeps every Authorization header it was sent."""

    def __init__(self, certdir: str, api_key: str) -> None:
        seen: List[Optional[str]] = []
        self.seen = seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                auth = self.headers.get("Authorization")
                seen.append(auth)
                ok = auth == f"Bearer {api_key}"
                body = b'{"greeting": "hello, paying customer"}\n' if ok else b'{"error": "bad key"}\n'
                self.send_response(200 if ok else 401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(certdir, "leaf.crt"), os.path.join(certdir, "leaf.key"))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> int:
    for tool in ("openssl", "curl"):
        if not shutil.which(tool):
            print(f"skipped: this example needs '{tool}'", file=sys.stderr)
            return SKIPPED
    tmp = tempfile.mkdtemp(prefix="zerobox-secret-example-")
    api = None
    try:
        make_certs(tmp)
        api_key = "sk-live-" + _random.token_hex(16)  # in real life: from a vault
        api = FakeApi(tmp, api_key)
        url = f"https://{HOST}:{api.port}/v1/greeting"

        sandbox = Sandbox(
            secrets={"API_KEY": api_key},               # zerobox's env, not its argv
            secret_hosts={"API_KEY": [f"{HOST}:{api.port}"]},  # the only host that gets it
            resolve={HOST: "127.0.0.1"},                # where the proxy finds HOST
            upstream_ca=os.path.join(tmp, "ca.crt"),    # so the proxy trusts the fake API
            quiet=True,
        )
        script = ('echo "inside the sandbox: API_KEY=$API_KEY"; '
                  f'curl -sS --fail -H "Authorization: Bearer $API_KEY" {url}')
        print("zerobox command line:", shlex.join(sandbox.argv("sh", ["-c", script])))
        r = sandbox.run("sh", ["-c", script], timeout=60)

        print("sandbox output:\n    " + r.text().strip().replace("\n", "\n    "))
        print(f"the API server received: {api.seen}")
        failures = []
        if r.exit_code != 0:
            failures.append(f"curl failed (exit {r.exit_code}): "
                            f"{r.stderr.decode(errors='replace').strip()}")
        if api.seen != [f"Bearer {api_key}"]:
            failures.append("the server did not get exactly one request with the real key")
        if "inside the sandbox: API_KEY=ZEROBOX_SECRET_" not in r.text():
            failures.append("the sandbox did not see a ZEROBOX_SECRET_ placeholder")
        if api_key.encode() in r.stdout + r.stderr:
            failures.append("the real key showed up inside the sandbox")
        if failures:
            print("FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
            return 1
        print("ok: the API got the real key; the sandbox only ever saw the placeholder")
        return 0
    except (SandboxError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if api is not None:
            api.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
