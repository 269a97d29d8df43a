#!/usr/bin/env bash
# A short demonstration: a write refused, an allowed write landing, no network, filtered
# network, a secret the command never sees, and a reviewed run: its diff, accept, and undo.
# Every step checks its own outcome; the script exits 1 if any step did not do what it
# says. Needs python3 and curl (scripts/install-deps.sh build installs both).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
zb=${ZEROBOX:-$root/build/zerobox}
[ -x "$zb" ] || { echo "demo: $zb is missing: build it first (scripts/build.sh --binary)" >&2; exit 1; }
for tool in python3 curl; do
  command -v "$tool" >/dev/null || { echo "demo: $tool is missing (scripts/install-deps.sh build)" >&2; exit 1; }
done
# Not under /tmp or /var/tmp: inside the sandbox those are scratch space, where writes
# succeed but never reach the host.
mkdir -p "$root/build"
work=$(mktemp -d "$root/build/demo.XXXXXX")
pids=()
cleanup() {
  local p
  for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1

failed=()
# pretty ARGS...: the command as a person would type it (the binary shown as `zerobox`).
pretty() {
  local a out=
  for a in "$@"; do
    [ "$a" = "$zb" ] && a=zerobox
    if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
      out+=" $a"
    else
      out+=" '${a//\'/\'\\\'\'}'"
    fi
  done
  printf '%s' "${out# }"
}
# run ARGS...: shows and runs a command; its output in $OUT, its exit status in $RC.
run() {
  printf '\n$ %s\n' "$(pretty "$@")"
  OUT=$("$@" 2>&1)
  RC=$?
  [ -n "$OUT" ] && printf '%s\n' "$OUT"
  printf '(exit status %s)\n' "$RC"
}
# check CONDITION... -- WHAT: one line, ok or FAILED; a failure makes the script exit 1.
check() {
  local cond=() what
  while [ "$1" != -- ]; do cond+=("$1"); shift; done
  shift
  what=$*
  if "${cond[@]}"; then
    printf '  ok: %s\n' "$what"
  else
    printf '  FAILED: %s\n' "$what"
    failed+=("$what")
  fi
}
contains() { [[ $1 == *"$2"* ]]; }
lacks() { [[ $1 != *"$2"* ]]; }
file_is() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }
# serve NAME SCRIPT ARGS...: starts a Python web server on a free loopback port; the port
# in $PORT. Python prints it itself, flushed: a log read from a file would be empty until
# Python's buffer filled.
serve() {
  local name=$1 _
  shift
  python3 -u -c "$@" >"$work/$name.port" 2>"$work/$name.err" &
  pids+=($!)
  PORT=
  for _ in $(seq 100); do
    PORT=$(head -1 "$work/$name.port" 2>/dev/null)
    [[ $PORT =~ ^[0-9]+$ ]] && return 0
    sleep 0.05
  done
  echo "demo: the $name server did not start:" >&2
  cat "$work/$name.err" >&2
  exit 1
}

echo "zerobox $("$zb" --version | cut -d' ' -f2) ($zb): deny by default. Working in $work."
echo hello >notes.txt

echo
echo "== 1. A write outside what is allowed is refused; the host file is untouched."
run "$zb" -- sh -c 'echo overwritten > notes.txt'
check [ "$RC" != 0 ] -- "the write failed inside the sandbox"
check file_is notes.txt hello -- "notes.txt on the host still says: $(cat notes.txt)"

echo
echo "== 2. --allow-write=DIR: writes there land on the host."
mkdir out
run "$zb" --allow-write=out -- sh -c 'echo built > out/result.txt && echo wrote it'
check [ "$RC" = 0 ] -- "the command succeeded"
check file_is out/result.txt built -- "out/result.txt on the host says: $(cat out/result.txt 2>&1)"

