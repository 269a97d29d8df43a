# Filtered network: --allow-net=RULES / --deny-net=RULES / --resolve. The command gets a
# network namespace with only lo, and zerobox's proxy on 127.0.0.1:3128 (HTTP forward
# proxy, CONNECT, SOCKS5 with names) is its only way out. The servers run on the host's
# 127.0.0.1 (netservers.py: HTTP, HTTPS with a CA made here, TCP echo); the names api.test,
# other.test, a.b.test and test are mapped to 127.0.0.1 with --resolve.
. "$(dirname "$0")/lib.sh"
need_python
need curl openssl git

NS=$TESTDIR/netservers.py
D=$HOSTDIR/net
mkdir -p "$D/www"
echo "zbint-index-$UNIQ" >"$D/www/index.txt"
echo "zbint-second-$UNIQ" >"$D/www/second.txt"

# A CA and a leaf certificate for the test names.
make_test_certs "$D" "DNS:api.test,DNS:other.test,DNS:a.b.test"
CA=$D/ca.pem

# A dumb-HTTP git repository served by the HTTPS server.
make_dumb_git_repo "$D/src" "$D/www/repo.git"

bg "$PY" "$NS" serve "$D/www" "$D/leaf.pem" "$D/leaf.key" "$D/ready"
wait_until 20 file_nonempty "$D/ready" || fail "the test servers did not start"
read -r HP SP EP <"$D/ready"
run curl -sS --max-time 5 "http://127.0.0.1:$HP/index.txt"
expect_out "zbint-index-$UNIQ" "host reaches the HTTP server (control)"
run curl -sS --max-time 5 --cacert "$CA" --resolve "api.test:$SP:127.0.0.1" "https://api.test:$SP/index.txt"
expect_out "zbint-index-$UNIQ" "host reaches the HTTPS server (control)"

RES=(--resolve api.test:127.0.0.1 --resolve other.test:127.0.0.1 --resolve a.b.test:127.0.0.1 --resolve test:127.0.0.1)
H=http://api.test:$HP
S=https://api.test:$SP
# zcurl ZB_ARGS... -- CURL_ARGS...: curl in the sandbox with headers (-i); OUT ends with
# "[code=HTTP connect=CONNECT-RESPONSE]".
zcurl() {
  local z=()
  while [ "$1" != -- ]; do
    z+=("$1")
    shift
  done
  shift
  zb "${z[@]}" -- curl -sS -i --max-time 15 -w '\n[code=%{http_code} connect=%{http_connect}]' "$@"
}
# zpy ZB_ARGS... -- NETSERVERS_ARGS...: a raw proxy client in the sandbox.
zpy() {
  local z=()
  while [ "$1" != -- ]; do
    z+=("$1")
    shift
  done
  shift
  zb "${z[@]}" -- "$PY" "$NS" "$@"
}
URLLIB='import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=15).read().decode().strip())'

# --- The sandbox's view -----------------------------------------------------------------------
zb --allow-net=api.test -- env
for v in HTTP_PROXY=http://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128 ALL_PROXY=http://127.0.0.1:3128 \
  http_proxy=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128 all_proxy=http://127.0.0.1:3128 \
  NODE_USE_ENV_PROXY=1; do
  expect_contains "$(printf '%s\n' "$OUT" | grep -x -- "$v")" "$v" "filtered: $v is set"
