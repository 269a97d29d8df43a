# Secrets: --secret KEY=VALUE / --secret KEY / --secret-file KEY=PATH / --secret-host KEY=HOSTS,
# with --upstream-ca. The command sees KEY=ZEROBOX_SECRET_<64 hex>; zerobox's proxy puts the
# real value in requests to the secret's approved hosts (request target, header values, Basic
# credentials) and scrubs it from their responses. This test tries to get the value into the
# sandbox and to send it where it was not approved.
#
# The servers run on the host (netservers.py secrets-serve: HTTP and HTTPS with a CA made here,
# /echo* endpoints that echo the request back); every request they receive is appended to
# $LOG, which no sandbox may read (--deny-read). The names api.test, other.test and wrong.test
# are mapped to 127.0.0.1 with --resolve; the test certificate covers api.test and other.test,
# not wrong.test. Every secret value is new (newval: $UNIQ and a counter), so finding it in the
# log or in a sandbox's output says which check put it there.
. "$(dirname "$0")/lib.sh"
need_python
need curl openssl git gzip base64 sha256sum
BUNDLE=/etc/ssl/certs/ca-certificates.crt
[ -r "$BUNDLE" ] || skip "no system CA bundle at $BUNDLE"

NS=$TESTDIR/netservers.py
D=$HOSTDIR/sec
L=$HOSTDIR/seclog
LOG=$L/requests.log
mkdir -p "$D/www" "$L"
echo "zbint-index-$UNIQ" >"$D/www/index.txt"

# A CA and a leaf certificate for api.test and other.test.
make_test_certs "$D" "DNS:api.test,DNS:other.test"
CA=$D/ca.pem

# A dumb-HTTP git repository served by the HTTPS server.
make_dumb_git_repo "$D/src" "$D/www/repo.git"

# Raw requests through a tunnel, TLS or not: netservers.py tls-request (its docstring).

bg "$PY" "$NS" secrets-serve "$D/www" "$D/leaf.pem" "$D/leaf.key" "$LOG" "$D/ready"
wait_until 20 file_nonempty "$D/ready" || fail "the test servers did not start"
read -r HP SP <"$D/ready"
run curl -sS --max-time 5 --cacert "$CA" --resolve "api.test:$SP:127.0.0.1" -H "X-Custom: zbint-control-$UNIQ" "https://api.test:$SP/echo"
expect_contains "$OUT" "X-Custom: zbint-control-$UNIQ" "host reaches the HTTPS echo server (control)"
grep -qF "X-Custom: zbint-control-$UNIQ" "$LOG"
_check $? "the server logs what it receives (control)" "$LOG lacks the control request"

RES=(--resolve api.test:127.0.0.1 --resolve other.test:127.0.0.1 --resolve wrong.test:127.0.0.1)
B=(--deny-read="$L" "${RES[@]}" --upstream-ca="$CA")
SEC=(--secret-host TOKEN=api.test)
H=http://api.test:$HP
S=https://api.test:$SP
HO=http://other.test:$HP
SO=https://other.test:$SP

NV=0
newval() { # TAG: a new secret value in V
  NV=$((NV + 1))
  V="zbsec-$1-$UNIQ-$NV-$RANDOM"
}
# An extended regex that matches the value V but not its own text (a pattern handed to a
# sandbox must not put the value on the sandbox's command lines).
pat() { printf '%s' "${1//-/[-]}"; }
b64() { printf '%s' "$1" | base64 -w0; }
no_leak() { # VALUE DESCRIPTION: the last run's stdout and stderr do not hold VALUE
  expect_not_contains "$OUT" "$1" "$2: the value is not in the sandbox's output"
  expect_not_contains "$ERR" "$1" "$2: the value is not on stderr"
}
in_log() { # STRING DESCRIPTION
  grep -qF -- "$1" "$LOG"
  _check $? "$2" "the server log lacks '$1'"
}
not_in_log() { # STRING DESCRIPTION
  ! grep -qF -- "$1" "$LOG"
  _check $? "$2" "the server log holds '$1': $(grep -F -- "$1" "$LOG" | head -3)"
}
log_entries() { # MARKER: the logged requests that contain MARKER
  awk -v m="$1" 'BEGIN { RS = "=== end\n" } index($0, m) { printf "%s=== end\n", $0 }' "$LOG"
}
expect_placeholder() { # STRING DESCRIPTION
  [[ $1 =~ ^ZEROBOX_SECRET_[0-9a-f]{64}$ ]]
  _check $? "$2" "'$1' is not ZEROBOX_SECRET_ and 64 hex digits"
}
line() { printf '%s\n' "$OUT" | sed -n "${1}p"; }

# --- The sandbox's view -----------------------------------------------------------------------
newval view
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'printenv TOKEN
  for k in SSL_CERT_FILE NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT; do
    echo "$k=$(printenv "$k")"
  done'
expect_rc 0 "view: exit 0"
PH1=$(line 1)
expect_placeholder "$PH1" "view: printenv TOKEN is the placeholder"
for k in SSL_CERT_FILE NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT; do
  expect_contains "$OUT" "$k=$BUNDLE" "view: $k names the trust bundle"
done
no_leak "$V" "view"
newval view2
V2=$V
newval view3
zb "${B[@]}" --secret TOKEN="$V2" --secret OTHER="$V" "${SEC[@]}" -- printenv TOKEN OTHER
expect_placeholder "$(line 1)" "view: a second run: placeholder"
expect_placeholder "$(line 2)" "view: a second secret: placeholder"
expect_ne "$(line 1)" "$PH1" "view: a new placeholder in every run"
expect_ne "$(line 1)" "$(line 2)" "view: each secret has its own placeholder"
no_leak "$V2" "view: two secrets (first)"
no_leak "$V" "view: two secrets (second)"

# The trust bundle: the system CAs plus the run's CA at the system bundle's path, no key.
host_certs=$(grep -c 'BEGIN CERTIFICATE' "$BUNDLE")
host_sum=$(sha256sum <"$BUNDLE")
LASTCERT='import sys
t = open(sys.argv[1]).read()
sys.stdout.write(t[t.rindex("-----BEGIN CERTIFICATE-----"):])'
newval bundle
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'b=$2
  grep -c "BEGIN CERTIFICATE" "$b"; grep -c "PRIVATE KEY" "$b"
  "$1" -c "$3" "$b" | openssl x509 -noout -subject -ext basicConstraints' sh "$PY" "$BUNDLE" "$LASTCERT"
expect_eq "$(line 1)" "$((host_certs + 1))" "bundle: the system's certificates plus one"
expect_eq "$(line 2)" 0 "bundle: no private key in it"
expect_contains "$OUT" "CN = zerobox run CA" "bundle: the last certificate is the run's CA"
expect_contains "$OUT" "CA:TRUE" "bundle: the run's CA is a CA"
expect_eq "$(sha256sum <"$BUNDLE")" "$host_sum" "bundle: the host's bundle is unchanged"
zb "${RES[@]}" --allow-net=api.test -- sh -c 'grep -c "BEGIN CERTIFICATE" "$1"; printenv SSL_CERT_FILE || echo unset' sh "$BUNDLE"
expect_out "$host_certs
unset" "bundle: without secrets, the host's bundle and no SSL_CERT_FILE (control)"