echo
echo "== 3. No network unless allowed: a web server on the host's loopback."
serve web '
import http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1])
s.serve_forever()'
web=$PORT
echo "(serving $work on 127.0.0.1:$web)"
curl_code=(curl -sS -m 5 -o /dev/null -w '%{http_code}\n')
run "$zb" -- "${curl_code[@]}" "http://127.0.0.1:$web/notes.txt"
check [ "$RC" != 0 ] -- "without --allow-net curl cannot connect (curl exit status $RC)"
run "$zb" --allow-net -- "${curl_code[@]}" "http://127.0.0.1:$web/notes.txt"
check [ "$RC" = 0 ] -- "with --allow-net curl succeeded"
check [ "$OUT" = 200 ] -- "and the server answered 200"

echo
echo "== 4. --allow-net=HOST:PORT: only that host, through zerobox's filtering proxy."
run "$zb" --allow-net="localhost:$web" -- "${curl_code[@]}" "http://localhost:$web/notes.txt"
check [ "$OUT" = 200 ] -- "localhost:$web is allowed: 200"
run "$zb" --allow-net="localhost:$web" -- "${curl_code[@]}" "http://127.0.0.1:$web/notes.txt"
check [ "${OUT%%$'\n'*}" = 403 ] -- "127.0.0.1:$web is another host, not allowed: the proxy answered 403"

echo
echo "== 5. A secret: the command holds a placeholder; only the approved host gets the value."
serve api '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[1], "a") as f:
            f.write(self.headers.get("Authorization", "") + "\n")
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers(); self.wfile.write(b"ok\n")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1])
s.serve_forever()' "$work/api.log"
api=$PORT
export API_KEY=sk-demo-$RANDOM$RANDOM
echo "(API_KEY=$API_KEY on the host; an API server on localhost:$api)"
run "$zb" --secret API_KEY --secret-host "API_KEY=localhost:$api" -- \
  sh -c "echo \"inside the sandbox: API_KEY=\$API_KEY\"; curl -sS -H \"Authorization: Bearer \$API_KEY\" http://localhost:$api/"
check [ "$RC" = 0 ] -- "the command succeeded"
check contains "$OUT" "inside the sandbox: API_KEY=ZEROBOX_SECRET_" -- "the command saw a placeholder"
check lacks "$OUT" "$API_KEY" -- "the command never saw the value"
echo "the API server received: $(cat "$work/api.log" 2>&1)"
check file_is "$work/api.log" "Bearer $API_KEY" -- "the API server received the real value"
unset API_KEY

echo
echo "== 6. --review: see what a command would change, accept it, then undo it."
# The demo's own snapshot store, not ~/.local/share/zerobox.
export ZEROBOX_HOME=$work/store
cd out || exit 1
run "$zb" --review --allow-write=. -- sh -c 'echo changed > result.txt; echo new > added.txt'
check [ "$RC" = 0 ] -- "the command ran"
check file_is result.txt built -- "result.txt on the host still says: $(cat result.txt)"
check [ ! -e added.txt ] -- "added.txt is not on the host yet"
run "$zb" snapshot diff last --color=never
check contains "$OUT" "+changed" -- "the diff shows result.txt's new line"
check contains "$OUT" "added.txt" -- "and the new added.txt"
run "$zb" snapshot accept last
check [ "$RC" = 0 ] -- "accepted"
check file_is result.txt changed -- "result.txt on the host now says: $(cat result.txt)"
check file_is added.txt new -- "added.txt is on the host"
id=$("$zb" snapshot list --json | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if s["state"] == "accepted"][0])')
run "$zb" snapshot restore "${id:0:12}"
check [ "$RC" = 0 ] -- "restored"
check file_is result.txt built -- "result.txt on the host back to: $(cat result.txt)"
check [ ! -e added.txt ] -- "added.txt is gone again"
run "$zb" snapshot list

echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "demo: ${#failed[@]} step(s) did not do what they say:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "demo: every step did what it says. More: zerobox --help, docs/usage.md, docs/recipes.md"