done
expect_eq "$(printf '%s\n' "$OUT" | grep -c -x -e 'NO_PROXY=' -e 'no_proxy=')" 2 "filtered: NO_PROXY and no_proxy are empty"
zb --allow-net=api.test -- cat /proc/net/dev
ifaces=$(printf '%s\n' "$OUT" | awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' | sort | tr '\n' ' ')
expect_eq "$ifaces" "lo " "filtered: the only interface is lo"

# --- An allowed name works, through every kind of client --------------------------------------
A=(--allow-net=api.test "${RES[@]}")
zcurl "${A[@]}" -- "$H/index.txt"
expect_rc 0 "curl http: exit 0"
expect_contains "$OUT" "zbint-index-$UNIQ" "curl http: content of an allowed name"
expect_contains "$OUT" "[code=200 " "curl http: 200"
expect_not_contains "$ERR" "blocked" "curl http: no blocked-connection summary"
zcurl "${A[@]}" -- --cacert "$CA" "$S/index.txt"
expect_contains "$OUT" "zbint-index-$UNIQ" "curl https (CONNECT): content of an allowed name"
expect_contains "$OUT" "[code=200 connect=200]" "curl https: CONNECT 200 then 200"
zb "${A[@]}" -- "$PY" -c "$URLLIB" "$H/index.txt"
expect_out "zbint-index-$UNIQ" "python urllib http: content"
zb "${A[@]}" --env "SSL_CERT_FILE=$CA" -- "$PY" -c "$URLLIB" "$S/index.txt"
expect_out "zbint-index-$UNIQ" "python urllib https (SSL_CERT_FILE): content"
zb "${A[@]}" -- curl -sS --max-time 15 --socks5-hostname 127.0.0.1:3128 "$H/index.txt"
expect_out "zbint-index-$UNIQ" "curl --socks5-hostname http: content"
zb "${A[@]}" -- curl -sS --max-time 15 -x socks5h://127.0.0.1:3128 --cacert "$CA" "$S/index.txt"
expect_out "zbint-index-$UNIQ" "curl socks5h:// https: content"
zb "${A[@]}" --env "GIT_SSL_CAINFO=$CA" -- sh -c '
  d=/tmp/zbint-clone-$1
  git clone -q "$2/repo.git" "$d" && cat "$d/file.txt" && git -C "$d" log --format=%s' sh "$UNIQ" "$S"
expect_rc 0 "git clone over https (dumb HTTP): exit 0"
expect_out "zbint-git-$UNIQ
zbint-commit-$UNIQ" "git clone over https: file and commit"
# Keep-alive (two requests, one proxy connection) and chunked bodies both ways.
zb "${A[@]}" -- curl -sS --max-time 15 -v "$H/index.txt" "$H/second.txt"
expect_out "zbint-index-$UNIQ
zbint-second-$UNIQ" "keep-alive: two requests through the proxy"
expect_contains "$ERR" "Re-using existing connection" "keep-alive: curl reused its proxy connection"
zb "${A[@]}" -- curl -sS --max-time 15 "$H/zbint-chunked"
expect_out "zbint-chunk-1zbint-chunk-2" "chunked response through the proxy"
zb "${A[@]}" -- curl -sS --max-time 15 -H 'Transfer-Encoding: chunked' --data-binary "zbint-body-$UNIQ" "$H/zbint-echo"
expect_out "zbint-body-$UNIQ" "chunked request body through the proxy"
zb "${A[@]}" -- curl -sS --max-time 15 --data-binary "zbint-body2-$UNIQ" "$H/zbint-echo"
expect_out "zbint-body2-$UNIQ" "Content-Length request body through the proxy"

# --- Refusals: 403 with the reason; the summary line at exit -----------------------------------
zcurl "${A[@]}" -- "http://other.test:$HP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "not listed: 403"
expect_contains "$OUT" "zerobox: not in --allow-net" "not listed: reason in the body"
expect_contains "$OUT" "X-Zerobox-Reason: not in --allow-net" "not listed: X-Zerobox-Reason header"
expect_not_contains "$OUT" "zbint-index" "not listed: no content"
expect_contains "$ERR" "zerobox: warning: blocked 1 connection: other.test:$HP" "summary line at exit"
expect_eq "$(printf '%s\n' "$ERR" | grep -c 'blocked')" 1 "one summary line"
zcurl "${A[@]}" -- --cacert "$CA" "https://other.test:$SP/index.txt"
expect_rc_not 0 "not listed, https: curl fails"
expect_contains "$OUT" "connect=403]" "not listed, https: CONNECT answered 403"
expect_not_contains "$OUT" "zbint-index" "not listed, https: no content"
zb "${A[@]}" -- sh -c 'curl -s "$1"; curl -s "$1"; curl -s "$2"' sh "http://other.test:$HP/" "http://test:$HP/"
expect_contains "$ERR" "zerobox: warning: blocked 3 connections: " "summary: count of all refusals"
expect_contains "$ERR" "other.test:$HP (2x)" "summary: repeated host counted"
expect_contains "$ERR" "test:$HP" "summary: second host listed"
zb --quiet "${A[@]}" -- curl -s "http://other.test:$HP/"
expect_not_contains "$ERR" "blocked" "--quiet: no summary line"
zb "${A[@]}" -- "$PY" -c "$URLLIB" "http://other.test:$HP/index.txt"
expect_rc_not 0 "python urllib: not listed fails"
expect_contains "$ERR" "403" "python urllib: HTTP 403"
zb "${A[@]}" -- curl -sS --max-time 15 --socks5-hostname 127.0.0.1:3128 "http://other.test:$HP/index.txt"
expect_rc_not 0 "curl socks5h: not listed fails"
expect_not_contains "$OUT" "zbint-index" "curl socks5h: not listed, no content"

# Proxy-ignoring clients get no connectivity at all.
zb "${A[@]}" -- curl -sS --max-time 10 --noproxy '*' "$H/index.txt"
expect_rc_not 0 "curl --noproxy '*': fails"
expect_not_contains "$OUT" "403" "curl --noproxy '*': no proxy answer"
expect_not_contains "$OUT" "zbint-index" "curl --noproxy '*': no content"
zb "${A[@]}" -- curl -sS --max-time 10 --noproxy '*' "http://127.0.0.1:$HP/index.txt"
expect_rc 7 "curl --noproxy '*' to the host's 127.0.0.1:PORT: cannot connect"
zpy "${A[@]}" -- direct 127.0.0.1 "$HP"
expect_out "error=ECONNREFUSED" "raw socket to the host's 127.0.0.1:PORT: refused"
zpy "${A[@]}" -- direct 1.1.1.1 80
expect_contains "$OUT" "error=" "raw socket to 1.1.1.1:80: fails"
expect_not_contains "$OUT" "connected" "raw socket to 1.1.1.1:80: not connected"
zb "${A[@]}" -- "$PROBE" connect-tcp 127.0.0.1 "$HP"
expect_rc 111 "probe to the host's 127.0.0.1:PORT: ECONNREFUSED"

# --- --deny-net wins; wildcards; ports ---------------------------------------------------------
W=(--allow-net='*.test' "${RES[@]}")
zcurl "${W[@]}" -- "$H/zbint-host"
expect_contains "$OUT" "host=api.test:$HP" "*.test allows api.test"
zcurl "${W[@]}" -- "http://a.b.test:$HP/zbint-host"
expect_contains "$OUT" "host=a.b.test:$HP" "*.test allows a.b.test (any depth)"
zcurl "${W[@]}" -- "http://test:$HP/zbint-host"
expect_contains "$OUT" "HTTP/1.1 403" "*.test does not allow test itself"
expect_contains "$OUT" "X-Zerobox-Reason: not in --allow-net" "*.test vs test: reason"
zcurl "${W[@]}" -- --cacert "$CA" "https://a.b.test:$SP/index.txt"
expect_contains "$OUT" "zbint-index-$UNIQ" "*.test allows a.b.test over https"
zcurl "${W[@]}" --deny-net=other.test -- "$H/index.txt"
expect_contains "$OUT" "zbint-index-$UNIQ" "allow *.test, deny other.test: api.test allowed"
zcurl "${W[@]}" --deny-net=other.test -- "http://other.test:$HP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "allow *.test, deny other.test: other.test 403"
expect_contains "$OUT" "X-Zerobox-Reason: denied by --deny-net other.test" "deny: reason names the rule"
expect_contains "$OUT" "zerobox: denied by --deny-net other.test" "deny: reason in the body"
zpy "${W[@]}" --deny-net=other.test -- raw "GET http://OTHER.TEST.:$HP/zbint-host HTTP/1.1\r\nHost: OTHER.TEST.:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "X-Zerobox-Reason: denied by --deny-net other.test" "deny: OTHER.TEST. (case, trailing dot) still denied"
zpy "${W[@]}" --deny-net=other.test -- connect "Other.Test.:$EP" ping
expect_contains "$OUT" "HTTP/1.1 403" "deny: CONNECT Other.Test. still denied"
zpy "${W[@]}" --deny-net=other.test -- socks5 "OTHER.test." "$EP" ping
expect_contains "$OUT" "rep=2" "deny: SOCKS5 OTHER.test. still denied"
zcurl --allow-net=other.test --deny-net=other.test "${RES[@]}" -- "http://other.test:$HP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "the same name allowed and denied: denied"
zcurl "${W[@]}" --deny-net="*.b.test" -- "http://a.b.test:$HP/index.txt"
expect_contains "$OUT" "X-Zerobox-Reason: denied by --deny-net *.b.test" "wildcard deny wins over wildcard allow"

P=(--allow-net="api.test:$HP" "${RES[@]}")
zcurl "${P[@]}" -- "$H/index.txt"
expect_contains "$OUT" "zbint-index-$UNIQ" "api.test:PORT1 allows PORT1"
zcurl "${P[@]}" -- --cacert "$CA" "$S/index.txt"
expect_contains "$OUT" "connect=403]" "api.test:PORT1 refuses another port (CONNECT 403)"
expect_not_contains "$OUT" "zbint-index" "api.test:PORT1: no content from another port"
zpy "${P[@]}" -- connect "api.test:$EP" ping
expect_contains "$OUT" "HTTP/1.1 403" "api.test:PORT1: CONNECT to the echo port refused"

# Bare --allow-net with --deny-net: everything but the denied names, through the proxy.
B=(--allow-net --deny-net=other.test "${RES[@]}")
zb "${B[@]}" -- cat /proc/net/dev
ifaces=$(printf '%s\n' "$OUT" | awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' | sort | tr '\n' ' ')
expect_eq "$ifaces" "lo " "bare --allow-net + --deny-net: filtered (only lo)"
zcurl "${B[@]}" -- "$H/index.txt"
expect_contains "$OUT" "zbint-index-$UNIQ" "bare --allow-net + --deny-net: api.test allowed"
zcurl "${B[@]}" -- "http://other.test:$HP/index.txt"
expect_contains "$OUT" "X-Zerobox-Reason: denied by --deny-net other.test" "bare --allow-net + --deny-net: other.test denied"
zb "${B[@]}" -- "$PROBE" connect-tcp 127.0.0.1 "$HP"
expect_rc 111 "bare --allow-net + --deny-net: no direct path to the host"
# ... and the address check still holds: a name allowed only by "everything" that resolves
# to loopback, or a loopback literal no IP rule names, is refused.
zcurl "${B[@]}" -- "http://localhost:$HP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "allow-all: localhost (resolves to loopback) refused"
expect_contains "$OUT" "loopback" "allow-all: localhost: reason mentions loopback"
expect_not_contains "$OUT" "zbint-index" "allow-all: localhost: no content"
zcurl "${B[@]}" -- "http://127.0.0.1:$HP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "allow-all: 127.0.0.1 refused"
expect_contains "$OUT" "loopback" "allow-all: 127.0.0.1: reason mentions loopback"
zcurl "${B[@]}" -- "http://[::ffff:127.0.0.1]:$HP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "allow-all: ::ffff:127.0.0.1 refused"
zcurl "${B[@]}" -- "http://[::1]:$HP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "allow-all: [::1] refused"
# Special addresses named as literals: private, link-local, cloud metadata, CGNAT, this
# host's own addresses (hostname -I), all refused with a 403 (not tried and failed).
specials=(10.0.0.1 192.168.1.1 172.16.0.1 169.254.169.254 100.64.0.1 0.0.0.0 "[fe80::1]" "[fd00::1]")
for a in $(hostname -I 2>/dev/null); do
  case $a in *:*) specials+=("[$a]") ;; *) specials+=("$a") ;; esac
