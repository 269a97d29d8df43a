#!/usr/bin/env python3
"""bench/net_helpers.py - servers and clients for bench/net.sh (stdlib only).

PROXY arguments: "-" = no proxy (connect directly to 127.0.0.1:PORT); a number N =
127.0.0.1:N without authentication (zerobox); "env" = the URL in $HTTP_PROXY (or
$http_proxy), with Basic proxy authentication when it carries user:password (srt).

  http-server PORT FILE   threaded HTTP/1.1 keep-alive server on 127.0.0.1:PORT.
                          GET /big   -> FILE via socket.sendfile (Content-Length, then close)
                          GET other  -> 2-byte body "ok", keep-alive
  https-server PORT FILE CERT KEY TOKEN
                          the same over TLS (CERT/KEY: PEM leaf + key; /big sent in 1 MiB
                          writes from an mmap). Every request must carry
                          "Authorization: Bearer TOKEN", else 401 and the connection closes;
                          the rejected requests are counted on stderr ("rejected N")
  echo-server PORT        asyncio echo server on 127.0.0.1:PORT (backlog 4096)
  rps HOST PORT N [PROXY] N sequential GETs of /small over ONE keep-alive connection, either
                          directly to 127.0.0.1:PORT or absolute-form via PROXY.
                          prints "<req/s> <ok>"
  https-rps HOST PORT N PROXY CAFILE AUTH_ENV
                          TLS (SNI and verification for HOST) over a direct connection to
                          127.0.0.1:PORT or a CONNECT tunnel through PROXY. CAFILE "-" = the
                          default trust store (which honours SSL_CERT_FILE). Every request
                          sends "Authorization: Bearer $AUTH_ENV". Connection 1: the first
                          request is timed from connect() to the end of its response
                          (proxy CONNECT + TLS handshake + request), then N sequential GETs of
                          /small on it are timed; then connection 2 (a new connection,
                          same process) times its first request the same way.
                          prints "<req/s> <ok> <first_ms> <second_ms>"
  tunnels HOST PORT N PROXY [HOLD_S]
                          N concurrent CONNECT tunnels through PROXY to HOST:PORT; all tunnels
                          are established (held open together, HOLD_S more seconds if given,
                          for memory sampling), then each sends 1 KiB, checks the echo and
                          closes. prints "<ok> <N> <wall_s> <established> <up_s> <errors>
                          <kind:count,...>" (wall_s without the hold; up_s: until every CONNECT
                          was answered; gives up after $TUNNEL_TIMEOUT s, default 150)
  tree-mem PID INTERVAL_S COMM[,COMM...]
                          samples the process tree under PID until PID exits: at every sample
                          the sum of VmRSS and of Pss (smaps_rollup) over the processes whose
                          comm is in the list (PID itself included when it matches; "self" =
                          PID alone). prints
                          "<peak_pss_kB> <rss_kB_at_that_sample> <procs_at_that_sample>
                           <max_procs> <samples> <hwm_kB of PID>"
  summary FILE...         median (min - max) of each key over bench/net.sh's results-*.tsv
"""
import asyncio
import base64
import mmap
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse


def read_head(sock, buf):
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def parse_proxy(spec):
    """-> None (direct) or (host, port, extra header lines as bytes)"""
    if spec in (None, "-"):
        return None
    if spec.isdigit():
        return "127.0.0.1", int(spec), b""
    url = spec
    if spec == "env":
        url = os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy") or ""
        if not url:
            sys.exit("PROXY=env but HTTP_PROXY is not set")
    u = urllib.parse.urlsplit(url)
    host = u.hostname or "127.0.0.1"
    # resolve once, IPv4 first (srt's in-sandbox listener is IPv4 only)
    infos = socket.getaddrinfo(host, u.port or 80, type=socket.SOCK_STREAM)
    infos.sort(key=lambda i: i[0] != socket.AF_INET)
    extra = b""
    if u.username is not None:
        cred = f"{urllib.parse.unquote(u.username)}:{urllib.parse.unquote(u.password or '')}"
        extra = b"Proxy-Authorization: Basic " + base64.b64encode(cred.encode()) + b"\r\n"
    return infos[0][4][0], u.port or 80, extra


def read_body(sock, head, buf):
    """body framed by Content-Length or chunked transfer coding -> (body, rest of buf)"""
    clen = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        k = k.strip().lower()
        if k == b"content-length":
            clen = int(v)
        elif k == b"transfer-encoding" and b"chunked" in v.lower():
            chunked = True

    def fill(need):
        nonlocal buf
        while len(buf) < need:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed inside a response body")
            buf += chunk

    if not chunked:
        fill(clen)
        return buf[:clen], buf[clen:]
    body = b""
    while True:
        while b"\r\n" not in buf:
            fill(len(buf) + 1)
        line, _, buf = buf.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        if size == 0:                      # last chunk; no trailers expected
            fill(2)
            return body, buf[2:]
        fill(size + 2)
        body += buf[:size]
        buf = buf[size + 2:]