# --- The value is nowhere inside: /proc, files, the --secret-file paths ---------------------------
newval scan
VS=$V
newval file1
VF1=$V
newval file2
VF2=$V
newval file3
VF3=$V
printf '%s\n' "$VF1" >"$D/tok1.txt"
printf '%s\n' "$VF2" >"$WORK/tok2.txt"
printf '%s' "$VF3" >"$D/tok3.txt"
ln -s tok3.txt "$D/tok3.link"
chmod 600 "$D/tok1.txt" "$WORK/tok2.txt" "$D/tok3.txt"
PAT="$(pat "$VS")|$(pat "$VF1")|$(pat "$VF2")|$(pat "$VF3")"
SCAN='pat=$1 probe=$2 work=$3 hostdir=$4 d=$5
sleep 29 & s1=$!
sh -c "exec sleep 28" & s2=$!
printenv TOKEN F1 F2 F3 | sed "s/^/PH /"
echo "== proc"
grep -lsE -- "$pat" /proc/[0-9]*/environ /proc/[0-9]*/cmdline /proc/[0-9]*/task/*/environ \
  /proc/[0-9]*/task/*/cmdline | sed "s/^/HIT /"
grep -lsE "ZEROBOX_SECRET_[0-9a-f]{64}" /proc/self/environ | sed "s/^/CONTROL /"
echo "== files"
find /tmp /var/tmp -xdev -maxdepth 2 -type f -size -1024k -mmin -10 -print0 2>/dev/null |
  xargs -0r grep -lsE -- "$pat" | sed "s/^/HIT /"
grep -rlsE -- "$pat" /run /dev/shm /mnt /etc/ssl "$HOME" "$PWD" "$work" "$hostdir" | sed "s/^/HIT /"
echo "== reads"
ln -s "$d/tok1.txt" /tmp/zbl1; ln -s "$work/tok2.txt" /tmp/zbl2
for f in "$d/tok1.txt" ./tok1.txt "$d/./tok1.txt" "$d//tok1.txt" "/proc/self/root$d/tok1.txt" \
  "/proc/1/root$d/tok1.txt" /tmp/zbl1 "$work/tok2.txt" "/proc/self/root$work/tok2.txt" /tmp/zbl2 \
  "$d/tok3.txt" "$d/tok3.link"; do
  "$probe" read "$f"; printf "%s " "$?"
done
echo
cat "$d/tok1.txt" "$work/tok2.txt" "$d/tok3.txt"; echo "cat=$?"
"$probe" fds; echo "fds=$?"
kill "$s1" "$s2"'
zb_in "$D" "${B[@]}" --secret TOKEN="$VS" --secret-file F1=tok1.txt --secret-file F2="$WORK/tok2.txt" \
  --secret-file F3="$D/tok3.link" --secret-host TOKEN=api.test --secret-host F1=api.test \
  --secret-host F2=api.test --secret-host F3=api.test -- sh -c "$SCAN" sh "$PAT" "$PROBE" "$WORK" "$HOSTDIR" "$D"
expect_rc 0 "scan: exit 0"
expect_eq "$(printf '%s\n' "$OUT" | grep -cE '^PH ZEROBOX_SECRET_[0-9a-f]{64}$')" 4 "scan: the four secrets are placeholders"
expect_contains "$OUT" "CONTROL /proc/self/environ" "scan: the /proc scan finds a placeholder (control)"
expect_not_contains "$OUT" "HIT " "scan: no value in any process's environ or cmdline, nor in /tmp, /var/tmp, /run, /dev/shm, /mnt, /etc/ssl, HOME, cwd"
expect_contains "$OUT" "13 13 13 13 13 13 13 13 13 13 13 13 " "scan: --secret-file paths (every spelling, /proc/*/root, symlinks) fail with EACCES"
expect_contains "$OUT" "cat=1" "scan: cat of the --secret-file paths fails"
expect_contains "$OUT" "fds=0" "scan: no extra descriptor is open in the command"
no_leak "$VS" "scan (--secret TOKEN)"
no_leak "$VF1" "scan (--secret-file F1, relative path)"
no_leak "$VF2" "scan (--secret-file F2, in /tmp)"
no_leak "$VF3" "scan (--secret-file F3, through a symlink)"
expect_eq "$(cat "$D/tok1.txt")" "$VF1" "scan: the host's --secret-file is intact"

# A --secret-file in a writable directory: the mask holds against link, rename, copy, unlink,
# umount, overwrite.
mkdir -p "$D/w/sub"
newval wfile
VW=$V
printf '%s\n' "$VW" >"$D/w/sub/tok.txt"
chmod 600 "$D/w/sub/tok.txt"
zb "${B[@]}" --allow-write="$D/w" --secret-file WT="$D/w/sub/tok.txt" --secret-host WT=api.test -- sh -c 'p=$1 d=$2
  ln "$d/sub/tok.txt" "$d/hard" 2>/dev/null; "$p" read "$d/hard"; echo "hard=$?"
  cp "$d/sub/tok.txt" "$d/copy" 2>/dev/null; cat "$d/copy" 2>/dev/null; echo "copy=$?"
  umount "$d/sub/tok.txt" 2>/dev/null; echo "umount=$?"; "$p" read "$d/sub/tok.txt"; echo "read=$?"
  echo overwritten >"$d/sub/tok.txt" 2>/dev/null; echo "write=$?"
  rm -f "$d/sub/tok.txt" 2>/dev/null; "$p" read "$d/sub/tok.txt"; echo "after-rm=$?"
  mv "$d/sub" "$d/moved" 2>/dev/null; echo "mv=$?"
  for f in "$d/moved/tok.txt" "$d/sub/tok.txt"; do [ -e "$f" ] && { "$p" read "$f"; echo "moved-read=$?"; }; done
  true' sh "$PROBE" "$D/w"
expect_rc 0 "writable dir: exit 0"
expect_eq "$(printf '%s\n' "$OUT" | grep -cE '^(hard|copy|read|after-rm|moved-read)=0$')" 0 \
  "writable dir: no read of the secret succeeds (hard link, copy, after umount/rm/mv)"
expect_contains "$OUT" "umount=" "writable dir: umount attempted"
expect_not_contains "$OUT" "umount=0" "writable dir: umount of the mask fails"
expect_not_contains "$OUT" "write=0" "writable dir: the masked file cannot be overwritten"
no_leak "$VW" "writable dir"
tok_now=$(cat "$D/w/sub/tok.txt" 2>/dev/null || cat "$D/w/moved/tok.txt" 2>/dev/null)
expect_eq "$tok_now" "$VW" "writable dir: the host's file keeps its content"
# -A: every filesystem and network permission, the mask still holds.
newval allowall
printf '%s\n' "$V" >"$D/tokA.txt"
zb -A "${B[@]}" --secret-file AT="$D/tokA.txt" --secret-host AT=api.test -- sh -c '
  umount "$2" 2>/dev/null; echo "umount=$?"; umount -l "$2" 2>/dev/null; echo "umount-l=$?"
  "$1" read "$2"; echo "read=$?"; "$1" read "/proc/self/root$2"; echo "root-read=$?"' sh "$PROBE" "$D/tokA.txt"
expect_contains "$OUT" "read=13
root-read=13" "-A: the --secret-file is still unreadable (EACCES)"
expect_not_contains "$OUT" "umount=0" "-A: umount of the mask fails"
expect_not_contains "$OUT" "umount-l=0" "-A: lazy umount of the mask fails"
no_leak "$V" "-A"

