#!/usr/bin/python3
"""Helpers for t_netfilter.sh: host-side servers and raw in-sandbox proxy clients.

Servers (on the host, 127.0.0.1, random ports):
  netservers.py serve DIR CERT KEY READYFILE
      starts, in one process:
        http   HTTP/1.1 server for DIR (keep-alive), plus
               GET  /zbint-host     -> "host=<Host header> path=<request target>"
               GET  /zbint-chunked  -> a chunked response "zbint-chunk-1zbint-chunk-2"
               POST /zbint-echo     -> the request body (Content-Length or chunked)
        https  the same over TLS with CERT/KEY
        echo   raw TCP echo server
      and writes "HTTP HTTPS ECHO" (the three ports) to READYFILE, atomically.
      Exits after 120 seconds at the latest.
  netservers.py secrets-serve DIR CERT KEY LOGFILE READYFILE
      (t_secrets.sh) HTTP and HTTPS servers like "serve" (static files of DIR, for git),
      which append every request (scheme, request line, header block, body) to LOGFILE
      before answering, and echo requests back:
        /echo           the request (line, headers, body, target percent-decoded) as the
                        body, and the Authorization header, the X-Custom header and the
                        target in X-Echo-Auth, X-Echo-Custom and X-Echo-Target
        /echo-basic     the same, plus the decoded Basic credentials ("basic=U:P", and
                        in X-Echo-Basic)
        /echo-status    the same, with the Authorization header as the reason phrase
        /echo-chunked?n=N   the echo sent chunked, N bytes per chunk (&trailer=1: and the
                            Authorization header in a trailer field, X-Trailer-Auth)
        /echo-split?n=N     the echo with Content-Length, written N bytes at a time with
                            a pause after each, so that every value arrives in pieces
        /echo-big?n=N   the echo N times, each followed by 70000 bytes of padding, as
                        one 64 KiB+ body (Content-Length; chunked with &chunked=1)
        /echo-close     the echo without Content-Length, ended by closing the connection
        /echo-gzip      the echo gzip-compressed (Content-Encoding: gzip) whatever the
                        request's Accept-Encoding says (&coding=deflate: zlib-wrapped
                        deflate; &coding=br: the echo as it is, labelled "br")
        /echo-redirect  a login redirect: 302 with Location /login?next=<the target,
                        percent-encoded again> and the same link in an HTML body
        /echo-pct2      the echo percent-encoded twice (&case=lower: lower-case hex)
        /echo-quote     the echo as Python's urllib.parse.quote() gives it (&plus=1:
                        quote_plus())
        /echo-json      {"echo": the echo} as Go's encoding/json writes it (\\u0026 for
                        '&', \\u003c, \\u003e; &style=every: every character \\u-escaped,
                        hex in alternating case)
        /echo-html      the echo HTML-escaped as Python's html.escape() does it
                        (&style=numeric: every character a numeric reference, decimal
                        and hex in turn, with leading zeros)
        /echo-header-name   the X-Custom header's value in a header name,
                        X-Echo-<value>: 1
        /raw-check/...  200 "raw path matches" when the raw request target is
                        /raw-check/<V>?key=<V> for the V in the file raw-expect next to
                        LOGFILE, else 403 "raw path differs" (a server that signs or
                        checks the target as sent)
      and writes "HTTP HTTPS" (the two ports) to READYFILE, atomically. Exits after 120
      seconds at the latest.

  netservers.py decode MODE
      (on the host) reads a response on stdin and writes what a client can decode
      from it: the "echo" string of a JSON object (json), HTML references undone (html,
      redirect), '+' as a space (quote-plus); then, in every mode, percent-encoding
      undone for as long as any is left

Clients (inside the sandbox; the proxy is 127.0.0.1:3128 there):
  raw REQUEST            send REQUEST (Python escapes such as \\r\\n interpreted) to the
                         proxy, print everything read until EOF (or 10 s)
  connect AUTH PAYLOAD   "CONNECT AUTH HTTP/1.1"; print the status line; on 200 send
                         PAYLOAD through the tunnel and print "echo=<what came back>"
  socks5 NAME PORT PAYLOAD
                         SOCKS5 CONNECT with a domain name (ATYP 3, NAME escapes
                         interpreted); print "rep=N"; on success send PAYLOAD, print echo
  socks5-ip FAMILY ADDR PORT
                         SOCKS5 CONNECT with an IPv4 (4) or IPv6 (6) address; "rep=N"
  socks4 ADDR PORT       SOCKS4 CONNECT; print "socks4-reply=N" (or "closed")
  direct HOST PORT       connect straight to HOST:PORT, ignoring the proxy; print
                         "connected" and the first bytes answered to a GET, or
                         "error=<errno name>"
"""
import codecs
import errno
import functools
import http.server
import os
import signal
import socket
import socketserver
import ssl
import struct
import sys
import threading