done
zb "${B[@]}" -- sh -c 'for a; do curl -s -o /dev/null --max-time 10 -w "%{http_code} " "http://$a/"; done' sh "${specials[@]}"
expect_eq "$OUT" "$(printf '403 %.0s' "${specials[@]}")" "allow-all: special addresses (${specials[*]}) all 403"
zcurl "${B[@]}" -- "http://169.254.169.254/latest/meta-data/"
expect_contains "$OUT" "X-Zerobox-Reason: " "allow-all: metadata address: a reason"
expect_contains "$OUT" "169.254.169.254" "allow-all: metadata address: the reason names the address"
zpy "${B[@]}" -- socks5 localhost "$EP" ping
expect_contains "$OUT" "rep=2" "allow-all: SOCKS5 localhost refused (rep 2)"
zpy "${B[@]}" -- connect "localhost:$EP" ping
expect_contains "$OUT" "HTTP/1.1 403" "allow-all: CONNECT localhost refused"

# --- The resolved-address check with a wildcard rule ---------------------------------------
# localhost and *.localhost are the loopback (RFC 6761) without a lookup; an exact
# localhost:PORT rule lets loopback through, a wildcard does not.
zcurl --allow-net="*.localhost:$HP" -- "http://x.localhost:$HP/index.txt"
expect_not_contains "$OUT" "zbint-index" "*.localhost:PORT: x.localhost gets no content"
expect_contains "$OUT" "HTTP/1.1 403" "*.localhost:PORT: x.localhost refused (rebinding guard)"
expect_contains "$OUT" "loopback" "*.localhost:PORT: reason mentions loopback"
if [ "$(id -u)" = 0 ]; then
  # A minimal system (debootstrap's minbase) has no /etc/hosts: localhost still works
  # (here /etc/hosts is hidden, where there is one).
  OUT=$(unshare -m sh -c '[ ! -e /etc/hosts ] || mount --bind /dev/null /etc/hosts || exit; exec "$@"' sh "$ZEROBOX" --allow-net="localhost:$HP" -- \
    curl -sS -i --max-time 15 "http://localhost:$HP/index.txt" 2>&1)
  expect_contains "$OUT" "zbint-index-$UNIQ" "localhost:PORT with an empty /etc/hosts"