# --- The value reaches the approved host ------------------------------------------------------
# curl over HTTPS (CONNECT, TLS terminated with the run's CA: no --cacert), Bearer.
newval curl
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'printenv TOKEN
  curl -sS -i --max-time 15 -H "Authorization: Bearer $TOKEN" -H "Accept-Encoding: gzip, br" "$1/echo"' sh "$S"
expect_rc 0 "https curl: exit 0"
PH=$(line 1)
expect_contains "$OUT" "HTTP/1.1 200 OK" "https curl: 200"
in_log "Authorization: Bearer $V" "https curl: the server got the value in Authorization"
no_leak "$V" "https curl"
expect_contains "$OUT" "X-Echo-Auth: Bearer $PH" "https curl: the echoed header shows the placeholder"
expect_contains "$OUT" "Authorization: Bearer $PH" "https curl: the echoed body shows the placeholder"
expect_contains "$OUT" "Transfer-Encoding: chunked" "https curl: the scrubbed response is sent chunked"
expect_not_contains "$OUT" "Content-Length:" "https curl: no Content-Length on the scrubbed response"
entry=$(log_entries "$V")
expect_contains "$entry" "Accept-Encoding: identity" "https curl: Accept-Encoding forced to identity"
expect_not_contains "$entry" "gzip" "https curl: the client's Accept-Encoding is not forwarded"
expect_contains "$entry" "=== https GET /echo HTTP/1.1" "https curl: logged as an HTTPS request"

# python3 urllib with no extra options: trusts the run's CA through SSL_CERT_FILE.
PYREQ='import os, sys, urllib.request
t = os.environ["TOKEN"]
r = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + t, "X-Custom": "k=" + t})
with urllib.request.urlopen(r, timeout=15) as f:
    print(f.status, f.headers.get("X-Echo-Auth"), f.headers.get("X-Echo-Custom"))
    print(f.read().decode("latin-1"))'
newval urllib
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- "$PY" -c "$PYREQ" "$S/echo"
expect_rc 0 "python urllib: exit 0"
expect_contains "$(line 1)" "200 Bearer ZEROBOX_SECRET_" "python urllib: 200, echoed Authorization is the placeholder"
in_log "Authorization: Bearer $V" "python urllib: the server got the value in Authorization"
in_log "X-Custom: k=$V" "python urllib: the server got the value in a custom header"
no_leak "$V" "python urllib"

# git clone over HTTPS, the token in http.extraHeader.
newval git
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'd=/tmp/zbint-clone
  git -c http.extraHeader="Authorization: Bearer $TOKEN" clone -q "$1/repo.git" "$d" && cat "$d/file.txt"' sh "$S"
expect_rc 0 "git clone: exit 0"
expect_out "zbint-git-$UNIQ" "git clone: the file arrives"
expect_contains "$(log_entries "$V")" "GET /repo.git/info/refs?service=git-upload-pack" "git clone: info/refs fetched with the value"
expect_eq "$(log_entries "Authorization: Bearer $V" | grep -c '^=== https GET /repo.git/')" \
  "$(log_entries "$V" | grep -c '^=== https')" "git clone: every request of the clone carried the value"
no_leak "$V" "git clone"

# Plain HTTP through the forward proxy.
newval http
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -i --max-time 15 -H "Authorization: Bearer $TOKEN" "$1/echo"' sh "$H"
expect_contains "$OUT" "HTTP/1.1 200 OK" "plain http: 200"
expect_contains "$(log_entries "$V")" "=== http GET /echo HTTP/1.1" "plain http: the server got the request over HTTP"
in_log "Authorization: Bearer $V" "plain http: the value substituted"
expect_contains "$OUT" "X-Echo-Auth: Bearer ZEROBOX_SECRET_" "plain http: echo scrubbed"
no_leak "$V" "plain http"

# SOCKS5 (curl --socks5-hostname), HTTPS and HTTP.
newval socks
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c '
  curl -sS --max-time 15 --socks5-hostname 127.0.0.1:3128 -H "X-Custom: s1-$TOKEN" "$1/echo"
  curl -sS --max-time 15 --socks5-hostname 127.0.0.1:3128 -H "X-Custom: s2-$TOKEN" "$2/echo"' sh "$S" "$H"
expect_rc 0 "socks5: exit 0"
in_log "X-Custom: s1-$V" "socks5 https: the value substituted"
in_log "X-Custom: s2-$V" "socks5 http: the value substituted"
expect_contains "$(log_entries "s1-$V")" "=== https " "socks5 https: arrived over TLS"
expect_contains "$OUT" "X-Custom: s1-ZEROBOX_SECRET_" "socks5 https: echo scrubbed"
expect_contains "$OUT" "X-Custom: s2-ZEROBOX_SECRET_" "socks5 http: echo scrubbed"
no_leak "$V" "socks5"

# The URL: a query parameter; a value with bytes a URL cannot hold is percent-encoded, the
# rest (here all of it: letters, digits, '-') is sent as it is.
newval query
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -i --max-time 15 "$1/echo?token=$TOKEN&x=1"' sh "$S"
in_log "decoded-request: GET /echo?token=$V&x=1 HTTP/1.1" "query: the server got the value in the URL"
in_log "=== https GET /echo?token=$V&x=1 HTTP/1.1" "query: an unreserved value is not percent-encoded on the wire"
expect_contains "$OUT" "X-Echo-Target: /echo?token=ZEROBOX_SECRET_" "query: the echoed target shows the placeholder"
no_leak "$V" "query"
VQ="zbsec q \"<>{}|^\`\\#é-$UNIQ-$RANDOM"
VQ_ENC=$(printf '%s' "$VQ" | sed 's/ /%20/g; s/"/%22/g; s/</%3C/g; s/>/%3E/g; s/{/%7B/g; s/}/%7D/g; s/|/%7C/g; s/\^/%5E/g; s/`/%60/g; s/\\/%5C/g; s/#/%23/g; s/é/%C3%A9/g')
zb "${B[@]}" --secret TOKEN="$VQ" "${SEC[@]}" -- sh -c 'curl -sS -i --max-time 15 "$1/echo?t=$TOKEN"' sh "$S"
in_log "decoded-request: GET /echo?t=$VQ HTTP/1.1" "query: space, quotes, brackets, '#', non-ASCII: the server decodes exactly the value"
expect_contains "$OUT" "decoded-target=/echo?t=ZEROBOX_SECRET_" "query: the server's decoded target is scrubbed"
no_leak "$VQ" "query, special bytes"
no_leak "$VQ_ENC" "query, special bytes (percent-encoded form)"

# Basic credentials (curl -u user:$TOKEN), over HTTPS and plain HTTP.
newval basic
for url in "$S" "$H"; do
  zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'printenv TOKEN; curl -sS -i --max-time 15 -u "user:$TOKEN" "$1/echo-basic"' sh "$url"
  PH=$(line 1)
  in_log "Authorization: Basic $(b64 "user:$V")" "basic ($url): the server got base64(user:value)"
  expect_contains "$OUT" "basic=user:$PH" "basic ($url): the decoded credentials echoed show the placeholder"
  expect_contains "$OUT" "X-Echo-Auth: Basic $(b64 "user:$PH")" "basic ($url): the echoed header is what the client sent"
  no_leak "$V" "basic ($url)"
  no_leak "$(b64 "user:$V")" "basic ($url), base64 form"
  newval basic2
done
# The scheme in lower case, spaces before the credentials, the placeholder as the user name.
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'printenv TOKEN
  curl -sS --max-time 15 -H "authorization: basic   $(printf "%s:pw" "$TOKEN" | base64 -w0)" "$1/echo-basic"' sh "$S"