PROXY = ("127.0.0.1", 3128)


def unescape(s):
    return codecs.decode(s.encode("latin-1"), "unicode_escape").encode("latin-1")


# --- servers ---------------------------------------------------------------------------------

class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 15

    def log_message(self, *a):
        pass

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
        super().setup()

    def reply(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/zbint-host":
            self.reply(("host=%s path=%s" % (self.headers.get("Host"), self.path)).encode())
        elif self.path == "/zbint-chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"zbint-chunk-1", b"zbint-chunk-2"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        else:
            super().do_GET()

    def do_POST(self):
        if self.path != "/zbint-echo":
            self.send_error(404)
            return
        body = b""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class TLSServer(Server):
    ctx = None

    def get_request(self):
        conn, addr = self.socket.accept()
        # The handshake runs in the request's thread (Handler.setup), not here.
        return self.ctx.wrap_socket(conn, server_side=True, do_handshake_on_connect=False), addr


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.settimeout(15)
        try:
            while True:
                data = self.request.recv(65536)
                if not data:
                    break
                self.request.sendall(data)
        except OSError:
            pass


class EchoServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(directory, cert, key, readyfile):
    signal.alarm(120)
    handler = functools.partial(Handler, directory=directory)
    plain = Server(("127.0.0.1", 0), handler)
    tls = TLSServer(("127.0.0.1", 0), handler)
    TLSServer.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    TLSServer.ctx.load_cert_chain(cert, key)
    echo = EchoServer(("127.0.0.1", 0), Echo)
    for s in (plain, tls, echo):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    ports = "%d %d %d" % (plain.server_address[1], tls.server_address[1], echo.server_address[1])
    tmp = readyfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(ports)
    os.rename(tmp, readyfile)
    signal.pause()


# --- clients ---------------------------------------------------------------------------------

def proxy_socket():
    s = socket.create_connection(PROXY, timeout=10)
    s.settimeout(10)
    return s


def read_all(s):
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except socket.timeout:
        data += b"\n[timeout]"
    return data


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(1)
        if not b:
            break
        data += b
    return data


def echo_through(s, payload):
    s.sendall(payload)
    got = b""
    try:
        while len(got) < len(payload):
            b = s.recv(65536)
            if not b:
                break
            got += b
    except socket.timeout:
        pass
    print("echo=" + got.decode("latin-1"))


def client_raw(request):
    s = proxy_socket()
    s.sendall(unescape(request))
    sys.stdout.write(read_all(s).decode("latin-1"))


def client_connect(auth, payload):
    s = proxy_socket()
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (unescape(auth), unescape(auth)))
    head = read_head(s).decode("latin-1")
    print(head.split("\r\n")[0])
    if " 200 " in head.split("\r\n")[0] + " ":
        echo_through(s, payload.encode())
    else:
        print(head.strip() + "\n" + read_all(s).decode("latin-1"))


def socks5_hello(s):
    s.sendall(b"\x05\x01\x00")
    r = s.recv(2)
    if r != b"\x05\x00":
        print("greeting=%r" % r)
        sys.exit(3)


def socks5_reply(s):
    r = b""
    try:
        while len(r) < 4:
            b = s.recv(4 - len(r))
            if not b:
                break
            r += b
    except socket.timeout:
        pass
    if len(r) < 2:
        print("rep=closed")
        return None
    print("rep=%d" % r[1])
    if len(r) == 4:  # the bound address
        n = {1: 4, 4: 16}.get(r[3], 0)
        if r[3] == 3:
            n = s.recv(1)[0]
        want = n + 2
        while want > 0:
            b = s.recv(want)
            if not b:
                break
            want -= len(b)
    return r[1]


def client_socks5(name, port, payload):
    s = proxy_socket()
    socks5_hello(s)
    n = unescape(name)
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(n)]) + n + struct.pack(">H", int(port)))
    if socks5_reply(s) == 0:
        echo_through(s, payload.encode())


def client_socks5_ip(family, addr, port):
    s = proxy_socket()
    socks5_hello(s)
    if family == "4":
        a = b"\x01" + socket.inet_pton(socket.AF_INET, addr)
    else:
        a = b"\x04" + socket.inet_pton(socket.AF_INET6, addr)
    s.sendall(b"\x05\x01\x00" + a + struct.pack(">H", int(port)))
    socks5_reply(s)


def client_socks4(addr, port):
    s = proxy_socket()
    s.sendall(b"\x04\x01" + struct.pack(">H", int(port)) + socket.inet_aton(addr) + b"zbint\x00")
    r = read_all(s)
    print("socks4-reply=%d" % r[1] if len(r) >= 2 else "closed")