def http_server(port, path):
    size = os.path.getsize(path)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1024)

    def handle(c):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        try:
            while True:
                head, buf = read_head(c, buf)
                if head is None:
                    return
                target = head.split(b"\r\n", 1)[0].split(b" ")[1]
                if target.endswith(b"/big"):
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % size)
                    with open(path, "rb") as f:
                        c.sendfile(f)
                    return
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                          b"Content-Length: 2\r\n\r\nok")
        except OSError:
            pass
        finally:
            c.close()

    print("ready", flush=True)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


def https_server(port, path, cert, key, token):
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    want = b"bearer " + token.encode()
    rejected = [0]
    lock = threading.Lock()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1024)

    def handle(raw):
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = None
        buf = b""
        try:
            c = ctx.wrap_socket(raw, server_side=True)
            while True:
                head, buf = read_head(c, buf)
                if head is None:
                    return
                lines = head.split(b"\r\n")
                target = lines[0].split(b" ")[1]
                auth = b""
                for line in lines[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"authorization":
                        auth = v.strip()
                if auth.lower() != want:
                    with lock:
                        rejected[0] += 1
                        print(f"rejected {rejected[0]} (Authorization: {auth[:60]!r})",
                              file=sys.stderr, flush=True)
                    c.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 8\r\n"
                              b"Connection: close\r\n\r\nbad-auth")
                    return
                if target.endswith(b"/big"):
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % size)
                    mv = memoryview(data)
                    for off in range(0, size, 1 << 20):
                        c.sendall(mv[off:off + (1 << 20)])
                    return
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                          b"Content-Length: 2\r\n\r\nok")
        except (OSError, ssl.SSLError, IndexError):
            pass
        finally:
            try:
                (c or raw).close()
            except OSError:
                pass

    print("ready", flush=True)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


async def echo_main(port):
    async def handle(r, w):
        try:
            while True:
                d = await r.read(65536)
                if not d:
                    break
                w.write(d)
                await w.drain()
        except OSError:
            pass
        finally:
            w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()


