#!/usr/bin/python3
"""Host-side test servers. servers.py KIND ARG READYFILE

  unix PATH        pathname unix stream socket; accepts and closes connections
  abstract NAME    abstract unix stream socket "\\0NAME"
  http DIR         HTTP server for DIR on 127.0.0.1, random port (written to READYFILE)

READYFILE is written (atomically) once the socket listens. Each server exits after
120 seconds at the latest, so nothing outlives a test run."""
import functools
import http.server
import os
import signal
import socket
import sys


def ready(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def serve_stream(sock, readyfile, info):
    sock.listen(16)
    ready(readyfile, info)
    while True:
        conn, _ = sock.accept()
        try:
            conn.sendall(b"zbint\n")
        except OSError:
            pass
        conn.close()


def main():
    kind, arg, readyfile = sys.argv[1:4]
    signal.alarm(120)
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(arg)
        serve_stream(s, readyfile, arg)
    elif kind == "abstract":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("\0" + arg)
        serve_stream(s, readyfile, arg)
    elif kind == "http":
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *a):
                pass

        handler = functools.partial(Quiet, directory=arg)
        httpd = http.server.HTTPServer(("127.0.0.1", 0), handler)
        ready(readyfile, str(httpd.server_address[1]))
        httpd.serve_forever()
    else:
        sys.exit("unknown kind " + kind)


if __name__ == "__main__":
    main()