def client_direct(host, port):
    try:
        s = socket.create_connection((host, int(port)), timeout=5)
    except OSError as e:
        print("error=" + (errno.errorcode.get(e.errno, str(e)) if e.errno else type(e).__name__))
        return
    print("connected")
    s.settimeout(5)
    try:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        print(s.recv(200).decode("latin-1"))
    except OSError as e:
        print("error-after-connect=" + str(e))


# --- secrets-serve (t_secrets.sh) --------------------------------------------------------------

class SecretHandler(Handler):
    """Records every request in a log file and echoes requests back (see the docstring)."""

    log_path = None
    log_lock = threading.Lock()

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def record(self, body):
        scheme = "https" if isinstance(self.request, ssl.SSLSocket) else "http"
        import urllib.parse
        entry = ("=== %s %s\n%s" % (scheme, self.requestline, self.headers.as_string())).encode("latin-1")
        entry += b"decoded-request: " + urllib.parse.unquote_to_bytes(self.requestline) + b"\n"
        entry += b"body=" + body + b"\n=== end\n"
        with self.log_lock:
            with open(self.log_path, "ab") as f:
                f.write(entry)

    def echo_body(self, body):
        import urllib.parse
        out = ("line=%s\n%s" % (self.requestline, self.headers.as_string())).encode("latin-1")
        out += b"decoded-target=" + urllib.parse.unquote_to_bytes(self.path) + b"\n"
        out += b"body=" + body + b"\n"
        return out

    def handle_any(self):
        import base64
        import gzip
        import html
        import json
        import re
        import time
        import urllib.parse
        body = self.read_body() if self.command != "HEAD" else b""
        self.record(body)
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        route = url.path
        if route.startswith("/raw-check/"):
            with open(os.path.join(os.path.dirname(self.log_path), "raw-expect"), "rb") as f:
                want = f.read().decode("latin-1").rstrip("\n")
            ok = self.path == "/raw-check/%s?key=%s" % (want, want)
            msg = b"raw path matches\n" if ok else b"raw path differs\n"
            self.send_response(200 if ok else 403)
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        if not route.startswith("/echo"):
            if self.command == "HEAD":
                return super().do_HEAD()
            if self.command == "GET":
                return Handler.do_GET(self)
            self.send_error(404)
            return
        auth = self.headers.get("Authorization") or ""
        out = self.echo_body(body)
        extra = [("X-Echo-Auth", auth), ("X-Echo-Custom", self.headers.get("X-Custom") or ""),
                 ("X-Echo-Target", self.path)]
        if route == "/echo-basic":
            creds = b""
            if auth[:6].lower() == "basic ":
                try:
                    creds = base64.b64decode(auth[6:].strip().encode("latin-1"), validate=True)
                except ValueError:
                    creds = b"(bad base64)"
            out += b"basic=" + creds + b"\n"
            extra.append(("X-Echo-Basic", creds.decode("latin-1")))
        status = 200
        text = out.decode("latin-1")
        if route == "/echo-redirect":
            status = 302
            nxt = "/login?next=" + urllib.parse.quote(self.path, safe="")
            extra.append(("Location", nxt))
            out = ('<a href="%s">login</a>\n' % nxt.replace("&", "&amp;")).encode("latin-1")
        elif route == "/echo-pct2":
            out = urllib.parse.quote(urllib.parse.quote(text, safe=""), safe="").encode()
            if q.get("case") == "lower":
                out = re.sub(rb"%[0-9A-F]{2}", lambda m: m.group(0).lower(), out)
        elif route == "/echo-quote":
            out = (urllib.parse.quote_plus(text) if q.get("plus") == "1" else urllib.parse.quote(text)).encode()
        elif route == "/echo-json":
            if q.get("style") == "every":
                inner = "".join(("\\u%04X" if i % 2 else "\\u%04x") % ord(c) for i, c in enumerate(text))
                out = ('{"echo": "%s"}' % inner).encode()
            else:
                enc = json.dumps({"echo": text}, ensure_ascii=False)
                for c, e in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
                    enc = enc.replace(c, e)
                out = enc.encode("utf-8")
        elif route == "/echo-html":
            if q.get("style") == "numeric":
                out = "".join(("&#x%04X;" if i % 2 else "&#%05d;") % ord(c) for i, c in enumerate(text)).encode()
            else:
                out = html.escape(text).encode("latin-1")
        elif route == "/echo-header-name":
            extra.append(("X-Echo-" + (self.headers.get("X-Custom") or ""), "1"))
        reason = auth if route == "/echo-status" else ("Found" if status == 302 else "OK")
        if route == "/echo-big":
            pad = b"x" * 70000
            out = (out + pad) * int(q.get("n", "3"))
        if route == "/echo-gzip":
            coding = q.get("coding", "gzip")
            if coding == "gzip":
                out = gzip.compress(out)
            elif coding == "deflate":
                import zlib
                out = zlib.compress(out)
            extra.append(("Content-Encoding", coding))
        self.send_response(status, reason)
        self.send_header("Content-Type", "text/plain")
        for k, v in extra:
            self.send_header(k, v)
        chunked = route == "/echo-chunked" or (route == "/echo-big" and q.get("chunked") == "1")
        if route == "/echo-close":
            self.send_header("Connection", "close")
            self.close_connection = True
        elif chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command == "HEAD":
            return
        n = max(1, int(q.get("n", "4096" if route == "/echo-big" else "3")))
        if chunked:
            for i in range(0, len(out), n):
                part = out[i:i + n]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            trailer = b""
            if q.get("trailer") == "1":
                trailer = ("X-Trailer-Auth: %s\r\n" % auth).encode("latin-1")
            self.wfile.write(b"0\r\n" + trailer + b"\r\n")
        elif route == "/echo-split":
            for i in range(0, len(out), n):
                self.wfile.write(out[i:i + n])
                time.sleep(0.003)
        else:
            self.wfile.write(out)

    do_GET = handle_any
    do_POST = handle_any
    do_PUT = handle_any

    def do_HEAD(self):
        self.handle_any()