fi
zcurl --allow-net="localhost:$HP" -- "http://localhost:$HP/index.txt"
expect_contains "$OUT" "zbint-index-$UNIQ" "exact rule localhost:PORT lets loopback through"
zcurl --allow-net="localhost:$HP" -- "http://localhost:$SP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "localhost:PORT: another port refused"

# --- IP literals ------------------------------------------------------------------------------
zcurl "${A[@]}" -- "http://127.0.0.1:$HP/index.txt"
expect_contains "$OUT" "X-Zerobox-Reason: not in --allow-net" "IP literal without an IP rule: refused"
expect_not_contains "$OUT" "zbint-index" "IP literal without an IP rule: no content"
zcurl --allow-net="127.0.0.1:$HP" -- "http://127.0.0.1:$HP/index.txt"
expect_contains "$OUT" "zbint-index-$UNIQ" "--allow-net=127.0.0.1:PORT allows it"
zcurl --allow-net="127.0.0.1:$HP" -- "http://127.0.0.1:$SP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "--allow-net=127.0.0.1:PORT: another port refused"
zcurl --allow-net="127.0.0.1:$HP" -- "http://localhost:$HP/index.txt"
expect_contains "$OUT" "HTTP/1.1 403" "an IP rule does not allow a name resolving to it"
zpy --allow-net="127.0.0.1:$EP" -- raw "GET http://2130706433:$HP/index.txt HTTP/1.1\r\nHost: 2130706433:$HP\r\nConnection: close\r\n\r\n"
expect_not_contains "$OUT" "zbint-index" "IPv4 as one number: no content"
expect_contains "$OUT" "HTTP/1.1 400" "IPv4 as one number: 400"
zpy --allow-net="127.0.0.1:$HP" -- raw "GET http://0177.0.0.1:$HP/index.txt HTTP/1.1\r\nHost: 0177.0.0.1:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 400" "IPv4 with octal parts: 400"

