#!/usr/bin/env bash
# A short demonstration: a write refused, an allowed write landing, no network, filtered
# network, a secret the command never sees, and a reviewed run: its diff, accept, and undo.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
zb=${ZEROBOX:-$root/build/zerobox}
# Not under /tmp or /var/tmp: inside the sandbox those are scratch space, where writes
# succeed but never reach the host.
mkdir -p "$root/build"
work=$(mktemp -d "$root/build/demo.XXXXXX")
srv_pid=
cleanup() { [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

show() {
  local q
  printf -v q '%q ' "$@"
  printf '\n$ %s\n' "${q% }"
  "$@" 2>&1
  printf '(exit status %s)\n' "$?"
}

echo "zerobox $("$zb" --version | cut -d' ' -f2): deny by default."
echo "hello" >"$work/notes.txt"

show "$zb" -- sh -c "echo overwritten > $work/notes.txt"
echo "host file still says: $(cat "$work/notes.txt")"

mkdir "$work/out"
show "$zb" --allow-write="$work/out" -- sh -c "echo built > $work/out/result.txt && echo wrote it"
echo "host file now says: $(cat "$work/out/result.txt")"

# A web server on the host's loopback: unreachable from the sandbox unless allowed.
python3 -m http.server --bind 127.0.0.1 0 --directory "$work" >"$work/http.log" 2>&1 &
srv_pid=$!
port=
for _ in $(seq 50); do
  port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$work/http.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
show "$zb" -- curl -sS -m 3 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/notes.txt"
show "$zb" --allow-net -- curl -sS -m 3 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/notes.txt"
# Filtered: only the named host, through zerobox's proxy.
show "$zb" --allow-net="localhost:$port" -- curl -sS -m 3 -o /dev/null -w '%{http_code}\n' "http://localhost:$port/notes.txt"
show "$zb" --allow-net="localhost:$port" -- curl -sS -m 3 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$port/notes.txt"

# A secret: the command holds a placeholder; the approved host gets the real value.
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[1], "a") as f:
            f.write(self.headers.get("Authorization", "") + "\n")
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers(); self.wfile.write(b"ok\n")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$work/api.log" >"$work/api.port" &
api_pid=$!
trap 'kill "$api_pid" 2>/dev/null; cleanup' EXIT
for _ in $(seq 50); do [ -s "$work/api.port" ] && break; sleep 0.1; done
api=$(cat "$work/api.port")
export API_KEY=sk-demo-$RANDOM$RANDOM
show "$zb" --secret API_KEY --secret-host "API_KEY=localhost:$api" -- \
  sh -c "echo \"inside the sandbox: API_KEY=\$API_KEY\"; curl -sS -H \"Authorization: Bearer \$API_KEY\" http://localhost:$api/"
echo "the API server received: $(cat "$work/api.log")"
unset API_KEY

# Review what a command would change, accept it, then undo it. The demo's own store.
export ZEROBOX_HOME=$work/store
cd "$work/out"
show "$zb" --review --allow-write=. -- sh -c "echo changed > result.txt; echo new > added.txt"
echo "host file still says: $(cat "$work/out/result.txt")"
show "$zb" snapshot diff last --color=never
show "$zb" snapshot accept last
echo "host file now says: $(cat "$work/out/result.txt")"
show "$zb" snapshot restore "$("$zb" snapshot list --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if s["state"] == "accepted"][0])')"
echo "host file back to: $(cat "$work/out/result.txt"); added.txt $([ -e added.txt ] && echo still there || echo gone)"
show "$zb" snapshot list
echo
echo "More: $zb --help, docs/usage.md"