def rps(host, port, n, proxy=None):
    px = parse_proxy(proxy)
    s = socket.create_connection(px[:2] if px else ("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    target = f"http://{host}:{port}/small" if px else "/small"
    req = (f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: bench\r\n".encode()
           + (px[2] if px else b"") + b"\r\n")
    buf = b""
    ok = 0
    t0 = time.perf_counter()
    for _ in range(n):
        s.sendall(req)
        head, buf = read_head(s, buf)
        if head is None:
            break
        body, buf = read_body(s, head, buf)
        if head.startswith(b"HTTP/1.1 200") and body == b"ok":
            ok += 1
    dt = time.perf_counter() - t0
    print(f"{ok / dt:.0f} {ok}")


def https_connect(host, port, px, ctx):
    """TCP (+ CONNECT through the proxy) + TLS handshake -> SSLSocket"""
    s = socket.create_connection(px[:2] if px else ("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if px:
        s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
                  + px[2] + b"\r\n")
        head, rest = read_head(s, b"")
        if head is None or b" 200" not in head.split(b"\r\n", 1)[0]:
            sys.exit(f"CONNECT {host}:{port} failed: {head!r}")
        if rest:
            sys.exit("unexpected bytes after the CONNECT response")
    return ctx.wrap_socket(s, server_hostname=host)


def https_rps(host, port, n, proxy, cafile, auth_env):
    px = parse_proxy(proxy)
    ctx = ssl.create_default_context(cafile=None if cafile == "-" else cafile)
    token = os.environ.get(auth_env)
    if token is None:
        sys.exit(f"${auth_env} is not set")
    req = (f"GET /small HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: bench\r\n"
           f"Authorization: Bearer {token}\r\n\r\n").encode()

    def one(s, buf):
        s.sendall(req)
        head, buf = read_head(s, buf)
        if head is None:
            return False, buf
        body, buf = read_body(s, head, buf)
        return head.startswith(b"HTTP/1.1 200") and body == b"ok", buf

    def first():
        t = time.perf_counter()
        s = https_connect(host, port, px, ctx)
        ok, buf = one(s, b"")
        dt = (time.perf_counter() - t) * 1e3
        if not ok:
            sys.exit(f"first request to {host}:{port} was refused (wrong Authorization?)")
        return s, buf, dt

    s, buf, first_ms = first()
    ok = 0
    t0 = time.perf_counter()
    for _ in range(n):
        good, buf = one(s, buf)
        ok += good
        if not good:
            break
    dt = time.perf_counter() - t0
    s.close()
    s2, _, second_ms = first()
    s2.close()
    print(f"{ok / dt if n else 0:.0f} {ok} {first_ms:.2f} {second_ms:.2f}")


async def tunnels(host, port, n, proxy, hold=0.0):
    px = parse_proxy(proxy)
    limit = float(os.environ.get("TUNNEL_TIMEOUT", "150"))
    payload = os.urandom(1024)
    established = ok = 0
    all_up = asyncio.Event()
    t_up = [None]
    pending = [n]
    errors = []

    def done_connecting():
        pending[0] -= 1
        if pending[0] == 0 and t_up[0] is None:
            t_up[0] = time.perf_counter()
            all_up.set()

    async def one():
        nonlocal established, ok
        w = None
        try:
            try:
                r, w = await asyncio.open_connection(px[0], px[1])
                w.write(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
                        + px[2] + b"\r\n")
                head = await r.readuntil(b"\r\n\r\n")
                if b" 200" not in head.split(b"\r\n", 1)[0]:
                    raise RuntimeError(head.split(b"\r\n", 1)[0].decode(errors="replace"))
                established += 1
            finally:
                done_connecting()
            await all_up.wait()
            if hold:
                await asyncio.sleep(hold)
            w.write(payload)
            got = await r.readexactly(len(payload))
            ok += got == payload
        except Exception as e:  # noqa: BLE001 - report, don't die
            errors.append(type(e).__name__)
        finally:
            if w is not None:
                w.close()

    t0 = time.perf_counter()
    tasks = [asyncio.ensure_future(one()) for _ in range(n)]
    done, late = await asyncio.wait(tasks, timeout=limit)
    for t in late:
        t.cancel()
    if late:
        errors += [f"unfinished after {limit:g}s"] * len(late)
        await asyncio.gather(*late, return_exceptions=True)
    # the hold happened only if every CONNECT was answered before the time limit
    held = hold if t_up[0] is not None and t_up[0] - t0 < limit and established else 0
    dt = time.perf_counter() - t0 - held
    up = f"{t_up[0] - t0:.3f}" if held or (t_up[0] and not late) else "-"
    kinds = {}
    for e in errors:
        kinds[e] = kinds.get(e, 0) + 1
    what = ",".join(f"{k}:{v}" for k, v in kinds.items()).replace(" ", "_") or "-"
    print(f"{ok} {n} {dt:.3f} {established} {up} {len(errors)} {what}")


def tree_mem(pid, interval, comms):
    only_root = comms == "self"
    comms = set(comms.split(","))

    def kids(p):
        out = []
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as fh:
                    out += fh.read().split()
        except OSError:
            pass
        return out

    def field(path, key):
        try:
            with open(path) as fh:
                for line in fh:
                    if line.startswith(key):
                        return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    best = (0, 0, 0)
    max_procs = samples = hwm = 0
    while os.path.exists(f"/proc/{pid}/status"):
        hwm = max(hwm, field(f"/proc/{pid}/status", "VmHWM:"))
        pss = rss = procs = 0
        todo = [str(pid)]
        while todo:
            p = todo.pop()
            if not only_root:
                todo += kids(p)
            try:
                with open(f"/proc/{p}/comm") as fh:
                    comm = fh.read().strip()
            except OSError:
                continue
            if only_root or comm in comms:
                procs += 1
                pss += field(f"/proc/{p}/smaps_rollup", "Pss:")
                rss += field(f"/proc/{p}/status", "VmRSS:")
        samples += 1
        max_procs = max(max_procs, procs)
        if pss > best[0]:
            best = (pss, rss, procs)
        time.sleep(interval)
    print(f"{best[0]} {best[1]} {best[2]} {max_procs} {samples} {hwm}")


def summary(paths):
    """median and min-max of every numeric key over several results-*.tsv files"""
    vals, text = {}, {}
    for path in paths:
        with open(path) as fh:
            for line in fh:
                k, _, v = line.rstrip("\n").partition("\t")
                try:
                    x = float(v)
                except ValueError:
                    text.setdefault(k, []).append(v)
                else:
                    vals.setdefault(k, []).append(x)
    print(f"# {len(paths)} run(s): " + ", ".join(paths))
    for k, v in text.items():
        print(f"{k}\t" + " | ".join(v))
    for k, v in vals.items():
        v.sort()
        n = len(v)
        med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
        print(f"{k}\t{med:g}\t({v[0]:g} - {v[-1]:g}, n={n})")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "http-server":
        http_server(int(args[0]), args[1])
    elif cmd == "https-server":
        https_server(int(args[0]), args[1], args[2], args[3], args[4])
    elif cmd == "echo-server":
        asyncio.run(echo_main(int(args[0])))
    elif cmd == "rps":
        rps(args[0], int(args[1]), int(args[2]), args[3] if len(args) > 3 else None)
    elif cmd == "https-rps":
        https_rps(args[0], int(args[1]), int(args[2]), args[3], args[4], args[5])
    elif cmd == "tunnels":
        asyncio.run(tunnels(args[0], int(args[1]), int(args[2]), args[3],
                            float(args[4]) if len(args) > 4 else 0.0))
    elif cmd == "tree-mem":
        tree_mem(int(args[0]), float(args[1]), args[2])
    elif cmd == "summary":
        summary(args)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