# --- Parser differentials ---------------------------------------------------------------------
# HTTP forward proxy.
zcurl "${A[@]}" -- -H "Host: other.test:$HP" "$H/zbint-host"
expect_contains "$OUT" "HTTP/1.1 400" "Host header naming another host: 400"
expect_contains "$OUT" "Host header does not match" "Host mismatch: reason"
expect_not_contains "$OUT" "host=" "Host mismatch: never forwarded"
zpy "${A[@]}" -- raw "GET http://api.test:$HP/zbint-host HTTP/1.1\r\nHost: api.test:$HP\r\nHost: other.test:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 400" "two Host headers: 400"
zpy "${A[@]}" -- raw "GET http://api.test@other.test:$HP/zbint-host HTTP/1.1\r\nHost: other.test:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 4" "absolute-form with userinfo api.test@other.test: refused"
expect_not_contains "$OUT" "host=" "userinfo api.test@other.test: never forwarded"
zpy --allow-net=api.test,other.test "${RES[@]}" -- raw "GET http://api.test:$HP@other.test:$HP/zbint-host HTTP/1.1\r\nHost: other.test:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 400" "userinfo refused even when both names are allowed"
# One client connection, two requests: each is decided on its own (no reuse of the
# upstream connection for another host).
zpy "${A[@]}" -- raw "GET http://api.test:$HP/zbint-host HTTP/1.1\r\nHost: api.test:$HP\r\n\r\nGET http://other.test:$HP/zbint-host HTTP/1.1\r\nHost: other.test:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "host=api.test:$HP" "pipelined: the first (allowed) request answered"
expect_contains "$OUT" "HTTP/1.1 403" "pipelined: the second request, for another host, refused"
expect_not_contains "$OUT" "host=other.test" "pipelined: the second request never reaches the server"
zpy "${A[@]}" -- raw "POST http://api.test:$HP/zbint-echo HTTP/1.1\r\nHost: api.test:$HP\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 400" "Content-Length with Transfer-Encoding: 400"
zpy "${A[@]}" -- raw "GET http://api%2etest:$HP/zbint-host HTTP/1.1\r\nHost: api%2etest:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 400" "absolute-form, percent-encoded host: 400"
zpy "${A[@]}" -- raw "GET http://API.TEST.:$HP/zbint-host HTTP/1.1\r\nHost: API.TEST.:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 200" "absolute-form API.TEST.: allowed like api.test"
expect_contains "$OUT" "host=api.test:$HP path=/zbint-host" "absolute-form API.TEST.: forwarded normalised, in origin form"
zpy "${A[@]}" -- raw "GET http://other.test.:$HP/zbint-host HTTP/1.1\r\nHost: other.test.:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 403" "absolute-form other.test. (trailing dot): still refused"
zpy "${A[@]}" -- raw "GET /zbint-host HTTP/1.1\r\nHost: api.test:$HP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 400" "origin-form request to the proxy: 400"
zpy "${A[@]}" -- raw "GET http://api.test\\x00.other.test:$HP/zbint-host HTTP/1.1\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 400" "NUL in the host: 400"
zpy "${A[@]}" -- raw "GET http://api.test:$HP#@other.test:$HP/zbint-host HTTP/1.1\r\nConnection: close\r\n\r\n"
expect_not_contains "$OUT" "HTTP/1.1 200" "'#@' authority trick: not forwarded"
zpy "${A[@]}" -- raw "GET https://api.test:$SP/index.txt HTTP/1.1\r\nHost: api.test:$SP\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 400" "absolute-form with https scheme: 400"
# CONNECT.
zpy "${A[@]}" -- connect "API.TEST.:$EP" "zbint-ping-$UNIQ"
expect_contains "$OUT" "HTTP/1.1 200" "CONNECT API.TEST.: allowed like api.test"
expect_contains "$OUT" "echo=zbint-ping-$UNIQ" "CONNECT API.TEST.: the tunnel carries bytes both ways"
zpy "${A[@]}" -- connect "other.test:$EP" ping
expect_contains "$OUT" "HTTP/1.1 403" "CONNECT other.test: 403"
expect_contains "$OUT" "X-Zerobox-Reason: not in --allow-net" "CONNECT other.test: reason"
zpy "${A[@]}" -- connect "api%2etest:$EP" ping
expect_contains "$OUT" "HTTP/1.1 400" "CONNECT percent-encoded host: 400"
zpy "${A[@]}" -- connect "api.test@other.test:$EP" ping
expect_contains "$OUT" "HTTP/1.1 400" "CONNECT with userinfo: 400"
zpy "${A[@]}" -- connect "api.test" ping
expect_contains "$OUT" "HTTP/1.1 400" "CONNECT without a port: 400"
zpy "${A[@]}" -- connect "api.test:0$EP" ping
expect_contains "$OUT" "HTTP/1.1 400" "CONNECT with a leading-zero port: 400"
zpy "${A[@]}" -- connect "127.0.0.1:$EP" ping
expect_contains "$OUT" "HTTP/1.1 403" "CONNECT to an IP literal without an IP rule: 403"
# SOCKS5 (names only) and SOCKS4.
zpy "${A[@]}" -- socks5 "API.TEST." "$EP" "zbint-socks-$UNIQ"
expect_contains "$OUT" "rep=0" "SOCKS5 API.TEST.: granted"
expect_contains "$OUT" "echo=zbint-socks-$UNIQ" "SOCKS5 API.TEST.: the tunnel carries bytes"
zpy "${A[@]}" -- socks5 other.test "$EP" ping
expect_rc 0 "SOCKS5 other.test: the client exits normally (zerobox survives)"
expect_contains "$OUT" "rep=2" "SOCKS5 other.test: not allowed by ruleset (rep 2)"
expect_not_contains "$OUT" "echo=" "SOCKS5 other.test: no tunnel"
zpy "${A[@]}" -- socks5 "api%2etest" "$EP" ping
expect_not_contains "$OUT" "rep=0" "SOCKS5 percent-encoded name: refused"
zpy "${A[@]}" -- socks5 "api.test\\x00.other.test" "$EP" ping
expect_not_contains "$OUT" "rep=0" "SOCKS5 name with a NUL: refused"
zpy "${A[@]}" -- socks5 "api.test:$EP" "$EP" ping
expect_not_contains "$OUT" "rep=0" "SOCKS5 name with a colon: refused"
zpy "${A[@]}" -- socks5 "127.0.0.1" "$EP" ping
expect_not_contains "$OUT" "rep=0" "SOCKS5 domain '127.0.0.1' without an IP rule: refused"
zpy --allow-net="127.0.0.1:$EP" -- socks5-ip 4 127.0.0.1 "$EP"
expect_rc 0 "SOCKS5 with an IPv4 address: the client exits normally (zerobox survives)"
expect_contains "$OUT" "rep=" "SOCKS5 with an IPv4 address: answered"
expect_not_contains "$OUT" "rep=0" "SOCKS5 with an IPv4 address: refused even with an IP rule"
zpy --allow-net="[::1]:$EP" -- socks5-ip 6 ::1 "$EP"
expect_not_contains "$OUT" "rep=0" "SOCKS5 with an IPv6 address: refused"
zpy --allow-net="127.0.0.1:$EP" -- socks4 127.0.0.1 "$EP"
expect_out "socks4-reply=91" "SOCKS4: rejected (reply 91)"
# The proxy keeps serving after SOCKS refusals.
zb "${A[@]}" -- sh -c '"$1" "$2" socks5 other.test "$3" ping; "$1" "$2" socks5-ip 4 127.0.0.1 "$3"; "$1" "$2" socks5 "a%b" "$3" ping
  curl -sS --max-time 10 "$4"' sh "$PY" "$NS" "$EP" "$H/index.txt"