PH=$(line 1)
in_log "authorization: basic   $(b64 "$V:pw")" "basic, lower case: the server got base64(value:pw)"
expect_contains "$OUT" "basic=$PH:pw" "basic, lower case: the echo shows the placeholder"
no_leak "$V" "basic, lower case"
no_leak "$(b64 "$V:pw")" "basic, lower case, base64 form"

# Keep-alive: two requests on one connection both get the value.
newval keepalive
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -v --max-time 15 -H "X-Custom: $TOKEN" "$1/echo?a" "$1/echo?b"' sh "$S"
expect_eq "$(grep -c "^X-Custom: $V\$" "$LOG")" 2 "keep-alive: both requests substituted"
expect_contains "$ERR" "Re-using existing connection" "keep-alive: curl reused the connection"
no_leak "$V" "keep-alive"

# Plain HTTP inside a CONNECT tunnel and inside a SOCKS5 tunnel to the approved host.
newval tunnelplain
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c '
  "$1" "$2" tls-request --plain api.test "$3" "GET /echo HTTP/1.1\r\nHost: api.test:$3\r\nX-Custom: c-@TOKEN@\r\nConnection: close\r\n\r\n"
  "$1" "$2" tls-request --plain --socks api.test "$3" "GET /echo HTTP/1.1\r\nHost: api.test:$3\r\nX-Custom: s-@TOKEN@\r\nConnection: close\r\n\r\n"' \
  sh "$PY" "$NS" "$HP"
in_log "X-Custom: c-$V" "CONNECT + plain HTTP: substituted"
in_log "X-Custom: s-$V" "SOCKS5 + plain HTTP: substituted"
expect_contains "$OUT" "X-Echo-Custom: c-ZEROBOX_SECRET_" "CONNECT + plain HTTP: echo scrubbed"
no_leak "$V" "plain HTTP in tunnels"
# Absolute-form naming the tunnel's own host is fine.
newval absolute
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- "$PY" "$NS" tls-request api.test "$SP" \
  "GET https://api.test:$SP/echo HTTP/1.1\r\nHost: api.test:$SP\r\nX-Custom: @TOKEN@\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 200 OK" "absolute-form for the tunnel's host: 200"
in_log "X-Custom: $V" "absolute-form for the tunnel's host: substituted"
no_leak "$V" "absolute-form"

# --- Responses: every echo of the value comes back as the placeholder -------------------------
newval echo
for path in "/echo-status" "/echo-chunked?n=3" "/echo-chunked?n=1&trailer=1" "/echo-split?n=5" "/echo-close"; do
  for url in "$S" "$H"; do
    zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -i --max-time 15 -H "Authorization: Bearer $TOKEN" -H "X-Custom: $TOKEN" "$1"' sh "$url$path"
    expect_contains "$OUT" "X-Custom: ZEROBOX_SECRET_" "echo $url$path: body shows the placeholder"
    no_leak "$V" "echo $url$path"
  done
done
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -i --max-time 15 -H "Authorization: Bearer $TOKEN" "$1"' sh "$S/echo-status"
expect_contains "$(printf '%s\n' "$OUT" | grep '^HTTP/1.1 200 B')" "HTTP/1.1 200 Bearer ZEROBOX_SECRET_" "echo: the status line's reason phrase is scrubbed"
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -i --http1.0 --max-time 15 -H "X-Custom: $TOKEN" "$1/echo"; curl -sS -I --max-time 15 "$1/echo?t=$TOKEN"' sh "$S"
expect_contains "$OUT" "X-Echo-Custom: ZEROBOX_SECRET_" "echo to an HTTP/1.0 client: scrubbed"
expect_contains "$OUT" "X-Echo-Target: /echo?t=ZEROBOX_SECRET_" "echo of a HEAD request: headers scrubbed"
no_leak "$V" "echo, HTTP/1.0 and HEAD"
for big in "/echo-big?n=3" "/echo-big?n=3&chunked=1"; do
  zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS --max-time 15 -H "X-Custom: $TOKEN" "$1"' sh "$S$big"
  expect_eq "$(printf '%s' "$OUT" | grep -c "^X-Custom: ZEROBOX_SECRET_[0-9a-f]\{64\}\$")" 3 "echo $big (210 KB): three placeholders"
  expect_eq "$(printf '%s' "$OUT" | tr -cd x | wc -c)" 210000 "echo $big: the padding arrives whole"
  no_leak "$V" "echo $big"
done
# Two secrets, one value inside the other (an account id, and id:password): both scrubbed, the
# longer whole. (The same with the response split in pieces: the regression checks at the end.)
newval inner
VIN=$V
VOUT="$VIN:pw$RANDOM$RANDOM"
zb "${B[@]}" --secret TOKEN="$VIN" --secret OUTER="$VOUT" "${SEC[@]}" --secret-host OUTER=api.test -- sh -c '
  printenv TOKEN OUTER; curl -sS --max-time 15 -H "X-Custom: $OUTER" -H "Authorization: Bearer $TOKEN" "$1/echo"' sh "$S"
in_log "X-Custom: $VOUT" "nested values: the server got the outer value"
in_log "Authorization: Bearer $VIN" "nested values: the server got the inner value"
expect_contains "$OUT" "X-Custom: $(line 2)" "nested values: the outer value echoed as its own placeholder"
no_leak "$VIN" "nested values"
no_leak "${VOUT#"$VIN"}" "nested values (the outer value's own part)"

# --- Echoes in other encodings ----------------------------------------------------------------
# A server that reflects the request in the encodings servers use: the sandbox never sees the
# value, in any of them. The output is decoded on the host as a client would decode it (and
# then percent-decoded for as long as anything is left), and must show the placeholder where
# the server put the value, never the value. The value has bytes each encoding treats in its
# own way, and is sent in a header (as it is) and in the query (percent-encoded there, so
# that most echoes below hold it encoded twice or three times).
newval forms
VF="$V/a&b<c>d\"e'f g+h%i\\j~k=l;m"
PH_RE='ZEROBOX_SECRET_[0-9a-f]{64}'
FORMS=("/echo-redirect redirect" "/echo-pct2 pct2" "/echo-pct2?case=lower pct2" "/echo-quote quote"
  "/echo-quote?plus=1 quote-plus" "/echo-json json" "/echo-json?style=every json" "/echo-html html"
  "/echo-html?style=numeric html")
# One sandbox for all of them: each response (the body alone, with the header block for the
# redirect) after a line "=== N".
zb "${B[@]}" --secret TOKEN="$VF" "${SEC[@]}" -- sh -c 'base=$1; shift; n=0
  for form do
    path=${form% *} head=; [ "${form##* }" = redirect ] && head=-i
    case $path in *\?*) u="$base$path&t=$TOKEN" ;; *) u="$base$path?t=$TOKEN" ;; esac
    n=$((n + 1)); echo "=== $n"
    curl -sS $head --max-time 15 -H "X-Custom: $TOKEN" "$u"; echo
  done' sh "$S" "${FORMS[@]}"
