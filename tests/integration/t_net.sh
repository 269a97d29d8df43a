# Network: only loopback by default; a host loopback service is unreachable without
# --allow-net and reachable with it.
. "$(dirname "$0")/lib.sh"
need_python

# dev_ifaces TEXT: the sorted interface names of the /proc/net/dev listing in TEXT (its
# two header lines hold '|'; other output without a colon is passed over).
dev_ifaces() { printf '%s\n' "$1" | awk -F: '/\|/ { next } NF > 1 { gsub(/ /, "", $1); print $1 }' | sort | tr '\n' ' '; }

zb -- cat /proc/net/dev; expect_rc 0 "read /proc/net/dev"
expect_eq "$(dev_ifaces "$OUT")" "lo " "default: the only interface is lo"
if command -v ip >/dev/null; then
  zb -- ip -o link show; expect_rc 0 "ip link"
  expect_eq "$(printf '%s\n' "$OUT" | awk -F': ' '{ print $2 }' | tr '\n' ' ')" "lo " "ip link shows only lo"
  zb -- ip -o addr show; expect_contains "$OUT" "127.0.0.1" "lo has 127.0.0.1"
  zb -- ip route show; expect_not_contains "$OUT" default "no default route"
fi
zb -- "$PY" -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname(), timeout=5); a, _ = s.accept()
c.sendall(b"ping"); print(a.recv(4).decode())'
expect_out ping "loopback inside the sandbox works"

mkdir -p "$HOSTDIR/www"
echo "zbint-served-$UNIQ" >"$HOSTDIR/www/index.txt"
start_server http "$HOSTDIR/www"
PORT=$SERVER_INFO
run "$PROBE" connect-tcp 127.0.0.1 "$PORT"; expect_rc 0 "host reaches its own server (control)"
FETCH="import urllib.request,sys; print(urllib.request.urlopen('http://127.0.0.1:$PORT/index.txt', timeout=10).read().decode().strip())"

zb -- "$PROBE" connect-tcp 127.0.0.1 "$PORT"; expect_rc 111 "default: host loopback service refused (ECONNREFUSED)"
zb -- "$PY" -c "$FETCH"; expect_rc_not 0 "default: HTTP to the host service fails"
expect_not_contains "$OUT" "zbint-served" "default: no content from the host service"
zb -- "$PROBE" connect-tcp 10.255.255.1 80; expect_rc_in "101 113 111" "default: no route to other addresses"
zb --allow-net -- "$PROBE" connect-tcp 127.0.0.1 "$PORT"; expect_rc 0 "bare --allow-net: host loopback service reachable"
zb --allow-net -- "$PY" -c "$FETCH"; expect_out "zbint-served-$UNIQ" "bare --allow-net: HTTP content from the host service"
zb -A -- "$PROBE" connect-tcp 127.0.0.1 "$PORT"; expect_rc 0 "-A: host loopback service reachable"
zb --allow-net -- cat /proc/net/dev; expect_contains "$OUT" "lo:" "bare --allow-net: host interfaces"
expect_eq "$(dev_ifaces "$OUT")" "$(dev_ifaces "$(cat /proc/net/dev)")" "bare --allow-net: the host's interfaces, all of them"
# Filtered mode (t_netfilter.sh has the rest): the host's loopback stays unreachable
# except through the proxy, and only for what a rule names.
zb --allow-net=example.com -- "$PROBE" connect-tcp 127.0.0.1 "$PORT"
expect_rc 111 "--allow-net=DOMAIN: host loopback service refused directly (ECONNREFUSED)"
zb --deny-net=example.com --allow-net -- cat /proc/net/dev; expect_rc 0 "--deny-net with --allow-net: read /proc/net/dev"
expect_eq "$(dev_ifaces "$OUT")" "lo " "--deny-net with --allow-net: own namespace, only lo"
# A secret puts the command in filtered mode, with a placeholder (t_secrets.sh has the rest).
zb --secret K=value-1234 -- sh -c 'echo "$K"; cat /proc/net/dev'; expect_rc 0 "--secret runs"
expect_contains "$OUT" "ZEROBOX_SECRET_" "--secret: the command sees a placeholder"
expect_not_contains "$OUT" "value-1234" "--secret: never the value"
expect_eq "$(dev_ifaces "$OUT")" "lo " "--secret: own namespace, only lo"
expect_contains "$ERR" "no host is allowed" "--secret with no allowed host: a warning says it cannot be used"
finish