class SecretTLSServer(TLSServer):
    pass


def secrets_serve(directory, cert, key, logfile, readyfile):
    signal.alarm(120)
    SecretHandler.log_path = logfile
    open(logfile, "ab").close()
    handler = functools.partial(SecretHandler, directory=directory)
    plain = Server(("127.0.0.1", 0), handler)
    tls = SecretTLSServer(("127.0.0.1", 0), handler)
    SecretTLSServer.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    SecretTLSServer.ctx.load_cert_chain(cert, key)
    for s in (plain, tls):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    tmp = readyfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d" % (plain.server_address[1], tls.server_address[1]))
    os.rename(tmp, readyfile)
    signal.pause()


def client_tls_request(*argv):
    """tls-request [--plain] [--socks] [--sni NAME] [--cafile FILE] HOST PORT REQUEST: opens a
    tunnel to HOST:PORT through the proxy (CONNECT, or SOCKS5 with --socks), speaks TLS in it
    (trusting the default bundle, i.e. SSL_CERT_FILE, or FILE) unless --plain, sends REQUEST
    (escapes interpreted; @NAME@ replaced by the environment variable NAME, so that no
    placeholder needs to be on a command line) and prints everything that comes back."""
    import argparse
    import os
    import re
    ap = argparse.ArgumentParser(prog="netservers.py tls-request")
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--socks", action="store_true")
    ap.add_argument("--sni")
    ap.add_argument("--cafile")
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("request")
    a = ap.parse_args(argv)
    s = proxy_socket()
    if a.socks:
        socks5_hello(s)
        n = a.host.encode()
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(n)]) + n + struct.pack(">H", a.port))
        socks5_reply(s)
    else:
        s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (a.host, a.port, a.host, a.port)).encode())
        print(read_head(s).split(b"\r\n")[0].decode())
    if not a.plain:
        s = ssl.create_default_context(cafile=a.cafile).wrap_socket(s, server_hostname=a.sni or a.host)
    req = re.sub(rb"@([A-Z0-9_]+)@", lambda m: os.environ[m.group(1).decode()].encode("latin-1"), unescape(a.request))
    s.sendall(req)
    try:
        data = read_all(s)
    except (ssl.SSLError, OSError):
        data = b""
    sys.stdout.write(data.decode("latin-1"))


def decode(mode):
    import html
    import json
    import urllib.parse
    t = sys.stdin.buffer.read().decode("latin-1")
    if mode in ("html", "redirect"):
        t = html.unescape(t)
    elif mode == "quote-plus":
        t = urllib.parse.unquote_plus(t)
    elif mode == "json":
        t = json.loads(t)["echo"]
    while urllib.parse.unquote(t) != t:
        t = urllib.parse.unquote(t)
    sys.stdout.write(t)


def main():
    kind, args = sys.argv[1], sys.argv[2:]
    fn = {
        "serve": serve,
        "raw": client_raw,
        "connect": client_connect,
        "socks5": client_socks5,
        "socks5-ip": client_socks5_ip,
        "socks4": client_socks4,
        "direct": client_direct,
        "tls-request": client_tls_request,
        "secrets-serve": secrets_serve,
        "decode": decode,
    }.get(kind)
    if fn is None:
        sys.exit("unknown kind " + kind)
    fn(*args)


if __name__ == "__main__":
    main()