expect_rc 0 "echoes in other encodings: exit 0"
ALL=$OUT
no_leak "$VF" "echoes in other encodings"
n=0
for form in "${FORMS[@]}"; do
  path=${form% *} mode=${form##* }
  n=$((n + 1))
  part=$(printf '%s\n' "$ALL" | awk -v n="$n" '/^=== [0-9]+$/ { on = ($2 == n); next } on' | tr -d '\r')
  expect_ne "$part" "" "echo $path: a response"
  decoded=$(printf '%s' "$part" | "$PY" "$NS" decode "$mode")
  expect_not_contains "$decoded" "$VF" "echo $path: the value is in no decoding of the response"
  expect_not_contains "$decoded" "${VF%%/*}" "echo $path: nor its first part"
  if [ "$mode" = redirect ]; then
    printf '%s\n' "$decoded" | grep -qE "^Location: /login\?next=/echo-redirect\?t=$PH_RE\$"
    _check $? "echo $path: the redirect shows the placeholder" "$(printf '%s\n' "$decoded" | grep -i location)"
  else
    printf '%s\n' "$decoded" | grep -qE "X-Custom: $PH_RE"
    _check $? "echo $path: the echoed header shows the placeholder" "$(printf '%s\n' "$decoded" | head -c 600)"
    printf '%s\n' "$decoded" | grep -qE "^line=GET /echo-[a-z0-9]+(\?[a-z]+=[a-z0-9]+)?[?&]t=$PH_RE HTTP/1.1\$"
    _check $? "echo $path: the echoed request line shows the placeholder" "$(printf '%s\n' "$decoded" | head -c 600)"
  fi
done
in_log "X-Custom: $VF" "echoes in other encodings: the server got the value"
# In a response header's name (the value must be a token there: letters, digits, '-'); and
# a server that checks the raw target (a signature over the path as sent) gets an
# alphanumeric value as it is, in the path and in the query.
newval hname
VN=$V
newval raw
VR=${V//-/}
printf '%s\n' "$VR" >"$L/raw-expect"
zb "${B[@]}" --secret TOKEN="$VN" --secret RAW="$VR" "${SEC[@]}" --secret-host RAW=api.test -- sh -c '
  curl -sS -i --max-time 15 -H "X-Custom: $TOKEN" "$1/echo-header-name"
  curl -sS -i --max-time 15 "$1/raw-check/$RAW?key=$RAW"' sh "$S"
expect_contains "$OUT" "X-Echo-ZEROBOX_SECRET_" "echo in a header name: the name shows the placeholder"
in_log "X-Custom: $VN" "echo in a header name: the server got the value"
no_leak "$VN" "echo in a header name"
expect_contains "$OUT" "raw path matches" "raw target check: the server got the alphanumeric value unencoded"
in_log "=== https GET /raw-check/$VR?key=$VR HTTP/1.1" "raw target check: the request line as logged"
no_leak "$VR" "raw target check"

# --- Other hosts get the placeholder -----------------------------------------------------------
newval other
zb "${B[@]}" --allow-net=other.test --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'printenv TOKEN
  curl -sS --max-time 15 --cacert "$3" -H "Authorization: Bearer $TOKEN" "$1/echo"
  curl -sS --max-time 15 -H "Authorization: Bearer $TOKEN" "$2/echo"' sh "$SO" "$HO" "$CA"
expect_rc 0 "other host: exit 0"
PH=$(line 1)
expect_eq "$(log_entries "Authorization: Bearer $PH" | grep -c '^Host: other.test:')" 2 "other host: https and http got the placeholder"
not_in_log "$V" "other host: never got the value"
no_leak "$V" "other host"
# --deny-net wins over --secret-host and over --allow-net.
newval deny
zb "${B[@]}" --secret TOKEN="$V" --secret-host TOKEN='*.test' --deny-net=other.test -- sh -c '
  curl -sS -o /dev/null --max-time 15 -w "%{http_connect} %{http_code}\n" -H "Authorization: Bearer $TOKEN" "$1/echo"
  curl -sS -i --max-time 15 -H "Authorization: Bearer $TOKEN" "$2/echo"
  curl -sS --max-time 15 -H "X-Custom: $TOKEN" "$3/echo"' sh "$SO" "$HO" "$S"
expect_contains "$(line 1)" "403 " "--deny-net with --secret-host *.test: CONNECT other.test 403"
expect_contains "$OUT" "HTTP/1.1 403" "--deny-net with --secret-host *.test: http other.test 403"
expect_contains "$OUT" "denied by --deny-net other.test" "--deny-net: the reason"
in_log "X-Custom: $V" "--secret-host *.test: api.test still gets the value"
expect_eq "$(log_entries "$V" | grep -c '^Host: other.test')" 0 "--deny-net: other.test never got the value"
no_leak "$V" "--deny-net"
newval deny2
zb "${B[@]}" --secret TOKEN="$V" --allow-net='*.test' --deny-net=other.test -- sh -c '
  curl -sS -i --max-time 15 -H "Authorization: Bearer $TOKEN" "$1/echo"
  curl -sS --max-time 15 -H "X-Custom: $TOKEN" "$2/echo"' sh "$HO" "$S"
expect_contains "$OUT" "HTTP/1.1 403" "no --secret-host, --deny-net: other.test 403"
in_log "X-Custom: $V" "no --secret-host, --allow-net=*.test: api.test gets the value"
expect_eq "$(log_entries "$V" | grep -c '^Host: other.test')" 0 "no --secret-host, --deny-net: other.test never got it"
# A secret without --secret-host applies to the --allow-net hosts, not to a host that only
# another secret's --secret-host allows.
newval a
VA=$V
newval b
VB=$V
zb "${B[@]}" --allow-net=api.test --secret TOKEN="$VA" --secret OTHER="$VB" --secret-host OTHER=other.test -- sh -c '
  curl -sS --max-time 15 -H "X-A: 1$TOKEN" -H "X-B: 1$OTHER" "$1/echo"
  curl -sS --max-time 15 -H "X-A: 2$TOKEN" -H "X-B: 2$OTHER" "$2/echo"' sh "$SO" "$S"
expect_rc 0 "two secrets: exit 0"
in_log "X-B: 1$VB" "two secrets: other.test (OTHER's host) gets OTHER"
in_log "X-A: 1ZEROBOX_SECRET_" "two secrets: other.test gets TOKEN's placeholder"
not_in_log "X-A: 1$VA" "two secrets: other.test, allowed only by OTHER's --secret-host, never gets TOKEN"
in_log "X-A: 2$VA" "two secrets: api.test (--allow-net) gets TOKEN"
in_log "X-B: 2ZEROBOX_SECRET_" "two secrets: api.test gets OTHER's placeholder"
not_in_log "X-B: 2$VB" "two secrets: api.test never gets OTHER"
no_leak "$VA" "two secrets (TOKEN)"
no_leak "$VB" "two secrets (OTHER)"
# Without --secret-host, every --allow-net host gets it (and is intercepted).
newval allowed
zb "${B[@]}" --allow-net=api.test,other.test --secret TOKEN="$V" -- sh -c '
  curl -sS --max-time 15 -H "X-Custom: $TOKEN" "$1/echo"; curl -sS --max-time 15 -H "X-Custom: $TOKEN" "$2/echo"' sh "$S" "$SO"
expect_eq "$(log_entries "X-Custom: $V" | grep -c '^Host: ')" 2 "no --secret-host: both --allow-net hosts get the value"
expect_eq "$(log_entries "X-Custom: $V" | grep -c '^Host: other.test')" 1 "no --secret-host: other.test among them"
no_leak "$V" "no --secret-host"
# A port in --secret-host: that port only.
newval port
zb "${RES[@]}" --deny-read="$L" --upstream-ca="$CA" --secret TOKEN="$V" --secret-host TOKEN="api.test:$SP" -- sh -c '
  curl -sS --max-time 15 -H "X-Custom: $TOKEN" "$1/echo"; curl -sS -i --max-time 15 -H "X-Custom: p-$TOKEN" "$2/echo"' sh "$S" "$H"
in_log "X-Custom: $V" "--secret-host HOST:PORT: that port gets the value"
expect_contains "$OUT" "HTTP/1.1 403" "--secret-host HOST:PORT: another port is not allowed"
not_in_log "X-Custom: p-$V" "--secret-host HOST:PORT: another port never gets it"
# No host at all; a short value.
newval nohost
zb "${B[@]}" --secret TOKEN="$V" -- true
expect_rc 0 "no allowed host: the command still runs"
expect_contains "$ERR" "zerobox: warning: --secret TOKEN: no host is allowed" "no allowed host: warning"
no_leak "$V" "no allowed host"
SHORT=$(printf 'q%06d' $((RANDOM * 32768 + RANDOM)))
SHORT=${SHORT:0:7}
zb "${B[@]}" --secret TOKEN="$SHORT" "${SEC[@]}" -- sh -c 'curl -sS -o /dev/null --max-time 15 -H "X-Custom: short-$TOKEN" "$1/echo"' sh "$S"
expect_contains "$ERR" "shorter than 8 bytes" "a 7-byte value: warning that responses are not scrubbed"
in_log "X-Custom: short-$SHORT" "a 7-byte value: still substituted"

# --- Only the secret's hosts are intercepted ---------------------------------------------------
newval certs
zb "${B[@]}" --allow-net=other.test --secret TOKEN="$V" "${SEC[@]}" -- sh -c '
  curl -sS -v -o /dev/null --max-time 15 "$1/index.txt" 2>&1 | grep -i "issuer:" | sed "s/^/api /"
  curl -sS -v -o /dev/null --max-time 15 --cacert "$3" "$2/index.txt" 2>&1 | grep -i "issuer:" | sed "s/^/other /"
  curl -sS -o /dev/null --max-time 15 "$2/index.txt" 2>/dev/null; echo "other-without-cacert=$?"
  openssl s_client -proxy 127.0.0.1:3128 -connect "other.test:$4" -servername other.test </dev/null 2>/dev/null |
    grep "i:" | sed "s/^/s_client-other /"
  openssl s_client -proxy 127.0.0.1:3128 -connect "api.test:$4" -servername api.test </dev/null 2>/dev/null |
    grep -e "i:" -e "Verify return code" | sed "s/^/s_client-api /"' sh "$S" "$SO" "$CA" "$SP"
expect_contains "$(printf '%s\n' "$OUT" | grep '^api ')" "zerobox run CA" "certs: api.test is intercepted (issuer: the run's CA)"
expect_contains "$(printf '%s\n' "$OUT" | grep '^other ')" "zbint test CA $UNIQ" "certs: other.test is tunnelled (issuer: the test CA)"
expect_not_contains "$(printf '%s\n' "$OUT" | grep '^other ')" "zerobox" "certs: other.test's issuer is not zerobox"
expect_contains "$OUT" "other-without-cacert=60" "certs: other.test without --cacert fails verification (not intercepted)"
expect_contains "$(printf '%s\n' "$OUT" | grep '^s_client-other ')" "zbint test CA $UNIQ" "certs: openssl s_client through the proxy: other.test issued by the test CA"
expect_contains "$(printf '%s\n' "$OUT" | grep '^s_client-api ')" "zerobox run CA" "certs: openssl s_client: api.test issued by the run's CA"
expect_contains "$(printf '%s\n' "$OUT" | grep '^s_client-api ')" "Verify return code: 0 (ok)" "certs: openssl s_client trusts the run's CA (SSL_CERT_FILE)"

# --- Domain fronting ---------------------------------------------------------------------------
newval front
zb "${B[@]}" --allow-net=other.test --secret TOKEN="$V" "${SEC[@]}" -- sh -c '
  curl -sS -i --max-time 15 -H "Host: other.test:$2" -H "Authorization: Bearer $TOKEN" "$1/echo"' sh "$S" "$SP"
expect_contains "$OUT" "HTTP/1.1 403" "fronting: CONNECT api.test, Host: other.test inside TLS: 403"
expect_contains "$OUT" "does not name api.test:$SP" "fronting: the reason"
not_in_log "$V" "fronting: the value was never sent"
no_leak "$V" "fronting"
newval front2
zb "${B[@]}" --allow-net=other.test --secret TOKEN="$V" "${SEC[@]}" -- "$PY" "$NS" tls-request api.test "$SP" \
  "GET /echo HTTP/1.1\r\nHost: api.test:$SP\r\nX-Custom: @TOKEN@\r\n\r\nGET /echo HTTP/1.1\r\nHost: other.test:$SP\r\nAuthorization: Bearer @TOKEN@\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 200 OK" "fronting, pipelined: the first request (api.test) answered"
expect_contains "$OUT" "HTTP/1.1 403" "fronting, pipelined: the second (Host: other.test) refused"
in_log "X-Custom: $V" "fronting, pipelined: the first request got the value"
not_in_log "Authorization: Bearer $V" "fronting, pipelined: the second request was never forwarded"
no_leak "$V" "fronting, pipelined"
newval front3
zb "${B[@]}" --allow-net=other.test --secret TOKEN="$V" "${SEC[@]}" -- sh -c '
  "$1" "$2" tls-request api.test "$3" "GET https://other.test:$3/echo HTTP/1.1\r\nHost: other.test:$3\r\nX-Custom: @TOKEN@\r\nConnection: close\r\n\r\n"
  "$1" "$2" tls-request --plain --socks api.test "$4" "GET /echo HTTP/1.1\r\nHost: other.test:$4\r\nX-Custom: @TOKEN@\r\nConnection: close\r\n\r\n"
  curl -sS -i --max-time 15 -H "Host: other.test:$4" -H "X-Custom: $TOKEN" "http://api.test:$4/echo"' sh "$PY" "$NS" "$SP" "$HP"
expect_eq "$(printf '%s\n' "$OUT" | grep -c '^HTTP/1.1 403')" 2 "fronting: absolute-form https://other.test in api.test's tunnel, and SOCKS5 plain Host: other.test: 403"
expect_contains "$OUT" "HTTP/1.1 400" "fronting: forward proxy, Host other.test for http://api.test: 400"
not_in_log "$V" "fronting: none of these sent the value"
no_leak "$V" "fronting, absolute-form / SOCKS5 / forward proxy"
newval front5
zb "${B[@]}" --allow-net=other.test --secret TOKEN="$V" --secret-host TOKEN="api.test" -- sh -c '
  "$1" "$2" tls-request api.test "$3" "GET /echo HTTP/1.1\r\nHost: api.test:$4\r\nX-Custom: @TOKEN@\r\nConnection: close\r\n\r\n"
  "$1" "$2" tls-request api.test "$3" "CONNECT other.test:$3 HTTP/1.1\r\nHost: other.test:$3\r\nX-Custom: @TOKEN@\r\n\r\n"
  "$1" "$2" tls-request api.test "$3" "GET /echo HTTP/1.1\r\nX-Custom: @TOKEN@\r\nConnection: close\r\n\r\n"
  "$1" "$2" tls-request api.test "$3" "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"' sh "$PY" "$NS" "$SP" "$HP"
expect_contains "$OUT" "does not name api.test:$SP" "fronting: Host: api.test with another port inside the tunnel: 403"
expect_contains "$OUT" "CONNECT inside the tunnel" "fronting: CONNECT inside the intercepted tunnel: 400"
expect_contains "$OUT" "missing Host header" "fronting: HTTP/1.1 without Host inside the tunnel: refused"
expect_contains "$OUT" "unsupported HTTP version" "HTTP/2 preface inside the intercepted tunnel: 400"
not_in_log "$V" "fronting by port, CONNECT in the tunnel, no Host, HTTP/2: never the value"
no_leak "$V" "fronting by port, CONNECT in the tunnel, no Host, HTTP/2"
# The other way round: a tunnel to other.test (not intercepted) that says Host: api.test inside
# its own TLS gets no substitution.
newval front4
zb "${B[@]}" --allow-net=other.test --secret TOKEN="$V" "${SEC[@]}" -- "$PY" "$NS" tls-request --sni api.test --cafile "$CA" other.test "$SP" \
  "GET /echo HTTP/1.1\r\nHost: api.test:$SP\r\nX-Custom: f4-@TOKEN@\r\nConnection: close\r\n\r\n"
expect_contains "$OUT" "HTTP/1.1 200 OK" "tunnel to other.test naming api.test inside: reaches the server (not intercepted)"
in_log "X-Custom: f4-ZEROBOX_SECRET_" "tunnel to other.test naming api.test inside: the server got the placeholder"
not_in_log "$V" "tunnel to other.test naming api.test inside: never the value"

# --- Upstream certificate problems -------------------------------------------------------------
newval upstream
zb --deny-read="$L" "${RES[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -i --max-time 15 -H "Authorization: Bearer $TOKEN" "$1/echo"' sh "$S"
expect_contains "$OUT" "HTTP/1.1 502" "no --upstream-ca: 502"
expect_contains "$OUT" "not trusted (unable to get local issuer certificate" "no --upstream-ca: the body names the certificate problem"
not_in_log "$V" "no --upstream-ca: the value was never sent"
no_leak "$V" "no --upstream-ca"
newval wrongname
zb "${B[@]}" --secret TOKEN="$V" --secret-host TOKEN=wrong.test -- sh -c 'curl -sS -i --max-time 15 -H "Authorization: Bearer $TOKEN" "https://wrong.test:$1/echo"' sh "$SP"
expect_contains "$OUT" "HTTP/1.1 502" "upstream certificate for another name: 502"
expect_contains "$OUT" "hostname mismatch" "upstream certificate for another name: the body says so"
not_in_log "$V" "upstream certificate for another name: the value was never sent"

# --- --secret KEY from the environment; --secret-file -------------------------------------------
newval fromenv
run env ZBT_TOKEN="$V" "$ZEROBOX" "${B[@]}" --secret ZBT_TOKEN --secret-host ZBT_TOKEN=api.test -- sh -c '
  printenv ZBT_TOKEN; curl -sS -o /dev/null --max-time 15 -H "Authorization: Bearer $ZBT_TOKEN" "$1/echo"' sh "$S"
expect_rc 0 "--secret KEY: exit 0"
expect_placeholder "$(line 1)" "--secret KEY: the sandbox sees a placeholder"
in_log "Authorization: Bearer $V" "--secret KEY: the value from the caller's environment reaches the host"
no_leak "$V" "--secret KEY"
for ae in --allow-env --allow-env=ZBT_TOKEN; do
  run env ZBT_TOKEN="$V" "$ZEROBOX" "${B[@]}" "$ae" --secret ZBT_TOKEN "${SEC[@]/TOKEN/ZBT_TOKEN}" -- sh -c 'printenv ZBT_TOKEN; env'
  expect_placeholder "$(line 1)" "--secret KEY with $ae: the placeholder wins over the inherited variable"
  no_leak "$V" "--secret KEY with $ae"
done
run "$ZEROBOX" "${B[@]}" --secret "ZBT_UNSET_$UNIQ" -- true
expect_setup_error "--secret KEY, KEY not in the environment"
newval file
printf '%s\n' "$V" >"$D/tokf.txt"
zb_in "$D" "${B[@]}" -C / --secret-file TOKEN=tokf.txt "${SEC[@]}" -- sh -c 'curl -sS -o /dev/null --max-time 15 -H "Authorization: Bearer $TOKEN" "$1/echo"' sh "$S"
expect_rc 0 "--secret-file (relative to the caller's directory, not -C): exit 0"
expect_eq "$(grep -cx "Authorization: Bearer $V" "$LOG")" 1 "--secret-file: one trailing newline stripped, exactly the value sent"
newval file2
printf '%s' "$V" >"$D/tokf2.txt"
zb "${B[@]}" --secret-file TOKEN="$D/tokf2.txt" "${SEC[@]}" -- sh -c 'curl -sS -o /dev/null --max-time 15 -H "Authorization: Bearer $TOKEN" "$1/echo"' sh "$S"
expect_eq "$(grep -cx "Authorization: Bearer $V" "$LOG")" 1 "--secret-file without a trailing newline: the value as is"
newval file3
printf '%s\n\n' "$V" >"$D/tokf3.txt"
zb "${B[@]}" --secret-file TOKEN="$D/tokf3.txt" "${SEC[@]}" -- true
expect_setup_error "--secret-file with two trailing newlines (only one is stripped)"
no_leak "$V" "--secret-file with two trailing newlines: the error"

# --- Bad input ---------------------------------------------------------------------------------
zb --secret TOKEN= "${SEC[@]}" -- true
expect_setup_error "--secret with an empty value"
newval ctl
zb --secret "TOKEN=$(printf 'ab\001')$V" "${SEC[@]}" -- true
expect_setup_error "--secret with a control character"
no_leak "$V" "--secret with a control character: the error"
zb --secret "TOKEN=$V
x" "${SEC[@]}" -- true
expect_setup_error "--secret with a line break"
no_leak "$V" "--secret with a line break: the error"
newval dup
zb --secret TOKEN="$V" --secret TOKEN="$V-2" "${SEC[@]}" -- true
expect_setup_error "--secret KEY twice"
no_leak "$V" "--secret KEY twice: the error"
zb --secret TOKEN="$V" --secret-file TOKEN="$D/tokf2.txt" "${SEC[@]}" -- true
expect_setup_error "--secret and --secret-file with the same KEY"
zb --env TOKEN=x --secret TOKEN="$V" "${SEC[@]}" -- true
expect_setup_error "--env and --secret with the same KEY"
zb --no-sandbox --secret TOKEN="$V" "${SEC[@]}" -- true
expect_setup_error "--secret with --no-sandbox"
no_leak "$V" "--no-sandbox: the error"
zb --secret-file TOKEN="$D/does-not-exist" "${SEC[@]}" -- true
expect_setup_error "--secret-file that does not exist"
expect_contains "$ERR" "$D/does-not-exist" "--secret-file that does not exist: the error names it"
zb --secret-file TOKEN="$D/www" "${SEC[@]}" -- true
expect_setup_error "--secret-file naming a directory"
zb --secret TOKEN="$V" --secret-host NOPE=api.test -- true
expect_usage_error "--secret-host for an unknown KEY"

# --- Bodies are not substituted ----------------------------------------------------------------
# Expected behaviour (a documented limitation): request bodies are relayed as they are, so a
# placeholder in a body reaches the server as the placeholder, never as the value.
newval body
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c '
  curl -sS -o /dev/null --max-time 15 --data-binary "b1=$TOKEN" "$1/echo"
  curl -sS -o /dev/null --max-time 15 -H "Transfer-Encoding: chunked" --data-binary "b2=$TOKEN" "$1/echo"' sh "$S"
in_log "body=b1=ZEROBOX_SECRET_" "body (Content-Length): the server got the placeholder"
in_log "body=b2=ZEROBOX_SECRET_" "body (chunked): the server got the placeholder"
not_in_log "$V" "bodies: never the value"

# --- --debug never prints the value -------------------------------------------------------------
newval debug
zb --debug "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -o /dev/null --max-time 15 -u "u:$TOKEN" "$1/echo?q=$TOKEN"' sh "$S"
expect_contains "$ERR" "net: allow api.test:$SP" "--debug: proxy decisions logged"
in_log "decoded-request: GET /echo?q=$V" "--debug: the request went through"
no_leak "$V" "--debug"
no_leak "$(b64 "u:$V")" "--debug (base64 form)"

# --- Bugs this test found, now regression checks ---------------------------------------------
# 1. A server that compresses whatever Accept-Encoding says (httpbin's /gzip does): the body is
#    decoded (gzip, deflate) to be scrubbed, and reaches the sandbox uncompressed.
newval gzip
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS -D - --max-time 15 -H "Authorization: Bearer $TOKEN" "$1/echo-gzip"' sh "$S"
in_log "Authorization: Bearer $V" "gzip echo: the server got the value"
expect_contains "$OUT" "Authorization: Bearer ZEROBOX_SECRET_" "gzip echo: decoded, the placeholder in place of the value"
expect_not_contains "$OUT" "Content-Encoding" "gzip echo: passed on uncompressed"
no_leak "$V" "gzip echo (Content-Encoding: gzip from an approved host)"
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS --max-time 15 -H "Authorization: Bearer $TOKEN" "$1/echo-gzip?coding=deflate"' sh "$S"
expect_contains "$OUT" "Authorization: Bearer ZEROBOX_SECRET_" "deflate echo: decoded and scrubbed"
no_leak "$V" "deflate echo"
zb "${B[@]}" --secret TOKEN="$V" "${SEC[@]}" -- sh -c 'curl -sS --max-time 15 -w "\n%{http_code}\n" -H "Authorization: Bearer $TOKEN" "$1/echo-gzip?coding=br"' sh "$S"
expect_contains "$OUT" "502" "a coding zerobox cannot undo (br): 502, not passed on"
expect_contains "$OUT" "cannot scrub" "a coding zerobox cannot undo: the reason"
no_leak "$V" "br echo"
# 2. '%' in a value put in the URL is sent as %25, so that the server decodes exactly the value
#    (it used to get "%41" and decode it as "A", and its echo escaped scrubbing).
VP="zbsec%41pct-$UNIQ-$RANDOM"
zb "${B[@]}" --secret TOKEN="$VP" "${SEC[@]}" -- sh -c 'curl -sS --max-time 15 "$1/echo?t=$TOKEN"' sh "$S"
in_log "decoded-request: GET /echo?t=$VP HTTP/1.1" "'%' in a value substituted in the URL: the server decodes exactly the value"
# A placeholder right after an unfinished escape ("%2" + a value starting with a hex digit
# would decode to "/" + the rest) is refused, in the URL and in headers (a cookie that a
# framework URL-decodes), and the value is sent nowhere.
VH="f00d$UNIQ$RANDOM"
zb "${B[@]}" --secret TOKEN="$VH" "${SEC[@]}" -- sh -c '
  curl -sS --max-time 15 -w "\n%{http_code}\n" "$1/echo?q=%2$TOKEN"
  curl -sS --max-time 15 -w "\n%{http_code}\n" -H "Cookie: a=%2$TOKEN" "$1/echo"
  curl -sS --max-time 15 -w "\n%{http_code}\n" "$1/echo?q=\\u00$TOKEN"' sh "$S"
expect_eq "$(printf '%s\n' "$OUT" | grep -c '^403$')" 3 "placeholder after an unfinished escape: 403 in the URL, a header, a \\u escape"
expect_contains "$OUT" "unfinished escape" "placeholder after an unfinished escape: the reason"
not_in_log "${VH#f}" "placeholder after an unfinished escape: the value never sent"
no_leak "${VH#f}" "placeholder after an unfinished escape"
no_leak "${VP//%41/A}" "'%' in a value: the server's decoding of it"
# 3. One secret's value inside another's (TOKEN=id, OUTER=id:password), the response arriving in
#    pieces (here chunks of 7 bytes): the outer value is replaced whole, as when the response
#    comes in one piece (it used to leave "<TOKEN's placeholder>:password").
zb "${B[@]}" --secret TOKEN="$VIN" --secret OUTER="$VOUT" "${SEC[@]}" --secret-host OUTER=api.test -- sh -c '
  printenv TOKEN OUTER; curl -sS --max-time 15 -H "X-Custom: $OUTER" "$1/echo-chunked?n=7"' sh "$S"
expect_contains "$OUT" "X-Custom: $(line 2)" "nested values, response in pieces: the outer value echoed as its own placeholder"
no_leak "${VOUT#"$VIN"}" "nested values, response in pieces (the outer value's own part)"
# 4. --secret-file KEY=/dev/stdin (or /dev/fd/0, /proc/self/fd/0) with stdin redirected from a
#    file: the command would inherit an open descriptor of that file, so such paths, and any
#    path to the file that is zerobox's stdin, stdout or stderr, are refused (125).
newval stdin
printf '%s\n' "$V" >"$D/tokstdin.txt"
LAST_CMD="$ZEROBOX ... --secret-file TOKEN=/dev/stdin -- sh -c 'printenv TOKEN; cat' <$D/tokstdin.txt"
"$ZEROBOX" "${B[@]}" --secret-file TOKEN=/dev/stdin "${SEC[@]}" -- sh -c 'printenv TOKEN; cat' \
  <"$D/tokstdin.txt" >"$T_CAP/out" 2>"$T_CAP/err"
RC=$? OUT=$(cat "$T_CAP/out") ERR=$(cat "$T_CAP/err")
expect_setup_error "--secret-file /dev/stdin from a file"
no_leak "$V" "--secret-file /dev/stdin from a file: the command's stdin"
LAST_CMD="$ZEROBOX ... --secret-file TOKEN=$D/tokstdin.txt -- cat <$D/tokstdin.txt"
"$ZEROBOX" "${B[@]}" --secret-file TOKEN="$D/tokstdin.txt" "${SEC[@]}" -- cat \
  <"$D/tokstdin.txt" >"$T_CAP/out" 2>"$T_CAP/err"
RC=$? OUT=$(cat "$T_CAP/out") ERR=$(cat "$T_CAP/err")
expect_setup_error "--secret-file naming the file that is zerobox's stdin"
expect_contains "$ERR" "standard input" "--secret-file on stdin: the message says why"
no_leak "$V" "--secret-file on stdin: the command's stdin"
echo "$V" | "$ZEROBOX" "${B[@]}" --secret-file TOKEN=/proc/self/fd/0 "${SEC[@]}" -- true >"$T_CAP/out" 2>"$T_CAP/err"
RC=$? OUT=$(cat "$T_CAP/out") ERR=$(cat "$T_CAP/err")
expect_setup_error "--secret-file /proc/self/fd/0 from a pipe"
# 5. A malformed --secret-host rule is a usage error (exit 2), as in --allow-net.
zb --secret TOKEN=abcdefghij --secret-host TOKEN=a..b -- true
expect_usage_error "--secret-host with a malformed rule"
finish
