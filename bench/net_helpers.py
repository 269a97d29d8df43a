#!/usr/bin/env python3
"""bench/net_helpers.py - servers and clients for bench/net.sh (stdlib only).

  http-server PORT FILE   threaded HTTP/1.1 keep-alive server on 127.0.0.1:PORT.
                          GET /big   -> FILE via socket.sendfile (Content-Length, then close)
                          GET other  -> 2-byte body "ok", keep-alive
  echo-server PORT        asyncio echo server on 127.0.0.1:PORT (backlog 4096)
  rps HOST PORT N [PROXY_PORT]
                          N sequential GETs of /small over ONE keep-alive connection, either
                          directly to 127.0.0.1:PORT or absolute-form via 127.0.0.1:PROXY_PORT.
                          prints "<req/s> <ok>"
  tunnels HOST PORT N PROXY_PORT
                          N concurrent CONNECT tunnels through 127.0.0.1:PROXY_PORT to HOST:PORT;
                          all tunnels are established (held open together), then each sends
                          1 KiB, checks the echo and closes. prints
                          "<ok> <N> <wall_s> <established> <first_error>"
"""
import asyncio
import os
import socket
import sys
import threading
import time


def read_head(sock, buf):
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


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


def rps(host, port, n, proxy_port=None):
    s = socket.create_connection(("127.0.0.1", proxy_port or port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    target = f"http://{host}:{port}/small" if proxy_port else "/small"
    req = f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: bench\r\n\r\n".encode()
    buf = b""
    ok = 0
    t0 = time.perf_counter()
    for _ in range(n):
        s.sendall(req)
        head, buf = read_head(s, buf)
        if head is None:
            break
        clen = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                clen = int(v)
        while len(buf) < clen:
            buf += s.recv(65536)
        body, buf = buf[:clen], buf[clen:]
        if head.startswith(b"HTTP/1.1 200") and body == b"ok":
            ok += 1
    dt = time.perf_counter() - t0
    print(f"{ok / dt:.0f} {ok}")


async def tunnels(host, port, n, proxy_port):
    payload = os.urandom(1024)
    established = 0
    all_up = asyncio.Event()
    pending = [n]
    errors = []

    def done_connecting():
        pending[0] -= 1
        if pending[0] == 0:
            all_up.set()

    async def one():
        nonlocal established
        w = None
        try:
            try:
                r, w = await asyncio.open_connection("127.0.0.1", proxy_port)
                w.write(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
                head = await r.readuntil(b"\r\n\r\n")
                if b" 200" not in head.split(b"\r\n", 1)[0]:
                    raise RuntimeError(head.split(b"\r\n", 1)[0].decode(errors="replace"))
                established += 1
            finally:
                done_connecting()
            await all_up.wait()
            w.write(payload)
            got = await r.readexactly(len(payload))
            return got == payload
        except Exception as e:  # noqa: BLE001 - report, don't die
            errors.append(repr(e))
            return False
        finally:
            if w is not None:
                w.close()

    t0 = time.perf_counter()
    try:
        res = await asyncio.wait_for(asyncio.gather(*(one() for _ in range(n))), 120)
    except asyncio.TimeoutError:
        res = []
        errors.append("timeout 120s")
    dt = time.perf_counter() - t0
    first = errors[0].replace(" ", "_")[:80] if errors else "-"
    print(f"{sum(res)} {n} {dt:.3f} {established} {first}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "http-server":
        http_server(int(args[0]), args[1])
    elif cmd == "echo-server":
        asyncio.run(echo_main(int(args[0])))
    elif cmd == "rps":
        rps(args[0], int(args[1]), int(args[2]), int(args[3]) if len(args) > 3 else None)
    elif cmd == "tunnels":
        asyncio.run(tunnels(args[0], int(args[1]), int(args[2]), int(args[3])))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