expect_rc 0 "SOCKS refusals, then HTTP in the same sandbox: exit 0"
expect_contains "$OUT" "zbint-index-$UNIQ" "the proxy still serves after SOCKS refusals"
zb "${A[@]}" -- curl -sS --max-time 10 -x socks5://127.0.0.1:3128 "$H/index.txt"
expect_rc_not 0 "curl socks5:// (client-side resolution): fails"
expect_not_contains "$OUT" "zbint-index" "curl socks5://: no content"
zb --allow-net="127.0.0.1:$HP" -- curl -sS --max-time 10 -x socks4://127.0.0.1:3128 "http://127.0.0.1:$HP/index.txt"
expect_rc_not 0 "curl socks4://: fails"

# --- --status-fd net events --------------------------------------------------------------------
SF=$T_CAP/status.jsonl
run "$ZEROBOX" --status-fd=3 "${A[@]}" -- sh -c 'curl -s -o /dev/null "$1"; curl -s -o /dev/null "$2"' sh \
  "$H/index.txt" "http://other.test:$HP/" 3>"$SF"
expect_rc 0 "--status-fd with the proxy: exit 0"
cat >"$T_CAP/events.py" <<'PYEOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
port = int(sys.argv[2])
evs = [json.loads(l) for l in lines]  # every line valid JSON
assert all(e.get("v") == 1 for e in evs), "v != 1"
net = [e for e in evs if e["event"] == "net"]
kinds = [e["event"] for e in evs]
assert kinds[0] == "child_started" and kinds[-1] == "child_exit", kinds
assert kinds.index("child_started") < kinds.index("net"), kinds
allow = [e for e in net if e["action"] == "allow"]
deny = [e for e in net if e["action"] == "deny"]
assert [(e["host"], e["port"]) for e in allow] == [("api.test", port)], allow
assert [(e["host"], e["port"], e["reason"]) for e in deny] == [("other.test", port, "not in --allow-net")], deny
assert all(isinstance(e["port"], int) for e in net)
assert all(set(e) >= {"v", "event", "host", "port", "action"} for e in net)
print("ok")
PYEOF
run "$PY" "$T_CAP/events.py" "$SF" "$HP"
expect_out ok "--status-fd: valid JSON, one allow and one deny net event with host, port, reason"
run "$ZEROBOX" --status-fd=3 "${A[@]}" -- "$PY" "$NS" socks5-ip 4 127.0.0.1 "$EP" 3>"$SF"
expect_contains "$(cat "$SF")" '"action":"deny"' "--status-fd: a SOCKS5 IP request is a deny event"

# --- Malformed rules: usage errors (exit 2) ---------------------------------------------------
for r in 'a..b' localhost '127.0.0.1' '::1' '*' 'https://api.test' 'a.*.test' '*.10.0.0.1' 'api.test:0' \
  'api.test:65536' 'api.test:-1' 'api test' 'api%2etest' 'user@api.test' '*.localhost'; do
  zb --allow-net="$r" -- true
  expect_usage_error "--allow-net='$r'"
done
zb --allow-net=api.test,a..b -- true; expect_usage_error "--allow-net list with one bad entry"
zb --allow-net --deny-net='a..b' -- true; expect_usage_error "--deny-net='a..b'"
zb --allow-net=api.test --resolve api.test:1.2.3 -- true; expect_usage_error "--resolve HOST:bad-ip"
zb --allow-net=api.test --resolve a..b:127.0.0.1 -- true; expect_usage_error "--resolve bad-host:IP"
zb --allow-net='*.test' --deny-net=localhost -- true
expect_rc 0 "--deny-net=localhost needs no port"
zb --allow-net="localhost:$HP" -- true
expect_rc 0 "--allow-net=localhost:PORT is accepted"
finish
